// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The sums a norm row needs over contiguous fp32, bf16 or fp16 values with AVX-512, each value
/// widened as it is loaded (cpu::load16): sixteen lanes in four independent registers (a
/// multiply-add chain per register), the elements after the last whole block of 64 summed one
/// by one, the partials then combined in a fixed order. kernels/norm.hpp's statistics on
/// AVX-512 hosts: the portable fold read fp16 rows through a copy widened into scratch first
/// (a pass more over each row) and kept two registers of partials. Also the partials of
/// reduce.hpp's sum of bf16/fp16 and nrm2 of fp16 (sum_partials, sum_square_partials).
#pragma once

#include "avx512_warnings.hpp"
#include "convert.hpp"

#include <cstdint>

namespace rooftop::cpu {

#if defined(ROOFTOP_HAS_AVX512_CONVERT)
ROOFTOP_AVX512_WARNINGS_OFF
namespace detail {
/// Folds acc[k] = f(k, acc[k], v) over x[0, n) in blocks of 64 (v: sixteen values, k: which of
/// the four accumulators of sixteen lanes), then tail(c) for the elements after the last block;
/// returns the four accumulators summed.
template <class T, class F, class Tail>
[[gnu::always_inline]] inline __m512 fold_row(const T* x, std::int64_t n, const F& f, const Tail& tail) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  std::int64_t c = 0;
  for (; c + 64 <= n; c += 64)
    for (int k = 0; k < 4; ++k) acc[k] = f(k, acc[k], load16(x + c + 16 * k));
  for (; c < n; ++c) tail(c);
  return _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
}
}  // namespace detail

/// The sum of x[0, n).
template <class T>
inline float row_sum(const T* x, std::int64_t n) {
  float rest = 0.0f;
  const __m512 s = detail::fold_row(
      x, n, [](int, __m512 acc, __m512 v) { return _mm512_add_ps(acc, v); }, [&](std::int64_t c) { rest += float(x[c]); });
  return _mm512_reduce_add_ps(s) + rest;
}

/// The sum of squares of x[0, n).
template <class T>
inline float row_sum_squares(const T* x, std::int64_t n) {
  float rest = 0.0f;
  const __m512 s = detail::fold_row(
      x, n, [](int, __m512 acc, __m512 v) { return _mm512_fmadd_ps(v, v, acc); },
      [&](std::int64_t c) {
        const float v = float(x[c]);
        rest += v * v;
      });
  return _mm512_reduce_add_ps(s) + rest;
}

/// The sums of d = x[c] - shift and of d^2 over x[0, n), into a and b.
template <class T>
inline void row_deviation_sums(const T* x, std::int64_t n, float shift, float& a, float& b) {
  const __m512 s = _mm512_set1_ps(shift);
  __m512 squares[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  float rest_a = 0.0f, rest_b = 0.0f;
  const __m512 sums = detail::fold_row(
      x, n,
      [&](const int k, __m512 acc, __m512 v) {
        const __m512 d = _mm512_sub_ps(v, s);
        squares[k] = _mm512_fmadd_ps(d, d, squares[k]);
        return _mm512_add_ps(acc, d);
      },
      [&](std::int64_t c) {
        const float d = float(x[c]) - shift;
        rest_a += d;
        rest_b += d * d;
      });
  a = _mm512_reduce_add_ps(sums) + rest_a;
  b = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(squares[0], squares[1]), _mm512_add_ps(squares[2], squares[3]))) + rest_b;
}
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
