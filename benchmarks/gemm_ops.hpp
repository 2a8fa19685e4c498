// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// gemm's entries in the op table: `gemm`, square C = A * B (LayoutRight, beta = 0, C of the
/// inputs' dtype) at n = 512 (the cache-resident sweep) and n = 2048 (main memory), and
/// `linear`, a decode step y = x W^T (nn.Linear's layout) of 1 and 8 rows; verified against
/// float64 after timing.
#pragma once

#include "op_spec.hpp"
#include "reference.hpp"

#include "../kernels/gemm.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace rooftop::harness {

namespace gemm_entry {

template <class T>
using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, BackendMemory>;

/// C = A B (A m x k, B k x n, row-major) in float64, and the sums of |A(i, kk) B(kk, j)| the
/// bound needs (entry_bound), for every entry: on the host's threads, 8 rows of C at a
/// time in i-k-j order (each row of B read once per 8 rows; the inner loops vectorize). n =
/// 2048 is 8.6e9 multiply-adds: about a second or two on 2 cores.
inline void host_product(const std::vector<double>& a, const std::vector<double>& b, std::int64_t m, std::int64_t n, std::int64_t k,
                         std::vector<double>& want, std::vector<double>& mag) {
  constexpr std::int64_t rows = 8;
  want.assign(static_cast<std::size_t>(m * n), 0.0);
  mag.assign(static_cast<std::size_t>(m * n), 0.0);
  double* const w = want.data();
  double* const g = mag.data();
  Kokkos::parallel_for("rooftop::gemm_reference", Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, (m + rows - 1) / rows),
                       [&](const std::int64_t block) {
                         const std::int64_t i1 = std::min(m, (block + 1) * rows);
                         for (std::int64_t kk = 0; kk < k; ++kk) {
                           const double* const bk = b.data() + kk * n;
                           for (std::int64_t i = block * rows; i < i1; ++i) {
                             const double av = a[i * k + kk], aa = std::abs(av);
                             double* const wi = w + i * n;
                             double* const gi = g + i * n;
                             for (std::int64_t j = 0; j < n; ++j) {
                               wi[j] += av * bk[j];
                               gi[j] += aa * std::abs(bk[j]);
                             }
                           }
                         }
                       });
  Kokkos::DefaultHostExecutionSpace().fence();
}

/// The bound on an entry of C = A B (alpha 1, beta 0) from the harness's random inputs, `want`
/// in float64 and `mag` the sum of |products|: the probabilistic bound on hosts
/// (reference::gemm_bound_random), the worst case on devices.
template <class T>
double entry_bound(std::int64_t k, double mag, double want) {
  if constexpr (rooftop::detail::on_host<Exec>) return reference::gemm_bound_random<compute_t<T>, T>(k, 1.0, mag, 0.0, want);
  return reference::gemm_bound<compute_t<T>, T>(k, 1.0, mag, 0.0, want);
}

/// "" if every entry of `got` is within entry_bound of `want`, else the first that is not, as
/// `name`(i, j).
template <class T>
std::string compare_entries(const char* name, const std::vector<double>& got, const std::vector<double>& want,
                            const std::vector<double>& mag, std::int64_t n, std::int64_t k) {
  for (std::size_t e = 0; e < got.size(); ++e)
    if (!(std::abs(got[e] - want[e]) <= entry_bound<T>(k, mag[e], want[e]))) {
      std::ostringstream msg;
      msg.precision(9);
      msg << name << "(" << e / n << ", " << e % n << ") is " << got[e] << ", expected " << want[e];
      return msg.str();
    }
  return "";
}

