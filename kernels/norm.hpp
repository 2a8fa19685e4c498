// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Normalization over the last axis of a (rows, cols) tensor:
///   layernorm: y = (x - mean) / sqrt(var + eps) * weight + bias   (var: biased, 1/cols)
///   rmsnorm:   y = x / sqrt(mean(x^2) + eps) * weight
///
/// weight and bias are (cols) Views, or empty Views for none (weight 1, bias 0). Storage fp32,
/// bf16 or fp16; statistics accumulate in fp32. Each row is read from memory once; the later
/// passes over it come from cache for rows up to the size of L2. On AVX-512 and AVX2 hosts,
/// contiguous rows are vector code throughout, each value (weight and bias too) widened as it
/// is loaded (cpu::row_sum and the other sums of backends/cpu/row_sums.hpp, then
/// detail::norm_rows_out, streamed for large outputs; large 2-byte outputs of whole-line rows go
/// a run of rows at a time, the next row's statistics folded beside each row's output, and on
/// AVX2 hosts a 2-byte weight and bias widened into fp32 once per run, detail::norm_row_runs).
/// Elsewhere the portable loops: fp16 rows
/// widened once into the work item's scratch (RowTeam::input) so no pass converts per element,
/// fp16 weight and bias widened into an fp32 copy once per call, large outputs streamed through
/// RowTeam::write. On GPUs rows are held in registers (core/register_rows.hpp): rows of up to
/// 16384 entries are read once and written once. x and y may be the same View (partly
/// overlapping ones throw, as do a weight or bias that overlaps y).
///
/// Rows that normalize to nothing get a scale of 0, so layernorm gives the bias and rmsnorm 0
/// (times the weight): a constant row with eps = 0 (var + eps = 0, where 1 / sqrt would give
/// 0 * Inf = NaN; for eps > 0 the same row's scale is finite and its output the bias too). A
/// finite row whose squares' sum overflows fp32 (layernorm: squared deviations past FLT_MAX;
/// rmsnorm: a sum of squares past FLT_MAX, entries from about sqrt(FLT_MAX / cols), 2.9e17 at
/// 4096 columns) is normalized too: its statistics are taken again from its entries times
/// 2^-80, in a pass that only such rows take (norm_overflow_unit). Entries near FLT_MAX give
/// scales below FLT_MIN (subnormal: fewer bits), and in layernorm an entry minus the mean
/// past FLT_MAX (entries of both signs near it) gives +-Inf. The other way is not rescaled:
/// with eps near 0, a row whose squares (layernorm: squared deviations) fall below fp32's
/// normal range, entries below about 1e-19 in size, loses bits in its sum, and below about
/// 1e-23 (fp32 or bf16 storage; fp16's smallest squares stay normal) the sum is 0 and the row
/// gets a scale of 0, as a constant row (eps below about 7e-46 is 0 as a float). A NaN entry
/// makes its row NaN, and so does an infinite one in layernorm; in rmsnorm an infinite entry
/// gives its row a scale of 0: that entry NaN, the others 0.
#pragma once

#include "../core/cost.hpp"
#include "../core/error.hpp"
#include "../core/parallel.hpp"
#include "../core/register_rows.hpp"
#include "../core/types.hpp"
#include "../backends/cpu/row_sums.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace rooftop {

