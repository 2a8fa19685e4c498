// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The one reduction mechanism every rooftop reduction uses: a parallel_reduce over chunks of
/// `lanes` consecutive elements, each chunk folded with independent partial accumulators (on
/// GPUs two kernels of team reductions, reduce_blocks_gpu).
#pragma once

#include "../backends/cpu/convert.hpp"
#include "kokkos_compat.hpp"
#include "math.hpp"
#include "types.hpp"

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <utility>

namespace rooftop::detail {

/// Whether Exec runs on the host (its memory is HostSpace).
template <class Exec>
inline constexpr bool on_host = std::is_same_v<typename Exec::memory_space, Kokkos::HostSpace>;

/// How a reduction is cut into work items. On CPUs a work item is a contiguous block folded
/// into `lanes` independent partials (several SIMD registers): without them the compiler may
/// not reorder a floating-point reduction, and one scalar dependency chain is latency-bound at
/// ~4 cycles per element. Four registers' worth: with two (32 floats on AVX-512), a fold of
/// multiply-adds was bound by its chains' latency (nrm2 fp32 2^18 in L2, 2 threads, Zen 5 VM,
/// scratch program, two alternations, median GB/s: 73-74 -> 94-95; layernorm fp32 512x32768
/// 29-30 -> 32-33, rmsnorm bf16 32x32768 43-45 -> 48-50; sum and dot unchanged). On GPUs
/// consecutive threads must touch consecutive elements (coalescing): one element per work item.
template <class Exec, class Acc>
struct ReductionShape {
#if defined(KOKKOS_ENABLE_CUDA)
  static constexpr bool gpu = std::is_same_v<Exec, Kokkos::Cuda>;
#else
  static constexpr bool gpu = false;
#endif
#if defined(__AVX512F__)
  static constexpr int lanes = gpu ? 1 : static_cast<int>(256 / sizeof(Acc));  // four 512-bit registers
#else
  static constexpr int lanes = gpu ? 1 : static_cast<int>(128 / sizeof(Acc));  // four 256-bit registers
#endif
  static constexpr std::int64_t block = gpu ? 1 : 4096;                         // elements per work item
};

/// Host blocks are folded in spans of up to this many (a power of two) by a pairwise cascade,
/// the spans in turn by each thread (reduce_blocks).
inline constexpr std::int64_t reduction_span_blocks = 256;

/// Bound on the number of sequential additions any term passes through in chunked_reduce over
/// n terms: at most block / lanes per lane (CPU), 2 log2(reduction_span_blocks) + 1 in a
/// span's cascade, one per span a thread folds (at most n / (block reduction_span_blocks) + 16,
/// reduce_blocks' spans; on GPUs reduce_blocks_gpu's thread folds its share of a span, n /
/// (1024 spans x 256 threads), the larger of the two), and tree levels (at most 64). A fold's
/// worst-case rounding error is this times the accumulator's epsilon times the sum of |terms|.
/// `lane_additions`: the most per lane. (Folded one block after another, a thread's blocks had
/// added n / block: 2^30 fp32 values, 3.1% of the sum in the worst case, where the spans give
/// 5.3e-4 by this bound.)
inline double reduction_depth(std::int64_t n, std::int64_t lane_additions = 256) {
  const double per_lane = static_cast<double>(n < lane_additions ? n : lane_additions);
  return per_lane + 17 + static_cast<double>(n) / (1024 * 256) + 16 + 64;
}

/// reduction_depth of reduce_regions' folds, whose work items fold four runs into a quarter of
/// their partials each: 4 block / lanes additions per lane.
inline double region_reduction_depth(std::int64_t n) { return reduction_depth(n, 1024); }

/// A Kokkos reducer folding with a device-callable binary functor `Combine` and its identity.
template <class Acc, class Combine>
struct CombineReducer {
  using reducer = CombineReducer;
  using value_type = Acc;
  using result_view_type = Kokkos::View<Acc, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;

  KOKKOS_INLINE_FUNCTION CombineReducer(Acc& result, Acc identity, Combine combine)
      : value_(&result), identity_(identity), combine_(combine) {}

