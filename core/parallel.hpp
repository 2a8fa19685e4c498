// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// How kernels are spread over an execution space. Elementwise ops: one work item per
/// element (per 32 KB chunk where a large host output is streamed). Row-wise parallelism for
/// ops over the last axis of a (rows, cols) tensor (softmax, norms, embedding, bias +
/// activation): on GPUs one team per row, its threads sharing the row, consecutive threads on
/// consecutive columns (coalesced); on CPUs one thread per work item of one or more rows (a
/// RowPlan: enough rows for 32 KB of output when streamed, optional scratch), each row a plain
/// loop the compiler vectorizes (reductions through fold_lanes' independent partials).
#pragma once

#include "../backends/cpu/convert.hpp"
#include "../backends/cpu/stream_vectors.hpp"
#include "../backends/cpu/streaming_store.hpp"
#include "error.hpp"
#include "reduction.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

/// Loop hints for register-blocked kernels. ROOFTOP_UNROLL fully unrolls a short loop of fixed
/// length (a register block's rows and columns); ROOFTOP_SIMD marks a loop to vectorize (without
/// it GCC 12 keeps part of a register block's sums in memory: a store-load chain per step).
#if defined(__CUDA_ARCH__)
#define ROOFTOP_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define ROOFTOP_UNROLL  // nvcc's host pass: its front end rejects GCC's pragma (warning 1675-D)
#elif defined(__GNUC__) && !defined(__clang__)
#define ROOFTOP_UNROLL _Pragma("GCC unroll 16")
#else
#define ROOFTOP_UNROLL
#endif
#if defined(_OPENMP) && !defined(__CUDA_ARCH__)
#define ROOFTOP_SIMD _Pragma("omp simd")
#else
#define ROOFTOP_SIMD
#endif

namespace rooftop::detail {

/// Team scratch in Kokkos starts on 8-byte boundaries (ScratchMemorySpace::ALIGN), so on the
/// host a 64-byte vector access to it straddles two cache lines (on the Zen 5 VM every row
/// kernel's scratch began 48 bytes into a line: widening fp16 rows of 4096 into it, scratch
/// program, 2 threads, 81 -> 48 GB/s). Scratch arrays taken by scratch_lines start on a cache
/// line on the host; a team of Exec asks for scratch_lines_bytes<Exec, T>(count) for each. On
/// GPUs both are what a scratch View would take (8-byte alignment, no padding).
inline constexpr std::size_t scratch_line = 64;
template <class Exec, class T>
constexpr std::size_t scratch_lines_bytes(std::int64_t count) {
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(T);
  return on_host<Exec> ? bytes + scratch_line : (bytes + 7) / 8 * 8;
}
/// count values of T from the team scratch `space` (member.team_scratch(level)).
template <class T, class Space>
KOKKOS_INLINE_FUNCTION T* scratch_lines(const Space& space, std::int64_t count) {
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(T);
#if defined(__CUDA_ARCH__)
  return static_cast<T*>(space.get_shmem((bytes + 7) / 8 * 8));
#else
  return static_cast<T*>(space.get_shmem_aligned(bytes, scratch_line));
#endif
}

/// One work item per element of v (a rank-1 View).
template <class Exec, class View>
compat::Range<Exec> elements(const Exec& exec, const View& v) {
  return compat::Range<Exec>(exec, 0, v.extent(0));
}

/// Whether Exec runs on the host and the host has streaming stores.
template <class Exec>
inline constexpr bool host_streams = cpu::has_streaming_stores && on_host<Exec>;

/// Whether a host kernel (where host_streams) writes `count` contiguous elements of T with
/// streaming stores.
template <class T>
bool streams(std::int64_t count) {
  return count > 0 && static_cast<std::size_t>(count) * sizeof(T) >= streaming_store_threshold();
}

/// Whether a host kernel narrows its fp32 results to T in blocks (backends/cpu/convert.hpp):
/// fp16 where the host has F16C, bf16 where it has AVX2.
template <class Exec, class T>
inline constexpr bool host_converts = cpu::narrows_in_blocks<std::remove_cv_t<T>> && on_host<Exec>;

/// host_converts, for an output of T whose inputs X... all hold T.
template <class Exec, class T, class... X>
inline constexpr bool host_converts_all = host_converts<Exec, T> && (std::is_same_v<typename X::non_const_value_type, T> && ...);

/// Whether a host kernel reads T through buffers widened in blocks rather than converting each
/// value where it is read (cpu::widens_in_blocks: fp16 with F16C).
template <class Exec, class T>
inline constexpr bool host_widens = cpu::widens_in_blocks<std::remove_cv_t<T>> && on_host<Exec>;

/// A float copy of the host rank-1 View v (empty if v is), for parameters every row of a
/// row-wise kernel reads (weights, biases) where host_widens: the rows then convert nothing of
/// them per element.
template <class V>
Kokkos::View<float*, Kokkos::HostSpace> widened_copy(const V& v) {
  const auto n = static_cast<std::int64_t>(v.extent(0));
  Kokkos::View<float*, Kokkos::HostSpace> out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "rooftop::widened"), n);
  if (v.stride(0) == 1) {
    cpu::widen(v.data(), out.data(), n);
  } else {
    for (std::int64_t i = 0; i < n; ++i) out(i) = float(v(i));
  }
  return out;
}

/// Whether a host kernel writing T values computed as V (the value function's result) computes
/// them in fp32 blocks and narrows each block at once (cpu::narrow). Values that already are T
/// (a gather) are stored as they are.
template <class Exec, class T, class V>
inline constexpr bool host_narrows = host_converts<Exec, T> && !std::is_same_v<std::decay_t<V>, T>;

/// Runs chunk(lo, hi) over [0, n) in 32 KB chunks of T, one work item each, fencing the
/// chunk's streaming stores at its end where `streamed`.
template <class T, bool streamed = true, class Exec, class Chunk>
void for_each_chunk(const char* label, const Exec& exec, std::int64_t n, const Chunk& chunk) {
  constexpr std::int64_t size = 32768 / static_cast<std::int64_t>(sizeof(T));
  Kokkos::parallel_for(label, compat::Range<Exec>(exec, 0, (n + size - 1) / size), [=](const std::int64_t b) {
    chunk(b * size, n - b * size < size ? n : (b + 1) * size);
    if constexpr (streamed) cpu::stream_fence();
  });
}

/// The host's buffered write: value(j) for j in [0, n) computed `block` at a time as U into a
/// buffer in L1 (a loop of constant trip count the compiler vectorizes), each block then handed
/// to emit(buf, first, count) to store.
template <class U, std::int64_t block, class Value, class Emit>
void in_blocks(std::int64_t n, const Value& value, const Emit& emit) {
  alignas(64) U buf[block];
  std::int64_t s = 0;
  for (; s + block <= n; s += block) {
    for (std::int64_t j = 0; j < block; ++j) buf[j] = U(value(s + j));
    emit(buf, s, block);
  }
  if (s == n) return;
  for (std::int64_t j = 0; j < n - s; ++j) buf[j] = U(value(s + j));
  emit(buf, s, n - s);
}

