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

#include <cstdint>

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

#if defined(ROOFTOP_HAS_GEMM_BLOCK)
namespace detail {
/// One vector register of Acc and the four operations the block needs.
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
};
template <>
struct GemmLanes<double> {
  using V = __m512d;
  static constexpr int width = 8;
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static V splat(double v) { return _mm512_set1_pd(v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
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
};
template <>
struct GemmLanes<double> {
  using V = __m256d;
  static constexpr int width = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V splat(double v) { return _mm256_set1_pd(v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
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
/// MR x NR block of C read into registers, one fma per register and k (the same operations, in
/// the same order, as gemm_micro_kernel: the same values), written back. The gemm driver's
/// packed panels have a_k = 1 and b_k = NR; attention's tiles are row-major, one of them
/// read transposed (a_i = 1). With `accumulate` false the block starts from 0 (c = the sum; C
/// is not read).
template <int MR, int NR, bool accumulate = true, class Acc>
[[gnu::always_inline]] inline void gemm_block(std::int64_t kc, const Acc* a, std::int64_t a_k, std::int64_t a_i, const Acc* b,
                                              std::int64_t b_k, Acc* c, std::int64_t ldc) {
  using L = detail::GemmLanes<Acc>;
  using V = typename L::V;
  constexpr int W = NR / L::width;
  V acc[MR][W];
  for (int i = 0; i < MR; ++i)
    for (int w = 0; w < W; ++w) acc[i][w] = accumulate ? L::load(c + i * ldc + w * L::width) : L::splat(Acc(0));
  for (std::int64_t k = 0; k < kc; ++k) {
    V bk[W];
    for (int w = 0; w < W; ++w) bk[w] = L::load(b + k * b_k + w * L::width);
    for (int i = 0; i < MR; ++i) {
      const V ai = L::splat(a[k * a_k + i * a_i]);
      for (int w = 0; w < W; ++w) acc[i][w] = L::fma(ai, bk[w], acc[i][w]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int w = 0; w < W; ++w) L::store(c + i * ldc + w * L::width, acc[i][w]);
}
#endif

}  // namespace rooftop::cpu