  KOKKOS_INLINE_FUNCTION void join(value_type& dest, const value_type& src) const { dest = combine_(dest, src); }
#if KOKKOS_VERSION < 40000
  // Kokkos 3.x also joins through volatile references on some backends; this one joins through
  // plain pointers, so value types need no volatile copy or assignment.
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& dest, const volatile value_type& src) const {
    value_type* d = const_cast<value_type*>(&dest);
    *d = combine_(*d, *const_cast<const value_type*>(&src));
  }
#endif
  KOKKOS_INLINE_FUNCTION void init(value_type& v) const { v = identity_; }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *value_.data(); }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return value_; }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return true; }

 private:
  result_view_type value_;
  Acc identity_;
  Combine combine_;
};

/// a + b.
struct Plus {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const { return a + b; }
};

/// max(a, b) that propagates NaN (a NaN anywhere makes the result NaN).
struct NanMax {
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T a, T b) const {
    // Both comparisons unconditionally (no short-circuit) and a bitwise select: vectorizes.
    return math::select((a != a) | (a > b), a, b);
  }
};

/// The `lanes` partials of a fold combined in a fixed pairwise order.
template <int lanes, class Acc, class Combine>
KOKKOS_INLINE_FUNCTION Acc combine_lanes(Acc (&part)[lanes], const Combine& combine) {
  static_assert(lanes > 0 && (lanes & (lanes - 1)) == 0, "combine_lanes: a power of two of lanes (else partials are dropped)");
  for (int width = lanes / 2; width > 0; width /= 2)
    for (int k = 0; k < width; ++k) part[k] = combine(part[k], part[k + width]);
  return part[0];
}

/// Folds the elements [begin, end) serially into `lanes` independent partials (the compiler
/// keeps them in SIMD registers; accumulate(part, i) adds element i to a partial), then
/// combines the partials in a fixed pairwise order. Deterministic for given bounds.
template <int lanes, class Acc, class Accumulate, class Combine>
KOKKOS_INLINE_FUNCTION Acc fold_lanes_by(std::int64_t begin, std::int64_t end, Acc identity, const Accumulate& accumulate,
                                         const Combine& combine) {
  Acc part[lanes];
  for (int k = 0; k < lanes; ++k) part[k] = identity;
  std::int64_t i = begin;
  for (; i + lanes <= end; i += lanes)  // (lanes) partials, vectorized
    for (int k = 0; k < lanes; ++k) accumulate(part[k], i + k);
  for (int k = 0; i + k < end; ++k) accumulate(part[k], i + k);  // tail
  return combine_lanes(part, combine);
}

/// fold_lanes_by where element i contributes combine(part, value(i)).
template <int lanes, class Acc, class Value, class Combine>
KOKKOS_INLINE_FUNCTION Acc fold_lanes(std::int64_t begin, std::int64_t end, Acc identity, const Value& value,
                                      const Combine& combine) {
  return fold_lanes_by<lanes>(
      begin, end, identity, [&](Acc& part, const std::int64_t i) { part = combine(part, value(i)); }, combine);
}

/// fold_lanes over the four runs [begin + r region, begin + r region + count), r < 4, walked
/// together (region > 0; region 0: fold_lanes over [begin, begin + count)): part[r lanes/4 + j]
/// receives elements begin + r region + i + j for i = 0, lanes/4, ... in turn, the runs' last
/// count % (lanes/4) elements included, then the partials combine as fold_lanes combines its
/// own. See reduce_regions.
template <int lanes, class Acc, class Value, class Combine>
KOKKOS_INLINE_FUNCTION Acc fold_runs(std::int64_t begin, std::int64_t count, std::int64_t region, Acc identity, const Value& value,
                                     const Combine& combine) {
  if (region == 0) return fold_lanes<lanes>(begin, begin + count, identity, value, combine);
  static_assert(lanes % 4 == 0, "fold_runs: a quarter of the partials per run");
  constexpr int w = lanes / 4;
  Acc part[lanes];
  for (int k = 0; k < lanes; ++k) part[k] = identity;
  std::int64_t i = 0;
  for (; i + w <= count; i += w)
    for (int r = 0; r < 4; ++r)
      for (int j = 0; j < w; ++j) part[r * w + j] = combine(part[r * w + j], value(begin + r * region + i + j));
  for (int r = 0; r < 4; ++r)
    for (int j = 0; i + j < count; ++j) part[r * w + j] = combine(part[r * w + j], value(begin + r * region + i + j));
  return combine_lanes(part, combine);
}