/// out[j] = T(value(j)) for j in [0, n) on the host: 64 values at a time computed in fp32, then
/// narrowed together (cpu::narrow).
template <class T, class Value>
void narrow_values(T* out, std::int64_t n, const Value& value, const cpu::Prefetch& ahead = {}) {
  in_blocks<float, 64>(n, value, [&](const float* buf, std::int64_t first, std::int64_t count) {
    ahead.lines(first * ahead.element_bytes, (first + count) * ahead.element_bytes);
    cpu::narrow(buf, out + first, count);
  });
}

/// No second stage (convert_map).
struct NoStage {
  void operator()(const float*, float*, std::int64_t, std::int64_t) const {}
};
/// convert_map's f passing its one input through: the stage reads the input where it is
/// (fp32: no copy into out first).
struct Pass {
  float operator()(std::int64_t, float v) const { return v; }
};

/// in as floats for j in [0, count): in itself where it holds floats, else widened into `wide`.
template <class In>
[[gnu::always_inline]] inline const float* floats_of(const In* in, float* wide, std::int64_t count) {
  if constexpr (std::is_same_v<std::remove_cv_t<In>, float>) {
    return in;
  } else {
    cpu::widen(in, wide, count);
    return wide;
  }
}

/// cpu::prefetch_ahead where In is float.
template <class In>
[[gnu::always_inline]] inline void prefetch_floats(const In* in, std::int64_t count) {
  if constexpr (std::is_same_v<std::remove_cv_t<In>, float>) cpu::prefetch_ahead(in, count);
}

template <bool streamed, std::size_t... k, class T, class F, class Stage, class... In>
void convert_map_blocks(std::index_sequence<k...>, T* out, std::int64_t n, const F& f, const Stage& stage, const In*... in) {
  constexpr std::int64_t block = 128;
  constexpr bool narrows = !std::is_same_v<T, float>;
  alignas(64) float wide[sizeof...(In)][block];
  alignas(64) float buf[narrows || streamed ? block : 1];
  for (std::int64_t s = 0; s < n; s += block) {
    const std::int64_t count = n - s < block ? n - s : block;
    // Floats read in place are prefetched (prefetch_distance); prefetching 2-byte inputs,
    // widened into L1 first, cost 5-15% (bf16/fp16 relu and dropout, 2^25 elements).
    (prefetch_floats(in + s, count), ...);
    const float* const src[] = {floats_of(in + s, wide[k], count)...};
    float* const values = narrows || streamed ? buf : reinterpret_cast<float*>(out + s);
    if constexpr (std::is_same_v<F, Pass>) {
      stage(src[0], values, s, count);
    } else {
      if (count == block) {
        ROOFTOP_SIMD
        for (std::int64_t j = 0; j < block; ++j) values[j] = f(s + j, src[k][j]...);
      } else {
        ROOFTOP_SIMD
        for (std::int64_t j = 0; j < count; ++j) values[j] = f(s + j, src[k][j]...);
      }
      stage(values, values, s, count);
    }
    if constexpr (narrows && streamed) {
      alignas(64) T narrowed[block];
      cpu::narrow(buf, narrowed, count);
      cpu::stream_whole_lines(out + s, narrowed, static_cast<std::size_t>(count) * sizeof(T));
    } else if constexpr (narrows) {
      cpu::narrow(buf, out + s, count);
    } else if constexpr (streamed) {
      cpu::stream_whole_lines(out + s, buf, static_cast<std::size_t>(count) * sizeof(T));
    }
  }
}

/// out[j] = T(f(j, float(in[j])...)) for j in [0, n) on the host, 128 elements at a time: each
/// input's block widened into an L1 buffer (cpu::widen), f applied over the buffers (a loop the
/// compiler vectorizes), then stage(values, values, first, count) over the block of results in
/// place (NoStage: none; with f = Pass, stage(input, values, first, count) instead), the
/// results narrowed into out (cpu::narrow). Floats are read in place, and written in place.
/// With `streamed`, the results (narrowed into a buffer where T is 2 bytes) are streamed out
/// instead (cpu::stream_whole_lines; the caller fences). For 2-byte types, whose
/// element-by-element conversions the compiler either leaves scalar (fp16) or
/// vectorizes into twice the instructions (bf16); and for ops whose second stage vectorizes
/// better as a loop of its own (dropout's mask: DropoutMask::apply_block). An input may be out
/// itself (the loops are marked to vectorize without overlap checks, so an in-place call is not
/// sent down a scalar path).
template <bool streamed = false, class T, class F, class Stage, class... In>
void convert_map(T* out, std::int64_t n, const F& f, const Stage& stage, const In*... in) {
  static_assert(!streamed || std::is_same_v<T, float> || cpu::streams_narrowed<T>, "convert_map streams floats, or 2-byte outputs where cpu::streams_narrowed");
  convert_map_blocks<streamed>(std::index_sequence_for<In...>{}, out, n, f, stage, in...);
}

/// How many of out's first n elements precede its first cache-line boundary: the ones a
/// streamed output stores plainly before its whole lines.
template <class T>
[[gnu::always_inline]] inline std::int64_t elements_to_line(const T* out, std::int64_t n) {
  const auto to_boundary = static_cast<std::int64_t>((64 - (reinterpret_cast<std::uintptr_t>(out) & 63)) & 63) / static_cast<std::int64_t>(sizeof(T));
  return to_boundary < n ? to_boundary : n;
}

/// out[j] = T(value(j)) for j in [0, n) with streaming stores, on the host: four cache lines at
/// a time, streamed out from the buffer. The caller fences. `ahead` names a row to prefetch
/// meanwhile, element_bytes per element of out. Four lines keep the loads and the streaming
/// stores interleaved finely: fp64 triad at 268 MB on the 2-core Zen 3 VM, interleaved in one
/// process, reached a median of 48-50 GB/s through 64-256 byte buffers, 40 GB/s through 1 KB
/// ones, and 46 GB/s storing each vector as it is computed. Only whole lines are streamed: the
/// values before out's first line boundary and after its last are stored plainly, since the
/// rest of those lines may be written by another work item (a streamed partial line is a
/// partial write-combining flush, and a line written both ways; see cpu::stream_whole_lines).
template <class T, class Value>
void stream_values(T* out, std::int64_t n, const Value& value, const cpu::Prefetch& ahead = {}) {
  constexpr std::int64_t block = sizeof(T) < 256 ? 256 / static_cast<std::int64_t>(sizeof(T)) : 1;
  // Plain stores up to out's first line boundary, so that every block starts on one.
  const std::int64_t head = elements_to_line(out, n);
  for (std::int64_t j = 0; j < head; ++j) out[j] = T(value(j));
  T* const lines = out + head;
  auto rest = [&](const std::int64_t j) { return value(head + j); };
  auto stream = [&](const T* buf, std::int64_t first, std::int64_t count) {
    cpu::stream_whole_lines(lines + first, buf, static_cast<std::size_t>(count) * sizeof(T));
  };
  // 2-byte T computed in fp32: each block narrowed together (cpu::narrow), not one value at a
  // time. Values that are T already (a gather) are copied as they are: through fp32 a
  // signaling NaN would come out quiet.
  using V = std::decay_t<decltype(value(std::int64_t{0}))>;
  using U = std::conditional_t<cpu::streams_narrowed<T> && !std::is_same_v<V, T>, float, T>;
  auto emit = [&](const U* buf, std::int64_t first, std::int64_t count) {
    if constexpr (std::is_same_v<U, T>) {
      stream(buf, first, count);
    } else {
      alignas(64) T narrowed[block];
      cpu::narrow(buf, narrowed, count);
      stream(narrowed, first, count);
    }
  };
  if (!ahead.data) return in_blocks<U, block>(n - head, rest, emit);
  in_blocks<U, block>(n - head, rest, [&](const U* buf, std::int64_t first, std::int64_t count) {
    ahead.lines((head + first) * ahead.element_bytes, (head + first + count) * ahead.element_bytes);
    emit(buf, first, count);
  });
}