namespace detail {
template <class Exec, class X, class Y>
void require_norm_args(const char* op, const X& x, const Y& y, double eps) {
  mandate_input<Exec, X, 2>();
  mandate_output<Exec, Y, 2>();
  mandate_fp32_math<X, Y>();
  require_elementwise(op, "x", x, "y", y);
  ROOFTOP_REQUIRE(eps >= 0, op, "eps is ", eps, ", expected >= 0");
}

/// A per-column parameter (weight or bias) of a norm over x into y: none (extent 0) or one per
/// column, and apart from y.
template <class Exec, class X, class Y, class W>
void require_norm_param(const char* op, const X& x, const Y& y, const W& w, const char* w_name) {
  mandate_input<Exec, W, 1>();
  mandate_fp32_math<W>();
  ROOFTOP_REQUIRE(w.extent(0) == 0 || w.extent(0) == x.extent(1), op, "x is ", shape_of(x), " but ", w_name, " is ",
                  shape_of(w), " (expected ", x.extent(1), " or 0 for none)");
  require_apart(op, w_name, w, "y", y);
}

/// Whether the rows of x and y and the parameters are contiguous, as the host vector code (below)
/// reads and writes them through raw pointers.
template <class X, class Y, class W, class B>
bool vector_norm_layout(const X& x, const Y& y, const W& weight, const B& bias) {
  return x.extent(1) > 0 && x.stride(1) == 1 && y.stride(1) == 1 && (weight.extent(0) == 0 || weight.stride(0) == 1) &&
         (bias.extent(0) == 0 || bias.stride(0) == 1);
}

/// Whether a norm over X into Y with parameters W and B runs its rows in vector code on the host
/// (RowTeam Row): fp32, bf16 or fp16 each, on AVX-512 and AVX2 hosts.
template <class Row, class X, class Y, class W, class B>
inline constexpr bool vector_norm_rows =
#if defined(ROOFTOP_HAS_VECTOR_ROWS)
    !Row::gpu && cpu::has_float_lanes<std::remove_const_t<typename X::value_type>> && cpu::has_float_lanes<typename Y::value_type> &&
    cpu::has_float_lanes<std::remove_const_t<typename W::value_type>> && cpu::has_float_lanes<std::remove_const_t<typename B::value_type>>;
#else
    false;
#endif

/// A norm's scale 1 / sqrt(v) for v = var + eps (or mean(x^2) + eps): 0 where v is 0, a
/// constant row with eps = 0 (see the file's comment), and where v is +Inf.
KOKKOS_FORCEINLINE_FUNCTION float norm_scale(float v) { return v == 0.0f ? 0.0f : 1.0f / compat::sqrt(v); }

/// The unit in which a row whose squares (rmsnorm) or squared deviations (layernorm) sum past
/// FLT_MAX takes them again: entries times 2^-80 (exact: a power of two) square to at most
/// (FLT_MAX 2^-80)^2 = 7.9e28, so up to 2^32 columns of them sum within fp32, and the
/// squares that matter (the row's largest, from about 1.8e19 / sqrt(cols)) stay normal floats.
/// The scale is then 2^-80 / sqrt(var' + eps 2^-160), var' the scaled variance (at least
/// FLT_MAX 2^-160 / cols, about 2.3e-10 / cols, where eps 2^-160 is 0 in fp32 for eps < 2^11).
inline constexpr float norm_overflow_unit = 0x1p-80f;

/// rmsnorm's scale 1 / sqrt(mean(x^2) + eps) from a row's sum of squares; where that sum is
/// +Inf, from `scaled_squares()`, the sum of the squares of the entries times
/// norm_overflow_unit (an infinite entry keeps it infinite: scale 0).
template <class ScaledSquares>
KOKKOS_INLINE_FUNCTION float rms_scale(float squares, float inv_cols, float eps, const ScaledSquares& scaled_squares) {
  if (squares != std::numeric_limits<float>::infinity()) return norm_scale(squares * inv_cols + eps);
  constexpr float unit = norm_overflow_unit;
  return unit * norm_scale(scaled_squares() * inv_cols + eps * unit * unit);
}

/// LayerNorm's mean and 1 / sqrt(var + eps) of a row from mean0 (its sum times inv_cols) and
/// dev, the sums of the deviations from mean0 and of their squares; `deviations(from)` gives
/// those sums from another value. Their own sum corrects the rounding of mean0 (a constant row
/// has zero variance up to rounding), and where the variance dev2 - dev^2 / n cancels more than
/// a bit (mean0 more than a standard deviation from the mean: dev^2 / n > dev2 / 2), or where
/// dev^2 / n or dev2 overflows (large entries, mean0 rounded far from their mean, while the
/// squared deviations from the mean itself may stay finite: entries 1e24 +- 7.2e16, 768 of
/// them, summed in registers on GPUs), the deviations are taken again from mean0 + dev / n.
/// Every path computes the statistics here.
///
/// A rounding below zero is clamped to 0, but a NaN variance (a NaN or an infinity in the row)
/// stays NaN, so the whole row comes out NaN on every path: clamped too, it had given rows with
/// an infinity outside the one-pass shift's first 16 values -Inf and +Inf instead. dev^2 / n is
/// taken as (dev / n) dev: dev is about n times mean0's rounding, whose square overflows for
/// entries from about 1e21 (768 columns) where the deviations' squares do not (dev * dev had
/// made the variance -Inf, clamped to 0: entries 1e24 +- 3.6e16 came out 2.3e19). A dev2 past
/// FLT_MAX even from there (finite entries whose squared deviations overflow) takes the
/// deviations once more in norm_overflow_unit, `scaled_deviations(from)`: the sums of
/// (x - from) 2^-80, each taken as x 2^-80 - from 2^-80 (exact scalings, so the same
/// roundings, and no overflow in x - from), corrected once more in that unit where mean0 lies
/// more than a standard deviation off. A dev past FLT_MAX (finite deviations, their sum not:
/// 384 x 2e38 then 384 x -2e38) corrects nothing (it had made mean0 infinite and the row NaN).
/// Rows whose squared deviations stay finite compute what they did before these passes, bit
/// for bit.
template <class Deviations, class ScaledDeviations>
KOKKOS_INLINE_FUNCTION void layernorm_statistics(float mean0, SumPair dev, float inv_cols, float eps,
                                                 const Deviations& deviations, const ScaledDeviations& scaled_deviations,
                                                 float& mean, float& rstd) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  float cancelled = dev.a * inv_cols * dev.a;
  if (cancelled > 0.5f * dev.b || cancelled == inf || dev.b == inf) {
    if (dev.a - dev.a == 0.0f) mean0 += dev.a * inv_cols;
    dev = deviations(mean0);
    if (dev.b == inf) {
      constexpr float unit = norm_overflow_unit;
      SumPair s = scaled_deviations(mean0);
      // (Corrections added in that unit: mean0 may lie more than FLT_MAX from the mean, the
      // host's one-pass shift being the first value where the first 16 sum past FLT_MAX.)
      if (s.a * inv_cols * s.a > 0.5f * s.b) {
        mean0 = (mean0 * unit + s.a * inv_cols) / unit;
        s = scaled_deviations(mean0);
      }
      mean = (mean0 * unit + s.a * inv_cols) / unit;
      const float var = (s.b - s.a * inv_cols * s.a) * inv_cols;
      rstd = unit * norm_scale((var < 0 ? 0.0f : var) + eps * unit * unit);  // (eps 2^-160: 0 for eps < 2^11)
      return;
    }
    cancelled = dev.a * inv_cols * dev.a;
  }
  mean = mean0 + dev.a * inv_cols;
  const float var = (dev.b - cancelled) * inv_cols;
  rstd = norm_scale((var < 0 ? 0.0f : var) + eps);
}

/// The sums of a row's deviations from `from` and of their squares, in norm_overflow_unit
/// (layernorm_statistics), and of its squares in that unit (rms_scale), from `value(c)`, c in
/// [0, cols): the host's vector paths take these for the rows that need them, a value at a
/// time, in fp64 (one accumulator in fp32 had lost 1.3e-4 of the variance of 4099 columns with
/// one entry of -3e19: each small square after it rounded up to half an ulp of the sum).
template <class Value>
inline SumPair scaled_deviation_sums(std::int64_t cols, float from, const Value& value) {
  constexpr double unit = norm_overflow_unit;
  double a = 0.0, b = 0.0;
  for (std::int64_t c = 0; c < cols; ++c) {
    const double d = static_cast<double>(float(value(c))) - from;
    a += d;
    b += d * d;
  }
  return {static_cast<float>(a * unit), static_cast<float>(b * unit * unit)};
}
template <class Value>
inline float scaled_square_sum(std::int64_t cols, const Value& value) {
  return scaled_deviation_sums(cols, 0.0f, value).b;
}

/// A row's mean0 (layernorm_statistics) from the sum of its entries; where that sum is not
/// finite, from the sum of the entries times inv_cols, `scaled_sum()`: finite entries whose sum
/// overflows (3e37 x 768), or whose partial sums overflow both ways, +Inf + -Inf = NaN (2e38 and
/// -2e38 alternating, summed in strided partials: the row had come out NaN). An infinite or NaN
/// entry keeps it infinite or NaN: the row comes out NaN.
template <class ScaledSum>
KOKKOS_INLINE_FUNCTION float layernorm_mean0(float sum, float inv_cols, const ScaledSum& scaled_sum) {
  return sum - sum == 0.0f ? sum * inv_cols : scaled_sum();
}

