// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// rooftop::Error, the one precondition macro, and compile-time mandates on View arguments.
#pragma once

#include "kokkos_compat.hpp"

#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace rooftop {

/// Thrown when a precondition of a rooftop op does not hold. The message starts with the op
/// name and names the offending extents: "triad: x is 13 but z is 12".
class Error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// "128x4096" for a rank-2 View, "13" for rank 1, "scalar" for rank 0.
template <class View>
std::string shape_of(const View& v) {
  if (View::rank == 0) return "scalar";
  std::string s;
  for (unsigned r = 0; r < static_cast<unsigned>(View::rank); ++r) {
    if (r) s += 'x';
    s += std::to_string(v.extent(r));
  }
  return s;
}

namespace detail {
template <class... Parts>
[[noreturn]] void fail(const char* op, const Parts&... parts) {
  std::ostringstream msg;
  msg << op << ": ";
  (msg << ... << parts);
  throw Error(msg.str());
}

template <class Exec, class View, int Rank>
constexpr void mandate_view() {
  static_assert(Kokkos::is_view<View>::value, "rooftop: argument must be a Kokkos::View");
  static_assert(static_cast<int>(View::rank) == Rank, "rooftop: View has the wrong rank for this op");
  static_assert(Kokkos::SpaceAccessibility<Exec, typename View::memory_space>::accessible,
                "rooftop: View's memory space is not accessible from the execution space");
}
}  // namespace detail

/// Compile-time mandates for an input View: a View, of rank Rank, accessible from Exec.
template <class Exec, class View, int Rank>
constexpr void mandate_input() {
  detail::mandate_view<Exec, View, Rank>();
}

/// Compile-time mandate of the ops whose math is fp32 (activations, softmax, norms, dropout):
/// storage fp32, bf16 or fp16, not fp64.
template <class T>
constexpr void mandate_fp32_math() {
  static_assert(!std::is_same_v<std::remove_const_t<T>, double>, "rooftop: this op computes in fp32; store fp32, bf16 or fp16");
}

/// As mandate_input, and the View's value type must not be const.
template <class Exec, class View, int Rank>
constexpr void mandate_output() {
  detail::mandate_view<Exec, View, Rank>();
  static_assert(!std::is_const_v<typename View::value_type>, "rooftop: output View must not be const");
}

}  // namespace rooftop

/// Checks a run-time precondition of `op`; on failure throws rooftop::Error whose message is
/// "<op>: " followed by the streamed message parts.
#define ROOFTOP_REQUIRE(cond, op, ...)                                 \
  do {                                                                 \
    if (!(cond)) ::rooftop::detail::fail(op, __VA_ARGS__);             \
  } while (false)

namespace rooftop::detail {
/// Precondition of `op`: Views x and y have the same rank and extents.
template <class X, class Y>
void require_same_shape(const char* op, const char* x_name, const X& x, const char* y_name, const Y& y) {
  bool same = static_cast<int>(X::rank) == static_cast<int>(Y::rank);
  for (unsigned r = 0; same && r < static_cast<unsigned>(X::rank); ++r) same = x.extent(r) == y.extent(r);
  ROOFTOP_REQUIRE(same, op, x_name, " is ", shape_of(x), " but ", y_name, " is ", shape_of(y));
}

/// Whether Views x and y share any memory (their spans intersect).
template <class X, class Y>
bool overlap(const X& x, const Y& y) {
  const auto* xb = reinterpret_cast<const char*>(x.data());
  const auto* yb = reinterpret_cast<const char*>(y.data());
  return x.span() > 0 && y.span() > 0 && yb < xb + x.span() * sizeof(typename X::value_type) &&
         xb < yb + y.span() * sizeof(typename Y::value_type);
}
}  // namespace rooftop::detail
