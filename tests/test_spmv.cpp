// SPDX-License-Identifier: BSD-3-Clause
// spmv: every dtype and both index types against float64 on Laplacians, random sparsity,
// matrices with empty rows (generated and built by hand), 0 rows, 0 columns, 1x1, long rows,
// banded matrices whose runs of rows of one structure (the CPU's vector blocks) are broken
// at every row of a block; strided x and y; alpha/beta (beta == 0 never reads y, alpha == 0
// reads neither A nor x); the generators' structure and reproducibility; preconditions.
#include "common.hpp"

#include "../benchmarks/spmv_ops.hpp"

#include <rooftop/kernels/spmv.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace rooftop;
using test::Exec;
using test::host;

namespace {

using Memory = BackendMemory;

/// y = alpha A x + beta y0 for fresh random x (and y0 unless beta == 0, where y starts as NaN)
/// against float64.
template <class T, class Index>
void check_spmv(const Csr<T, Index, Memory>& A, double alpha = 1, double beta = 0) {
  CAPTURE(A.rows);
  CAPTURE(A.cols);
  CAPTURE(A.nnz());
  CAPTURE(sizeof(Index));
  const auto x = test::random_vector<T>(A.cols);
  const auto y = beta == 0 ? test::poisoned_vector<T>(A.rows) : test::random_vector<T>(A.rows);
  const auto y0 = host(y);
  if (alpha == 1 && beta == 0)
    rooftop::spmv(Exec(), A, x, y);
  else
    rooftop::spmv(Exec(), alpha, A, x, beta, y);
  auto ref = reference::spmv(A, host(x));
  for (std::int64_t r = 0; r < A.rows; ++r) {
    ref.want[r] = alpha * ref.want[r] + (beta == 0 ? 0.0 : beta * y0[r]);
    ref.scale[r] = std::abs(alpha) * ref.scale[r] + (beta == 0 ? 0.0 : std::abs(beta * y0[r]));
  }
  const std::string error = reference::compare(host(y), ref.want, [&](std::size_t r) {
    return reference::spmv_tolerance<T>(ref.want[r], ref.scale[r], ref.length[r]);
  });
  CHECK_MESSAGE(error.empty(), error);
}

/// A random (rows, cols) CSR built on the host: row lengths uniform in [0, most] (so some rows
/// are empty; the first and last rows always are), distinct sorted columns, values in [-1, 1).
template <class T, class Index>
Csr<T, Index, Memory> host_random_csr(std::int64_t rows, std::int64_t cols, std::int64_t most, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<Index> row_ptr{0}, col_idx;
  std::vector<double> values;
  std::vector<Index> all(static_cast<std::size_t>(cols));
  for (std::int64_t c = 0; c < cols; ++c) all[c] = static_cast<Index>(c);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t length = static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(std::min(most, cols) + 1));
    if (r == 0 || r == rows - 1) length = 0;
    std::shuffle(all.begin(), all.end(), gen);
    std::vector<Index> row(all.begin(), all.begin() + length);
    std::sort(row.begin(), row.end());
    for (const Index c : row) {
      col_idx.push_back(c);
      values.push_back(std::uniform_real_distribution<double>(-1, 1)(gen));
    }
    row_ptr.push_back(static_cast<Index>(col_idx.size()));
  }
  return csr_from_host<T, Index, Memory>(rows, cols, row_ptr, col_idx, values);
}

template <class T, class Index>
void check_all_matrices() {
  const Exec exec;
  for (const auto& [nx, ny] : std::vector<std::pair<std::int64_t, std::int64_t>>{{13, 7}, {1, 1}, {0, 5}, {1, 9}, {67, 33}})
    check_spmv(laplacian_2d<T, Index>(exec, nx, ny));
  for (const auto& g : std::vector<std::vector<std::int64_t>>{{5, 7, 9}, {1, 1, 1}, {3, 1, 2}, {64, 64, 61}})
    check_spmv(laplacian_3d<T, Index>(exec, g[0], g[1], g[2]));
  for (const auto& m : std::vector<std::vector<std::int64_t>>{
           {13, 17, 5},     // small odd
           {4096 + 77, 513, 27},
           {7, 5000, 3001},  // long rows (many vector passes per row on GPUs)
           {11, 9, 0},       // every row empty
           {5, 5, 5},        // dense
           {1, 1, 1},        // 1x1
           {0, 10, 3},       // no rows
           {6, 0, 0}})       // no columns: every row empty
    check_spmv(random_csr<T, Index>(exec, m[0], m[1], m[2], test::next_seed()));
  // Some rows empty, the rest of varying length, built by hand.
  check_spmv(host_random_csr<T, Index>(13, 17, 6, test::next_seed()));
  check_spmv(host_random_csr<T, Index>(2000 + 33, 301, 40, test::next_seed()));
}

}  // namespace

