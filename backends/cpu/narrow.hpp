// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Narrowing blocks of fp32 values to a storage type on the host. fp16 goes through F16C's
/// eight-wide conversion where the compiler targets it: GCC 12 does not vectorize the scalar
/// conversion (neither rooftop's branch-free one nor _Float16 casts), and storing fp16 from
/// fp32 costs ~0.33 ns per element that way on the Zen 3 VM against ~0.03 with F16C.
#pragma once

#include "../../core/types.hpp"

#include <cstdint>
#include <type_traits>

#if defined(__F16C__) && defined(__AVX__) && !defined(__CUDA_ARCH__)
#include <immintrin.h>
#define ROOFTOP_HAS_F16C 1
#endif

namespace rooftop::cpu {

/// Whether narrow<T> is faster than converting element by element.
template <class T>
inline constexpr bool narrows_in_blocks =
#if defined(ROOFTOP_HAS_F16C)
    std::is_same_v<T, fp16>;
#else
    false;
#endif

/// out[j] = T(in[j]) for j in [0, n). For fp16 with F16C the result is the same as fp16(float)
/// (round to nearest even, subnormals, Inf) except that a NaN keeps its payload's top bits.
template <class T>
inline void narrow(const float* in, T* out, std::int64_t n) {
#if defined(ROOFTOP_HAS_F16C)
  if constexpr (std::is_same_v<T, fp16>) {
    constexpr int rne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    std::int64_t j = 0;
    for (; j + 8 <= n; j += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), _mm256_cvtps_ph(_mm256_loadu_ps(in + j), rne));
    for (; j < n; ++j) out[j] = fp16::from_bits(static_cast<std::uint16_t>(_cvtss_sh(in[j], rne)));
    return;
  }
#endif
  for (std::int64_t j = 0; j < n; ++j) out[j] = T(in[j]);
}

}  // namespace rooftop::cpu