/// Two float sums.
struct SumPair {
  float a, b;
};
struct PlusPair {
  KOKKOS_FORCEINLINE_FUNCTION SumPair operator()(const SumPair& x, const SumPair& y) const { return {x.a + y.a, x.b + y.b}; }
};

/// The two sums of value(i) = {a, b} over [begin, end) in one pass, each in the partials and
/// order of fold_lanes (the same results as two folds), in two arrays of partials so the loop
/// vectorizes as two plain sums do (an array of pairs does not).
template <int lanes, class Value>
KOKKOS_INLINE_FUNCTION SumPair fold_lanes_pair(std::int64_t begin, std::int64_t end, const Value& value) {
  float a[lanes], b[lanes];
  for (int k = 0; k < lanes; ++k) a[k] = b[k] = 0.0f;
  auto add = [&](const int k, const std::int64_t i) {
    const SumPair v = value(i);
    a[k] += v.a;
    b[k] += v.b;
  };
  std::int64_t i = begin;
  for (; i + lanes <= end; i += lanes)
    for (int k = 0; k < lanes; ++k) add(k, i + k);
  for (int k = 0; i + k < end; ++k) add(k, i + k);
  return {combine_lanes(a, Plus{}), combine_lanes(b, Plus{})};
}

/// 1 + log2(m) for m a power of two: the partials fold_cascade keeps for m items.
KOKKOS_INLINE_FUNCTION constexpr int cascade_levels(std::int64_t m) { return m > 1 ? 1 + cascade_levels(m / 2) : 1; }

/// Folds item(b) for b in [first, last) (at most max_items, a power of two) pairwise: the
/// k-th item joins the partial of the 2^j items before it for each trailing one bit j of k
/// (a binary counter of partials), then the partials left join from the smallest. An item's
/// result passes through at most 2 log2(max_items) + 1 combines. Deterministic for given bounds.
template <std::int64_t max_items, class Acc, class Combine, class Item>
KOKKOS_INLINE_FUNCTION Acc fold_cascade(std::int64_t first, std::int64_t last, Acc identity, const Combine& combine, const Item& item) {
  static_assert(max_items > 0 && (max_items & (max_items - 1)) == 0, "fold_cascade: a power of two items");
  constexpr int levels = cascade_levels(max_items);
  Acc level[levels];
  std::int64_t count = 0;
  for (std::int64_t b = first; b < last; ++b, ++count) {
    Acc v = item(b);
    int j = 0;
    for (std::int64_t c = count; c & 1; c >>= 1, ++j) v = combine(level[j], v);
    level[j] = v;
  }
  Acc result = identity;
  for (int j = 0; j < levels; ++j)
    if (count >> j & 1) result = combine(level[j], result);
  return result;
}

/// Device memory kept from one GPU reduction to the next for reduce_blocks_gpu's partials, one
/// per memory space: grown when a call needs more, released by Kokkos::finalize. Allocated per
/// call, the partials cost a cudaMalloc and a cudaFree each time, and Kokkos 3.4 frees with
/// cudaFree, which waits for every stream on the device, not only the caller's. Calls take it in
/// turn (`lock`); each ends with a fence on its instance before it lets go, so the next may
/// reuse the memory.
template <class Memory>
struct ReductionWorkspace {
  static std::mutex& lock() {
    static std::mutex m;
    return m;
  }
  /// At least `count` values of Acc, valid until the next call; call with lock() held.
  template <class Acc>
  static Kokkos::View<Acc*, Memory, Kokkos::MemoryUnmanaged> get(std::int64_t count) {
    static_assert(alignof(Acc) <= 16, "reduction partials: Kokkos aligns allocations to at least 16 bytes");
    const auto bytes = static_cast<std::size_t>(count) * sizeof(Acc);
    auto& held = memory();
    if (held.extent(0) < bytes) {
      if (!held.data()) Kokkos::push_finalize_hook([] { memory() = {}; });  // first allocation
      held = {};
      held = Kokkos::View<unsigned char*, Memory>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "rooftop::reduction_workspace"),
                                                  bytes);
    }
    using Partials = Kokkos::View<Acc*, Memory, Kokkos::MemoryUnmanaged>;
    return Partials(reinterpret_cast<Acc*>(held.data()), static_cast<std::size_t>(count));
  }

 private:
  static Kokkos::View<unsigned char*, Memory>& memory() {
    static Kokkos::View<unsigned char*, Memory> held;
    return held;
  }
};

