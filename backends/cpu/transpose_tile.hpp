// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Transposing one small square tile in registers on the host: `tile_edge<T>` elements on a
/// side, as many as one vector register holds of a row (AVX: 4 fp64, 8 fp32; AVX2: 16 of a
/// 2-byte type, SSE2: 8). The tile's rows are loaded whole, shuffled (unpack, shuffle, lane
/// permute) and stored whole, where GCC 12 turns the portable loop into one load and one
/// store per element. Hosts without the instructions get that loop. (Built here with
/// -mno-avx2 and with -mno-avx, test_transpose passed on the SSE2 and portable paths too.)
/// With AVX-512, `transpose_line_tile<T>` moves a tile of one cache line on a side and streams
/// each row of the result straight from its register as one whole line.
#pragma once

#include "avx512_warnings.hpp"

#include <cstdint>

#if (defined(__SSE2__) || defined(_M_X64)) && !defined(__CUDA_ARCH__)
#include <immintrin.h>
#define ROOFTOP_HAS_SSE2_TILES 1
#endif

namespace rooftop::cpu {

/// Edge of the tile transpose_tile<T> moves.
template <class T>
inline constexpr std::int64_t tile_edge =
#if defined(__AVX2__) && defined(ROOFTOP_HAS_SSE2_TILES)
    sizeof(T) == 8 ? 4 : sizeof(T) == 2 ? 16 : 8;
#elif defined(__AVX__) && defined(ROOFTOP_HAS_SSE2_TILES)
    sizeof(T) == 8 ? 4 : 8;
#else
    8;
#endif

namespace detail {
/// The 8 x 8 transpose of two-byte values in each 128-bit lane of eight registers (V: __m128i
/// or __m256i): interleave 16-, then 32-, then 64-bit pairs. Row k of the result is out[k].
template <class V, class Lo16, class Hi16, class Lo32, class Hi32, class Lo64, class Hi64>
inline void transpose_8x8_epi16(V (&r)[8], V (&out)[8], Lo16 lo16, Hi16 hi16, Lo32 lo32, Hi32 hi32, Lo64 lo64, Hi64 hi64) {
  V t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = lo16(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = hi16(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i)
    for (int h = 0; h < 2; ++h) {
      r[4 * i + 2 * h] = lo32(t[4 * i + h], t[4 * i + 2 + h]);
      r[4 * i + 2 * h + 1] = hi32(t[4 * i + h], t[4 * i + 2 + h]);
    }
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = lo64(r[i], r[4 + i]);
    out[2 * i + 1] = hi64(r[i], r[4 + i]);
  }
}

#if defined(__AVX2__) && defined(ROOFTOP_HAS_SSE2_TILES)
/// The 16 x 16 transpose of two-byte values. Each register is loaded as two half rows, row i's
/// and row i + 8's eight values of one half of the columns (a 128-bit load and an insert from
/// memory), so that the 8 x 8 transposes within the 128-bit lanes leave whole columns: no lane
/// permutes. columns[k] is column k of the 16 rows (src's rows src_stride elements apart).
/// Against whole rows loaded and the lanes joined after (vperm2i128, eight macro-ops on Zen 1):
/// one thread, Zen 1 VM, a scratch program moving 128^2 and 256^2 tiles in L2, best of 400,
/// ns per value 0.21-0.22 -> 0.16-0.17 and 0.18-0.20 -> 0.15. The harness's bf16 and fp16
/// transposes there (`rooftop --ops transpose --rounds 1`, three alternations with the build
/// before) moved with the memory's phases more than that: 8000^2 8.0-13.6 -> 8.5-14.3 GB/s.
template <class T>
inline void transpose_16x16_epi16(const T* src, std::int64_t src_stride, __m256i (&columns)[16]) {
  __m256i r[2][8], t[2][8];
  auto lo16 = [](__m256i a, __m256i b) { return _mm256_unpacklo_epi16(a, b); };
  auto hi16 = [](__m256i a, __m256i b) { return _mm256_unpackhi_epi16(a, b); };
  auto lo32 = [](__m256i a, __m256i b) { return _mm256_unpacklo_epi32(a, b); };
  auto hi32 = [](__m256i a, __m256i b) { return _mm256_unpackhi_epi32(a, b); };
  auto lo64 = [](__m256i a, __m256i b) { return _mm256_unpacklo_epi64(a, b); };
  auto hi64 = [](__m256i a, __m256i b) { return _mm256_unpackhi_epi64(a, b); };
  auto half_row = [&](const std::int64_t i, const int h) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * src_stride + 8 * h)); };
  for (int h = 0; h < 2; ++h) {  // h: columns 8h..8h+7
    for (int i = 0; i < 8; ++i) r[h][i] = _mm256_inserti128_si256(_mm256_castsi128_si256(half_row(i, h)), half_row(i + 8, h), 1);
    transpose_8x8_epi16(r[h], t[h], lo16, hi16, lo32, hi32, lo64, hi64);
    for (int k = 0; k < 8; ++k) columns[8 * h + k] = t[h][k];
  }
}
#endif
}  // namespace detail