/// layernorm (rms false) or rmsnorm (rms true, bias empty) of rows held in registers
/// (RegisterRows, the GPU path). layernorm: the sum, then the deviations from its mean and their
/// squares (padding left out), with the portable path's corrected two-pass statistics; rmsnorm:
/// the sum of squares (padding is 0). Then the output (v - shift) * scale * weight + bias.
template <bool rms, class X, class Y, class W, class B>
struct NormRegisterRows {
  X x;
  Y y;
  W weight;
  B bias;
  float eps, inv_cols;
  template <class Row>
  KOKKOS_INLINE_FUNCTION void operator()(const Row& r) const {
    constexpr int R = Row::values;
    float v[R]{};  // (each_chunk loads it first; GCC cannot tell)
    int held = -1;
    float sum = 0.0f;  // of the values, or of their squares
    r.each_chunk(x, v, 0.0f, held, [&](int) {
      ROOFTOP_UNROLL
      for (int k = 0; k < R; ++k) sum += rms ? v[k] * v[k] : v[k];
    });
    sum = r.all(sum, 0.0f, Plus{});
    float shift = 0.0f, scale;
    if constexpr (rms) {
      scale = rms_scale(sum, inv_cols, eps, [&] {
        float scaled = 0.0f;
        r.each_chunk(x, v, 0.0f, held, [&](int) {
          ROOFTOP_UNROLL
          for (int k = 0; k < R; ++k) {
            const float u = v[k] * norm_overflow_unit;
            scaled += u * u;
          }
        });
        return r.all(scaled, 0.0f, Plus{});
      });
    } else {
      const float mean0 = layernorm_mean0(sum, inv_cols, [&] {
        float scaled = 0.0f;
        r.each_chunk(x, v, 0.0f, held, [&](int) {
          ROOFTOP_UNROLL
          for (int k = 0; k < R; ++k) scaled += v[k] * inv_cols;
        });
        return r.all(scaled, 0.0f, Plus{});
      });
      // The deviations from `from` (times `unit`: 1, or norm_overflow_unit; padding left out).
      auto deviations_in = [&](const float from, const float unit) {
        SumPair dev{0.0f, 0.0f};
        r.each_chunk(x, v, 0.0f, held, [&](const int chunk) {
          ROOFTOP_UNROLL
          for (int k = 0; k < R; ++k) {
            const float d = r.has(k, chunk) ? v[k] * unit - from * unit : 0.0f;
            dev.a += d;
            dev.b += d * d;
          }
        });
        return r.all(dev, SumPair{0.0f, 0.0f}, PlusPair{});
      };
      auto deviations = [&](const float from) { return deviations_in(from, 1.0f); };
      layernorm_statistics(mean0, deviations(mean0), inv_cols, eps, deviations,
                           [&](const float from) { return deviations_in(from, norm_overflow_unit); }, shift, scale);
    }
    const bool has_weight = weight.extent(0) != 0, has_bias = bias.extent(0) != 0;
    // The parameters a run at a time, beside the values they scale: one 16-byte access per run
    // where they are contiguous, aligned and of x's type (value by value, layernorm bf16's rows
    // of 4096 ran 9% slower on an H200: 1567 against 1703 GB/s).
    constexpr int V = Row::run;
    r.each_chunk(x, v, 0.0f, held, [&](const int chunk) {
      r.store_runs(y, chunk, [&](const int g, float (&o)[V]) {
        float w[V]{}, b[V]{};
        if (has_weight) r.load_run(weight, w, g, chunk);
        if (has_bias) r.load_run(bias, b, g, chunk);
        ROOFTOP_UNROLL
        for (int j = 0; j < V; ++j) {
          o[j] = (v[g * V + j] - shift) * scale;
          if (has_weight) o[j] *= w[j];
          if (has_bias) o[j] += b[j];
        }
      });
    });
  }
};

#if defined(ROOFTOP_HAS_VECTOR_ROWS)

/// A norm's shift and scale for its output ((v - shift) * scale, then weight and bias).
struct NormScale {
  float shift, scale;
};

/// How norm_rows_out stores: `plain` through map_lines (any row; G = 1, no beside); `lines`, a
/// line at a time straight from the vector code (out line-aligned, cols whole lines;
/// cpu::stream_rows_bits, prefetching `ahead` and running `beside` line by line) with plain
/// stores; `streamed`, the same with streaming stores (RowTeam::vector_stream_row).
enum class NormStores { plain, lines, streamed };

/// Whether the vector code of bf16 rows into bf16 loads sixteen values at a time as the even
/// and the odd ones (cpu::load_pairs; AVX2 hosts).
template <class XT, class T>
inline constexpr bool norm_pairs =
#if defined(ROOFTOP_HAS_AVX2_LANES)
    std::is_same_v<T, bf16> && std::is_same_v<XT, bf16>;
#else
    false;
#endif

/// Whether norm_row_runs widens a weight or bias of P (a View) into an fp32 copy once per run of
/// rows (in the work item's scratch; widen_norm_param), from which norm_rows_out<G, true> loads
/// it: on AVX2 hosts, where it is 2-byte. Each load of a 2-byte parameter had cost its conversion
/// in every row (bf16: a shift and an and per sixteen values; fp16: a vcvtph2ps per eight), on
/// cores whose vector units such instructions bound. Zen 1 VM (128-bit units), one thread, a
/// scratch program calling rooftop::layernorm and rmsnorm (256 rows of 4096, 1024 of 768; best
/// of 40; the two builds alternated three times), ns per value: layernorm with weight and bias
/// bf16 0.77-0.79 -> 0.67, 768: 0.80 -> 0.68; fp16 0.77-0.81 -> 0.60-0.61, 768: 0.85 -> 0.63;
/// rmsnorm with weight bf16 0.51-0.53 -> 0.47-0.49, fp16 0.52-0.53 -> 0.42-0.43; without
/// parameters within 0.02. AVX-512 hosts (not measured) load them as before.
template <class P>
inline constexpr bool widens_norm_param =
#if defined(ROOFTOP_HAS_AVX2_LANES)
    sizeof(typename P::value_type) == 2;
#else
    false;
#endif

/// Whether norm_rows_out<G, wide> takes rows of XT into T in pairs (norm_pairs) with this weight
/// and bias: each must be empty or load in pairs too (bf16, or where `wide` a 2-byte copy that
/// widen_norm_param made in pair order). With an fp32 weight or bias the rows go in order, and
/// so must the other parameter's widened copy.
template <bool wide, class P>
inline constexpr bool norm_param_pairs = (wide && widens_norm_param<P>) || std::is_same_v<std::remove_const_t<typename P::value_type>, bf16>;
template <bool wide, class XT, class T, class W, class B>
inline bool norm_in_pairs([[maybe_unused]] const W& weight, [[maybe_unused]] const B& bias) {
  if constexpr (norm_pairs<XT, T>) {
    return (norm_param_pairs<wide, W> || weight.extent(0) == 0) && (norm_param_pairs<wide, B> || bias.extent(0) == 0);
  } else {
    return false;
  }
}

/// p[0, cols) as floats into out, in the order norm_rows_out<G, true> loads them: where
/// `in_pairs` (norm_in_pairs), each sixteen values' even ones, then their odd ones (cols a
/// multiple of 16, as whole-line 2-byte rows are), else in order.
template <class P>
[[gnu::always_inline]] inline void widen_norm_param(const P* p, float* out, std::int64_t cols, [[maybe_unused]] bool in_pairs) {
#if defined(ROOFTOP_HAS_AVX2_LANES)
  if (in_pairs) {
    for (std::int64_t c = 0; c < cols; c += 2 * cpu::float_lanes) {
      if constexpr (std::is_same_v<std::remove_const_t<P>, bf16>) {
        const cpu::Bf16Pairs v = cpu::load_pairs(p + c);
        cpu::store_floats(out + c, v.even);
        cpu::store_floats(out + c + cpu::float_lanes, v.odd);
      } else {
        for (std::int64_t k = 0; k < cpu::float_lanes; ++k)
          out[c + k] = float(p[c + 2 * k]), out[c + cpu::float_lanes + k] = float(p[c + 2 * k + 1]);
      }
    }
    return;
  }
#endif
  cpu::widen(p, out, cols);
}

