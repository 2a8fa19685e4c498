// SPDX-License-Identifier: BSD-3-Clause
// softmax over the last axis: every ML dtype and row length against float64; masked (-Inf)
// entries and fully masked rows; logits of +-1e4; in place; preconditions.
#include "common.hpp"

#include "../benchmarks/reference.hpp"

#include <rooftop/kernels/softmax.hpp>

#include <cmath>
#include <limits>

using namespace rooftop;
using test::Exec;
using test::host;

namespace {

template <class T>
void check_softmax(const std::vector<double>& x, std::int64_t cols, const std::vector<double>& y) {
  std::vector<double> want(x.size());
  const std::int64_t rows = cols ? static_cast<std::int64_t>(x.size()) / cols : 0;
  for (std::int64_t r = 0; r < rows; ++r) reference::softmax_row(&x[r * cols], cols, &want[r * cols]);
  const double roundings = reference::row_roundings(cols);
  const std::string error =
      reference::compare(y, want, [&](std::size_t i) { return reference::tolerance<T>(want[i], want[i], roundings); });
  CHECK_MESSAGE(error.empty(), error);
}

/// A (rows, cols) matrix of T holding `values` row after row.
template <class T>
test::Matrix<T> matrix_of(std::int64_t rows, std::int64_t cols, const std::vector<float>& values) {
  test::Matrix<T> m("m", rows, cols);
  auto h = Kokkos::create_mirror_view(m);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) h(r, c) = T(values[r * cols + c]);
  Kokkos::deep_copy(m, h);
  return m;
}

}  // namespace

TEST_CASE_TEMPLATE("softmax matches float64 over every row length (plain and streaming stores)", T, ROOFTOP_ML_DTYPES) {
  for (const std::size_t threshold : test::store_thresholds)
  for (const std::int64_t cols : test::row_lengths) {
    const std::int64_t rows = cols > 1000 ? 5 : 41;
    CAPTURE(threshold);
    CAPTURE(cols);
    test::StreamingThreshold stores(threshold);
    auto x = test::random_matrix<T>(rows, cols, -10, 10);
    auto y = test::poisoned_matrix<T>(rows, cols);
    rooftop::softmax(Exec(), x, y);
    check_softmax<T>(host(x), cols, host(y));
  }
  auto none = test::poisoned_matrix<T>(0, 7);
  rooftop::softmax(Exec(), none, none);
  auto empty_rows = test::poisoned_matrix<T>(3, 0);
  rooftop::softmax(Exec(), empty_rows, empty_rows);
}

TEST_CASE_TEMPLATE("softmax: masked entries, fully masked rows, logits of +-1e4", T, ROOFTOP_ML_DTYPES) {
  for (const std::size_t threshold : test::store_thresholds) {
  CAPTURE(threshold);
  test::StreamingThreshold stores(threshold);
  const float inf = std::numeric_limits<float>::infinity();
  const std::int64_t cols = 37;
  std::vector<float> v(4 * cols);
  for (std::int64_t c = 0; c < cols; ++c) {
    v[c] = c % 3 ? -inf : 0.25f * static_cast<float>(c % 7);  // row 0: two in three masked
    v[cols + c] = -inf;                                       // row 1: all masked
    v[2 * cols + c] = c % 2 ? 1e4f : -1e4f;                   // row 2: huge logits
    v[3 * cols + c] = 1e4f - static_cast<float>(c % 5);      // row 3: large, close together
  }
  v[2 * cols + 36] = -inf;  // a masked entry among huge ones
  auto x = matrix_of<T>(4, cols, v);
  auto y = test::poisoned_matrix<T>(4, cols);
  rooftop::softmax(Exec(), x, y);
  const auto hy = host(y);
  check_softmax<T>(host(x), cols, hy);
  for (std::int64_t c = 0; c < cols; ++c) {
    if (c % 3) CHECK(hy[c] == 0.0);  // masked: exactly 0
    CHECK(hy[cols + c] == 0.0);      // fully masked row: documented as all 0
  }
  double row_sum = 0;
  for (std::int64_t c = 0; c < cols; ++c) row_sum += hy[2 * cols + c];
  CHECK(row_sum == doctest::Approx(1.0).epsilon(cols * epsilon<T>()));
  }
}

