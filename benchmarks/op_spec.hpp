// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// What the op table is made of: an op's spec (name, dtypes, cost model read from the kernel
/// header, shapes it is swept over) and its instances (set up, run, verify against a float64
/// host reference), with the helpers for the STREAM-family and reduction entries.
#pragma once

#include "../core/backend.hpp"
#include "../core/random.hpp"
#include "../kernels/reduce.hpp"
#include "../kernels/stream.hpp"
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace rooftop::harness {

using Exec = BackendExec;
template <class T>
using Vector = Kokkos::View<T*, BackendMemory>;

/// One op at one dtype and size, with its inputs allocated and filled.
struct OpInstance {
  Cost cost;
  std::vector<std::int64_t> shape;
  std::function<void()> run;            // one call of the op
  std::function<std::string()> verify;  // "" if the last run's output is right, else what is wrong
  std::function<void()> poison;         // sets the outputs to NaN (before a run that verify checks)
  bool matrix_units = false;            // its FLOPs run on the matrix units (Ceilings::peak_for)
  // Bytes of its output where its kernel may write it with streaming stores (host x86, from
  // streaming_store_threshold()); 0 for ops that never stream (reductions, gemm, attention,
  // spmv). --compare-stores times only results whose output reaches the threshold.
  double streamable_output_bytes = 0;
};

/// An op's output checked after its timed runs: one more run, untimed, from poisoned outputs
/// (OpInstance::poison), then verify. What the warm-ups left cannot pass for a run that writes
/// nothing. `run`: the instance's run, or a wrapper of it (a store setting).
template <class Run>
std::string verify_fresh_run(const Exec& exec, const OpInstance& op, const Run& run) {
  op.poison();
  run();
  exec.fence();
  return op.verify();
}
inline std::string verify_fresh_run(const Exec& exec, const OpInstance& op) { return verify_fresh_run(exec, op, op.run); }

/// The bytes a View's elements span.
template <class V>
double view_bytes(const V& v) {
  return static_cast<double>(v.span()) * sizeof(typename V::value_type);
}

using Shape = std::vector<std::int64_t>;

/// "128x4096".
inline std::string shape_string(const Shape& shape) {
  std::string s;
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

struct OpSpec {
  std::string name;
  std::vector<DType> dtypes;
  std::function<Cost(DType, const Shape&)> cost;
  std::function<OpInstance(const Exec&, DType, const Shape&, std::uint64_t seed)> make;
  /// Empty: a rank-1 op over n elements. Else a (rows, cols) op, swept at each of these cols.
  std::vector<std::int64_t> row_lengths;
  /// Whether the sweep also runs it at a cache-resident working set (not for ops whose data
  /// the working set does not describe, e.g. a gather from a large table).
  bool cache_sizes = true;
  /// When set, the cost whose bytes size the sweep's shapes instead of `cost` (so ops compared
  /// with each other, like the unfused and fused chains, run the same shapes).
  std::function<Cost(DType, const Shape&)> sizing;
  /// When set, the shapes the sweep runs at a working set, for ops whose shape is neither n
  /// elements nor (rows, cols) (a grid, an n x n x n GEMM, a batch of sequences).
  std::function<std::vector<Shape>(DType, double working_set)> shapes_at;
  /// When set, the shapes `--sizes n` means for such an op (e.g. an n^3 grid, an n x n GEMM).
  std::function<std::vector<Shape>(std::int64_t n)> shapes_of_size;
  /// When set, the host bytes the op's float64 verification holds at once, for ops whose
  /// reference's memory is no multiple of their compulsory elements (a product beside its
  /// operands, a table of which the compulsory bytes count only the rows gathered, a sparse
  /// matrix's product whose entries are not held as doubles).
  std::function<double(DType, const Shape&)> verification_bytes;
  /// Otherwise, the doubles its verification holds per compulsory element: 1 where it holds
  /// the op's inputs and outputs (the STREAM ops, reductions, attention), 1.5 where it holds
  /// the expected output of an input-output pair too, 2 with an error scale per element too.
  double verification_doubles_per_element = 1;

  /// The host bytes its verification after timing holds: `verification_bytes` where set, else
  /// `verification_doubles_per_element` doubles per compulsory element.
  double verification_bytes_at(DType d, const Shape& shape) const {
    if (verification_bytes) return verification_bytes(d, shape);
    const double element_bytes = dispatch_dtype(d, [](auto tag) { return sizeof(typename decltype(tag)::type); });
    return cost(d, shape).bytes / element_bytes * verification_doubles_per_element * sizeof(double);
  }

  /// Shapes whose compulsory bytes are about `working_set` (at least one element or row): the
  /// bytes of one more element or row, after those paid once per call (a norm's weight and
  /// bias), which would otherwise count as if every row paid them.
  std::vector<Shape> shapes_for(DType d, double working_set) const {
    if (shapes_at) return shapes_at(d, working_set);
    const auto& size_by = sizing ? sizing : cost;
    auto count = [&](auto shape_of_count) {
      const double one = size_by(d, shape_of_count(1)).bytes, more = size_by(d, shape_of_count(2)).bytes - one;
      const double each = more > 0 ? more : one;
      return std::max<std::int64_t>(1, static_cast<std::int64_t>((working_set - (one - each)) / each));
    };
    if (row_lengths.empty()) return {{count([](std::int64_t n) { return Shape{n}; })}};
    std::vector<Shape> out;
    for (std::int64_t cols : row_lengths) out.push_back({count([cols](std::int64_t rows) { return Shape{rows, cols}; }), cols});
    return out;
  }
  /// Shapes of `n` elements in all (--sizes).
  std::vector<Shape> shapes_of_elements(std::int64_t n) const {
    if (shapes_of_size) return shapes_of_size(n);
    if (row_lengths.empty()) return {{n}};
    std::vector<Shape> out;
    for (std::int64_t cols : row_lengths) out.push_back({std::max<std::int64_t>(1, n / cols), cols});
    return out;
  }
};

namespace detail {

template <class T>
std::vector<double> to_host(const Vector<T>& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::vector<double> out(v.extent(0));
  reference::host_for(static_cast<std::int64_t>(out.size()),
                      [&](const std::int64_t i) { out[i] = static_cast<double>(static_cast<compute_t<T>>(h(i))); });
  return out;
}

/// Elementwise op with `inputs` input vectors (filled uniform in [-1, 1)) and one output
/// (poisoned with NaN before the first run and before the one verified); `reference(a, b)` is
/// the float64 result and `magnitude(a, b)` the sum of |terms| its rounding error is relative to.
template <class T, class Run, class Ref, class Mag>
OpInstance elementwise(const Exec& exec, std::int64_t n, std::uint64_t seed, int inputs, Cost cost, Run run, Ref reference,
                       Mag magnitude) {
  Vector<T> a("rooftop::a", n), b("rooftop::b", inputs > 1 ? n : 0), out("rooftop::out", n);
  fill_uniform(exec, a, seed, -1, 1);
  if (inputs > 1) fill_uniform(exec, b, seed + 1, -1, 1);
  OpInstance op;
  op.poison = [=] { fill_nan(exec, out); };
  op.poison();
  op.cost = cost;
  op.shape = {n};
  op.streamable_output_bytes = view_bytes(out);
  op.run = [=] { run(exec, a, b, out); };
  op.verify = [=]() -> std::string {
    const auto ha = to_host(a), hb = to_host(b), ho = to_host(out);
    // One rounding of the fp32/fp64 arithmetic and one to the storage type.
    const double tol = 2 * epsilon<T>() + 2 * epsilon<compute_t<T>>();
    const auto inputs_at = [&](const std::int64_t i) { return std::pair<double, double>(ha[i], inputs > 1 ? hb[i] : 0.0); };
    const std::int64_t i = reference::first_failing(n, [&](const std::int64_t k) {
      const auto [x, y] = inputs_at(k);
      return std::abs(ho[k] - reference(x, y)) <= tol * magnitude(x, y) + denorm_min<T>();
    });
    if (i == n) return "";
    const auto [x, y] = inputs_at(i);
    std::ostringstream msg;
    msg << "element " << i << " is " << ho[i] << ", expected " << reference(x, y);
    return msg.str();
  };
  return op;
}

/// Reduction over `inputs` vectors filled uniform in [0.5, 1.5) (positive, so the error bound
/// relative to the sum is tight); `term(a, b)` is one float64 term, folded by a copy of `fold`
/// (reference::Sum or reference::Max: add(term), value()). A max must be exact, and its input
/// holds one 2 at a place drawn from the seed: among ~n values within an ulp or two of 1.5 (in
/// bf16 and fp16 many equal to it) a max over part of the input would pass otherwise.
template <class T, class Run, class Term, class Fold>
OpInstance reduction(const Exec& exec, std::int64_t n, std::uint64_t seed, int inputs, Cost cost, Run run, Term term,
                     Fold fold, bool sqrt_result, double accumulate_eps) {
  constexpr bool exact = std::is_same_v<Fold, reference::Max>;
  Vector<T> a("rooftop::a", n), b("rooftop::b", inputs > 1 ? n : 0);
  fill_uniform(exec, a, seed, 0.5, 1.5);
  if (inputs > 1) fill_uniform(exec, b, seed + 1, 0.5, 1.5);
  if (exact && n > 0) {
    const auto at = static_cast<std::int64_t>((seed * 0x9e3779b97f4a7c15ull >> 11) % static_cast<std::uint64_t>(n));
    Kokkos::deep_copy(exec, Kokkos::subview(a, at), T(2.0f));
  }
  auto result = std::make_shared<double>(std::nan(""));
  OpInstance op;
  op.poison = [=] { *result = std::nan(""); };
  op.cost = cost;
  op.shape = {n};
  op.run = [=] { *result = static_cast<double>(run(exec, a, b)); };
  op.verify = [=]() -> std::string {
    const auto ha = to_host(a), hb = to_host(b);
    Fold acc = fold;
    for (std::int64_t i = 0; i < n; ++i) acc.add(term(ha[i], inputs > 1 ? hb[i] : 0.0));
    double want = acc.value();
    if (sqrt_result) want = std::sqrt(want);
    // Worst case of rooftop's folds (the deepest, sum's regions), relative to the result (all
    // terms are positive).
    const double depth = rooftop::detail::region_reduction_depth(n);
    const double tol = exact ? 0.0 : (depth * accumulate_eps + 2 * epsilon<compute_t<T>>()) * std::abs(want);
    if (!(std::abs(*result - want) <= tol)) {
      std::ostringstream msg;
      msg.precision(17);
      msg << "result is " << *result << ", expected " << want;
      return msg.str();
    }
    return "";
  };
  return op;
}

template <class F>
OpSpec spec(std::string name, std::function<Cost(DType, const Shape&)> cost, F make_typed) {
  OpSpec s;
  s.name = std::move(name);
  s.dtypes = {DType::fp64, DType::fp32, DType::bf16, DType::fp16};
  s.cost = std::move(cost);
  s.make = [make_typed](const Exec& exec, DType d, const Shape& shape, std::uint64_t seed) {
    return dispatch_dtype(d, [&](auto tag) { return make_typed(tag, exec, shape[0], seed); });
  };
  return s;
}

/// An op spec over all four dtypes whose cost(tag, shape) and make(tag, exec, shape, seed) are
/// typed (tag: type_tag<T>).
template <class CostF, class MakeF>
OpSpec typed_spec(std::string name, CostF cost, MakeF make) {
  OpSpec s;
  s.name = std::move(name);
  s.dtypes = {DType::fp64, DType::fp32, DType::bf16, DType::fp16};
  s.cost = [cost](DType d, const Shape& shape) { return dispatch_dtype(d, [&](auto tag) { return cost(tag, shape); }); };
  s.make = [make](const Exec& e, DType d, const Shape& shape, std::uint64_t seed) {
    return dispatch_dtype(d, [&](auto tag) { return make(tag, e, shape, seed); });
  };
  return s;
}

/// Sizes an op on an n^dims domain (a cubic grid, a square matrix): the sweep gets the n whose
/// compulsory bytes are nearest the working set (at least 1), and `--sizes n` means n^dims.
inline void size_as_cube(OpSpec& s, int dims) {
  s.shapes_at = [cost = s.cost, dims](DType d, double working_set) {
    auto bytes = [&](std::int64_t n) { return cost(d, Shape(dims, n)).bytes; };
    // A first guess from the bytes of n = 1, then exact steps (bytes grow with n).
    std::int64_t n = std::max<std::int64_t>(1, std::llround(std::pow(working_set / bytes(1), 1.0 / dims)));
    while (n > 1 && bytes(n) > working_set) --n;
    while (bytes(n + 1) <= working_set) ++n;
    if (working_set - bytes(n) > bytes(n + 1) - working_set) ++n;
    return std::vector<Shape>{Shape(dims, n)};
  };
  s.shapes_of_size = [dims](std::int64_t n) { return std::vector<Shape>{Shape(dims, n)}; };
}

#define ROOFTOP_COST_OF(cost_fn)                                                                                   \
  [](DType d, const Shape& s) {                                                                                   \
    return dispatch_dtype(d, [&s](auto tag) { return cost_fn<typename decltype(tag)::type>(s[0]); });             \
  }

}  // namespace detail

/// The elements of a contiguous View as a rank-1 View (same memory).
template <class View>
Kokkos::View<typename View::value_type*, BackendMemory, Kokkos::MemoryUnmanaged> flat(const View& v) {
  return Kokkos::View<typename View::value_type*, BackendMemory, Kokkos::MemoryUnmanaged>(v.data(), v.size());
}

/// The elements of a contiguous View as float64 on the host.
template <class View>
std::vector<double> to_host_flat(const View& v) {
  return detail::to_host(Vector<typename View::value_type>(flat(v)));
}

}  // namespace rooftop::harness