/// A norm's output rows on an AVX-512 or AVX2 host from the rows' contiguous values at in[g]:
/// out[g][c] = (in[g][c] - s[g].shift) * s[g].scale * w(c) + b(c) (w, b: weight and bias,
/// each left out where empty), stored as `stores` says. G = 2 rows (lines only) share each line
/// of weight and bias: see norm_row_runs. Through RowTeam::write's L1 buffer, streamed rows ran
/// 15-20% slower (see cpu::stream_vectors). `wide`: the vector code loads a weight and a bias
/// that widens_norm_param from wide_w and wide_b instead (widen_norm_param's copies).
template <int G, bool wide = false, class XT, class T, class W, class B, class Beside = cpu::NothingBeside>
[[gnu::always_inline]] inline void norm_rows_out(const XT* const* in, T* const* out, NormStores stores, std::int64_t cols,
                                                 const NormScale* s, const W& weight, const B& bias,
                                                 const cpu::Prefetch& ahead, const Beside& beside = {},
                                                 const float* wide_w = nullptr, const float* wide_b = nullptr) {
  const auto* const w = weight.extent(0) != 0 ? weight.data() : nullptr;
  const auto* const b = bias.extent(0) != 0 ? bias.data() : nullptr;
  constexpr bool w_wide = wide && widens_norm_param<W>, b_wide = wide && widens_norm_param<B>;
  const bool streamed = stores == NormStores::streamed;
  cpu::RowFloats<G> minus, times;
  for (int g = 0; g < G; ++g) minus[g] = cpu::splat(s[g].shift), times[g] = cpu::splat(s[g].scale);
  // With both weight and bias, one fma: the compiler would contract the multiply and the add
  // in some loops and not in others, and rows written alone and in pairs must agree bit for bit.
  auto one = [&](const std::int64_t c) __attribute__((always_inline)) {
    const float v = (float(in[0][c]) - s[0].shift) * s[0].scale;
    if (w && b) return compat::mul_add(v, float(w[c]), float(b[c]));
    if (w) return v * float(w[c]);
    return b ? v + float(b[c]) : v;
  };
  // Rows stored plainly prefetch `ahead` as they go where they are 4 KB or more, as
  // RowTeam::write's narrowed rows do: a line per register that starts one.
  const cpu::Prefetch next = ahead.element_bytes * cols >= 4096 ? ahead : cpu::Prefetch{};
  auto prefetch = [&](const std::int64_t c) __attribute__((always_inline)) {
    const std::int64_t at = c * next.element_bytes;
    if (at % 64 < cpu::float_lanes * next.element_bytes) next.line(at);
  };
#if defined(ROOFTOP_HAS_AVX2_LANES)
  constexpr bool w_pairs = norm_param_pairs<wide, W>, b_pairs = norm_param_pairs<wide, B>;
  if constexpr (norm_pairs<XT, T>) {
    // bf16 rows (and weight and bias, where given) on AVX2: sixteen at a time in pairs of
    // registers (cpu::load_pairs), the statistics too (cpu::detail::fold_row). Zen 3 VM, one
    // process alternating with the in-order lanes, best GB/s, 2 threads: layernorm 10922x4096
    // 10.2-11.1 -> 17.3-20.4 (two runs), 58254x768 9.1 -> 16.8, 1365x32768 12.1 -> 23.3;
    // rmsnorm 13.2-13.7 -> 21.9-22.2, 11.2 -> 19.8, 15.7 -> 27.2.
    if (norm_in_pairs<wide, XT, T>(weight, bias)) {
      auto bits = [&](const std::int64_t c) __attribute__((always_inline)) {
        cpu::Bf16Pairs pw{}, pb{};
        if constexpr (w_wide) {
          if (w) pw = {cpu::load_floats(wide_w + c), cpu::load_floats(wide_w + c + cpu::float_lanes)};
        } else if constexpr (w_pairs) {
          if (w) pw = cpu::load_pairs(w + c);
        }
        if constexpr (b_wide) {
          if (b) pb = {cpu::load_floats(wide_b + c), cpu::load_floats(wide_b + c + cpu::float_lanes)};
        } else if constexpr (b_pairs) {
          if (b) pb = cpu::load_pairs(b + c);
        }
        cpu::RowBits<G> r;
        for (int g = 0; g < G; ++g) {
          const cpu::Bf16Pairs v = cpu::load_pairs(in[g] + c);
          cpu::Floats even = (v.even - minus[g]) * times[g], odd = (v.odd - minus[g]) * times[g];
          if (w_pairs && b_pairs && w && b) even = cpu::fmadd(even, pw.even, pb.even), odd = cpu::fmadd(odd, pw.odd, pb.odd);
          else if (w_pairs && w) even = even * pw.even, odd = odd * pw.odd;
          else if (b_pairs && b) even = even + pb.even, odd = odd + pb.odd;
          r[g] = cpu::merge_pairs(even, odd);
        }
        return r;
      };
      if (stores != NormStores::plain) {
        cpu::stream_rows_bits<G>(out, cols, ahead, bits, beside, streamed);
        return;
      }
      if constexpr (G == 1) map_whole_lines<false>(out[0], cols, [&](const std::int64_t c) { return prefetch(c), bits(c)[0]; }, one);
      return;
    }
  }
#endif
  auto vector = [&](const std::int64_t c) __attribute__((always_inline)) {
    cpu::Floats vw{}, vb{};
    if constexpr (w_wide) {
      if (w) vw = cpu::load_floats(wide_w + c);
    } else {
      if (w) vw = cpu::load_floats(w + c);
    }
    if constexpr (b_wide) {
      if (b) vb = cpu::load_floats(wide_b + c);
    } else {
      if (b) vb = cpu::load_floats(b + c);
    }
    cpu::RowFloats<G> v;
    for (int g = 0; g < G; ++g) {
      v[g] = (cpu::load_floats(in[g] + c) - minus[g]) * times[g];
      if (w && b) v[g] = cpu::fmadd(v[g], vw, vb);
      else if (w) v[g] = v[g] * vw;
      else if (b) v[g] = v[g] + vb;
    }
    return v;
  };
  if (stores != NormStores::plain) {
    cpu::stream_vectors_rows<G>(out, cols, ahead, vector, beside, streamed);
    return;
  }
  if constexpr (G == 1) map_lines<false>(out[0], cols, [&](const std::int64_t c) { return prefetch(c), vector(c)[0]; }, one);
}

