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
/// bf16 128^3 within noise; from memory within noise. On AVX-512 hosts, large grids go through
/// stencil_streamed (below): the same vectors along memory order rather than along each row, a
/// cache line of out at a time, streamed straight from the registers.
#pragma once

#include "avx512_warnings.hpp"
#include "convert.hpp"
#include "streaming_store.hpp"

#include <algorithm>
#include <cmath>
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
/// The high 128-bit half of a and the low half of b, as one register (vperm2f128's 0x21). On
/// Zen 1 (GCC's znver1: -march=native there), which runs 256-bit operations as two 128-bit
/// halves, vperm2f128 is eight macro-ops and three cycles of its shuffle pipe; the high half
/// moved down (vextractf128) and b's low half inserted over it (vinsertf128) are three. One
/// thread, Zen 1 VM, rows in L2 (6 x 12 x 256 and x 320, a scratch copy of stencil_span, best of
/// twenty alternations), ns per point: fp64 1.35-1.36 -> 1.14-1.15, fp32 0.68-0.69 -> 0.57-0.58
/// (unaligned loads at k -+ 1 instead of the shifts: 1.33-1.39 / 0.70; 128-bit registers:
/// 1.18-1.19 / 0.61-0.63). The harness (`rooftop --ops stencil --rounds 1`, 2 threads, the
/// build before and this one alternated three times), GB/s: fp64 252^3 16.4-16.9 -> 18.3-18.5,
/// 51^3 (in cache) 21.3-21.4 -> 24.4-24.7; fp32 317^3 15.9 -> 17.1-17.2; bf16 400^3 7.2-7.8 ->
/// 7.5-7.6; fp16 6.2 -> 7.3. Elsewhere vperm2f128 is one operation, where the pair is two.
[[gnu::always_inline]] inline __m256 high_low(__m256 a, __m256 b) {
#if defined(__znver1__)
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_extractf128_ps(a, 1)), _mm256_castps256_ps128(b), 1);
#else
  return _mm256_permute2f128_ps(a, b, 0x21);
#endif
}
[[gnu::always_inline]] inline __m256d high_low(__m256d a, __m256d b) {
  return _mm256_castps_pd(high_low(_mm256_castpd_ps(a), _mm256_castpd_ps(b)));
}

/// The same in 256-bit registers (AVX2 hosts): eight floats, four doubles. A shift by one lane
/// across the register's two 128-bit halves is a half swap (high_low) and a per-half align
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
    const __m256i halves = _mm256_castps_si256(high_low(before, at));  // before's high half, at's low
    return _mm256_castsi256_ps(_mm256_alignr_epi8(_mm256_castps_si256(at), halves, 12));
  }
  static V on(V at, V after) {
    const __m256i halves = _mm256_castps_si256(high_low(at, after));  // at's high half, after's low
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
  static V back(V before, V at) { return _mm256_shuffle_pd(high_low(before, at), at, 0x5); }
  static V on(V at, V after) { return _mm256_shuffle_pd(at, high_low(at, after), 0x5); }
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
namespace detail {
#if defined(ROOFTOP_HAS_AVX512_CONVERT) && defined(__AVX512BW__)
/// A line of 32 bf16 as two registers of floats: its even points (each 32-bit lane's low half,
/// shifted up) and its odd points (the high halves, the low halves cleared), exactly (the
/// AVX-512 form of AVX2's cpu::load_pairs, a whole line at once).
struct Bf16Line {
  __m512 even, odd;
};
[[gnu::always_inline]] inline Bf16Line bf16_pairs(const bf16* p) {
  const __m512i v = _mm512_loadu_si512(p);
  return {_mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xffff0000u))))};
}
/// The bits of a line of 32 bf16 in order from its even and odd points' values, each rounded
/// as narrow<bf16> does: narrow32 of the two, then one permute to interleave them.
[[gnu::always_inline]] inline __m512i merge_bf16_pairs(__m512 even, __m512 odd) {
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18,
                                         2, 17, 1, 16, 0);  // lane 2i <- even i, lane 2i + 1 <- odd i
  return _mm512_permutexvar_epi16(order, narrow32<bf16>(even, odd));
}
#endif

