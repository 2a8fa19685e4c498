// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Storage types (bf16, fp16), dtype tags and names, and the arithmetic type each dtype
/// computes and accumulates in.
#pragma once

#include "kokkos_compat.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace rooftop {

namespace detail {
/// d narrowed to float with round-to-odd (toward zero, the lowest bit set where inexact), so
/// that rounding the result to nearest even in 16 bits (fewer than 24 - 2) gives what rounding
/// d itself would: no double rounding. NaN and exact values pass as static_cast does.
KOKKOS_INLINE_FUNCTION float to_float_odd(double d) {
  const float f = static_cast<float>(d);
  const double back = f;
  if (back == d || back != back) return f;
  std::uint32_t u = compat::bit_cast<std::uint32_t>(f);
  if (d > 0 ? back > d : back < d) --u;  // rounded away from zero (to Inf, too): one step back
  return compat::bit_cast<float>(u | 1u);
}
}  // namespace detail

/// bfloat16 storage: the top 16 bits of an IEEE binary32. Converts to and from float with
/// round-to-nearest-even; NaN stays NaN (quieted), +-Inf stays +-Inf, overflow rounds to Inf.
/// Arithmetic happens in float: read with `float(x)`, write with `bf16(value)`. On GPUs the
/// conversions are the hardware's (fp16 everywhere, bf16 from sm_80), the same bits. From
/// double: rounded once (to_float_odd), not through the nearest float.
struct bf16 {
  std::uint16_t bits;

  bf16() = default;
  KOKKOS_FORCEINLINE_FUNCTION explicit bf16(float f) : bits(from_float(f)) {}
  KOKKOS_INLINE_FUNCTION explicit bf16(double d) : bf16(detail::to_float_odd(d)) {}
  KOKKOS_FORCEINLINE_FUNCTION operator float() const {
    return compat::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
  }
  KOKKOS_INLINE_FUNCTION static bf16 from_bits(std::uint16_t b) {
    bf16 h;
    h.bits = b;
    return h;
  }

  KOKKOS_FORCEINLINE_FUNCTION static std::uint16_t from_float(float f) {
    const std::uint32_t u = compat::bit_cast<std::uint32_t>(f);
    const bool is_nan = (u & 0x7fffffffu) > 0x7f800000u;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    // The GPU's own conversion (one F2F), the same rounding; its canonical NaN replaced by
    // the quieted NaN below, so the stored bits match the host's.
    std::uint16_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return is_nan ? static_cast<std::uint16_t>((u >> 16) | 0x0040u) : h;
#else
    // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even; a carry into the
    // exponent is the correct rounding up (to Inf past the largest finite value).
    const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    // Written as a select, not a branch, so loops over bf16 vectorize.
    return static_cast<std::uint16_t>(is_nan ? ((u >> 16) | 0x0040u) : rounded);
#endif
  }
};

/// IEEE binary16 storage. Converts to and from float with round-to-nearest-even, including
/// subnormals; NaN becomes a quiet NaN (sign kept, payload not), +-Inf stays +-Inf, |x| >= 65520
/// rounds to Inf. From double: rounded once (to_float_odd), not through the nearest float.
struct fp16 {
  std::uint16_t bits;

  fp16() = default;
  KOKKOS_FORCEINLINE_FUNCTION explicit fp16(float f) : bits(from_float(f)) {}
  KOKKOS_INLINE_FUNCTION explicit fp16(double d) : fp16(detail::to_float_odd(d)) {}
  KOKKOS_FORCEINLINE_FUNCTION operator float() const { return to_float(bits); }
  KOKKOS_INLINE_FUNCTION static fp16 from_bits(std::uint16_t b) {
    fp16 h;
    h.bits = b;
    return h;
  }

  // Both conversions let the FPU do the rounding and rescaling, so each is a handful of
  // branch-free integer and float operations that vectorize (CPU) and need no half-precision
  // hardware. They need round-to-nearest (the default) and nothing else: no intermediate is a
  // float subnormal except where the result rounds to zero anyway.
  KOKKOS_FORCEINLINE_FUNCTION static float to_float(std::uint16_t bits16) {
#if defined(__CUDA_ARCH__)
    // The GPU's own conversion: one instruction where the form below takes about a dozen.
    // Exact for every half but NaN, which stays NaN (its payload bits may differ from the
    // host's, as the form below gives them on GPUs too).
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits16));
    return f;
#else
    const std::uint32_t w = static_cast<std::uint32_t>(bits16) << 16;
    const std::uint32_t sign = w & 0x80000000u;
    const std::uint32_t two_w = w + w;  // exponent and mantissa, sign shifted out
    // Normal, Inf, NaN: place exponent and mantissa in a float whose exponent is 224 too high
    // (so Inf/NaN land on 255), then scale by 2^-112 (net rebias 127 - 15).
    const float normal = compat::bit_cast<float>((two_w >> 4) + (0xe0u << 23)) * 0x1p-112f;
    // Subnormal and zero: mantissa as the low bits of a float in [0.5, 1); subtracting 0.5
    // leaves mantissa * 2^-24 exactly.
    const float subnormal = compat::bit_cast<float>((two_w >> 17) | (126u << 23)) - 0.5f;
    // Selected with a mask made by arithmetic, not a comparison: GCC keeps such selects as
    // branches, which stops vectorization.
    const std::uint32_t is_subnormal = 0u - (((two_w >> 27) - 1u) >> 31);  // exponent == 0
    const std::uint32_t magnitude = (compat::bit_cast<std::uint32_t>(subnormal) & is_subnormal) |
                                    (compat::bit_cast<std::uint32_t>(normal) & ~is_subnormal);
    return compat::bit_cast<float>(sign | magnitude);