/// rmsnorm's statistics in the host's vector code (shift 0, scale 1 / sqrt(mean(x^2) + eps)),
/// folded over a row at once (whole) or a line at a time beside another row's output (start,
/// line, finish; the same values bit for bit, cpu::fold_line).
struct RmsStats {
  float inv_cols, eps;
  using Fold = cpu::RowSumSquares;
  template <class T>
  [[gnu::always_inline]] Fold start(const T*, std::int64_t) const { return {}; }
  template <class T>
  [[gnu::always_inline]] NormScale finish(const Fold& f, const T* in, std::int64_t cols) const {
    return {0.0f, scale(f.sum(), in, cols)};
  }
  template <class T>
  [[gnu::always_inline]] NormScale whole(const T* in, std::int64_t cols) const {
    return {0.0f, scale(cpu::row_sum_squares(in, cols), in, cols)};
  }
  /// The scale from the row's sum of squares (rms_scale: again in units of 2^-80 where it is
  /// +Inf).
  template <class T>
  [[gnu::always_inline]] float scale(float squares, const T* in, std::int64_t cols) const {
    return rms_scale(squares, inv_cols, eps, [&] { return scaled_square_sum(cols, [&](const std::int64_t c) { return in[c]; }); });
  }
};

/// LayerNorm's statistics the same ways (shift: the mean, scale: 1 / sqrt(var + eps)). One pass
/// over the row where it loses at most a bit: the sums of the deviations from a shift, the mean
/// of the first 16 values. (dev2 - dev^2 / n) cancels about log2(dev2 / (n var)) bits, so
/// where the shift lies more than a standard deviation from the mean, or the sums overflow
/// (layernorm_statistics), finish takes the deviations from the mean in a second pass, as the
/// portable code always does after its pass for the mean.
struct LayerStats {
  float inv_cols, eps;
  using Fold = cpu::RowDeviationSums;
  template <class T>
  [[gnu::always_inline]] Fold start(const T* in, std::int64_t cols) const {
    const std::int64_t head = cols < 16 ? cols : 16;
    const float shift = cpu::row_sum(in, head) / static_cast<float>(head);
    // (A sum past FLT_MAX of finite values: the first value instead.)
    return Fold(shift - shift == 0.0f ? shift : static_cast<float>(in[0]));
  }
  template <class T>
  [[gnu::always_inline]] NormScale finish(const Fold& f, const T* in, std::int64_t cols) const {
    NormScale s;
    layernorm_statistics(f.shift_one, SumPair{f.deviations(), f.squared()}, inv_cols, eps, [&](const float from) {
      Fold again(from);
      cpu::detail::fold_row(in, cols, again);
      return SumPair{again.deviations(), again.squared()};
    }, [&](const float from) {
      return scaled_deviation_sums(cols, from, [&](const std::int64_t c) { return in[c]; });
    }, s.shift, s.scale);
    return s;
  }
  template <class T>
  [[gnu::always_inline]] NormScale whole(const T* in, std::int64_t cols) const {
    Fold f = start(in, cols);
    cpu::detail::fold_row(in, cols, f);
    return finish(f, in, cols);
  }
};

