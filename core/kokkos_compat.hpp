// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The one place that hides differences between Kokkos 3.4 and Kokkos 4.x/5.x.
/// Everything else in rooftop spells Kokkos through these names.
#pragma once

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#if KOKKOS_VERSION < 30400
#error "rooftop needs Kokkos >= 3.4.01"
#endif

namespace rooftop::compat {

// Math functions moved from Kokkos::Experimental to Kokkos in 3.6; the Experimental names are
// gone in 4.0.
#if KOKKOS_VERSION >= 30600
namespace kmath = ::Kokkos;
#else
namespace kmath = ::Kokkos::Experimental;
#endif

template <class T>
KOKKOS_INLINE_FUNCTION T sqrt(T x) { return kmath::sqrt(x); }
template <class T>
KOKKOS_INLINE_FUNCTION T fabs(T x) { return kmath::fabs(x); }
/// 1 where compat::mul_add is one fused multiply-add instruction: device code, and hosts
/// compiled for one (x86 with -mfma or a -march that has it, AArch64); 0 on other hosts (x86-64
/// without -march: the portable build, and code that embeds the kernels without such flags).
/// (-mavx512f alone has the instruction but not __FMA__ under GCC; the AVX-512 vector paths,
/// which fuse, must agree with the scalar functions bit for bit.)
#if defined(__CUDA_ARCH__) || defined(__FMA__) || defined(__AVX512F__) || defined(__ARM_FEATURE_FMA)
#define ROOFTOP_FUSED_MUL_ADD 1
#else
#define ROOFTOP_FUSED_MUL_ADD 0
#endif

/// a * b + c: one fused multiply-add (one rounding) where ROOFTOP_FUSED_MUL_ADD, else a multiply
/// and an add (two roundings). Not std::fma there: without the instruction it is a call to the C
/// library's fmaf (exact in software), which keeps every loop with one scalar: GELU on x86-64
/// without -march took 15.5 ns per value, 1.07 as a multiply and an add (0.19 with AVX-512;
/// one core of the Zen 5 VM, a scratch loop in L1). Where one rounding matters (the softmax
/// exponent) the caller takes another route when it is 0 (kernels/softmax.hpp); Kokkos 3.4 has no
/// Kokkos::fma.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T mul_add(T a, T b, T c) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>) {
    return ::fmaf(a, b, c);  // not ::fma, which would compute in double
  } else {
    return ::fma(a, b, c);
  }
#elif ROOFTOP_FUSED_MUL_ADD
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

/// Reinterprets the bits of a trivially copyable value (std::bit_cast is C++20). The builtin
/// keeps loops vectorizable (GCC does not vectorize through a type-punning memcpy); memcpy is
/// the fallback, and a builtin in device code.
/// The address of x(i...), from x.data() and x's strides: `&x(i...)` does not compile where
/// operator() returns a value rather than a reference (a const View with the RandomAccess
/// trait on CUDA, read through the texture path).
template <class View, class... I>
KOKKOS_FORCEINLINE_FUNCTION auto address(const View& x, I... i) {
  static_assert(sizeof...(I) == View::rank, "compat::address: one index per dimension");
  std::ptrdiff_t offset = 0;
  int r = 0;
  ((offset += static_cast<std::ptrdiff_t>(i) * static_cast<std::ptrdiff_t>(x.stride(r++))), ...);
  return x.data() + offset;
}

template <class To, class From>
KOKKOS_FORCEINLINE_FUNCTION To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast: sizes differ");
#if defined(__has_builtin) && !defined(__CUDA_ARCH__)
#if __has_builtin(__builtin_bit_cast)
#define ROOFTOP_HAS_BUILTIN_BIT_CAST
  return __builtin_bit_cast(To, from);
#endif
#endif
#if !defined(ROOFTOP_HAS_BUILTIN_BIT_CAST)
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
#endif
}

/// A range policy over [begin, end) with 64-bit work indices. Kokkos' default index type is
/// the execution space's size_type, which Kokkos 3.4 makes `unsigned int` for Kokkos::Cuda: a
/// range of 2^32 or more work items would wrap, silently, to the first few. Every range in
/// rooftop is one of these.
template <class Exec>
using Range = Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>;

/// "3.4.1", "5.2.2": the Kokkos version this translation unit was compiled against.
inline std::string kokkos_version() {
  return std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) +
         "." + std::to_string(KOKKOS_VERSION % 100);
}

/// Threads / hardware lanes of an execution space instance: static in 3.x, a member in 4.x;
/// calling it on an instance works in both.
template <class Exec>
int concurrency(const Exec& exec) {
  return static_cast<int>(exec.concurrency());
}

}  // namespace rooftop::compat
