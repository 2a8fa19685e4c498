// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The one table of ops the roofline harness and the Google Benchmark suite both run.
#pragma once

#include "attention_ops.hpp"
#include "gemm_ops.hpp"
#include "grid_ops.hpp"
#include "ml_ops.hpp"
#include "op_spec.hpp"
#include "spmv_ops.hpp"

namespace rooftop::harness {

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
    t.push_back(spec("dot", ROOFTOP_COST_OF(dot_cost), [=](auto tag, const Exec& e, std::int64_t n, std::uint64_t seed) {
      using T = typename decltype(tag)::type;
      return reduction<T>(e, n, seed, 2, dot_cost<T>(n), [](const Exec& x, auto a, auto b) { return rooftop::dot(x, a, b); },
                          [](double x, double y) { return x * y; }, reference::Sum{}, false, epsilon<compute_t<T>>());
    }));
    t.push_back(spec("sum", ROOFTOP_COST_OF(sum_cost), [=](auto tag, const Exec& e, std::int64_t n, std::uint64_t seed) {
      using T = typename decltype(tag)::type;
      return reduction<T>(e, n, seed, 1, sum_cost<T>(n), [](const Exec& x, auto a, auto) { return rooftop::sum(x, a); },
                          [](double x, double) { return x; }, reference::Sum{}, false, epsilon<compute_t<T>>());
    }));
    t.push_back(spec("max", ROOFTOP_COST_OF(max_cost), [=](auto tag, const Exec& e, std::int64_t n, std::uint64_t seed) {
      using T = typename decltype(tag)::type;
      return reduction<T>(e, n, seed, 1, max_cost<T>(n), [](const Exec& x, auto a, auto) { return rooftop::max(x, a); },
                          [](double x, double) { return x; }, reference::Max{}, false, 0.0);
    }));
    t.push_back(spec("nrm2", ROOFTOP_COST_OF(nrm2_cost), [=](auto tag, const Exec& e, std::int64_t n, std::uint64_t seed) {
      using T = typename decltype(tag)::type;
      return reduction<T>(e, n, seed, 1, nrm2_cost<T>(n), [](const Exec& x, auto a, auto) { return rooftop::nrm2(x, a); },
                          [](double x, double) { return x * x; }, reference::Sum{}, true, 0x1p-52);  // squares accumulate in fp64
    }));
    append_ml_ops(t);
    append_gemm_ops(t);
    append_attention_ops(t);
    append_spmv_ops(t);
    append_grid_ops(t);
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