/// A norm's rows on an AVX-512 or AVX2 host where every row of y is whole lines (x's rows
/// contiguous), plan.rows_per_item at a time (run_plan): each row's output is written (streamed
/// where plan.stream, else with plain stores, NormStores::lines) while
/// the next row's statistics are folded from its lines beside it (loaded next_row_ahead bytes
/// after their prefetch), where row by row the statistics took a pass of their own over a row
/// already prefetched into L2 while the memory idled. The same values as row by row. Taken by
/// 2-byte rows, as softmax_row_runs takes the next row's max: Zen 5 VM, 2 threads, the harness
/// --quick, the two builds alternated three times, paired fractions of the roof where the
/// memory ran slow (copy ~55 GB/s): layernorm bf16 rows of 4096 0.82-0.88 -> 0.91-0.96, 32768
/// 0.68-0.70 -> 0.85-0.88, fp16 4096 0.81-0.86 -> 0.92-0.96, 32768 0.77-0.78 -> 0.86-0.88, rows
/// of 768 0.91-0.93 -> 0.90-0.97; rmsnorm 2-byte within 0.05 either way (0.82-0.95). fp32 rows
/// of 16 KB and more of layernorm too (layer_rows_beside); rmsnorm's fp32 rows stay row by row.
/// Outputs too small to stream go the same way with plain stores (before, a row at a time, the
/// statistics a pass of their own): 2 threads, Zen 5 VM, 4 MB of input (in cache), one process
/// alternating with the row at a time, medians of 31, GB/s, rows of 768 / 4096 / 32768:
/// layernorm (weight and bias) bf16 50.7 / 72.1 / 63.2 -> 73.4 / 83.1 / 67.0, fp16 40.9 / 53.4 /
/// 51.6 -> 50.1 / 52.8 / 51.2, fp32 32768 75.2 -> 74.8; rmsnorm (weight) bf16 56.9 / 79.6 / 81.8
/// -> 79.6 / 89.1 / 84.1, fp16 68.8 / 87.5 / 82.4 -> 86.9 / 100.6 / 85.4. The same outputs.
///
/// fp32 rows with a weight or a bias go two at a time (and the next two folded beside), so that
/// each line of weight and bias comes into L1 once for two rows' lines: with rows of 16 KB and
/// more, x's row, the next row, weight and bias no longer fit L1 together, and each output line
/// took four fills from L2. Zen 4 VM, 2 threads, layernorm fp32 with weight and bias, a scratch
/// program alternating both paths in one process (medians of 11-15): 8192x4096 1.09-1.17x,
/// 1024x32768 1.07-1.24x with the memory slow (copy 37-46 GB/s), 1.17x on one thread; a
/// hand-written loop the same way, memory fast (copy ~77 GB/s): 39-42 -> 50 GB/s, where without
/// weight and bias the library's rows ran at 64-72. 2-byte rows in pairs ran 0.77-1.05x from
/// memory (bf16 rows of 4096 0.77x; in L2 as fast as one at a time), and rmsnorm's fp32 rows
/// with a weight through the runs in pairs, against row by row, 0.93-1.08x: both stay one row
/// at a time, but for layernorm's 2-byte rows of up to 2 KB (since the sixty-ninth session),
/// where what each row costs beyond its values (the statistics' reductions, square root and
/// division, a chain of dependent steps) is a large share and two rows' chains overlap.
/// Granite Rapids VM, 2 threads, the harness (with weight and bias), GB/s: layernorm rows of
/// 768, two alternations with one row at a time, from memory bf16 39.1-39.6 -> 41.0-41.7, fp16
/// 39.0-39.4 -> 41.9-42.3, in cache (2M values) bf16 46.9-47.0 -> 52.5-53.1, fp16 45.6-46.8 ->
/// 51.8-53.4, and two with the build before, from memory bf16 37.9-39.4 -> 41.4-42.8, fp16
/// 40.5-40.9 -> 41.3-42.2; layernorm rows of 4096 from memory 0.92-0.97x, of 32768
/// 0.96-1.03x; rmsnorm rows of 768 (a shorter chain: one sum, no second pass) bf16 1.01-1.04x,
/// fp16 0.88-0.97x.
template <class Exec, class X, class Y, class W, class B, class Stats>
void norm_row_runs(const char* label, const Exec& exec, const X& x, const Y& y, const W& weight, const B& bias,
                   const RowPlan& plan, const Stats& stats) {
  using XT = std::remove_const_t<typename X::value_type>;
  using T = typename Y::value_type;
  const auto rows = static_cast<std::int64_t>(x.extent(0)), cols = static_cast<std::int64_t>(x.extent(1));
  constexpr bool layer = std::is_same_v<Stats, LayerStats>;
  const bool pairs = (sizeof(XT) == 4 || (layer && cols * static_cast<std::int64_t>(sizeof(XT)) <= 2048)) &&
                     (weight.extent(0) != 0 || bias.extent(0) != 0);
  const NormStores stores = plan.stream ? NormStores::streamed : NormStores::lines;
  constexpr bool wide_w = widens_norm_param<W>, wide_b = widens_norm_param<B>, wide = wide_w || wide_b;
  const bool in_pairs = norm_in_pairs<wide, XT, T>(weight, bias);  // the order of the widened copies
  RowPlan run_plan = plan;
  run_plan.scratch_floats = cols * ((wide_w && weight.extent(0) != 0) + (wide_b && bias.extent(0) != 0));
  // Rows [row, row + n) written side by side from their scales s, while the statistics of the
  // next next_n rows are folded beside (their scales then replace s); ww, wb: the widened
  // weight and bias where wide.
  auto step = [=](auto n_rows, auto next_rows, const std::int64_t row, NormScale* const s, const float* const ww,
                  const float* const wb) {
    constexpr int n = decltype(n_rows)::value, next_n = decltype(next_rows)::value;
    const XT* in[n];
    T* out[n];
    for (int g = 0; g < n; ++g) in[g] = &x(row + g, 0), out[g] = &y(row + g, 0);
    if constexpr (next_n == 0) {
      norm_rows_out<n, wide>(in, out, stores, cols, s, weight, bias, RowTeam<Exec>::next_row_of(x, row + n - 1), {}, ww, wb);
    } else {
      const XT* const next = &x(row + n, 0);
      const XT* const second = &x(row + n + next_n - 1, 0);
      const cpu::Prefetch second_ahead = ahead_in_row(second);
      auto fold = stats.start(next, cols), second_fold = stats.start(second, cols);
      norm_rows_out<n, wide>(in, out, stores, cols, s, weight, bias, ahead_in_row(next),
                             [&](const std::int64_t c, const std::int64_t count) __attribute__((always_inline)) {
        cpu::fold_line(next, c, fold);
        if constexpr (next_n == 2) {
          second_ahead.lines(c * second_ahead.element_bytes, (c + count) * second_ahead.element_bytes);
          cpu::fold_line(second, c, second_fold);
        }
      }, ww, wb);
      s[0] = stats.finish(fold, next, cols);
      if constexpr (next_n == 2) s[1] = stats.finish(second_fold, second, cols);
    }
  };
  using One = std::integral_constant<int, 1>;
  using Two = std::integral_constant<int, 2>;
  using None = std::integral_constant<int, 0>;
  for_each_row_run<Exec>(
      label, exec, rows,
      [=](const std::int64_t first, const std::int64_t last, float* const scratch) {
        const float *ww = nullptr, *wb = nullptr;
        float* free = scratch;
        if constexpr (wide_w) {
          if (weight.extent(0) != 0) widen_norm_param(weight.data(), free, cols, in_pairs), ww = free, free += cols;
        }
        if constexpr (wide_b) {
          if (bias.extent(0) != 0) widen_norm_param(bias.data(), free, cols, in_pairs), wb = free;
        }
        NormScale s[2];
        s[0] = stats.whole(&x(first, 0), cols);
        std::int64_t row = first;
        if (!pairs || first + 1 == last) {
          for (; row + 1 < last; ++row) step(One{}, One{}, row, s, ww, wb);
          step(One{}, None{}, row, s, ww, wb);
          return;
        }
        // Pairs of rows (an odd run's first row alone).
        if ((last - first) % 2) step(One{}, Two{}, row++, s, ww, wb);
        else s[1] = stats.whole(&x(first + 1, 0), cols);
        for (; row + 2 < last; row += 2) step(Two{}, Two{}, row, s, ww, wb);
        step(Two{}, None{}, row, s, ww, wb);
      },
      run_plan);
}

/// A norm's row r in the host's vector code, from its shift and scale: norm_rows_out into y's
/// row, streamed where the plan says (RowTeam::vector_stream_row).
template <class Row, class X, class Y, class W, class B>
[[gnu::always_inline]] inline void norm_vector_row(const Row& r, const X& x, const Y& y, NormScale s, const W& weight,
                                                   const B& bias) {
  const auto cols = static_cast<std::int64_t>(y.extent(1));
  auto* const stream = r.vector_stream_row(y, cols);
  const std::remove_const_t<typename X::value_type>* const in[1] = {&x(r.row, 0)};
  typename Y::value_type* const out[1] = {stream ? stream : &y(r.row, 0)};
  norm_rows_out<1>(in, out, stream ? NormStores::streamed : NormStores::plain, cols, &s, weight, bias, r.next_row_of(x));
}

/// Whether layernorm's rows of `cols` values of T go through norm_row_runs: 2-byte rows, as
/// every row kernel's (next_row_beside), and fp32 rows of 16 KB or more, whose statistics pass
/// (a shift and two sums) row by row was a read-only stream, which this VM's cores read more
/// slowly than a copy moves. Zen 4 VM, 2 threads, a scratch program alternating the two paths
/// in one process (30 pairs per run, runs over 4 minutes), median of the runs' ratios of
/// median times, where the memory ran slow (copy under 60 GB/s) / fast: rows of 32768 1.17x /
/// 1.16x faster, 4096 1.11x / 1.08x, 2048 1.03x / 0.96x, but 768 1.02x / 0.90x. The harness
/// agreed (--quick, seven alternations, paired fractions of the roof: 4096 0.78-0.81 ->
/// 0.90-1.01, 32768 0.71-0.74 -> 0.89-0.96). On the Zen 5 VM (full-width AVX-512) rows of
/// 32768 had lost where the memory ran fast (0.73 -> 0.58). rmsnorm's fp32 rows (one sum) gained 7% where the memory ran slow
/// at 768 and 32768 columns and nothing where it ran fast, and lost 9% there at 4096 (the same
/// scratch program), so they stay row by row, as softmax's keep their max pass. With AVX2
/// (registers of 8 floats) fp32 rows stay row by row too: Zen 3 VM, 2 threads, weight and
/// bias, a scratch program run for each path in turn (separate processes, seven alternations,
/// best GB/s of x and y): rows of 4096 14.7-17.7 -> 16.9-23.6, of 32768 16.1-18.7 -> 18.8-22.9.
template <class T>
constexpr bool layer_rows_beside(std::int64_t cols) {
  return next_row_beside<T> ||
         (std::is_same_v<T, float> && cpu::float_lanes >= 16 && cols * static_cast<std::int64_t>(sizeof(T)) >= 16384);
}

