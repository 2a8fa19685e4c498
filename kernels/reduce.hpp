// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Reductions of a rank-1 View: sum, max, nrm2.
///
/// Rank-1 Views of double, float, bf16 or fp16 (any layout). All block until the result is on
/// the host.
#pragma once

#include "../backends/cpu/nan_max.hpp"
#include "../backends/cpu/row_sums.hpp"
#include "../core/cost.hpp"
#include "../core/error.hpp"
#include "../core/reduction.hpp"
#include "../core/types.hpp"

#include <cstdint>
#include <cmath>
#include <limits>
#include <type_traits>

namespace rooftop {

// ---- sum -------------------------------------------------------------------------------------

/// sum_i x_i, accumulated in compute_t (fp32 for fp32/bf16/fp16, fp64 for fp64); 0 if empty.
template <class Exec, class X>
compute_t<typename X::value_type> sum(const Exec& exec, const X& x) {
  mandate_input<Exec, X, 1>();
  static_assert(supported_values_v<X>, "sum: values are double, float, bf16 or fp16");
  using C = compute_t<typename X::value_type>;
  const auto n = static_cast<std::int64_t>(x.extent(0));
#if defined(ROOFTOP_HAS_FLOAT_LANES)
  // fp32, bf16 and fp16 on an AVX-512 or AVX2 host: four regions of the data at a time
  // (detail::reduce_regions), four read streams per core. Contiguous, the fold's partials in
  // registers, each value widened as it is loaded (cpu::sum_partials); strided Views through
  // detail::fold_runs, the same partials in the same order (GCC vectorizes that loop poorly:
  // one thread in L1, 0.23-0.30 against 0.044 ns per fp32 element, which only strided Views
  // pay). Against one block per work item, `rooftop --quick --ops copy,sum`, builds alternated
  // three times, Zen 3 VM, GB/s (paired fraction): fp32 27.3-34.6 (0.75-0.76) -> 31.1-42.8
  // (0.79-0.87), bf16 25.7-28.6 (0.65-0.73) -> 32.7-37.7 (0.75-0.78), fp16 28.8-30.8
  // (0.63-0.72) -> 28.4-37.2 (0.73-0.76). Before, 2-byte values alone went through
  // sum_partials (2 threads, Zen 5 VM, scratch program, median GB/s: fp16 2^21 in cache 66 ->
  // 110, 2^27 51 -> 56-57; bf16 95 -> 105, 46-48 -> 54).
  using T = typename X::non_const_value_type;
  if constexpr (detail::on_host<Exec> && cpu::has_float_lanes<T>) {
    if (x.stride(0) == 1) {
      const T* const data = x.data();
      return detail::reduce_regions("rooftop::sum", exec, n, 0.0f, detail::Plus{},
                                    [=](const std::int64_t begin, const std::int64_t count, const std::int64_t region) {
                                      alignas(64) float part[cpu::float_partials];
                                      cpu::sum_partials(data + begin, count, part, region);
                                      return detail::combine_lanes(part, detail::Plus{});
                                    });
    }
    return detail::reduce_regions("rooftop::sum", exec, n, 0.0f, detail::Plus{},
                                  [=](const std::int64_t begin, const std::int64_t count, const std::int64_t region) {
                                    return detail::fold_runs<cpu::float_partials>(
                                        begin, count, region, 0.0f, [&](const std::int64_t i) { return float(x(i)); }, detail::Plus{});
                                  });
  }
#endif
  return detail::reduce_inputs(
      "rooftop::sum", exec, n, C(0), KOKKOS_LAMBDA(const C v) { return v; }, detail::Plus{}, x);
}
template <class X>
compute_t<typename X::value_type> sum(const X& x) { return sum(typename X::execution_space{}, x); }

/// Cost of sum over n elements of T: one add each; read x.
template <class T>
constexpr Cost sum_cost(std::int64_t n) { return {1.0 * n, bytes_of<T>(1.0 * n)}; }

// ---- max -------------------------------------------------------------------------------------

/// max_i x_i in compute_t. NaN if any element is NaN; -Inf if x is empty.
template <class Exec, class X>
compute_t<typename X::value_type> max(const Exec& exec, const X& x) {
  mandate_input<Exec, X, 1>();
  static_assert(supported_values_v<X>, "max: values are double, float, bf16 or fp16");
  using C = compute_t<typename X::value_type>;
  const auto n = static_cast<std::int64_t>(x.extent(0));
  if constexpr (detail::on_host<Exec> && cpu::has_vector_max<typename X::non_const_value_type>) {
    // Contiguous fp32/fp64 on an AVX host: each work item's blocks through cpu::nan_max, four
    // regions at a time (detail::reduce_regions; bf16/fp16 below likewise; max is exact, so
    // the order is free). Against one block per work item, `rooftop --quick --ops copy,max`,
    // the two builds alternated three times, Zen 3 VM, GB/s (paired fraction): fp32 25.7-27.9
    // (0.69-0.79) -> 35.1-38.8 (0.85-0.89), fp64 28.8-33.2 (0.66-0.67) -> 27.6-39.4 (0.74-0.80), bf16 23.4-24.0 (0.53-0.63) ->
    // 23.8-31.2 (0.71-0.84), fp16 19.1-24.9 (0.51-0.60) -> 22.1-31.9 (0.65-0.78). Four quarters
    // of each block walked together instead (streams of 2-8 KB) lost for bf16 (17-19 against
    // 21-28) and were mixed for fp16 and fp64.
    if (x.stride(0) == 1) {
      const C* const data = x.data();
      return detail::reduce_regions("rooftop::max", exec, n, -std::numeric_limits<C>::infinity(), detail::NanMax{},
                                    [=](const std::int64_t begin, const std::int64_t count, const std::int64_t region) {
                                      return cpu::nan_max(data + begin, count, region, count);
                                    });
    }
  }
#if defined(ROOFTOP_HAS_BITS_MAX)
  using T = typename X::non_const_value_type;
  if constexpr (detail::on_host<Exec> && sizeof(T) == 2) {
    // Contiguous bf16/fp16 on an AVX2 or AVX-512 host: each work item's block compared on
    // its bits (cpu::max_of_bits), nothing widened. Against blocks of 256 widened into L1 and
    // put through cpu::nan_max, 2 threads, Zen 5 VM, scratch program, two alternations, median
    // GB/s: bf16 2^22 (in cache) 43 -> 82-99; 2^27 38-39 -> 37-40 (best 41-43 -> 47), fp16
    // 34-40 -> 36-40, at fp32's rate (41-51) from memory. Zen 3 VM (AVX2): see nrm2.
    if (x.stride(0) == 1) {
      const T* const data = x.data();
      const auto inf_bits = T(std::numeric_limits<float>::infinity()).bits;
      return detail::reduce_regions("rooftop::max", exec, n, -std::numeric_limits<float>::infinity(), detail::NanMax{},
                                    [=](const std::int64_t begin, const std::int64_t count, const std::int64_t region) {
                                      return cpu::max_of_bits(data + begin, count, inf_bits, region, count);
                                    });
    }
  }
#endif
  return detail::reduce_inputs(
      "rooftop::max", exec, n, -std::numeric_limits<C>::infinity(), KOKKOS_LAMBDA(const C v) { return v; }, detail::NanMax{}, x);
}
template <class X>
compute_t<typename X::value_type> max(const X& x) { return max(typename X::execution_space{}, x); }

/// Cost of max over n elements of T: one comparison each (counted as a FLOP); read x.
template <class T>
constexpr Cost max_cost(std::int64_t n) { return {1.0 * n, bytes_of<T>(1.0 * n)}; }

// ---- nrm2 ------------------------------------------------------------------------------------

/// Euclidean norm sqrt(sum_i x_i^2); 0 if empty. The squares accumulate in fp64 for every
/// dtype, so no fp32/bf16/fp16 input can overflow or underflow the sum (the largest fp32
/// squared is ~1.2e77); fp64 data whose sum of squares overflows or underflows is summed again
/// scaled by its largest magnitude (so nrm2 of {1e200} is 1e200 and of {1e-170} is 1e-170).
template <class Exec, class X>
compute_t<typename X::value_type> nrm2(const Exec& exec, const X& x) {
  mandate_input<Exec, X, 1>();
  static_assert(supported_values_v<X>, "nrm2: values are double, float, bf16 or fp16");
  using C = compute_t<typename X::value_type>;
#if defined(ROOFTOP_HAS_FLOAT_LANES)
  // fp32, bf16 and fp16 on an AVX-512 or AVX2 host as sum: four regions of the data at a time
  // (detail::reduce_regions), the squares in fp64 over float_partials partials (two registers
  // of doubles per register of floats). Contiguous Views fill them in registers, each value
  // widened as it is loaded (cpu::sum_square_partials), strided ones through
  // detail::fold_runs: the same partials in the same order. Against one block per work item
  // (2-byte values through sum_square_partials' sixteen partials, fp32 through the portable
  // fold), `rooftop --quick --ops copy,nrm2`, the two builds alternated four times, Zen 3 VM,
  // GB/s: fp32 23.1-26.3 -> 23.7-30.0, bf16 19.4-22.1 -> 21.9-23.7, fp16 20.7-21.2 ->
  // 22.9-23.7 (copy 36-50 beside them). 2-byte nrm2 stays below sum (32 GB/s) because of its
  // conversions: with its data in cache it ran at 26 GB/s in both builds (sum 79), eight
  // vcvtps2pd per 32 values. AVX-512 hosts not measured (bf16 took the portable fold there).
  using T = typename X::non_const_value_type;
  if constexpr (detail::on_host<Exec> && cpu::has_float_lanes<T>) {
    const auto n = static_cast<std::int64_t>(x.extent(0));
    if (x.stride(0) == 1) {
      const T* const data = x.data();
      return static_cast<C>(std::sqrt(detail::reduce_regions(
          "rooftop::nrm2", exec, n, 0.0, detail::Plus{},
          [=](const std::int64_t begin, const std::int64_t count, const std::int64_t region) {
            alignas(64) double part[cpu::float_partials];
            cpu::sum_square_partials(data + begin, count, part, region);
            return detail::combine_lanes(part, detail::Plus{});
          })));
    }
    return static_cast<C>(std::sqrt(detail::reduce_regions(
        "rooftop::nrm2", exec, n, 0.0, detail::Plus{},
        [=](const std::int64_t begin, const std::int64_t count, const std::int64_t region) {
          return detail::fold_runs<cpu::float_partials>(
              begin, count, region, 0.0,
              [&](const std::int64_t i) {
                const double v = static_cast<double>(static_cast<float>(x(i)));
                return v * v;
              },
              detail::Plus{});
        })));
  }
#endif
  const double sum_squares = detail::reduce_inputs(
      "rooftop::nrm2", exec, static_cast<std::int64_t>(x.extent(0)), 0.0,
      KOKKOS_LAMBDA(const C c) {
        const double v = static_cast<double>(c);
        return v * v;
      },
      detail::Plus{}, x);
  if constexpr (std::is_same_v<C, double>) {
    // fp64: squares overflow past |x| ~1.3e154 (the sum Inf) and lose precision below ~1.5e-154
    // (0 below ~1e-162). A sum that is Inf or under 2^-968 (where the squares rounded in the
    // subnormals could matter) is redone on x / max |x|, as LAPACK's dnrm2 scales: a second
    // and third pass only for such data (and for all-zero data, whose max is 0). A NaN sum
    // stays NaN.
    if (sum_squares == std::numeric_limits<double>::infinity() || sum_squares < 0x1p-968) {
      const double amax = detail::reduce_inputs(
          "rooftop::nrm2", exec, static_cast<std::int64_t>(x.extent(0)), 0.0,
          KOKKOS_LAMBDA(const C c) { return compat::fabs(c); }, detail::NanMax{}, x);
      if (amax == 0 || amax == std::numeric_limits<double>::infinity()) return amax;
      const double scaled = detail::reduce_inputs(
          "rooftop::nrm2", exec, static_cast<std::int64_t>(x.extent(0)), 0.0,
          KOKKOS_LAMBDA(const C c) {
            const double v = c / amax;
            return v * v;
          },
          detail::Plus{}, x);
      return amax * std::sqrt(scaled);
    }
  }
  return static_cast<C>(std::sqrt(sum_squares));
}
template <class X>
compute_t<typename X::value_type> nrm2(const X& x) { return nrm2(typename X::execution_space{}, x); }

/// Cost of nrm2 over n elements of T: a multiply and an add each (the final sqrt is not
/// counted); read x.
template <class T>
constexpr Cost nrm2_cost(std::int64_t n) { return {2.0 * n, bytes_of<T>(1.0 * n)}; }

}  // namespace rooftop
