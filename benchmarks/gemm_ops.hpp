// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// gemm's entry in the op table: square C = A * B (LayoutRight, beta = 0, C of the inputs'
/// dtype) at n = 512 (the cache-resident sweep) and n = 2048 (main memory), verified against
/// float64 after timing.
#pragma once

#include "op_spec.hpp"
#include "reference.hpp"

#include "../kernels/gemm.hpp"

#include <random>
#include <sstream>

namespace rooftop::harness {

namespace gemm_entry {

template <class T>
using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, BackendMemory>;

/// Entries of C checked against float64: all of them up to 2^28 multiply-adds; beyond that
/// (n = 2048 would take ~10 s on one host core) 8 whole rows, 8 whole columns and 4096 random
/// entries, which covers every tile of C along those rows and columns. (Every entry is also
/// checked to be written and within |C| <= k, see verify.)
inline std::vector<std::pair<std::int64_t, std::int64_t>> checked_entries(std::int64_t m, std::int64_t n, std::int64_t k,
                                                                           std::uint64_t seed) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  if (static_cast<double>(m) * n * k <= 0x1p28) {
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) out.emplace_back(i, j);
    return out;
  }
  std::mt19937_64 rng(seed);
  for (int s = 0; s < 8; ++s) {
    const std::int64_t i = static_cast<std::int64_t>(rng() % m), j = static_cast<std::int64_t>(rng() % n);
    for (std::int64_t c = 0; c < n; ++c) out.emplace_back(i, c);
    for (std::int64_t r = 0; r < m; ++r) out.emplace_back(r, j);
  }
  for (int s = 0; s < 4096; ++s) out.emplace_back(static_cast<std::int64_t>(rng() % m), static_cast<std::int64_t>(rng() % n));
  return out;
}

template <class T>
OpInstance square(const Exec& exec, const Shape& shape, std::uint64_t seed) {
  const std::int64_t m = shape[0], n = shape[1], k = shape[2];
  Matrix<T> a("rooftop::a", m, k), b("rooftop::b", k, n), c("rooftop::c", m, n);
  fill_uniform(exec, flat(a), seed, -1, 1);
  fill_uniform(exec, flat(b), seed + 1, -1, 1);
  fill_nan(exec, flat(c));  // beta = 0: must not leak into C
  OpInstance op;
  op.cost = gemm_cost<T>(m, n, k);
  op.matrix_units = gemm_uses_matrix_units<Exec, T, T> || gemm_uses_bf16_pairs<Exec, T, T>;
  op.shape = shape;
  op.run = [=] { rooftop::gemm(exec, Trans::none, a, Trans::none, b, c); };
  op.verify = [=]() -> std::string {
    const auto ha = to_host_flat(a), hb = to_host_flat(b), hc = to_host_flat(c);
    // Every entry: written (C starts as NaN) and |C| <= k, as |A|, |B| <= 1 allow (with room
    // for the accumulation's roundings).
    if (const std::int64_t e = reference::first_outside(hc, 1.01 * static_cast<double>(k)); e >= 0) {
      std::ostringstream msg;
      msg << "C(" << e / n << ", " << e % n << ") is " << hc[e] << ": not written, or beyond |C| <= k = " << k
          << " that inputs in [-1, 1] allow";
      return msg.str();
    }
    for (const auto& entry : checked_entries(m, n, k, seed)) {
      const std::int64_t i = entry.first, j = entry.second;  // (C++17 lambdas cannot capture structured bindings)
      const std::string error = reference::gemm_entry<compute_t<T>, T>([&](std::int64_t kk) { return ha[i * k + kk]; },
                                                                        [&](std::int64_t kk) { return hb[kk * n + j]; }, k, 1.0,
                                                                        0.0, 0.0, hc[i * n + j]);
      if (!error.empty()) return "C(" + std::to_string(i) + ", " + std::to_string(j) + ") " + error;
    }
    return "";
  };
  return op;
}

}  // namespace gemm_entry

/// Appends gemm to the op table.
inline void append_gemm_ops(std::vector<OpSpec>& t) {
  OpSpec s = detail::typed_spec(
      "gemm", [](auto tag, const Shape& sh) { return gemm_cost<typename decltype(tag)::type>(sh[0], sh[1], sh[2]); },
      [](auto tag, const Exec& e, const Shape& sh, std::uint64_t seed) {
        return gemm_entry::square<typename decltype(tag)::type>(e, sh, seed);
      });
  // Compute-bound: the shape is the problem size, not a working set. n = 2048 (48 MB of fp32)
  // is beyond the last-level cache; n = 512 fits it.
  s.shapes_at = [](DType, double working_set) {
    const std::int64_t n = working_set >= 64e6 ? 2048 : 512;
    return std::vector<Shape>{{n, n, n}};
  };
  s.shape_of_size = [](std::int64_t n) { return Shape{n, n, n}; };
  t.push_back(s);
}

}  // namespace rooftop::harness
