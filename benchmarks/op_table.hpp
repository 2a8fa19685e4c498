// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The one table of ops the roofline harness and the Google Benchmark suite both run: for each
/// op its name, dtypes, cost model (read from the kernel header) and how to set up, run and
/// verify one instance against a float64 host reference.
#pragma once

#include "../core/backend.hpp"
#include "../core/random.hpp"
#include "../kernels/reduce.hpp"
#include "../kernels/stream.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
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
};

struct OpSpec {
  std::string name;
  std::vector<DType> dtypes;
  std::function<Cost(DType, std::int64_t n)> cost;
  std::function<OpInstance(const Exec&, DType, std::int64_t n, std::uint64_t seed)> make;
};

namespace detail {

template <class T>
std::vector<double> to_host(const Vector<T>& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::vector<double> out(v.extent(0));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(static_cast<compute_t<T>>(h(i)));
  return out;
}

/// Elementwise op with `inputs` input vectors (filled uniform in [-1, 1)) and one output
/// (poisoned with NaN before the first run); `reference(a, b)` is the float64 result and
/// `magnitude(a, b)` the sum of |terms| its rounding error is relative to.
template <class T, class Run, class Ref, class Mag>
OpInstance elementwise(const Exec& exec, std::int64_t n, std::uint64_t seed, int inputs, Cost cost, Run run, Ref reference,
                       Mag magnitude) {
  Vector<T> a("rooftop::a", n), b("rooftop::b", inputs > 1 ? n : 0), out("rooftop::out", n);
  fill_uniform(exec, a, seed, -1, 1);
  if (inputs > 1) fill_uniform(exec, b, seed + 1, -1, 1);
  fill_nan(exec, out);
  OpInstance op;
  op.cost = cost;
  op.shape = {n};
  op.run = [=] { run(exec, a, b, out); };
  op.verify = [=]() -> std::string {
    const auto ha = to_host(a), hb = to_host(b), ho = to_host(out);
    // One rounding of the fp32/fp64 arithmetic and one to the storage type.
    const double tol = 2 * epsilon<T>() + 2 * epsilon<compute_t<T>>();
    for (std::int64_t i = 0; i < n; ++i) {
      const double x = ha[i], y = inputs > 1 ? hb[i] : 0.0;
      const double want = reference(x, y);
      if (!(std::abs(ho[i] - want) <= tol * magnitude(x, y) + denorm_min<T>())) {
        std::ostringstream msg;
        msg << "element " << i << " is " << ho[i] << ", expected " << want;
        return msg.str();
      }
    }
    return "";
  };
  return op;
}

/// Reduction over `inputs` vectors filled uniform in [0.5, 1.5) (positive, so the error bound
/// relative to the sum is tight); `term(a, b)` is one float64 term, `combine` folds them.
template <class T, class Run, class Term, class Combine>
OpInstance reduction(const Exec& exec, std::int64_t n, std::uint64_t seed, int inputs, Cost cost, Run run, Term term,
                     Combine combine, double init, bool sqrt_result, double accumulate_eps) {
  Vector<T> a("rooftop::a", n), b("rooftop::b", inputs > 1 ? n : 0);
  fill_uniform(exec, a, seed, 0.5, 1.5);
  if (inputs > 1) fill_uniform(exec, b, seed + 1, 0.5, 1.5);
  auto result = std::make_shared<double>(std::nan(""));
  OpInstance op;
  op.cost = cost;
  op.shape = {n};
  op.run = [=] { *result = static_cast<double>(run(exec, a, b)); };
  op.verify = [=]() -> std::string {
    const auto ha = to_host(a), hb = to_host(b);
    double want = init;
    for (std::int64_t i = 0; i < n; ++i) want = combine(want, term(ha[i], inputs > 1 ? hb[i] : 0.0));
    if (sqrt_result) want = std::sqrt(want);
    // Worst case of rooftop's fold, relative to the result (all terms are positive).
    const double depth = rooftop::detail::reduction_depth(n);
    const double tol = (depth * accumulate_eps + 2 * epsilon<compute_t<T>>()) * std::abs(want);
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
OpSpec spec(std::string name, std::function<Cost(DType, std::int64_t)> cost, F make_typed) {
  OpSpec s;
  s.name = std::move(name);
  s.dtypes = {DType::fp64, DType::fp32, DType::bf16, DType::fp16};
  s.cost = std::move(cost);
  s.make = [make_typed](const Exec& exec, DType d, std::int64_t n, std::uint64_t seed) {
    return dispatch_dtype(d, [&](auto tag) { return make_typed(tag, exec, n, seed); });
  };
  return s;
}

#define ROOFTOP_COST_OF(cost_fn) \
  [](DType d, std::int64_t n) { return dispatch_dtype(d, [n](auto tag) { return cost_fn<typename decltype(tag)::type>(n); }); }

}  // namespace detail

/// Every op the harness and the benchmarks know, in report order.
inline const std::vector<OpSpec>& op_table() {
  using namespace detail;
  static const std::vector<OpSpec> table = [] {
    const double alpha = 0.5;
    auto mag1 = [](double x, double) { return std::abs(x); };
    auto mag2 = [](double x, double y) { return std::abs(x) + std::abs(y); };
    auto mag_triad = [alpha](double x, double y) { return std::abs(x) + std::abs(alpha * y); };
    std::vector<OpSpec> t;
    t.push_back(spec("copy", ROOFTOP_COST_OF(copy_cost), [=](auto tag, const Exec& e, std::int64_t n, std::uint64_t seed) {
      using T = typename decltype(tag)::type;
      return elementwise<T>(e, n, seed, 1, copy_cost<T>(n), [](const Exec& x, auto a, auto, auto o) { rooftop::copy(x, a, o); },
                            [](double x, double) { return x; }, mag1);
    }));
    t.push_back(spec("scale", ROOFTOP_COST_OF(scale_cost), [=](auto tag, const Exec& e, std::int64_t n, std::uint64_t seed) {
      using T = typename decltype(tag)::type;
      return elementwise<T>(e, n, seed, 1, scale_cost<T>(n), [=](const Exec& x, auto a, auto, auto o) { rooftop::scale(x, alpha, a, o); },
                            [=](double x, double) { return alpha * x; }, mag1);
    }));
    t.push_back(spec("add", ROOFTOP_COST_OF(add_cost), [=](auto tag, const Exec& e, std::int64_t n, std::uint64_t seed) {
      using T = typename decltype(tag)::type;
      return elementwise<T>(e, n, seed, 2, add_cost<T>(n), [](const Exec& x, auto a, auto b, auto o) { rooftop::add(x, a, b, o); },
                            [](double x, double y) { return x + y; }, mag2);
    }));
    t.push_back(spec("triad", ROOFTOP_COST_OF(triad_cost), [=](auto tag, const Exec& e, std::int64_t n, std::uint64_t seed) {
      using T = typename decltype(tag)::type;
      return elementwise<T>(e, n, seed, 2, triad_cost<T>(n),
                            [=](const Exec& x, auto a, auto b, auto o) { rooftop::triad(x, alpha, a, b, o); },
                            [=](double x, double y) { return x + alpha * y; }, mag_triad);
    }));
    auto plus = [](double acc, double v) { return acc + v; };
    t.push_back(spec("dot", ROOFTOP_COST_OF(dot_cost), [=](auto tag, const Exec& e, std::int64_t n, std::uint64_t seed) {
      using T = typename decltype(tag)::type;
      return reduction<T>(e, n, seed, 2, dot_cost<T>(n), [](const Exec& x, auto a, auto b) { return rooftop::dot(x, a, b); },
                          [](double x, double y) { return x * y; }, plus, 0.0, false, epsilon<compute_t<T>>());
    }));
    t.push_back(spec("sum", ROOFTOP_COST_OF(sum_cost), [=](auto tag, const Exec& e, std::int64_t n, std::uint64_t seed) {
      using T = typename decltype(tag)::type;
      return reduction<T>(e, n, seed, 1, sum_cost<T>(n), [](const Exec& x, auto a, auto) { return rooftop::sum(x, a); },
                          [](double x, double) { return x; }, plus, 0.0, false, epsilon<compute_t<T>>());
    }));
    t.push_back(spec("max", ROOFTOP_COST_OF(max_cost), [=](auto tag, const Exec& e, std::int64_t n, std::uint64_t seed) {
      using T = typename decltype(tag)::type;
      return reduction<T>(e, n, seed, 1, max_cost<T>(n), [](const Exec& x, auto a, auto) { return rooftop::max(x, a); },
                          [](double x, double) { return x; }, [](double acc, double v) { return std::max(acc, v); },
                          -INFINITY, false, 0.0);
    }));
    t.push_back(spec("nrm2", ROOFTOP_COST_OF(nrm2_cost), [=](auto tag, const Exec& e, std::int64_t n, std::uint64_t seed) {
      using T = typename decltype(tag)::type;
      return reduction<T>(e, n, seed, 1, nrm2_cost<T>(n), [](const Exec& x, auto a, auto) { return rooftop::nrm2(x, a); },
                          [](double x, double) { return x * x; }, plus, 0.0, true, 0x1p-52);  // squares accumulate in fp64
    }));
    return t;
  }();
  return table;
}

/// The spec named `name`, or nullptr.
inline const OpSpec* find_op(const std::string& name) {
  for (const auto& s : op_table())
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace rooftop::harness