TEST_CASE_TEMPLATE("softmax: finite logits of any magnitude, to +-FLT_MAX (-FLT_MAX masks)", T, float, rooftop::bf16) {
  // Beyond |x| ~ 1.2e7 the row max times log2(e) is no longer exact to within half a unit, and
  // from ~3e9 its rounding error alone overflowed exp2 (rows came out NaN or 0).
  const float big = std::numeric_limits<float>::max();
  for (const std::int64_t cols : {37, 512}) {  // 512: whole lines
    CAPTURE(cols);
    const std::vector<float> firsts = {1e10f, -1e10f, -big, big, 5e7f, 0.0f, -3e9f};
    const auto rows = static_cast<std::int64_t>(firsts.size());
    std::vector<float> v(rows * cols);
    for (std::int64_t c = 0; c < cols; ++c) {
      for (std::int64_t r = 0; r < 3; ++r) v[r * cols + c] = firsts[r];     // constant rows: 1 / cols each
      v[3 * cols + c] = c % 3 ? -big : big;                                // +-FLT_MAX
      v[4 * cols + c] = 5e7f - 4.0f * static_cast<float>(c % 4);           // large, close together
      v[5 * cols + c] = c < 3 ? static_cast<float>(c) : -big;              // masked with -FLT_MAX
      v[6 * cols + c] = -3e9f + 256.0f * static_cast<float>(c % 2);        // exp(-256) and 1
    }
    auto x = matrix_of<T>(rows, cols, v);
    // The same rows through a LayoutLeft View (the strided, portable path on the host).
    Kokkos::View<T**, Kokkos::LayoutLeft, BackendMemory> x_left("x_left", rows, cols), y_left("y_left", rows, cols);
    Kokkos::deep_copy(x_left, x);
    auto y = test::poisoned_matrix<T>(rows, cols);
    Kokkos::deep_copy(y_left, y);
    rooftop::softmax(Exec(), x, y);
    rooftop::softmax(Exec(), x_left, y_left);
    check_softmax<T>(host(x), cols, host(y));
    Kokkos::deep_copy(y, y_left);
    check_softmax<T>(host(x), cols, host(y));
  }
}

TEST_CASE_TEMPLATE("softmax: the row max in the last entry of a partial vector, far above the rest", T, ROOFTOP_ML_DTYPES) {
  // Without the max (a tail mask one lane short) the exponentials overflow: NaN.
  for (const std::int64_t cols : {13, 37}) {
    CAPTURE(cols);
    std::vector<float> v(cols, 0.0f);
    v[cols - 1] = 200.0f;
    auto x = matrix_of<T>(1, cols, v);
    auto y = test::poisoned_matrix<T>(1, cols);
    rooftop::softmax(Exec(), x, y);
    check_softmax<T>(host(x), cols, host(y));
    for (const double g : host(y)) REQUIRE(std::isfinite(g));
  }
}

TEST_CASE("softmax works in place, and a NaN makes only its row NaN") {
  for (const std::size_t threshold : test::store_thresholds) {
    CAPTURE(threshold);
    test::StreamingThreshold stores(threshold);
    for (const std::int64_t cols : {300, 512}) {  // 512: whole lines, the host's vector path
      CAPTURE(cols);
      auto x = test::random_matrix<float>(6, cols, -5, 5);
      const auto hx = host(x);
      rooftop::softmax(Exec(), x, x);
      check_softmax<float>(hx, cols, host(x));
    }
  }

  auto z = matrix_of<float>(2, 3, {1.0f, std::nanf(""), 2.0f, 1.0f, 2.0f, 3.0f});
  rooftop::softmax(Exec(), z, z);
  const auto hz = host(z);
  for (int c = 0; c < 3; ++c) CHECK(std::isnan(hz[c]));
  CHECK(hz[5] == doctest::Approx(std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0))));
}

