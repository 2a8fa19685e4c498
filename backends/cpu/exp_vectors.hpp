// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// core/math.hpp's exp2 and the gates built on it, sixteen fp32 lanes at a time with AVX-512,
/// the same values bit for bit: the rounding of the argument and the scaling by 2^n are one
/// instruction each (vrndscaleps, vscalefps), where GCC's vectorization of the portable form
/// takes five (adding and subtracting a rounding constant, a shift, an integer add, a
/// multiply). vscalefps multiplies by 2^n exactly as math::detail::scale_by_pow2 does, and
/// rounding to nearest is what the portable form's constant does. Used by softmax's rows
/// (softmax_row.hpp) and by GELU (tanh form) and SiLU on the host (kernels/activation.hpp).
#pragma once

#include "../../core/math.hpp"
#include "avx512_warnings.hpp"

#if !defined(__CUDA_ARCH__) && defined(__AVX512F__)
#include <immintrin.h>
#define ROOFTOP_HAS_EXP_VECTORS 1
#define ROOFTOP_HAS_EXP_LANES 1
#elif !defined(__CUDA_ARCH__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define ROOFTOP_HAS_EXP_LANES 1
#endif

namespace rooftop::cpu {

#if defined(ROOFTOP_HAS_EXP_VECTORS)
ROOFTOP_AVX512_WARNINGS_OFF
/// 2^z for z in [-125, 127] as n = round(z) and p = 2^(z - n) (math::detail::exp2_poly): the
/// result is p * 2^n (vscalefps), which the caller may mask.
struct Exp2Parts {
  __m512 p, n;
};
[[gnu::always_inline]] inline Exp2Parts exp2_parts(__m512 z) {
  const __m512 n = _mm512_roundscale_ps(z, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_sub_ps(z, n);
  using C = math::detail::Exp2Poly;
  __m512 p = _mm512_set1_ps(C::c5);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(C::c4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(C::c3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(C::c2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(C::c1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(C::c0));
  return {p, n};
}

/// math::times_sigmoid_of_exp2 in lanes: x / (1 + 2^max(z, -125)), 0 where z > 127.
[[gnu::always_inline]] inline __m512 times_sigmoid_of_exp2(__m512 x, __m512 z) {
  // vmaxps returns its second operand where either is NaN: z (as the portable select does).
  const Exp2Parts e = exp2_parts(_mm512_max_ps(_mm512_set1_ps(-125.0f), z));
  const __m512 gated = _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_scalef_ps(e.p, e.n)));
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(z, _mm512_set1_ps(127.0f), _CMP_NGT_UQ), gated);
}

/// math::gelu_tanh in lanes.
[[gnu::always_inline]] inline __m512 gelu_tanh(__m512 x) {
  const __m512 z = _mm512_mul_ps(x, _mm512_fmadd_ps(_mm512_mul_ps(x, x), _mm512_set1_ps(math::gelu_tanh_c3),
                                                    _mm512_set1_ps(math::gelu_tanh_c1)));
  return times_sigmoid_of_exp2(x, z);
}

/// math::silu in lanes.
[[gnu::always_inline]] inline __m512 silu(__m512 x) {
  return times_sigmoid_of_exp2(x, _mm512_mul_ps(x, _mm512_set1_ps(-math::log2e)));
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

#if !defined(ROOFTOP_HAS_EXP_VECTORS) && defined(ROOFTOP_HAS_EXP_LANES)
/// math::exp2_in_range in eight lanes on AVX2 hosts: the portable form's operations in the same
/// order (AVX2 has no vscalefps: 2^n is built from the bits of the rounded argument, as
/// math::detail::scale_by_pow2 does), so the same values bit for bit.
[[gnu::always_inline]] inline __m256 exp2_in_range(__m256 z) {
  const __m256 magic = _mm256_set1_ps(math::detail::round_magic);
  const __m256 t = _mm256_add_ps(z, magic);
  const __m256 r = _mm256_sub_ps(z, _mm256_sub_ps(t, magic));
  using C = math::detail::Exp2Poly;
  __m256 p = _mm256_set1_ps(C::c5);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C::c4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C::c3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C::c2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C::c1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C::c0));
  const __m256 pow2n = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(_mm256_castps_si256(t), 23), _mm256_set1_epi32(0x3f800000)));
  return _mm256_mul_ps(p, pow2n);
}

/// math::times_sigmoid_of_exp2 in eight lanes.
[[gnu::always_inline]] inline __m256 times_sigmoid_of_exp2(__m256 x, __m256 z) {
  // vmaxps returns its second operand where either is NaN: z (as the portable select does).
  const __m256 e = exp2_in_range(_mm256_max_ps(_mm256_set1_ps(-125.0f), z));
  const __m256 gated = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  return _mm256_andnot_ps(_mm256_cmp_ps(z, _mm256_set1_ps(127.0f), _CMP_GT_OQ), gated);
}

/// math::gelu_tanh in eight lanes.
[[gnu::always_inline]] inline __m256 gelu_tanh(__m256 x) {
  const __m256 z = _mm256_mul_ps(x, _mm256_fmadd_ps(_mm256_mul_ps(x, x), _mm256_set1_ps(math::gelu_tanh_c3),
                                                    _mm256_set1_ps(math::gelu_tanh_c1)));
  return times_sigmoid_of_exp2(x, z);
}

/// math::silu in eight lanes.
[[gnu::always_inline]] inline __m256 silu(__m256 x) {
  return times_sigmoid_of_exp2(x, _mm256_mul_ps(x, _mm256_set1_ps(-math::log2e)));
}
#endif

}  // namespace rooftop::cpu