/// dst(c, r) = src(r, c) for r, c in [0, tile_edge<T>): src's rows src_stride elements apart,
/// dst's dst_stride apart. No alignment needed.
template <class T>
inline void transpose_tile(const T* src, std::int64_t src_stride, T* dst, std::int64_t dst_stride) {
  constexpr std::int64_t e = tile_edge<T>;
#if defined(__AVX__) && defined(ROOFTOP_HAS_SSE2_TILES)
  if constexpr (sizeof(T) == 8) {  // 4 x 4 doubles
    const auto* s = reinterpret_cast<const double*>(src);
    auto* d = reinterpret_cast<double*>(dst);
    const __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + src_stride), r2 = _mm256_loadu_pd(s + 2 * src_stride),
                  r3 = _mm256_loadu_pd(s + 3 * src_stride);
    const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);  // a0 b0 a2 b2, a1 b1 a3 b3
    const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
    _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
    _mm256_storeu_pd(d + dst_stride, _mm256_permute2f128_pd(t1, t3, 0x20));
    _mm256_storeu_pd(d + 2 * dst_stride, _mm256_permute2f128_pd(t0, t2, 0x31));
    _mm256_storeu_pd(d + 3 * dst_stride, _mm256_permute2f128_pd(t1, t3, 0x31));
    return;
  } else if constexpr (sizeof(T) == 4) {  // 8 x 8 floats
    const auto* s = reinterpret_cast<const float*>(src);
    auto* d = reinterpret_cast<float*>(dst);
    __m256 r[8], t[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(s + i * src_stride);
    for (int i = 0; i < 4; ++i) {  // pairs of rows interleaved: a0 b0 a1 b1 | a4 b4 a5 b5, a2 b2 a3 b3 | ...
      t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; ++i) {  // quads of rows: a0 b0 c0 d0 | a4 b4 c4 d4, ...
      r[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
      r[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
      r[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
      r[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; ++i) {  // the two quads' 128-bit halves joined
      _mm256_storeu_ps(d + i * dst_stride, _mm256_permute2f128_ps(r[i], r[4 + i], 0x20));
      _mm256_storeu_ps(d + (i + 4) * dst_stride, _mm256_permute2f128_ps(r[i], r[4 + i], 0x31));
    }
    return;
  }
#endif
#if defined(__AVX2__) && defined(ROOFTOP_HAS_SSE2_TILES)
  if constexpr (sizeof(T) == 2) {  // 16 x 16
    __m256i columns[16];
    detail::transpose_16x16_epi16(src, src_stride, columns);
    for (int k = 0; k < 16; ++k) _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k * dst_stride), columns[k]);
    return;
  }
#elif defined(ROOFTOP_HAS_SSE2_TILES)
  if constexpr (sizeof(T) == 2) {  // 8 x 8
    __m128i r[8], t[8];
    auto lo16 = [](__m128i a, __m128i b) { return _mm_unpacklo_epi16(a, b); };
    auto hi16 = [](__m128i a, __m128i b) { return _mm_unpackhi_epi16(a, b); };
    auto lo32 = [](__m128i a, __m128i b) { return _mm_unpacklo_epi32(a, b); };
    auto hi32 = [](__m128i a, __m128i b) { return _mm_unpackhi_epi32(a, b); };
    auto lo64 = [](__m128i a, __m128i b) { return _mm_unpacklo_epi64(a, b); };
    auto hi64 = [](__m128i a, __m128i b) { return _mm_unpackhi_epi64(a, b); };
    for (int i = 0; i < 8; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * src_stride));
    detail::transpose_8x8_epi16(r, t, lo16, hi16, lo32, hi32, lo64, hi64);
    for (int k = 0; k < 8; ++k) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + k * dst_stride), t[k]);
    return;
  }
#endif
  for (std::int64_t c = 0; c < e; ++c)
    for (std::int64_t r = 0; r < e; ++r) dst[c * dst_stride + r] = src[r * src_stride + c];
}

