// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// STREAM-family vector ops: copy, scale, add, triad (elementwise) and dot.
///
///   copy  : y = x                 scale : y = alpha * x
///   add   : z = x + y             triad : z = x + alpha * y
///   dot   : sum_i x_i * y_i
///
/// Rank-1 Views of double, float, bf16 or fp16 (any layout); arithmetic in compute_t of the
/// output's type (fp64 for fp64, fp32 otherwise), rounded once to it. Inputs of another type
/// are converted to that first: fp64 inputs into an fp32 output are rounded to fp32 before the
/// add (add of {1 + 2^-30} and {-1} into fp32 gives 0), and fp64 inputs into a bf16 or fp16
/// output through fp32 too, so they are rounded twice (unlike bf16(double): scale by 1 of
/// {1 + 2^-8 + 2^-30} into bf16 gives 1, bf16(double) 1 + 2^-7). An output may be an
/// input (the same View: every element is read and written at the same index); one that
/// overlaps an input in part throws (detail::require_in_place_or_apart). Empty Views are fine.
#pragma once

#include "../core/cost.hpp"
#include "../core/error.hpp"
#include "../core/parallel.hpp"
#include "../core/reduction.hpp"
#include "../core/types.hpp"
#include "../backends/cpu/row_sums.hpp"

#include <cstdint>
#include <cstring>

