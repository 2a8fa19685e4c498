// SPDX-License-Identifier: BSD-3-Clause
// transpose and transpose_naive: exact for every dtype on empty, single-row/column, odd,
// non-tile-multiple and large matrices; preconditions.
#include "common.hpp"

#include <rooftop/kernels/transpose.hpp>

#include <utility>

using namespace rooftop;
using test::Exec;
using test::host;

TEST_CASE_TEMPLATE("transpose: both kernels are exact", T, ROOFTOP_DTYPES) {
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {0, 7}, {7, 0}, {1, 1}, {1, 1000}, {1000, 1}, {13, 29}, {31, 33}, {65, 97}, {64, 128}, {1000, 3001}};
  for (const auto& shape : shapes) {
    const std::int64_t rows = shape.first, cols = shape.second;
    CAPTURE(rows);
    CAPTURE(cols);
    const auto in = test::random_matrix<T>(rows, cols);
    const auto hi = host(in);
    for (const bool tiled : {true, false}) {
      CAPTURE(tiled);
      const auto out = test::poisoned_matrix<T>(cols, rows);
      if (tiled)
        rooftop::transpose(Exec(), in, out);
      else
        rooftop::transpose_naive(Exec(), in, out);
      const auto ho = host(out);
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j)
          if (ho[j * rows + i] != hi[i * cols + j]) {
            CAPTURE(i);
            CAPTURE(j);
            REQUIRE(ho[j * rows + i] == hi[i * cols + j]);
          }
    }
  }
}

TEST_CASE("transpose: cost model") {
  CHECK(transpose_cost<fp16>(1000, 3001).flops == 0);
  CHECK(transpose_cost<fp16>(1000, 3001).bytes == 2.0 * 1000 * 3001 * 2);
}

TEST_CASE("preconditions: transpose names the op and extents") {
  const auto in = test::random_matrix<float>(3, 5);
  const auto same = test::poisoned_matrix<float>(3, 5);
  CHECK_THROWS_WITH_AS(rooftop::transpose(Exec(), in, same), "transpose: in is 3x5 but out is 3x5 (expected 5x3)", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::transpose_naive(Exec(), in, same), "transpose_naive: in is 3x5 but out is 3x5 (expected 5x3)",
                       rooftop::Error);
  const auto square = test::random_matrix<double>(4, 4);
  CHECK_THROWS_WITH_AS(rooftop::transpose(Exec(), square, square), "transpose: in and out overlap (in is 4x4, out is 4x4)",
                       rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::transpose_naive(Exec(), square, square),
                       "transpose_naive: in and out overlap (in is 4x4, out is 4x4)", rooftop::Error);
}
