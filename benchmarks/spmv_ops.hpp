// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// spmv's entry in the op table (the 3D 7-point Laplacian with int32 indices on an n^3 grid)
/// and its float64 host reference, which the tests verify through too.
#pragma once

#include "op_spec.hpp"
#include "reference.hpp"

#include "../kernels/spmv.hpp"

#include <cmath>
#include <vector>

namespace rooftop::reference {

/// A x in float64 for a Csr of any memory space, with each row's error scale (sum of |terms|)
/// and length.
struct SpmvResult {
  std::vector<double> want, scale;
  std::vector<std::int64_t> length;
};

template <class T, class Index, class Memory>
SpmvResult spmv(const Csr<T, Index, Memory>& A, const std::vector<double>& x) {
  const auto p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.row_ptr);
  const auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.col_idx);
  const auto v = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
  SpmvResult out{std::vector<double>(A.rows), std::vector<double>(A.rows), std::vector<std::int64_t>(A.rows)};
  reference::host_for(A.rows, [&](const std::int64_t r) {
    double sum = 0, scale = 0;
    for (std::int64_t e = p(r); e < p(r + 1); ++e) {
      const double term = static_cast<double>(static_cast<compute_t<T>>(v(e))) * x[c(e)];
      sum += term;
      scale += std::abs(term);
    }
    out.want[r] = sum;
    out.scale[r] = scale;
    out.length[r] = p(r + 1) - p(r);
  });
  return out;
}

/// Error bound of one element of spmv stored as T: a row of `length` products summed in
/// compute_t<T> (one rounding per product and per add, plus alpha/beta), relative to the sum
/// of |terms|, and one rounding to T of the result.
template <class T>
double spmv_tolerance(double want, double scale, std::int64_t length) {
  return 2 * epsilon<T>() * std::abs(want) + static_cast<double>(length + 4) * epsilon<compute_t<T>>() * scale + denorm_min<T>();
}

}  // namespace rooftop::reference

namespace rooftop::harness {

namespace spmv_op {

using Index = std::int32_t;

template <class T>
Cost cost(const Shape& s) {
  rooftop::detail::require_grid_points("spmv", s[0], s[1], s[2]);
  const std::int64_t rows = s[0] * s[1] * s[2];
  return spmv_cost<T, Index>(rows, rows, laplacian_3d_nnz(s[0], s[1], s[2]));
}

template <class T>
OpInstance make(const Exec& exec, const Shape& s, std::uint64_t seed) {
  const auto A = laplacian_3d<T, Index>(exec, s[0], s[1], s[2]);
  Vector<T> x("rooftop::x", A.cols), y("rooftop::y", A.rows);
  fill_uniform(exec, x, seed, -1, 1);
  OpInstance op;
  op.poison = [=] { fill_nan(exec, y); };
  op.poison();
  op.cost = cost<T>(s);
  op.shape = s;
  op.run = [=] { rooftop::spmv(exec, A, x, y); };
  op.verify = [=]() -> std::string {
    const auto ref = reference::spmv(A, detail::to_host(x));
    return reference::compare(detail::to_host(y), ref.want, [&](std::size_t r) {
      return reference::spmv_tolerance<T>(ref.want[r], ref.scale[r], ref.length[r]);
    });
  };
  return op;
}

}  // namespace spmv_op

/// Appends spmv to the op table: y = A x for the 7-point Laplacian of an n^3 grid (shape {n,
/// n, n}), sized so that its compulsory bytes are about the working set.
inline void append_spmv_ops(std::vector<OpSpec>& t) {
  OpSpec s = detail::typed_spec(
      "spmv", [](auto tag, const Shape& shape) { return spmv_op::cost<typename decltype(tag)::type>(shape); },
      [](auto tag, const Exec& e, const Shape& shape, std::uint64_t seed) {
        return spmv_op::make<typename decltype(tag)::type>(e, shape, seed);
      });
  detail::size_as_cube(s, 3);
  // x, y, and the reference's want, scale and length per row, plus host copies of A where
  // its memory is not the host's.
  s.verification_bytes = [](DType d, const Shape& shape) {
    rooftop::detail::require_grid_points("spmv", shape[0], shape[1], shape[2]);
    const double rows = static_cast<double>(shape[0] * shape[1] * shape[2]);
    const double matrix = dispatch_dtype(d, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return static_cast<double>(laplacian_3d_nnz(shape[0], shape[1], shape[2])) * (sizeof(T) + sizeof(spmv_op::Index)) +
             (rows + 1) * sizeof(spmv_op::Index);
    });
    constexpr bool matrix_on_host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, BackendMemory>::accessible;
    return 5 * rows * sizeof(double) + (matrix_on_host ? 0 : matrix);
  };
  t.push_back(s);
}

}  // namespace rooftop::harness