namespace {
/// NaN and +Inf entries make their rows NaN, masked entries or not; softmax_into(x, y) runs
/// the softmax under test.
template <class T, class Softmax>
void check_nan_and_inf_rows(const Softmax& softmax_into) {
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  // The NaNs carry payloads whose low bits are set (they once slipped through exp as numbers).
  const float nan1 = compat::bit_cast<float>(0x7fc00001u), nan2 = compat::bit_cast<float>(0xffc0010fu);
  // (+Inf too, once or twice in a row: GPUs' online max and sum restarted its partial's sum.)
  auto x = matrix_of<T>(7, 3, {nan1, 1.0f, 2.0f,  1.0f, 2.0f, nan2,  -inf, nan, -inf,  -inf, -inf, -inf,  1.0f, -inf, 2.0f,
                               1.0f, inf, 3.0f,  inf, 2.0f, inf});
  auto y = test::sentinel_matrix<T>(7, 3);  // (not NaN: the NaN rows must be written)
  softmax_into(x, y);
  const auto hy = host(y);
  for (int i = 0; i < 9; ++i) CHECK(std::isnan(hy[i]));
  for (int i = 9; i < 12; ++i) CHECK(hy[i] == 0.0);  // all masked
  CHECK(hy[12] == doctest::Approx(std::exp(1.0) / (std::exp(1.0) + std::exp(2.0))).epsilon(reference::tolerance<T>(1, 1, 2)));
  CHECK(hy[13] == 0.0);
  CHECK(hy[14] == doctest::Approx(std::exp(2.0) / (std::exp(1.0) + std::exp(2.0))).epsilon(reference::tolerance<T>(1, 1, 2)));
  for (int i = 15; i < 21; ++i) CHECK(std::isnan(hy[i]));
}
}  // namespace

TEST_CASE_TEMPLATE("a NaN or +Inf anywhere in a row makes that row NaN, masked entries or not", T, ROOFTOP_ML_DTYPES) {
  check_nan_and_inf_rows<T>([](const auto& x, const auto& y) { rooftop::softmax(Exec(), x, y); });
}

#if defined(ROOFTOP_HAS_VECTOR_SOFTMAX)
TEST_CASE_TEMPLATE("softmax of rows cut into pieces across threads (host, fewer rows than threads): the same values", T,
                   ROOFTOP_ML_DTYPES) {
  const float inf = std::numeric_limits<float>::infinity(), big = std::numeric_limits<float>::max();
  for (const std::int64_t parts : {2, 3, 5}) {
    const std::int64_t cols = 3007;  // 3 parts: pieces of 1008, 1008 and 991
    CAPTURE(parts);
    // Rows whose pieces differ: random; one piece masked; +-1e4 apart; beyond |m log2 e| = 2^24
    // (ExpMinusMax's other form) beside a masked piece; +-FLT_MAX; a constant 1e10; a masked
    // piece beside logits near -1e4 (the masked piece's scale must not be the row's); the max
    // only in the last piece, 1e4 above the rest (a scan for the largest piece that left the
    // last out gave NaN).
    const std::int64_t rows = 8;
    std::vector<float> v(rows * cols);
    const auto r0 = host(test::random_vector<float>(cols, -10, 10));
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t third = c * 3 / cols;
      v[c] = static_cast<float>(r0[c]);
      v[cols + c] = third == 1 ? -inf : static_cast<float>(r0[c]);
      v[2 * cols + c] = third == 1 ? -1e4f : 1e4f - static_cast<float>(c % 5);
      v[3 * cols + c] = third == 0 ? 5e7f - 4.0f * static_cast<float>(c % 4) : third == 1 ? 5e7f - 1000.0f : -big;
      v[4 * cols + c] = c % 3 ? -big : big;
      v[5 * cols + c] = 1e10f;
      v[6 * cols + c] = third == 0 ? -inf : -1e4f - static_cast<float>(c % 7);
      v[7 * cols + c] = c < 2700 ? -1e4f : 0.01f * static_cast<float>(c % 7);
    }
    auto x = matrix_of<T>(rows, cols, v);
    auto y = test::poisoned_matrix<T>(rows, cols);
    detail::softmax_split_rows(Exec(), x, y, parts);
    const auto hy = host(y);
    check_softmax<T>(host(x), cols, hy);
    for (std::int64_t c = 0; c < cols; ++c)
      if (c * 3 / cols == 1) CHECK(hy[cols + c] == 0.0);  // masked: exactly 0
    // In place, and the special rows: all masked gives 0; a NaN or +Inf in one piece, NaN.
    std::vector<float> s(3 * cols);
    for (std::int64_t c = 0; c < cols; ++c) {
      s[c] = -inf;
      s[cols + c] = c == cols - 2 ? std::nanf("") : c % 2 ? -inf : 1.0f;
      s[2 * cols + c] = c == 1 ? inf : 2.0f;
    }
    auto z = matrix_of<T>(3, cols, s);
    detail::softmax_split_rows(Exec(), z, z, parts);
    const auto hz = host(z);
    for (std::int64_t c = 0; c < cols; ++c) {
      CHECK(hz[c] == 0.0);
      CHECK(std::isnan(hz[cols + c]));
      CHECK(std::isnan(hz[2 * cols + c]));
    }
  }
  // Through softmax itself: one row of split_softmax_from entries and more (split where the host
  // runs more than one thread).
  for (const std::int64_t cols : {detail::split_softmax_from, 2 * detail::split_softmax_from + 5}) {
    CAPTURE(cols);
    auto x = test::random_matrix<T>(1, cols, -10, 10);
    auto y = test::poisoned_matrix<T>(1, cols);
    {
      const test::KokkosAllocations allocations;
      rooftop::softmax(Exec(), x, y);
      CHECK(allocations.allocated("rooftop::softmax_split") == (detail::on_host<Exec> && compat::concurrency(Exec()) > 1));
    }
    check_softmax<T>(host(x), cols, host(y));
    // The max only past the middle (in the last piece on two threads), 1e4 above the rest.
    std::vector<float> v(cols);
    for (std::int64_t c = 0; c < cols; ++c) v[c] = c < cols / 2 + 100 ? -1e4f : 0.01f * static_cast<float>(c % 7);
    x = matrix_of<T>(1, cols, v);
    rooftop::softmax(Exec(), x, y);
    check_softmax<T>(host(x), cols, host(y));
  }
}
#endif

