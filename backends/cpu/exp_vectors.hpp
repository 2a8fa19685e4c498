// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// core/math.hpp's exp2 and the gates built on it, sixteen fp32 lanes at a time with AVX-512 and
/// eight with AVX2, the same values bit for bit. With AVX-512 the reduction of the argument and
/// the scaling by 2^n are one instruction each (vreduceps with AVX512DQ, else vrndscaleps and a
/// subtract; vscalefps), where GCC's
/// vectorization of the portable form takes five (adding and subtracting a rounding constant,
/// a shift, an integer add, a multiply). vscalefps multiplies by 2^n exactly as
/// math::detail::scale_by_pow2 does, and rounding to nearest is what the portable form's
/// constant does. With AVX2, the portable form's operations in intrinsics. Used by softmax's
/// rows (softmax_row.hpp) and by GELU and SiLU on the host (kernels/activation.hpp); GELU's erf
/// form adds erfc's fit.
#pragma once

#include "../../core/math.hpp"
#include "avx512_warnings.hpp"
#include "convert.hpp"

#if defined(ROOFTOP_HAS_AVX512_CONVERT)
#define ROOFTOP_HAS_EXP_VECTORS 1
#endif
#if defined(ROOFTOP_HAS_FLOAT_LANES)
#define ROOFTOP_HAS_EXP_LANES 1
#endif

