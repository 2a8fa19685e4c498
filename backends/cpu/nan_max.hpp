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

namespace detail {
/// What nan_max and max_of_bits walk: x[0, n), or (region > 0) the four runs x[k region, k
/// region + count), k < 4. In registers of w lanes, register k of step s loads at start(k, w)
/// + s advance(w) for s < steps(w): a register of each run per step, or of contiguous x four
/// side by side; rest(done, f) calls f on the elements after the first `done` of each run (of
/// x), one by one.
template <class T>
struct FourRuns {
  const T* x;
  std::int64_t n, region, count;
  bool regions() const { return region > 0; }
  const T* start(int k, std::int64_t w) const { return x + k * (regions() ? region : w); }
  std::int64_t advance(std::int64_t w) const { return regions() ? w : 4 * w; }
  std::int64_t steps(std::int64_t w) const { return (regions() ? count : n) / advance(w); }
  template <class F>
  void rest(std::int64_t done, const F& f) const {
    for (int k = 0; k < (regions() ? 4 : 1); ++k)
      for (std::int64_t i = done; i < (regions() ? count : n); ++i) f(x[k * region + i]);
  }
};
}  // namespace detail

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
///
/// nan_max(x, n, region, count): the same over the four runs x[k * region, k * region + count),
/// k < 4, walked together, a register of each in turn. A reduction whose work items each take
/// the same span of four quarters of the data keeps four read streams in flight on each core,
/// where one walk from start to end keeps one: see core/reduction.hpp's reduce_regions.
template <class T>
T nan_max(const T* x, std::int64_t n, std::int64_t region = 0, std::int64_t count = 0) {
  T m = -std::numeric_limits<T>::infinity();
  bool nan = false;
  const detail::FourRuns<T> runs{x, n, region, count};
  std::int64_t done = 0;  // elements of x (of each run) taken in registers
#if defined(ROOFTOP_HAS_AVX_MAX)
  using Vec = detail::MaxVector<T>;
  using V = typename Vec::V;
  constexpr std::int64_t w = Vec::width;
  const T* const at[4] = {runs.start(0, w), runs.start(1, w), runs.start(2, w), runs.start(3, w)};
  const std::int64_t advance = runs.advance(w), steps = runs.steps(w);
  const V lowest = Vec::set1(m);
  V m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;
  V nan01 = Vec::set1(0), nan23 = Vec::set1(0);
  for (std::int64_t i = 0; i < steps * advance; i += advance) {
    const V v0 = Vec::load(at[0] + i), v1 = Vec::load(at[1] + i), v2 = Vec::load(at[2] + i), v3 = Vec::load(at[3] + i);
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
  done = steps * advance;
#endif
  runs.rest(done, [&](const T v) {
    nan |= v != v;
    m = v > m ? v : m;
  });
  return nan ? std::numeric_limits<T>::quiet_NaN() : m;
}

#if !defined(__CUDA_ARCH__) && defined(__AVX2__)
#define ROOFTOP_HAS_BITS_MAX 1
namespace detail {
/// A vector register of 16-bit lanes and the comparisons max_of_bits needs: 16 lanes, on
/// AVX-512 hosts too. With AVX-512BW's 32 lanes the loop ran slower (2 threads, Zen 5 VM, a
/// scratch program alternating both in one process, medians of 15-41, GB/s, bf16 / fp16: 2^27
/// values (memory) 45.9 / 45.5 -> 53.9 / 54.1 and 48.2 / 48.1 -> 65.4 / 66.1 in another phase,
/// one thread 23.0 / 22.8 -> 27.5 / 27.6; 8 MB (in cache) 86.4 / 85.4 -> 106.1 / 106.0).
struct BitsVector {
  using V = __m256i;
  static constexpr int width = 16;
  static V load(const void* p) { return _mm256_loadu_si256(static_cast<const V*>(p)); }
  static V set1(std::uint16_t v) { return _mm256_set1_epi16(static_cast<short>(v)); }
  static V max_signed(V a, V b) { return _mm256_max_epi16(a, b); }
  static V min_unsigned(V a, V b) { return _mm256_min_epu16(a, b); }
  static V max_unsigned(V a, V b) { return _mm256_max_epu16(a, b); }
  static void store(void* p, V v) { _mm256_storeu_si256(static_cast<V*>(p), v); }
};
}  // namespace detail

/// max of x[0, n) for a 2-byte sign-magnitude float T (bf16, fp16) whose exponent field is all
/// ones at `inf_bits` (0x7f80, 0x7c00), as float: NaN (quiet) if any element is NaN, -Inf if n
/// = 0. Compared on the bits, a register of sixteen per instruction, nothing widened: read as
/// int16, the non-negative values order as their values and are above every negative one, so
/// the largest signed is the max wherever one is non-negative; otherwise the max is the
/// negative of least magnitude, the smallest unsigned. NaN is a
/// largest signed above +Inf or a largest unsigned above -Inf. Three running values per vector
/// (vpmaxsw, vpminuw, vpmaxuw), four vectors at a time; the tail one by one. (+0 beats -0
/// here; the fold's order decides that elsewhere.)
///
/// max_of_bits(x, n, inf_bits, region, count): the same over four runs walked together, as
/// nan_max's regions.
template <class T>
float max_of_bits(const T* x, std::int64_t n, std::uint16_t inf_bits, std::int64_t region = 0, std::int64_t count = 0) {
  static_assert(sizeof(T) == 2, "max_of_bits: a 2-byte type");
  using Vec = detail::BitsVector;
  constexpr int w = Vec::width;
  const detail::FourRuns<T> runs{x, n, region, count};
  if ((runs.regions() ? count : n) == 0) return -std::numeric_limits<float>::infinity();
  const T* const at[4] = {runs.start(0, w), runs.start(1, w), runs.start(2, w), runs.start(3, w)};
  const std::int64_t advance = runs.advance(w), steps = runs.steps(w);
  typename Vec::V smax[4], umin[4], umax[4];
  for (int k = 0; k < 4; ++k) {
    smax[k] = Vec::set1(0x8000);  // the least int16
    umin[k] = Vec::set1(0xffff);
    umax[k] = Vec::set1(0);
  }
  for (std::int64_t i = 0; i < steps * advance; i += advance)
    for (int k = 0; k < 4; ++k) {
      const auto v = Vec::load(at[k] + i);
      smax[k] = Vec::max_signed(smax[k], v);
      umin[k] = Vec::min_unsigned(umin[k], v);
      umax[k] = Vec::max_unsigned(umax[k], v);
    }
  std::int16_t sv[w];
  std::uint16_t lov[w], hiv[w];
  Vec::store(sv, Vec::max_signed(Vec::max_signed(smax[0], smax[1]), Vec::max_signed(smax[2], smax[3])));
  Vec::store(lov, Vec::min_unsigned(Vec::min_unsigned(umin[0], umin[1]), Vec::min_unsigned(umin[2], umin[3])));
  Vec::store(hiv, Vec::max_unsigned(Vec::max_unsigned(umax[0], umax[1]), Vec::max_unsigned(umax[2], umax[3])));
  std::int16_t top = sv[0];
  std::uint16_t least = lov[0], most = hiv[0];
  for (int k = 1; k < w; ++k) {
    top = sv[k] > top ? sv[k] : top;
    least = lov[k] < least ? lov[k] : least;
    most = hiv[k] > most ? hiv[k] : most;
  }
  runs.rest(steps * advance, [&](const T v) {
    const std::uint16_t b = v.bits;
    top = static_cast<std::int16_t>(b) > top ? static_cast<std::int16_t>(b) : top;
    least = b < least ? b : least;
    most = b > most ? b : most;
  });
  if (top > static_cast<std::int16_t>(inf_bits) || most > (0x8000u | inf_bits)) return std::numeric_limits<float>::quiet_NaN();
  return float(T::from_bits(top >= 0 ? static_cast<std::uint16_t>(top) : least));
}
#endif

}  // namespace rooftop::cpu
