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

namespace rooftop {

#if defined(ROOFTOP_HAS_AVX512_CONVERT)
namespace detail {
/// The sum of the contiguous host View x's work-item blocks as reduce_inputs folds them (the
/// same blocks, partials and combining order, so the same result), with partials(p, n, part)
/// filling the block's ReductionShape lanes partials of Acc in registers (backends/cpu/row_sums.hpp).
template <class Acc, class Exec, class X, class Partials>
Acc sum_of_partials(const char* label, const Exec& exec, const X& x, const Partials& partials) {
  const auto* const data = x.data();
  return reduce_blocks(label, exec, static_cast<std::int64_t>(x.extent(0)), Acc(0), Plus{},
                       [=](const std::int64_t begin, const std::int64_t end) {
                         Acc part[ReductionShape<Exec, Acc>::lanes];
                         partials(data + begin, end - begin, part);
                         return combine_lanes(part, Plus{});
                       });
}
}  // namespace detail
#endif

// ---- sum -------------------------------------------------------------------------------------

/// sum_i x_i, accumulated in compute_t (fp32 for fp32/bf16/fp16, fp64 for fp64); 0 if empty.
template <class Exec, class X>
compute_t<typename X::value_type> sum(const Exec& exec, const X& x) {
  mandate_input<Exec, X, 1>();
  using C = compute_t<typename X::value_type>;
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  // Contiguous bf16/fp16 on an AVX-512 host: the fold's partials in registers, each value
  // widened as it is loaded (cpu::sum_partials; the same result). 2 threads, Zen 5 VM, scratch
  // program, two alternations, median GB/s: fp16 2^21 (in cache) 66 -> 110, 2^27 51 -> 56-57;
  // bf16 95 -> 105, 46-48 -> 54.
  using T = typename X::non_const_value_type;
  if constexpr (detail::on_host<Exec> && sizeof(T) == 2) {
    if (x.stride(0) == 1)
      return detail::sum_of_partials<float>("rooftop::sum", exec, x, [](const T* p, std::int64_t n, auto& part) {
        cpu::sum_partials(p, n, part);
      });
  }
#endif
  return detail::reduce_inputs(
      "rooftop::sum", exec, static_cast<std::int64_t>(x.extent(0)), C(0), KOKKOS_LAMBDA(const C v) { return v; },
      detail::Plus{}, x);
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
  using C = compute_t<typename X::value_type>;
  const auto n = static_cast<std::int64_t>(x.extent(0));
  if constexpr (detail::on_host<Exec> && cpu::has_vector_max<typename X::non_const_value_type>) {
    // Contiguous fp32/fp64 on an AVX host: each work item's block through cpu::nan_max.
    if (x.stride(0) == 1) {
      const C* const data = x.data();
      return detail::reduce_blocks("rooftop::max", exec, n, -std::numeric_limits<C>::infinity(), detail::NanMax{},
                                   [=](const std::int64_t begin, const std::int64_t end) { return cpu::nan_max(data + begin, end - begin); });
    }
  }
  using T = typename X::non_const_value_type;
#if defined(ROOFTOP_HAS_BITS_MAX)
  if constexpr (detail::on_host<Exec> && sizeof(T) == 2) {
    // Contiguous bf16/fp16 on an AVX-512BW host: each work item's block compared on its bits
    // (cpu::max_of_bits), nothing widened. Against the widened blocks below, 2 threads, Zen 5
    // VM, scratch program, two alternations, median GB/s: bf16 2^22 (in cache) 43 -> 82-99;
    // 2^27 38-39 -> 37-40 (best 41-43 -> 47), fp16 34-40 -> 36-40, at fp32's rate (41-51)
    // from memory.
    if (x.stride(0) == 1) {
      const T* const data = x.data();
      const auto inf_bits = T(std::numeric_limits<float>::infinity()).bits;
      return detail::reduce_blocks("rooftop::max", exec, n, -std::numeric_limits<float>::infinity(), detail::NanMax{},
                                   [=](const std::int64_t begin, const std::int64_t end) {
                                     return cpu::max_of_bits(data + begin, end - begin, inf_bits);
                                   });
    }
  }
#endif
  if constexpr (detail::on_host<Exec> && sizeof(T) == 2 && cpu::has_vector_max<float> && cpu::narrows_in_blocks<T>) {
    // Contiguous bf16/fp16 on an AVX host: 256 at a time widened into L1 (cpu::widen), each
    // block through cpu::nan_max (the portable fold converts and selects element by element).
    if (x.stride(0) == 1) {
      const T* const data = x.data();
      return detail::reduce_blocks("rooftop::max", exec, n, -std::numeric_limits<float>::infinity(), detail::NanMax{},
                                   [=](const std::int64_t begin, const std::int64_t end) {
                                     constexpr std::int64_t block = 256;
                                     alignas(64) float wide[block];
                                     float m = -std::numeric_limits<float>::infinity();
                                     for (std::int64_t s = begin; s < end; s += block) {
                                       const std::int64_t count = end - s < block ? end - s : block;
                                       cpu::widen(data + s, wide, count);
                                       m = detail::NanMax{}(m, cpu::nan_max(wide, count));
                                     }
                                     return m;
                                   });
    }
  }
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
/// squared is ~1.2e77); for fp64 data the sum of squares itself must stay within fp64 range.
template <class Exec, class X>
compute_t<typename X::value_type> nrm2(const Exec& exec, const X& x) {
  mandate_input<Exec, X, 1>();
  using C = compute_t<typename X::value_type>;
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  // Contiguous fp16 on an AVX-512 host: as sum (cpu::sum_square_partials), where the portable
  // fold reads a copy widened into L1 (2 threads, Zen 5 VM, scratch program, two alternations,
  // median GB/s: 2^21 in cache 50 -> 59, 2^27 45 -> 49-50). bf16 keeps the portable fold
  // (GCC vectorizes its conversion): 2^27 52 against 49-50 this way, 56 against 59-60 in cache.
  using T = typename X::non_const_value_type;
  if constexpr (detail::on_host<Exec> && std::is_same_v<T, fp16>) {
    if (x.stride(0) == 1)
      return static_cast<C>(std::sqrt(detail::sum_of_partials<double>(
          "rooftop::nrm2", exec, x, [](const T* p, std::int64_t n, auto& part) { cpu::sum_square_partials(p, n, part); })));
  }
#endif
  const double sum_squares = detail::reduce_inputs(
      "rooftop::nrm2", exec, static_cast<std::int64_t>(x.extent(0)), 0.0,
      KOKKOS_LAMBDA(const C c) {
        const double v = static_cast<double>(c);
        return v * v;
      },
      detail::Plus{}, x);
  return static_cast<C>(std::sqrt(sum_squares));
}
template <class X>
compute_t<typename X::value_type> nrm2(const X& x) { return nrm2(typename X::execution_space{}, x); }

/// Cost of nrm2 over n elements of T: a multiply and an add each (the final sqrt is not
/// counted); read x.
template <class T>
constexpr Cost nrm2_cost(std::int64_t n) { return {2.0 * n, bytes_of<T>(1.0 * n)}; }

}  // namespace rooftop