/// Whether norm_row_runs may take x's rows into y's: values of one size, so that each line of
/// output, beside which a line of the next row is folded, is as many values as a line of input.
/// (fp32 rows into bf16 folded half of each next row; 2-byte rows into fp32 twice, past its end.)
template <class X, class Y>
inline constexpr bool rows_line_up = sizeof(typename X::value_type) == sizeof(typename Y::value_type);
#endif
}  // namespace detail

// ---- layernorm -------------------------------------------------------------------------------

/// LayerNorm over the last axis of (rows, cols) x into y, with optional (cols) weight and bias
/// (empty Views for none). Throws rooftop::Error if the extents do not match or eps < 0.
template <class Exec, class X, class Y, class W, class B>
on_exec_space_t<Exec> layernorm(const Exec& exec, const X& x, const Y& y, double eps, const W& weight, const B& bias) {
  detail::require_norm_args<Exec>("layernorm", x, y, eps);
  detail::require_norm_param<Exec>("layernorm", x, y, weight, "weight");
  detail::require_norm_param<Exec>("layernorm", x, y, bias, "bias");
  // Rows in the host vector code read x and the parameters in place: no scratch row for them,
  // and fp16 parameters are widened as loaded. Elsewhere fp16 parameters are widened into a
  // copy first (the rows then convert nothing of them per element).
  const bool vector_layout =
      detail::vector_norm_rows<detail::RowTeam<Exec>, X, Y, W, B> && detail::vector_norm_layout(x, y, weight, bias);
  if constexpr (detail::host_widens<Exec, typename W::value_type> || detail::host_widens<Exec, typename B::value_type>) {
    if (!vector_layout) return layernorm(exec, x, y, eps, detail::widened_copy(weight), detail::widened_copy(bias));
  }
  const auto cols = static_cast<std::int64_t>(x.extent(1));
  const bool has_weight = weight.extent(0) != 0, has_bias = bias.extent(0) != 0;
  const float e = static_cast<float>(eps), inv_cols = cols ? 1.0f / static_cast<float>(cols) : 0.0f;
  const auto rows = static_cast<std::int64_t>(x.extent(0));
  if constexpr (detail::RowTeam<Exec>::gpu) {
    detail::RegisterRows<Exec>::run("rooftop::layernorm", exec, rows, cols,
                                    detail::NormRegisterRows<false, X, Y, W, B>{x, y, weight, bias, e, inv_cols});
  } else {
#if defined(ROOFTOP_HAS_VECTOR_ROWS)
    if constexpr (detail::vector_norm_rows<detail::RowTeam<Exec>, X, Y, W, B>) {
      const auto plan = detail::plan_vector_rows<Exec, true>(y, vector_layout, 0);
      if (detail::rows_line_up<X, Y> && detail::layer_rows_beside<std::remove_const_t<typename X::value_type>>(cols) && vector_layout &&
          detail::whole_line_rows(y))
        return detail::norm_row_runs("rooftop::layernorm", exec, x, y, weight, bias, detail::run_plan(plan, exec, y),
                                     detail::LayerStats{inv_cols, e});
    }
#endif
    detail::for_each_row("rooftop::layernorm", exec, rows,
                         KOKKOS_LAMBDA(const detail::RowTeam<Exec>& r) {
#if defined(ROOFTOP_HAS_VECTOR_ROWS) && !defined(__CUDA_ARCH__)
                           if constexpr (detail::vector_norm_rows<detail::RowTeam<Exec>, X, Y, W, B>) {
                             if (vector_layout) {
                               detail::norm_vector_row(r, x, y, detail::LayerStats{inv_cols, e}.whole(&x(r.row, 0), cols),
                                                       weight, bias);
                               return;
                             }
                           }
#endif
                           const auto in = r.input(x, cols);
                           const float mean0 = detail::layernorm_mean0(r.reduce(cols, 0.0f, in, detail::Plus{}), inv_cols, [&] {
                             return r.reduce(cols, 0.0f, [&](const std::int64_t c) { return in(c) * inv_cols; }, detail::Plus{});
                           });
                           // Corrected two-pass (layernorm_statistics), both sums in one pass
                           // (the row is in cache); again where layernorm_statistics says.
                           auto deviations = [&](const float from) {
                             return r.reduce_sums(cols, [&](const std::int64_t c) {
                               const float d = in(c) - from;
                               return detail::SumPair{d, d * d};
                             });
                           };
                           auto scaled_deviations = [&](const float from) {
                             constexpr float unit = detail::norm_overflow_unit;
                             return r.reduce_sums(cols, [&](const std::int64_t c) {
                               const float d = in(c) * unit - from * unit;
                               return detail::SumPair{d, d * d};
                             });
                           };
                           float mean, rstd;
                           detail::layernorm_statistics(mean0, deviations(mean0), inv_cols, e, deviations, scaled_deviations,
                                                        mean, rstd);
                           // One loop per case, so none loads a parameter under a condition
                           // (which would keep the loop from vectorizing). A multiply and an
                           // add, written so: with std::fma (libm's fmaf without FMA flags) GCC
                           // 12 left these loops scalar (layernorm fp32 in cache: 14 GB/s, 34).
                           auto write = [&](const auto& w, const auto& b) {
                             r.write(y, cols, [&](const std::int64_t c) {
                               return (in(c) - mean) * rstd * w(c) + b(c);
                             }, r.next_row_of(x));
                           };
                           auto weight_of = [&](const std::int64_t c) { return float(weight(c)); };
                           auto bias_of = [&](const std::int64_t c) { return float(bias(c)); };
                           auto one = [](std::int64_t) { return 1.0f; };
                           auto zero = [](std::int64_t) { return 0.0f; };
                           if (has_weight && has_bias) write(weight_of, bias_of);
                           else if (has_weight) write(weight_of, zero);
                           else if (has_bias) write(one, bias_of);
                           else write(one, zero);
                         },
                         detail::plan_vector_rows<Exec, true>(y, vector_layout,
                                                              vector_layout ? 0 : detail::input_scratch_floats<Exec, X>(cols)));
  }
}
template <class Exec, class X, class Y>
on_exec_space_t<Exec> layernorm(const Exec& exec, const X& x, const Y& y, double eps = 1e-5) {
  const Kokkos::View<const typename Y::value_type*, typename Y::memory_space> none;
  layernorm(exec, x, y, eps, none, none);
}
template <class X, class Y, class W, class B>
void layernorm(const X& x, const Y& y, double eps, const W& weight, const B& bias) {
  layernorm(typename Y::execution_space{}, x, y, eps, weight, bias);
}
template <class X, class Y>
void layernorm(const X& x, const Y& y, double eps = 1e-5) {
  layernorm(typename Y::execution_space{}, x, y, eps);
}