/// Whether stream_lines writes T: fp32 and fp64, and bf16 and fp16 where the host converts
/// and streams them a line at a time in AVX-512 or AVX2 registers (cpu::widen_line,
/// cpu::stream_narrowed_line).
template <class T>
inline constexpr bool streams_lines = std::is_same_v<T, float> || std::is_same_v<T, double>
#if defined(ROOFTOP_HAS_LINE_CONVERT)
                                      || (sizeof(T) == 2 && cpu::has_float_lanes<T>)
#endif
    ;

template <std::size_t... k, class T, class F, class... In>
void stream_lines_of(std::index_sequence<k...>, T* out, std::int64_t n, const F& f, const In*... in) {
  constexpr std::int64_t line = 64 / static_cast<std::int64_t>(sizeof(T));
  const std::int64_t head = elements_to_line(out, n);
  std::int64_t j = 0;
  for (; j < head; ++j) out[j] = T(f(j, cpu::to_compute(in[j])...));
  for (; j + line <= n; j += line) {
    if constexpr (sizeof(T) == 2) {
#if defined(ROOFTOP_HAS_LINE_CONVERT)
      alignas(64) float wide[sizeof...(In)][line];
      (cpu::widen_line(in + j, wide[k]), ...);
      alignas(64) float values[line];
      ROOFTOP_SIMD
      for (std::int64_t q = 0; q < line; ++q) values[q] = f(j + q, wide[k][q]...);
      cpu::stream_narrowed_line(out + j, values);
#endif
    } else {
      alignas(64) T values[line];
      ROOFTOP_SIMD
      for (std::int64_t q = 0; q < line; ++q) values[q] = f(j + q, in[j + q]...);
      cpu::stream_line(out + j, values);
    }
  }
  for (; j < n; ++j) out[j] = T(f(j, cpu::to_compute(in[j])...));
}

/// out[j] = T(f(j, C(in[j])...)) for j in [0, n) on the host (C: compute_t<T>), where
/// streams_lines<T>, a cache line at a time: each line's inputs read in place (fp32, fp64) or
/// widened in registers (bf16, fp16: cpu::widen_line), its values computed into a buffer of
/// one line (a loop the compiler vectorizes) and streamed out at once (cpu::stream_line,
/// cpu::stream_narrowed_line); the partial lines at out's ends are stored plainly (see
/// stream_values). The caller fences. For elementwise ops whose inputs are out's type: through
/// stream_values' four-line buffer and the Views' accessors (fp32, fp64), or convert_map's
/// blocks of 128 widened and narrowed through L1 (bf16, fp16), the same ops ran 13-25% slower
/// (Zen 5 VM, 2 threads, scratch program, 25-40 alternations, median GB/s: fp32 2^25 scale
/// 41 -> 51-52 beside copy at 52-54; bf16 2^26 scale 43-44 -> 50-51, triad 48 -> 55, relu
/// 39 -> 45, beside copy at 54).
template <class T, class F, class... In>
void stream_lines(T* out, std::int64_t n, const F& f, const In*... in) {
  static_assert(streams_lines<T>, "stream_lines: fp32 or fp64, or bf16 or fp16 with AVX-512 or AVX2");
  stream_lines_of(std::index_sequence_for<In...>{}, out, n, f, in...);
}

#if defined(ROOFTOP_HAS_WHOLE_LINES)
/// out[j] for j in [0, n) on an AVX2 or AVX-512 host, a vector at a time: line(j) returns the
/// bits of out[j, j + sizeof(V) / sizeof(T)) as a V, an __m512i (a cache line, AVX-512) or an
/// __m256i (half a line). Every whole vector of out from its first cache-line boundary on is
/// written from line, streamed where `streamed` (the caller fences) or stored plainly; the
/// elements before that boundary and after the last whole vector come from one(j), stored
/// plainly (see stream_values).
template <bool streamed, class T, class Line, class One>
[[gnu::always_inline]] inline void map_whole_lines(T* out, std::int64_t n, const Line& line, const One& one) {
  constexpr std::int64_t per_vector = sizeof(decltype(line(std::int64_t{0}))) / static_cast<std::int64_t>(sizeof(T));
  const std::int64_t head = elements_to_line(out, n);
  std::int64_t j = 0;
  for (; j < head; ++j) out[j] = T(one(j));
  for (; j + per_vector <= n; j += per_vector) cpu::store_bits<streamed>(out + j, line(j));
  for (; j < n; ++j) out[j] = T(one(j));
}
#endif

#if defined(ROOFTOP_HAS_WHOLE_LINES) && defined(ROOFTOP_HAS_FLOAT_LANES)
#define ROOFTOP_HAS_MAP_LINES 1
/// map_whole_lines from code computing in fp32 registers (cpu::Floats; T: fp32, bf16 or fp16):
/// vector(j) returns the values of out[j, j + cpu::float_lanes) (two calls for a vector of
/// two-byte values, narrowed as cpu::narrow does).
template <bool streamed, class T, class Vector, class One>
[[gnu::always_inline]] inline void map_lines(T* out, std::int64_t n, const Vector& vector, const One& one) {
  static_assert(cpu::has_float_lanes<T>, "map_lines: fp32, bf16 or fp16 outputs");
  map_whole_lines<streamed>(
      out, n,
      [&](const std::int64_t j) { return cpu::bits_of<T>(vector, j); },
      one);
}
#endif