#if defined(__AVX512F__)
ROOFTOP_AVX512_WARNINGS_OFF
#endif

/// Whether transpose_line_tile<T> exists: AVX-512F hosts, 2-, 4- and 8-byte T; AVX2 hosts,
/// 2-byte T (see line_tiles_pay).
template <class T>
inline constexpr bool has_line_tiles =
#if defined(__AVX512F__) && defined(ROOFTOP_HAS_SSE2_TILES)
    sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8;
#elif defined(__AVX2__) && defined(ROOFTOP_HAS_SSE2_TILES)
    sizeof(T) == 2;
#else
    false;
#endif

/// Whether the line tiles (kernels/transpose.hpp's transpose_lines) are the faster transpose
/// of T, where has_line_tiles<T>, for src rows `src_row_bytes` apart: always with AVX-512;
/// with AVX2 (2-byte T) unless the rows are a multiple of 4 KB apart, where the lines a step
/// reads fall into a few L2 sets. Zen 3 VM, 2 threads, scratch program alternating with
/// HostTranspose, GB/s: bf16 8160 x 8160 20.7-26.6 -> 25.4-33.3 (five alternations), 8192 x
/// 8192 17.9-20.6 -> 16.5-18.4 (three); fp32 and fp64 (AVX2 line tiles of four 8 x 8 or 4 x 4
/// register tiles, not kept) within the noise at 4096^2 and 5760^2.
template <class T>
inline bool line_tiles_pay(std::int64_t src_row_bytes) {
#if defined(__AVX512F__)
  (void)src_row_bytes;
  return true;
#else
  return src_row_bytes % 4096 != 0;
#endif
}

/// Edge of the tile transpose_line_tile<T> moves: one cache line of T (8 fp64, 16 fp32, 32
/// of a 2-byte type).
template <class T>
inline constexpr std::int64_t line_tile_edge = 64 / static_cast<std::int64_t>(sizeof(T));