/// One vector of points at c (k's vector of a row): a centre + b ((west + east) + (the rows
/// beside it in this plane) + (in the planes beside it)), west and east the row's own
/// neighbours (the centre vectors shifted), in the lanes L.
template <class L, class T, class V>
[[gnu::always_inline]] inline V stencil_point(const T* c, V west, V centre, V east, std::int64_t nz, std::int64_t plane, V a, V b) {
  const V across = L::add(L::add(L::add(west, east), L::add(L::load(c - nz), L::load(c + nz))), L::add(L::load(c - plane), L::load(c + plane)));
  return L::fma(a, centre, L::mul(b, across));
}
}  // namespace detail

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
  V before = L::load(c + k0 - lanes), centre = L::load(c + k0);
  std::int64_t k = k0;
  for (; k + lanes <= k1; k += lanes) {
    const V after = L::load(c + k + lanes);
    L::store(at + k, detail::stencil_point<L>(c + k, L::back(before, centre), centre, L::on(centre, after), nz, plane, va, vb));
    before = centre;
    centre = after;
  }
  if (k < k1) {
    k = k1 - lanes;
    L::store(at + k, detail::stencil_point<L>(c + k, L::load(c + k - 1), L::load(c + k), L::load(c + k + 1), nz, plane, va, vb));
  }
  }
}
#endif

#if defined(ROOFTOP_HAS_AVX512_CONVERT) && defined(__AVX512BW__)
#define ROOFTOP_HAS_STENCIL_STREAMED 1
/// Whether stencil_streamed exists (AVX-512 hosts with AVX512-BW).
inline constexpr bool has_stencil_streamed = true;

/// How far ahead (bytes) stencil_streamed prefetches, into L1, the three rows it reads from L2
/// (the next row of this plane and the rows beside it in the planes on either side).
inline constexpr std::int64_t stencil_l1_ahead = 1024;