#if defined(ROOFTOP_HAS_MAP_LINES)
/// Registers of fp32 lanes map_line_registers computes together for outputs of T unless told
/// otherwise: four on AVX2 hosts (a line of 2-byte values or two of fp32; sixteen registers),
/// and on AVX-512 hosts four for fp32 (four lines) and eight for 2-byte T (four lines). AVX2,
/// against one line of fp32 (two registers), Zen 3 VM, one thread, 16384 values in L2, the
/// builds alternated three times, best us: gelu 6.60 -> 6.38, silu 5.78 -> 5.41, bias_gelu
/// 7.27-14.11 -> 6.77-12.93; GELU's erf form in L1, a scratch program, TSC cycles per
/// register: 21.2 -> 17.8. AVX-512 (Zen 5 VM), the harness, one thread, 16384 values in L2,
/// builds alternated twice, eight registers against four: bf16/fp16 gelu 7-8%, bias_gelu
/// 8-13%, silu fp16 3% less time, but fp32 gelu 10% and silu 26% more.
template <class T>
inline constexpr int step_registers = cpu::float_lanes == 16 && sizeof(T) == 2 ? 8 : 4;
/// Registers computed together by the longest chains (GELU's erf form, the fused chain's GELU
/// and mask) for any T: eight on AVX-512 hosts, whose thirty-two registers hold them, else four.
/// Zen 5 VM, a scratch program, one thread, 4096 values in L1, cycles per register (at 4.16
/// GHz) with two, four and eight registers together: GELU's erf form 19.3, 17.5, 14.2 (the tanh
/// form 7.6, 7.3, 6.7); the harness, one thread, 16384 values in L2, builds alternated twice,
/// eight against four: gelu_erf fp32 / bf16 / fp16 9 / 16 / 19% and bias_gelu_dropout 4-9% less
/// time.
inline constexpr int long_step_registers = cpu::float_lanes == 16 ? 8 : 4;
/// How many registers the array V (a reference to one, as a generic lambda receives it) holds.
template <class V>
inline constexpr int registers_of = static_cast<int>(std::extent_v<std::remove_reference_t<V>>);

/// The bits of U registers of fp32 values as T: fp32 as they are, 2-byte T narrowed in pairs
/// of registers as map_lines narrows them.
/// (Built in one braced list: filled by a loop, the fp32 bits went through memory, gelu and
/// silu fp32 in L2 25-35% slower.)
template <class T, int U, int... k>
[[gnu::always_inline]] inline auto register_bits(const cpu::Floats (&v)[U], std::integer_sequence<int, k...>) {
  if constexpr (sizeof(T) == 4) {
    return cpu::RegisterBits<U>{{cpu::float_bits(v[k])...}};
  } else {
    return cpu::RegisterBits<U / 2>{{cpu::narrow_bits<T>(v[2 * k], v[2 * k + 1])...}};
  }
}
template <class T, int U>
[[gnu::always_inline]] inline auto register_bits(const cpu::Floats (&v)[U]) {
  static_assert(sizeof(T) == 4 || U % 2 == 0, "register_bits: 2-byte values narrow in pairs of registers");
  return register_bits<T>(v, std::make_integer_sequence<int, sizeof(T) == 4 ? U : U / 2>{});
}

#endif

#if defined(ROOFTOP_HAS_MAP_LINES) && defined(ROOFTOP_HAS_AVX2_LANES)
/// U / 4 cache lines of 32 bf16 from p (unaligned) as U registers of floats: the even and the
/// odd values of its first sixteen, then of the next sixteen, and so on (cpu::load_pairs; AVX2
/// hosts).
template <int U>
[[gnu::always_inline]] inline void load_pair_lines(const bf16* p, cpu::Floats (&v)[U]) {
  static_assert(U % 4 == 0, "load_pair_lines: whole cache lines");
  for (int k = 0; k < U / 2; ++k) {
    const cpu::Bf16Pairs pairs = cpu::load_pairs(p + 16 * k);
    v[2 * k] = pairs.even;
    v[2 * k + 1] = pairs.odd;
  }
}
/// The bits of those lines from U such registers, each value rounded as narrow<bf16> does (in
/// one braced list, as register_bits).
template <int U, int... k>
[[gnu::always_inline]] inline cpu::RegisterBits<U / 2> merge_pair_lines(const cpu::Floats (&v)[U], std::integer_sequence<int, k...>) {
  return {{cpu::merge_pairs(v[2 * k], v[2 * k + 1])...}};
}
template <int U>
[[gnu::always_inline]] inline cpu::RegisterBits<U / 2> merge_pair_lines(const cpu::Floats (&v)[U]) {
  return merge_pair_lines(v, std::make_integer_sequence<int, U / 2>{});
}
#endif

#if defined(ROOFTOP_HAS_MAP_LINES)
/// out[j] for j in [0, n) on an AVX-512 or AVX2 host (T: fp32, bf16 or fp16), `together`
/// registers of fp32 lanes at a time: registers(j, v) fills the cpu::Floats v[U] with the
/// values of out[j, j + U cpu::float_lanes) together (U: `together`, or one cache line's worth
/// for the last whole lines; registers takes any U), so code whose registers are each a long
/// chain of steps can interleave them (see cpu::times_sigmoid_of_exp2). Streamed where
/// `streamed` (the caller fences), narrowed as map_lines narrows; the elements before out's
/// first line boundary and after its last whole line come from one(j), stored plainly (see
/// map_whole_lines). `pairs` (bf16 on AVX2 hosts): v holds the values in load_pair_lines'
/// order, narrowed as merge_pair_lines does.
template <bool streamed, int together, bool pairs = false, class T, class Registers, class One>
[[gnu::always_inline]] inline void map_line_registers(T* out, std::int64_t n, const Registers& registers, const One& one) {
  static_assert(cpu::has_float_lanes<T>, "map_line_registers: fp32, bf16 or fp16 outputs");
  const auto bits = [](const auto& v) __attribute__((always_inline)) {
#if defined(ROOFTOP_HAS_AVX2_LANES)
    if constexpr (pairs) {
      static_assert(std::is_same_v<T, bf16>, "map_line_registers: pairs of registers of bf16");
      return merge_pair_lines(v);
    } else {
      return register_bits<T>(v);
    }
#else
    static_assert(!pairs, "map_line_registers: pairs of registers on AVX2 hosts");
    return register_bits<T>(v);
#endif
  };
  constexpr int line_registers = 64 / static_cast<int>(cpu::float_lanes * sizeof(T));
  static_assert(together % line_registers == 0, "map_line_registers: whole lines per step");
  constexpr std::int64_t wide = together * cpu::float_lanes;
  const std::int64_t head = elements_to_line(out, n);
  std::int64_t j = 0;
  for (; j < head; ++j) out[j] = T(one(j));
  for (; j + wide <= n; j += wide) {
    cpu::Floats v[together];
    registers(j, v);
    cpu::store_bits<streamed>(out + j, bits(v));
  }
  // From this line boundary on, map_whole_lines: a line's registers at a time, then one(j).
  map_whole_lines<streamed>(
      out + j, n - j,
      [&](const std::int64_t i) {
        cpu::Floats v[line_registers];
        registers(j + i, v);
        return bits(v);
      },
      [&](const std::int64_t i) { return one(j + i); });
}
#endif

/// How an elementwise or row-wise op's outputs may be written on the host when they are large.
/// Streaming stores pay where the loop is bound by memory, and lose where it is bound by its
/// instructions: interleaved medians of 25 runs each on the 2-core Zen 3 VM, 128 MiB arrays,
/// streamed vs plain: scale, triad, relu in fp64/fp32 1.09-1.29x; gelu, silu, dropout fp32
/// 0.72-0.83x; bf16 scale, triad, relu (bound by the conversions) 0.81-0.89x.
enum class Stores { plain, streamed_when_large };

