// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// rooftop::Error, the one precondition macro, and compile-time mandates on View arguments.
#pragma once

#include "kokkos_compat.hpp"
#include "types.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
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

/// Compile-time mandate of the ops whose math is fp32 (activations, softmax, norms, dropout,
/// attention): every View's values fp32, bf16 or fp16 (const or not). Not fp64, and not
/// integers, which they would compute with in float.
template <class... Views>
constexpr void mandate_fp32_math() {
  static_assert(((is_supported_dtype_v<std::remove_cv_t<typename Views::value_type>> &&
                  !std::is_same_v<std::remove_cv_t<typename Views::value_type>, double>) && ...),
                "rooftop: this op computes in fp32; store fp32, bf16 or fp16");
}

/// The return type (void) of an op's overload that takes an execution space first, there only
/// where Exec is one: a call without one (Views first, then scalars: `dropout(x, y, 0.1, 42,
/// 0)`) then never binds a View as the execution space, which made such calls ambiguous or
/// failed deep inside the op. (In the return type: nvcc's extended lambdas cannot live in a
/// function template with an unnamed template parameter.)
template <class Exec>
using on_exec_space_t = std::enable_if_t<Kokkos::is_execution_space<Exec>::value>;

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
/// The op a kernel's label names after its prefix ("rooftop::embedding" -> "embedding").
inline const char* op_of_label(const char* label) { return std::strncmp(label, "rooftop::", 9) == 0 ? label + 9 : label; }

/// `count` teams as the int a Kokkos TeamPolicy takes. Throws rooftop::Error naming op where
/// count exceeds it: narrowed, the launch would run count modulo 2^32 teams and leave the rest
/// of the output unwritten, without an error.
inline int league_size(const char* op, std::int64_t count) {
  op = op_of_label(op);
  ROOFTOP_REQUIRE(count <= std::numeric_limits<int>::max(), op, "the work needs ", count, " teams, more than the ",
                  std::numeric_limits<int>::max(), " one Kokkos launch takes");
  return static_cast<int>(count);
}

/// `bytes` of scratch per team as the int Kokkos 3.4's PerTeam takes. Throws rooftop::Error
/// naming op where bytes exceed it (rows of more than about 5e8 floats, in the row kernels'
/// per-row scratch): narrowed, the team would get a few bytes or a negative size, and the
/// kernel would write through a null pointer or Kokkos abort the process.
inline int team_scratch_bytes(const char* op, std::size_t bytes) {
  op = op_of_label(op);
  ROOFTOP_REQUIRE(bytes <= static_cast<std::size_t>(std::numeric_limits<int>::max()), op, "the work needs ", bytes,
                  " bytes of scratch per team (rows this long), more than the ", std::numeric_limits<int>::max(),
                  " one Kokkos team takes");
  return static_cast<int>(bytes);
}

/// Precondition of `op`: Views x and y have the same rank and extents.
template <class X, class Y>
void require_same_shape(const char* op, const char* x_name, const X& x, const char* y_name, const Y& y) {
  bool same = static_cast<int>(X::rank) == static_cast<int>(Y::rank);
  for (unsigned r = 0; same && r < static_cast<unsigned>(X::rank); ++r) same = x.extent(r) == y.extent(r);
  ROOFTOP_REQUIRE(same, op, x_name, " is ", shape_of(x), " but ", y_name, " is ", shape_of(y));
}

/// Precondition of `op` for a View of rank 3 or more: it has memory. Kokkos 3.4 keeps the
/// extents of such Views in 32-bit integers where it sizes their memory: a LayoutRight View
/// whose extents multiply to a multiple of 2^32 elements (2048x2048x1024, 64x32x16384x128) is
/// created with a span of 0, no memory and no error, and a kernel would write past it. (A span
/// smaller than the element count but not 0 is a View whose elements share memory, such as a
/// batch or head stride of 0: fine to read, see require_distinct_elements for outputs.)
template <class V>
void require_allocated(const char* op, const char* name, const V& v) {
  ROOFTOP_REQUIRE(v.size() == 0 || v.span() > 0, op, name, " is ", shape_of(v), " but spans ", v.span(),
                  " elements: its memory was sized in 32-bit arithmetic (Kokkos 3.4, Views of rank 3 and more)");
}

