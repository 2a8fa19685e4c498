// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The CPU gemm driver's register block in explicit vector registers on hosts with FMA and
/// AVX-512 or AVX2: each row of the MR x NR block of accumulators is NR / width registers
/// (fp32: sixteen or eight lanes; fp64: eight or four). kernels/gemm.hpp's portable
/// gemm_micro_kernel keeps the block as an MR x NR array of scalars and relies on the compiler
/// to hold it in registers: GCC 12 does, Clang 14 kept it on the stack (a load, a scalar fma
/// and a store per element and step: 15-80 GFLOP/s against GCC's 313, fp32 n = 2048, 2
/// threads, Zen 5 VM).
#pragma once

#include "../../core/types.hpp"
#include "convert.hpp"
#include "streaming_store.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if !defined(__CUDA_ARCH__) && defined(__FMA__) && (defined(__AVX512F__) || defined(__AVX2__))
#include <immintrin.h>
#define ROOFTOP_HAS_GEMM_BLOCK 1
#endif

namespace rooftop::cpu {

/// Whether gemm_block takes a block of NR columns of Acc: fp32 or fp64 in whole registers.
template <class Acc, int NR>
inline constexpr bool has_gemm_block = false;
/// The CPU driver's register block columns (CpuGemmTiles::nr): two registers of Acc where
/// gemm_block runs, else 64 bytes.
template <class Acc>
inline constexpr int gemm_block_columns = 64 / static_cast<int>(sizeof(Acc));
/// Whether skinny_dot_block and skinny_rows_block run for Acc and op(B) of TB: AVX-512 (a
/// register of 64 bytes of Acc), fp64, or fp32 accumulation with fp32, bf16 or fp16 op(B).
template <class Acc, class TB>
inline constexpr bool has_skinny_blocks = false;

#if defined(ROOFTOP_HAS_GEMM_BLOCK)
namespace detail {
/// One vector register of Acc and the five operations the block needs.
template <class Acc>
struct GemmLanes;
#if defined(__AVX512F__)
template <>
struct GemmLanes<float> {
  using V = __m512;
  static constexpr int width = 16;
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V splat(float v) { return _mm512_set1_ps(v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
};
template <>
struct GemmLanes<double> {
  using V = __m512d;
  static constexpr int width = 8;
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static V splat(double v) { return _mm512_set1_pd(v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
};
#else
template <>
struct GemmLanes<float> {
  using V = __m256;
  static constexpr int width = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V splat(float v) { return _mm256_set1_ps(v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
};
template <>
struct GemmLanes<double> {
  using V = __m256d;
  static constexpr int width = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V splat(double v) { return _mm256_set1_pd(v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
};
#endif
}  // namespace detail

template <int NR>
inline constexpr bool has_gemm_block<float, NR> = NR % detail::GemmLanes<float>::width == 0;
template <int NR>
inline constexpr bool has_gemm_block<double, NR> = NR % detail::GemmLanes<double>::width == 0;
template <>
inline constexpr int gemm_block_columns<float> = 2 * detail::GemmLanes<float>::width;
template <>
inline constexpr int gemm_block_columns<double> = 2 * detail::GemmLanes<double>::width;

/// c[i ldc + j] += sum over k < kc of a[k a_k + i a_i] b[k b_k + j] for i < MR, j < NR: the
/// sums in registers from 0, one fma per register and k (the same operations, in the same
/// order, as gemm_micro_kernel from 0: the same values), then added to the MR x NR block of C.
/// The sum of a slice starts from 0 so that an entry of C passes through one addition per
/// slice, not one per k (fp32 64x64 with k = 10^5, every entry 0.1: relative error 6.7e-4
/// when each slice's products went onto C, as OpenBLAS's 2.6e-6 when each is summed first).
/// The gemm driver's packed panels have a_k = 1 and b_k = NR; attention's tiles are row-major,
/// one of them read transposed (a_i = 1). With `accumulate` false c = the sum (C is not read).
template <int MR, int NR, bool accumulate = true, class Acc>
[[gnu::always_inline]] inline void gemm_block(std::int64_t kc, const Acc* a, std::int64_t a_k, std::int64_t a_i, const Acc* b,
                                              std::int64_t b_k, Acc* c, std::int64_t ldc) {
  using L = detail::GemmLanes<Acc>;
  using V = typename L::V;
  constexpr int W = NR / L::width;
  V acc[MR][W];
  for (int i = 0; i < MR; ++i)
    for (int w = 0; w < W; ++w) acc[i][w] = L::splat(Acc(0));
  for (std::int64_t k = 0; k < kc; ++k) {
    V bk[W];
    for (int w = 0; w < W; ++w) bk[w] = L::load(b + k * b_k + w * L::width);
    for (int i = 0; i < MR; ++i) {
      const V ai = L::splat(a[k * a_k + i * a_i]);
      for (int w = 0; w < W; ++w) acc[i][w] = L::fma(ai, bk[w], acc[i][w]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int w = 0; w < W; ++w) {
      Acc* const to = c + i * ldc + w * L::width;
      L::store(to, accumulate ? L::add(L::load(to), acc[i][w]) : acc[i][w]);
    }
}

#if defined(ROOFTOP_HAS_AVX512_CONVERT)
template <>
inline constexpr bool has_skinny_blocks<double, double> = true;
template <>
inline constexpr bool has_skinny_blocks<float, float> = true;
template <>
inline constexpr bool has_skinny_blocks<float, bf16> = true;
template <>
inline constexpr bool has_skinny_blocks<float, fp16> = true;
#endif

/// part[(i C + c) W + l] = sum over kk in [k0, k1) (steps of W = 64 / sizeof(Acc)) of
/// a[i a_i + kk + l] b[c][kk + l], one fma per lane and step from 0 (gemm_cpu_skinny's
/// accumulators with op(B)'s columns contiguous: the same operations as its portable loop, so
/// the same values), for i < MM, c < C. Each register of A and B is loaded once per step: GCC
/// folds a vector used by several FMAs into each as a memory operand, and this VM's Zen 5
/// loads about one 64-byte register per cycle (3.1 G/s, two FMAs per cycle), so 8 rows and 2
/// columns took 18 loads per 16 FMAs (93 GFLOP/s on one thread, data in L1) where 10 are
/// needed (149; 188 with C = 3): detail::load_once.
namespace detail {
/// A register of Acc from p (TB: Acc, or bf16 / fp16 widened exactly), loaded once: the empty
/// asm statement hands the register to no instruction and keeps GCC from folding the load into
/// each FMA that uses it (see skinny_dot_block).
template <class Acc, class TB>
[[gnu::always_inline]] inline typename GemmLanes<Acc>::V load_once(const TB* p) {
  typename GemmLanes<Acc>::V v;
  if constexpr (std::is_same_v<TB, Acc>) {
    v = GemmLanes<Acc>::load(p);
  } else {
    v = load16(p);
  }
  asm("" : "+v"(v));
  return v;
}
}  // namespace detail

/// Each step also prefetches into L2 the line `ahead` bytes past each column's (gemm_cpu_skinny:
/// the same columns of the work item two on).
template <int MM, int C, class Acc, class TB>
[[gnu::always_inline]] inline void skinny_dot_block(std::int64_t k0, std::int64_t k1, const Acc* a, std::int64_t a_i,
                                                    const TB* const* b, Acc* part, std::int64_t ahead) {
  static_assert(has_skinny_blocks<Acc, TB>, "skinny_dot_block: see has_skinny_blocks");
  using L = detail::GemmLanes<Acc>;
  using V = typename L::V;
  V acc[MM][C];
  for (int i = 0; i < MM; ++i)
    for (int c = 0; c < C; ++c) acc[i][c] = L::splat(Acc(0));
  for (std::int64_t kk = k0; kk < k1; kk += L::width) {
    V bk[C];
    for (int c = 0; c < C; ++c) bk[c] = detail::load_once<Acc>(b[c] + kk);
    for (int c = 0; c < C; ++c) prefetch_line(reinterpret_cast<const char*>(b[c] + kk) + ahead);
    for (int i = 0; i < MM; ++i) {
      const V ai = detail::load_once<Acc>(a + i * a_i + kk);
      for (int c = 0; c < C; ++c) acc[i][c] = L::fma(ai, bk[c], acc[i][c]);
    }
  }
  for (int i = 0; i < MM; ++i)
    for (int c = 0; c < C; ++c) L::store(part + (i * C + c) * L::width, acc[i][c]);
}

/// out[i n + j] += a[i][0] b[0][j] + ... + a[i][3] b[3][j] for i < MM, j < len, as four fmas in
/// turn from out[i n + j] (gemm_cpu_skinny_rows's step over four rows of op(B): the same
/// operations as its portable loop, so the same values; 2-byte op(B) widened as loaded). Each
/// register of the four rows is loaded once for the MM rows of C (see skinny_dot_block: the
/// portable loop, rows of C outermost, loaded op(B) again for each: 2 threads, op(B) 4096 x
/// 4096 fp32, M = 2 / 4 / 8 ran at 25.7 / 22.5 / 17.7 GB/s against M = 1's 51.6). Each step
/// also prefetches into L2 the line `ahead` bytes past each row's (gemm_cpu_skinny_rows: the
/// same line of the next four rows).
template <int MM, class Acc, class TB>
[[gnu::always_inline]] inline void skinny_rows_block(std::int64_t len, const TB* const* b, const Acc (*a)[4], Acc* out,
                                                     std::int64_t n, std::int64_t ahead) {
  static_assert(has_skinny_blocks<Acc, TB>, "skinny_rows_block: see has_skinny_blocks");
  using L = detail::GemmLanes<Acc>;
  using V = typename L::V;
  std::int64_t j = 0;
  for (; j + L::width <= len; j += L::width) {
    V bu[4];
    for (int u = 0; u < 4; ++u) bu[u] = detail::load_once<Acc>(b[u] + j);
    for (int u = 0; u < 4; ++u) prefetch_line(reinterpret_cast<const char*>(b[u] + j) + ahead);
    for (int i = 0; i < MM; ++i) {
      V o = L::load(out + i * n + j);
      for (int u = 0; u < 4; ++u) o = L::fma(L::splat(a[i][u]), bu[u], o);
      L::store(out + i * n + j, o);
    }
  }
  for (; j < len; ++j)
    for (int i = 0; i < MM; ++i) {
      Acc o = out[i * n + j];
      for (int u = 0; u < 4; ++u) o = std::fma(a[i][u], static_cast<Acc>(b[u][j]), o);
      out[i * n + j] = o;
    }
}
#endif

/// The 32-bit word of a pair of bf16 along k, as gemm_block_bf16_pairs takes them: `even` in
/// the low half, `odd` in the high one (two consecutive bf16 in memory, read as one word).
inline std::uint32_t bf16_pair(bf16 even, bf16 odd) { return even.bits | static_cast<std::uint32_t>(odd.bits) << 16; }

/// out[p * out_stride] = bf16_pair(row[2p], row[2p + 1]) for p < (n + 1) / 2, an odd n's last
/// pair padded with 0: a row in pairs along itself (contiguous, the row's own bytes).
[[gnu::always_inline]] inline void bf16_row_pairs(const bf16* row, std::int64_t n, std::uint32_t* out, std::int64_t out_stride = 1) {
  if (out_stride == 1) {
    std::memcpy(out, row, static_cast<std::size_t>(n) * sizeof(bf16));
    if (n % 2 != 0) out[n / 2] = bf16_pair(row[n - 1], bf16::from_bits(0));
    return;
  }
  for (std::int64_t p = 0; 2 * p < n; ++p) out[p * out_stride] = bf16_pair(row[2 * p], 2 * p + 1 < n ? row[2 * p + 1] : bf16::from_bits(0));
}

/// out[j * out_stride] = bf16_pair(even[j], odd[j]) for j < n, with odd null for a row of 0:
/// two rows in pairs across them (contiguous: a loop the compiler vectorizes).
[[gnu::always_inline]] inline void bf16_interleave_rows(const bf16* even, const bf16* odd, std::int64_t n, std::uint32_t* out,
                                                        std::int64_t out_stride = 1) {
  const bf16 zero = bf16::from_bits(0);
  if (out_stride == 1) {
    for (std::int64_t j = 0; j < n; ++j) out[j] = bf16_pair(even[j], odd ? odd[j] : zero);
    return;
  }
  for (std::int64_t j = 0; j < n; ++j) out[j * out_stride] = bf16_pair(even[j], odd ? odd[j] : zero);
}

#if defined(ROOFTOP_HAS_GEMM_BLOCK) && defined(__AVX512F__) && defined(__AVX512BF16__)
#define ROOFTOP_HAS_BF16_PAIRS 1
/// acc + x.lo * y.lo + x.hi * y.hi in each fp32 lane, x and y holding pairs of bf16 (the low one
/// first in memory): AVX512-BF16's vdpbf16ps, two products per lane and instruction where an
/// fp32 FMA does one. The products are exact in fp32 and added in turn, each sum rounded to
/// nearest (the high pair's first); denormal inputs and results are flushed to zero.
[[gnu::always_inline]] inline __m512 bf16_pair_dot(__m512 acc, __m512i x, __m512i y) {
  return _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)y);
}

/// c[i ldc + j] += sum over k < 2 kp of A(i, k) B(k, j) for i < MR, j < NR, with bf16 A and B
/// packed in pairs along k: a[i a_i + p] holds A(i, 2p) and A(i, 2p + 1), b[p b_p + j] holds
/// B(2p, j) and B(2p + 1, j) (each pair as one 32-bit word, the even k in the low half: the
/// order of two consecutive bf16 in memory). One bf16_pair_dot per register of C and pair, the
/// sums from 0 and then added to C (as gemm_block). With `accumulate` false c = the sum (C is
/// not read).
template <int MR, int NR, bool accumulate = true>
[[gnu::always_inline]] inline void gemm_block_bf16_pairs(std::int64_t kp, const std::uint32_t* a, std::int64_t a_i,
                                                         const std::uint32_t* b, std::int64_t b_p, float* c, std::int64_t ldc) {
  static_assert(NR % 16 == 0, "gemm_block_bf16_pairs: NR whole registers of sixteen columns");
  constexpr int W = NR / 16;
  __m512 acc[MR][W];
  for (int i = 0; i < MR; ++i)
    for (int w = 0; w < W; ++w) acc[i][w] = _mm512_setzero_ps();
  for (std::int64_t p = 0; p < kp; ++p) {
    __m512i bp[W];
    for (int w = 0; w < W; ++w) bp[w] = _mm512_loadu_si512(b + p * b_p + w * 16);
    for (int i = 0; i < MR; ++i) {
      const __m512i ai = _mm512_set1_epi32(static_cast<int>(a[i * a_i + p]));
      for (int w = 0; w < W; ++w) acc[i][w] = bf16_pair_dot(acc[i][w], ai, bp[w]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int w = 0; w < W; ++w) {
      float* const to = c + i * ldc + w * 16;
      _mm512_storeu_ps(to, accumulate ? _mm512_add_ps(_mm512_loadu_ps(to), acc[i][w]) : acc[i][w]);
    }
}
#endif

}  // namespace rooftop::cpu
