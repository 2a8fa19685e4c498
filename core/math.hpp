// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Branch-free fp32 math for kernels whose speed is bandwidth: exp and the functions built on
/// it. libm's expf is a scalar call the compiler cannot vectorize without -ffast-math, and at
/// ~20 cycles per element it would make softmax or GELU compute-bound on a CPU. These are
/// straight-line multiply-add code (compat::mul_add; selects, no branches), so loops over them
/// vectorize, and they run unchanged in device code.
#pragma once

#include "kokkos_compat.hpp"

#include <cstdint>
#include <limits>

namespace rooftop::math {

/// c ? a : b, as bit operations. With GCC's default -ftrapping-math, a ternary whose arm is
/// computed (a product, a division) is sunk into a branch the vectorizer cannot if-convert;
/// masks keep the loop straight-line, so it vectorizes.
KOKKOS_FORCEINLINE_FUNCTION float select(bool c, float a, float b) {
  const std::uint32_t mask = 0u - static_cast<std::uint32_t>(c);
  return compat::bit_cast<float>((compat::bit_cast<std::uint32_t>(a) & mask) | (compat::bit_cast<std::uint32_t>(b) & ~mask));
}
KOKKOS_FORCEINLINE_FUNCTION double select(bool c, double a, double b) {
  const std::uint64_t mask = 0u - static_cast<std::uint64_t>(c);
  return compat::bit_cast<double>((compat::bit_cast<std::uint64_t>(a) & mask) | (compat::bit_cast<std::uint64_t>(b) & ~mask));
}

namespace detail {
/// 2^r for r in [-1/2, 1/2]: the degree-5 minimax polynomial, relative error 7.5e-8 (0.63 ulp)
/// before fp32 rounding. Its coefficients are named for the host's vector form
/// (backends/cpu/exp_vectors.hpp), which must give the same values.
struct Exp2Poly {
  static constexpr float c5 = 0x1.5c08e6p-10f, c4 = 0x1.3d0c52p-7f, c3 = 0x1.c6b6e4p-5f, c2 = 0x1.ebf918p-3f,
                         c1 = 0x1.62e42ap-1f, c0 = 0x1.000002p+0f;
};
KOKKOS_FORCEINLINE_FUNCTION float exp2_poly(float r) {
  float p = Exp2Poly::c5;
  p = compat::mul_add(p, r, Exp2Poly::c4);
  p = compat::mul_add(p, r, Exp2Poly::c3);
  p = compat::mul_add(p, r, Exp2Poly::c2);
  p = compat::mul_add(p, r, Exp2Poly::c1);
  return compat::mul_add(p, r, Exp2Poly::c0);
}

/// p * 2^n where t = n + 1.5 * 2^23 in float (n an integer, so n sits in t's low mantissa
/// bits) and p in [1/sqrt 2, sqrt 2], exact. Shifting t's bits left by 23 leaves exactly
/// n << 23 (the bits of 1.5 * 2^23 shift out), in unsigned arithmetic: no overflow, no
/// out-of-range float-to-int conversion; adding 1.0f's bits makes it 2^n, a normal float for n
/// in [-126, 127]. A product rather than adding n to p's exponent field directly: a NaN p
/// (from a NaN argument) stays NaN whatever its payload, where the sum of bits turned a NaN
/// with any of its low 9 payload bits set into a number.
KOKKOS_FORCEINLINE_FUNCTION float scale_by_pow2(float p, float t) {
  return p * compat::bit_cast<float>((compat::bit_cast<std::uint32_t>(t) << 23) + 0x3f800000u);
}

/// Adding and subtracting 1.5 * 2^23 rounds a float of magnitude < 2^22 to the nearest integer.
constexpr float round_magic = 12582912.0f;
}  // namespace detail

/// 2^z for z in [-125, 127] (relative error within 3 ulp); outside that range the result is
/// meaningless and callers replace it (see exp, times_sigmoid_of_exp2). For arguments the caller has
/// computed anyway (softmax's scaled differences, GELU's cubic), working in base 2 saves the
/// reduction of exp's argument.
/// On CUDA devices it is the special-function unit's ex2.approx (one instruction, relative error
/// about 2 ulp; results in that range are normal, so .ftz changes none): the polynomial's dozen
/// instructions per value made softmax's rows instruction-bound on an H100.
KOKKOS_FORCEINLINE_FUNCTION float exp2_in_range(float z) {
#if defined(__CUDA_ARCH__)
  float e;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(z));
  return e;
#else
  const float t = z + detail::round_magic;
  return detail::scale_by_pow2(detail::exp2_poly(z - (t - detail::round_magic)), t);  // z - n: exact
#endif
}