TEST_CASE_TEMPLATE("spmv matches float64: Laplacians, random sparsity, empty rows, 0 rows, 1x1", T, ROOFTOP_DTYPES) {
  check_all_matrices<T, std::int32_t>();
  check_all_matrices<T, std::int64_t>();
}

TEST_CASE_TEMPLATE("spmv: y = alpha A x + beta y; beta == 0 never reads y", T, ROOFTOP_DTYPES) {
  const Exec exec;
  check_spmv(random_csr<T, std::int64_t>(exec, 301, 77, 9, test::next_seed()), -2.0, 0.5);
  check_spmv(host_random_csr<T, std::int32_t>(99, 50, 8, test::next_seed()), 0.75, -1.0);
  check_spmv(laplacian_3d<T, std::int32_t>(exec, 9, 8, 7), 3.0, 0.0);  // y starts NaN
}

/// A banded (rows, cols) matrix built on the host: row r holds columns r + offsets[e] that lie
/// in [0, cols) (so the first and last rows hold fewer), values in [-1, 1). Then, for each
/// (row, entry) in `moved`, that entry's column moved to another column not in its row, and
/// each row in `shortened` one entry shorter, and each row in `merged` emptied into the front
/// of the next: rows of the same length as their neighbours but another pattern, and rows of
/// another length, where blocks of rows of one structure (cpu::spmv_block) must stop.
template <class T, class Index>
Csr<T, Index, Memory> host_banded(std::int64_t rows, std::int64_t cols, const std::vector<std::int64_t>& offsets,
                                  const std::vector<std::pair<std::int64_t, std::int64_t>>& moved,
                                  const std::vector<std::int64_t>& shortened, std::uint64_t seed,
                                  const std::vector<std::int64_t>& merged = {}) {
  std::mt19937_64 gen(seed);
  std::vector<std::vector<Index>> row_cols(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r)
    for (const std::int64_t o : offsets)
      if (r + o >= 0 && r + o < cols) row_cols[r].push_back(static_cast<Index>(r + o));
  for (const auto& [r, e] : moved) {
    auto& row = row_cols[r];
    REQUIRE(e < static_cast<std::int64_t>(row.size()));
    Index c = row[e];
    while (std::find(row.begin(), row.end(), c) != row.end()) c = static_cast<Index>((c + 1) % cols);
    row[e] = c;
  }
  for (const std::int64_t r : shortened) row_cols[r].pop_back();
  for (const std::int64_t r : merged) {
    row_cols[r + 1].insert(row_cols[r + 1].begin(), row_cols[r].begin(), row_cols[r].end());
    row_cols[r].clear();
  }
  std::vector<Index> row_ptr{0}, col_idx;
  std::vector<double> values;
  for (const auto& row : row_cols) {
    for (const Index c : row) {
      col_idx.push_back(c);
      values.push_back(std::uniform_real_distribution<double>(-1, 1)(gen));
    }
    row_ptr.push_back(static_cast<Index>(col_idx.size()));
  }
  return csr_from_host<T, Index, Memory>(rows, cols, row_ptr, col_idx, values);
}