/// C = A op(B) (beta = 0, C of the inputs' dtype, all row-major): `gemm`, B (k x n), and
/// `linear`, op(B) = W^T with W (n x k) as nn.Linear stores it (on CPUs gemm's skinny path for
/// m <= 8: W read once, in place). Every entry of C against float64 (C starts as NaN: an entry
/// not written fails too).
template <class T>
OpInstance product(const Exec& exec, const Shape& shape, std::uint64_t seed, bool b_transposed) {
  const std::int64_t m = shape[0], n = shape[1], k = shape[2];
  Matrix<T> a("rooftop::a", m, k), b("rooftop::b", b_transposed ? n : k, b_transposed ? k : n), c("rooftop::c", m, n);
  fill_uniform(exec, flat(a), seed, -1, 1);
  fill_uniform(exec, flat(b), seed + 1, -1, 1);
  const Trans tb = b_transposed ? Trans::transpose : Trans::none;
  // The host's skinny paths (m <= 8) run fp32 FMAs, not the bf16 pairs.
  const bool skinny = rooftop::detail::on_host<Exec> && m <= rooftop::detail::skinny_gemm_rows;
  OpInstance op;
  op.poison = [=] { fill_nan(exec, flat(c)); };  // beta = 0: must not leak into C
  op.poison();
  op.cost = gemm_cost<T>(m, n, k);
  op.matrix_units = gemm_uses_matrix_units<Exec, T, T> || (gemm_uses_bf16_pairs<Exec, T, T> && !skinny);
  op.shape = shape;
  op.run = [=] { rooftop::gemm(exec, Trans::none, a, tb, b, c); };
  op.verify = [=]() -> std::string {
    const auto ha = to_host_flat(a), hc = to_host_flat(c);
    std::vector<double> hb = to_host_flat(b);
    if (b_transposed) {  // op(B) as k x n for host_product
      std::vector<double> t(hb.size());
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t kk = 0; kk < k; ++kk) t[kk * n + j] = hb[j * k + kk];
      hb.swap(t);
    }
    std::vector<double> want, mag;
    host_product(ha, hb, m, n, k, want, mag);
    return compare_entries<T>("C", hc, want, mag, n, k);
  };
  return op;
}

/// The host bytes product's verification holds at once: A, B (twice where it is transposed),
/// C, the float64 product and its magnitudes, all as doubles.
inline double verification_bytes(DType, const Shape& sh) {
  const double m = static_cast<double>(sh[0]), n = static_cast<double>(sh[1]), k = static_cast<double>(sh[2]);
  return sizeof(double) * (m * k + 2 * k * n + 3 * m * n);
}

}  // namespace gemm_entry

/// Appends gemm to the op table.
inline void append_gemm_ops(std::vector<OpSpec>& t) {
  OpSpec s = detail::typed_spec(
      "gemm", [](auto tag, const Shape& sh) { return gemm_cost<typename decltype(tag)::type>(sh[0], sh[1], sh[2]); },
      [](auto tag, const Exec& e, const Shape& sh, std::uint64_t seed) {
        return gemm_entry::product<typename decltype(tag)::type>(e, sh, seed, false);
      });
  // Compute-bound: the shape is the problem size, not a working set. n = 2048 (48 MB of fp32)
  // is beyond the last-level cache; n = 512 fits it.
  s.shapes_at = [](DType, double working_set) {
    const std::int64_t n = working_set >= 64e6 ? 2048 : 512;
    return std::vector<Shape>{{n, n, n}};
  };
  s.shapes_of_size = [](std::int64_t n) { return std::vector<Shape>{{n, n, n}}; };
  s.verification_bytes = gemm_entry::verification_bytes;
  t.push_back(s);

  // A decode step: 1 and 8 tokens times a square weight that fills the working set (memory-
  // bound: 2m FLOPs per weight element), n a multiple of 64.
  OpSpec lin = detail::typed_spec(
      "linear", [](auto tag, const Shape& sh) { return gemm_cost<typename decltype(tag)::type>(sh[0], sh[1], sh[2]); },
      [](auto tag, const Exec& e, const Shape& sh, std::uint64_t seed) {
        return gemm_entry::product<typename decltype(tag)::type>(e, sh, seed, true);
      });
  lin.shapes_at = [cost = lin.cost](DType d, double working_set) {
    const double element = cost(d, Shape{1, 1, 1}).bytes / 3;  // x, W and y of one element each
    const std::int64_t n = std::max<std::int64_t>(64, static_cast<std::int64_t>(std::sqrt(working_set / element)) / 64 * 64);
    return std::vector<Shape>{{1, n, n}, {8, n, n}};
  };
  lin.shapes_of_size = [](std::int64_t n) { return std::vector<Shape>{{1, n, n}, {8, n, n}}; };
  lin.verification_bytes = gemm_entry::verification_bytes;
  t.push_back(lin);
}

}  // namespace rooftop::harness
