// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// core/math.hpp's exp2 and the gates built on it, sixteen fp32 lanes at a time with AVX-512 and
/// eight with AVX2, the same values bit for bit. With AVX-512 the rounding of the argument and
/// the scaling by 2^n are one instruction each (vrndscaleps, vscalefps), where GCC's
/// vectorization of the portable form takes five (adding and subtracting a rounding constant,
/// a shift, an integer add, a multiply). vscalefps multiplies by 2^n exactly as
/// math::detail::scale_by_pow2 does, and rounding to nearest is what the portable form's
/// constant does. With AVX2, the portable form's operations in intrinsics. Used by softmax's
/// rows (softmax_row.hpp) and by GELU and SiLU on the host (kernels/activation.hpp); GELU's erf
/// form adds half_erfc.
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
/// 2^z for z in [-125, 127] as n = round(z) and p = 2^(z - n) (math::detail::exp2_poly): the
/// result is p * 2^n (vscalefps), which the caller may mask.
struct Exp2Parts {
  __m512 p, n;
};
[[gnu::always_inline]] inline Exp2Parts exp2_parts(__m512 z) {
  const __m512 n = _mm512_roundscale_ps(z, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return {exp2_poly(_mm512_sub_ps(z, n)), n};
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
/// 2^z, 0 where z < -125 (and z = -Inf), NaN where z is NaN: math::exp2_or_zero's values.
[[gnu::always_inline]] inline __m512 exp2_or_zero(__m512 z) {
  const __mmask16 in_range = _mm512_cmp_ps_mask(z, _mm512_set1_ps(-125.0f), _CMP_NLT_UQ);
  const Exp2Parts e = exp2_parts(z);
  return _mm512_maskz_scalef_ps(in_range, e.p, e.n);
}
ROOFTOP_AVX512_WARNINGS_ON
#elif defined(ROOFTOP_HAS_EXP_LANES)
/// 2^z, 0 where z < -125 (and z = -Inf), NaN where z is NaN: math::exp2_or_zero's values.
[[gnu::always_inline]] inline __m256 exp2_or_zero(__m256 z) {
  return _mm256_andnot_ps(_mm256_cmp_ps(z, _mm256_set1_ps(-125.0f), _CMP_LT_OQ), exp2_in_range(z));
}
#endif

#if defined(ROOFTOP_HAS_EXP_VECTORS)
ROOFTOP_AVX512_WARNINGS_OFF
/// times_sigmoid_of_exp2 of U registers at once on AVX-512 hosts, each step over all of them
/// before the next (as the AVX2 form above), rounding and scaling as exp2_parts does: the same
/// values.
template <int U>
[[gnu::always_inline]] inline void times_sigmoid_of_exp2(__m512 (&x)[U], const __m512 (&z)[U]) {
  using C = math::detail::Exp2Poly;
  __m512 n[U], r[U], p[U];
  for (int u = 0; u < U; ++u) {
    const __m512 w = _mm512_max_ps(_mm512_set1_ps(-125.0f), z[u]);  // z where z is NaN (vmaxps)
    n[u] = _mm512_roundscale_ps(w, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r[u] = _mm512_sub_ps(w, n[u]);
  }
  for (int u = 0; u < U; ++u) p[u] = _mm512_fmadd_ps(_mm512_set1_ps(C::c5), r[u], _mm512_set1_ps(C::c4));
  for (const float c : {C::c3, C::c2, C::c1, C::c0})
    for (int u = 0; u < U; ++u) p[u] = _mm512_fmadd_ps(p[u], r[u], _mm512_set1_ps(c));
  for (int u = 0; u < U; ++u) {
    const __m512 gated = _mm512_div_ps(x[u], _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_scalef_ps(p[u], n[u])));
    x[u] = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(z[u], _mm512_set1_ps(127.0f), _CMP_NGT_UQ), gated);
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

/// math::gelu_erf of U registers in place, together: half_erfc's and exp2_in_range's
/// operations in the same order, each step over all the registers before the next, so the
/// same values bit for bit. Written in GCC's vector extensions (arithmetic, comparisons and ?:
/// on whole registers), one text for AVX-512 and AVX2 but for the exponential's last steps.
/// GCC's vectorization of the portable form ran 3.6x slower than the tanh form; the figures
/// are at kernels/activation.hpp's GeluErf.
template <int U>
[[gnu::always_inline]] inline void gelu_erf(Floats (&x)[U]) {
  using Bits = std::uint32_t __attribute__((vector_size(sizeof(Floats))));
  using P = math::detail::ErfcPoly;
  using Q = math::detail::Exp2Poly;
  const Floats zero = splat(0.0f), one = splat(1.0f), floor = splat(-125.0f);
  // half_erfc(z) of z = gelu_erf_c x, a = |z|. z < 0 where x > 0 (gelu_erf_c < 0), so z is not
  // kept: with U = 4, x, a, h and p fill AVX2's sixteen registers (a scratch program, one
  // thread in L1: 17.8 against 19.5 TSC cycles per register of eight with z kept).
  Floats a[U], h[U], p[U];
  for (int u = 0; u < U; ++u) {
    a[u] = reinterpret_cast<Floats>(reinterpret_cast<Bits>(x[u] * splat(math::gelu_erf_c)) & 0x7fffffffu);
    h[u] = one / (splat(2.0f) + a[u]);
  }
  // The fit's polynomial in h.
  for (int u = 0; u < U; ++u) p[u] = fmadd(splat(P::c9), h[u], splat(P::c8));
  for (const float c : {P::c7, P::c6, P::c5, P::c4, P::c3, P::c2, P::c1, P::c0})
    for (int u = 0; u < U; ++u) p[u] = fmadd(p[u], h[u], splat(c));
  // 2^v, v = -a^2 log2 e + p: exp2_in_range of max(v, -125), 0 where v < -125. p becomes v,
  // a its rounding n and r the rest, 2^v = q 2^n for q = exp2_poly(r).
  Floats r[U];
  for (int u = 0; u < U; ++u) p[u] = fmadd(-(a[u] * splat(math::log2e)), a[u], p[u]);
#if defined(ROOFTOP_HAS_EXP_VECTORS)
  // With AVX-512 the rounding and the scaling are one instruction each (vrndscaleps, vscalefps:
  // the same values, see exp2_parts) and the selects masks of the operations they choose
  // between. A scratch program, one thread, 4096 values in L1, ns per value: 0.32 before the
  // base-2 rewrite (math::half_erfc), 0.32 after it with the steps below and the selects as
  // blends, 0.27 this way.
  for (int u = 0; u < U; ++u) {
    const Floats w = _mm512_max_ps(floor, p[u]);  // v where v is NaN
    a[u] = _mm512_roundscale_ps(w, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r[u] = w - a[u];
  }
#else
  const Floats magic = splat(math::detail::round_magic);
  for (int u = 0; u < U; ++u) {
    const Floats w = p[u] < floor ? floor : p[u];
    a[u] = w + magic;  // n in the low bits
    r[u] = w - (a[u] - magic);
  }
#endif
  Floats q[U];
  for (int u = 0; u < U; ++u) q[u] = fmadd(splat(Q::c5), r[u], splat(Q::c4));
  for (const float c : {Q::c3, Q::c2, Q::c1, Q::c0})
    for (int u = 0; u < U; ++u) q[u] = fmadd(q[u], r[u], splat(c));
  // tail = h 2^v, half_erfc = 1 - tail where x > 0 (z < 0) else tail, x half_erfc but 0 at -Inf.
  const Floats minus_inf = splat(-std::numeric_limits<float>::infinity());
  for (int u = 0; u < U; ++u) {
#if defined(ROOFTOP_HAS_EXP_VECTORS)
    const Floats tail = _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(p[u], floor, _CMP_NLT_UQ), h[u], _mm512_scalef_ps(q[u], a[u]));
    const Floats half = _mm512_mask_sub_ps(tail, _mm512_cmp_ps_mask(x[u], zero, _CMP_GT_OQ), one, tail);
    x[u] = _mm512_maskz_mul_ps(_mm512_cmp_ps_mask(x[u], minus_inf, _CMP_NEQ_UQ), x[u], half);
#else
    const Floats pow2 = reinterpret_cast<Floats>((reinterpret_cast<Bits>(a[u]) << 23) + 0x3f800000u);
    const Floats tail = h[u] * (p[u] < floor ? zero : q[u] * pow2);
    const Floats g = x[u] * (x[u] > zero ? one - tail : tail);
    x[u] = x[u] == minus_inf ? zero : g;
#endif
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