/// `light` ops stream when T is 4 or 8 bytes, and 2-byte T where the host narrows it cheaply
/// (cpu::streams_narrowed); elsewhere 2-byte types pay for their conversions. Row-wise ops'
/// 2-byte rows stream at every length with it, as fp32 rows do: on the Zen 4 VM 2-byte rows
/// shorter than 4 KB had lost (rows of 768, GFLOP/s: fp16 rmsnorm 37, 21 -> 27, 24; fp16 softmax
/// 28 -> 20-22), but on the Zen 5 VM, with the AVX-512 rows as they are now, they gain (2
/// threads, --quick, three alternations, rows of 768, GB/s bf16 / fp16: layernorm 40-53 /
/// 36-55 -> 45-60 / 45-58, rmsnorm 39-64 / 40-62 -> 51-84 / 81-86).
template <class T>
constexpr Stores light_op_stores() {
  return sizeof(T) >= 4 || cpu::streams_narrowed<std::remove_cv_t<T>> ? Stores::streamed_when_large : Stores::plain;
}

/// Stores for the STREAM ops (scale, add, triad: inputs of out's type and an add and a multiply
/// at most): as light_op_stores, and streamed for 2-byte T wherever stream_lines converts it a
/// line at a time in registers, AVX2 hosts included (there light_op_stores keeps plain stores
/// for 2-byte values narrowed through L1 blocks, see cpu::streams_narrowed). Zen 3 VM (AVX2),
/// `rooftop --quick --ops copy,scale,add,triad --dtypes bf16,fp16`, the previous build (plain
/// stores through convert_map's blocks) and this one alternated three times, GB/s: scale bf16
/// 19.5-23.9 -> 31.7-37.4, fp16 22.3-25.2 -> 34.5-35.5; add bf16 25.1-29.9 -> 35.0-39.7, fp16
/// 25.6-31.5 -> 38.7-46.9; triad bf16 21.5-27.4 -> 31.9-39.0, fp16 25.0-32.2 -> 40.6-49.5
/// (paired fractions 0.49-0.72 -> 0.82-1.02; copy 33-50 meanwhile).
template <class T>
constexpr Stores stream_op_stores() {
  return streams_lines<std::remove_cv_t<T>> ? Stores::streamed_when_large : light_op_stores<T>();
}

/// Elements of T each GPU thread of write_elements_gpu handles: 32 bytes of output.
template <class T>
inline constexpr int gpu_elements_per_thread = sizeof(T) >= 8 ? 4 : sizeof(T) == 4 ? 8 : 16;

/// write_elements on a GPU: each thread computes gpu_elements_per_thread<T> values, a slot
/// count apart (so a warp's accesses stay consecutive), all before it stores any, so that their
/// loads are in flight together. One element per thread kept too few bytes in flight: on an
/// H100 every elementwise op ran at about 105 G elements/s whatever its type (copy fp64 1664
/// GB/s, fp32 841, bf16 424, against 3000 for PyTorch's copy).
template <class Exec, class Out, class Value>
void write_elements_gpu(const char* label, const Exec& exec, const Out& out, const Value& value) {
  using T = typename Out::value_type;
  using V = decltype(value(std::int64_t{0}));
  constexpr int per_thread = gpu_elements_per_thread<T>;
  const auto n = static_cast<std::int64_t>(out.extent(0));
  const std::int64_t slots = (n + per_thread - 1) / per_thread;
  Kokkos::parallel_for(label, compat::Range<Exec>(exec, 0, slots), KOKKOS_LAMBDA(const std::int64_t s) {
    V v[per_thread]{};
    for (int k = 0; k < per_thread; ++k)
      if (s + k * slots < n) v[k] = value(s + k * slots);
    for (int k = 0; k < per_thread; ++k)
      if (s + k * slots < n) out(s + k * slots) = T(v[k]);
  });
}

/// out(i) = T(value(i)) for every i of the rank-1 View out: the loop of every elementwise op
/// (value returns the compute type, T converts). With Stores::streamed_when_large, contiguous
/// host outputs of at least streaming_store_threshold() bytes are computed four cache lines at
/// a time into a buffer in L1 (a loop the compiler vectorizes) and streamed out
/// (backends/cpu/streaming_store.hpp); contiguous fp16 host outputs are narrowed in blocks
/// (host_narrows). GPUs go through write_elements_gpu. Everything else is one work item per
/// element.
template <Stores stores = Stores::plain, class Exec, class Out, class Value>
void write_elements(const char* label, const Exec& exec, const Out& out, const Value& value) {
  using T = typename Out::value_type;
  const auto n = static_cast<std::int64_t>(out.extent(0));
  if constexpr (!on_host<Exec>) {
    write_elements_gpu(label, exec, out, value);
    return;
  }
  if constexpr (host_streams<Exec> && stores == Stores::streamed_when_large) {
    if (out.stride(0) == 1 && streams<T>(n)) {
      T* const data = out.data();
      for_each_chunk<T>(label, exec, n, [=](const std::int64_t lo, const std::int64_t hi) {
        stream_values(data + lo, hi - lo, [&](const std::int64_t j) { return value(lo + j); });
      });
      return;
    }
  }
  if constexpr (host_narrows<Exec, T, decltype(value(n))>) {
    if (out.stride(0) == 1) {
      T* const data = out.data();
      for_each_chunk<T, false>(label, exec, n, [=](const std::int64_t lo, const std::int64_t hi) {
        narrow_values(data + lo, hi - lo, [&](const std::int64_t j) { return value(lo + j); });
      });
      return;
    }
  }
  Kokkos::parallel_for(label, elements(exec, out), KOKKOS_LAMBDA(const std::int64_t i) { out(i) = T(value(i)); });
}

/// Where out and every x are contiguous host Views: out(i) = T(f(i, float(x(i))...)) in work
/// items of 32 KB of out, each through convert_map, with stage(in, values, i, count) over each
/// block of values (i: the first one's index), and true. False, and nothing done, where a View
/// is strided. With Stores::streamed_when_large, large outputs are streamed: fp32 ones, and
/// 2-byte ones where cpu::streams_narrowed.
template <Stores stores = Stores::plain, class Exec, class Out, class F, class Stage, class... X>
bool map_contiguous(const char* label, const Exec& exec, const Out& out, const F& f, const Stage& stage, const X&... x) {
  static_assert(on_host<Exec>, "map_contiguous runs on the host");
  using T = typename Out::value_type;
  if (out.stride(0) != 1 || ((x.stride(0) != 1) || ...)) return false;
  T* const o = out.data();
  const auto n = static_cast<std::int64_t>(out.extent(0));
  auto run = [&](auto streaming) {
    constexpr bool streamed = decltype(streaming)::value;
    for_each_chunk<T, streamed>(label, exec, n, [=](const std::int64_t lo, const std::int64_t hi) {
      const auto at = [&] {  // f at the item's indices (Pass as itself)
        if constexpr (std::is_same_v<F, Pass>) {
          return f;
        } else {
          return [&](const std::int64_t j, auto... v) { return f(lo + j, v...); };
        }
      }();
      convert_map<streamed>(
          o + lo, hi - lo, at,
          [&](const float* in, float* values, const std::int64_t first, const std::int64_t count) { stage(in, values, lo + first, count); },
          (x.data() + lo)...);
    });
  };
  if constexpr (stores == Stores::streamed_when_large && host_streams<Exec> && (std::is_same_v<T, float> || cpu::streams_narrowed<T>)) {
    if (streams<T>(n)) {
      run(std::true_type{});
      return true;
    }
  }
  run(std::false_type{});
  return true;
}