#if defined(__AVX512F__) && defined(ROOFTOP_HAS_SSE2_TILES)
/// The rows of the transposed tile dst(c, r) = src(r, c), r, c in [0, line_tile_edge<T>), with
/// AVX-512F (2-byte T also without AVX-512BW): the tile's rows loaded whole into 512-bit
/// registers and shuffled; put(c, v) receives row c of the result, one cache line of T in v.
/// src needs no alignment.
template <class T, class Put>
[[gnu::always_inline]] inline void transpose_line_tile_rows(const T* src, std::int64_t src_stride, const Put& put) {
  if constexpr (sizeof(T) == 8) {  // 8 x 8 doubles
    const auto* s = reinterpret_cast<const double*>(src);
    __m512d r[8], t[8];
    for (int k = 0; k < 8; ++k) r[k] = _mm512_loadu_pd(s + k * src_stride);
    for (int k = 0; k < 4; ++k) {  // t[2k]: columns 0, 2, 4, 6 of rows 2k and 2k+1 interleaved; t[2k+1]: 1, 3, 5, 7
      t[2 * k] = _mm512_unpacklo_pd(r[2 * k], r[2 * k + 1]);
      t[2 * k + 1] = _mm512_unpackhi_pd(r[2 * k], r[2 * k + 1]);
    }
    for (int h = 0; h < 2; ++h) {  // the even (h = 0) and the odd columns
      // 128-bit lanes regrouped: columns h and 4+h (0x88), 2+h and 6+h (0xdd), of rows 0-3 and of rows 4-7
      const __m512d u0 = _mm512_shuffle_f64x2(t[h], t[2 + h], 0x88), u1 = _mm512_shuffle_f64x2(t[h], t[2 + h], 0xdd);
      const __m512d v0 = _mm512_shuffle_f64x2(t[4 + h], t[6 + h], 0x88), v1 = _mm512_shuffle_f64x2(t[4 + h], t[6 + h], 0xdd);
      put(h, _mm512_castpd_si512(_mm512_shuffle_f64x2(u0, v0, 0x88)));
      put(2 + h, _mm512_castpd_si512(_mm512_shuffle_f64x2(u1, v1, 0x88)));
      put(4 + h, _mm512_castpd_si512(_mm512_shuffle_f64x2(u0, v0, 0xdd)));
      put(6 + h, _mm512_castpd_si512(_mm512_shuffle_f64x2(u1, v1, 0xdd)));
    }
  } else if constexpr (sizeof(T) == 2) {  // 32 x 32
#if defined(__AVX512BW__)
    // Each group of 8 rows transposed 8 x 8 within each 128-bit lane (the lane holds 8
    // columns); then for each k the four groups' registers k, whose lane L holds column 8L + k
    // of the group's rows, regrouped by a 4 x 4 transpose of 128-bit lanes into the columns
    // k, 8 + k, 16 + k and 24 + k of all 32 rows. 160 512-bit shuffles per tile, against 288
    // 256-bit ones as four AVX2 16 x 16 tiles.
    auto lo16 = [](__m512i a, __m512i b) { return _mm512_unpacklo_epi16(a, b); };
    auto hi16 = [](__m512i a, __m512i b) { return _mm512_unpackhi_epi16(a, b); };
    auto lo32 = [](__m512i a, __m512i b) { return _mm512_unpacklo_epi32(a, b); };
    auto hi32 = [](__m512i a, __m512i b) { return _mm512_unpackhi_epi32(a, b); };
    auto lo64 = [](__m512i a, __m512i b) { return _mm512_unpacklo_epi64(a, b); };
    auto hi64 = [](__m512i a, __m512i b) { return _mm512_unpackhi_epi64(a, b); };
    __m512i g[4][8];
    for (int h = 0; h < 4; ++h) {
      __m512i r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_si512(src + (8 * h + i) * src_stride);
      detail::transpose_8x8_epi16(r, g[h], lo16, hi16, lo32, hi32, lo64, hi64);
    }
    for (int k = 0; k < 8; ++k) {
      const __m512i a = _mm512_shuffle_i32x4(g[0][k], g[1][k], 0x44), b = _mm512_shuffle_i32x4(g[2][k], g[3][k], 0x44);
      const __m512i c = _mm512_shuffle_i32x4(g[0][k], g[1][k], 0xee), d = _mm512_shuffle_i32x4(g[2][k], g[3][k], 0xee);
      put(k, _mm512_shuffle_i32x4(a, b, 0x88));
      put(8 + k, _mm512_shuffle_i32x4(a, b, 0xdd));
      put(16 + k, _mm512_shuffle_i32x4(c, d, 0x88));
      put(24 + k, _mm512_shuffle_i32x4(c, d, 0xdd));
    }
#else
    // Without AVX-512BW: four 16 x 16 tiles, a column of the top one and of the bottom one per line.
    __m256i top[16], bottom[16];
    for (int h = 0; h < 2; ++h) {  // columns 16h..16h+15
      detail::transpose_16x16_epi16(src + 16 * h, src_stride, top);
      detail::transpose_16x16_epi16(src + 16 * src_stride + 16 * h, src_stride, bottom);
      for (int k = 0; k < 16; ++k) put(16 * h + k, _mm512_inserti64x4(_mm512_castsi256_si512(top[k]), bottom[k], 1));
    }
#endif
  } else {  // 16 x 16 floats
    const auto* s = reinterpret_cast<const float*>(src);
    __m512 r[16], t[16];
    for (int k = 0; k < 16; ++k) r[k] = _mm512_loadu_ps(s + k * src_stride);
    for (int k = 0; k < 8; ++k) {  // pairs of rows interleaved (32-bit)
      t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
      t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    for (int k = 0; k < 4; ++k) {  // quads of rows (64-bit): r[4k+m] holds columns m, 4+m, 8+m, 12+m of rows 4k..4k+3
      const __m512d a = _mm512_castps_pd(t[4 * k]), b = _mm512_castps_pd(t[4 * k + 1]);
      const __m512d c = _mm512_castps_pd(t[4 * k + 2]), e = _mm512_castps_pd(t[4 * k + 3]);
      r[4 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
      r[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
      r[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, e));
      r[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, e));
    }
    for (int m = 0; m < 4; ++m) {  // the 4 x 4 transpose of 128-bit lanes across the four quads
      const __m512 v0 = _mm512_shuffle_f32x4(r[m], r[4 + m], 0x88), v1 = _mm512_shuffle_f32x4(r[m], r[4 + m], 0xdd);
      const __m512 w0 = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0x88), w1 = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0xdd);
      put(m, _mm512_castps_si512(_mm512_shuffle_f32x4(v0, w0, 0x88)));
      put(m + 4, _mm512_castps_si512(_mm512_shuffle_f32x4(v1, w1, 0x88)));
      put(m + 8, _mm512_castps_si512(_mm512_shuffle_f32x4(v0, w0, 0xdd)));
      put(m + 12, _mm512_castps_si512(_mm512_shuffle_f32x4(v1, w1, 0xdd)));
    }
  }
}
#endif

