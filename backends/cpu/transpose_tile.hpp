// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Transposing one small square tile in registers on the host: `tile_edge<T>` elements on a
/// side, as many as one vector register holds of a row (AVX: 4 fp64, 8 fp32; AVX2: 16 of a
/// 2-byte type, SSE2: 8). The tile's rows are loaded whole, shuffled (unpack, shuffle, lane
/// permute) and stored whole, where GCC 12 turns the portable loop into one load and one
/// store per element. Hosts without the instructions get that loop. (Built here with
/// -mno-avx2 and with -mno-avx, test_transpose passed on the SSE2 and portable paths too.)
#pragma once

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
  if constexpr (sizeof(T) == 2) {  // 16 x 16: each lane of rows 0-7 and of rows 8-15 transposed, lanes then joined
    __m256i r[2][8], t[2][8];
    auto lo16 = [](__m256i a, __m256i b) { return _mm256_unpacklo_epi16(a, b); };
    auto hi16 = [](__m256i a, __m256i b) { return _mm256_unpackhi_epi16(a, b); };
    auto lo32 = [](__m256i a, __m256i b) { return _mm256_unpacklo_epi32(a, b); };
    auto hi32 = [](__m256i a, __m256i b) { return _mm256_unpackhi_epi32(a, b); };
    auto lo64 = [](__m256i a, __m256i b) { return _mm256_unpacklo_epi64(a, b); };
    auto hi64 = [](__m256i a, __m256i b) { return _mm256_unpackhi_epi64(a, b); };
    for (int h = 0; h < 2; ++h) {
      for (int i = 0; i < 8; ++i) r[h][i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + (8 * h + i) * src_stride));
      detail::transpose_8x8_epi16(r[h], t[h], lo16, hi16, lo32, hi32, lo64, hi64);
    }
    for (int k = 0; k < 8; ++k) {  // t[h][k]: column k of rows 8h..8h+7 in lane 0, column k + 8 in lane 1
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k * dst_stride), _mm256_permute2x128_si256(t[0][k], t[1][k], 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (k + 8) * dst_stride), _mm256_permute2x128_si256(t[0][k], t[1][k], 0x31));
    }
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

}  // namespace rooftop::cpu
