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
/// the block's first row. A block that fails says which row first broke it; the caller takes
/// the rows before it one at a time. Every x read is at a column the block's col_idx holds.
#pragma once

#include "avx512_warnings.hpp"
#include "convert.hpp"

#include <cstdint>
#include <type_traits>

#if defined(ROOFTOP_HAS_AVX512_CONVERT) && defined(__AVX512VL__)
#define ROOFTOP_HAS_SPMV_BLOCK 1
#endif

namespace rooftop::cpu {

/// Whether spmv_block exists (AVX-512 hosts with VL).
inline constexpr bool has_spmv_block =
#if defined(ROOFTOP_HAS_SPMV_BLOCK)
    true;
#else
    false;
#endif

/// Most entries per row that spmv_block takes: L value registers, L index registers and the
/// permuted vectors stay in the 32 vector registers.
inline constexpr std::int64_t spmv_block_max_entries = 8;

#if defined(ROOFTOP_HAS_SPMV_BLOCK)
ROOFTOP_AVX512_WARNINGS_OFF
namespace detail {
/// Vector types of a block over T: rows per block (lanes), the values (V, as compute_t<T>)
/// and 32-bit column indices (I); M is a mask over the lanes.
template <class T>
struct SpmvLanes {
  using V = __m512;
  using I = __m512i;
  static constexpr int lanes = 16;
  static V load(const T* p) { return load16(p); }
  static void store(T* p, V v) { store16(p, v); }
  static V set1(float a) { return _mm512_set1_ps(a); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static I load_index(const std::int32_t* p) { return _mm512_loadu_si512(p); }
  static I load_index(unsigned m, const std::int32_t* p) { return _mm512_maskz_loadu_epi32(static_cast<__mmask16>(m), p); }
  /// Lanes (in m) where a != b + k.
  static unsigned differ(unsigned m, I a, I b, int k) {
    return _mm512_mask_cmpneq_epi32_mask(static_cast<__mmask16>(m), a, _mm512_add_epi32(b, _mm512_set1_epi32(k)));
  }
  /// Lane i: i * L + e (only its low five bits pick: 32 values of a register pair).
  static I pick_index(int L, int e) {
    return _mm512_add_epi32(_mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                               _mm512_set1_epi32(L)),
                            _mm512_set1_epi32(e));
  }
  static V pick(V lo, I index, V hi) { return _mm512_permutex2var_ps(lo, index, hi); }
  static V blend(unsigned m, V a, V b) { return _mm512_mask_blend_ps(static_cast<__mmask16>(m), a, b); }
};
template <>
struct SpmvLanes<double> {
  using V = __m512d;
  using I = __m256i;
  static constexpr int lanes = 8;
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static V set1(double a) { return _mm512_set1_pd(a); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static I load_index(const std::int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static I load_index(unsigned m, const std::int32_t* p) { return _mm256_maskz_loadu_epi32(static_cast<__mmask8>(m), p); }
  static unsigned differ(unsigned m, I a, I b, int k) {
    return _mm256_mask_cmpneq_epi32_mask(static_cast<__mmask8>(m), a, _mm256_add_epi32(b, _mm256_set1_epi32(k)));
  }
  /// Lane i: i * L + e in 64 bits (only its low four bits pick: 16 values of a register pair).
  static __m512i pick_index(int L, int e) {
    return _mm512_add_epi64(_mm512_mullo_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(L)),
                            _mm512_set1_epi64(e));
  }
  static V pick(V lo, __m512i index, V hi) { return _mm512_permutex2var_pd(lo, index, hi); }
  static V blend(unsigned m, V a, V b) { return _mm512_mask_blend_pd(static_cast<__mmask8>(m), a, b); }
};

/// For each entry e and register pair p (registers 2p, 2p + 1 of the block's values, lanes
/// values each), the lanes i whose value i * L + e lies in that pair.
template <int lanes, int L>
struct PairLanes {
  unsigned mask[L][(L + 1) / 2] = {};
  constexpr PairLanes() {
    for (int e = 0; e < L; ++e)
      for (int i = 0; i < lanes; ++i) mask[e][(i * L + e) / (2 * lanes)] |= 1u << i;
  }
};
}  // namespace detail

/// Rows r0 .. r0 + lanes - 1 (lanes = 16, 8 for double; r0 + lanes <= the matrix's rows) as one
/// block of L entries each (see the file comment): y[r0 + i] = alpha * sum + beta * y[r0 + i]
/// (beta_y; else alpha * sum), each sum accumulated in C in entry order. Returns lanes where it
/// did the block, else the first row (0 .. lanes - 1, from r0) that does not fit the structure
/// of those before it, having read nothing past the rows it checked and written nothing.
template <int L, class T, class C>
[[gnu::always_inline]] inline int spmv_block(const std::int32_t* row_ptr, const std::int32_t* col_idx, const T* values,
                                             const T* x, T* y, std::int64_t r0, C alpha, C beta, bool beta_y) {
  static_assert(L >= 1 && L <= spmv_block_max_entries, "spmv_block: 1 to 8 entries per row");
  using Lanes = detail::SpmvLanes<T>;
  constexpr int lanes = Lanes::lanes;
  constexpr unsigned all = (1u << lanes) - 1;
  // Every row L long: row_ptr[r0 + i + 1] == row_ptr[r0 + i] + L.
  if (const unsigned bad = Lanes::differ(all, Lanes::load_index(row_ptr + r0 + 1), Lanes::load_index(row_ptr + r0), L))
    return __builtin_ctz(bad);
  const std::int64_t b0 = row_ptr[r0];
  const std::int32_t* const c = col_idx + b0;
  // Entry e of row i + 1 one column past entry e of row i: c[f + L] == c[f] + 1 for the
  // lanes * L - L flat positions f that have a next row (the last register's tail masked off:
  // the shifted loads never read past the block).
  typename Lanes::I idx[L];
  for (int j = 0; j < L; ++j) idx[j] = Lanes::load_index(c + j * lanes);
  for (int j = 0; j < L; ++j) {
    const int have = (lanes - 1) * L - j * lanes;  // flat positions in register j with a next row
    const unsigned m = have >= lanes ? all : (have > 0 ? (1u << have) - 1 : 0u);
    if (m == 0) continue;
    if (const unsigned bad = Lanes::differ(m, Lanes::load_index(m, c + L + j * lanes), idx[j], 1))
      return (j * lanes + __builtin_ctz(bad)) / L + 1;
  }
  using V = typename Lanes::V;
  V v[L];
  for (int j = 0; j < L; ++j) v[j] = Lanes::load(values + b0 + j * lanes);
  constexpr detail::PairLanes<lanes, L> pairs;
  V sum = Lanes::set1(0);
  for (int e = 0; e < L; ++e) {
    // Lane i's value of entry e is value i * L + e of the block: picked from each register
    // pair that holds some of them, blended by the lanes it holds.
    const auto index = Lanes::pick_index(L, e);
    V ve = Lanes::pick(v[0], index, v[L > 1 ? 1 : 0]);
    for (int p = 1; 2 * p < L; ++p)
      ve = Lanes::blend(pairs.mask[e][p], ve, Lanes::pick(v[2 * p], index, v[2 * p + 1 < L ? 2 * p + 1 : 2 * p]));
    const V xe = Lanes::load(x + c[e]);
    sum = e == 0 ? Lanes::mul(ve, xe) : Lanes::fma(ve, xe, sum);
  }
  const V scaled = Lanes::mul(Lanes::set1(alpha), sum);
  Lanes::store(y + r0, beta_y ? Lanes::fma(Lanes::set1(beta), Lanes::load(y + r0), scaled) : scaled);
  return lanes;
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

}  // namespace rooftop::cpu
