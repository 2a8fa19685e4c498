// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// A stretch of one interior row of the 7-point stencil (kernels/stencil.hpp's stencil_rows)
/// with AVX-512 or AVX2, for fp64, fp32, bf16 and fp16 grids: a vector of points per step, whose
/// neighbours along the row (k - 1 and k + 1) are the centre vectors before and after it
/// shifted by one lane (valignd / valignq), not two more loads. Each load of a row that does
/// not start on a 64-byte line takes two lines, so the six loads of the plain loop took eleven
/// line reads per vector and the four left take seven. One thread, rows in L1, Zen 5 VM,
/// TSC cycles per point (rows of 256 on 64-byte lines / rows of 323): fp64 0.50 -> 0.36 /
/// 0.71 -> 0.58, fp32 0.23 -> 0.13 / 0.32 -> 0.24; bf16 rows of 406 0.50 -> 0.44. The harness
/// (2 threads, three alternations with the previous build) gained less, the grid's planes
/// coming from L2 and L3: in cache fp64 81^3 57-62 -> 65-67 GB/s, fp32 102^3 61-66 -> 66-70,
/// bf16 128^3 within noise; from memory within noise.
#pragma once

#include "avx512_warnings.hpp"
#include "convert.hpp"

#include <cstdint>
#include <type_traits>

#if defined(ROOFTOP_HAS_AVX512_CONVERT) || defined(ROOFTOP_HAS_AVX2_LANES)
#define ROOFTOP_HAS_STENCIL_SPAN 1
#endif

namespace rooftop::cpu {

/// Whether stencil_span exists (AVX-512 or AVX2 hosts): kernels/stencil.hpp's row sweep takes
/// 2-byte grids only with it.
inline constexpr bool has_stencil_span =
#if defined(ROOFTOP_HAS_STENCIL_SPAN)
    true;
#else
    false;
#endif

#if defined(ROOFTOP_HAS_STENCIL_SPAN)
ROOFTOP_AVX512_WARNINGS_OFF
#endif
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
namespace detail {
/// The vector type of a stencil over T, its lanes, and the loads, shifts and arithmetic on it:
/// double for fp64, float for fp32, bf16 and fp16 (widened as loaded, narrowed as stored).
template <class T>
struct StencilLanes {
  using V = __m512;
  static constexpr std::int64_t lanes = 16;
  static V load(const T* p) { return load16(p); }
  static void store(T* p, V v) { store16(p, v); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V add(V x, V y) { return _mm512_add_ps(x, y); }
  static V mul(V x, V y) { return _mm512_mul_ps(x, y); }
  static V fma(V x, V y, V z) { return _mm512_fmadd_ps(x, y, z); }
  /// The lanes of (before, at) one lane back: before's last, then at's first fifteen.
  static V back(V before, V at) { return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(at), _mm512_castps_si512(before), 15)); }
  /// The lanes of (at, after) one lane on: at's last fifteen, then after's first.
  static V on(V at, V after) { return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(after), _mm512_castps_si512(at), 1)); }
};
template <>
struct StencilLanes<double> {
  using V = __m512d;
  static constexpr std::int64_t lanes = 8;
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static V set1(double x) { return _mm512_set1_pd(x); }
  static V add(V x, V y) { return _mm512_add_pd(x, y); }
  static V mul(V x, V y) { return _mm512_mul_pd(x, y); }
  static V fma(V x, V y, V z) { return _mm512_fmadd_pd(x, y, z); }
  static V back(V before, V at) { return _mm512_castsi512_pd(_mm512_alignr_epi64(_mm512_castpd_si512(at), _mm512_castpd_si512(before), 7)); }
  static V on(V at, V after) { return _mm512_castsi512_pd(_mm512_alignr_epi64(_mm512_castpd_si512(after), _mm512_castpd_si512(at), 1)); }
};
}  // namespace detail
#elif defined(ROOFTOP_HAS_AVX2_LANES)
namespace detail {
/// The same in 256-bit registers (AVX2 hosts): eight floats, four doubles. A shift by one lane
/// across the register's two 128-bit halves is a half swap (vperm2f128) and a per-half align
/// (vpalignr) or shuffle (vshufpd).
template <class T>
struct StencilLanes {
  using V = __m256;
  static constexpr std::int64_t lanes = 8;
  static V load(const T* p) { return load8(p); }
  static void store(T* p, V v) {  // (bf16 goes through StencilPairs below)
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, fp16>, "StencilLanes (AVX2): fp32 or fp16");
    if constexpr (std::is_same_v<T, float>) {
      _mm256_storeu_ps(p, v);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
  }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V add(V x, V y) { return _mm256_add_ps(x, y); }
  static V mul(V x, V y) { return _mm256_mul_ps(x, y); }
  static V fma(V x, V y, V z) { return _mm256_fmadd_ps(x, y, z); }
  static V back(V before, V at) {
    const __m256i halves = _mm256_castps_si256(_mm256_permute2f128_ps(before, at, 0x21));  // before's high half, at's low
    return _mm256_castsi256_ps(_mm256_alignr_epi8(_mm256_castps_si256(at), halves, 12));
  }
  static V on(V at, V after) {
    const __m256i halves = _mm256_castps_si256(_mm256_permute2f128_ps(at, after, 0x21));  // at's high half, after's low
    return _mm256_castsi256_ps(_mm256_alignr_epi8(halves, _mm256_castps_si256(at), 4));
  }
};
template <>
struct StencilLanes<double> {
  using V = __m256d;
  static constexpr std::int64_t lanes = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V set1(double x) { return _mm256_set1_pd(x); }
  static V add(V x, V y) { return _mm256_add_pd(x, y); }
  static V mul(V x, V y) { return _mm256_mul_pd(x, y); }
  static V fma(V x, V y, V z) { return _mm256_fmadd_pd(x, y, z); }
  static V back(V before, V at) { return _mm256_shuffle_pd(_mm256_permute2f128_pd(before, at, 0x21), at, 0x5); }
  static V on(V at, V after) { return _mm256_shuffle_pd(at, _mm256_permute2f128_pd(at, after, 0x21), 0x5); }
};

/// bf16 on AVX2: sixteen points per step, one 256-bit load of each input row as the even and
/// the odd points' values (cpu::load_pairs). Along the row an even point's west neighbour is
/// the odd point one lane back (the shift of StencilLanes) and its east one the odd point in its
/// lane; an odd point's west neighbour is the even point in its lane and its east one the even
/// point one lane on. The two results are rounded and merged in order (cpu::merge_pairs): no
/// widening or packing shuffles. Same sums in the same order as StencilLanes<bf16>. Zen 3 VM,
/// one process alternating both, best GB/s: 2 threads 406^3 13.0-13.2 -> 17.2-17.5 (two runs),
/// 128^3 14.7 -> 19.4; one thread 64^3 6.9 -> 8.4.
struct StencilPairs {
  static constexpr std::int64_t lanes = 16;
  using L = StencilLanes<float>;
  static void span(const bf16* c, bf16* at, std::int64_t k0, std::int64_t k1, std::int64_t nz, std::int64_t plane, float a, float b) {
    const __m256 va = L::set1(a), vb = L::set1(b);
    auto step = [&](const std::int64_t k, const Bf16Pairs& before, const Bf16Pairs& centre, const Bf16Pairs& after) {
      const __m256 e = centre.even, o = centre.odd;
      const Bf16Pairs ym = load_pairs(c + k - nz), yp = load_pairs(c + k + nz), zm = load_pairs(c + k - plane), zp = load_pairs(c + k + plane);
      const __m256 across_e = L::add(L::add(L::add(L::back(before.odd, o), o), L::add(ym.even, yp.even)), L::add(zm.even, zp.even));
      const __m256 across_o = L::add(L::add(L::add(e, L::on(e, after.even)), L::add(ym.odd, yp.odd)), L::add(zm.odd, zp.odd));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(at + k),
                          merge_pairs(L::fma(va, e, L::mul(vb, across_e)), L::fma(va, o, L::mul(vb, across_o))));
    };
    Bf16Pairs before = load_pairs(c + k0 - lanes), centre = load_pairs(c + k0);
    std::int64_t k = k0;
    for (; k + lanes <= k1; k += lanes) {
      const Bf16Pairs after = load_pairs(c + k + lanes);
      step(k, before, centre, after);
      before = centre;
      centre = after;
    }
    if (k < k1) {
      k = k1 - lanes;
      step(k, load_pairs(c + k - lanes), load_pairs(c + k), load_pairs(c + k + lanes));
    }
  }
};
}  // namespace detail
#endif