TEST_CASE_TEMPLATE("spmv: banded rows of 1 to 9 entries, blocks broken by moved columns and short rows", T, ROOFTOP_DTYPES) {
  // Rows of one structure go a vector of rows at a time on AVX-512 hosts (16 rows; 8 for
  // fp64); every way a block can fail must fall back to the rows one at a time, exactly.
  const std::vector<std::vector<std::int64_t>> bands{{0},          {-1, 1},          {-1, 0, 1},         {-9, 0, 2, 40},
                                                     {-5, -1, 0, 1, 5}, {-30, -6, -1, 0, 1, 6}, {-100, -10, -1, 0, 1, 10, 100},
                                                     {-3, -2, -1, 0, 1, 2, 3, 4}, {-4, -3, -2, -1, 0, 1, 2, 3, 4}};
  for (const auto& offsets : bands) {
    CAPTURE(offsets.size());
    const std::int64_t rows = 16 * 23 + 5, cols = rows + 3;
    check_spmv(host_banded<T, std::int32_t>(rows, cols, offsets, {}, {}, test::next_seed()));
    // Moved columns at the first, a middle and the last row of blocks of 16 and of 8, at the
    // first and the last entry; short rows likewise; the block after each takes over again.
    const std::int64_t last = static_cast<std::int64_t>(offsets.size()) - 1;
    const std::vector<std::pair<std::int64_t, std::int64_t>> moved{{160, 0}, {167, last}, {183, 0}, {199, last}, {200, 0},
                                                                   {215, last}, {232, 0}, {239, 0}};
    check_spmv(host_banded<T, std::int32_t>(rows, cols, offsets, moved, {}, test::next_seed()), 1.5, -0.5);
    check_spmv(host_banded<T, std::int32_t>(rows, cols, offsets, {}, {64, 79, 95, 96, 104, 250, rows - 1}, test::next_seed()));
    check_spmv(host_banded<T, std::int64_t>(rows, cols, offsets, moved, {64}, test::next_seed()));
    // Every row full (the offsets shifted to start at 0), so that blocks start at row 0, 16, ...
    // (0, 8, ... for fp64): one moved entry or one short row at each row of the blocks from row
    // 32, in a matrix of its own.
    std::vector<std::int64_t> full = offsets;
    for (auto& o : full) o -= offsets.front();
    const std::int64_t full_rows = 16 * 5 + 3, full_cols = full_rows + full.back() + 1;
    check_spmv(host_banded<T, std::int32_t>(full_rows, full_cols, full, {}, {}, test::next_seed()));
    for (std::int64_t r = 32; r < 48; ++r) {
      CAPTURE(r);
      check_spmv(host_banded<T, std::int32_t>(full_rows, full_cols, full, {{r, 0}}, {}, test::next_seed()));
      check_spmv(host_banded<T, std::int32_t>(full_rows, full_cols, full, {{r, last}}, {}, test::next_seed()), 0.5, 2.0);
      check_spmv(host_banded<T, std::int32_t>(full_rows, full_cols, full, {}, {r}, test::next_seed()));
      check_spmv(host_banded<T, std::int64_t>(full_rows, full_cols, full, {{r, last}}, {}, test::next_seed()));
      check_spmv(host_banded<T, std::int64_t>(full_rows, full_cols, full, {}, {r}, test::next_seed()), -1.0, 0.5);
    }
  }
  // A diagonal whose row r is emptied into row r + 1: col_idx is the diagonal's, only row_ptr
  // tells them apart.
  for (std::int64_t r = 32; r < 48; ++r) {
    check_spmv(host_banded<T, std::int32_t>(83, 83, {0}, {}, {}, test::next_seed(), {r}));
    check_spmv(host_banded<T, std::int64_t>(83, 83, {0}, {}, {}, test::next_seed(), {r}));
  }
  // Rows of 7 entries at random columns: no block ever fits.
  check_spmv(random_csr<T, std::int32_t>(Exec(), 5000, 6000, 7, test::next_seed()));
}

TEST_CASE_TEMPLATE("spmv: strided x and y", T, ROOFTOP_DTYPES) {
  const auto A = laplacian_3d<T, std::int32_t>(Exec(), 37, 5, 4);
  const auto xs = test::random_vector<T>(2 * A.cols), ys = test::poisoned_vector<T>(3 * A.rows);
  const auto x = Kokkos::subview(Kokkos::View<T**, Kokkos::LayoutRight, Memory>(xs.data(), A.cols, 2), Kokkos::ALL, 1);
  const auto y = Kokkos::subview(Kokkos::View<T**, Kokkos::LayoutRight, Memory>(ys.data(), A.rows, 3), Kokkos::ALL, 2);
  REQUIRE(x.stride(0) == 2);
  rooftop::spmv(Exec(), A, x, y);
  const auto hx = host(xs);
  std::vector<double> x1(static_cast<std::size_t>(A.cols));
  for (std::int64_t c = 0; c < A.cols; ++c) x1[c] = hx[2 * c + 1];
  const auto ref = reference::spmv(A, x1);
  const auto hy = host(ys);
  for (std::int64_t r = 0; r < A.rows; ++r) {
    CAPTURE(r);
    CHECK(std::abs(hy[3 * r + 2] - ref.want[r]) <= reference::spmv_tolerance<T>(ref.want[r], ref.scale[r], ref.length[r]));
    CHECK(std::isnan(hy[3 * r]));  // the other columns untouched
    CHECK(std::isnan(hy[3 * r + 1]));
  }
}

TEST_CASE_TEMPLATE("spmv: a small matrix by hand, exact", T, ROOFTOP_DTYPES) {
  // [ 1  0  2  0 ]
  // [ 0  0  0  0 ]   (empty row)
  // [ 0 -3  0  4 ]
  // [ 0  0  0  0 ]   (empty last row)
  const auto A = csr_from_host<T, std::int32_t, Memory>(4, 4, {0, 2, 2, 4, 4}, {0, 2, 1, 3}, {1, 2, -3, 4});
  test::Vector<T> x("x", 4);
  auto hx = Kokkos::create_mirror_view(x);
  for (int i = 0; i < 4; ++i) hx(i) = T(static_cast<float>(i + 1));  // 1 2 3 4
  Kokkos::deep_copy(x, hx);
  auto y = test::poisoned_vector<T>(4);
  rooftop::spmv(A, x, y);
  CHECK(host(y) == std::vector<double>{7, 0, 10, 0});
  rooftop::spmv(Exec(), 2.0, A, x, -3.0, y);  // 2 A x - 3 y: alpha, beta and the old y all count
  CHECK(host(y) == std::vector<double>{-7, 0, -10, 0});
}

