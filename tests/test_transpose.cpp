// SPDX-License-Identifier: BSD-3-Clause
// transpose and transpose_naive: bit-exact for every dtype on empty, single-row/column, odd,
// non-tile-multiple and large matrices, with plain and streamed stores, in LayoutRight,
// LayoutLeft, padded and mixed layouts; elements of 12 and 24 bytes; preconditions.
#include "common.hpp"

#include <rooftop/kernels/transpose.hpp>

#include <cstring>
#include <utility>

using namespace rooftop;
using test::Exec;
using test::host;

namespace {
/// Requires out(j, i) == in(i, j) bit for bit, for Views of any layout.
template <class In, class Out>
void require_transposed(const In& in, const Out& out) {
  const auto hi = test::host_view(in);
  const auto ho = test::host_view(out);
  for (std::size_t i = 0; i < hi.extent(0); ++i)
    for (std::size_t j = 0; j < hi.extent(1); ++j)
      if (std::memcmp(&ho(j, i), &hi(i, j), sizeof(hi(i, j))) != 0) {
        CAPTURE(i);
        CAPTURE(j);
        FAIL("out(j, i) differs from in(i, j) in its bits: " << static_cast<double>(ho(j, i)) << " against "
                                                              << static_cast<double>(hi(i, j)));
      }
}

/// Runs the tiled or the naive kernel.
template <class In, class Out>
void run(bool tiled, const In& in, const Out& out) {
  if (tiled)
    rooftop::transpose(Exec(), in, out);
  else
    rooftop::transpose_naive(Exec(), in, out);
}
}  // namespace

// Shapes: empty, single row/column, smaller than a tile, not a multiple of the tile or the host
// block (fp64 32, fp32 64, 2-byte 128 elements), whole blocks, and ragged blocks on both edges.
// Streamed with AVX-512 (with AVX2: 2-byte types), outputs whose rows are whole lines (64 x
// 128, 256 x 384 and 1056 x 1037 for every dtype; 1040 x 1037 for fp32 and fp64, 1000 x 3001
// for fp64) take the line tiles (transpose_lines): whole groups of rows, a last partial group,
// and columns past the last whole tile. 64 x 2048: with AVX2, rows 4 KB apart (bf16, fp16)
// take the blocks (cpu::line_tiles_pay). With AVX-512, streamed outputs whose rows are not
// whole lines take the shifted lines (transpose_shifted_lines, groups of 512 bytes of each
// output row): 1037 x 1040 has whole groups for fp32 and 2-byte types (1024 rows in whole
// tiles) and a partial last one for fp64, 1000 x 3001 a partial last group (fp32, 2-byte),
// 65 x 97 a single group, 13 x 29 none (fewer rows than a tile). Outputs below the streaming
// threshold take the line tiles with plain stores on AVX-512 hosts, but for fp32 with rows
// within 16 bytes of a multiple of 2 KB apart (100 x 512 out of 512 x 100), which keep the
// blocks.
TEST_CASE_TEMPLATE("transpose: both kernels are exact", T, ROOFTOP_DTYPES) {
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {0, 7},     {7, 0},      {1, 1},       {1, 1000},    {1000, 1},    {13, 29},     {31, 33},
      {65, 97},   {64, 128},   {256, 384},   {1000, 3001}, {1040, 1037}, {1037, 1040}, {1056, 1037}, {64, 2048},
      {512, 100}};
  for (const std::size_t threshold : test::store_thresholds) {
    test::StreamingThreshold stores(threshold);
    CAPTURE(threshold);
    for (const auto& shape : shapes) {
      const std::int64_t rows = shape.first, cols = shape.second;
      CAPTURE(rows);
      CAPTURE(cols);
      const auto in = test::random_matrix<T>(rows, cols);
      for (const bool tiled : {true, false}) {
        CAPTURE(tiled);
        const auto out = test::poisoned_matrix<T>(cols, rows);
        run(tiled, in, out);
        require_transposed(in, out);
      }
    }
  }
}