/// reduce_blocks on a GPU, in two kernels of team reductions (the mechanism RowTeam's row
/// reductions use): teams of 256 threads fold contiguous spans of at least 2048 blocks (at most
/// 1024 spans) into partials in device memory (ReductionWorkspace), each thread eight blocks a
/// slot count apart before the team combines (their loads in flight together; a warp's stay
/// consecutive), then one team folds the partials. The order is fixed for a given n. Kokkos 3.4's top-level
/// parallel_reduce with CombineReducer came out wrong on an H100 (a dot of one element 17
/// times too large; team reductions with the same reducer were right). `team` threads per team
/// (a test runs it on the host backends with the teams they allow).
template <class Exec, class Acc, class Combine, class Fold>
Acc reduce_blocks_gpu(const char* label, const Exec& exec, std::int64_t n, Acc identity, const Combine& combine,
                      const Fold& fold, int team = 256) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = typename Policy::member_type;
  constexpr int per_slot = 8;
  constexpr std::int64_t max_spans = 1024;
  const std::int64_t span = ((n + max_spans - 1) / max_spans + team * per_slot - 1) / (team * per_slot) * (team * per_slot);
  const std::int64_t spans = (n + span - 1) / span;
  using Workspace = ReductionWorkspace<typename Exec::memory_space>;
  const std::lock_guard<std::mutex> hold(Workspace::lock());
  const auto partials = Workspace::template get<Acc>(spans + 1);
  Kokkos::parallel_for(label, Policy(exec, spans, team), KOKKOS_LAMBDA(const Member& member) {
    const std::int64_t lo = static_cast<std::int64_t>(member.league_rank()) * span;
    const std::int64_t count = n - lo < span ? n - lo : span, slots = (count + per_slot - 1) / per_slot;
    Acc result = identity;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, slots),
        [&](const std::int64_t j, Acc& part) {
          for (int k = 0; k < per_slot; ++k)
            if (j + k * slots < count) part = combine(part, fold(lo + j + k * slots, lo + j + k * slots + 1));
        },
        CombineReducer<Acc, Combine>(result, identity, combine));
    Kokkos::single(Kokkos::PerTeam(member), [&] { partials(member.league_rank()) = result; });
    // Kokkos 3.4's team reductions still use their shared memory when they return, so the
    // block's next reduction may overwrite it before every thread has read its result
    // (kokkos/kokkos#5475, fixed by #5540 in October 2022): a barrier after each. Here the
    // next one is the next team's, where a block runs several teams in turn (Kokkos'
    // serial-execution debug mode).
    member.team_barrier();
  });
  Kokkos::parallel_for(label, Policy(exec, 1, team), KOKKOS_LAMBDA(const Member& member) {
    Acc result = identity;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, spans), [&](const std::int64_t j, Acc& part) { part = combine(part, partials(j)); },
        CombineReducer<Acc, Combine>(result, identity, combine));
    Kokkos::single(Kokkos::PerTeam(member), [&] { partials(spans) = result; });
  });
  Acc result = identity;
  Kokkos::deep_copy(exec, Kokkos::View<Acc, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(&result), Kokkos::subview(partials, spans));
  exec.fence();
  return result;
}