TEST_CASE_TEMPLATE("spmv: one of x and y strided, the other contiguous", T, ROOFTOP_DTYPES) {
  const auto A = laplacian_3d<T, std::int32_t>(Exec(), 37, 5, 4);
  const auto xs = test::random_vector<T>(2 * A.cols);
  const auto strided_x = Kokkos::subview(Kokkos::View<T**, Kokkos::LayoutRight, Memory>(xs.data(), A.cols, 2), Kokkos::ALL, 1);
  test::Vector<T> dense_x("x", A.cols);
  Kokkos::deep_copy(dense_x, strided_x);
  const auto hx = host(dense_x);
  const auto ref = reference::spmv(A, hx);
  auto check = [&](const std::vector<double>& hy, std::int64_t stride) {
    for (std::int64_t r = 0; r < A.rows; ++r) {
      CAPTURE(r);
      CHECK(std::abs(hy[stride * r] - ref.want[r]) <= reference::spmv_tolerance<T>(ref.want[r], ref.scale[r], ref.length[r]));
      if (stride > 1) CHECK(std::isnan(hy[stride * r + 1]));  // the other column untouched
    }
  };
  const auto y = test::poisoned_vector<T>(A.rows);
  rooftop::spmv(Exec(), A, strided_x, y);  // strided x, contiguous y
  check(host(y), 1);
  const auto ys = test::poisoned_vector<T>(2 * A.rows);
  const auto strided_y = Kokkos::subview(Kokkos::View<T**, Kokkos::LayoutRight, Memory>(ys.data(), A.rows, 2), Kokkos::ALL, 0);
  rooftop::spmv(Exec(), A, dense_x, strided_y);  // contiguous x, strided y
  check(host(ys), 2);
}

TEST_CASE_TEMPLATE("spmv: alpha Inf or NaN gives NaN on empty rows (alpha times an empty sum)", T, ROOFTOP_DTYPES) {
  // [ 1  0  2  0 ]
  // [ 0  0  0  0 ]   (empty row)
  // [ 0 -3  0  4 ]
  // [ 0  0  0  0 ]   (empty last row)
  const auto A = csr_from_host<T, std::int32_t, Memory>(4, 4, {0, 2, 2, 4, 4}, {0, 2, 1, 3}, {1, 2, -3, 4});
  test::Vector<T> x("x", 4);
  auto hx = Kokkos::create_mirror_view(x);
  for (int i = 0; i < 4; ++i) hx(i) = T(static_cast<float>(i + 1));  // 1 2 3 4: rows 7, 0, 10, 0
  Kokkos::deep_copy(x, hx);
  const double inf = std::numeric_limits<double>::infinity();
  auto y = test::random_vector<T>(4);
  rooftop::spmv(Exec(), inf, A, x, 0.0, y);
  auto got = host(y);
  CHECK(got[0] == inf);
  CHECK(std::isnan(got[1]));
  CHECK(got[2] == inf);
  CHECK(std::isnan(got[3]));
  y = test::random_vector<T>(4);
  rooftop::spmv(Exec(), std::numeric_limits<double>::quiet_NaN(), A, x, 0.0, y);
  got = host(y);
  for (int r = 0; r < 4; ++r) CHECK(std::isnan(got[r]));
}

TEST_CASE_TEMPLATE("spmv: alpha == 0 gives beta * y, reading neither A nor x (Inf, NaN there)", T, ROOFTOP_DTYPES) {
  const std::vector<double> values = {1, std::numeric_limits<double>::infinity(), -3, std::numeric_limits<double>::quiet_NaN(), 4, 2};
  const auto A = csr_from_host<T, std::int32_t, Memory>(5, 3, {0, 2, 2, 3, 5, 6}, {0, 2, 1, 0, 1, 2}, values);
  const auto x = test::poisoned_vector<T>(3);
  const auto y = test::random_vector<T>(5);
  const auto y0 = host(y);
  rooftop::spmv(Exec(), 0.0, A, x, 0.5, y);
  const auto got = host(y);
  // Halving is exact in the compute type; stored, a half that falls among the storage type's
  // subnormals (fp16 below 6.1e-5) rounds once, to nearest even.
  for (std::size_t r = 0; r < y0.size(); ++r) {
    const double half = 0.5 * y0[r];
    CHECK(got[r] == static_cast<double>(static_cast<compute_t<T>>(T(static_cast<compute_t<T>>(half)))));
  }
  // beta == 0 too: zeros, y not read (it starts NaN), also through a strided y.
  const auto ys = test::poisoned_vector<T>(2 * A.rows);
  const auto y2 = Kokkos::subview(Kokkos::View<T**, Kokkos::LayoutRight, Memory>(ys.data(), A.rows, 2), Kokkos::ALL, 1);
  rooftop::spmv(Exec(), 0.0, A, x, 0.0, y2);
  const auto hy = host(ys);
  for (std::int64_t r = 0; r < A.rows; ++r) {
    CHECK(hy[2 * r + 1] == 0);
    CHECK(std::isnan(hy[2 * r]));  // the other column untouched
  }
}