// LayoutLeft on both sides (the same transpose of the (cols, rows) matrix), rows with padding
// between them (subviews of a wider matrix), and mixed layouts (an element-by-element copy).
TEST_CASE_TEMPLATE("transpose: other layouts and strides", T, ROOFTOP_DTYPES) {
  using Left = Kokkos::View<T**, Kokkos::LayoutLeft, BackendMemory>;
  const std::int64_t rows = 300, cols = 259;
  for (const std::size_t threshold : test::store_thresholds) {
    test::StreamingThreshold stores(threshold);
    CAPTURE(threshold);
    const auto right = test::random_matrix<T>(rows, cols);
    Left left("in", rows, cols);
    Kokkos::deep_copy(left, right);
    const auto wide = test::random_matrix<T>(rows, cols + 37);
    const auto padded = Kokkos::subview(wide, Kokkos::ALL, std::make_pair(std::int64_t{5}, cols + 5));
    for (const bool tiled : {true, false}) {
      CAPTURE(tiled);
      Left left_out("out", cols, rows);
      Kokkos::deep_copy(left_out, test::poisoned_matrix<T>(cols, rows));
      run(tiled, left, left_out);
      require_transposed(left, left_out);

      const auto wide_out = test::poisoned_matrix<T>(cols, rows + 19);
      const auto padded_out = Kokkos::subview(wide_out, Kokkos::ALL, std::make_pair(std::int64_t{3}, rows + 3));
      run(tiled, padded, padded_out);
      require_transposed(padded, padded_out);

      // Output rows 320 elements apart (whole lines) from an aligned start: streamed with
      // AVX-512 (with AVX2: 2-byte types), the line tiles, with rows (300 % 8, 16 and 32) and
      // columns past the last tile.
      const auto lines_out = test::poisoned_matrix<T>(cols, 320);
      const auto lined_out = Kokkos::subview(lines_out, Kokkos::ALL, std::make_pair(std::int64_t{0}, rows));
      run(tiled, padded, lined_out);
      require_transposed(padded, lined_out);
      // The same rows from 5 elements in: every row starts off a line boundary by the same
      // amount (with AVX-512, the shifted lines, cpu::ShiftedLines).
      const auto shifted_out = Kokkos::subview(lines_out, Kokkos::ALL, std::make_pair(std::int64_t{5}, rows + 5));
      Kokkos::deep_copy(lines_out, test::poisoned_matrix<T>(cols, 320));
      run(tiled, padded, shifted_out);
      require_transposed(padded, shifted_out);

      Left mixed_out("out", cols, rows);
      Kokkos::deep_copy(mixed_out, test::poisoned_matrix<T>(cols, rows));
      run(tiled, right, mixed_out);
      require_transposed(right, mixed_out);
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
  // Columns 0..3 and 4..7 of one matrix share no element: not an overlap.
  const auto wide = test::random_matrix<double>(4, 8);
  const auto left = Kokkos::subview(wide, Kokkos::ALL, std::make_pair(0, 4));
  const auto right = Kokkos::subview(wide, Kokkos::ALL, std::make_pair(4, 8));
  const auto before = host(wide);
  rooftop::transpose(Exec(), left, right);
  const auto after = host(wide);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      CHECK(after[i * 8 + j] == before[i * 8 + j]);
      CHECK(after[i * 8 + 4 + j] == before[j * 8 + i]);
    }
  // Columns 0..3 and 3..6 do share one.
  const auto shifted = Kokkos::subview(wide, Kokkos::ALL, std::make_pair(3, 7));
  CHECK_THROWS_WITH_AS(rooftop::transpose(Exec(), left, shifted), doctest::Contains("transpose: in and out overlap"), rooftop::Error);
  // An out whose rows share memory (a row stride of 0) would be written by several threads at once.
  Kokkos::View<float*, BackendMemory> row("row", 3);
  const Kokkos::View<float**, Kokkos::LayoutStride, BackendMemory> rows_shared(row.data(), Kokkos::LayoutStride(5, 0, 3, 1));
  // Likewise with a column stride that gives the View a span of 9 (Kokkos's span of a
  // LayoutStride View is its largest extent times stride, whatever the others).
  Kokkos::View<float*, BackendMemory> spread("spread", 9);
  const Kokkos::View<float**, Kokkos::LayoutStride, BackendMemory> spread_shared(spread.data(), Kokkos::LayoutStride(5, 0, 3, 3));
  for (const bool tiled : {true, false}) {
    const std::string name = tiled ? "transpose" : "transpose_naive";
    CHECK_THROWS_WITH_AS(run(tiled, in, rows_shared),
                         (name + ": out is 5x3 with strides (0, 1): its strides do not nest, so its elements may share memory and writes to them could race")
                             .c_str(),
                         rooftop::Error);
    CHECK_THROWS_WITH_AS(run(tiled, in, spread_shared),
                         (name + ": out is 5x3 with strides (0, 3): its strides do not nest, so its elements may share memory and writes to them could race")
                             .c_str(),
                         rooftop::Error);
  }
}

namespace {
/// Elements of 12 and 24 bytes (three floats, three doubles: not a size the register tiles
/// were shaped for), compared as bytes.
template <int N>
struct Bytes {
  unsigned char b[N];
};
}  // namespace

// Bytes<48>: GPUs transpose it element by element (its tile would not fit a block's shared
// memory); Bytes<2048>: so do CPUs (two blocks of it would not fit HostTranspose's stack budget).
TEST_CASE_TEMPLATE("transpose: elements of any size", E, Bytes<12>, Bytes<24>, Bytes<1>, Bytes<48>, Bytes<2048>) {
  for (const std::size_t threshold : test::store_thresholds) {
    test::StreamingThreshold scoped(threshold);
    const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{1, 1}, {13, 29}, {70, 45}, {300, 257}};
    for (const auto& shape : shapes) {
      const std::int64_t rows = shape.first, cols = shape.second;  // not bindings: CAPTURE's lambda takes them (Clang)
      if (rows * cols * static_cast<std::int64_t>(sizeof(E)) > (std::int64_t{8} << 20)) continue;
      CAPTURE(rows);
      CAPTURE(cols);
      Kokkos::View<E**, BackendMemory> in("in", rows, cols), out("out", cols, rows);
      auto hi = Kokkos::create_mirror_view(in);
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j)
          for (std::size_t k = 0; k < sizeof(E); ++k) hi(i, j).b[k] = static_cast<unsigned char>(i * 31 + j * 7 + k);
      Kokkos::deep_copy(in, hi);
      // Two poisons: an element left unwritten matches its input under at most one of them
      // (Bytes<1> inputs take every byte value).
      for (const unsigned char poison : {0x00, 0xa5})
        for (const bool tiled : {true, false}) {
          CAPTURE(tiled);
          CAPTURE(static_cast<int>(poison));
          E poisoned;
          std::memset(&poisoned, poison, sizeof(E));
          Kokkos::deep_copy(out, poisoned);
          run(tiled, in, out);
          const auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
          std::int64_t wrong = 0;
          for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j) wrong += std::memcmp(&ho(j, i), &hi(i, j), sizeof(E)) != 0;
          CHECK(wrong == 0);
        }
    }
  }
}
