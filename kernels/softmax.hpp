// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// softmax over the last axis of a (rows, cols) tensor:
///   y(r, c) = exp(x(r, c) - max_r) / sum_c' exp(x(r, c') - max_r)
///
/// Numerically stable: every exponent is <= 0, so finite logits of any magnitude (to +-FLT_MAX)
/// cannot overflow (see ExpMinusMax). The row max
/// comes first, then e = exp(x - max) is computed once per entry, summed and kept, and a last
/// pass writes e / sum: exp is what bounds this op on CPUs. On the host e is kept in a scratch
/// row per thread (in L2 for rows up to ~64K columns), so x is read from memory once and large
/// outputs are written with streaming stores; on AVX-512 and AVX2 hosts the passes are vector
/// code (softmax_row_vector, backends/cpu/softmax_row.hpp), and large outputs of whole-line
/// rows go a run of rows at a time, each row's output streamed beside the next row's
/// exponentials (softmax_row_runs); fewer rows than threads, if long, are cut into pieces
/// the threads share (softmax_split_rows: rounded otherwise than the whole row, so those rows'
/// last bits depend on the thread count and the number of rows). On GPUs rows are held in registers
/// (SoftmaxRegisterRows, core/register_rows.hpp): rows of up to 16384 entries are read once and
/// written once.
/// -Inf entries (masked) get 0. A row whose entries are all -Inf gets all 0 (there is nothing
/// to normalize; attention over a fully masked row then contributes nothing, unlike the NaN of
/// a literal 0/0). A NaN or +Inf entry makes its row NaN.
///
/// Storage fp32, bf16 or fp16; math and accumulation in fp32. x and y may be the same View
/// (partly overlapping ones throw).
#pragma once

#include "../core/cost.hpp"
#include "../core/error.hpp"
#include "../core/math.hpp"
#include "../core/parallel.hpp"
#include "../core/register_rows.hpp"
#include "../core/types.hpp"
#include "../backends/cpu/softmax_row.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace rooftop {