#if defined(ROOFTOP_HAS_VECTOR_SOFTMAX) && defined(ROOFTOP_HAS_VECTOR_ROWS)
TEST_CASE("rows per run: 256 KB of output and at least 8 rows, at most four runs per thread; rows of no bytes") {
  CHECK(detail::rows_per_run(100000, 4096, 2) == 64);       // 256 KB of rows of 4 KB
  CHECK(detail::rows_per_run(100000, 1 << 20, 2) == 8);     // at least 8 rows
  CHECK(detail::rows_per_run(40, 4096, 2) == 5);            // four runs per thread: 40 / 8
  CHECK(detail::rows_per_run(3, 4096, 2) == 1);             // at least one row
  CHECK(detail::rows_per_run(100000, 0, 2) == 12500);       // as rows of one byte (was a division by 0)
}

TEST_CASE_TEMPLATE("softmax row runs (host): each row written out beside the next row's exponentials, the same values",
                   T, ROOFTOP_ML_DTYPES) {
  // Host outputs whose rows are whole lines go through detail::softmax_row_runs (large ones
  // streamed, small ones with plain stores where detail::softmax_plain_runs says); here it runs
  // both ways at every number of rows per work item, so that each kind of row falls first,
  // inside and last in its run, and must give the values of the row-by-row path (an output
  // whose rows are not whole lines) bit for bit, with the finite rows against float64 too.
  // (Host only.)
  if constexpr (detail::on_host<Exec>) {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
    for (const std::int64_t cols : {64, 512}) {
      CAPTURE(cols);
      const std::int64_t rows = 11;
      auto x = test::random_matrix<T>(rows, cols, -10, 10);
      test::edit(x, [&](const auto& hx) {
        for (std::int64_t c = 0; c < cols; ++c) {
          if (c % 3) hx(1, c) = T(-inf);                          // two in three masked
          hx(2, c) = T(-inf);                                     // all masked
          hx(3, c) = T(c % 2 ? 1e4f : -1e4f);                     // huge logits
          hx(4, c) = T(1e10f);                                    // the max subtracted first
          hx(5, c) = T(5e7f - 4.0f * static_cast<float>(c % 4));  // large, close together
          hx(9, c) = T(-100.0f - static_cast<float>(c % 5));      // all below 0 (a max from 0 misses them)
          hx(10, c) = T(-3e9f + 256.0f * static_cast<float>(c % 2));
        }
        hx(7, 5) = T(nan);
        hx(8, 0) = T(inf);
      });
      const auto hx = host(x);
      auto wide = test::poisoned_matrix<T>(rows, cols + 1);
      const auto want = Kokkos::subview(wide, Kokkos::ALL, std::make_pair(std::int64_t(0), cols));
      {
        test::StreamingThreshold stores(SIZE_MAX);  // row by row (rows not whole lines), plain stores
        rooftop::softmax(Exec(), x, want);
      }
      const auto hwant = host(test::contiguous_copy(want, std::make_index_sequence<2>{}));
      for (const bool streamed : {false, true})
      for (const std::int64_t per_item : {1, 2, 3, 4, 11}) {
        CAPTURE(streamed);
        CAPTURE(per_item);
        detail::RowPlan plan;
        plan.stream = streamed;
        plan.rows_per_item = per_item;
        auto y = test::poisoned_matrix<T>(rows, cols);
        detail::softmax_row_runs(Exec(), x, y, cols, plan);
        auto z = test::contiguous_copy(x, std::make_index_sequence<2>{});  // in place
        detail::softmax_row_runs(Exec(), z, z, cols, plan);
        for (const auto& got : {host(y), host(z)}) {
          std::int64_t differ = 0;
          for (std::size_t i = 0; i < got.size(); ++i) differ += !(got[i] == hwant[i] || (std::isnan(got[i]) && std::isnan(hwant[i])));
          CHECK(differ == 0);
          for (std::int64_t c = 0; c < cols; ++c) {
            CHECK(std::isnan(got[7 * cols + c]));
            CHECK(std::isnan(got[8 * cols + c]));
            CHECK(got[2 * cols + c] == 0.0);
          }
          // Rows 0 to 6 but the NaN row, and rows 9 and 10, against float64.
          const auto finite = [&](std::int64_t first, std::int64_t last, const std::vector<double>& v) {
            return std::vector<double>(v.begin() + first * cols, v.begin() + last * cols);
          };
          check_softmax<T>(finite(0, 7, hx), cols, finite(0, 7, got));
          check_softmax<T>(finite(9, 11, hx), cols, finite(9, 11, got));
        }
      }
    }
  }
}
#endif

