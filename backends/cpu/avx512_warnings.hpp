// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// GCC 12 warns that the AVX-512 intrinsics' _mm512_undefined_* pass-through operands are
/// "(maybe) used uninitialized" wherever they are inlined (GCC bug 105593, fixed in GCC 13).
/// Host code with AVX-512 intrinsics sits between ROOFTOP_AVX512_WARNINGS_OFF and
/// ROOFTOP_AVX512_WARNINGS_ON, each where its header defines that code.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#define ROOFTOP_AVX512_WARNINGS_OFF                               \
  _Pragma("GCC diagnostic push")                                  \
  _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")     \
  _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#define ROOFTOP_AVX512_WARNINGS_ON _Pragma("GCC diagnostic pop")
#else
#define ROOFTOP_AVX512_WARNINGS_OFF
#define ROOFTOP_AVX512_WARNINGS_ON
#endif