/// out(i) = T(f(i, C(x(i))...)) for every i of the rank-1 Views out and x... (C: compute_t<T>):
/// an elementwise op with inputs. Where the host converts T in blocks (host_converts) and every
/// View is contiguous, through map_contiguous; everything else through write_elements<stores>.
template <Stores stores, class Exec, class Out, class F, class... X>
void map_inputs(const char* label, const Exec& exec, const Out& out, const F& f, const X&... x) {
  using T = typename Out::value_type;
  using C = compute_t<T>;
  // Large contiguous outputs of inputs of their type: a line at a time (stream_lines).
  if constexpr (stores == Stores::streamed_when_large && host_streams<Exec> && streams_lines<T> &&
                (std::is_same_v<typename X::non_const_value_type, T> && ...)) {
    const auto n = static_cast<std::int64_t>(out.extent(0));
    if (out.stride(0) == 1 && ((x.stride(0) == 1) && ...) && streams<T>(n)) {
      T* const o = out.data();
      for_each_chunk<T>(label, exec, n, [=](const std::int64_t lo, const std::int64_t hi) {
        stream_lines(o + lo, hi - lo, [&](const std::int64_t j, const auto... v) { return f(lo + j, v...); }, (x.data() + lo)...);
      });
      return;
    }
  }
  if constexpr (host_converts_all<Exec, T, X...>) {
    if (map_contiguous<stores>(label, exec, out, f, NoStage{}, x...)) return;
  }
  const auto views = pack_views(x...);
  write_elements<stores>(label, exec, out, KOKKOS_LAMBDA(const std::int64_t i) { return views.template call<C>(f, i, i); });
}

/// How a row-wise kernel is laid out on the host, decided before the launch (ignored on GPUs).
struct RowPlan {
  /// Write each row with streaming stores (RowTeam::write), fencing once per work item.
  bool stream = false;
  /// Rows per work item: enough for 32 KB of output when streaming, so the fence is rare.
  std::int64_t rows_per_item = 1;
  /// Floats of scratch per work item (RowTeam::scratch), e.g. a row of intermediate values.
  std::int64_t scratch_floats = 0;
};

/// The plan for a host kernel writing the rows of the (rows, cols) View y: with
/// Stores::streamed_when_large, each row streamed where rows are contiguous (stride 1 along
/// them) and the whole output reaches streaming_store_threshold(), as elementwise ops do;
/// `scratch_floats` floats of scratch per work item.
template <class Exec, Stores stores, class Y>
RowPlan plan_rows(const Y& y, std::int64_t scratch_floats = 0) {
  using T = typename Y::value_type;
  RowPlan plan;
  plan.scratch_floats = scratch_floats;
  const auto cols = static_cast<std::int64_t>(y.extent(1));
  if constexpr (host_streams<Exec> && stores == Stores::streamed_when_large) {
    plan.stream = cols > 0 && y.stride(1) == 1 && streams<T>(static_cast<std::int64_t>(y.size()));
    if (plan.stream) plan.rows_per_item = (32768 / static_cast<std::int64_t>(sizeof(T)) + cols - 1) / cols;
  }
  return plan;
}

/// Whether every row of the (rows, cols) View y is one or more whole cache lines from a line
/// boundary (not where the rows are empty: the row runs' plans divide by their bytes).
template <class Y>
bool whole_line_rows(const Y& y) {
  constexpr std::int64_t line = 64 / static_cast<std::int64_t>(sizeof(typename Y::value_type));
  return y.stride(1) == 1 && y.extent(1) > 0 && static_cast<std::int64_t>(y.extent(1)) % line == 0 &&
         (y.extent(0) < 2 || static_cast<std::int64_t>(y.stride(0)) % line == 0) && reinterpret_cast<std::uintptr_t>(y.data()) % 64 == 0;
}

/// The plan for a host row-wise op whose rows host vector code writes where `vector` (layernorm,
/// rmsnorm, softmax: streamed straight from registers where RowTeam::vector_stream_row allows):
/// plan_rows with light_op_stores, except on AVX2 hosts, where 2-byte rows
/// (bf16 only where `bf16_too`) stream at every length wherever every row of y is whole lines
/// from a line boundary, so that none falls back to stream_values (which narrows a value at a
/// time there). Zen 3 VM, 2 threads, 2^26 values, a scratch program calling the kernels, best of
/// five alternations, two runs, GB/s plain -> streamed, rows of 768 / 4096 / 32768: rmsnorm
/// fp16 17-18 -> 24-27 / 21-24 -> 30-31 / 21 -> 29, bf16 22-24 -> 25 / 23 -> 26-27 / 21-23 ->
/// 27; layernorm fp16 13-17 -> 15-17 / 19 -> 22 / 20 -> 23-24, bf16 within 0.7 either way;
/// softmax fp16 13 -> 14-17 / 13 -> 15 / 13 -> 15, but bf16 10.4-12.0 -> 9.5-10.4.
template <class Exec, bool bf16_too, class Y>
RowPlan plan_vector_rows(const Y& y, bool vector, std::int64_t scratch_floats) {
  using T = typename Y::value_type;
#if defined(ROOFTOP_HAS_AVX2_LANES)
  if constexpr (sizeof(T) == 2 && (bf16_too || !std::is_same_v<T, bf16>)) {
    if (vector && whole_line_rows(y)) return plan_rows<Exec, Stores::streamed_when_large>(y, scratch_floats);
  }
#else
  (void)vector;
#endif
  return plan_rows<Exec, light_op_stores<T>()>(y, scratch_floats);
}

/// Floats of scratch per work item that RowTeam::input needs for rows of `cols` entries of X.
template <class Exec, class X>
constexpr std::int64_t input_scratch_floats(std::int64_t cols) {
  return host_widens<Exec, typename X::value_type> ? cols : 0;
}

/// Readers of a row as floats (RowTeam::input).
struct FloatRow {
  const float* values;
  KOKKOS_FORCEINLINE_FUNCTION float operator()(std::int64_t c) const { return values[c]; }
};
template <class X>
struct ViewRow {
  const X* x;
  std::int64_t row;
  KOKKOS_FORCEINLINE_FUNCTION float operator()(std::int64_t c) const { return float((*x)(row, c)); }
};

/// One row of a row-wise kernel: its index and the team working on it.
template <class Exec>
struct RowTeam {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = typename Policy::member_type;
  static constexpr bool gpu = ReductionShape<Exec, float>::gpu;

  const Member& member;
  std::int64_t row;
  /// Host only: whether write() streams, and the work item's scratch (RowPlan::scratch_floats).
  bool stream = false;
  float* scratch = nullptr;