/// A View's dimensions of more than one element, largest stride first, and whether their
/// strides nest: each larger than the reach of all smaller ones (reach[k]: the largest offset
/// the dimensions after k add), so that no two elements share memory. A stride of 0 does not
/// nest; nor do strides that fold a View onto itself, such as (2, 4) for 3x2 elements.
template <int Rank>
struct StridedDims {
  static constexpr int capacity = Rank > 0 ? Rank : 1;
  std::int64_t stride[capacity]{}, extent[capacity]{}, reach[capacity]{};
  int count = 0;
  bool nest = true;
};
template <class V>
StridedDims<static_cast<int>(V::rank)> strided_dims(const V& v) {
  StridedDims<static_cast<int>(V::rank)> o;
  for (int d = 0; d < static_cast<int>(V::rank); ++d) {
    if (v.extent(d) < 2) continue;
    const auto s = static_cast<std::int64_t>(v.stride(d));
    int at = o.count++;
    // (at < capacity always holds: said for g++, which warned of writes past the arrays.)
    for (; at > 0 && at < o.capacity && o.stride[at - 1] < s; --at) o.stride[at] = o.stride[at - 1], o.extent[at] = o.extent[at - 1];
    o.stride[at] = s;
    o.extent[at] = static_cast<std::int64_t>(v.extent(d));
  }
  std::int64_t sum = 0;
  for (int k = o.count - 1; k >= 0; --k) {
    o.reach[k] = sum;
    o.nest = o.nest && o.stride[k] > sum;
    sum += (o.extent[k] - 1) * o.stride[k];
  }
  return o;
}

/// "(4, 1)": a View's strides, for messages.
template <class V>
std::string strides_of(const V& v) {
  std::string s = "(";
  for (unsigned r = 0; r < static_cast<unsigned>(V::rank); ++r) s += (r ? ", " : "") + std::to_string(v.stride(r));
  return s + ")";
}

/// Precondition of `op` for an output View: no two of its elements share memory (its strides
/// nest, strided_dims): a stride of 0, or strides that fold it onto itself, would make
/// parallel writes race. (Kokkos's span does not show it: a LayoutStride View's span is its
/// largest extent times stride, whatever the other strides.) Conservative: strides that do not
/// nest but still give distinct offsets, such as (5, 3) for 2x3 elements, are refused too.
template <class V>
void require_unshared_elements(const char* op, const char* name, const V& v) {
  ROOFTOP_REQUIRE(v.size() == 0 || strided_dims(v).nest, op, name, " is ", shape_of(v), " with strides ", strides_of(v),
                  ": its strides do not nest, so its elements may share memory and writes to them could race");
}
/// require_unshared_elements, and require_allocated (Views of rank 3 and more).
template <class V>
void require_distinct_elements(const char* op, const char* name, const V& v) {
  require_unshared_elements(op, name, v);
  require_allocated(op, name, v);
}

/// Offset in elements from a View's first element to its last (Views of this library have no
/// negative strides); -1 for an empty View.
template <class V>
std::int64_t last_element(const V& v) {
  std::int64_t last = 0;
  for (unsigned d = 0; d < static_cast<unsigned>(V::rank); ++d) {
    if (v.extent(d) == 0) return -1;
    last += static_cast<std::int64_t>(v.extent(d) - 1) * static_cast<std::int64_t>(v.stride(d));
  }
  return last;
}