/// Cost of layernorm over (rows, cols) of T, with weight and bias unless told otherwise: 9
/// FLOPs per entry with both (add for the mean: 1; subtract, multiply-add, add for the
/// deviations: 4; subtract, multiply, multiply-add for the output: 4), one fewer for each one
/// left out; read x and those given once, write y.
template <class T>
constexpr Cost layernorm_cost(std::int64_t rows, std::int64_t cols, bool has_weight = true, bool has_bias = true) {
  const double params = double(has_weight) + double(has_bias);
  return {(7.0 + params) * rows * cols, bytes_of<T>(2.0 * rows * cols + params * cols)};
}

// ---- rmsnorm ---------------------------------------------------------------------------------

/// RMSNorm over the last axis of (rows, cols) x into y, with optional (cols) weight (empty
/// View for none). Throws rooftop::Error if the extents do not match or eps < 0.
template <class Exec, class X, class Y, class W>
on_exec_space_t<Exec> rmsnorm(const Exec& exec, const X& x, const Y& y, double eps, const W& weight) {
  detail::require_norm_args<Exec>("rmsnorm", x, y, eps);
  detail::require_norm_param<Exec>("rmsnorm", x, y, weight, "weight");
  const Kokkos::View<const float*, typename Y::memory_space> no_bias;
  const bool vector_layout =
      detail::vector_norm_rows<detail::RowTeam<Exec>, X, Y, W, decltype(no_bias)> && detail::vector_norm_layout(x, y, weight, no_bias);
  if constexpr (detail::host_widens<Exec, typename W::value_type>) {
    if (!vector_layout) return rmsnorm(exec, x, y, eps, detail::widened_copy(weight));  // see layernorm
  }
  const auto cols = static_cast<std::int64_t>(x.extent(1));
  const bool has_weight = weight.extent(0) != 0;
  const float e = static_cast<float>(eps), inv_cols = cols ? 1.0f / static_cast<float>(cols) : 0.0f;
  const auto rows = static_cast<std::int64_t>(x.extent(0));
  if constexpr (detail::RowTeam<Exec>::gpu) {
    detail::RegisterRows<Exec>::run("rooftop::rmsnorm", exec, rows, cols,
                                    detail::NormRegisterRows<true, X, Y, W, decltype(no_bias)>{x, y, weight, no_bias, e, inv_cols});
  } else {
#if defined(ROOFTOP_HAS_VECTOR_ROWS)
    if constexpr (detail::vector_norm_rows<detail::RowTeam<Exec>, X, Y, W, decltype(no_bias)>) {
      const auto plan = detail::plan_vector_rows<Exec, true>(y, vector_layout, 0);
      if (detail::rows_line_up<X, Y> && detail::next_row_beside<typename X::value_type> && vector_layout && detail::whole_line_rows(y))
        return detail::norm_row_runs("rooftop::rmsnorm", exec, x, y, weight, no_bias, detail::run_plan(plan, exec, y),
                                     detail::RmsStats{inv_cols, e});
    }
#endif
    detail::for_each_row("rooftop::rmsnorm", exec, rows,
                         KOKKOS_LAMBDA(const detail::RowTeam<Exec>& r) {
#if defined(ROOFTOP_HAS_VECTOR_ROWS) && !defined(__CUDA_ARCH__)
                           if constexpr (detail::vector_norm_rows<detail::RowTeam<Exec>, X, Y, W, decltype(no_bias)>) {
                             if (vector_layout) {
                               const auto* const in = &x(r.row, 0);
                               // (The sum written out, not RmsStats::whole: through it, GCC's code
                               // for these rows ran slower, fp32 85x768 in L2, one thread, a
                               // scratch program: 4.6-4.8 us this way, 5.0-5.1 through it;
                               // measured before RmsStats::scale, whose extra pass only rows whose
                               // squares overflow take, replaced norm_scale here.)
                               const float rrms = detail::RmsStats{inv_cols, e}.scale(cpu::row_sum_squares(in, cols), in, cols);
                               detail::norm_vector_row(r, x, y, detail::NormScale{0.0f, rrms}, weight, no_bias);
                               return;
                             }
                           }
#endif
                           const auto in = r.input(x, cols);
                           const float squares = r.reduce(
                               cols, 0.0f,
                               [&](const std::int64_t c) {
                                 const float v = in(c);
                                 return v * v;
                               },
                               detail::Plus{});
                           const float rrms = detail::rms_scale(squares, inv_cols, e, [&] {
                             return r.reduce(
                                 cols, 0.0f,
                                 [&](const std::int64_t c) {
                                   const float v = in(c) * detail::norm_overflow_unit;
                                   return v * v;
                                 },
                                 detail::Plus{});
                           });
                           if (has_weight) {
                             r.write(y, cols, [&](const std::int64_t c) { return in(c) * rrms * float(weight(c)); }, r.next_row_of(x));
                           } else {
                             r.write(y, cols, [&](const std::int64_t c) { return in(c) * rrms; }, r.next_row_of(x));
                           }
                         },
                         detail::plan_vector_rows<Exec, true>(y, vector_layout,
                                                              vector_layout ? 0 : detail::input_scratch_floats<Exec, X>(cols)));
  }
}
template <class Exec, class X, class Y>
on_exec_space_t<Exec> rmsnorm(const Exec& exec, const X& x, const Y& y, double eps = 1e-6) {
  rmsnorm(exec, x, y, eps, Kokkos::View<const typename Y::value_type*, typename Y::memory_space>());
}
template <class X, class Y, class W>
void rmsnorm(const X& x, const Y& y, double eps, const W& weight) {
  rmsnorm(typename Y::execution_space{}, x, y, eps, weight);
}
template <class X, class Y>
void rmsnorm(const X& x, const Y& y, double eps = 1e-6) {
  rmsnorm(typename Y::execution_space{}, x, y, eps);
}

/// Cost of rmsnorm over (rows, cols) of T, with weight unless told otherwise: 4 FLOPs per
/// entry with it (multiply-add for the squares; two multiplies for the output), 3 without;
/// read x and the weight once, write y.
template <class T>
constexpr Cost rmsnorm_cost(std::int64_t rows, std::int64_t cols, bool has_weight = true) {
  return {(3.0 + double(has_weight)) * rows * cols, bytes_of<T>(2.0 * rows * cols + double(has_weight) * cols)};
}

}  // namespace rooftop