  /// f(j) for j in [0, n), split over the team.
  template <class F>
  KOKKOS_INLINE_FUNCTION void for_each(std::int64_t n, const F& f) const {
    if constexpr (gpu) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), f);
    } else {
      for (std::int64_t j = 0; j < n; ++j) f(j);
    }
  }

  /// y(row, j) = T(value(j)) for j in [0, n): the row's output (value returns the compute
  /// type), streamed where the plan says so, narrowed in blocks where host_narrows. A streamed
  /// row prefetches `ahead` (next_row_of) as it goes: a row-wise op reads its input row from
  /// memory in its first pass and then works from cache, so without it the memory would idle
  /// while the core computes.
  template <class Y, class Value>
  KOKKOS_INLINE_FUNCTION void write(const Y& y, std::int64_t n, const Value& value, const cpu::Prefetch& ahead = {}) const {
    using T = typename Y::value_type;
#if !defined(__CUDA_ARCH__)
    if constexpr (host_streams<Exec>) {
      if (stream) {
        stream_values(&y(row, 0), n, value, ahead);
        return;
      }
    }
    if constexpr (host_narrows<Exec, T, decltype(value(n))>) {
      if (y.stride(1) == 1) {
        // Rows narrowed in blocks (bf16/fp16, not streamed) prefetch `ahead` too where they
        // are 4 KB or more (Zen 5 VM, 2 threads, scratch program, four alternations, GB/s:
        // bf16 rmsnorm 10922x4096 45-48 -> 53-56, layernorm 32-34 -> 36-39; fp16 layernorm
        // 17-23 -> 27-28, rmsnorm 1365x32768 28-29 -> 31-33). Rows of 768 gained nothing
        // (bf16/fp16 rmsnorm 42-50 with and without), the hardware prefetcher following
        // short consecutive rows by itself.
        narrow_values(&y(row, 0), n, value, ahead.element_bytes * n >= 4096 ? ahead : cpu::Prefetch{});
        return;
      }
    }
#endif
    (void)ahead;
    for_each(n, [&](const std::int64_t j) { y(row, j) = T(value(j)); });
  }

#if defined(ROOFTOP_HAS_VECTOR_ROWS)
  /// Host vector code's way out for this row of the (rows, cols) View y of fp32, bf16 or fp16:
  /// where the plan streams the row and it is whole lines from a line boundary (so
  /// cpu::stream_vectors can write it), its first element; else null (write() then).
  template <class Y>
  typename Y::value_type* vector_stream_row(const Y& y, std::int64_t cols) const {
    using T = typename Y::value_type;
    static_assert(cpu::has_float_lanes<T>, "vector_stream_row: fp32, bf16 or fp16 rows");
    constexpr std::int64_t line = 64 / static_cast<std::int64_t>(sizeof(T));
    if (!stream || cols % line != 0 || cols == 0 || y.stride(1) != 1) return nullptr;
    T* const out = &y(row, 0);
    return reinterpret_cast<std::uintptr_t>(out) % 64 == 0 ? out : nullptr;
  }
#endif

  /// This row of the (rows, cols) View x as a reader of floats, c -> float(x(row, c)). Where
  /// host_widens, the row is widened once into the work item's scratch (its first cols
  /// floats; plan input_scratch_floats), so the row's later passes read floats and convert
  /// nothing; elsewhere the reader reads x. widen_2byte widens bf16 on the host too, where
  /// an op has the scratch anyway (softmax: GCC 12 compiles its row max over bf16 read in
  /// place into a compare and a masked shift per step of a two-deep dependency chain, not
  /// vmaxps).
  template <bool widen_2byte = false, class X>
  KOKKOS_INLINE_FUNCTION auto input(const X& x, std::int64_t cols) const {
    if constexpr (host_widens<Exec, typename X::value_type> || (widen_2byte && on_host<Exec> && sizeof(typename X::value_type) == 2)) {
#if !defined(__CUDA_ARCH__)
      if (x.stride(1) == 1) {
        cpu::widen(&x(row, 0), scratch, cols);
      } else {
        for (std::int64_t c = 0; c < cols; ++c) scratch[c] = float(x(row, c));
      }
#endif
      return FloatRow{scratch};
    } else {
      (void)cols;
      return ViewRow<X>{&x, row};
    }
  }

  /// The row after this one of the (rows, cols) View x, for write() to prefetch on the host
  /// (nothing on GPUs, for the last row, or where x's rows are not contiguous).
  template <class X>
  KOKKOS_INLINE_FUNCTION cpu::Prefetch next_row_of(const X& x) const {
    return next_row_of(x, row);
  }
  /// The same for the row `row`.
  template <class X>
  KOKKOS_INLINE_FUNCTION static cpu::Prefetch next_row_of(const X& x, std::int64_t row) {
    if constexpr (!gpu && host_streams<Exec>) {
      if (row + 1 < static_cast<std::int64_t>(x.extent(0)) && x.extent(1) > 0 && x.stride(1) == 1)
        return {reinterpret_cast<const char*>(&x(row + 1, 0)), static_cast<std::int64_t>(sizeof(typename X::value_type))};
    }
    return {};
  }

  /// y(row, j) = src[j] for j in [0, n), src contiguous: streamed straight from src where the
  /// plan says so (prefetching `ahead`, the next row's source, as it goes), else on the host
  /// one memcpy where y's row is contiguous too (the element loop is not vectorized for
  /// bf16/fp16: embedding bf16 1365x768 in cache ran at a quarter of fp32's GB/s).
  template <class Y>
  KOKKOS_INLINE_FUNCTION void copy(const Y& y, const typename Y::value_type* src, std::int64_t n, const cpu::Prefetch& ahead = {}) const {
#if !defined(__CUDA_ARCH__)
    if constexpr (on_host<Exec>) {
      const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(typename Y::value_type);
      if constexpr (host_streams<Exec>) {
        if (stream) {
          cpu::stream_whole_lines<true>(&y(row, 0), src, bytes, ahead);
          return;
        }
      }
      if (n > 0 && (n == 1 || y.stride(1) == 1)) {
        std::memcpy(&y(row, 0), src, bytes);
        return;
      }
    }
#endif
    (void)ahead;
    for_each(n, [&](const std::int64_t j) { y(row, j) = src[j]; });
  }

  /// Waits until the whole team is here, so what one thread wrote in an earlier loop over the
  /// row is visible to all (a no-op on CPUs, where the team is one thread).
  KOKKOS_INLINE_FUNCTION void barrier() const {
    if constexpr (gpu) member.team_barrier();
  }

  /// Folds value(j) for j in [0, n) with `combine` (identity `identity`); every thread of the
  /// team gets the result.
  template <class Acc, class Value, class Combine>
  KOKKOS_INLINE_FUNCTION Acc reduce(std::int64_t n, Acc identity, const Value& value, const Combine& combine) const {
    return reduce_by(
        n, identity, [&](Acc& part, const std::int64_t j) { part = combine(part, value(j)); }, combine);
  }

  /// The two sums of value(j) = SumPair{a, b} over j in [0, n) in one pass (on the host the
  /// same results as two reduce calls with Plus, in half the passes over the row).
  template <class Value>
  KOKKOS_INLINE_FUNCTION SumPair reduce_sums(std::int64_t n, const Value& value) const {
    if constexpr (gpu) {
      return reduce_by(
          n, SumPair{0.0f, 0.0f},
          [&](SumPair& part, const std::int64_t j) {
            const SumPair v = value(j);
            part.a += v.a;
            part.b += v.b;
          },
          PlusPair{});
    } else {
      return fold_lanes_pair<ReductionShape<Exec, float>::lanes>(0, n, value);
    }
  }

  /// As reduce, where accumulate(part, j) adds element j to a partial result directly (cheaper
  /// than combining with a one-element partial, e.g. for online softmax).
  template <class Acc, class Accumulate, class Combine>
  KOKKOS_INLINE_FUNCTION Acc reduce_by(std::int64_t n, Acc identity, const Accumulate& accumulate,
                                       const Combine& combine) const {
    if constexpr (gpu) {
      Acc result = identity;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(member, n), [&](const std::int64_t j, Acc& part) { accumulate(part, j); },
          CombineReducer<Acc, Combine>(result, identity, combine));
      member.team_barrier();  // before an adjacent reduction may reuse its shared memory (see reduce_blocks_gpu)
      return result;
    } else {
      return fold_lanes_by<ReductionShape<Exec, Acc>::lanes>(0, n, identity, accumulate, combine);
    }
  }
};