/// [0, n) in blocks of ReductionShape::block, one work item each: fold(begin, end) folds a
/// block, `combine` joins the blocks' results.
template <class Exec, class Acc, class Combine, class Fold>
Acc reduce_blocks(const char* label, const Exec& exec, std::int64_t n, Acc identity, const Combine& combine, const Fold& fold) {
  constexpr std::int64_t block = ReductionShape<Exec, Acc>::block;
  Acc result = identity;
  if (n == 0) return result;
  if constexpr (ReductionShape<Exec, Acc>::gpu) {
    static_assert(block == 1, "reduce_blocks_gpu folds one element per block");
    return reduce_blocks_gpu(label, exec, n, identity, combine, fold);
  } else {
    // Spans of a power of two blocks, at most reduction_span_blocks and at most an eighth of a
    // thread's share (so that the threads' shares stay even), each folded by a pairwise
    // cascade: a block's result passes through at most 2 log2(span) + 1 additions there and one
    // per span its thread folds, not one per block (reduction_depth).
    const std::int64_t blocks = (n + block - 1) / block, threads = compat::concurrency(exec);
    std::int64_t span = 1;
    while (span < reduction_span_blocks && 2 * span * 8 * threads <= blocks) span *= 2;
    Kokkos::parallel_reduce(
        label, compat::Range<Exec>(exec, 0, (blocks + span - 1) / span),
        KOKKOS_LAMBDA(const std::int64_t s, Acc& update) {
          const std::int64_t first = s * span, last = first + span < blocks ? first + span : blocks;
          update = combine(update, fold_cascade<reduction_span_blocks>(first, last, identity, combine, [&](const std::int64_t b) {
                             const std::int64_t begin = b * block;
                             return fold(begin, begin + block < n ? begin + block : n);
                           }));
        },
        CombineReducer<Acc, Combine>(result, identity, combine));
    return result;
  }
}

/// reduce_blocks on the host with the data taken as four regions of whole blocks walked
/// together: fold(begin, count, region) folds the four runs [begin + r region, begin + r region
/// + count), r < 4 (fold_runs' order), or [begin, begin + count) where region is 0. Each work
/// item folds the same block of all four regions, so each core keeps four long read streams in
/// flight where one walk from start to end keeps one (on two Zen 3 cores a read-only stream is
/// held by its outstanding misses: a scratch fp32 sum of 2^26 read 40-42 GB/s this way against
/// 28-29, copy 42-47); the rest, under four blocks, is one more fold on the calling thread. The
/// order is fixed for a given n and thread count.
template <class Exec, class Acc, class Combine, class Fold>
Acc reduce_regions(const char* label, const Exec& exec, std::int64_t n, Acc identity, const Combine& combine, const Fold& fold) {
  static_assert(!ReductionShape<Exec, Acc>::gpu, "reduce_regions: host execution spaces");
  constexpr std::int64_t block = ReductionShape<Exec, Acc>::block;
  const std::int64_t region = n / (4 * block) * block;
  Acc result = identity;
  if (region > 0)
    result = reduce_blocks(label, exec, region, identity, combine,
                           [=](const std::int64_t begin, const std::int64_t end) { return fold(begin, end - begin, region); });
  return combine(result, fold(4 * region, n - 4 * region, std::int64_t(0)));
}

/// The sum over [0, n) of blocks whose ReductionShape::lanes partials host vector code fills
/// itself, partials(begin, end, part) (part aligned to 64 bytes), combined as fold_lanes
/// combines its own: bf16/fp16 dot in registers (backends/cpu/row_sums.hpp).
template <class Acc, class Exec, class Partials>
Acc reduce_partials(const char* label, const Exec& exec, std::int64_t n, const Partials& partials) {
  return reduce_blocks(label, exec, n, Acc(0), Plus{}, [=](const std::int64_t begin, const std::int64_t end) {
    alignas(64) Acc part[ReductionShape<Exec, Acc>::lanes];
    partials(begin, end, part);
    return combine_lanes(part, Plus{});
  });
}

/// Folds value(i) for i in [0, n) with `combine` (associative and commutative, identity
/// `identity`) and returns the result; value(i) returns Acc. The order of the fold is fixed
/// for a given n and thread count.
template <class Exec, class Acc, class Value, class Combine>
Acc chunked_reduce(const char* label, const Exec& exec, std::int64_t n, Acc identity, Value value, Combine combine) {
  return reduce_blocks(label, exec, n, identity, combine, KOKKOS_LAMBDA(const std::int64_t begin, const std::int64_t end) {
    return fold_lanes<ReductionShape<Exec, Acc>::lanes>(begin, end, identity, value, combine);
  });
}

