// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// A block of consecutive CSR rows with the same structure, multiplied a vector of rows at a
/// time with AVX-512 (kernels/spmv.hpp's spmv_blocks): sixteen rows for fp32, bf16 and fp16
/// (eight for fp64) that each hold L <= 8 entries, at the same column offsets from their own
/// row, so that entry e of row r0 + i reads x[c_e + i] (the 3D Laplacian's interior rows, any
/// stencil's or banded matrix's). Such a block is a diagonal (DIA) block stored as CSR: its
/// entry e of every row is one contiguous vector of x, its values a (rows, L) tile that L
/// permutes per entry turn into one vector per entry, and its sixteen results one store.
/// Row by row, each entry's x is a separate load and conversion and each row a chain of its
/// own; the block does L loads of x, L FMAs and about L^2 / 2 permutes and blends for sixteen
/// rows.
///
/// The structure is checked on every block from the arrays themselves, not assumed: row_ptr's
/// sixteen differences equal L, and col_idx shifted by L equals col_idx plus one (entry e of
/// row i + 1 one column past entry e of row i), which by induction is the offset pattern of
/// the block's first row. A check that fails says which row first broke the structure; the
/// rows before it can still go as one block, with masked loads and store. Every x read is at a
/// column the block's col_idx holds; int32 or int64 indices.
#pragma once

#include "avx512_warnings.hpp"
#include "convert.hpp"

#include <cstdint>
#include <type_traits>
#include <utility>

#if defined(ROOFTOP_HAS_AVX512_CONVERT) && defined(__AVX512VL__) && defined(__AVX512BW__)
#define ROOFTOP_HAS_SPMV_BLOCK 1
#endif

namespace rooftop::cpu {

/// Most entries per row that spmv_block takes: up to L value registers, the permuted vectors
/// and the x vectors stay in the 32 vector registers.
inline constexpr std::int64_t spmv_block_max_entries = 8;

#if defined(ROOFTOP_HAS_SPMV_BLOCK)
ROOFTOP_AVX512_WARNINGS_OFF
namespace detail {
/// The lanes i < lanes of a register pair's picks (see SpmvLanes::entry) for entry e whose
/// value i * L + e of the block lies in pair p of its value registers (pair_values values a
/// pair), as mask bits: bit i, or bit 2i + 1 where `odd` (bf16's values land in the high
/// halves of 32-bit lanes).
constexpr unsigned pair_lanes(int lanes, int L, int e, int p, int pair_values, bool odd) {
  unsigned m = 0;
  for (int i = 0; i < lanes; ++i)
    if ((i * L + e) / pair_values == p) m |= 1u << (odd ? 2 * i + 1 : i);
  return m;
}

/// f(std::integral_constant<int, k>{}) for k = 0 .. n - 1, in order, unrolled.
template <class F, int... k>
[[gnu::always_inline]] inline void static_for(F&& f, std::integer_sequence<int, k...>) {
  (f(std::integral_constant<int, k>{}), ...);
}
template <int n, class F>
[[gnu::always_inline]] inline void static_for(F&& f) {
  static_for(f, std::make_integer_sequence<int, n>{});
}

/// The register a block's values are loaded into: floats, doubles, or 16-bit values as stored.
template <class T>
struct SpmvTile {
  using type = __m512i;
};
template <>
struct SpmvTile<float> {
  using type = __m512;
};

/// Entry e of each of a block's rows for fp32 and fp64 (see SpmvLanes::entry): Lanes' pick of
/// each pair of value registers, blended by the lanes it holds.
template <class Lanes, int L, int e>
[[gnu::always_inline]] inline typename Lanes::V pick_entry(const typename Lanes::Tile* tile) {
  constexpr int tiles = (Lanes::lanes * L + Lanes::per_tile - 1) / Lanes::per_tile, pairs = (tiles + 1) / 2;
  constexpr auto second = [](int j) { return j + 1 < tiles ? j + 1 : j; };
  const auto index = Lanes::pick_index(L, e);
  auto out = Lanes::pick(tile[0], index, tile[second(0)]);
  static_for<pairs - 1>([&](auto q) __attribute__((always_inline)) {
    constexpr int p = decltype(q)::value + 1;
    constexpr unsigned m = pair_lanes(Lanes::lanes, L, e, p, 2 * Lanes::per_tile, false);
    out = Lanes::blend(m, out, Lanes::pick(tile[2 * p], index, tile[second(2 * p)]));
  });
  return out;
}

/// Vector types of a block over T: rows per block (lanes), the rows' results (V, as
/// compute_t<T>), and the registers its values are loaded into (Tile, per_tile values each):
/// fp32, bf16 and fp16 here, fp64 below.
template <class T>
struct SpmvLanes {
  using V = __m512;
  static constexpr int lanes = 16;
  static constexpr bool two_bytes = !std::is_same_v<T, float>;
  using Tile = typename SpmvTile<T>::type;
  static constexpr int per_tile = two_bytes ? 32 : 16;

