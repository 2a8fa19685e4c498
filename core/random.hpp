// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Counter-based random numbers: each value is a pure function of (seed, index), so fills are
/// reproducible across backends and thread counts and need no generator state.
#pragma once

#include "error.hpp"
#include "kokkos_compat.hpp"
#include "types.hpp"

#include <cstdint>
#include <type_traits>

namespace rooftop {

/// A 64-bit mix of (seed, counter) (the SplitMix64 finalizer over a Weyl sequence).
KOKKOS_INLINE_FUNCTION std::uint64_t hash64(std::uint64_t seed, std::uint64_t counter) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * (counter + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Uniform double in [0, 1) from (seed, counter), 53 random bits.
KOKKOS_INLINE_FUNCTION double uniform01(std::uint64_t seed, std::uint64_t counter) {
  return static_cast<double>(hash64(seed, counter) >> 11) * 0x1p-53;
}

/// Fills a rank-1 View with values uniform in [lo, hi), rounded to its storage type.
template <class Exec, class View>
void fill_uniform(const Exec& exec, const View& v, std::uint64_t seed, double lo, double hi) {
  using T = typename View::value_type;
  Kokkos::parallel_for(
      "rooftop::fill_uniform", compat::Range<Exec>(exec, 0, v.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { v(i) = T(lo + (hi - lo) * uniform01(seed, i)); });
}

namespace detail {
/// The integer `value` stored as T: itself in an integer type; float, bf16 and fp16 round it
/// once (exact below 2^24, 2^8, 2^11), from double, where every int is exact. (Outside
/// fill_integers' lambda: nvcc refuses an if constexpr inside an extended lambda.)
template <class T>
KOKKOS_INLINE_FUNCTION T integer_as(std::int64_t value) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(value);
  else
    return T(static_cast<double>(value));
}
}  // namespace detail

/// Fills a rank-1 View with integers uniform in [lo, hi] (exact in every dtype when small):
/// sums of such values are exact in fp32, which lets tests compare reductions exactly. Integer
/// Views get the integers themselves (ids up to 2^31 - 1); floating ones, each rounded once to
/// their dtype. Throws rooftop::Error if hi < lo.
template <class Exec, class View>
void fill_integers(const Exec& exec, const View& v, std::uint64_t seed, int lo, int hi) {
  using T = typename View::value_type;
  ROOFTOP_REQUIRE(lo <= hi, "fill_integers", "lo is ", lo, " but hi is ", hi, " (expected lo <= hi)");
  const auto span = static_cast<std::uint64_t>(static_cast<std::int64_t>(hi) - lo + 1);
  const auto first = static_cast<std::int64_t>(lo);
  Kokkos::parallel_for(
      "rooftop::fill_integers", compat::Range<Exec>(exec, 0, v.extent(0)), KOKKOS_LAMBDA(const std::int64_t i) {
        v(i) = detail::integer_as<T>(first + static_cast<std::int64_t>(hash64(seed, i) % span));
      });
}

/// Fills a rank-1 View with NaN (poison), so elements an op fails to write are caught.
template <class Exec, class View>
void fill_nan(const Exec& exec, const View& v) {
  using T = typename View::value_type;
  Kokkos::parallel_for(
      "rooftop::fill_nan", compat::Range<Exec>(exec, 0, v.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { v(i) = T(compat::bit_cast<float>(0x7fc00000u)); });
}

}  // namespace rooftop