/// The policy row-wise kernels launch: on GPUs one team per row (Kokkos picks the team size for
/// the kernel's registers); on CPUs one thread per work item of plan.rows_per_item rows, with
/// the plan's scratch.
template <class Exec>
typename RowTeam<Exec>::Policy row_policy(const char* label, const Exec& exec, std::int64_t rows, const RowPlan& plan = {}) {
  using Policy = typename RowTeam<Exec>::Policy;
  if constexpr (RowTeam<Exec>::gpu) {
    return Policy(exec, league_size(label, rows), Kokkos::AUTO);
  } else {
    Policy policy(exec, league_size(label, (rows + plan.rows_per_item - 1) / plan.rows_per_item), 1);
    if (plan.scratch_floats > 0)
      policy.set_scratch_size(0, Kokkos::PerTeam(team_scratch_bytes(label, scratch_lines_bytes<Exec, float>(plan.scratch_floats))));
    return policy;
  }
}

/// Host: run(first, last, scratch) for the rows [first, last) of the work item `member` of
/// row_policy(exec, rows, plan), with the item's scratch (null without plan.scratch_floats);
/// then fences the item's streaming stores.
template <class Exec, class Run>
KOKKOS_INLINE_FUNCTION void for_run_of_item(const typename RowTeam<Exec>::Member& member, std::int64_t rows, const RowPlan& plan,
                                            const Run& run) {
  static_assert(!RowTeam<Exec>::gpu, "for_run_of_item: host work items");
  float* const scratch = plan.scratch_floats > 0 ? scratch_lines<float>(member.team_scratch(0), plan.scratch_floats) : nullptr;
  const std::int64_t first = static_cast<std::int64_t>(member.league_rank()) * plan.rows_per_item;
  run(first, rows - first < plan.rows_per_item ? rows : first + plan.rows_per_item, scratch);
#if !defined(__CUDA_ARCH__)
  if (plan.stream) cpu::stream_fence();
#endif
}

/// body(RowTeam) for each row of the work item `member` of row_policy(exec, rows, plan); on the
/// host, fences the item's streaming stores at its end.
template <class Exec, class Body>
KOKKOS_INLINE_FUNCTION void for_rows_of_item(const typename RowTeam<Exec>::Member& member, std::int64_t rows,
                                             const RowPlan& plan, const Body& body) {
  if constexpr (RowTeam<Exec>::gpu) {
    body(RowTeam<Exec>{member, static_cast<std::int64_t>(member.league_rank())});
  } else {
    for_run_of_item<Exec>(member, rows, plan, [&](const std::int64_t first, const std::int64_t last, float* const scratch) {
      for (std::int64_t row = first; row < last; ++row) body(RowTeam<Exec>{member, row, plan.stream, scratch});
    });
  }
}

/// body(RowTeam) for every row in [0, rows), laid out by `plan` (see plan_rows).
template <class Exec, class Body>
void for_each_row(const char* label, const Exec& exec, std::int64_t rows, const Body& body, const RowPlan& plan = {}) {
  using Member = typename RowTeam<Exec>::Member;
  Kokkos::parallel_for(label, row_policy(label, exec, rows, plan),
                       KOKKOS_LAMBDA(const Member& member) { for_rows_of_item<Exec>(member, rows, plan, body); });
}

/// Rows per work item of kernels that carry work from one row to the next (for_each_row_run),
/// whose first and last rows run partly alone: 256 KB of output and at least 8 rows, but no
/// more than leave four items per thread. Rows of no bytes count as one byte each.
inline std::int64_t rows_per_run(std::int64_t rows, std::int64_t row_bytes, int threads) {
  row_bytes = std::max<std::int64_t>(row_bytes, 1);
  const std::int64_t wanted = std::max<std::int64_t>((262144 + row_bytes - 1) / row_bytes, 8);
  return std::max<std::int64_t>(std::min(wanted, rows / (4 * static_cast<std::int64_t>(threads))), 1);
}
/// `plan` with rows_per_run rows of y per work item.
template <class Exec, class Y>
RowPlan run_plan(RowPlan plan, const Exec& exec, const Y& y) {
  const auto row_bytes = static_cast<std::int64_t>(y.extent(1) * sizeof(typename Y::value_type));
  plan.rows_per_item = rows_per_run(static_cast<std::int64_t>(y.extent(0)), row_bytes, compat::concurrency(exec));
  return plan;
}

/// How far ahead of its loads a row run reads the next row beside this one's output prefetches
/// it (bytes; softmax_row_runs, norm_row_runs).
inline constexpr std::int64_t next_row_ahead = 4096;
/// Whether row runs over rows of T take the next row's statistics (softmax's max, the norms'
/// sums) beside this row's streamed output, loading it there: 2-byte rows gained (their
/// figures at softmax_row_runs and norm_row_runs); fp32 rows lost 3-5% in the slow memory
/// phase and more in the fast one, and keep a pass of their own, but for layernorm's of 16 KB
/// and more (kernels/norm.hpp's layer_rows_beside, where it was measured per op and size).
template <class T>
inline constexpr bool next_row_beside = sizeof(T) == 2;
/// The prefetch of a row read beside another row's output: its lines next_row_ahead bytes
/// ahead of the loads.
template <class T>
cpu::Prefetch ahead_in_row(const T* next) {
  return {reinterpret_cast<const char*>(next) + next_row_ahead, static_cast<std::int64_t>(sizeof(T))};
}

/// Host: run(first, last, scratch) for each work item of `plan` over [0, rows), its rows
/// [first, last) in one call, for kernels that carry work from one row to the next
/// (softmax_row_runs, norm_row_runs).
template <class Exec, class Run>
void for_each_row_run(const char* label, const Exec& exec, std::int64_t rows, const Run& run, const RowPlan& plan) {
  using Member = typename RowTeam<Exec>::Member;
  Kokkos::parallel_for(label, row_policy(label, exec, rows, plan),
                       [=](const Member& member) { for_run_of_item<Exec>(member, rows, plan, run); });
}

}  // namespace rooftop::detail