TEST_CASE_TEMPLATE("laplacian_2d and laplacian_3d: stencil rows, Dirichlet boundary", T, ROOFTOP_DTYPES) {
  for (const auto& g : std::vector<std::vector<std::int64_t>>{{1, 1, 1}, {2, 1, 1}, {5, 4, 1}, {13, 7, 1}, {5, 6, 7}, {1, 3, 4}}) {
    const std::int64_t nx = g[0], ny = g[1], nz = g[2];
    CAPTURE(nx);
    CAPTURE(ny);
    CAPTURE(nz);
    const bool two_d = nz == 1 && (nx != 1 || ny != 1);  // (the 1x1x1 grid is checked as 3D)
    const auto A = two_d ? laplacian_2d<T, std::int64_t>(Exec(), nx, ny) : laplacian_3d<T, std::int64_t>(Exec(), nx, ny, nz);
    const double diag = two_d ? 4 : 6;
    REQUIRE(A.rows == nx * ny * nz);
    REQUIRE(A.cols == A.rows);
    REQUIRE(A.nnz() == laplacian_3d_nnz(nx, ny, nz));
    const auto p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.row_ptr);
    const auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.col_idx);
    const auto v = host(A.values);
    REQUIRE(p(0) == 0);
    REQUIRE(p(A.rows) == A.nnz());
    std::int64_t interior = 0;
    for (std::int64_t k = 0; k < nz; ++k)
      for (std::int64_t j = 0; j < ny; ++j)
        for (std::int64_t i = 0; i < nx; ++i) {
          const std::int64_t r = (k * ny + j) * nx + i;
          // The expected row: the point and its neighbours inside the grid, ascending.
          std::vector<std::int64_t> cols;
          if (k > 0) cols.push_back(r - nx * ny);
          if (j > 0) cols.push_back(r - nx);
          if (i > 0) cols.push_back(r - 1);
          cols.push_back(r);
          if (i < nx - 1) cols.push_back(r + 1);
          if (j < ny - 1) cols.push_back(r + nx);
          if (k < nz - 1) cols.push_back(r + nx * ny);
          REQUIRE(p(r + 1) - p(r) == static_cast<std::int64_t>(cols.size()));
          double sum = 0;
          for (std::int64_t e = p(r); e < p(r + 1); ++e) {
            REQUIRE(c(e) == cols[e - p(r)]);
            CHECK(v[e] == (c(e) == r ? diag : -1.0));
            sum += v[e];
          }
          // Row sum: diag minus the neighbours present; 0 in the interior.
          const bool inside = i > 0 && i < nx - 1 && j > 0 && j < ny - 1 && (two_d || (k > 0 && k < nz - 1));
          CHECK(sum == diag - static_cast<double>(cols.size() - 1));
          if (inside) {
            CHECK(sum == 0.0);
            ++interior;
          }
        }
    if (nx >= 3 && ny >= 3 && (two_d || nz >= 3)) CHECK(interior > 0);
  }
}

TEST_CASE_TEMPLATE("random_csr: distinct sorted columns in range, values in [-1, 1], reproducible", T, ROOFTOP_DTYPES) {
  const std::uint64_t seed = test::next_seed();
  for (const auto& m : std::vector<std::vector<std::int64_t>>{{13, 17, 5}, {2000, 1000, 27}, {9, 6, 6}, {4, 3, 0}}) {
    const std::int64_t rows = m[0], cols = m[1], k = m[2];
    CAPTURE(rows);
    CAPTURE(cols);
    CAPTURE(k);
    const auto A = random_csr<T, std::int32_t>(Exec(), rows, cols, k, seed);
    REQUIRE(A.nnz() == rows * k);
    const auto p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.row_ptr);
    const auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.col_idx);
    const auto v = host(A.values);
    bool in_range = true, ascending = true, bounded = true;
    std::vector<std::int64_t> per_column(cols);
    for (std::int64_t r = 0; r < rows; ++r) {
      REQUIRE(p(r) == r * k);
      for (std::int64_t e = p(r); e < p(r + 1); ++e) {
        in_range &= c(e) >= 0 && c(e) < cols;
        ascending &= e == p(r) || c(e) > c(e - 1);  // strictly: distinct
        bounded &= v[e] >= -1 && v[e] <= 1;  // [-1, 1) rounded to T: 1 in bf16/fp16
        if (c(e) >= 0 && c(e) < cols) ++per_column[c(e)];
      }
    }
    CHECK(in_range);
    CHECK(ascending);
    CHECK(bounded);
    // Spread over the columns, not clustered. 2000 rows of 27 put 54 entries in each column on
    // average: a column left empty has odds about e^-54 (with 500 rows, 1e-6 per column).
    if (rows * k >= 1000) {
      CHECK(per_column.front() > 0);
      CHECK(per_column.back() > 0);
      CHECK(std::count(per_column.begin(), per_column.end(), 0) < cols / 10);
    }
    // The same seed gives the same matrix (in either index type); another seed another.
    const auto again = random_csr<T, std::int64_t>(Exec(), rows, cols, k, seed);
    const auto c2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), again.col_idx);
    bool same = host(again.values) == v;
    for (std::int64_t e = 0; e < A.nnz(); ++e) same &= c2(e) == c(e);
    CHECK(same);
    if (k > 0 && k < cols) {
      const auto other = random_csr<T, std::int32_t>(Exec(), rows, cols, k, seed + 1);
      const auto c3 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), other.col_idx);
      bool differs = false;
      for (std::int64_t e = 0; e < A.nnz(); ++e) differs |= c3(e) != c(e);
      CHECK(differs);
    }
  }
}