/// Whether Views x and y may share an element. No, if the bytes from each one's first element
/// to the end of its last (not its span, which counts the padding after the last row) do not
/// meet; nor if both have the same element size, extents and strides, their strides nest (each
/// larger than the reach of all smaller ones), and the distance between them is no difference
/// of two element offsets: interleaved Views of one array such as its columns 0..3 and 4..7.
/// Otherwise yes (conservative).
template <class X, class Y>
bool overlap(const X& x, const Y& y) {
  constexpr auto x_size = static_cast<std::int64_t>(sizeof(typename X::value_type));
  constexpr auto y_size = static_cast<std::int64_t>(sizeof(typename Y::value_type));
  const std::int64_t x_last = last_element(x), y_last = last_element(y);
  if (x_last < 0 || y_last < 0) return false;
  const auto xb = reinterpret_cast<std::intptr_t>(x.data()), yb = reinterpret_cast<std::intptr_t>(y.data());
  if (!(yb < xb + (x_last + 1) * x_size && xb < yb + (y_last + 1) * y_size)) return false;
  constexpr int rank = static_cast<int>(X::rank);
  if constexpr (x_size != y_size || rank != static_cast<int>(Y::rank)) {
    return true;
  } else {
    if ((yb - xb) % x_size != 0) return true;
    for (int d = 0; d < rank; ++d)
      if (x.extent(d) != y.extent(d) || x.stride(d) != y.stride(d)) return true;
    const auto dims_of_x = strided_dims(x);
    if (!dims_of_x.nest) return true;
    const std::int64_t *stride = dims_of_x.stride, *extent = dims_of_x.extent, *reach = dims_of_x.reach;
    const int dims = dims_of_x.count;
    // Whether r = sum of delta_k stride[k] over k >= level, |delta_k| < extent[k]: at each level
    // only the two multiples of stride[k] around r can leave a remainder the rest can reach.
    auto reachable = [&](auto&& self, int level, std::int64_t r) -> bool {
      // (dims <= rank: the second test only tells the compiler so, where g++ 11 warned of
      // reads past the arrays.)
      if (level == dims || level >= rank) return r == 0;
      const std::int64_t s = stride[level], low = r >= 0 ? r / s : -((-r + s - 1) / s);  // floor(r / s)
      for (std::int64_t delta = low; delta <= low + 1; ++delta)
        if (delta > -extent[level] && delta < extent[level] && r - delta * s <= reach[level] && delta * s - r <= reach[level] &&
            self(self, level + 1, r - delta * s))
          return true;
      return false;
    };
    return reachable(reachable, 0, (yb - xb) / x_size);
  }
}

/// Whether Views x and y are the same elements: the same first byte, element size, rank and
/// extents, and the same stride along every extent of 2 or more.
template <class X, class Y>
bool same_elements(const X& x, const Y& y) {
  if constexpr (sizeof(typename X::value_type) != sizeof(typename Y::value_type) || static_cast<int>(X::rank) != static_cast<int>(Y::rank)) {
    return false;
  } else {
    if (static_cast<const void*>(x.data()) != static_cast<const void*>(y.data())) return false;
    for (unsigned d = 0; d < static_cast<unsigned>(X::rank); ++d)
      if (x.extent(d) != y.extent(d) || (x.extent(d) > 1 && x.stride(d) != y.stride(d))) return false;
    return true;
  }
}

/// Precondition of `op` for an input `in` that it only reads while writing `out`: they share no
/// element.
template <class In, class Out>
void require_apart(const char* op, const char* in_name, const In& in, const char* out_name, const Out& out) {
  ROOFTOP_REQUIRE(!overlap(in, out), op, in_name, " and ", out_name, " overlap (", in_name, " is ", shape_of(in), " with strides ",
                  strides_of(in), ", ", out_name, " is ", shape_of(out), " with strides ", strides_of(out),
                  "): ", out_name, " would be written while ", in_name, " is read");
}

/// Precondition of `op` for an output that may be its input (elementwise and row-wise ops): out
/// is in (the same elements, each read before it is written, by the work item that writes it)
/// or shares no element with it. Partly overlapping, out one element or row past in, work
/// items would read what others had already written, a result that changes with the threads.
template <class In, class Out>
void require_in_place_or_apart(const char* op, const char* in_name, const In& in, const char* out_name, const Out& out) {
  ROOFTOP_REQUIRE(same_elements(in, out) || !overlap(in, out), op, in_name, " and ", out_name, " overlap but are not the same elements (",
                  in_name, " is ", shape_of(in), " with strides ", strides_of(in), ", ", out_name, " is ", shape_of(out), " with strides ",
                  strides_of(out), " from ",
                  reinterpret_cast<std::intptr_t>(out.data()) - reinterpret_cast<std::intptr_t>(in.data()), " bytes after ", in_name,
                  "'s first element): pass the same View to compute in place, or Views that do not overlap");
}

/// Precondition of an elementwise or row-wise `op` computing out from in (Views of rank 1 or
/// 2): the same extents, no two elements of out in the same memory, and out in place of in or
/// apart from it.
template <class In, class Out>
void require_elementwise(const char* op, const char* in_name, const In& in, const char* out_name, const Out& out) {
  require_same_shape(op, in_name, in, out_name, out);
  require_unshared_elements(op, out_name, out);
  require_in_place_or_apart(op, in_name, in, out_name, out);
}
}  // namespace rooftop::detail