namespace {
/// softmax of x into y through the GPU's path, rows held in registers (R values per thread per
/// chunk), with `team` threads per row on this backend.
template <int R, class X, class Y>
void register_softmax(int team, const X& x, const Y& y) {
  detail::RegisterRows<Exec>::launch<R>("softmax", Exec(), static_cast<std::int64_t>(x.extent(0)),
                                        static_cast<std::int64_t>(x.extent(1)), team, detail::SoftmaxRegisterRows<X, Y>{x, y});
}

template <class T, int R>
void check_register_softmax() {
  const int team = test::max_team_size();
  CAPTURE(team);
  CAPTURE(R);
  // One value, a short row, rows that fill all but one or all of the team's values (one chunk),
  // and rows of two and three chunks; masked entries and a fully masked row among them.
  const std::int64_t span = std::int64_t(team) * R;
  for (const std::int64_t cols : {std::int64_t(1), std::int64_t(R - 1), span - 1, span, span + 1, 3 * span - 5}) {
    CAPTURE(cols);
    auto x = test::random_matrix<T>(5, cols, -10, 10);
    test::edit(x, [&](const auto& hx) {  // row 0: every third entry masked; row 1: all masked
      for (std::int64_t c = 0; c < cols; ++c) {
        if (c % 3 == 1) hx(0, c) = T(-std::numeric_limits<float>::infinity());
        hx(1, c) = T(-std::numeric_limits<float>::infinity());
      }
    });
    auto y = test::poisoned_matrix<T>(5, cols);
    register_softmax<R>(team, x, y);
    check_softmax<T>(host(x), cols, host(y));
  }
  check_nan_and_inf_rows<T>([&](const auto& x, const auto& y) { register_softmax<R>(team, x, y); });
  {  // in place, three chunks: each chunk is written after its last read
    auto x = test::random_matrix<T>(3, 3 * span - 1, -10, 10);
    const auto hx = host(x);
    register_softmax<R>(team, x, x);
    check_softmax<T>(hx, 3 * span - 1, host(x));
  }
  {  // Rows whose runs are not aligned (a column subview from column 1: most rows start off a
     // 16-byte boundary) and strided rows (LayoutLeft), value by value; column 0 is not written.
    const std::int64_t cols = span + 3;
    auto wide = test::random_matrix<T>(5, cols + 1, -10, 10), out = test::poisoned_matrix<T>(5, cols + 1);
    const auto inner = std::make_pair(std::int64_t{1}, cols + 1);
    auto x = Kokkos::subview(wide, Kokkos::ALL, inner);
    register_softmax<R>(team, x, Kokkos::subview(out, Kokkos::ALL, inner));
    auto hx = test::poisoned_matrix<T>(5, cols), hy = test::poisoned_matrix<T>(5, cols);
    Kokkos::deep_copy(hx, x);
    Kokkos::deep_copy(hy, Kokkos::subview(out, Kokkos::ALL, inner));
    check_softmax<T>(host(hx), cols, host(hy));
    const auto ho = host(out);
    for (std::int64_t r = 0; r < 5; ++r) REQUIRE(std::isnan(ho[r * (cols + 1)]));
    Kokkos::View<T**, Kokkos::LayoutLeft, BackendMemory> x_left("x_left", 5, cols), y_left("y_left", 5, cols);
    Kokkos::deep_copy(x_left, hx);
    Kokkos::deep_copy(y_left, test::poisoned_matrix<T>(5, cols));
    register_softmax<R>(team, x_left, y_left);
    Kokkos::deep_copy(hy, y_left);
    check_softmax<T>(host(hx), cols, host(hy));
  }
  // A team larger than the backend runs is an error, before anything is written.
  auto x = test::random_matrix<T>(2, 8), y = test::poisoned_matrix<T>(2, 8);
  CHECK_THROWS_WITH_AS(register_softmax<R>(team + 1, x, y),
                       ("softmax: a team of " + std::to_string(team + 1) + " threads (this backend runs 1 to " + std::to_string(team) + ")").c_str(),
                       rooftop::Error);
  for (double v : host(y)) REQUIRE(std::isnan(v));
}
}  // namespace