namespace rooftop {

// ---- copy ------------------------------------------------------------------------------------

namespace detail {
/// Bytes ahead of its position that a streamed host copy prefetches its source into L2. The
/// harness's main-memory roof is this copy, and dropout fp32 (which prefetches 4 KB ahead) had
/// landed above it (1.04 of it, paired 1.11). Zen 4 VM, 2 threads, huge pages, 2^25 doubles, a
/// scratch program alternating in one process, median ratio to the copy without, memory slow /
/// fast: 1 KB ahead 1.004 / 1.018 (best 53.0 / 88.4 GB/s against 52.6 / 85.3), 2 KB 1.009 /
/// 0.996, 4 KB 1.000 / 0.925; dropout fp32 beside them 1.014 / 1.011 (best 87.2).
inline constexpr std::int64_t copy_prefetch_ahead = 1024;
}  // namespace detail

/// y = x. Throws rooftop::Error if the extents differ.
template <class Exec, class X, class Y>
void copy(const Exec& exec, const X& x, const Y& y) {
  mandate_input<Exec, X, 1>();
  mandate_output<Exec, Y, 1>();
  static_assert(std::is_same_v<typename X::non_const_value_type, typename Y::value_type>, "copy: x and y differ in value type");
  detail::require_elementwise("copy", "x", x, "y", y);
  using T = typename Y::value_type;
  if constexpr (detail::on_host<Exec>) {
    // Contiguous copies on the host, in 32 KB work items: large ones streamed straight from x
    // (no buffer), the others by memmove (x may be y). Kokkos's element loop left bf16 and
    // fp16 unvectorized: 3-8x slower than fp32 in cache. Streamed copies prefetch x ahead
    // (copy_prefetch_ahead).
    const auto n = static_cast<std::int64_t>(y.extent(0));
    if (x.stride(0) == 1 && y.stride(0) == 1) {
      const T* const from = x.data();
      T* const to = y.data();
      if (detail::host_streams<Exec> && detail::streams<T>(n)) {
        detail::for_each_chunk<T>("rooftop::copy", exec, n, [=](const std::int64_t lo, const std::int64_t hi) {
          cpu::stream_whole_lines<true>(to + lo, from + lo, static_cast<std::size_t>(hi - lo) * sizeof(T),
                                        cpu::Prefetch{reinterpret_cast<const char*>(from + lo) + detail::copy_prefetch_ahead, 1});
        });
      } else {
        detail::for_each_chunk<T, false>("rooftop::copy", exec, n, [=](const std::int64_t lo, const std::int64_t hi) {
          std::memmove(to + lo, from + lo, static_cast<std::size_t>(hi - lo) * sizeof(T));
        });
      }
      return;
    }
  }
  detail::write_elements("rooftop::copy", exec, y, KOKKOS_LAMBDA(const std::int64_t i) { return x(i); });
}
template <class X, class Y>
void copy(const X& x, const Y& y) { copy(typename Y::execution_space{}, x, y); }

/// Cost of copy over n elements of T: no FLOPs; read x, write y.
template <class T>
constexpr Cost copy_cost(std::int64_t n) { return {0, bytes_of<T>(2.0 * n)}; }

// ---- scale -----------------------------------------------------------------------------------

/// y = alpha * x. Throws rooftop::Error if the extents differ.
template <class Exec, class X, class Y>
void scale(const Exec& exec, double alpha, const X& x, const Y& y) {
  mandate_input<Exec, X, 1>();
  mandate_output<Exec, Y, 1>();
  static_assert(supported_values_v<X, Y>, "scale: values are double, float, bf16 or fp16");
  using T = typename Y::value_type;
  using C = compute_t<T>;
  detail::require_elementwise("scale", "x", x, "y", y);
  const C a = static_cast<C>(alpha);
  detail::map_inputs<detail::stream_op_stores<T>()>("rooftop::scale", exec, y,
                                                       KOKKOS_LAMBDA(const std::int64_t, const C v) { return a * v; }, x);
}
template <class X, class Y>
void scale(double alpha, const X& x, const Y& y) { scale(typename Y::execution_space{}, alpha, x, y); }

/// Cost of scale over n elements of T: one multiply each; read x, write y.
template <class T>
constexpr Cost scale_cost(std::int64_t n) { return {1.0 * n, bytes_of<T>(2.0 * n)}; }

// ---- add -------------------------------------------------------------------------------------

/// z = x + y. Throws rooftop::Error if the extents differ.
template <class Exec, class X, class Y, class Z>
void add(const Exec& exec, const X& x, const Y& y, const Z& z) {
  mandate_input<Exec, X, 1>();
  mandate_input<Exec, Y, 1>();
  mandate_output<Exec, Z, 1>();
  static_assert(supported_values_v<X, Y, Z>, "add: values are double, float, bf16 or fp16");
  using T = typename Z::value_type;
  using C = compute_t<T>;
  detail::require_same_shape("add", "x", x, "y", y);
  detail::require_elementwise("add", "x", x, "z", z);
  detail::require_in_place_or_apart("add", "y", y, "z", z);
  detail::map_inputs<detail::stream_op_stores<T>()>("rooftop::add", exec, z,
                                                       KOKKOS_LAMBDA(const std::int64_t, const C u, const C v) { return u + v; }, x, y);
}
template <class X, class Y, class Z>
void add(const X& x, const Y& y, const Z& z) { add(typename Z::execution_space{}, x, y, z); }

/// Cost of add over n elements of T: one add each; read x and y, write z.
template <class T>
constexpr Cost add_cost(std::int64_t n) { return {1.0 * n, bytes_of<T>(3.0 * n)}; }

// ---- triad -----------------------------------------------------------------------------------

/// z = x + alpha * y. Throws rooftop::Error if the extents differ.
template <class Exec, class X, class Y, class Z>
void triad(const Exec& exec, double alpha, const X& x, const Y& y, const Z& z) {
  mandate_input<Exec, X, 1>();
  mandate_input<Exec, Y, 1>();
  mandate_output<Exec, Z, 1>();
  static_assert(supported_values_v<X, Y, Z>, "triad: values are double, float, bf16 or fp16");
  using T = typename Z::value_type;
  using C = compute_t<T>;
  detail::require_same_shape("triad", "x", x, "y", y);
  detail::require_elementwise("triad", "x", x, "z", z);
  detail::require_in_place_or_apart("triad", "y", y, "z", z);
  const C a = static_cast<C>(alpha);
  detail::map_inputs<detail::stream_op_stores<T>()>("rooftop::triad", exec, z,
                                                       KOKKOS_LAMBDA(const std::int64_t, const C u, const C v) { return u + a * v; }, x, y);
}
template <class X, class Y, class Z>
void triad(double alpha, const X& x, const Y& y, const Z& z) { triad(typename Z::execution_space{}, alpha, x, y, z); }

/// Cost of triad over n elements of T: a multiply and an add each; read x and y, write z.
template <class T>
constexpr Cost triad_cost(std::int64_t n) { return {2.0 * n, bytes_of<T>(3.0 * n)}; }

// ---- dot -------------------------------------------------------------------------------------

/// sum_i x_i * y_i, accumulated in compute_t (fp32 for fp32/bf16/fp16, fp64 for fp64).
/// Returns 0 for empty Views. Throws rooftop::Error if the extents differ. Blocks until done.
template <class Exec, class X, class Y>
compute_t<typename X::value_type> dot(const Exec& exec, const X& x, const Y& y) {
  mandate_input<Exec, X, 1>();
  mandate_input<Exec, Y, 1>();
  static_assert(supported_values_v<X, Y>, "dot: values are double, float, bf16 or fp16");
  using C = compute_t<typename X::value_type>;
  static_assert(std::is_same_v<C, compute_t<typename Y::value_type>>, "dot: x and y must share a compute type");
  detail::require_same_shape("dot", "x", x, "y", y);
#if defined(ROOFTOP_HAS_FLOAT_LANES)
  // Contiguous bf16/fp16 on an AVX-512 or AVX2 host: the fold's partials in registers, each
  // value widened as it is loaded (cpu::dot_partials), where the portable fold converted
  // element by element (bf16) or read copies widened into L1 (fp16). Zen 3 VM: see nrm2 in
  // kernels/reduce.hpp.
  using T = typename X::non_const_value_type;
  if constexpr (detail::on_host<Exec> && sizeof(T) == 2 && std::is_same_v<typename Y::non_const_value_type, T>) {
    if (x.stride(0) == 1 && y.stride(0) == 1) {
      const T* const xp = x.data();
      const T* const yp = y.data();
      return detail::reduce_partials<float>("rooftop::dot", exec, static_cast<std::int64_t>(x.extent(0)),
                                            [=](const std::int64_t begin, const std::int64_t end, float(&part)[cpu::float_partials]) {
                                              cpu::dot_partials(xp + begin, yp + begin, end - begin, part);
                                            });
    }
  }
#endif
  return detail::reduce_inputs(
      "rooftop::dot", exec, static_cast<std::int64_t>(x.extent(0)), C(0), KOKKOS_LAMBDA(const C a, const C b) { return a * b; },
      detail::Plus{}, x, y);
}
template <class X, class Y>
compute_t<typename X::value_type> dot(const X& x, const Y& y) { return dot(typename X::execution_space{}, x, y); }

/// Cost of dot over n elements of T: a multiply and an add each; read x and y.
template <class T>
constexpr Cost dot_cost(std::int64_t n) { return {2.0 * n, bytes_of<T>(2.0 * n)}; }

}  // namespace rooftop