namespace detail {
/// max(a, b) for the row max, skipping a NaN b: a NaN entry reaches every output of its row
/// through the sum of exponentials instead. Written as a compare-and-pick, which GCC turns into
/// one vmaxps (a NaN-propagating select takes four instructions: a fold of 4096 floats in L1,
/// 0.065-0.086 -> 0.025-0.034 ns per element).
struct Max {
  KOKKOS_FORCEINLINE_FUNCTION float operator()(float a, float b) const { return b > a ? b : a; }
};


/// e^(v - m) for v <= m, the row's max, as 2^z with z = (v - sub) log2 e - offset, one fma for
/// the argument. Per row, either sub = 0 and offset = m log2 e: then z is exact but for the
/// rounding of m log2 e, an error common to the row (it cancels in the normalization) within
/// half a unit while |m log2 e| < 2^24; or, for larger |m|, sub = m and offset = 0, where that
/// error could push z out of exp2's range (2^128 at |m| ~ 3e9) and m log2 e itself overflows
/// from |m| ~ 2.4e38 on (-FLT_MAX masks): v - m is exact there for every v that matters
/// (Sterbenz). 0 for results below 2^-125 (and -Inf entries). Without a fused multiply-add
/// (ROOFTOP_FUSED_MUL_ADD 0) always the second: v log2 e rounded on its own is off by up to
/// half an ulp of v log2 e, not of z (logits of +-1e4 gave a relative error of 3.4e-5), where
/// (v - m) log2 e rounds twice within a few ulp of z.
struct ExpMinusMax {
  float sub, offset;
  /// For a row whose max is m; an all-masked row (m = -Inf) is taken against 0: its entries give
  /// 0, or NaN where they are NaN.
  /// Force-inlined, as operator() is: its body depends on ROOFTOP_FUSED_MUL_ADD, so one
  /// linked copy shared by files built with and without FMA flags could pair with the other's
  /// operator().
  KOKKOS_FORCEINLINE_FUNCTION static ExpMinusMax of_max(float m) {
    const float base = m == -std::numeric_limits<float>::infinity() ? 0.0f : m;
#if ROOFTOP_FUSED_MUL_ADD
    const float m_log2e = base * math::log2e;
    return compat::fabs(m_log2e) < 0x1p24f ? ExpMinusMax{0.0f, m_log2e} : ExpMinusMax{base, 0.0f};
#else
    return ExpMinusMax{base, 0.0f};
#endif
  }
  KOKKOS_FORCEINLINE_FUNCTION float operator()(float v) const {
    const float z = compat::mul_add(v - sub, math::log2e, -offset);
    return math::select(z < -125.0f, 0.0f, math::exp2_in_range(z));
  }
};

#if defined(ROOFTOP_HAS_VECTOR_SOFTMAX) && defined(ROOFTOP_HAS_VECTOR_ROWS)
/// One row of softmax on an AVX-512 or AVX2 host whose values (fp32, bf16 or fp16) are contiguous at
/// `in`, read in place: the max and the exponentials (into the scratch row) in
/// vector code (backends/cpu/softmax_row.hpp: the same exponentials as ExpMinusMax, summed in
/// another order), then the output. Large rows of whole lines are streamed from the
/// exponentials directly, a line at a time (cpu::stream_vectors), prefetching the next row:
/// through write()'s 256-byte L1 buffer fp32 rows ran at 36.5-38.6 GB/s against 42.4-43.1 this
/// way (8192x4096, 2 threads, Zen 5 VM, scratch program, three alternations).
template <class Row, class X, class Y, class T>
void softmax_row_vector(const Row& r, const X& x, const Y& y, const T* in, std::int64_t cols) {
  const float m = cpu::softmax_max(in, cols);
  float* const e = r.scratch;
  const ExpMinusMax arg = ExpMinusMax::of_max(m);
  const float s = cpu::softmax_exp_sum(in, e, cols, arg.sub, arg.offset);
  const float inv = s == 0.0f ? 0.0f : 1.0f / s;  // s >= 1 unless all are masked
  if constexpr (cpu::has_float_lanes<typename Y::value_type>) {
    if (auto* const out = r.vector_stream_row(y, cols)) {
      const cpu::Floats scale = cpu::splat(inv);
      cpu::stream_vectors(out, cols, r.next_row_of(x), [&](const std::int64_t c) { return cpu::load_floats(e + c) * scale; });
      return;
    }
  }
  r.write(y, cols, [&](const std::int64_t c) { return e[c] * inv; }, r.next_row_of(x));
}

/// Rows of a work item at once, for rows streamed as whole lines (each row of y whole lines
/// from a line boundary, x's rows contiguous), plan.rows_per_item at a time
/// (rows_per_run): a row's output is streamed while the next row's exponentials are
/// computed (cpu::softmax_exp_sum_streaming), so the core computes while the memory takes the
/// stores, where softmax_row_vector does one after the other. The same
/// values. 2 threads, Zen 3 VM, 2^25 fp32 values, a scratch program alternating the builds in
/// one process, medians of ten, two runs, GB/s: rows of 768 24.1-24.9 -> 29.6-30.6, 4096
/// 22.9-23.2 -> 29.4-29.6, 32768 20.1-21.8 -> 26.1-29.8 (fp16 14.1-15.3 -> 14.7-15.9).
/// 2-byte rows take the next row's max in that pass too (its loads beside the exponentials,
/// prefetched next_row_ahead bytes ahead), where a max pass of its own left the memory
/// idle: Zen 5 VM, 2 threads, the harness --quick, three alternations, GB/s: bf16 rows of 4096
/// 46.2-46.6 -> 51.0-56.1, 32768 45.7-46.3 -> 50.8-52.5; fp16 4096 47.7-50.2 -> 53.5-55.4,
/// 32768 45.4-48.4 -> 48.5-51.2; rows of 768 within the noise. fp32 rows ran 3-5% slower that
/// way (four alternations: 4096 47.6-50.4 -> 46.6-48.9, 32768 48.9-49.8 -> 46.5-48.6, with any
/// prefetch distance from 2 to 16 KB; none at all, 39-40) and keep their max pass.
/// Each row's exponentials go cpu::exp_row_shift floats below the row before's, over the
/// lines of it the output has just read (still in L1), where two alternating scratch rows
/// took the lines of the other row from L2 again to write them. One thread (what each core
/// sustains decides the fast memory phase; README), the harness --quick, the builds
/// alternated three times, us: fp32 rows of 4096 6986-7352 -> 6513-6781, 32768 7000-7447 ->
/// 6484-6907, 768 5822-6598 -> 5540-6138; 2-byte rows within 2% (their exponentials bound
/// them); two threads in a slow phase, bound by the memory, within the noise.
/// Outputs too small to stream (plan.stream false) take the same runs with plain stores where
/// softmax_plain_runs says, instead of a row at a time (softmax_row_vector: the max, the
/// exponentials and the output through write()'s L1 buffer, one after the other).
template <class Exec, class X, class Y>
void softmax_row_runs(const Exec& exec, const X& x, const Y& y, std::int64_t cols, RowPlan plan) {
  const bool streamed = plan.stream;
  constexpr std::int64_t shift = cpu::exp_row_shift;
  plan.scratch_floats = cols + shift * plan.rows_per_item;  // whole lines: cols is one of y's
  for_each_row_run<Exec>(
      "rooftop::softmax", exec, static_cast<std::int64_t>(y.extent(0)),
      [=](const std::int64_t first, const std::int64_t last, float* const scratch) {
        // e holds the exponentials of the latest row (the first row's at the top of the
        // scratch, each next row's `shift` floats lower), whose output is theirs times `scale`.
        float* e = scratch + shift * (last - first - 1);
        float scale = 0.0f;
        // 2-byte rows' maxes come from the pass before (see above); fp32 rows take their own.
        constexpr bool next_max_beside = next_row_beside<typename X::value_type>;
        float m = cpu::softmax_max(&x(first, 0), cols);
        for (std::int64_t row = first; row < last; ++row) {
          const auto* const in = &x(row, 0);
          if (!next_max_beside && row > first) m = cpu::softmax_max(in, cols);
          const auto* const next = next_max_beside && row + 1 < last ? &x(row + 1, 0) : nullptr;
          const ExpMinusMax arg = ExpMinusMax::of_max(m);
          float s;
          if (row == first) {
            s = cpu::softmax_exp_sum(in, e, cols, arg.sub, arg.offset);
            if (next) m = cpu::softmax_max(next, cols);
          } else {
            const cpu::Prefetch ahead = next ? ahead_in_row(next) : RowTeam<Exec>::next_row_of(x, row);
            float* const below = e - shift;
            const cpu::SumAndNextMax r =
                cpu::softmax_exp_sum_streaming(in, below, cols, arg.sub, arg.offset, &y(row - 1, 0), e, scale, next, ahead, streamed);
            e = below;
            s = r.sum;
            m = r.next_max;
          }
          scale = s == 0.0f ? 0.0f : 1.0f / s;  // s >= 1 unless all are masked
        }
        const cpu::Floats by = cpu::splat(scale);
        cpu::stream_vectors(&y(last - 1, 0), cols, RowTeam<Exec>::next_row_of(x, last - 1),
                            [&](const std::int64_t c) { return cpu::load_floats(e + c) * by; }, cpu::NothingBeside{}, streamed);
      },
      plan);
}

/// Whether outputs of T too small to stream, in rows of `cols`, go softmax_row_runs' way with
/// plain stores: 2-byte rows, and fp32 rows of up to 4 KB (never empty: whole_line_rows). 2
/// threads, Zen 5 VM, 4 MB of input (in cache), one process alternating with the row at a
/// time, medians of 31, GB/s: fp32 rows
/// of 64 / 256 / 768 / 1024 22.8 / 51.4 / 61.9 / 68.8 -> 40.7 / 64.9 / 68.6 / 71.3, of 2048 /
/// 4096 / 32768 0.95-0.98x (kept a row at a time); bf16 rows of 64 / 256 / 768 / 4096 / 32768
/// 9.8 / 22.3 / 29.2 / 34.7 / 36.0 -> 24.3 / 37.9 / 41.1 / 41.7 / 42.4, fp16 768 / 4096 / 32768
/// 27.1 / 34.6 / 35.0 -> 42.0 / 42.8 / 43.0. The same outputs.
template <class T>
bool softmax_plain_runs(std::int64_t cols) {
  return sizeof(T) == 2 || cols * static_cast<std::int64_t>(sizeof(T)) <= 4096;
}
#endif

/// softmax of rows held in registers (RegisterRows, the GPU path): the row max, then the sum of
/// the exponentials, then the output. A row of one chunk keeps each exponential in place of its
/// value (one exp per entry); longer rows evaluate it again for the output. Padding is -Inf,
/// which adds nothing to either. The same results for -Inf, NaN and +Inf entries as
/// softmax_row (an all -Inf row gives 0, unless a NaN makes the sum NaN).
template <class X, class Y>
struct SoftmaxRegisterRows {
  X x;
  Y y;
  template <class Row>
  KOKKOS_INLINE_FUNCTION void operator()(const Row& r) const {
    constexpr int R = Row::values;
    constexpr float minus_inf = -std::numeric_limits<float>::infinity();
    const bool one_chunk = r.chunks == 1;
    float v[R]{};  // (each_chunk loads it first; GCC cannot tell)
    int held = -1;
    float m = minus_inf;
    r.each_chunk(x, v, minus_inf, held, [&](int) {
      ROOFTOP_UNROLL
      for (int k = 0; k < R; ++k) m = Max{}(m, v[k]);
    });
    const ExpMinusMax exp_minus_max = ExpMinusMax::of_max(r.all(m, minus_inf, Max{}));
    float s = 0.0f;
    r.each_chunk(x, v, minus_inf, held, [&](int) {
      ROOFTOP_UNROLL
      for (int k = 0; k < R; ++k) {
        const float e = exp_minus_max(v[k]);
        s += e;
        if (one_chunk) v[k] = e;
      }
    });
    s = r.all(s, 0.0f, Plus{});
    const float inv = s == 0.0f ? 0.0f : 1.0f / s;  // s >= 1 unless all are masked
    r.each_chunk(x, v, minus_inf, held, [&](const int chunk) {
      r.store(y, chunk, [&](const int k) { return (one_chunk ? v[k] : exp_minus_max(v[k])) * inv; });
    });
  }
};

/// One row of softmax on the host (see the file comment for the strategies).
template <class Row, class X, class Y>
KOKKOS_INLINE_FUNCTION void softmax_row(const Row& r, const X& x, const Y& y, std::int64_t cols) {
  static_assert(!Row::gpu, "softmax_row: host rows (GPUs hold rows in registers, SoftmaxRegisterRows)");
  constexpr float minus_inf = -std::numeric_limits<float>::infinity();
#if defined(ROOFTOP_HAS_VECTOR_SOFTMAX) && defined(ROOFTOP_HAS_VECTOR_ROWS)
  // AVX-512 and AVX2 hosts: contiguous rows of any dtype read in place, each value widened as it is
  // loaded. (2-byte rows were widened into the scratch row first, a pass more: 2 threads, Zen 5
  // VM, scratch program, alternating, median GB/s: 32x32768 in cache bf16 29-30 -> 33-34, fp16
  // 29-30.5 -> 32-34; 1024x32768 bf16 22.5-23.4 -> 24.7-25.2, fp16 21-22.6 -> 24; rows of 768
  // and 4096 within noise, 0-8% up.)
  if constexpr (cpu::has_float_lanes<std::remove_const_t<typename X::value_type>>) {
    if (cols == 1 || x.stride(1) == 1) return softmax_row_vector(r, x, y, &x(r.row, 0), cols);
  }
#endif
  // Elsewhere on the host, 2-byte rows are widened into the scratch row first (RowTeam::input);
  // the exponentials then overwrite them in place. (bf16 too: 2 threads, Zen 5 VM, scratch
  // program, three alternations, GB/s: 2730x768 in cache 22.4-25.7 -> 29.7-30.4, 16384x4096
  // 25.3-26.9 -> 28.0-29.8.)
  const auto in = r.template input<true>(x, cols);
  // The row max first, then e = exp(x - max) into the scratch row, in a loop of its own, then
  // their sum (the same partials and order; folded into the sum, the loop kept the sum's
  // partials on the stack), then the output pass rescales e: one exp per entry.
  const ExpMinusMax exp_minus_max = ExpMinusMax::of_max(r.reduce(cols, minus_inf, in, Max{}));
  float* const e = r.scratch;
  ROOFTOP_SIMD
  for (std::int64_t c = 0; c < cols; ++c) e[c] = exp_minus_max(in(c));
  const float s = r.reduce(cols, 0.0f, FloatRow{e}, Plus{});
  const float inv = s == 0.0f ? 0.0f : 1.0f / s;  // s >= 1 unless all are masked
  r.write(y, cols, [&](const std::int64_t c) { return e[c] * inv; }, r.next_row_of(x));
}

#if defined(ROOFTOP_HAS_VECTOR_SOFTMAX)
/// Rows of at least this many entries, fewer rows than the host has threads: each row is cut
/// into parts that threads take in parallel (softmax_split_rows), where one thread per row left
/// the others idle (a batch of one over a vocabulary, say). 2 threads, Zen 4 VM, one row, one
/// process alternating with the row path (medians of 21-31), speedup fp32 / bf16 / fp16: 16384
/// entries 0.76 / 0.75 / 0.69 (two launches and the scratch's allocation cost more than a
/// thread gives), 32768 0.90 / 0.86 / 0.78, 65536 1.61 / 1.32 / 1.28, 131072 1.74 / 1.37 / 1.30,
/// 262144 1.71 / 1.46 / 1.43, 2^20 2.08 / 1.61 / 1.64; built for AVX2 (-march=znver3), 65536
/// 1.18 / 1.14 / 1.04, 262144 1.88 / 1.78 / 1.71.
inline constexpr std::int64_t split_softmax_from = 65536;

/// softmax of rows cut into `parts` pieces each (the host, contiguous rows, AVX-512 or AVX2
/// lanes): a first parallel pass gives each piece its max m_q, its exponentials (as
/// softmax_row_vector's, each against its own piece's max, into a float scratch row) and their
/// sum s_q; a second rescales them. Piece q's exponentials are 2^(x L - w_q) with L = log2 e in
/// float and w_q = sub_q L + offset_q its ExpMinusMax (exact in double), so the row's are
/// e 2^(w_q - W) / S, W the largest w_q of the pieces with entries above -Inf and S = sum_q s_q
/// 2^(w_q - W), in double. x is read once, the float scratch (rows x cols) written and read
/// once; one exp per entry, as in the row path; the same special values: -Inf entries give 0,
/// a row of -Inf gives 0, a NaN or +Inf entry makes the row NaN.
template <class Exec, class X, class Y>
void softmax_split_rows(const Exec& exec, const X& x, const Y& y, std::int64_t parts) {
  using In = std::remove_const_t<typename X::value_type>;
  using T = typename Y::value_type;
  constexpr float minus_inf = -std::numeric_limits<float>::infinity();
  const auto rows = static_cast<std::int64_t>(x.extent(0)), cols = static_cast<std::int64_t>(x.extent(1));
  const std::int64_t piece = ((cols + parts - 1) / parts + 15) / 16 * 16;  // whole 64-byte lines of the scratch
  parts = (cols + piece - 1) / piece;
  const std::int64_t stride = (cols + 15) / 16 * 16;
  Kokkos::View<float*, Kokkos::HostSpace> e(Kokkos::view_alloc(Kokkos::WithoutInitializing, "rooftop::softmax_split"), rows * stride);
  // Per piece (row r's piece q at r * parts + q): its w_q, -Inf where it holds only -Inf (and
  // NaN) entries, and its sum s_q.
  Kokkos::View<double* [2], Kokkos::HostSpace> part(Kokkos::view_alloc(Kokkos::WithoutInitializing, "rooftop::softmax_split_parts"), rows * parts);
  Kokkos::parallel_for("rooftop::softmax", compat::Range<Exec>(exec, 0, rows * parts), [=](const std::int64_t item) {
    const std::int64_t r = item / parts, q = item % parts, c0 = q * piece, n = std::min(piece, cols - c0);
    const In* const in = &x(r, 0) + c0;
    const float m = cpu::softmax_max(in, n);
    const ExpMinusMax f = ExpMinusMax::of_max(m);
    part(item, 1) = cpu::softmax_exp_sum(in, e.data() + r * stride + c0, n, f.sub, f.offset);
    part(item, 0) = m == minus_inf ? -std::numeric_limits<double>::infinity()
                                   : static_cast<double>(f.sub) * static_cast<double>(math::log2e) + static_cast<double>(f.offset);
  });
  Kokkos::parallel_for("rooftop::softmax", compat::Range<Exec>(exec, 0, rows * parts), [=](const std::int64_t item) {
    const std::int64_t r = item / parts, q = item % parts, c0 = q * piece, n = std::min(piece, cols - c0);
    // The row's W and S (a few pieces: each item sums them again). A piece of -Inf entries
    // beside live ones takes 2^-Inf = 0 (a NaN among its entries still makes its sum, and the
    // row, NaN); a row with no live piece keeps its pieces' own scale (all 0, or NaN), as the
    // row path does.
    double top = -std::numeric_limits<double>::infinity();
    for (std::int64_t k = r * parts; k < (r + 1) * parts; ++k) top = part(k, 0) > top ? part(k, 0) : top;
    const bool any = top != -std::numeric_limits<double>::infinity();
    auto scale = [&](const std::int64_t k) { return any ? std::exp2(part(k, 0) - top) : 1.0; };
    double total = 0;
    for (std::int64_t k = r * parts; k < (r + 1) * parts; ++k) total += part(k, 1) * scale(k);
    const float g = total == 0 ? 0.0f : static_cast<float>(scale(item) / total);
    float* const er = e.data() + r * stride + c0;
    T* const out = &y(r, 0) + c0;
    if constexpr (std::is_same_v<T, float>) {
      ROOFTOP_SIMD
      for (std::int64_t c = 0; c < n; ++c) out[c] = er[c] * g;
    } else {
      ROOFTOP_SIMD
      for (std::int64_t c = 0; c < n; ++c) er[c] *= g;
      cpu::narrow(er, out, n);
    }
  });
}
#endif
}  // namespace detail