  static V load(const T* p) { return load16(p); }
  static void store(T* p, V v) { store16(p, v); }
  /// The lanes in m of p (the rest 0), and stores of them.
  static V load(unsigned m, const T* p) { return load16(static_cast<__mmask16>(m), p); }
  static void store(unsigned m, T* p, V v) { store16(static_cast<__mmask16>(m), p, v); }
  static V set1(float a) { return _mm512_set1_ps(a); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  /// The values in m of p (the rest 0), as stored.
  static Tile load_tile(unsigned m, const T* p) {
    if constexpr (two_bytes) return _mm512_maskz_loadu_epi16(m, p);
    else return _mm512_maskz_loadu_ps(static_cast<__mmask16>(m), p);
  }
  /// Lane i: i * L + e (only its low five bits pick: 32 values of a register pair).
  static __m512i pick_index(int L, int e) {
    return _mm512_add_epi32(_mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                               _mm512_set1_epi32(L)),
                            _mm512_set1_epi32(e));
  }
  static V pick(V lo, __m512i index, V hi) { return _mm512_permutex2var_ps(lo, index, hi); }
  static V blend(unsigned m, V a, V b) { return _mm512_mask_blend_ps(static_cast<__mmask16>(m), a, b); }
  /// Entry e of each of the block's rows: lane i gets value i * L + e of the tiles, the
  /// block's values in order. A permute of each pair of tiles that holds some of them (only
  /// the low bits of each index pick: a pair's values), blended by the lanes it holds. fp32
  /// picks from floats; bf16 and fp16 from the stored 16-bit values, bf16's into the high half
  /// of each 32-bit lane (the float, the low half zeroed), fp16's into sixteen 16-bit lanes,
  /// then widened.
  template <int L, int e>
  [[gnu::always_inline]] static V entry(const Tile* tile) {
    if constexpr (!two_bytes) {
      return pick_entry<SpmvLanes, L, e>(tile);
    } else {
      constexpr int tiles = (lanes * L + per_tile - 1) / per_tile, pairs = (tiles + 1) / 2;
      constexpr auto second = [](int j) { return j + 1 < tiles ? j + 1 : j; };
      constexpr bool odd = std::is_same_v<T, bf16>;
      // 16-bit lane w picks value (odd ? w / 2 : w) * L + e (the lanes it does not fill are
      // zeroed or ignored).
      const __m512i step = odd ? _mm512_set_epi16(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8, 7, 7, 6, 6, 5, 5, 4,
                                                  4, 3, 3, 2, 2, 1, 1, 0, 0)
                               : _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 14, 13, 12, 11, 10, 9, 8,
                                                  7, 6, 5, 4, 3, 2, 1, 0);
      const __m512i index = _mm512_add_epi16(_mm512_mullo_epi16(step, _mm512_set1_epi16(L)), _mm512_set1_epi16(e));
      constexpr unsigned first = pair_lanes(lanes, L, e, 0, 2 * per_tile, odd);
      __m512i out = _mm512_maskz_permutex2var_epi16(first, tile[0], index, tile[second(0)]);
      static_for<pairs - 1>([&](auto q) __attribute__((always_inline)) {
        constexpr int p = decltype(q)::value + 1;
        constexpr unsigned m = pair_lanes(lanes, L, e, p, 2 * per_tile, odd);
        out = _mm512_mask_mov_epi16(out, m, _mm512_permutex2var_epi16(tile[2 * p], index, tile[second(2 * p)]));
      });
      if constexpr (odd) return _mm512_castsi512_ps(out);
      else return _mm512_cvtph_ps(_mm512_castsi512_si256(out));
    }
  }
};
template <>
struct SpmvLanes<double> {
  using V = __m512d;
  static constexpr int lanes = 8;
  using Tile = __m512d;
  static constexpr int per_tile = 8;
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static V load(unsigned m, const double* p) { return _mm512_maskz_loadu_pd(static_cast<__mmask8>(m), p); }
  static void store(unsigned m, double* p, V v) { _mm512_mask_storeu_pd(p, static_cast<__mmask8>(m), v); }
  static V set1(double a) { return _mm512_set1_pd(a); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static Tile load_tile(unsigned m, const double* p) { return _mm512_maskz_loadu_pd(static_cast<__mmask8>(m), p); }
  template <int L, int e>
  [[gnu::always_inline]] static V entry(const Tile* tile) {
    return pick_entry<SpmvLanes, L, e>(tile);
  }
  /// Lane i: i * L + e in 64 bits (only its low four bits pick: 16 values of a register pair).
  static __m512i pick_index(int L, int e) {
    return _mm512_add_epi64(_mm512_mullo_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(L)),
                            _mm512_set1_epi64(e));
  }
  static V pick(V lo, __m512i index, V hi) { return _mm512_permutex2var_pd(lo, index, hi); }
  static V blend(unsigned m, V a, V b) { return _mm512_mask_blend_pd(static_cast<__mmask8>(m), a, b); }
};

/// The lanes i in m (of `lanes`, 16 or 8) where a[i] != b[i] + k, reading only those lanes of
/// a and b: 32-bit or 64-bit indices.
template <int lanes>
[[gnu::always_inline]] inline unsigned differ(unsigned m, const std::int32_t* a, const std::int32_t* b, int k) {
  if constexpr (lanes == 16) {
    const __mmask16 in = static_cast<__mmask16>(m);
    return _mm512_mask_cmpneq_epi32_mask(in, _mm512_maskz_loadu_epi32(in, a),
                                         _mm512_add_epi32(_mm512_maskz_loadu_epi32(in, b), _mm512_set1_epi32(k)));
  } else {
    const __mmask8 in = static_cast<__mmask8>(m);
    return _mm256_mask_cmpneq_epi32_mask(in, _mm256_maskz_loadu_epi32(in, a),
                                         _mm256_add_epi32(_mm256_maskz_loadu_epi32(in, b), _mm256_set1_epi32(k)));
  }
}
template <int lanes>
[[gnu::always_inline]] inline unsigned differ(unsigned m, const std::int64_t* a, const std::int64_t* b, int k) {
  if constexpr (lanes == 16) {
    return differ<8>(m & 0xffu, a, b, k) | differ<8>(m >> 8, a + 8, b + 8, k) << 8;
  } else {
    const __mmask8 in = static_cast<__mmask8>(m);
    return _mm512_mask_cmpneq_epi64_mask(in, _mm512_maskz_loadu_epi64(in, a),
                                         _mm512_add_epi64(_mm512_maskz_loadu_epi64(in, b), _mm512_set1_epi64(k)));
  }
}
}  // namespace detail