#if defined(ROOFTOP_HAS_STENCIL_SPAN)
/// Lanes of a stencil_span step over T (AVX-512: 16, or 8 for double; AVX2: 8, 4 for double, 16
/// for bf16): its spans must be at least this long.
template <class T>
inline constexpr std::int64_t stencil_lanes =
#if defined(ROOFTOP_HAS_AVX2_LANES)
    std::is_same_v<T, bf16> ? detail::StencilPairs::lanes :
#endif
    detail::StencilLanes<T>::lanes;

/// at[k] = a c[k] + b ((c[k-1] + c[k+1]) + (c[k-nz] + c[k+nz]) + (c[k-plane] + c[k+plane])) for
/// k in [k0, k1), k1 - k0 >= stencil_lanes<T>; a and b in compute_t<T> (the centre's product
/// fused with the sum's). c is an interior row of a dense grid with rows of nz and planes of
/// `plane`: the row before it and the one after it, and the planes, are read around it, a
/// vector beyond [k0 - 1, k1] at most, which lies in those rows. The step's last vector,
/// where k1 - k0 is not a whole number of them, is computed again at k1 - lanes (the same
/// values) from its own loads.
template <class T, class C>
[[gnu::always_inline]] inline void stencil_span(const T* c, T* at, std::int64_t k0, std::int64_t k1, std::int64_t nz, std::int64_t plane, C a, C b) {
#if defined(ROOFTOP_HAS_AVX2_LANES)
  if constexpr (std::is_same_v<T, bf16>) {
    detail::StencilPairs::span(c, at, k0, k1, nz, plane, a, b);
  } else
#endif
  {
  using L = detail::StencilLanes<T>;
  using V = typename L::V;
  constexpr std::int64_t lanes = L::lanes;
  const V va = L::set1(a), vb = L::set1(b);
  auto point = [&](const std::int64_t k, const V west, const V centre, const V east) {
    const V across = L::add(L::add(L::add(west, east), L::add(L::load(c + k - nz), L::load(c + k + nz))),
                            L::add(L::load(c + k - plane), L::load(c + k + plane)));
    L::store(at + k, L::fma(va, centre, L::mul(vb, across)));
  };
  V before = L::load(c + k0 - lanes), centre = L::load(c + k0);
  std::int64_t k = k0;
  for (; k + lanes <= k1; k += lanes) {
    const V after = L::load(c + k + lanes);
    point(k, L::back(before, centre), centre, L::on(centre, after));
    before = centre;
    centre = after;
  }
  if (k < k1) {
    k = k1 - lanes;
    point(k, L::load(c + k - 1), L::load(c + k), L::load(c + k + 1));
  }
  }
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

}  // namespace rooftop::cpu
