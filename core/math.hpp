// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Branch-free fp32 math for kernels whose speed is bandwidth: exp and the functions built on
/// it. libm's expf is a scalar call the compiler cannot vectorize without -ffast-math, and at
/// ~20 cycles per element it would make softmax or GELU compute-bound on a CPU. These are
/// straight-line fma code (selects, no branches), so loops over them vectorize, and they run
/// unchanged in device code.
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

/// e^x for float, within 3 ulp of the true value for results >= 2^-125; smaller results
/// (x < -87) are flushed to +0. e^-Inf = 0, e^Inf = Inf, overflow gives Inf, NaN stays NaN.
KOKKOS_FORCEINLINE_FUNCTION float exp(float x) {
  // x = n ln2 + r with |r| <= ln2/2 (Cody-Waite: ln2 split in a part exact in a product with
  // n and a correction). Adding and subtracting 1.5 * 2^23 rounds to the nearest integer.
  // Outside [-87, 88.72] n is meaningless, and the selects at the end decide the result.
  constexpr float magic = 12582912.0f;
  const float t = x * 1.44269504f + magic;
  const float n = t - magic;
  float r = compat::fma(n, -0.693145751953125f, x);
  r = compat::fma(n, -1.428606765330187e-6f, r);
  // e^r by its Taylor polynomial to degree 6: truncation error < 1.3e-7 relative (1 ulp) for
  // |r| <= 0.35.
  float p = 1.0f / 720;
  p = compat::fma(p, r, 1.0f / 120);
  p = compat::fma(p, r, 1.0f / 24);
  p = compat::fma(p, r, 1.0f / 6);
  p = compat::fma(p, r, 0.5f);
  p = compat::fma(p, r, 1.0f);
  p = compat::fma(p, r, 1.0f);
  // Multiply by 2^n by adding n to the exponent field. n as an integer is in t's low mantissa
  // bits (unsigned arithmetic: no overflow, no out-of-range float-to-int conversion); in
  // [-126, 128] the result is a normal float, and for NaN x, p is NaN and stays NaN.
  const std::uint32_t n_bits = compat::bit_cast<std::uint32_t>(t) - compat::bit_cast<std::uint32_t>(magic);
  const float y = compat::bit_cast<float>(compat::bit_cast<std::uint32_t>(p) + (n_bits << 23));
  return select(x < -87.0f, 0.0f, select(x > 88.72283f, std::numeric_limits<float>::infinity(), y));
}

/// f(x), except 0 at x = -Inf (the limit of x * sigmoid-like gates, where the formula would
/// give -Inf / Inf = NaN).
KOKKOS_FORCEINLINE_FUNCTION float zero_at_minus_inf(float x, float fx) {
  return select(x == -std::numeric_limits<float>::infinity(), 0.0f, fx);
}

/// x * sigmoid(x) = x / (1 + e^-x): SiLU (swish). Relative error a few ulp for every x;
/// silu(-Inf) = 0.
KOKKOS_FORCEINLINE_FUNCTION float silu(float x) { return zero_at_minus_inf(x, x / (1.0f + exp(-x))); }

/// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed as
/// x / (1 + e^(-2u)) (the same function) so it stays accurate where tanh is near -1;
/// gelu_tanh(-Inf) = 0.
KOKKOS_FORCEINLINE_FUNCTION float gelu_tanh(float x) {
  const float u = 0.7978845608f * compat::fma(0.044715f * x, x * x, x);
  return zero_at_minus_inf(x, x / (1.0f + exp(-2.0f * u)));
}

/// erfc(z) with relative error < 1.2e-7 everywhere (Chebyshev fit of W. H. Press et al.,
/// Numerical Recipes, erfcc): accurate in the tail, where 1 - erf(z) would cancel.
KOKKOS_FORCEINLINE_FUNCTION float erfc(float z) {
  const float a = compat::fabs(z);
  const float t = 1.0f / compat::fma(0.5f, a, 1.0f);
  float p = 0.17087277f;
  p = compat::fma(p, t, -0.82215223f);
  p = compat::fma(p, t, 1.48851587f);
  p = compat::fma(p, t, -1.13520398f);
  p = compat::fma(p, t, 0.27886807f);
  p = compat::fma(p, t, -0.18628806f);
  p = compat::fma(p, t, 0.09678418f);
  p = compat::fma(p, t, 0.37409196f);
  p = compat::fma(p, t, 1.00002368f);
  p = compat::fma(p, t, -1.26551223f);
  const float tail = t * exp(compat::fma(-a, a, p));
  return select(z < 0, 2.0f - tail, tail);
}

/// GELU, exact (erf) form: 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2);
/// gelu_erf(-Inf) = 0.
KOKKOS_FORCEINLINE_FUNCTION float gelu_erf(float x) { return zero_at_minus_inf(x, 0.5f * x * erfc(-0.70710678f * x)); }

}  // namespace rooftop::math
