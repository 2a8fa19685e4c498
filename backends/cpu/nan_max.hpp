// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The NaN-propagating max of a contiguous block of floats or doubles on an AVX host, with
/// vmaxps/vmaxpd. GCC 12 vectorizes the portable fold (detail::NanMax over 16 or 32 partials)
/// only partly: for fp64 it leaves lanes scalar (vmaxsd, ucomisd, cmov), and which lanes
/// depends on how the select is written. rooftop::max over 16384 elements (in L2), one thread,
/// min of 3 x 15 runs, alternated twice, ns per element: fp64 0.362-0.363 portable -> 0.128-0.130
/// here (sum: 0.11), fp32 0.099 -> 0.079-0.083 (sum: 0.07-0.08).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#if !defined(__CUDA_ARCH__) && defined(__AVX__)
#include <immintrin.h>
#define ROOFTOP_HAS_AVX_MAX 1
#endif

namespace rooftop::cpu {

/// Whether nan_max<T> is available: float and double on AVX hosts.
template <class T>
inline constexpr bool has_vector_max =
#if defined(ROOFTOP_HAS_AVX_MAX)
    std::is_same_v<T, float> || std::is_same_v<T, double>;
#else
    false;
#endif

#if defined(ROOFTOP_HAS_AVX_MAX)
namespace detail {
/// One vector register of T: its width and the instructions nan_max needs.
template <class T>
struct MaxVector;
template <>
struct MaxVector<double> {
  using V = __m256d;
  static constexpr int width = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static V set1(double v) { return _mm256_set1_pd(v); }
  static V max(V a, V b) { return _mm256_max_pd(a, b); }
  static V unordered(V a, V b) { return _mm256_cmp_pd(a, b, _CMP_UNORD_Q); }
  static V bit_or(V a, V b) { return _mm256_or_pd(a, b); }
  static bool any(V m) { return _mm256_movemask_pd(m) != 0; }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
};
template <>
struct MaxVector<float> {
  using V = __m256;
  static constexpr int width = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V unordered(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_UNORD_Q); }
  static V bit_or(V a, V b) { return _mm256_or_ps(a, b); }
  static bool any(V m) { return _mm256_movemask_ps(m) != 0; }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
};
}  // namespace detail

#endif

/// max of x[0, n): NaN (quiet) if any element is NaN, -Inf if n = 0. With AVX, four running
/// maxima (vmaxps/vmaxpd, which drop a NaN) and, beside them, NaN found by comparing pairs of
/// loaded vectors unordered (one compare finds a NaN in either); elsewhere (and for the tail)
/// element by element (defined everywhere so callers compile; has_vector_max says when it
/// pays). max is exact, so the result does not depend on the order (but for the sign of a zero
/// max, as in any order of detail::NanMax).
template <class T>
T nan_max(const T* x, std::int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
  bool nan = false;
  std::int64_t i = 0;
#if defined(ROOFTOP_HAS_AVX_MAX)
  using Vec = detail::MaxVector<T>;
  using V = typename Vec::V;
  constexpr std::int64_t w = Vec::width, step = 4 * w;
  const V lowest = Vec::set1(m);
  V m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;
  V nan01 = Vec::set1(0), nan23 = Vec::set1(0);
  for (; i + step <= n; i += step) {
    const V v0 = Vec::load(x + i), v1 = Vec::load(x + i + w), v2 = Vec::load(x + i + 2 * w), v3 = Vec::load(x + i + 3 * w);
    m0 = Vec::max(m0, v0);
    m1 = Vec::max(m1, v1);
    m2 = Vec::max(m2, v2);
    m3 = Vec::max(m3, v3);
    nan01 = Vec::bit_or(nan01, Vec::unordered(v0, v1));
    nan23 = Vec::bit_or(nan23, Vec::unordered(v2, v3));
  }
  T lanes[w];
  Vec::store(lanes, Vec::max(Vec::max(m0, m1), Vec::max(m2, m3)));
  nan = Vec::any(Vec::bit_or(nan01, nan23));
  for (const T v : lanes) m = v > m ? v : m;
#endif
  for (; i < n; ++i) {
    nan |= x[i] != x[i];
    m = x[i] > m ? x[i] : m;
  }
  return nan ? std::numeric_limits<T>::quiet_NaN() : m;
}

}  // namespace rooftop::cpu