/// 2^z for z < 127.5, and 0 where z < -125 (z = -Inf among them): exp2_in_range on an argument
/// held in its range, the result selected after. NaN z gives NaN. Not for z >= 127.5 (z rounds
/// to n = 128, whose exponent bits give +Inf; past that they wrap: 129 gives -0 on the host);
/// its callers' arguments, differences from a max, are never above 0.
KOKKOS_FORCEINLINE_FUNCTION float exp2_or_zero(float z) {
  return select(z < -125.0f, 0.0f, exp2_in_range(select(z < -125.0f, -125.0f, z)));
}

/// log2(e) in float, for callers of exp2_in_range.
constexpr float log2e = 1.44269504f;

namespace detail {
/// exp's constants: -ln 2 as a part exact in a product with n and a correction (Cody-Waite),
/// and the arguments below and above which the result is 0 and Inf.
struct ExpConstants {
  static constexpr float minus_ln2_hi = -0.693145751953125f, minus_ln2_lo = -1.428606765330187e-6f;
  static constexpr float flush_below = -86.6434f, overflow_above = 88.72283f;
};
}  // namespace detail

/// e^x for float, within 3 ulp of the true value for x >= -86.6434 (results of 2^-125 and
/// more; smaller x gives +0). e^-Inf = 0, e^Inf = Inf, overflow (x > 88.72283) gives Inf, NaN
/// stays NaN.
KOKKOS_FORCEINLINE_FUNCTION float exp(float x) {
  // x = n ln2 + r with |r| <= ln2/2 (Cody-Waite: ln2 split in a part exact in a product with
  // n and a correction), so r is accurate for large |x| too; then e^r = 2^(r log2 e).
  // Outside [-86.6434, 88.72283] n is meaningless, and the selects at the end decide the result.
  using C = detail::ExpConstants;
  // n in t's low bits (one rounding with a fused multiply-add; without, two, and n may be the
  // other neighbour of a tie: |r| exceeds ln2/2 by an ulp at most, in the polynomial's margin).
  const float t = compat::mul_add(x, log2e, detail::round_magic);
  const float n = t - detail::round_magic;
  float r = compat::mul_add(n, C::minus_ln2_hi, x);
  r = compat::mul_add(n, C::minus_ln2_lo, r);
  // 2p * 2^(n - 1), not p * 2^n: n reaches 128 for x in (88.376, 88.72283], and 2^128 is no
  // float; 2^(n - 1) is a normal float for every n in range and the doubling is exact (t - 1
  // holds n - 1 in its low bits).
  const float y = detail::scale_by_pow2(2.0f * detail::exp2_poly(r * log2e), t - 1.0f);
  return select(x < C::flush_below, 0.0f, select(x > C::overflow_above, std::numeric_limits<float>::infinity(), y));
}

/// x / (1 + 2^z): x times the logistic sigmoid of -z ln 2, the gate of SiLU and GELU (tanh
/// form), with z computed by the caller from x. One exp2 and one division; 2^z below 2^-125
/// leaves 1 + 2^z = 1 anyway, and for z > 127 the result, below |x| 2^-127, is returned as 0
/// (so f(-Inf) = 0, not -Inf / Inf = NaN). NaN x gives NaN.
KOKKOS_FORCEINLINE_FUNCTION float times_sigmoid_of_exp2(float x, float z) {
  const float e = exp2_in_range(select(z < -125.0f, -125.0f, z));
  return select(z > 127.0f, 0.0f, x / (1.0f + e));
}

/// x * sigmoid(x) = x / (1 + e^-x): SiLU (swish). Error within 2 ulp of |x|; silu(-Inf) = 0.
KOKKOS_FORCEINLINE_FUNCTION float silu(float x) { return times_sigmoid_of_exp2(x, x * -log2e); }

/// GELU tanh form's constants (below).
constexpr float gelu_tanh_c1 = -2.30220819f;   // -2 sqrt(2/pi) log2(e)
constexpr float gelu_tanh_c3 = -0.102943242f;  // gelu_tanh_c1 * 0.044715

/// GELU, tanh form: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed as
/// x / (1 + e^(-2u)) (the same function) so it stays accurate where tanh is near -1, with
/// -2u log2(e) = x (c1 + c3 x^2) in one fma and one multiply (c1, c3: gelu_tanh_c1, _c3, which
/// the host's vector form shares). Error within 2 ulp of |x|;
/// gelu_tanh(-Inf) = 0.
KOKKOS_FORCEINLINE_FUNCTION float gelu_tanh(float x) {
  return times_sigmoid_of_exp2(x, x * compat::mul_add(x * x, gelu_tanh_c3, gelu_tanh_c1));
}