/// dst(c, r) = src(r, c) for r, c in [0, line_tile_edge<T>), where has_line_tiles<T>: with
/// AVX-512 the rows of transpose_line_tile_rows, each streamed as one whole cache line straight
/// from its register (no buffer); with AVX2 (32 x 32 two-byte values), as four 16 x 16
/// register tiles, each line streamed as two halves in a row: the column's values from the top
/// tile, then from the bottom one. dst + c * dst_stride must be 64-byte aligned for every c;
/// src needs no alignment. The caller fences.
template <class T>
[[gnu::always_inline]] inline void transpose_line_tile(const T* src, std::int64_t src_stride, T* dst, std::int64_t dst_stride) {
  static_assert(has_line_tiles<T>, "transpose_line_tile: needs AVX-512F and a 2-, 4- or 8-byte T");
#if defined(__AVX512F__) && defined(ROOFTOP_HAS_SSE2_TILES)
  transpose_line_tile_rows(src, src_stride, [&](const int c, const __m512i v) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + c * dst_stride), v);
  });
#elif defined(__AVX2__) && defined(ROOFTOP_HAS_SSE2_TILES)
  __m256i top[16], bottom[16];
  for (int h = 0; h < 2; ++h) {  // columns 16h..16h+15
    detail::transpose_16x16_epi16(src + 16 * h, src_stride, top);
    detail::transpose_16x16_epi16(src + 16 * src_stride + 16 * h, src_stride, bottom);
    for (int k = 0; k < 16; ++k) {
      auto* const line = reinterpret_cast<__m256i*>(dst + (16 * h + k) * dst_stride);
      _mm256_stream_si256(line, top[k]);
      _mm256_stream_si256(line + 1, bottom[k]);
    }
  }
#else
  (void)src, (void)src_stride, (void)dst, (void)dst_stride;
#endif
}

/// Whether transpose_line_tile_stored<T> exists: AVX-512F hosts, 2-, 4- and 8-byte T.
template <class T>
inline constexpr bool has_stored_line_tiles =
#if defined(__AVX512F__) && defined(ROOFTOP_HAS_SSE2_TILES)
    sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8;
#else
    false;
#endif

/// transpose_line_tile_rows with each row stored plainly (AVX-512F), at dst + c * dst_stride
/// (no alignment needed).
template <class T>
[[gnu::always_inline]] inline void transpose_line_tile_stored(const T* src, std::int64_t src_stride, T* dst, std::int64_t dst_stride) {
  static_assert(has_stored_line_tiles<T>, "transpose_line_tile_stored: needs AVX-512F and a 2-, 4- or 8-byte T");
#if defined(__AVX512F__) && defined(ROOFTOP_HAS_SSE2_TILES)
  transpose_line_tile_rows(src, src_stride, [&](const int c, const __m512i v) { _mm512_storeu_si512(dst + c * dst_stride, v); });
#else
  (void)src, (void)src_stride, (void)dst, (void)dst_stride;
#endif
}

/// Whether ShiftedLines<T> exists: AVX-512F hosts, 4- and 8-byte T, and 2-byte T with
/// AVX-512BW (its 16-bit lane permute).
template <class T>
inline constexpr bool has_shifted_lines = has_stored_line_tiles<T> &&
#if defined(__AVX512BW__)
                                          true;
#else
                                          sizeof(T) != 2;
#endif

/// Declared on every host, defined where has_shifted_lines<T>.
template <class T>
struct ShiftedLines;

#if defined(__AVX512F__) && defined(ROOFTOP_HAS_SSE2_TILES)
/// The whole cache lines of e = line_tile_edge<T> dst rows that do not start on a line
/// boundary, from line tiles transposed one after another down a strip of src columns
/// (kernels/transpose.hpp's transpose_shifted_lines). Row c of the strip has its first line
/// boundary `s_c` elements in (0 <= s_c < e); the line of it that ends s_c elements into the
/// tile at src rows [i, i + e) is the previous tile's row c from lane s_c on, then this tile's
/// row c up to lane s_c: one two-register lane permute (vpermt2w/d/q) of the two, whose index
/// (s_c + k in lane k) is kept per row. Every such line is streamed whole and aligned.
template <class T>
struct ShiftedLines {
  static constexpr int e = static_cast<int>(line_tile_edge<T>);
  alignas(64) __m512i index[e];  // lane k: s_c + k
  int shift[e];                  // s_c
  __m512i before[e];             // the previous tile's rows