/// Rank-1 Views read together at one index: call<C>(f, i, a...) is f(a..., C(x(i))...). A
/// struct rather than a captured parameter pack, which CUDA's extended lambdas cannot capture.
template <class... X>
struct ViewPack {
  template <class C, class F, class... A>
  KOKKOS_FORCEINLINE_FUNCTION auto call(const F& f, std::int64_t, const A&... a) const {
    return f(a...);
  }
};
template <class X, class... Rest>
struct ViewPack<X, Rest...> {
  X x;
  ViewPack<Rest...> rest;
  template <class C, class F, class... A>
  KOKKOS_FORCEINLINE_FUNCTION auto call(const F& f, std::int64_t i, const A&... a) const {
    return rest.template call<C>(f, i, a..., C(x(i)));
  }
};
inline ViewPack<> pack_views() { return {}; }
template <class X, class... Rest>
ViewPack<X, Rest...> pack_views(const X& x, const Rest&... rest) {
  return {x, pack_views(rest...)};
}

/// The host's fold of one work item [begin, end) of reduce_inputs: 256 elements of each input
/// at a time widened into L1 buffers (cpu::widen), folded into the same `lanes` partials in the
/// same order as fold_lanes (256 is a multiple of lanes).
template <int lanes, class Acc, class F, class Combine, class... In, std::size_t... k>
Acc fold_widened(std::int64_t begin, std::int64_t end, Acc identity, const F& f, const Combine& combine,
                 std::index_sequence<k...>, const In*... in) {
  constexpr std::int64_t block = 256;
  static_assert(block % lanes == 0, "fold_widened: blocks must keep each element's partial");
  alignas(64) float wide[sizeof...(In)][block];
  Acc part[lanes];
  for (int l = 0; l < lanes; ++l) part[l] = identity;
  for (std::int64_t s = begin; s < end; s += block) {
    const std::int64_t count = end - s < block ? end - s : block;
    (cpu::widen(in + s, wide[k], count), ...);
    std::int64_t i = 0;
    for (; i + lanes <= count; i += lanes)
      for (int l = 0; l < lanes; ++l) part[l] = combine(part[l], f(wide[k][i + l]...));
    for (int l = 0; i + l < count; ++l) part[l] = combine(part[l], f(wide[k][i + l]...));
  }
  return combine_lanes(part, combine);
}

/// chunked_reduce of f(C(x(i))...) over the rank-1 Views x... of n elements each (C:
/// compute_t of their value type). Where widening that type in blocks pays on the host
/// (cpu::widens_in_blocks: fp16 with F16C) and every View is contiguous, work items fold through
/// fold_widened: the same blocks, partials and order, without a conversion per element.
template <class Exec, class Acc, class F, class Combine, class X, class... Xs>
Acc reduce_inputs(const char* label, const Exec& exec, std::int64_t n, Acc identity, const F& f, const Combine& combine,
                  const X& x, const Xs&... xs) {
  using T = typename X::non_const_value_type;
  using C = compute_t<T>;
  if constexpr (cpu::widens_in_blocks<T> && on_host<Exec> &&
                (std::is_same_v<typename Xs::non_const_value_type, T> && ...)) {
    if (x.stride(0) == 1 && ((xs.stride(0) == 1) && ...)) {
      const T* const data = x.data();
      return reduce_blocks(label, exec, n, identity, combine, [=](const std::int64_t begin, const std::int64_t end) {
        return fold_widened<ReductionShape<Exec, Acc>::lanes>(begin, end, identity, f, combine,
                                                              std::index_sequence_for<X, Xs...>{}, data, xs.data()...);
      });
    }
  }
  const auto views = pack_views(x, xs...);
  return chunked_reduce(label, exec, n, identity, KOKKOS_LAMBDA(const std::int64_t i) { return views.template call<C>(f, i); }, combine);
}

}  // namespace rooftop::detail
