// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The sums a norm row needs over contiguous fp32, bf16 or fp16 values with AVX-512 or AVX2,
/// each value widened as it is loaded (cpu::load_floats): four independent registers of lanes
/// (a multiply-add chain per register), the elements after the last whole block of four
/// registers summed one by one, the partials then combined in a fixed order. kernels/norm.hpp's
/// statistics on those hosts: the portable fold read fp16 rows through a copy widened into
/// scratch first (a pass more over each row) and kept two registers of partials. Also the
/// partials of reduce.hpp's sum (fp32 too) and nrm2 and stream.hpp's dot of bf16/fp16
/// (sum_partials, sum_square_partials, dot_partials).
#pragma once

#include "avx512_warnings.hpp"
#include "convert.hpp"

#include <cstdint>
#include <type_traits>

namespace rooftop::cpu {

#if defined(ROOFTOP_HAS_FLOAT_LANES)
ROOFTOP_AVX512_WARNINGS_OFF
namespace detail {
/// Folds the values of x[0, n) into `fold` (RowSum and the folds below): fold.add(k, v) for each
/// register v of values in blocks of four registers (k: which of the four), then the whole
/// registers after the last block one each as k = 0, 1, 2, then fold.add_one for the elements
/// after those. (The whole registers had gone element by element through the tail, among them
/// layernorm's sixteen values for its shift: an fp16 conversion each and a chain of adds.
/// Harness, one thread, layernorm fp16 85x768 in L2: 10.5 -> 8.6 us.) (Eight registers with
/// AVX2, as many partials as AVX-512's four: no faster on the Zen 3 VM.)
template <class T, class Fold>
[[gnu::always_inline]] inline void fold_row(const T* x, std::int64_t n, Fold& fold) {
  std::int64_t c = 0;
#if defined(ROOFTOP_HAS_AVX2_LANES)
  if constexpr (std::is_same_v<T, bf16>) {  // the even and the odd elements of two runs of sixteen (load_pairs)
    for (; c + 4 * float_lanes <= n; c += 4 * float_lanes) {
      const Bf16Pairs p = load_pairs(x + c), q = load_pairs(x + c + 2 * float_lanes);
      fold.add(0, p.even);
      fold.add(1, p.odd);
      fold.add(2, q.even);
      fold.add(3, q.odd);
    }
  }
#endif
  for (; c + 4 * float_lanes <= n; c += 4 * float_lanes)
    for (int k = 0; k < 4; ++k) fold.add(k, load_floats(x + c + float_lanes * k));
  for (int k = 0; c + float_lanes <= n; c += float_lanes, ++k) fold.add(k, load_floats(x + c));
  for (; c < n; ++c) fold.add_one(float(x[c]));
}
}  // namespace detail

/// fold_row's steps over the 64-byte line of x from element c (c a multiple of the elements of a
/// line): each register of values goes to the accumulator fold_row gives it, so that a row of
/// whole lines folded a line at a time, in order, ends as fold_row leaves it, bit for bit
/// (kernels/norm.hpp folds the next row's lines beside this row's output).
template <class T, class Fold>
[[gnu::always_inline]] inline void fold_line(const T* x, std::int64_t c, Fold& fold) {
#if defined(ROOFTOP_HAS_AVX2_LANES)
  if constexpr (std::is_same_v<T, bf16>) {  // a line is one of fold_row's blocks of pairs
    const Bf16Pairs p = load_pairs(x + c), q = load_pairs(x + c + 2 * float_lanes);
    fold.add(0, p.even);
    fold.add(1, p.odd);
    fold.add(2, q.even);
    fold.add(3, q.odd);
    return;
  }
#endif
  // The line's registers go to the accumulators k0, k0 + 1, ... (k0 = (c / float_lanes) % 4, as
  // fold_row gives them), each case of the switch with constant indices: indexed by a number
  // known only at run time, the accumulators had been kept in memory (a load and a store per
  // register). Zen 4 VM, a scratch program alternating both in one process, one thread,
  // 8192 x 4096 from memory, medians of eleven: layernorm fp16 1.05x, rmsnorm fp16 1.04x, bf16
  // and fp32 within 2%; 2 threads (bound by the memory, copy ~50 GB/s) within 2%.
  constexpr int per_line = 64 / static_cast<int>(sizeof(T) * float_lanes);  // 1, 2 or 4
  auto from = [&](auto k0) __attribute__((always_inline)) {
    for (int i = 0; i < per_line; ++i) fold.add((decltype(k0)::value + i) % 4, load_floats(x + c + float_lanes * i));
  };
  switch ((c / float_lanes) % 4) {
    case 0: from(std::integral_constant<int, 0>{}); break;
    case 1: from(std::integral_constant<int, 1>{}); break;
    case 2: from(std::integral_constant<int, 2>{}); break;
    default: from(std::integral_constant<int, 3>{}); break;
  }
}

/// The folds of detail::fold_row and fold_line (four registers of partials, and a float for the
/// elements after the last whole register, combined in a fixed order): the sum of the values.
struct RowSum {
  Floats acc[4] = {splat(0.0f), splat(0.0f), splat(0.0f), splat(0.0f)};
  float rest = 0.0f;
  [[gnu::always_inline]] void add(int k, Floats v) { acc[k] = acc[k] + v; }
  [[gnu::always_inline]] void add_one(float v) { rest += v; }
  [[gnu::always_inline]] float sum() const { return reduce_add((acc[0] + acc[1]) + (acc[2] + acc[3])) + rest; }
};
/// The sum of the squares of the values.
struct RowSumSquares {
  Floats acc[4] = {splat(0.0f), splat(0.0f), splat(0.0f), splat(0.0f)};
  float rest = 0.0f;
  [[gnu::always_inline]] void add(int k, Floats v) { acc[k] = fmadd(v, v, acc[k]); }
  [[gnu::always_inline]] void add_one(float v) { rest += v * v; }
  [[gnu::always_inline]] float sum() const { return reduce_add((acc[0] + acc[1]) + (acc[2] + acc[3])) + rest; }
};
/// The sums of d = v - shift and of d^2. With AVX2, two registers of each (fold_row's
/// registers k and k + 2 share one): with four, a bf16 layernorm row's output and the next
/// row's fold beside it (kernels/norm.hpp's norm_row_runs) needed more than AVX2's sixteen
/// registers, and GCC kept the sums in memory, a load and a store per register folded. Zen 1
/// VM, one thread, 256 rows of 4096 bf16 with weight and bias, a scratch program calling
/// rooftop::layernorm, best of 200: 0.716 -> 0.668 ns per value (fp32 rows of 4096, whose
/// fold_row is the tight loop the registers had hidden latency in: 0.39-0.41 either way).
struct RowDeviationSums {
#if defined(ROOFTOP_HAS_AVX2_LANES)
  static constexpr int registers = 2;
#else
  static constexpr int registers = 4;
#endif
  Floats shift, sums[4] = {splat(0.0f), splat(0.0f), splat(0.0f), splat(0.0f)},
                squares[4] = {splat(0.0f), splat(0.0f), splat(0.0f), splat(0.0f)};
  float shift_one, rest_a = 0.0f, rest_b = 0.0f;
  explicit RowDeviationSums(float s) : shift(splat(s)), shift_one(s) {}
  [[gnu::always_inline]] void add(int k, Floats v) {
    k %= registers;
    const Floats d = v - shift;
    squares[k] = fmadd(d, d, squares[k]);
    sums[k] = sums[k] + d;
  }
  [[gnu::always_inline]] void add_one(float v) {
    const float d = v - shift_one;
    rest_a += d;
    rest_b += d * d;
  }
  [[gnu::always_inline]] float deviations() const { return reduce_add((sums[0] + sums[1]) + (sums[2] + sums[3])) + rest_a; }
  [[gnu::always_inline]] float squared() const {
    return reduce_add((squares[0] + squares[1]) + (squares[2] + squares[3])) + rest_b;
  }
};

/// The sum of x[0, n).
template <class T>
[[gnu::always_inline]] inline float row_sum(const T* x, std::int64_t n) {
  RowSum f;
  detail::fold_row(x, n, f);
  return f.sum();
}

/// The sum of squares of x[0, n).
template <class T>
[[gnu::always_inline]] inline float row_sum_squares(const T* x, std::int64_t n) {
  RowSumSquares f;
  detail::fold_row(x, n, f);
  return f.sum();
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

#if defined(ROOFTOP_HAS_FLOAT_LANES)
ROOFTOP_AVX512_WARNINGS_OFF
/// Partials of a host fold over float accumulators: four registers of lanes (64 with AVX-512,
/// 32 with AVX2), core/reduction.hpp's ReductionShape<Exec, float>::lanes.
inline constexpr int float_partials = 4 * static_cast<int>(float_lanes);

namespace detail {
/// part[k], k < float_partials, receives the elements k, k + float_partials, ... of a fold in
/// turn: four registers of lanes, acc = step(acc, i) with the register of elements from i,
/// stored into part, then part[k] += tail(i) one element at a time after the last whole block.
/// Where region > 0, the four runs [r region, r region + n), r < 4, walked together instead,
/// run r in register r (core/reduction.hpp's fold_runs order: part[r float_lanes + j] receives
/// elements r region + j, r region + float_lanes + j, ..., then the run's last ones). (Lambdas
/// marked always-inline: in the harness's one large translation unit GCC 12 has left such
/// lambdas out of line, a call per step.)
template <class Step, class Tail>
[[gnu::always_inline]] inline void fold_partials(std::int64_t n, float (&part)[float_partials], const Step& step, const Tail& tail,
                                                 std::int64_t region = 0) {
  Floats p[4] = {splat(0.0f), splat(0.0f), splat(0.0f), splat(0.0f)};
  std::int64_t i = 0;
  if (region > 0) {
    for (; i + float_lanes <= n; i += float_lanes)
      for (int r = 0; r < 4; ++r) p[r] = step(p[r], r * region + i);
  } else {
    for (; i + float_partials <= n; i += float_partials)
      for (int k = 0; k < 4; ++k) p[k] = step(p[k], i + float_lanes * k);
  }
  for (int k = 0; k < 4; ++k) store_floats(part + float_lanes * k, p[k]);
  if (region > 0) {
    for (int r = 0; r < 4; ++r)
      for (int j = 0; i + j < n; ++j) part[r * float_lanes + j] += tail(r * region + i + j);
  } else {
    for (int k = 0; i + k < n; ++k) part[k] += tail(i + k);
  }
}
}  // namespace detail

/// The partials of reduce_inputs' fold (kernels/reduce.hpp's sum) over x[0, n) of a T,
/// each value widened as it is loaded instead of through a widened copy in L1 or the compiler's
/// conversion loop: part[k] receives elements k, k + float_partials, ... in turn, as
/// detail::fold_lanes adds them, so the result is bit for bit the portable fold's; where
/// region > 0, the four runs of n from x + r region as detail::fold_runs folds them. T: bf16,
/// fp16, or fp32 (reduce.hpp's sum in regions). part must be aligned to a register.
template <class T>
inline void sum_partials(const T* x, std::int64_t n, float (&part)[float_partials], std::int64_t region = 0) {
  static_assert(has_float_lanes<T>, "sum_partials: fp32, bf16 or fp16");
  detail::fold_partials(
      n, part, [x](Floats acc, std::int64_t i) __attribute__((always_inline)) { return acc + load_floats(x + i); },
      [x](std::int64_t i) __attribute__((always_inline)) { return float(x[i]); }, region);
}

/// The same for kernels/stream.hpp's dot of two 2-byte x and y: part[k] receives the products
/// of elements k, k + float_partials, ..., each added in one fma (the portable fold rounds the
/// product first, so the two differ in the last bits).
template <class T>
inline void dot_partials(const T* x, const T* y, std::int64_t n, float (&part)[float_partials]) {
  static_assert(sizeof(T) == 2, "dot_partials: bf16 or fp16");
  detail::fold_partials(
      n, part,
      [x, y](Floats acc, std::int64_t i) __attribute__((always_inline)) { return fmadd(load_floats(x + i), load_floats(y + i), acc); },
      [x, y](std::int64_t i) __attribute__((always_inline)) { return float(x[i]) * float(y[i]); });
}

/// The partials of nrm2's fold of squares in fp64 over x[0, n) of a T (fp32, bf16 or fp16; each
/// square of a widened value is exact in fp64, so an fma adds it as the portable fold's multiply
/// and add do): float_partials of them, two registers of doubles per register of floats,
/// part[k] receiving elements k, k + float_partials, ... in turn, as detail::fold_lanes adds
/// them; where region > 0, the four runs of n from x + r region as detail::fold_runs folds them
/// (run r in part[r float_lanes + j]). Bit for bit the portable folds over as many partials.
template <class T>
inline void sum_square_partials(const T* x, std::int64_t n, double (&part)[float_partials], std::int64_t region = 0) {
  static_assert(has_float_lanes<T>, "sum_square_partials: fp32, bf16 or fp16");
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  using Doubles = __m512d;
  auto low = [](__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); };
  auto high = [](__m512 v) { return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))); };
  auto square_add = [](Doubles v, Doubles acc) { return _mm512_fmadd_pd(v, v, acc); };
