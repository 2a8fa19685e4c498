// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// float64 host references for the ML ops and the tolerances their results are held to; the
/// harness, the benchmarks and the tests all verify through these.
#pragma once

#include "../core/reduction.hpp"
#include "../core/types.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace rooftop::reference {

inline double relu(double x) { return x > 0 ? x : (std::isnan(x) ? x : 0.0); }
inline double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
inline double gelu_erf(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
inline double silu(double x) { return x / (1 + std::exp(-x)); }
// (At x = -Inf these give NaN; rooftop's give the limit 0. The random inputs are finite.)

/// softmax of one row (all -Inf gives all 0, as rooftop::softmax documents).
inline void softmax_row(const double* x, std::int64_t n, double* y) {
  double m = -std::numeric_limits<double>::infinity(), s = 0;
  for (std::int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  if (m == -std::numeric_limits<double>::infinity()) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = 0;
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
  for (std::int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i] - m) / s;
}

/// layernorm of one row; w and b may be null (1 and 0).
inline void layernorm_row(const double* x, std::int64_t n, double eps, const double* w, const double* b, double* y) {
  double mean = 0, var = 0;
  for (std::int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= static_cast<double>(n);
  for (std::int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= static_cast<double>(n);
  const double rstd = 1 / std::sqrt(var + eps);
  for (std::int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * (w ? w[i] : 1.0) + (b ? b[i] : 0.0);
}

/// rmsnorm of one row; w may be null (1).
inline void rmsnorm_row(const double* x, std::int64_t n, double eps, const double* w, double* y) {
  double squares = 0;
  for (std::int64_t i = 0; i < n; ++i) squares += x[i] * x[i];
  const double rrms = 1 / std::sqrt(squares / static_cast<double>(n) + eps);
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * rrms * (w ? w[i] : 1.0);
}

/// float64 folds for reduction's reference (benchmarks/op_spec.hpp): add(x) folds one term in,
/// value() is the result.
///
/// Sum adds with Neumaier's compensation (Kahan summation's variant that also holds when a term
/// outweighs the sum: value() is within about 2 ulps of the exact sum for any count well below
/// 1 / u). A plain float64 fold of 2^25 terms in [0.5, 1.5) is off by about 5e-6 (its roundings
/// in ulps of partial sums up to 2^25), as much as fp64 sum's whole tolerance, and failed a
/// correct fp64 sum in CI.
struct Sum {
  double sum = 0, carry = 0;
  void add(double x) {
    const double t = sum + x;
    carry += std::abs(sum) >= std::abs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
  }
  double value() const { return sum + carry; }
};

/// The largest term (-inf if none).
struct Max {
  double max = -std::numeric_limits<double>::infinity();
  void add(double x) { max = std::max(max, x); }
  double value() const { return max; }
};

/// Error bound of an fp32-math result stored as T: `fp32_roundings` roundings (or ulps of
/// approximation) of fp32 relative to `scale`, plus one rounding to T of the result itself.
template <class T>
double tolerance(double want, double scale, double fp32_roundings) {
  return 2 * epsilon<T>() * std::abs(want) + fp32_roundings * epsilon<float>() * scale + denorm_min<T>();
}

/// Row-wise ops accumulate a row through rooftop's fold: its depth bounds the roundings. A
/// host row folds into four registers of lanes (cpu::detail::fold_row: 32 lanes or more, so
/// cols / 32 per lane, 1024 for rows of 32768 on AVX2), plus a tail of at most 63 elements.
inline double row_roundings(std::int64_t cols) {
  const std::int64_t per_lane = cols / 32 + 64;
  return detail::reduction_depth(cols, per_lane > 256 ? per_lane : 256) + 16;
}

/// The bound on an entry of gemm, C = alpha * op(A) op(B) + beta * C0, that is `want` in
/// float64, where `mag` is the sum of |op(A)(i, kk) op(B)(kk, j)| over k and beta_c0 is beta *
/// C0(i, j): k sequential FMAs and the alpha/beta update in Acc relative to the sum of |terms|,
/// one rounding to C's type TC (gemm_bound_of: `roundings` of Acc in place of k + 3).
template <class Acc, class TC>
double gemm_bound_of(double roundings, double alpha, double mag, double beta_c0, double want) {
  return roundings * epsilon<Acc>() * (std::abs(alpha) * mag + std::abs(beta_c0)) + epsilon<TC>() * std::abs(want) + denorm_min<TC>();
}
template <class Acc, class TC>
double gemm_bound(std::int64_t k, double alpha, double mag, double beta_c0, double want) {
  return gemm_bound_of<Acc, TC>(static_cast<double>(k + 3), alpha, mag, beta_c0, want);
}

/// gemm_bound for random inputs on hosts, where every accumulation rounds to nearest (one fused
/// multiply-add, or without ROOFTOP_FUSED_MUL_ADD a multiply and an add, two roundings): Higham
/// and Mary's probabilistic bound (SIAM J. Sci. Comput. 41(5), 2019), lambda sqrt(r) u for the
/// r roundings in place of the worst case's r u, lambda = 10 (it fails with probability below
/// 2 k exp(-lambda^2 / 2), about k 4e-22 per entry, where the roundings are independent with
/// mean zero, as random inputs make them); the rounding to TC stays the worst case. The worst
/// case lets errors far above rounding pass where k is large: at k = 8192 (`linear`, fp32) its
/// bound is about 1.0 where the values are about 30. A scale of 1.001 built into gemm's call
/// (by hand, `rooftop --quick --ops gemm,linear`) passed the worst case for fp32 and bf16
/// `linear`; with this bound it fails `gemm` fp64, fp32 and fp16 and `linear` fp64 (fp32
/// `linear` at k = 8192 and bf16 outputs, rounded to 0.4%, still pass). GPUs' matrix units need
/// not round to nearest, so the harness keeps gemm_bound there.
template <class Acc, class TC>
double gemm_bound_random(std::int64_t k, double alpha, double mag, double beta_c0, double want) {
  constexpr double lambda = 10, per_step = ROOFTOP_FUSED_MUL_ADD ? 1 : 2;
  return gemm_bound_of<Acc, TC>(lambda * std::sqrt(per_step * static_cast<double>(k + 3)), alpha, mag, beta_c0, want);
}

/// Entry (i, j) of gemm against float64: a(kk) and b(kk) give op(A)(i, kk) and op(B)(kk, j) as
/// float64; the bound is gemm_bound's. "" or what is wrong.
template <class Acc, class TC, class OpA, class OpB>
std::string gemm_entry(const OpA& a, const OpB& b, std::int64_t k, double alpha, double beta, double c0, double got) {
  double dot = 0, mag = 0;
  for (std::int64_t kk = 0; alpha != 0 && kk < k; ++kk) {  // alpha = 0: A and B are not read (BLAS)
    dot += a(kk) * b(kk);
    mag += std::abs(a(kk) * b(kk));
  }
  const double beta_c0 = beta == 0 ? 0.0 : beta * c0;  // beta = 0 never reads C0 (which may be NaN)
  const double want = alpha * dot + beta_c0;
  if (std::abs(got - want) <= gemm_bound<Acc, TC>(k, alpha, mag, beta_c0, want)) return "";
  std::ostringstream msg;
  msg.precision(9);
  msg << "is " << got << ", expected " << want;
  return msg.str();
}

/// f(i) for every i in [0, n) on the host's threads (Kokkos's default host execution space),
/// for float64 references and checks element by element: f must not depend on the order.
/// Serial, the verification of a 1.6 GB working set took most of each result's time in the
/// harness (the Granite Rapids VM: 15-20 s a result, one core busy).
template <class F>
void host_for(std::int64_t n, const F& f) {
  using Policy = Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::IndexType<std::int64_t>>;
  Kokkos::parallel_for("rooftop::reference", Policy(0, n), [&](const std::int64_t i) { f(i); });
  Kokkos::DefaultHostExecutionSpace().fence();
}

/// The least i in [0, n) for which ok(i) is false, or n (on the host's threads, as host_for).
template <class Ok>
std::int64_t first_failing(std::int64_t n, const Ok& ok) {
  using Policy = Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::IndexType<std::int64_t>>;
  std::int64_t first = n;  // the reducer starts each thread at the largest int64
  Kokkos::parallel_reduce(
      "rooftop::reference_check", Policy(0, n), [&](const std::int64_t i, std::int64_t& least) {
        if (i < least && !ok(i)) least = i;
      },
      Kokkos::Min<std::int64_t>(first));
  return std::min(first, n);
}

/// "" if |got[i] - want[i]| <= bound(i) for all i (NaN fails), else the first mismatch.
template <class Bound>
std::string compare(const std::vector<double>& got, const std::vector<double>& want, const Bound& bound) {
  const auto n = static_cast<std::int64_t>(got.size());
  const std::int64_t i = first_failing(n, [&](const std::int64_t k) {
    const auto at = static_cast<std::size_t>(k);
    return (std::isnan(got[at]) && std::isnan(want[at])) || std::abs(got[at] - want[at]) <= bound(at);
  });
  if (i == n) return "";
  std::ostringstream msg;
  msg.precision(9);
  msg << "element " << i << " of " << got.size() << " is " << got[i] << ", expected " << want[i];
  return msg.str();
}

/// The index of the first element of `got` that is not a number of magnitude at most `bound`
/// (NaN fails), or -1. For attention, whose float64 reference is checked at sampled rows only:
/// every entry must at least have been written (the outputs start as NaN) and lie within what
/// its inputs allow.
inline std::int64_t first_outside(const std::vector<double>& got, double bound) {
  const auto n = static_cast<std::int64_t>(got.size());
  const std::int64_t i = first_failing(n, [&](const std::int64_t k) { return std::abs(got[static_cast<std::size_t>(k)]) <= bound; });
  return i == n ? -1 : i;
}

}  // namespace rooftop::reference
