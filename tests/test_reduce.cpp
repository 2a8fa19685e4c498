// SPDX-License-Identifier: BSD-3-Clause
// Reductions (sum, max, nrm2) over every dtype and size, against a float64 host reference;
// exactness on integers; empty inputs; NaN; range.
#include "common.hpp"

#include <rooftop/kernels/reduce.hpp>

#include <cmath>
#include <limits>

using namespace rooftop;
using test::Exec;
using test::host;

TEST_CASE_TEMPLATE("sum, max, nrm2 match float64", T, ROOFTOP_DTYPES) {
  for (const std::int64_t n : test::sizes) {
    CAPTURE(n);
    auto x = test::random_vector<T>(n);
    const auto hx = host(x);
    double sum = 0, sum_abs = 0, max = -std::numeric_limits<double>::infinity(), squares = 0;
    for (double v : hx) {
      sum += v;
      sum_abs += std::abs(v);
      max = std::max(max, v);
      squares += v * v;
    }
    const double eps = epsilon<compute_t<T>>();
    CHECK(std::abs(rooftop::sum(Exec(), x) - sum) <= test::reduction_tolerance(n, eps) * sum_abs);
    CHECK(static_cast<double>(rooftop::max(Exec(), x)) == max);  // exact: a max rounds nothing
    const double norm = std::sqrt(squares);
    CHECK(std::abs(rooftop::nrm2(Exec(), x) - norm) <= (test::reduction_tolerance(n, 0x1p-52) + 2 * eps) * norm);
  }
}

TEST_CASE_TEMPLATE("sum of small integers is exact (no element dropped or counted twice)", T, ROOFTOP_DTYPES) {
  for (const std::int64_t n : test::sizes) {
    CAPTURE(n);
    test::Vector<T> x("x", n);
    fill_integers(Exec(), x, test::next_seed(), -4, 4);
    double want = 0;
    for (double v : host(x)) want += v;
    CHECK(static_cast<double>(rooftop::sum(Exec(), x)) == want);
  }
}

TEST_CASE_TEMPLATE("max finds a single extreme anywhere, and propagates NaN", T, ROOFTOP_DTYPES) {
  const std::int64_t n = 4096 * 3 + 77;
  for (std::int64_t where : {std::int64_t(0), std::int64_t(4095), std::int64_t(4096), n - 1}) {
    CAPTURE(where);
    auto x = test::random_vector<T>(n);
    Kokkos::deep_copy(Kokkos::subview(x, where), T(7.0f));
    CHECK(static_cast<double>(rooftop::max(Exec(), x)) == 7.0);
    Kokkos::deep_copy(Kokkos::subview(x, where), T(std::nanf("")));
    CHECK(std::isnan(rooftop::max(Exec(), x)));
  }
}

TEST_CASE_TEMPLATE("max: a NaN at every position of a short vector, infinities without NaN", T, ROOFTOP_DTYPES) {
  const std::int64_t n = 100;  // several vector steps of the host's fold, and a tail
  auto x = test::random_vector<T>(n);
  Kokkos::deep_copy(Kokkos::subview(x, 3), T(std::numeric_limits<float>::infinity()));
  Kokkos::deep_copy(Kokkos::subview(x, 40), T(-std::numeric_limits<float>::infinity()));
  CHECK(rooftop::max(Exec(), x) == std::numeric_limits<compute_t<T>>::infinity());
  for (std::int64_t where = 0; where < n; ++where) {
    CAPTURE(where);
    auto y = test::random_vector<T>(n);
    Kokkos::deep_copy(Kokkos::subview(y, where), T(std::nanf("")));
    CHECK(std::isnan(rooftop::max(Exec(), y)));
  }
}

TEST_CASE_TEMPLATE("empty inputs: sum 0, nrm2 0, max -Inf", T, ROOFTOP_DTYPES) {
  test::Vector<T> x("x", 0);
  CHECK(rooftop::sum(Exec(), x) == 0);
  CHECK(rooftop::nrm2(Exec(), x) == 0);
  CHECK(rooftop::max(Exec(), x) == -std::numeric_limits<compute_t<T>>::infinity());
}

TEST_CASE("nrm2 neither overflows nor underflows for fp32 data") {
  test::Vector<float> big("big", 1000), tiny("tiny", 1000);
  Kokkos::deep_copy(big, 1e30f);   // squares 1e60 overflow fp32
  Kokkos::deep_copy(tiny, 1e-30f); // squares 1e-60 underflow fp32
  CHECK(rooftop::nrm2(Exec(), big) == doctest::Approx(1e30 * std::sqrt(1000.0)).epsilon(1e-6));
  CHECK(rooftop::nrm2(Exec(), tiny) == doctest::Approx(1e-30 * std::sqrt(1000.0)).epsilon(1e-6));
}