namespace detail {
/// GELU erf form's fit of erfc (W. H. Press et al., Numerical Recipes, erfcc: erfc(a) = t
/// exp(-a^2 + sum c_k t^k) for t = 1 / (1 + a/2), a >= 0) in the variables gelu_erf takes for
/// a = |x| / sqrt 2: b = |x| sqrt(log2(e) / 2), so that b^2 = a^2 log2 e, and h = 1 / (d + b),
/// d = 2 sqrt(log2 e), so that t = 2 sqrt(log2 e) h. The c_k become c_k 2^k log2(e)^((k+2)/2),
/// rounded to float, c_0 plus log2(sqrt(log2 e)), so that erfc(a) / 2 = h 2^(P(h) - b^2).
/// Named for the host's vector form (backends/cpu/exp_vectors.hpp).
struct GeluErfPoly {
  static constexpr float c9 = 656.754096f, c8 = -1315.42135f, c7 = 991.399916f, c6 = -314.740063f, c5 = 32.1854549f,
                         c4 = -8.95011528f, c3 = 1.93566719f, c2 = 3.11449368f, c1 = 3.46578883f, c0 = -1.56136502f;
  static constexpr float b = 0.849321800f;  // sqrt(log2(e) / 2)
  static constexpr float d = 2.40224482f;   // 2 sqrt(log2 e)
  static constexpr float clamp = 16.0f;     // |x| beyond which the tail term is 0
};
}  // namespace detail

/// 2^z, 0 where z < -126.5 (z = -Inf among them): exp2_in_range with z held at -127 or more,
/// where 2^n for the rounded n = -127 comes out of scale_by_pow2's bits as +0 (no select after,
/// where exp2_or_zero takes one; on CUDA devices ex2.approx.ftz flushes results below 2^-126).
/// NaN z gives NaN.
KOKKOS_FORCEINLINE_FUNCTION float exp2_or_zero_below(float z) {
  return exp2_in_range(select(-127.0f > z, -127.0f, z));  // vmaxps(-127, z): z where z is NaN
}

/// GELU, exact (erf) form: x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)), computed from the tail
/// Phi(-|x|) = erfc(a) / 2, a = |x| / sqrt 2, as max(x, 0) - |x| Phi(-|x|) (x - x Phi(-x) for
/// x > 0, x Phi(x) otherwise: one fma, no select between the sides), through Numerical Recipes'
/// erfcc (a Chebyshev fit, relative error below 1.2e-7) in the variables of
/// detail::GeluErfPoly: |x| Phi(-|x|) = (|x| h) 2^(P(h) - b^2), P by Estrin's scheme (half
/// Horner's chain of dependent fmas, for three more multiplies: see docs/kernels.md), 2^ of its
/// argument held at -127 or more (exp2_or_zero_below) and |x| held at 16 or less (beyond it the
/// tail term is 0 and max(x, 0) the result: +Inf at +Inf, -0 at -Inf). The max is -0 where x's
/// sign is set (x = -0 among them), so that a result for x <= -0 has x's sign.
/// In fp32 the rounding of b^2 (about an ulp of it) becomes a relative error of the tail: within
/// 6 ulp of |x| (4.2 measured on x86 over every 7th float of 1e-6 <= |x| <= 100); for x < -2,
/// where the result is the tail, a relative error up to 1.4e-5 where the result is 1e-37 or
/// more (x down to -13). Built without a fused multiply-add (compat::mul_add's two roundings):
/// 4.6 ulp and 1.6e-5 (b^2 split to be exact gave no better, 1.8e-5).
KOKKOS_FORCEINLINE_FUNCTION float gelu_erf(float x) {
  using C = detail::GeluErfPoly;
  const float ax = select(C::clamp < compat::fabs(x), C::clamp, compat::fabs(x));  // vminps(16, |x|)
  const float b = ax * C::b;
  const float h = 1.0f / (C::d + b);
  // P(h) by Estrin's scheme: pairs of terms, then pairs of pairs with h^2, h^4 and h^8.
  const float h2 = h * h, h4 = h2 * h2;
  const float p03 = compat::mul_add(compat::mul_add(C::c3, h, C::c2), h2, compat::mul_add(C::c1, h, C::c0));
  const float p47 = compat::mul_add(compat::mul_add(C::c7, h, C::c6), h2, compat::mul_add(C::c5, h, C::c4));
  const float p = compat::mul_add(compat::mul_add(C::c9, h, C::c8), h4 * h4, compat::mul_add(p47, h4, p03));
  const float tail = exp2_or_zero_below(compat::mul_add(-b, b, p));
  // max(x, 0), but -0 where x's sign is set: x's bits with all but the sign cleared there (the
  // vector form's vmaxps(-0, x)). In integer operations: Clang turned select(-0.0f > x, -0.0f,
  // x) into a comparison x <= 0, which gives -0 at x = +0.
  const std::uint32_t u = compat::bit_cast<std::uint32_t>(x);
  const float ramp = compat::bit_cast<float>(u & ~(static_cast<std::uint32_t>(static_cast<std::int32_t>(u) >> 31) >> 1));
  return compat::mul_add(-(ax * h), tail, ramp);
}

}  // namespace rooftop::math