/// The 7-point sweep's points [p0, p1) of a dense (nx, ny, nz) grid, counted in memory order
/// (p = (i ny + j) nz + k), written straight from the registers a cache line of out at a time
/// with streaming stores; the partial lines at both ends, which the points before p0 and after
/// p1 share, with plain stores. Interior points get stencil_span's values, boundary points their
/// own bits (copied). The vectors run along memory order, not along rows: a line may hold the
/// end of one row and the start of the next (rows that are not whole lines), and its boundary
/// lanes (k = 0, k = nz - 1, rows j = 0 and ny - 1) take the input's bits by a blend. Lines in
/// the boundary planes are copied; the few lines that reach into them from an interior plane, and
/// grids whose planes are shorter than two lines, are computed a point at a time. The caller
/// fences. Reads only inside the grid.
///
/// Against the sweep before (stencil_span into an L1 buffer whose completed lines were then
/// streamed, cpu::LineStream, which AVX2 hosts keep): a store and a load more per vector, and
/// the memory idle while the buffer filled. 2 threads, Zen 4 VM, a scratch program alternating
/// both in one process (taking turns to go first, each writing both outputs in turn), work items
/// of 32 KB runs in memory order (kernels/stencil.hpp has since cut the planes into slabs), median
/// GB/s of two runs of twenty, a copy beside them at 47-49: fp64 256^3 32.0-32.2 -> 39.0-39.7
/// (1.22x), fp32 323^3 41.2-42.0 -> 41.5-42.2 (1.01x), 320^3 34.7-35.8 -> 39.2-40.1 (1.12x), bf16
/// 406^3 28.0-28.2 -> 37.0-37.3 (1.32x), fp16 406^3 25.8-25.9 -> 30.3-30.5 (1.18x), 416^3 27.3-27.5
/// -> 29.5-29.7 (1.08x). The prefetch into L1 (stencil_l1_ahead): fp64 1.07-1.08x, fp32 1.02x,
/// 2-byte grids 1.00-1.02x. Before the lines inside a row went through a loop of their own (the
/// per-line tests in front of each), fp16 406^3 had lost 7% this way.
template <class T, class C>
inline void stencil_streamed(const T* in, T* out, std::int64_t p0, std::int64_t p1, std::int64_t nx, std::int64_t ny, std::int64_t nz, C a, C b) {
  using L = detail::StencilLanes<T>;
  using V = typename L::V;
  constexpr std::int64_t lanes = L::lanes, line = 64 / static_cast<std::int64_t>(sizeof(T));
  constexpr int per_line = static_cast<int>(line / lanes);  // vectors per line: 1, or 2 for 2-byte T
  const std::int64_t plane = ny * nz;
  auto boundary = [=](const std::int64_t p) {
    const std::int64_t i = p / plane, j = p / nz % ny, k = p % nz;
    return i == 0 || i == nx - 1 || j == 0 || j == ny - 1 || k == 0 || k == nz - 1;
  };
  // One point, the vectors' sums in the same order.
  auto point = [=](const std::int64_t p) {
    if (boundary(p)) return in[p];
    const C across = ((C(in[p - 1]) + C(in[p + 1])) + (C(in[p - nz]) + C(in[p + nz]))) + (C(in[p - plane]) + C(in[p + plane]));
    return T(std::fma(a, C(in[p]), b * across));
  };
  // The partial lines at the ends.
  const auto offset = static_cast<std::int64_t>((reinterpret_cast<std::uintptr_t>(out + p0) & 63) / sizeof(T));
  const std::int64_t first = offset == 0 ? p0 : std::min(p0 + line - offset, p1);
  const std::int64_t last = first + (p1 - first) / line * line;
  for (std::int64_t p = p0; p < first; ++p) out[p] = point(p);
  for (std::int64_t p = last; p < p1; ++p) out[p] = point(p);
  const V va = L::set1(a), vb = L::set1(b);
  const bool vectors = plane >= 2 * line;  // (the loads around an interior plane's lines stay in the grid)
  const std::int64_t last_plane = (nx - 1) * plane;
  V before{}, centre{};
  __m512 odd_before{};  // bf16: the odd points of the line before p's, and p's line (detail::bf16_pairs)
  detail::Bf16Line at{};
  bool rolling = false;  // before and centre (bf16: odd_before and at) hold the vectors before p and at p
  // The line at p computed and streamed, the lanes in `keep` (boundary points) given their own bits.
  auto line_at = [&](const std::int64_t p, const std::uint64_t keep) __attribute__((always_inline)) {
    const T* const c = in + p;
    for (const T* row : {c + nz, c - plane, c + plane}) _mm_prefetch(reinterpret_cast<const char*>(row) + stencil_l1_ahead, _MM_HINT_T0);
    prefetch_line(reinterpret_cast<const char*>(c + plane) + prefetch_distance);  // the plane read from memory, into L2
    __m512i bits;
    if constexpr (std::is_same_v<T, bf16>) {
      // The line's even and odd points in two registers (detail::bf16_pairs): along the row an
      // even point's neighbours are the odd points one lane back and in its lane, an odd
      // point's the even points in its lane and one lane on. No widening permutes (ten of the
      // line's fourteen shuffles). The same sums in the same order as stencil_point. Against the
      // widening lanes, Zen 4 VM: one thread in L2 (6 x 40 x 406), TSC cycles per point 0.437 ->
      // 0.384; 2 threads from memory, one process, medians of sixteen: 406^3 1.05-1.08x (40.9
      // GB/s), 416^3 1.11x (41.7), a copy beside them at 46-50. (Two of its ten adds as fmas by
      // one, for the FMA pipes: no faster.)
      using F = detail::StencilLanes<float>;
      if (!rolling) {
        odd_before = detail::bf16_pairs(c - line).odd;
        at = detail::bf16_pairs(c);
        rolling = true;
      }
      const detail::Bf16Line after = detail::bf16_pairs(c + line), ym = detail::bf16_pairs(c - nz), yp = detail::bf16_pairs(c + nz),
                             zm = detail::bf16_pairs(c - plane), zp = detail::bf16_pairs(c + plane);
      const __m512 across_even = F::add(F::add(F::add(F::back(odd_before, at.odd), at.odd), F::add(ym.even, yp.even)), F::add(zm.even, zp.even));
      const __m512 across_odd = F::add(F::add(F::add(at.even, F::on(at.even, after.even)), F::add(ym.odd, yp.odd)), F::add(zm.odd, zp.odd));
      bits = detail::merge_bf16_pairs(F::fma(va, at.even, F::mul(vb, across_even)), F::fma(va, at.odd, F::mul(vb, across_odd)));
      odd_before = at.odd;
      at = after;
    } else {
      if (!rolling) {
        before = L::load(c - lanes);
        centre = L::load(c);
        rolling = true;
      }
      V v[per_line];
      for (int u = 0; u < per_line; ++u) {
        const V after = L::load(c + (u + 1) * lanes);
        v[u] = detail::stencil_point<L>(c + u * lanes, L::back(before, centre), centre, L::on(centre, after), nz, plane, va, vb);
        before = centre;
        centre = after;
      }
      if constexpr (std::is_same_v<T, fp16>) {
        // Each half narrowed and streamed on its own: joined into one line by a lane insert
        // (narrow32), 406^3 and 416^3 ran 1.5-4% slower (2 threads, one process, two runs).
        for (int u = 0; u < 2; ++u) {
          __m256i half = narrow16<T>(v[u]);
          if (keep != 0)
            half = _mm256_mask_blend_epi16(static_cast<__mmask16>(keep >> (16 * u)), half, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 16 * u)));
          _mm256_stream_si256(reinterpret_cast<__m256i*>(out + p + 16 * u), half);
        }
        return;
      }
      if constexpr (per_line == 2) bits = narrow32<T>(v[0], v[1]);
      else if constexpr (sizeof(T) == 8) bits = _mm512_castpd_si512(v[0]);
      else bits = _mm512_castps_si512(v[0]);
    }
    if (keep != 0) {  // the boundary points' own bits
      const __m512i own = _mm512_loadu_si512(c);
      if constexpr (sizeof(T) == 8) bits = _mm512_mask_blend_epi64(static_cast<__mmask8>(keep), bits, own);
      else if constexpr (sizeof(T) == 4) bits = _mm512_mask_blend_epi32(static_cast<__mmask16>(keep), bits, own);
      else bits = _mm512_mask_blend_epi16(static_cast<__mmask32>(keep), bits, own);
    }
    _mm512_stream_si512(reinterpret_cast<__m512i*>(out + p), bits);
  };
  std::int64_t j = first / nz % ny, k = first % nz;  // the line's first point's row in its plane, and column
  for (std::int64_t p = first; p < last;) {
    // The lines before the one holding k = nz - 1, where p's row is an interior row of an
    // interior plane and k >= 1: all interior points, one after another.
    if (vectors && k >= 1 && j >= 1 && j <= ny - 2 && p >= plane && p < last_plane) {
      const std::int64_t n = std::min((nz - 1 - k) / line, (last - p) / line);
      for (std::int64_t q = 0; q < n; ++q) line_at(p + q * line, 0);
      p += n * line;
      k += n * line;
      if (p == last) break;
    }
    // One line with the rest of the rules.
    const T* const c = in + p;
    std::uint64_t keep = 0;  // the boundary lanes
    bool computed = vectors && p >= plane && p + line <= last_plane;
    constexpr std::uint64_t all = (std::uint64_t{1} << line) - 1;
    if (computed && nz > line && j >= 1 && j + (k + line > nz ? 1 : 0) <= ny - 2) {
      // In one interior row, or across the end of one into the next (rows longer than a line).
      keep = (k == 0 ? 1u : 0u) | (k + line > nz - 1 ? (std::uint64_t{3} << (nz - 1 - k)) & all : 0u);
    } else if (computed) {
      for (std::int64_t l = 0, jj = j, kk = k; l < line; jj = jj + 1 == ny ? 0 : jj + 1, kk = 0) {
        const std::int64_t run = std::min(nz - kk, line - l);  // lanes [l, l + run) lie in row jj
        if (jj == 0 || jj == ny - 1) {
          keep |= ((std::uint64_t{1} << run) - 1) << l;
        } else {
          if (kk == 0) keep |= std::uint64_t{1} << l;
          if (kk + run == nz) keep |= std::uint64_t{1} << (l + run - 1);
        }
        l += run;
      }
      computed = keep != all;
    }
    if (computed) {
      line_at(p, keep);
    } else {
      if (vectors && (p + line <= plane || p >= last_plane || keep != 0)) {
        _mm512_stream_si512(reinterpret_cast<__m512i*>(out + p), _mm512_loadu_si512(c));  // all boundary: copied
      } else {  // reaching into a boundary plane, or tiny planes
        alignas(64) T values[line];
        for (std::int64_t q = 0; q < line; ++q) values[q] = point(p + q);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(out + p), _mm512_load_si512(values));
      }
      rolling = false;
    }
    p += line;
    for (k += line; k >= nz; k -= nz) j = j + 1 == ny ? 0 : j + 1;
  }
}
#else
inline constexpr bool has_stencil_streamed = false;
#endif
#if defined(ROOFTOP_HAS_STENCIL_SPAN)
ROOFTOP_AVX512_WARNINGS_ON
#endif

}  // namespace rooftop::cpu