TEST_CASE("spmv_cost: FLOPs 2 per entry; values, indices, row_ptr, x once, y written (and read with beta)") {
  // 3D Laplacian of 4^3: 64 rows, 7*64 - 6*16 = 352 entries.
  REQUIRE(laplacian_3d_nnz(4, 4, 4) == 352);
  const Cost c = spmv_cost<double, std::int32_t>(64, 64, 352);
  CHECK(c.flops == 704);
  CHECK(c.bytes == 352 * 8 + 352 * 4 + 65 * 4 + 64 * 8 + 64 * 8);
  const Cost h = spmv_cost<fp16, std::int64_t>(64, 64, 352, true);
  CHECK(h.flops == 704 + 3 * 64);
  CHECK(h.bytes == 352 * 2 + 352 * 8 + 65 * 8 + 64 * 2 + 2 * 64 * 2);
}

namespace {
/// A (rows, cols) matrix whose arrays are filled as given, unchecked (as a caller's own code
/// fills them), values 1.
template <class Index>
Csr<float, Index, Memory> by_hand(std::int64_t rows, std::int64_t cols, const std::vector<Index>& row_ptr,
                                  const std::vector<Index>& col_idx) {
  Csr<float, Index, Memory> A(rows, cols, static_cast<std::int64_t>(col_idx.size()));
  auto hp = Kokkos::create_mirror_view(A.row_ptr);
  auto hc = Kokkos::create_mirror_view(A.col_idx);
  for (std::size_t i = 0; i < row_ptr.size(); ++i) hp(i) = row_ptr[i];
  for (std::size_t i = 0; i < col_idx.size(); ++i) hc(i) = col_idx[i];
  Kokkos::deep_copy(A.row_ptr, hp);
  Kokkos::deep_copy(A.col_idx, hc);
  Kokkos::deep_copy(A.values, 1.0f);
  return A;
}
}  // namespace

TEST_CASE_TEMPLATE("check_csr: the generators' and valid hand-filled matrices pass, the first invalid row or entry is named",
                   Index, std::int32_t, std::int64_t) {
  check_csr(Exec(), laplacian_3d<float, Index>(Exec(), 7, 5, 3));
  check_csr(random_csr<float, Index>(Exec(), 300, 200, 9, 4));
  check_csr(Exec(), by_hand<Index>(0, 0, {0}, {}));
  check_csr(Exec(), by_hand<Index>(4, 3, {0, 2, 2, 3, 3}, {2, 0, 1}));  // empty rows; columns unsorted
  using V = std::vector<Index>;
  CHECK_THROWS_WITH_AS(check_csr(Exec(), by_hand<Index>(2, 3, V{1, 1, 2}, V{0, 1})),
                       "check_csr: row_ptr runs from 1 to 2 (expected 0 to 2)", rooftop::Error);
  CHECK_THROWS_WITH_AS(check_csr(Exec(), by_hand<Index>(2, 3, V{0, 1, 1}, V{0, 1})),
                       "check_csr: row_ptr runs from 0 to 1 (expected 0 to 2)", rooftop::Error);
  CHECK_THROWS_WITH_AS(check_csr(Exec(), by_hand<Index>(3, 3, V{0, 2, 1, 2}, V{0, 1})),
                       "check_csr: row_ptr(1) is 2 but row_ptr(2) is 1", rooftop::Error);
  CHECK_THROWS_WITH_AS(check_csr(Exec(), by_hand<Index>(3, 3, V{0, 5, 1, 2}, V{0, 1})),
                       "check_csr: row 0 runs from 0 to 5, outside the 2 entries", rooftop::Error);
  // The first bad row of many (the pass runs them in parallel), a column past the end and a
  // negative one.
  V row_ptr{0}, col_idx;
  for (Index r = 0; r < 1000; ++r) {
    col_idx.push_back(r % 50);
    col_idx.push_back((r + 1) % 50);
    row_ptr.push_back(static_cast<Index>(col_idx.size()));
  }
  col_idx[2 * 700 + 1] = 50;
  col_idx[2 * 900] = -1;
  CHECK_THROWS_WITH_AS(check_csr(Exec(), by_hand<Index>(1000, 50, row_ptr, col_idx)),
                       "check_csr: col_idx(1401) (row 700) is 50, outside the 50 columns", rooftop::Error);
  col_idx[2 * 700 + 1] = 0;
  CHECK_THROWS_WITH_AS(check_csr(Exec(), by_hand<Index>(1000, 50, row_ptr, col_idx)),
                       "check_csr: col_idx(1800) (row 900) is -1, outside the 50 columns", rooftop::Error);
  col_idx[2 * 900] = 7;
  check_csr(Exec(), by_hand<Index>(1000, 50, row_ptr, col_idx));
  auto A = by_hand<Index>(1000, 50, row_ptr, col_idx);
  A.rows = 999;
  CHECK_THROWS_WITH_AS(check_csr(Exec(), A), "check_csr: A has 999 rows but row_ptr is 1001 (expected 1000)", rooftop::Error);
}