TEST_CASE_TEMPLATE("softmax's GPU path (rows held in registers) on this backend", T, ROOFTOP_ML_DTYPES) {
  check_register_softmax<T, 8>();
  check_register_softmax<T, 16>();
  // The GPU's choice of values and team (RegisterRows::run), capped at the teams this backend
  // runs: rows of 300 and 9000 (8 values per thread for 2-byte rows of 300, else 16), in
  // chunks here.
  for (const std::int64_t cols : {300, 9000}) {
    CAPTURE(cols);
    auto x = test::random_matrix<T>(3, cols, -10, 10);
    auto y = test::poisoned_matrix<T>(3, cols);
    detail::RegisterRows<Exec>::run("softmax", Exec(), 3, cols, detail::SoftmaxRegisterRows<decltype(x), decltype(y)>{x, y});
    check_softmax<T>(host(x), cols, host(y));
  }
}

TEST_CASE("preconditions: softmax names the op and extents") {
  auto x = test::random_matrix<float>(128, 4096), y = test::poisoned_matrix<float>(128, 4095);
  CHECK_THROWS_WITH_AS(rooftop::softmax(Exec(), x, y), "softmax: x is 128x4096 but y is 128x4095", rooftop::Error);
  for (double v : host(y)) REQUIRE(std::isnan(v));
  // Rows written one row before the rows read (row r of y is row r - 1 of x) would race.
  const auto lo = Kokkos::subview(x, std::make_pair(0, 127), Kokkos::ALL), hi = Kokkos::subview(x, std::make_pair(1, 128), Kokkos::ALL);
  const auto before = host(x);
  CHECK_THROWS_WITH_AS(rooftop::softmax(Exec(), hi, lo),
                       "softmax: x and y overlap but are not the same elements (x is 127x4096 with strides (4096, 1), y is 127x4096 with "
                       "strides (4096, 1) from -16384 bytes after x's first element): pass the same View to compute in place, or Views "
                       "that do not overlap",
                       rooftop::Error);
  // An output whose rows are all one row.
  const Kokkos::View<float**, Kokkos::LayoutStride, BackendMemory> one_row(y.data(), Kokkos::LayoutStride(128, 0, 4095, 1));
  auto x4095 = test::random_matrix<float>(128, 4095);
  CHECK_THROWS_WITH_AS(rooftop::softmax(Exec(), x4095, one_row),
                       "softmax: y is 128x4095 with strides (0, 1): its strides do not nest, so its elements may share memory and writes to them could race",
                       rooftop::Error);
  CHECK(host(x) == before);
  for (double v : host(y)) REQUIRE(std::isnan(v));
}