/// Rows per block: 16, 8 for double.
template <class T>
inline constexpr int spmv_block_lanes = detail::SpmvLanes<T>::lanes;

/// How many of the rows from r0 (at least 1, at most `most` <= spmv_block_lanes<T>, which must
/// exist) form a block of the structure of row r0, whose length is L (see the file comment):
/// each L long, entry e of each one column past entry e of the row before. Reads row_ptr up
/// to row r0 + most and col_idx only within the rows it accepts.
template <int L, class T, class Index>
[[gnu::always_inline]] inline int spmv_block_rows(const Index* row_ptr, const Index* col_idx, std::int64_t r0,
                                                  int most) {
  using Lanes = detail::SpmvLanes<T>;
  constexpr int lanes = Lanes::lanes;
  // Checked for the whole block (most == lanes, the lane masks constants) or part of it.
  auto fitting = [&](const int limit) __attribute__((always_inline)) {
    const unsigned rows_mask = (1u << limit) - 1;
    // Every row L long: row_ptr[r0 + i + 1] == row_ptr[r0 + i] + L.
    const unsigned bad_length = detail::differ<lanes>(rows_mask, row_ptr + r0 + 1, row_ptr + r0, L);
    const int n = bad_length ? __builtin_ctz(bad_length) : limit;
    // Entry e of row i + 1 one column past entry e of row i: c[f + L] == c[f] + 1 for the
    // (n - 1) * L flat positions f that have a next row among the n (each register's lanes
    // past them masked off: no load reads past the n rows).
    const Index* const c = col_idx + row_ptr[r0];
    for (int j = 0; j < L; ++j) {
      const int have = (n - 1) * L - j * lanes;
      if (have <= 0) break;
      const unsigned m = have >= lanes ? (1u << lanes) - 1 : (1u << have) - 1;
      if (const unsigned bad = detail::differ<lanes>(m, c + L + j * lanes, c + j * lanes, 1))
        return (j * lanes + __builtin_ctz(bad)) / L + 1;
    }
    return n;
  };
  return most == lanes ? fitting(lanes) : fitting(most);
}