TEST_CASE("preconditions: spmv, the generators and csr_from_host name the op and extents") {
  const auto A = random_csr<float, std::int32_t>(Exec(), 11, 12, 3, 1);
  const auto x = test::random_vector<float>(12);
  const auto y = test::poisoned_vector<float>(11);
  CHECK_THROWS_WITH_AS(rooftop::spmv(Exec(), A, test::random_vector<float>(13), y), "spmv: x is 13 but A has 12 columns",
                       rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::spmv(Exec(), A, x, test::poisoned_vector<float>(12)), "spmv: y is 12 but A has 11 rows",
                       rooftop::Error);
  // A y whose entries share memory (a stride of 0) would be written by several threads at once.
  const Kokkos::View<float*, Kokkos::LayoutStride, BackendMemory> y_shared(y.data(), Kokkos::LayoutStride(11, 0));
  CHECK_THROWS_WITH_AS(rooftop::spmv(Exec(), A, x, y_shared),
                       "spmv: y is 11 with strides (0): its strides do not nest, so its elements may share memory and writes to them could race",
                       rooftop::Error);
  // y over x: rows would read entries of x that other rows have already written.
  const auto square = random_csr<float, std::int32_t>(Exec(), 12, 12, 3, 1);
  CHECK_THROWS_WITH_AS(rooftop::spmv(Exec(), square, x, x),
                       "spmv: x and y overlap (x is 12, y is 12): rows would read entries of x that other rows have already written",
                       rooftop::Error);
  // y over A's arrays: rows would read entries that other rows have already written.
  const Kokkos::View<float*, BackendMemory, Kokkos::MemoryUnmanaged> y_on_values(A.values.data() + 2, 11);
  CHECK_THROWS_WITH_AS(rooftop::spmv(Exec(), A, x, y_on_values),
                       "spmv: A.values and y overlap (A.values is 33 with strides (1), y is 11 with strides (1)): y would be "
                       "written while A.values is read",
                       rooftop::Error);
  const Kokkos::View<float*, BackendMemory, Kokkos::MemoryUnmanaged> y_on_columns(reinterpret_cast<float*>(A.col_idx.data()), 11);
  CHECK_THROWS_WITH_AS(rooftop::spmv(Exec(), A, x, y_on_columns),
                       "spmv: A.col_idx and y overlap (A.col_idx is 33 with strides (1), y is 11 with strides (1)): y would be "
                       "written while A.col_idx is read",
                       rooftop::Error);
  const Kokkos::View<float*, BackendMemory, Kokkos::MemoryUnmanaged> y_on_rows(reinterpret_cast<float*>(A.row_ptr.data()) + 1, 11);
  CHECK_THROWS_WITH_AS(rooftop::spmv(Exec(), A, x, y_on_rows),
                       "spmv: A.row_ptr and y overlap (A.row_ptr is 12 with strides (1), y is 11 with strides (1)): y would be "
                       "written while A.row_ptr is read",
                       rooftop::Error);
  auto bad = A;
  bad.rows = 10;
  CHECK_THROWS_WITH_AS(rooftop::spmv(Exec(), bad, x, test::poisoned_vector<float>(10)),
                       "spmv: A has 10 rows but row_ptr is 12 (expected 11)", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::spmv(Exec(), decltype(A){}, x, y),
                       "spmv: A has no row_ptr (a default-constructed Csr?): make it with Csr(rows, cols, nnz), csr_from_host, "
                       "random_csr, laplacian_2d or laplacian_3d; a matrix of 0 rows has a row_ptr of 1",
                       rooftop::Error);
  bad = A;
  bad.values = test::Vector<float>("values", 32);
  CHECK_THROWS_WITH_AS(rooftop::spmv(Exec(), bad, x, y), "spmv: A's col_idx is 33 but values is 32", rooftop::Error);
  // Columns and entries past int32's range are refused before A is read: offsets that large
  // cannot be stored in row_ptr, and filled by a caller they would have wrapped to negative
  // ones. Only the extents say so here (the arrays past entry 33 are never there to be read).
  bad = A;
  bad.cols = std::int64_t{1} << 31;
  CHECK_THROWS_WITH_AS(rooftop::spmv(Exec(), bad, x, y), "spmv: 11x2147483648 with 33 entries exceeds the range of int32 indices",
                       rooftop::Error);
  bad = A;
  bad.values = Kokkos::View<float*, BackendMemory, Kokkos::MemoryUnmanaged>(A.values.data(), std::int64_t{1} << 31);
  bad.col_idx = Kokkos::View<std::int32_t*, BackendMemory, Kokkos::MemoryUnmanaged>(A.col_idx.data(), std::int64_t{1} << 31);
  CHECK_THROWS_WITH_AS(rooftop::spmv(Exec(), bad, x, y), "spmv: 11x12 with 2147483648 entries exceeds the range of int32 indices",
                       rooftop::Error);

  CHECK_THROWS_WITH_AS((random_csr<float, std::int32_t>(Exec(), 5, 4, 5, 1)), "random_csr: 5 entries per row do not fit in 4 columns",
                       rooftop::Error);
  CHECK_THROWS_WITH_AS((random_csr<float, std::int32_t>(Exec(), 1 << 20, 4096, 4096, 1)),
                       "random_csr: 1048576x4096 with 4294967296 entries exceeds the range of int32 indices", rooftop::Error);
  // A count of entries past 2^63 - 1 is refused before it wraps (4 x 2^62 wrapped to 0 entries,
  // an empty col_idx the generator then wrote far past).
  CHECK_THROWS_WITH_AS((random_csr<float, std::int64_t>(Exec(), 4, std::int64_t{1} << 62, std::int64_t{1} << 62, 1)),
                       "random_csr: 4 rows of 4611686018427387904 entries: not a count of entries (0 to 2^63 - 1)", rooftop::Error);
  CHECK_THROWS_WITH_AS((random_csr<float, std::int64_t>(Exec(), -1, 4, 2, 1)),
                       "random_csr: -1 rows of 2 entries: not a count of entries (0 to 2^63 - 1)", rooftop::Error);
  CHECK_THROWS_WITH_AS((laplacian_3d<float, std::int32_t>(Exec(), 1000, 1000, 1000)),
                       "laplacian_3d: 1000000000x1000000000 with 6994000000 entries exceeds the range of int32 indices",
                       rooftop::Error);
  CHECK_THROWS_WITH_AS((laplacian_2d<float, std::int32_t>(Exec(), -1, 3)),
                       "laplacian_2d: grid extents must not be negative (-1x3x1)", rooftop::Error);
  // Points beyond 64-bit counts are refused before the products wrap (they wrapped to 0 rows).
  CHECK_THROWS_WITH_AS((laplacian_3d<float, std::int64_t>(Exec(), 4194304, 4194304, 4194304)),
                       "laplacian_3d: a grid of 4194304x4194304x4194304 points is beyond 64-bit row and entry counts",
                       rooftop::Error);

  using V = std::vector<std::int32_t>;
  CHECK_THROWS_WITH_AS((csr_from_host<float, std::int32_t, Memory>(2, 3, V{0, 1}, V{0}, {1.0})),
                       "csr_from_host: row_ptr is 2 but the matrix has 2 rows (expected 3)", rooftop::Error);
  CHECK_THROWS_WITH_AS((csr_from_host<float, std::int32_t, Memory>(2, 3, V{0, 1, 2}, V{0}, {1.0, 2.0})),
                       "csr_from_host: col_idx is 1 but values is 2", rooftop::Error);
  CHECK_THROWS_WITH_AS((csr_from_host<float, std::int32_t, Memory>(2, 3, V{0, 1, 1}, V{0, 1}, {1.0, 2.0})),
                       "csr_from_host: row_ptr runs from 0 to 1 (expected 0 to 2)", rooftop::Error);
  CHECK_THROWS_WITH_AS((csr_from_host<float, std::int32_t, Memory>(2, 3, V{0, 2, 2}, V{0, 3}, {1.0, 2.0})),
                       "csr_from_host: col_idx(1) is 3, outside the 3 columns", rooftop::Error);
  CHECK_THROWS_WITH_AS((csr_from_host<float, std::int32_t, Memory>(3, 3, V{0, 2, 1, 2}, V{0, 1}, {1.0, 2.0})),
                       "csr_from_host: row_ptr(1) is 2 but row_ptr(2) is 1", rooftop::Error);
}