#else
  using Doubles = __m256d;
  auto low = [](__m256 v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); };
  auto high = [](__m256 v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); };
  auto square_add = [](Doubles v, Doubles acc) { return _mm256_fmadd_pd(v, v, acc); };
#endif
  constexpr int per = float_lanes / 2;  // doubles per register
  Doubles p[8] = {};
  auto add = [&](const int k, const Floats v) {
    p[2 * k] = square_add(low(v), p[2 * k]);
    p[2 * k + 1] = square_add(high(v), p[2 * k + 1]);
  };
  std::int64_t i = 0;
  if (region > 0) {
    for (; i + float_lanes <= n; i += float_lanes)
      for (int r = 0; r < 4; ++r) add(r, load_floats(x + r * region + i));
  } else {
    for (; i + float_partials <= n; i += float_partials)
      for (int k = 0; k < 4; ++k) add(k, load_floats(x + i + float_lanes * k));
  }
  for (int k = 0; k < 8; ++k)
    for (int q = 0; q < per; ++q) part[per * k + q] = p[k][q];
  auto square = [x](const std::int64_t e) {
    const double v = float(x[e]);
    return v * v;
  };
  if (region > 0) {
    for (int r = 0; r < 4; ++r)
      for (int j = 0; i + j < n; ++j) part[r * float_lanes + j] += square(r * region + i + j);
  } else {
    for (int k = 0; i + k < n; ++k) part[k] += square(i + k);
  }
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

}  // namespace rooftop::cpu
