// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The sums a norm row needs over contiguous fp32, bf16 or fp16 values with AVX-512 or AVX2,
/// each value widened as it is loaded (cpu::load_floats): four independent registers of lanes
/// (a multiply-add chain per register), the elements after the last whole block of four
/// registers summed one by one, the partials then combined in a fixed order. kernels/norm.hpp's
/// statistics on those hosts: the portable fold read fp16 rows through a copy widened into
/// scratch first (a pass more over each row) and kept two registers of partials. Also the
/// partials of reduce.hpp's sum of bf16/fp16 and nrm2 of fp16 with AVX-512 (sum_partials,
/// sum_square_partials).
#pragma once

#include "avx512_warnings.hpp"
#include "convert.hpp"

#include <cstdint>

namespace rooftop::cpu {

#if defined(ROOFTOP_HAS_FLOAT_LANES)
ROOFTOP_AVX512_WARNINGS_OFF
namespace detail {
/// Folds acc[k] = f(k, acc[k], v) over x[0, n) in blocks of four registers (v: a register of
/// values, k: which of the four accumulators), then tail(c) for the elements after the last
/// block; returns the four accumulators summed. (Eight registers with AVX2, as many partials
/// as AVX-512's four: no faster on the Zen 3 VM.)
template <class T, class F, class Tail>
[[gnu::always_inline]] inline Floats fold_row(const T* x, std::int64_t n, const F& f, const Tail& tail) {
  Floats acc[4] = {splat(0.0f), splat(0.0f), splat(0.0f), splat(0.0f)};
  std::int64_t c = 0;
#if defined(ROOFTOP_HAS_AVX2_LANES)
  if constexpr (std::is_same_v<T, bf16>) {  // the even and the odd elements of two runs of sixteen (load_pairs)
    for (; c + 4 * float_lanes <= n; c += 4 * float_lanes) {
      const Bf16Pairs p = load_pairs(x + c), q = load_pairs(x + c + 2 * float_lanes);
      acc[0] = f(0, acc[0], p.even);
      acc[1] = f(1, acc[1], p.odd);
      acc[2] = f(2, acc[2], q.even);
      acc[3] = f(3, acc[3], q.odd);
    }
  }
#endif
  for (; c + 4 * float_lanes <= n; c += 4 * float_lanes)
    for (int k = 0; k < 4; ++k) acc[k] = f(k, acc[k], load_floats(x + c + float_lanes * k));
  for (; c < n; ++c) tail(c);
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}
}  // namespace detail

/// The sum of x[0, n).
template <class T>
inline float row_sum(const T* x, std::int64_t n) {
  float rest = 0.0f;
  const Floats s = detail::fold_row(
      x, n, [](int, Floats acc, Floats v) { return acc + v; }, [&](std::int64_t c) { rest += float(x[c]); });
  return reduce_add(s) + rest;
}

/// The sum of squares of x[0, n).
template <class T>
inline float row_sum_squares(const T* x, std::int64_t n) {
  float rest = 0.0f;
  const Floats s = detail::fold_row(
      x, n, [](int, Floats acc, Floats v) { return fmadd(v, v, acc); },
      [&](std::int64_t c) {
        const float v = float(x[c]);
        rest += v * v;
      });
  return reduce_add(s) + rest;
}

/// The sums of d = x[c] - shift and of d^2 over x[0, n), into a and b.
template <class T>
inline void row_deviation_sums(const T* x, std::int64_t n, float shift, float& a, float& b) {
  const Floats s = splat(shift);
  Floats squares[4] = {splat(0.0f), splat(0.0f), splat(0.0f), splat(0.0f)};
  float rest_a = 0.0f, rest_b = 0.0f;
  const Floats sums = detail::fold_row(
      x, n,
      [&](const int k, Floats acc, Floats v) {
        const Floats d = v - s;
        squares[k] = fmadd(d, d, squares[k]);
        return acc + d;
      },
      [&](std::int64_t c) {
        const float d = float(x[c]) - shift;
        rest_a += d;
        rest_b += d * d;
      });
  a = reduce_add(sums) + rest_a;
  b = reduce_add((squares[0] + squares[1]) + (squares[2] + squares[3])) + rest_b;
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

#if defined(ROOFTOP_HAS_AVX512_CONVERT)
ROOFTOP_AVX512_WARNINGS_OFF
/// The partials of reduce_inputs' fold (kernels/reduce.hpp's sum and nrm2) over x[0, n) of a
/// 2-byte T, each value widened as it is loaded instead of through a widened copy in L1: part[k]
/// receives elements k, k + lanes, k + 2 lanes, ... in turn, as detail::fold_lanes adds them
/// (64 fp32 partials for the sum; 32 fp64 ones for the sum of squares, each square exact in
/// fp64), so the result is bit for bit the portable fold's. (The array extents are the AVX-512
/// ReductionShape's lanes: a caller folding another number does not compile.)
template <class T>
inline void sum_partials(const T* x, std::int64_t n, float (&part)[64]) {
  static_assert(sizeof(T) == 2, "sum_partials: bf16 or fp16");
  __m512 p[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  std::int64_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (int k = 0; k < 4; ++k) p[k] = _mm512_add_ps(p[k], load16(x + i + 16 * k));
  for (int k = 0; k < 4; ++k) _mm512_storeu_ps(part + 16 * k, p[k]);
  for (int k = 0; i + k < n; ++k) part[k] += float(x[i + k]);
}
template <class T>
inline void sum_square_partials(const T* x, std::int64_t n, double (&part)[32]) {
  static_assert(sizeof(T) == 2, "sum_square_partials: bf16 or fp16");
  __m512d p[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int h = 0; h < 2; ++h) {
      const __m512 v = load16(x + i + 16 * h);
      const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
      const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
      p[2 * h] = _mm512_fmadd_pd(lo, lo, p[2 * h]);
      p[2 * h + 1] = _mm512_fmadd_pd(hi, hi, p[2 * h + 1]);
    }
  for (int k = 0; k < 4; ++k) _mm512_storeu_pd(part + 8 * k, p[k]);
  for (int k = 0; i + k < n; ++k) {
    const double v = float(x[i + k]);
    part[k] += v * v;
  }
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

}  // namespace rooftop::cpu