  /// Shifts for rows whose first elements lie at `first` and `stride` elements apart (the
  /// strip's row c starts at first + c * stride; a strip's rows repeat the same shifts where
  /// strips start e rows apart, as e * stride elements are whole lines).
  ShiftedLines(const T* first, std::int64_t stride) {
    static_assert(has_shifted_lines<T>, "ShiftedLines: needs AVX-512F (and AVX-512BW for 2-byte T)");
    for (int c = 0; c < e; ++c) {
      const auto misaligned = static_cast<int>((reinterpret_cast<std::uintptr_t>(first + c * stride) & 63) / sizeof(T));
      shift[c] = (e - misaligned) % e;
      if constexpr (sizeof(T) == 2) {
        index[c] = _mm512_add_epi16(_mm512_set1_epi16(static_cast<short>(shift[c])), iota());
      } else if constexpr (sizeof(T) == 4) {
        index[c] = _mm512_add_epi32(_mm512_set1_epi32(shift[c]), iota());
      } else {
        index[c] = _mm512_add_epi64(_mm512_set1_epi64(shift[c]), iota());
      }
    }
  }
  static __m512i iota() {
    if constexpr (sizeof(T) == 2) {
      return _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4,
                              3, 2, 1, 0);
    } else if constexpr (sizeof(T) == 4) {
      return _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    } else {
      return _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    }
  }
  /// Lanes [lo, hi) of a register of T (hi <= e <= 32).
  static std::uint64_t lanes(int lo, int hi) { return ((std::uint64_t{1} << hi) - 1) & ~((std::uint64_t{1} << lo) - 1); }
  /// Stores the lanes [lo, hi) of v at p (lane k at p + k), plainly.
  static void store_lanes(T* p, __m512i v, int lo, int hi) {
    if constexpr (sizeof(T) == 2) {
      _mm512_mask_storeu_epi16(p, static_cast<__mmask32>(lanes(lo, hi)), v);
    } else if constexpr (sizeof(T) == 4) {
      _mm512_mask_storeu_epi32(p, static_cast<__mmask16>(lanes(lo, hi)), v);
    } else {
      _mm512_mask_storeu_epi64(p, static_cast<__mmask8>(lanes(lo, hi)), v);
    }
  }
  static __m512i join(__m512i a, __m512i index, __m512i b) {
    if constexpr (sizeof(T) == 2) {
      return _mm512_permutex2var_epi16(a, index, b);
    } else if constexpr (sizeof(T) == 4) {
      return _mm512_permutex2var_epi32(a, index, b);
    } else {
      return _mm512_permutex2var_epi64(a, index, b);
    }
  }

  /// Transposes the tile at src (src rows [i, i + e) of the strip's columns) and keeps its
  /// rows: the first tile of a walk down the strip.
  void start(const T* src, std::int64_t src_stride) {
    transpose_line_tile_rows(src, src_stride, [&](const int c, const __m512i v) { before[c] = v; });
  }
  /// As start, and streams, for each row c, the whole line ending s_c elements into this tile
  /// (row c's element i + s_c; dst_row(c) is the row's element 0).
  template <class Row>
  void step(const T* src, std::int64_t src_stride, const Row& dst_row, std::int64_t i) {
    transpose_line_tile_rows(src, src_stride, [&](const int c, const __m512i v) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst_row(c) + i - e + shift[c]), join(before[c], index[c], v));
      before[c] = v;
    });
  }
  /// Stores (plainly) each row's elements [0, s_c) from the kept tile, the strip's first
  /// (src rows [0, e)): the part of a line that the row before ends.
  template <class Row>
  void head(const Row& dst_row) const {
    for (int c = 0; c < e; ++c) store_lanes(dst_row(c), before[c], 0, shift[c]);
  }
  /// Stores (plainly) each row's elements [i - e + s_c, i) from the kept tile, the last of
  /// the strip's whole tiles (src rows [i - e, i)): the line's part before the rows past the
  /// last whole tile, which are copied by others.
  template <class Row>
  void tail(const Row& dst_row, std::int64_t i) const {
    for (int c = 0; c < e; ++c) store_lanes(dst_row(c) + i - e, before[c], shift[c], e);
  }
};
#endif

#if defined(__AVX512F__)
ROOFTOP_AVX512_WARNINGS_ON
#endif

}  // namespace rooftop::cpu