namespace rooftop::cpu {

#if defined(ROOFTOP_HAS_EXP_LANES)
ROOFTOP_AVX512_WARNINGS_OFF
/// math::detail::exp2_poly in lanes (AVX-512 or AVX2): 2^r for r in [-1/2, 1/2], the same
/// chain of fmas, so the same values.
[[gnu::always_inline]] inline Floats exp2_poly(Floats r) {
  using C = math::detail::Exp2Poly;
  Floats p = splat(C::c5);
  p = fmadd(p, r, splat(C::c4));
  p = fmadd(p, r, splat(C::c3));
  p = fmadd(p, r, splat(C::c2));
  p = fmadd(p, r, splat(C::c1));
  return fmadd(p, r, splat(C::c0));
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

#if defined(ROOFTOP_HAS_EXP_VECTORS)
ROOFTOP_AVX512_WARNINGS_OFF
/// z - round(z) (ties to even): vreduceps where the host has AVX512DQ; elsewhere (AVX512F
/// alone, e.g. -march=knl) z minus vrndscaleps, with 0 where |z| >= 2^23 (z an integer or
/// +-Inf, as vreduceps gives; Inf - Inf would be NaN). NaN stays NaN either way.
[[gnu::always_inline]] inline __m512 reduce_nearest(__m512 z) {
#if defined(__AVX512DQ__)
  return _mm512_reduce_ps(z, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
  const __m512 r = _mm512_sub_ps(z, _mm512_roundscale_ps(z, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  const __mmask16 whole = _mm512_cmp_ps_mask(_mm512_abs_ps(z), _mm512_set1_ps(8388608.0f), _CMP_GE_OQ);
  return _mm512_mask_mov_ps(r, whole, _mm512_setzero_ps());
#endif
}
/// 2^z for z in [-125, 127] as n = round(z) and p = 2^(z - n) (math::detail::exp2_poly): the
/// result is p * 2^n (vscalefps), which the caller may mask. z - n comes from one vreduceps and
/// n from z minus that (both exact), where vrndscaleps and a subtraction took a micro-operation
/// more (vrndscaleps measured 1.04 cycles a register, vreduceps 0.53: docs/kernels.md,
/// activations): the same values. Granite Rapids VM, one thread, softmax_exp_sum over 16384
/// values in L1/L2, best of 3000, three alternations, ns a value: fp32 0.107-0.108 -> 0.098,
/// bf16 0.119 -> 0.108-0.109, fp16 0.125 -> 0.114.
struct Exp2Parts {
  __m512 p, n;
};
[[gnu::always_inline]] inline Exp2Parts exp2_parts(__m512 z) {
  const __m512 r = reduce_nearest(z);
  return {exp2_poly(r), _mm512_sub_ps(z, r)};
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
  const __m256 p = exp2_poly(_mm256_sub_ps(z, _mm256_sub_ps(t, magic)));
  const __m256 pow2n = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(_mm256_castps_si256(t), 23), _mm256_set1_epi32(0x3f800000)));
  return _mm256_mul_ps(p, pow2n);
}


/// math::times_sigmoid_of_exp2 (x / (1 + 2^max(z, -125)), 0 where z > 127) of U registers of
/// eight lanes at once, each step over all of them before the next: the portable form's
/// operations, so the same values. One register's steps are a chain of about twenty
/// dependent operations, and where each register is gated by its own call GCC leaves the chains
/// one after another, so the out-of-order core finds too few independent operations (Zen 3 VM,
/// a scratch program, one thread, 4096 values in L1, ns per element: GELU fp32 one register at
/// a time 0.388, two together 0.354, four 0.344; bf16 in pairs of registers 0.635, four
/// registers 0.558). kernels/activation.hpp has the ops' figures.
template <int U>
[[gnu::always_inline]] inline void times_sigmoid_of_exp2(__m256 (&x)[U], const __m256 (&z)[U]) {
  using C = math::detail::Exp2Poly;
  const __m256 magic = _mm256_set1_ps(math::detail::round_magic);
  __m256 t[U], r[U], p[U];
  for (int u = 0; u < U; ++u) {
    const __m256 w = _mm256_max_ps(_mm256_set1_ps(-125.0f), z[u]);  // z where z is NaN (vmaxps)
    t[u] = _mm256_add_ps(w, magic);
    r[u] = _mm256_sub_ps(w, _mm256_sub_ps(t[u], magic));
  }
  for (int u = 0; u < U; ++u) p[u] = _mm256_fmadd_ps(_mm256_set1_ps(C::c5), r[u], _mm256_set1_ps(C::c4));
  for (int u = 0; u < U; ++u) p[u] = _mm256_fmadd_ps(p[u], r[u], _mm256_set1_ps(C::c3));
  for (int u = 0; u < U; ++u) p[u] = _mm256_fmadd_ps(p[u], r[u], _mm256_set1_ps(C::c2));
  for (int u = 0; u < U; ++u) p[u] = _mm256_fmadd_ps(p[u], r[u], _mm256_set1_ps(C::c1));
  for (int u = 0; u < U; ++u) p[u] = _mm256_fmadd_ps(p[u], r[u], _mm256_set1_ps(C::c0));
  for (int u = 0; u < U; ++u) {
    const __m256 pow2n =
        _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(_mm256_castps_si256(t[u]), 23), _mm256_set1_epi32(0x3f800000)));
    const __m256 gated = _mm256_div_ps(x[u], _mm256_add_ps(_mm256_set1_ps(1.0f), _mm256_mul_ps(p[u], pow2n)));
    x[u] = _mm256_andnot_ps(_mm256_cmp_ps(z[u], _mm256_set1_ps(127.0f), _CMP_GT_OQ), gated);
  }
}
#endif

#if defined(ROOFTOP_HAS_EXP_VECTORS)
ROOFTOP_AVX512_WARNINGS_OFF
/// 2^z for z < 127.5, 0 where z < -125 (and z = -Inf), NaN where z is NaN: math::exp2_or_zero's
/// values (neither is for z >= 127.5, where they differ: there the scalar and AVX2 forms round z
/// to n = 128 and give +Inf; its callers' arguments, differences from a max, are never above 0).
[[gnu::always_inline]] inline __m512 exp2_or_zero(__m512 z) {
  const __mmask16 in_range = _mm512_cmp_ps_mask(z, _mm512_set1_ps(-125.0f), _CMP_NLT_UQ);
  const Exp2Parts e = exp2_parts(z);
  return _mm512_maskz_scalef_ps(in_range, e.p, e.n);
}
ROOFTOP_AVX512_WARNINGS_ON
#elif defined(ROOFTOP_HAS_EXP_LANES)
/// 2^z for z < 127.5, 0 where z < -125 (and z = -Inf), NaN where z is NaN: math::exp2_or_zero's
/// values.
[[gnu::always_inline]] inline __m256 exp2_or_zero(__m256 z) {
  return _mm256_andnot_ps(_mm256_cmp_ps(z, _mm256_set1_ps(-125.0f), _CMP_LT_OQ), exp2_in_range(z));
}
#endif

#if defined(ROOFTOP_HAS_EXP_VECTORS)
ROOFTOP_AVX512_WARNINGS_OFF
/// times_sigmoid_of_exp2 of U registers at once on AVX-512 hosts, each step over all of them
/// before the next (as the AVX2 form above): the same values as exp2_parts' rounding and
/// scaling, in fewer instructions. vreduceps gives r = z - round(z) in one instruction (against
/// vmaxps, vrndscaleps and vsubps); with no clamp to -125 (exp2_or_zero masks instead):
/// vreduceps(+-Inf) = 0, so n = +-Inf and vscalefps(p, -Inf) = 0, and below -125 the
/// denominator is 1 + (tiny) = 1 either way; NaN propagates through both. The gate (z > 127 gives 0) is the division's own mask.
/// Granite Rapids VM, scratch program, one thread, 16384 values in L1/L2, best of 3000, two
/// alternations, ns/value: gelu fp32 0.237 -> 0.217, bf16 0.296 -> 0.268, fp16 0.298 -> 0.275;
/// silu 0.211 -> 0.203, 0.273 -> 0.253, 0.274 -> 0.237. What remains is the divider: vdivps
/// zmm measured 10.65 cycles a register (vmulps 0.54), about 0.196 ns/value at 3.4 GHz.
template <int U>
[[gnu::always_inline]] inline void times_sigmoid_of_exp2(__m512 (&x)[U], const __m512 (&z)[U]) {
  using C = math::detail::Exp2Poly;
  __m512 n[U], r[U], p[U];
  for (int u = 0; u < U; ++u) {
    r[u] = reduce_nearest(z[u]);
    n[u] = _mm512_sub_ps(z[u], r[u]);
  }
  for (int u = 0; u < U; ++u) p[u] = _mm512_fmadd_ps(_mm512_set1_ps(C::c5), r[u], _mm512_set1_ps(C::c4));
  for (const float c : {C::c3, C::c2, C::c1, C::c0})
    for (int u = 0; u < U; ++u) p[u] = _mm512_fmadd_ps(p[u], r[u], _mm512_set1_ps(c));
  for (int u = 0; u < U; ++u) {
    const __mmask16 gate = _mm512_cmp_ps_mask(z[u], _mm512_set1_ps(127.0f), _CMP_NGT_UQ);
    x[u] = _mm512_maskz_div_ps(gate, x[u], _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_scalef_ps(p[u], n[u])));
  }
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

#if defined(ROOFTOP_HAS_EXP_LANES)
ROOFTOP_AVX512_WARNINGS_OFF
/// times_sigmoid_of_exp2 of one register: the array form's steps.
[[gnu::always_inline]] inline Floats times_sigmoid_of_exp2(Floats x, Floats z) {
  Floats v[1] = {x};
  const Floats w[1] = {z};
  times_sigmoid_of_exp2(v, w);
  return v[0];
}

/// math::gelu_tanh in lanes.
[[gnu::always_inline]] inline Floats gelu_tanh(Floats x) {
  return times_sigmoid_of_exp2(x, x * fmadd(x * x, splat(math::gelu_tanh_c3), splat(math::gelu_tanh_c1)));
}

/// math::silu in lanes.
[[gnu::always_inline]] inline Floats silu(Floats x) { return times_sigmoid_of_exp2(x, x * splat(-math::log2e)); }

/// gelu_tanh and silu of U registers in place, together (times_sigmoid_of_exp2 of U).
template <int U>
[[gnu::always_inline]] inline void gelu_tanh(Floats (&x)[U]) {
  Floats z[U];
  for (int u = 0; u < U; ++u) z[u] = x[u] * fmadd(x[u] * x[u], splat(math::gelu_tanh_c3), splat(math::gelu_tanh_c1));
  times_sigmoid_of_exp2(x, z);
}
template <int U>
[[gnu::always_inline]] inline void silu(Floats (&x)[U]) {
  Floats z[U];
  for (int u = 0; u < U; ++u) z[u] = x[u] * splat(-math::log2e);
  times_sigmoid_of_exp2(x, z);
}

/// math::gelu_erf of U registers in place, together: its operations in the same order, each
/// step over all the registers before the next, so the same values bit for bit. Written in
/// GCC's vector extensions (arithmetic on whole registers; min_of and max_of for the selects),
/// one text for AVX-512 and AVX2 but for the exponential's last steps. GCC's vectorization of
/// the portable form ran 3.6x slower than the tanh form; the figures are at
/// kernels/activation.hpp's GeluErf.
template <int U>
[[gnu::always_inline]] inline void gelu_erf(Floats (&x)[U]) {
  using Bits = std::uint32_t __attribute__((vector_size(sizeof(Floats))));
  using P = math::detail::GeluErfPoly;
  using Q = math::detail::Exp2Poly;
  const Floats clamp = splat(P::clamp), floor = splat(-127.0f);
  // |x| held at 16, b = |x| sqrt(log2(e) / 2), h = 1 / (2 sqrt(log2 e) + b).
  Floats ax[U], b[U], h[U], p[U];
  for (int u = 0; u < U; ++u) {
    const Floats a = reinterpret_cast<Floats>(reinterpret_cast<Bits>(x[u]) & 0x7fffffffu);
    ax[u] = min_of(clamp, a);  // a where a is NaN
    b[u] = ax[u] * splat(P::b);
    h[u] = splat(1.0f) / (splat(P::d) + b[u]);
  }
  // The fit's polynomial in h.
  for (int u = 0; u < U; ++u) {
    const Floats h2 = h[u] * h[u], h4 = h2 * h2;
    const Floats p03 = fmadd(fmadd(splat(P::c3), h[u], splat(P::c2)), h2, fmadd(splat(P::c1), h[u], splat(P::c0)));
    const Floats p47 = fmadd(fmadd(splat(P::c7), h[u], splat(P::c6)), h2, fmadd(splat(P::c5), h[u], splat(P::c4)));
    p[u] = fmadd(fmadd(splat(P::c9), h[u], splat(P::c8)), h4 * h4, fmadd(p47, h4, p03));
  }
  // 2^v, v = p - b^2, held at -127 or more (math::exp2_or_zero_below): b becomes v's rounding n
  // and p the rest r, 2^v = q 2^n for q = exp2_poly(r), 0 for n = -127.
  for (int u = 0; u < U; ++u) {
    Floats v = fmadd(-b[u], b[u], p[u]);
    v = max_of(floor, v);  // v where v is NaN
#if defined(ROOFTOP_HAS_EXP_VECTORS)
    // With AVX-512 the rest and the scaling are one instruction each (vreduceps, vscalefps:
    // the same values, see exp2_parts), the 0 at n = -127 a mask.
    p[u] = reduce_nearest(v);
    b[u] = v - p[u];
#else
    const Floats magic = splat(math::detail::round_magic);
    b[u] = v + magic;  // n in the low bits
    p[u] = v - (b[u] - magic);
#endif
  }
  Floats q[U];
  for (int u = 0; u < U; ++u) q[u] = fmadd(splat(Q::c5), p[u], splat(Q::c4));
  for (const float c : {Q::c3, Q::c2, Q::c1, Q::c0})
    for (int u = 0; u < U; ++u) q[u] = fmadd(q[u], p[u], splat(c));
  // max(x, 0) - (|x| h) 2^v, the max vmaxps(-0, x): -0 for x < 0 and x = -0, x for x > 0 and
  // x = +0 (and NaN x, where the result is NaN anyway), math::gelu_erf's bits.
  const Floats minus_zero = splat(-0.0f);
  for (int u = 0; u < U; ++u) {
#if defined(ROOFTOP_HAS_EXP_VECTORS)
    const Floats tail = _mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(b[u], floor, _CMP_NEQ_UQ), q[u], b[u]);
#else
    const Floats tail = q[u] * reinterpret_cast<Floats>((reinterpret_cast<Bits>(b[u]) << 23) + 0x3f800000u);
#endif
    x[u] = fmadd(-(ax[u] * h[u]), tail, max_of(minus_zero, x[u]));
  }
}
/// math::gelu_erf in lanes.
[[gnu::always_inline]] inline Floats gelu_erf(Floats x) {
  Floats v[1] = {x};
  gelu_erf(v);
  return v[0];
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

}  // namespace rooftop::cpu