#endif
  }

  KOKKOS_FORCEINLINE_FUNCTION static std::uint16_t from_float(float f) {
    const std::uint32_t w = compat::bit_cast<std::uint32_t>(f);
#if defined(__CUDA_ARCH__)
    // The GPU's own conversion (one F2F where the form below takes about twenty operations),
    // the same rounding, subnormals and overflow; NaN as the form below gives it (sign kept).
    std::uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return f != f ? static_cast<std::uint16_t>(((w >> 16) & 0x8000u) | 0x7e00u) : h;
#else
    const std::uint32_t two_w = w + w;  // sign shifted out
    const std::uint32_t sign = w & 0x80000000u;
    // |f| * 4, computed so that |f| >= 2^16 overflows to Inf.
    float base = (compat::fabs(f) * 0x1p112f) * 0x1p-110f;
    // Adding 2^(e+...) aligns the float's last mantissa bit with the half's, so the FPU rounds
    // the sum to nearest even at half precision; below 2^-14 the alignment stays at the
    // subnormal half's fixed position.
    std::uint32_t bias = two_w & 0xff000000u;
    bias = bias < 0x71000000u ? 0x71000000u : bias;
    base = compat::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
    const std::uint32_t bits = compat::bit_cast<std::uint32_t>(base);
    const std::uint32_t nonsign = ((bits >> 13) & 0x00007c00u) + (bits & 0x00000fffu);
    // NaN (two_w > 0xff000000; two_w is even, so halving keeps the comparison exact and the
    // operands below 2^31) becomes the canonical quiet NaN; arithmetic mask as above.
    const std::uint32_t is_nan = 0u - ((0x7f800000u - (two_w >> 1)) >> 31);
    return static_cast<std::uint16_t>((sign >> 16) | (0x7e00u & is_nan) | (nonsign & ~is_nan));
#endif
  }
};

/// Runtime dtype tag (for reports, CLI and dispatch).
enum class DType { fp64, fp32, bf16, fp16 };

inline const char* dtype_name(DType d) {
  switch (d) {
    case DType::fp64: return "fp64";
    case DType::fp32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
  }
  return "?";
}

/// Parses "fp64", "fp32", "bf16", "fp16" (also "double", "float", "half"); throws on others.
inline DType parse_dtype(const std::string& s) {
  if (s == "fp64" || s == "double" || s == "f64") return DType::fp64;
  if (s == "fp32" || s == "float" || s == "f32") return DType::fp32;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "fp16" || s == "half" || s == "f16") return DType::fp16;
  throw std::invalid_argument("unknown dtype '" + s + "' (expected fp64, fp32, bf16 or fp16)");
}

template <class T> struct dtype_of;
template <> struct dtype_of<double> { static constexpr DType value = DType::fp64; };
template <> struct dtype_of<float> { static constexpr DType value = DType::fp32; };
template <> struct dtype_of<bf16> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<fp16> { static constexpr DType value = DType::fp16; };

template <class T>
inline constexpr bool is_supported_dtype_v =
    std::is_same_v<T, double> || std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, fp16>;
/// Whether every View of Views holds one of the supported dtypes (const or not): the ops that
/// compute in them say so at compile time, where an integer View would compute in float.
template <class... Views>
inline constexpr bool supported_values_v = (is_supported_dtype_v<std::remove_cv_t<typename Views::value_type>> && ...);

/// The type arithmetic and accumulation happen in: fp64 for fp64 data, fp32 for everything else.
template <class T>
using compute_t = std::conditional_t<std::is_same_v<std::remove_cv_t<T>, double>, double, float>;

/// Machine epsilon of the storage type (distance from 1 to the next representable value).
template <class StorageType, class T = std::remove_cv_t<StorageType>>
constexpr double epsilon() {
  static_assert(is_supported_dtype_v<T>, "epsilon: double, float, bf16 or fp16");
  if constexpr (std::is_same_v<T, double>) return 0x1p-52;
  else if constexpr (std::is_same_v<T, float>) return 0x1p-23;
  else if constexpr (std::is_same_v<T, bf16>) return 0x1p-7;
  else return 0x1p-10;  // fp16
}

/// Smallest positive subnormal of the storage type: the absolute spacing of results near zero.
template <class StorageType, class T = std::remove_cv_t<StorageType>>
constexpr double denorm_min() {
  static_assert(is_supported_dtype_v<T>, "denorm_min: double, float, bf16 or fp16");
  if constexpr (std::is_same_v<T, double>) return 0x1p-1074;
  else if constexpr (std::is_same_v<T, float>) return 0x1p-149;
  else if constexpr (std::is_same_v<T, bf16>) return 0x1p-133;
  else return 0x1p-24;  // fp16
}

template <class T> struct type_tag { using type = T; };

/// Calls f(type_tag<T>{}) with T the storage type of d.
template <class F>
decltype(auto) dispatch_dtype(DType d, F&& f) {
  switch (d) {
    case DType::fp64: return f(type_tag<double>{});
    case DType::fp32: return f(type_tag<float>{});
    case DType::bf16: return f(type_tag<bf16>{});
    case DType::fp16: break;
  }
  return f(type_tag<fp16>{});
}

}  // namespace rooftop