/// y = softmax(x) over the last axis of (rows, cols) x and y. Throws rooftop::Error if the
/// extents differ.
template <class Exec, class X, class Y>
void softmax(const Exec& exec, const X& x, const Y& y) {
  mandate_input<Exec, X, 2>();
  mandate_output<Exec, Y, 2>();
  mandate_fp32_math<X, Y>();
  detail::require_elementwise("softmax", "x", x, "y", y);
  const auto cols = static_cast<std::int64_t>(x.extent(1));
  if constexpr (detail::RowTeam<Exec>::gpu) {
    detail::RegisterRows<Exec>::run("rooftop::softmax", exec, static_cast<std::int64_t>(x.extent(0)), cols,
                                    detail::SoftmaxRegisterRows<X, Y>{x, y});
  } else {
    // On the host, a scratch row per work item holds the exponentials (cols floats). Large
    // outputs stream at every row length (on AVX2 hosts 2-byte ones only where
    // detail::plan_vector_rows says). Zen 3 VM (AVX2), 2 threads, 2^25 fp32 values, a scratch
    // program, best of six alternations, three runs, GB/s plain -> streamed, rows of 768: 20.2
    // -> 26.5, 18.0 -> 25.2, 21.9 -> 27.0. On the Zen 4 VM (AVX-512) fp32 rows of 768 had run
    // faster with plain stores (2^25 elements, the harness, three alternations, GB/s:
    // 34.9-35.9 streamed, 38.8-39.0 plain), rows of 4096 slower (36-39 streamed, 24-25 plain),
    // and 2-byte rows under 4 KB had lost too; with the vector rows as they are now, the Zen 5
    // VM (AVX-512; 2 threads, --quick, alternations with rows from 4 KB, GB/s) gains at 768:
    // fp32 30-48 -> 42-50 (four alternations), bf16 33-43 -> 47-52, fp16 35-44 -> 49-57 (three).
    const bool contiguous = cols == 1 || x.stride(1) == 1;
    const auto plan = detail::plan_vector_rows<Exec, false>(y, contiguous, cols);
#if defined(ROOFTOP_HAS_VECTOR_SOFTMAX) && defined(ROOFTOP_HAS_VECTOR_ROWS)
    using T = typename Y::value_type;
    if constexpr (cpu::has_float_lanes<std::remove_const_t<typename X::value_type>> && cpu::has_float_lanes<T>) {
      const auto rows = static_cast<std::int64_t>(x.extent(0));
      const std::int64_t threads = compat::concurrency(exec);
      if (contiguous && y.stride(1) == 1 && rows > 0 && rows < threads && cols >= detail::split_softmax_from) {
        detail::softmax_split_rows(exec, x, y, (threads + rows - 1) / rows);
        return;
      }
      if (contiguous && (plan.stream || detail::softmax_plain_runs<T>(cols)) && detail::whole_line_rows(y)) {
        detail::softmax_row_runs(exec, x, y, cols, detail::run_plan(plan, exec, y));
        return;
      }
    }
#endif
    detail::for_each_row(
        "rooftop::softmax", exec, static_cast<std::int64_t>(x.extent(0)),
        KOKKOS_LAMBDA(const detail::RowTeam<Exec>& r) { detail::softmax_row(r, x, y, cols); }, plan);
  }
}
template <class X, class Y>
void softmax(const X& x, const Y& y) { softmax(typename Y::execution_space{}, x, y); }

/// Cost of softmax over (rows, cols) of T: 5 FLOPs per entry (compare for the max; subtract,
/// exp, add for the sum; multiply for the output; GPU rows longer than one register chunk
/// evaluate exp twice but are counted the same); read x once, write y once.
template <class T>
constexpr Cost softmax_cost(std::int64_t rows, std::int64_t cols) {
  return {5.0 * rows * cols, bytes_of<T>(2.0 * rows * cols)};
}

}  // namespace rooftop