/// The n rows from r0 that spmv_block_rows accepted (n = spmv_block_lanes<T> where `whole`):
/// y[r0 + i] = alpha * sum + beta * y[r0 + i] (beta_y; else alpha * sum), each sum of row
/// r0 + i accumulated in C in entry order. Reads and writes nothing outside the n rows.
template <int L, bool whole, class T, class Index, class C>
[[gnu::always_inline]] inline void spmv_block(const Index* row_ptr, const Index* col_idx, const T* values,
                                              const T* x, T* y, std::int64_t r0, int n, C alpha, C beta, bool beta_y) {
  static_assert(L >= 1 && L <= spmv_block_max_entries, "spmv_block: 1 to 8 entries per row");
  using Lanes = detail::SpmvLanes<T>;
  using V = typename Lanes::V;
  constexpr int lanes = Lanes::lanes;
  constexpr unsigned all = (1u << lanes) - 1;
  if constexpr (whole) n = lanes;
  const std::int64_t b0 = row_ptr[r0];
  const Index* const c = col_idx + b0;
  // The values of register j among the block's n * L.
  constexpr int per_tile = Lanes::per_tile, tiles = (lanes * L + per_tile - 1) / per_tile;
  auto mask = [&](const int j) __attribute__((always_inline)) {
    const int have = n * L - j * per_tile;
    return have >= per_tile ? ~0u >> (32 - per_tile) : (have > 0 ? (1u << have) - 1 : 0u);
  };
  const unsigned rows = whole ? all : (1u << n) - 1;
  typename Lanes::Tile tile[tiles];
  for (int j = 0; j < tiles; ++j) tile[j] = Lanes::load_tile(mask(j), values + b0 + j * per_tile);
  V sum = Lanes::set1(0);
  detail::static_for<L>([&](auto entry) __attribute__((always_inline)) {
    constexpr int e = decltype(entry)::value;
    const V ve = Lanes::template entry<L, e>(tile);
    const V xe = whole ? Lanes::load(x + c[e]) : Lanes::load(rows, x + c[e]);
    sum = e == 0 ? Lanes::mul(ve, xe) : Lanes::fma(ve, xe, sum);
  });
  const V scaled = Lanes::mul(Lanes::set1(alpha), sum);
  if (beta_y) {
    const V old = whole ? Lanes::load(y + r0) : Lanes::load(rows, y + r0);
    const V out = Lanes::fma(Lanes::set1(beta), old, scaled);
    whole ? Lanes::store(y + r0, out) : Lanes::store(rows, y + r0, out);
  } else {
    whole ? Lanes::store(y + r0, scaled) : Lanes::store(rows, y + r0, scaled);
  }
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

}  // namespace rooftop::cpu
