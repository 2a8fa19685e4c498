// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The grid ops' entries in the op table: the 7-point stencil sweep on an (nx, ny, nz) grid,
/// and transpose (tiled) beside transpose_naive on a square matrix, so the report shows what
/// tiling buys. Each instance is verified against a float64 host reference (the transposes
/// exactly).
#pragma once

#include "op_spec.hpp"
#include "reference.hpp"

#include "../kernels/stencil.hpp"
#include "../kernels/transpose.hpp"

#include <cmath>

namespace rooftop::harness {

namespace grid {

template <class T>
using Grid = Kokkos::View<T***, Kokkos::LayoutRight, BackendMemory>;
template <class T>
using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, BackendMemory>;

constexpr double stencil_c0 = -0.3, stencil_c1 = 1.0 / 6;

/// One sweep over an (nx, ny, nz) grid uniform in [-1, 1).
template <class T>
OpInstance stencil_instance(const Exec& exec, const Shape& s, std::uint64_t seed) {
  const std::int64_t nx = s[0], ny = s[1], nz = s[2];
  Grid<T> in("rooftop::in", nx, ny, nz), out("rooftop::out", nx, ny, nz);
  // Before the fills: Kokkos 3.4 may have given a grid no memory (see require_allocated).
  rooftop::detail::require_allocated("stencil", "in", in);
  rooftop::detail::require_allocated("stencil", "out", out);
  fill_uniform(exec, flat(in), seed, -1, 1);
  OpInstance op;
  op.poison = [=] { fill_nan(exec, flat(out)); };
  op.poison();
  op.cost = stencil_cost<T>(nx, ny, nz);
  op.shape = s;
  op.streamable_output_bytes = view_bytes(out);
  op.run = [=] { rooftop::stencil(exec, in, out, stencil_c0, stencil_c1); };
  op.verify = [=]() -> std::string {
    const auto hi = to_host_flat(in), ho = to_host_flat(out);
    std::vector<double> want(hi.size()), scale(hi.size());
    reference::host_for(nx * ny, [&](const std::int64_t ij) {
      const std::int64_t i = ij / ny, j = ij % ny;
      for (std::int64_t k = 0; k < nz; ++k) {
        const std::int64_t p = (i * ny + j) * nz + k;
        if (i == 0 || j == 0 || k == 0 || i == nx - 1 || j == ny - 1 || k == nz - 1) {
          want[p] = hi[p];  // boundary: copied, exactly
          scale[p] = 0;
          continue;
        }
        const std::int64_t sx = ny * nz, sy = nz;
        const double n[6] = {hi[p - sx], hi[p + sx], hi[p - sy], hi[p + sy], hi[p - 1], hi[p + 1]};
        double sum = 0, magnitude = 0;
        for (double v : n) sum += v, magnitude += std::abs(v);
        want[p] = stencil_c0 * hi[p] + stencil_c1 * sum;
        scale[p] = std::abs(stencil_c0 * hi[p]) + std::abs(stencil_c1) * magnitude;
      }
    });
    // Eight roundings of the compute type (one per FLOP) relative to the terms, one to storage.
    return reference::compare(ho, want, [&](std::size_t p) {
      return scale[p] == 0 ? 0.0
                           : 2 * epsilon<T>() * std::abs(want[p]) + 8 * epsilon<compute_t<T>>() * scale[p] + denorm_min<T>();
    });
  };
  return op;
}

/// A (rows, cols) matrix uniform in [-1, 1) transposed by `run` into a (cols, rows) one; `streams`:
/// whether run's kernel may write it with streaming stores (transpose_naive never does).
template <class T, class Run>
OpInstance transpose_instance(const Exec& exec, const Shape& s, std::uint64_t seed, bool streams, Run run) {
  const std::int64_t rows = s[0], cols = s[1];
  Matrix<T> in("rooftop::in", rows, cols), out("rooftop::out", cols, rows);
  fill_uniform(exec, flat(in), seed, -1, 1);
  OpInstance op;
  op.poison = [=] { fill_nan(exec, flat(out)); };
  op.poison();
  op.cost = transpose_cost<T>(rows, cols);
  op.shape = s;
  op.streamable_output_bytes = streams ? view_bytes(out) : 0;
  op.run = [=] { run(exec, in, out); };
  op.verify = [=]() -> std::string {
    const auto hi = to_host_flat(in), ho = to_host_flat(out);
    std::vector<double> want(hi.size());
    reference::host_for(rows, [&](const std::int64_t i) {
      for (std::int64_t j = 0; j < cols; ++j) want[j * rows + i] = hi[i * cols + j];
    });
    return reference::compare(ho, want, [](std::size_t) { return 0.0; });
  };
  return op;
}

}  // namespace grid

/// Appends the grid ops (stencil, transpose, transpose_naive) to the op table.
inline void append_grid_ops(std::vector<OpSpec>& t) {
  using namespace grid;
  // stencil: a cubic grid whose compulsory bytes (read in, write out) are the working set.
  OpSpec st = detail::typed_spec(
      "stencil", [](auto tag, const Shape& s) { return stencil_cost<typename decltype(tag)::type>(s[0], s[1], s[2]); },
      [](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
        return stencil_instance<typename decltype(tag)::type>(e, s, seed);
      });
  detail::size_as_cube(st, 3);
  st.verification_doubles_per_element = 2;  // in, out, expected out, error scale
  t.push_back(st);

  // transpose, tiled and naive: a square matrix whose compulsory bytes are the working set.
  auto transpose_cost_of = [](auto tag, const Shape& s) { return transpose_cost<typename decltype(tag)::type>(s[0], s[1]); };
  OpSpec tiled = detail::typed_spec("transpose", transpose_cost_of, [](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
    return transpose_instance<typename decltype(tag)::type>(e, s, seed, true,
                                                            [](const Exec& x, auto in, auto out) { rooftop::transpose(x, in, out); });
  });
  OpSpec naive = detail::typed_spec("transpose_naive", transpose_cost_of, [](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
    return transpose_instance<typename decltype(tag)::type>(e, s, seed, false,
                                                            [](const Exec& x, auto in, auto out) { rooftop::transpose_naive(x, in, out); });
  });
  for (OpSpec* s : {&tiled, &naive}) {
    detail::size_as_cube(*s, 2);
    s->verification_doubles_per_element = 1.5;  // in, out, expected out
    t.push_back(*s);
  }
}

}  // namespace rooftop::harness
