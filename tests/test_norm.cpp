// SPDX-License-Identifier: BSD-3-Clause
// layernorm and rmsnorm over the last axis: every ML dtype and row length against float64,
// with and without weight/bias; from one storage type into another; constant rows; preconditions.
#include "common.hpp"

#include "../benchmarks/reference.hpp"

#include <rooftop/kernels/norm.hpp>

#include <cmath>
#include <limits>

using namespace rooftop;
using test::Exec;
using test::host;

namespace {

/// Checks a norm's output: `normalized` is the float64 (x - mean) * rstd (or x * rrms), the
/// output want = normalized * w + b; the error bound scales with |w| (1 + |normalized|) + |b|.
template <class T>
void check_norm(const std::vector<double>& normalized, std::int64_t cols, const std::vector<double>& w,
                const std::vector<double>& b, const std::vector<double>& y) {
  std::vector<double> want(y.size()), scale(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double wi = w.empty() ? 1.0 : w[i % cols], bi = b.empty() ? 0.0 : b[i % cols];
    want[i] = normalized[i] * wi + bi;
    scale[i] = std::abs(wi) * (1 + std::abs(normalized[i])) + std::abs(bi);
  }
  const double roundings = reference::row_roundings(cols);
  const std::string error =
      reference::compare(y, want, [&](std::size_t i) { return reference::tolerance<T>(want[i], scale[i], roundings); });
  CHECK_MESSAGE(error.empty(), error);
}

std::vector<double> normalize_rows(const std::vector<double>& x, std::int64_t cols, double eps, bool rms) {
  std::vector<double> out(x.size());
  for (std::size_t r = 0; cols && r < x.size() / cols; ++r) {
    if (rms) reference::rmsnorm_row(&x[r * cols], cols, eps, nullptr, &out[r * cols]);
    else reference::layernorm_row(&x[r * cols], cols, eps, nullptr, nullptr, &out[r * cols]);
  }
  return out;
}

/// Three random rows of `cols` values in [-3, 3), row 1's entry `at` set to `value`.
template <class T>
test::Matrix<T> rows_with(std::int64_t cols, std::int64_t at, float value) {
  const auto x = test::random_matrix<T>(3, cols, -3, 3);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  h(1, at) = T(value);
  Kokkos::deep_copy(x, h);
  return x;
}

}  // namespace

TEST_CASE_TEMPLATE("layernorm and rmsnorm match float64, with and without weight and bias (plain and streaming stores)",
                   T, ROOFTOP_ML_DTYPES) {
  const double eps = 1e-5;
  for (const std::size_t threshold : test::store_thresholds)
  for (const std::int64_t cols : test::row_lengths) {
    const std::int64_t rows = cols > 1000 ? 4 : 29;
    CAPTURE(threshold);
    CAPTURE(cols);
    test::StreamingThreshold stores(threshold);
    // Rows with a mean far from 0 relative to their spread: the variance must not cancel.
    auto x = test::random_matrix<T>(rows, cols, 2, 4);
    auto w = test::random_vector<T>(cols, 0.5, 1.5), b = test::random_vector<T>(cols, -1, 1);
    const test::Vector<T> none;
    const auto hx = host(x), hw = host(w), hb = host(b);
    const auto ln = normalize_rows(hx, cols, eps, false), rms = normalize_rows(hx, cols, eps, true);

    auto y = test::poisoned_matrix<T>(rows, cols);
    rooftop::layernorm(Exec(), x, y, eps, w, b);
    check_norm<T>(ln, cols, hw, hb, host(y));
    y = test::poisoned_matrix<T>(rows, cols);
    rooftop::layernorm(Exec(), x, y, eps, none, b);
    check_norm<T>(ln, cols, {}, hb, host(y));
    y = test::poisoned_matrix<T>(rows, cols);
    rooftop::layernorm(Exec(), x, y, eps, w, none);
    check_norm<T>(ln, cols, hw, {}, host(y));
    y = test::poisoned_matrix<T>(rows, cols);
    rooftop::layernorm(Exec(), x, y, eps);
    check_norm<T>(ln, cols, {}, {}, host(y));

    y = test::poisoned_matrix<T>(rows, cols);
    rooftop::rmsnorm(Exec(), x, y, eps, w);
    check_norm<T>(rms, cols, hw, {}, host(y));
    y = test::poisoned_matrix<T>(rows, cols);
    rooftop::rmsnorm(Exec(), x, y, eps);
    check_norm<T>(rms, cols, {}, {}, host(y));
  }
  // No rows, and rows of no entries (which no path may divide by), both ways of storing.
  for (const std::size_t threshold : test::store_thresholds) {
    test::StreamingThreshold stores(threshold);
    const std::pair<std::int64_t, std::int64_t> shapes[] = {{0, 7}, {3, 0}};  // (rows, cols)
    for (const auto& shape : shapes) {
      auto empty = test::poisoned_matrix<T>(shape.first, shape.second);
      rooftop::layernorm(Exec(), empty, empty, eps);
      rooftop::rmsnorm(Exec(), empty, empty, eps);
    }
  }
}

namespace {
/// layernorm and rmsnorm from X's storage into Y's, with a weight of P and a bias of PB, against
/// float64: rows of whole lines, enough of them that each thread's run holds several (the host's
/// row runs fold the next row beside each output line, which must count a line of output as the
/// same values of input, and widen 2-byte parameters once per run in the order their rows load
/// them: on AVX2 hosts bf16 rows go in pairs, the even values then the odd, unless a parameter
/// is fp32).
template <class X, class Y, class P = float, class PB = P>
void check_across_types() {
  for (const std::size_t threshold : test::store_thresholds)
  for (const std::int64_t cols : {64, 768, 4096}) {
    CAPTURE(threshold);
    CAPTURE(cols);
    test::StreamingThreshold stores(threshold);
    const std::int64_t rows = 64;
    auto x = test::random_matrix<X>(rows, cols, 2, 4);
    auto w = test::random_vector<P>(cols, 0.5, 1.5);
    auto b = test::random_vector<PB>(cols, -1, 1);
    const auto hx = host(x);
    auto y = test::poisoned_matrix<Y>(rows, cols);
    rooftop::layernorm(Exec(), x, y, 1e-5, w, b);
    check_norm<Y>(normalize_rows(hx, cols, 1e-5, false), cols, host(w), host(b), host(y));
    y = test::poisoned_matrix<Y>(rows, cols);
    rooftop::rmsnorm(Exec(), x, y, 1e-5, w);
    check_norm<Y>(normalize_rows(hx, cols, 1e-5, true), cols, host(w), {}, host(y));
  }
}
}  // namespace

TEST_CASE("layernorm and rmsnorm from one storage type into another match float64") {
  SUBCASE("fp32 -> bf16") { check_across_types<float, bf16>(); }
  SUBCASE("fp32 -> fp16") { check_across_types<float, fp16>(); }
  SUBCASE("bf16 -> fp32") { check_across_types<bf16, float>(); }
  SUBCASE("fp16 -> fp32") { check_across_types<fp16, float>(); }
  SUBCASE("bf16 -> fp16") { check_across_types<bf16, fp16>(); }
  SUBCASE("bf16 -> bf16, fp16 weight and bias") { check_across_types<bf16, bf16, fp16>(); }
  SUBCASE("fp16 -> fp16, bf16 weight and bias") { check_across_types<fp16, fp16, bf16>(); }
  SUBCASE("bf16 -> fp16, bf16 weight and bias") { check_across_types<bf16, fp16, bf16>(); }
  SUBCASE("bf16 -> bf16, fp32 weight and bias") { check_across_types<bf16, bf16, float>(); }
  SUBCASE("bf16 -> bf16, bf16 weight, fp32 bias") { check_across_types<bf16, bf16, bf16, float>(); }
  SUBCASE("bf16 -> bf16, fp32 weight, fp16 bias") { check_across_types<bf16, bf16, float, fp16>(); }
  SUBCASE("bf16 -> bf16, fp16 weight, bf16 bias") { check_across_types<bf16, bf16, fp16, bf16>(); }
}

TEST_CASE_TEMPLATE("layernorm: rows with outliers at the start, in the middle and at the end", T, ROOFTOP_ML_DTYPES) {
  // The host's vector rows take their statistics in one pass around a shift (the mean of the
  // first 16 values) where that loses at most a bit, and in two passes otherwise: outliers
  // among the first 16 values force the second pass, elsewhere the one pass holds.
  const double eps = 1e-5;
  for (const std::int64_t cols : {512, 4096 + 64, 32768}) {
    CAPTURE(cols);
    const std::int64_t rows = 6;
    auto x = test::random_matrix<T>(rows, cols, -1, 1);
    test::edit(x, [&](const auto& hx) {
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t at = r % 3 == 0 ? 0 : r % 3 == 1 ? cols / 2 : cols - 16;  // start, middle, end
        for (std::int64_t c = at; c < at + 16; ++c) hx(r, c) = T(r < 3 ? 500.0f + float(c % 5) : -60.0f - float(c % 3));
      }
    });
    auto w = test::random_vector<T>(cols, 0.5, 1.5), b = test::random_vector<T>(cols, -1, 1);
    const auto hx = host(x);
    auto y = test::poisoned_matrix<T>(rows, cols);
    rooftop::layernorm(Exec(), x, y, eps, w, b);
    check_norm<T>(normalize_rows(hx, cols, eps, false), cols, host(w), host(b), host(y));
  }
}

TEST_CASE("layernorm and rmsnorm with eps comparable to the rows' variance") {
  // eps 0.5 against a variance of 1/3: 1 / (sqrt(var) + eps) in place of 1 / sqrt(var + eps)
  // would be off by 20%, not the 2e-6 of eps 1e-5.
  for (const std::int64_t cols : {13, 768}) {
    CAPTURE(cols);
    auto x = test::random_matrix<float>(4, cols, -1, 1);
    for (const bool rms : {false, true}) {
      CAPTURE(rms);
      auto y = test::poisoned_matrix<float>(4, cols);
      if (rms) rooftop::rmsnorm(Exec(), x, y, 0.5);
      else rooftop::layernorm(Exec(), x, y, 0.5);
      check_norm<float>(normalize_rows(host(x), cols, 0.5, rms), cols, {}, {}, host(y));
    }
  }
}

TEST_CASE_TEMPLATE("layernorm and rmsnorm of LayoutLeft rows (the portable path), with weight and bias", T, ROOFTOP_ML_DTYPES) {
  const std::int64_t rows = 5, cols = 77;
  const double eps = 1e-5;
  auto xr = test::random_matrix<T>(rows, cols, -3, 3);
  auto w = test::random_vector<T>(cols, 0.5, 1.5), b = test::random_vector<T>(cols, -1, 1);
  Kokkos::View<T**, Kokkos::LayoutLeft, BackendMemory> x("x", rows, cols), y("y", rows, cols);
  Kokkos::deep_copy(x, xr);
  for (const bool rms : {false, true}) {
    CAPTURE(rms);
    Kokkos::deep_copy(y, test::poisoned_matrix<T>(rows, cols));
    if (rms) rooftop::rmsnorm(Exec(), x, y, eps, w);
    else rooftop::layernorm(Exec(), x, y, eps, w, b);
    auto out = test::poisoned_matrix<T>(rows, cols);
    Kokkos::deep_copy(out, y);
    check_norm<T>(normalize_rows(host(xr), cols, eps, rms), cols, host(w), rms ? std::vector<double>{} : host(b), host(out));
  }
}

TEST_CASE("reference::compare, which every check here rests on, rejects a NaN where a number is expected") {
  CHECK(!reference::compare({std::nan("")}, {1.0}, [](std::size_t) { return 1.0; }).empty());
  CHECK(reference::compare({std::nan("")}, {std::nan("")}, [](std::size_t) { return 1.0; }).empty());
  CHECK(!reference::compare({2.5}, {1.0}, [](std::size_t) { return 1.0; }).empty());
}

TEST_CASE_TEMPLATE("constant rows (zero variance): layernorm gives the bias, rmsnorm 1", T, ROOFTOP_ML_DTYPES) {
  const std::int64_t rows = 3, cols = 4096 + 77;
  test::Matrix<T> x("x", rows, cols);
  Kokkos::deep_copy(x, T(0.1f));  // 0.1 is inexact in every dtype: the mean's rounding matters
  auto w = test::random_vector<T>(cols, 0.5, 1.5), b = test::random_vector<T>(cols, -1, 1);
  auto y = test::poisoned_matrix<T>(rows, cols);
  rooftop::layernorm(Exec(), x, y, 1e-5, w, b);
  check_norm<T>(std::vector<double>(rows * cols, 0.0), cols, host(w), host(b), host(y));

  y = test::poisoned_matrix<T>(rows, cols);
  rooftop::rmsnorm(Exec(), x, y, 0.0);
  for (double v : host(y)) REQUIRE(v == doctest::Approx(1.0).epsilon(4 * epsilon<T>()));
}

TEST_CASE_TEMPLATE("eps = 0: rows of one exact value give the bias (layernorm), zero rows 0 (rmsnorm)", T, ROOFTOP_ML_DTYPES) {
  // var + eps = 0 exactly: scale 0 (detail::norm_scale), where 1 / sqrt gave 0 * Inf = NaN. Rows
  // 0 and 3 random, 1 all 0.5, 2 all 0; rows of 13 (not whole lines), 768 and 4096 (vector rows and
  // the host's row runs), plain and streaming stores.
  for (const std::size_t threshold : test::store_thresholds)
    for (const std::int64_t cols : {13, 768, 4096}) {
      CAPTURE(threshold);
      CAPTURE(cols);
      test::StreamingThreshold stores(threshold);
      auto x = test::random_matrix<T>(4, cols, -3, 3);
      Kokkos::deep_copy(Kokkos::subview(x, 1, Kokkos::ALL), T(0.5f));
      Kokkos::deep_copy(Kokkos::subview(x, 2, Kokkos::ALL), T(0.0f));
      auto w = test::random_vector<T>(cols, 0.5, 1.5), b = test::random_vector<T>(cols, -1, 1);
      const auto hx = host(x), hw = host(w), hb = host(b);
      for (const bool rms : {false, true}) {
        CAPTURE(rms);
        auto y = test::poisoned_matrix<T>(4, cols);
        if (rms) rooftop::rmsnorm(Exec(), x, y, 0.0, w);
        else rooftop::layernorm(Exec(), x, y, 0.0, w, b);
        const auto hy = host(y);
        auto want = normalize_rows(hx, cols, 0.0, rms);
        for (std::int64_t c = 0; c < cols; ++c) want[cols + c] = rms ? 1.0 : 0.0, want[2 * cols + c] = 0.0;
        check_norm<T>(want, cols, hw, rms ? std::vector<double>{} : hb, hy);
        for (std::int64_t c = 0; c < cols; ++c) REQUIRE(hy[2 * cols + c] == (rms ? 0.0 : hb[c]));
      }
    }
}

TEST_CASE_TEMPLATE("eps = 0: rows of an inexact constant (0.1) give exactly the bias, on every path", T, ROOFTOP_ML_DTYPES) {
  // A mean one ulp off the row's value leaves a variance of about an ulp squared, whose scale
  // (1 / ulp) turns every output into +-weight + bias: only a mean equal to the value (and a
  // variance of 0: scale 0) gives the bias. Rows of 13, 768, 4096 and 4173 (a tail, vector rows,
  // whole cache lines for the host's row runs, rows of partial lines one at a time), row-major
  // and LayoutLeft (the portable path).
  for (const std::int64_t cols : {13, 768, 4096, 4096 + 77}) {
    CAPTURE(cols);
    test::Matrix<T> x("x", 3, cols);
    Kokkos::deep_copy(x, T(0.1f));
    Kokkos::View<T**, Kokkos::LayoutLeft, BackendMemory> x_left("x_left", 3, cols), y_left("y_left", 3, cols);
    Kokkos::deep_copy(x_left, T(0.1f));
    auto w = test::random_vector<T>(cols, 0.5, 1.5), b = test::random_vector<T>(cols, -1, 1);
    auto y = test::poisoned_matrix<T>(3, cols);
    rooftop::layernorm(Exec(), x, y, 0.0, w, b);
    Kokkos::deep_copy(y_left, test::poisoned_matrix<T>(3, cols));
    rooftop::layernorm(Exec(), x_left, y_left, 0.0, w, b);
    auto left = test::poisoned_matrix<T>(3, cols);
    Kokkos::deep_copy(left, y_left);
    const auto hy = host(y), hleft = host(left), hb = host(b);
    for (std::int64_t i = 0; i < 3 * cols; ++i) {
      CAPTURE(i);
      REQUIRE(hy[i] == hb[i % cols]);
      REQUIRE(hleft[i] == hb[i % cols]);
    }
  }
}

namespace {
/// layernorm (rms false) or rmsnorm of x into y through the GPU's path, rows held in registers
/// (R values per thread), with `team` threads per row on this backend.
template <int R, class X, class Y, class W, class B>
void register_norm(bool rms, int team, const X& x, const Y& y, float eps, const W& w, const B& b) {
  const auto rows = static_cast<std::int64_t>(x.extent(0)), cols = static_cast<std::int64_t>(x.extent(1));
  const float inv_cols = 1.0f / static_cast<float>(cols);
  if (rms) {
    detail::RegisterRows<Exec>::launch<R>("rmsnorm", Exec(), rows, cols, team,
                                          detail::NormRegisterRows<true, X, Y, W, B>{x, y, w, b, eps, inv_cols});
  } else {
    detail::RegisterRows<Exec>::launch<R>("layernorm", Exec(), rows, cols, team,
                                          detail::NormRegisterRows<false, X, Y, W, B>{x, y, w, b, eps, inv_cols});
  }
}

template <class T, int R>
void check_register_norms() {
  const int team = test::max_team_size();
  CAPTURE(team);
  CAPTURE(R);
  const float eps = 1e-5f;
  const test::Vector<T> none;
  // One value, a short row, rows that fill all but one or all of the team's values (one chunk),
  // and rows of two and three chunks.
  const std::int64_t span = std::int64_t(team) * R;
  for (const std::int64_t cols : {std::int64_t(1), std::int64_t(R - 1), span - 1, span, span + 1, 3 * span - 5}) {
    CAPTURE(cols);
    // A mean far from 0 relative to the spread (the variance must not cancel), and constant
    // rows of an inexact value (zero variance up to rounding).
    auto x = test::random_matrix<T>(6, cols, 2, 4);
    Kokkos::deep_copy(Kokkos::subview(x, std::make_pair(4, 6), Kokkos::ALL), T(0.1f));
    auto w = test::random_vector<T>(cols, 0.5, 1.5), b = test::random_vector<T>(cols, -1, 1);
    const auto hx = host(x), hw = host(w), hb = host(b);
    const auto ln = normalize_rows(hx, cols, eps, false), rms = normalize_rows(hx, cols, eps, true);
    for (const bool with_params : {true, false}) {
      CAPTURE(with_params);
      auto y = test::poisoned_matrix<T>(6, cols);
      register_norm<R>(false, team, x, y, eps, with_params ? w : none, with_params ? b : none);
      check_norm<T>(ln, cols, with_params ? hw : std::vector<double>{}, with_params ? hb : std::vector<double>{}, host(y));
      y = test::poisoned_matrix<T>(6, cols);
      register_norm<R>(true, team, x, y, eps, with_params ? w : none, none);
      check_norm<T>(rms, cols, with_params ? hw : std::vector<double>{}, {}, host(y));
    }
  }
  // Rows whose runs are not aligned (a column subview from column 1) and strided rows
  // (LayoutLeft), value by value; column 0 is not written.
  const std::int64_t cols = span + 3;
  const auto inner = std::make_pair(std::int64_t{1}, cols + 1);
  auto wide = test::random_matrix<T>(5, cols + 1, 2, 4), out = test::poisoned_matrix<T>(5, cols + 1);
  auto xc = test::poisoned_matrix<T>(5, cols), yc = test::poisoned_matrix<T>(5, cols);
  Kokkos::deep_copy(xc, Kokkos::subview(wide, Kokkos::ALL, inner));
  auto w = test::random_vector<T>(cols, 0.5, 1.5), b = test::random_vector<T>(cols, -1, 1);
  const auto hx = host(xc), hw = host(w), hb = host(b);
  register_norm<R>(false, team, Kokkos::subview(wide, Kokkos::ALL, inner), Kokkos::subview(out, Kokkos::ALL, inner), eps, w, b);
  Kokkos::deep_copy(yc, Kokkos::subview(out, Kokkos::ALL, inner));
  check_norm<T>(normalize_rows(hx, cols, eps, false), cols, hw, hb, host(yc));
  const auto ho = host(out);
  for (std::int64_t r = 0; r < 5; ++r) REQUIRE(std::isnan(ho[r * (cols + 1)]));
  Kokkos::View<T**, Kokkos::LayoutLeft, BackendMemory> x_left("x_left", 5, cols), y_left("y_left", 5, cols);
  Kokkos::deep_copy(x_left, xc);
  Kokkos::deep_copy(y_left, test::poisoned_matrix<T>(5, cols));
  register_norm<R>(true, team, x_left, y_left, eps, w, none);
  Kokkos::deep_copy(yc, y_left);
  check_norm<T>(normalize_rows(hx, cols, eps, true), cols, hw, {}, host(yc));
  // Parameters whose runs are not aligned (from element 1 of a longer vector) or not
  // contiguous (every other element), value by value, beside aligned rows.
  auto w_wide = test::random_vector<T>(2 * cols + 1, 0.5, 1.5), b_wide = test::random_vector<T>(2 * cols + 1, -1, 1);
  const auto w_off = Kokkos::subview(w_wide, inner), b_off = Kokkos::subview(b_wide, inner);
  const auto hww = host(w_wide), hbw = host(b_wide);
  const std::vector<double> hw_off(hww.begin() + 1, hww.begin() + 1 + cols), hb_off(hbw.begin() + 1, hbw.begin() + 1 + cols);
  std::vector<double> hw_skip(cols);
  for (std::int64_t c = 0; c < cols; ++c) hw_skip[c] = hww[2 * c];
  Kokkos::View<T*, Kokkos::LayoutStride, BackendMemory> w_strided(w_wide.data(), Kokkos::LayoutStride(cols, 2));
  auto y_params = test::poisoned_matrix<T>(5, cols);
  register_norm<R>(false, team, xc, y_params, eps, w_off, b_off);
  check_norm<T>(normalize_rows(hx, cols, eps, false), cols, hw_off, hb_off, host(y_params));
  y_params = test::poisoned_matrix<T>(5, cols);
  register_norm<R>(true, team, xc, y_params, eps, w_strided, none);
  check_norm<T>(normalize_rows(hx, cols, eps, true), cols, hw_skip, {}, host(y_params));
  // float64 parameters: a run's worth is 32 bytes beside fp32 rows (two accesses), 64 beside
  // 2-byte rows (value by value).
  const auto w64 = test::random_vector<double>(cols, 0.5, 1.5), b64 = test::random_vector<double>(cols, -1, 1);
  y_params = test::poisoned_matrix<T>(5, cols);
  register_norm<R>(false, team, xc, y_params, eps, w64, b64);
  check_norm<T>(normalize_rows(hx, cols, eps, false), cols, host(w64), host(b64), host(y_params));
}
}  // namespace

TEST_CASE_TEMPLATE("layernorm's and rmsnorm's GPU path (rows held in registers) on this backend", T, ROOFTOP_ML_DTYPES) {
  check_register_norms<T, 8>();
  check_register_norms<T, 16>();
}

TEST_CASE("layernorm of large entries: normalized on every path, their squared deviations past FLT_MAX too") {
  // 768 columns, weight 1, bias 0.25. Row 0: m - d and m + d alternating, m = 1e24 (d its unit
  // in the last place, 7.2e16): normalized -1 and +1. Row 1: the same about 1e28, whose squared
  // deviations (1.4e42) overflow, so they are taken again in units of 2^-80: -1 and +1 too
  // (before, the scale 0: the bias). Rows 2 and 3: constant 3e37 (the sum overflows) and
  // 1e30: the bias. The sum of the deviations from the rounded mean, n times its rounding, had
  // overflowed in its square: rows 0 and 1 came out +-2.3e19 and NaN on the portable and the
  // register (GPU) paths; the constant rows NaN (row 2 on the vector path too). Rows 4 and 5:
  // 384 x 2e38 then 384 x -2e38, and the two alternating: -1 and +1, though the deviations'
  // sum overflows in partial sums (it had made the mean infinite: all NaN). Row 6: 3e38 but
  // -3e38 at column 100, whose x - mean overflows: -Inf there, the others normalized. Row 7:
  // 16 x 3e38, then -3e38: +Inf at the first 16 (x - mean overflows), the others normalized;
  // the host's one-pass shift is its first value there, more than FLT_MAX from the mean (the
  // correction in units of 2^-80 had overflowed: all NaN).
  const std::int64_t rows = 8, cols = 768;
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> hx("hx", rows, cols);
  std::vector<double> want(rows * cols, 0.25);
  for (std::int64_t c = 0; c < cols; ++c) {
    for (const int r : {0, 1}) {
      const float m = r == 0 ? 1e24f : 1e28f;
      hx(r, c) = c % 2 ? std::nextafter(m, std::numeric_limits<float>::infinity()) : std::nextafter(m, 0.0f);
    }
    want[c] += c % 2 ? 1.0 : -1.0;
    want[cols + c] = want[c];
    hx(2, c) = 3e37f;
    hx(3, c) = 1e30f;
    hx(4, c) = c < cols / 2 ? 2e38f : -2e38f;
    want[4 * cols + c] += c < cols / 2 ? 1.0 : -1.0;
    hx(5, c) = c % 2 ? 2e38f : -2e38f;
    want[5 * cols + c] += c % 2 ? 1.0 : -1.0;
    hx(6, c) = c == 100 ? -3e38f : 3e38f;
    hx(7, c) = c < 16 ? 3e38f : -3e38f;
  }
  for (const std::int64_t r : {6, 7}) {
    std::vector<double> row(cols), out(cols);
    for (std::int64_t c = 0; c < cols; ++c) row[c] = hx(r, c);
    reference::layernorm_row(row.data(), cols, 1e-5, nullptr, nullptr, out.data());
    for (std::int64_t c = 0; c < cols; ++c) want[r * cols + c] = out[c] + 0.25;
  }
  want[6 * cols + 100] = -HUGE_VAL;
  for (std::int64_t c = 0; c < 16; ++c) want[7 * cols + c] = HUGE_VAL;
  test::Matrix<float> x("x", rows, cols);
  Kokkos::deep_copy(x, hx);
  test::Vector<float> w("w", cols), b("b", cols);
  Kokkos::deep_copy(w, 1.0f);
  Kokkos::deep_copy(b, 0.25f);
  auto check = [&](const std::vector<double>& y) {
    for (std::int64_t r = 0; r < rows; ++r) {
      std::int64_t bad = 0, first = -1;
      for (std::int64_t c = 0; c < cols; ++c)
        if (!(y[r * cols + c] == want[r * cols + c] || std::abs(y[r * cols + c] - want[r * cols + c]) <= 1e-5) && bad++ == 0)
          first = c;
      CAPTURE(r);
      CAPTURE(first);
      CHECK_MESSAGE(bad == 0, bad, " wrong, the first ", first < 0 ? 0.0 : y[r * cols + first], " for ", first < 0 ? 0.0 : want[r * cols + first]);
    }
  };
  SUBCASE("contiguous rows (the host's vector path)") {
    auto y = test::poisoned_matrix<float>(rows, cols);
    rooftop::layernorm(Exec(), x, y, 1e-5, w, b);
    check(host(y));
  }
  SUBCASE("LayoutLeft (the portable path)") {
    Kokkos::View<float**, Kokkos::LayoutLeft, BackendMemory> x_left("x_left", rows, cols), y_left("y_left", rows, cols);
    Kokkos::deep_copy(x_left, x);
    Kokkos::deep_copy(y_left, test::poisoned_matrix<float>(rows, cols));
    rooftop::layernorm(Exec(), x_left, y_left, 1e-5, w, b);
    auto y = test::poisoned_matrix<float>(rows, cols);
    Kokkos::deep_copy(y, y_left);
    check(host(y));
  }
  SUBCASE("rows held in registers (the GPU path)") {
    const int team = test::max_team_size();
    auto y = test::poisoned_matrix<float>(rows, cols);
    register_norm<8>(false, team, x, y, 1e-5f, w, b);
    check(host(y));
    y = test::poisoned_matrix<float>(rows, cols);
    register_norm<16>(false, team, x, y, 1e-5f, w, b);
    check(host(y));
  }
}

#if defined(ROOFTOP_HAS_VECTOR_ROWS)
TEST_CASE_TEMPLATE("norm row runs (host): the next row's statistics folded beside each row's output, the same values", T,
                   ROOFTOP_ML_DTYPES) {
  // Host outputs of whole-line rows go through detail::norm_row_runs (large ones streamed, the
  // others with plain stores); here it runs both ways at every number of rows per work item, so
  // that each kind of row falls first, inside and last in its run, and must give the values of
  // the row-by-row path (an output whose rows are not whole lines) bit for bit. Rows 1 and 4
  // have outliers among their first 16 values, so layernorm's statistics take their second pass.
  if constexpr (detail::on_host<Exec>) {
    for (const std::int64_t cols : {64, 512, 4096}) {
      CAPTURE(cols);
      const std::int64_t rows = 11;
      auto x = test::random_matrix<T>(rows, cols, -2, 3);
      test::edit(x, [&](const auto& hx) {
        for (std::int64_t c = 0; c < 16; ++c) hx(1, c) = hx(4, c) = T(400.0f + float(c % 3));
      });
      auto w = test::random_vector<T>(cols, 0.5, 1.5), b = test::random_vector<T>(cols, -1, 1);
      const test::Vector<T> none;
      for (const bool rms : {false, true}) {
        CAPTURE(rms);
        auto norm = [&](const auto& in, const auto& out) {
          if (rms) rooftop::rmsnorm(Exec(), in, out, 1e-6, w);
          else rooftop::layernorm(Exec(), in, out, 1e-5, w, b);
        };
        auto wide = test::poisoned_matrix<T>(rows, cols + 1);
        const auto want = Kokkos::subview(wide, Kokkos::ALL, std::make_pair(std::int64_t(0), cols));
        {
          test::StreamingThreshold stores(SIZE_MAX);  // row by row, plain stores
          norm(x, want);
        }
        const auto hwant = host(test::contiguous_copy(want, std::make_index_sequence<2>{}));
        const float inv_cols = 1.0f / static_cast<float>(cols);
        for (const bool streamed : {false, true})
        for (const std::int64_t per_item : {1, 2, 3, 4, 11}) {
          CAPTURE(streamed);
          CAPTURE(per_item);
          detail::RowPlan plan;
          plan.stream = streamed;
          plan.rows_per_item = per_item;
          auto y = test::poisoned_matrix<T>(rows, cols);
          auto z = test::contiguous_copy(x, std::make_index_sequence<2>{});  // in place
          if (rms) {
            detail::norm_row_runs("rmsnorm", Exec(), x, y, w, none, plan, detail::RmsStats{inv_cols, 1e-6f});
            detail::norm_row_runs("rmsnorm", Exec(), z, z, w, none, plan, detail::RmsStats{inv_cols, 1e-6f});
          } else {
            detail::norm_row_runs("layernorm", Exec(), x, y, w, b, plan, detail::LayerStats{inv_cols, 1e-5f});
            detail::norm_row_runs("layernorm", Exec(), z, z, w, b, plan, detail::LayerStats{inv_cols, 1e-5f});
          }
          for (const auto& got : {host(y), host(z)}) {
            std::int64_t differ = 0;
            for (std::size_t i = 0; i < got.size(); ++i) differ += !(got[i] == hwant[i]);
            CHECK(differ == 0);
          }
        }
        check_norm<T>(normalize_rows(host(x), cols, rms ? 1e-6 : 1e-5, rms), cols, host(w), rms ? std::vector<double>{} : host(b),
                      hwant);
      }
    }
  }
}
#endif

TEST_CASE("norms work in place; a zero row normalizes to 0") {
  for (const std::size_t threshold : test::store_thresholds) {
    CAPTURE(threshold);
    test::StreamingThreshold stores(threshold);
    for (const std::int64_t cols : {513, 512}) {  // 512: whole lines, the host's vector path
      CAPTURE(cols);
      auto x = test::random_matrix<float>(7, cols, -3, 3);
      const auto hx = host(x);
      rooftop::rmsnorm(Exec(), x, x, 1e-6);
      check_norm<float>(normalize_rows(hx, cols, 1e-6, true), cols, {}, {}, host(x));
      x = test::random_matrix<float>(7, cols, -3, 3);
      const auto hx2 = host(x);
      rooftop::layernorm(Exec(), x, x, 1e-5);
      check_norm<float>(normalize_rows(hx2, cols, 1e-5, false), cols, {}, {}, host(x));
    }
  }
  // Rows of a column subview: contiguous along each row, not from row to row. Streamed row by
  // row; the columns outside it stay untouched.
  for (const std::size_t threshold : test::store_thresholds) {
    CAPTURE(threshold);
    test::StreamingThreshold stores(threshold);
    const std::int64_t rows = 9, cols = 301;
    auto x = test::random_matrix<float>(rows, cols, -3, 3);
    auto y = test::poisoned_matrix<float>(rows, cols + 2);
    auto inner = Kokkos::subview(y, Kokkos::ALL, std::make_pair(std::int64_t{1}, cols + 1));
    rooftop::rmsnorm(Exec(), x, inner, 1e-6);
    const auto hx = host(x), hy = host(y);
    const auto want = normalize_rows(hx, cols, 1e-6, true);
    for (std::int64_t r = 0; r < rows; ++r) {
      REQUIRE(std::isnan(hy[r * (cols + 2)]));
      REQUIRE(std::isnan(hy[r * (cols + 2) + cols + 1]));
      for (std::int64_t c = 0; c < cols; ++c)
        REQUIRE(hy[r * (cols + 2) + 1 + c] == doctest::Approx(want[r * cols + c]).epsilon(1e-5));
    }
  }
  // Both sides column subviews whose rows are whole cache lines from a line boundary (64 of
  // 96 floats, from column 16): the host's vector output path, with rows not cols apart.
  {
    test::StreamingThreshold stores(0);
    const std::int64_t rows = 6, cols = 64;
    auto xs = test::random_matrix<float>(rows, 96, -3, 3);
    auto ys = test::poisoned_matrix<float>(rows, 96);
    const auto part = std::make_pair(std::int64_t{16}, std::int64_t{16} + cols);
    auto x = Kokkos::subview(xs, Kokkos::ALL, part);
    auto y = Kokkos::subview(ys, Kokkos::ALL, part);
    auto w = test::random_vector<float>(cols, 0.5, 1.5), b = test::random_vector<float>(cols, -1, 1);
    const auto hxs = host(xs);
    std::vector<double> hx;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) hx.push_back(hxs[r * 96 + 16 + c]);
    for (const bool rms : {false, true}) {
      CAPTURE(rms);
      Kokkos::deep_copy(ys, std::nanf(""));
      if (rms) {
        rooftop::rmsnorm(Exec(), x, y, 1e-6, w);
      } else {
        rooftop::layernorm(Exec(), x, y, 1e-5, w, b);
      }
      const auto hy = host(ys);
      std::vector<double> inner;
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = 0; c < 96; ++c)
          if (c < 16 || c >= 16 + cols) REQUIRE(std::isnan(hy[r * 96 + c]));
        for (std::int64_t c = 0; c < cols; ++c) inner.push_back(hy[r * 96 + 16 + c]);
      }
      check_norm<float>(normalize_rows(hx, cols, rms ? 1e-6 : 1e-5, rms), cols, host(w), rms ? std::vector<double>{} : host(b), inner);
    }
  }
  test::Matrix<float> zero("zero", 2, 9);
  rooftop::layernorm(Exec(), zero, zero, 1e-5);
  for (double v : host(zero)) CHECK(v == 0.0);
  rooftop::rmsnorm(Exec(), zero, zero, 1e-6);
  for (double v : host(zero)) CHECK(v == 0.0);
}

TEST_CASE_TEMPLATE("a NaN or an infinity in a row: layernorm's row all NaN, rmsnorm's x / sqrt(inf)", T,
                   ROOFTOP_ML_DTYPES) {
  // Rows of 8 (shorter than the one-pass shift's 16 values), 40 and 4099 (the vector paths,
  // the bad value inside or outside the shift's first 16) and 512 (whole lines), and the GPU's
  // rows held in registers: row 1 holds the bad value at `at`, rows 0 and 2 are finite and stay
  // as they are normalized.
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  const int team = test::max_team_size();
  const test::Vector<T> none;
  for (const std::size_t threshold : test::store_thresholds)
    for (const std::int64_t cols : {8, 40, 512, 4099})
      for (const std::int64_t at : {std::int64_t{0}, cols - 1})
        for (const float bad : {inf, -inf, nan}) {
          CAPTURE(threshold);
          CAPTURE(cols);
          CAPTURE(at);
          CAPTURE(bad);
          test::StreamingThreshold stores(threshold);
          const auto x = rows_with<T>(cols, at, bad);
          const auto hx = host(x);
          for (const bool rms : {false, true})
          for (const bool registers : {false, true}) {
            CAPTURE(rms);
            CAPTURE(registers);
            auto y = test::sentinel_matrix<T>(3, cols);  // (not NaN: the NaN row must be written)
            if (registers) {
              register_norm<8>(rms, team, x, y, rms ? 1e-6f : 1e-5f, none, none);
            } else if (rms) {
              rooftop::rmsnorm(Exec(), x, y, 1e-6);
            } else {
              rooftop::layernorm(Exec(), x, y, 1e-5);
            }
            const auto hy = host(y);
            for (std::int64_t c = 0; c < cols; ++c) {
              const double got = hy[cols + c];
              if (!rms || std::isnan(bad) || c == at) {
                REQUIRE(std::isnan(got));
              } else {
                REQUIRE(got == 0.0);  // x / sqrt(inf)
              }
            }
            for (const std::int64_t row : {0, 2}) {
              CAPTURE(row);
              const std::vector<double> in(hx.begin() + row * cols, hx.begin() + (row + 1) * cols),
                  out(hy.begin() + row * cols, hy.begin() + (row + 1) * cols);
              check_norm<T>(normalize_rows(in, cols, rms ? 1e-6 : 1e-5, rms), cols, {}, {}, out);
            }
          }
        }
}

TEST_CASE_TEMPLATE("rows whose squares overflow fp32 are normalized too, on every path", T, float, bf16) {
  // Row 1: one entry of 1e20 or -3e19 (squares beyond FLT_MAX; fp16 cannot hold them), inside
  // and outside the one-pass shift's first 16 values; row 3: every entry times 1e30. Rows of 13
  // to 4099 (the vector paths' one pass, the row runs), LayoutLeft (the portable rows) and the
  // GPU's rows held in registers. Their sums of squares (and squared deviations) overflow fp32,
  // so the statistics are taken again in units of 2^-80; before, the scale came out 0 and
  // every entry of those rows the bias (0 without one). Rows 0 and 2 as usual.
  const int team = test::max_team_size();
  const test::Vector<T> none;
  for (const std::size_t threshold : test::store_thresholds)
    for (const std::int64_t cols : {13, 17, 64, 768, 4099})
      for (const std::int64_t at : {std::int64_t{0}, std::int64_t{5}, cols - 1})
        for (const float big : {1e20f, -3e19f}) {
          CAPTURE(threshold);
          CAPTURE(cols);
          CAPTURE(at);
          CAPTURE(big);
          test::StreamingThreshold stores(threshold);
          const auto three = rows_with<T>(cols, at, big);
          auto x = test::random_matrix<T>(4, cols, -3, 3);
          Kokkos::deep_copy(Kokkos::subview(x, std::make_pair(0, 3), Kokkos::ALL), three);
          test::edit(x, [&](const auto& hx) {
            for (std::int64_t c = 0; c < cols; ++c) hx(3, c) = T(float(hx(3, c)) * 1e30f);
          });
          const auto hx = host(x);
          const auto w = test::random_vector<T>(cols, 0.5, 1.5), b = test::random_vector<T>(cols, -1, 1);
          for (const bool rms : {false, true})
            for (const bool affine : {false, true})
              for (const int path : {0, 1, 2}) {
                CAPTURE(rms);
                CAPTURE(affine);
                CAPTURE(path);
                const double eps = rms ? 1e-6 : 1e-5;
                const auto& wp = affine ? w : none;
                const auto& bp = affine && !rms ? b : none;
                auto y = test::poisoned_matrix<T>(4, cols);
                if (path == 0) {
                  if (rms) rooftop::rmsnorm(Exec(), x, y, eps, wp);
                  else rooftop::layernorm(Exec(), x, y, eps, wp, bp);
                } else if (path == 1) {
                  Kokkos::View<T**, Kokkos::LayoutLeft, BackendMemory> x_left("x_left", 4, cols), y_left("y_left", 4, cols);
                  Kokkos::deep_copy(x_left, x);
                  Kokkos::deep_copy(y_left, y);
                  if (rms) rooftop::rmsnorm(Exec(), x_left, y_left, eps, wp);
                  else rooftop::layernorm(Exec(), x_left, y_left, eps, wp, bp);
                  Kokkos::deep_copy(y, y_left);
                } else {
                  register_norm<8>(rms, team, x, y, static_cast<float>(eps), wp, bp);
                }
                check_norm<T>(normalize_rows(hx, cols, eps, rms), cols, host(wp), host(bp), host(y));
              }
        }
}

TEST_CASE("layernorm and rmsnorm without an execution space, with or without eps") {
  // These bound x as the execution space (no overload without one took eps alone): a compile
  // error deep inside the op.
  auto x = test::random_matrix<float>(5, 200, -2, 2);
  auto a = test::poisoned_matrix<float>(5, 200), b = test::poisoned_matrix<float>(5, 200);
  // Poisoned before each pair, so two calls that both write nothing cannot match on the last
  // pair's values (NaN never compares equal).
  const auto poison = [&] {
    fill_nan(Exec(), test::flat(a));
    fill_nan(Exec(), test::flat(b));
  };
  rooftop::layernorm(x, a, 1e-3);
  rooftop::layernorm(Exec(), x, b, 1e-3);
  CHECK(host(a) == host(b));
  poison();
  rooftop::layernorm(x, a);
  rooftop::layernorm(Exec(), x, b);
  CHECK(host(a) == host(b));
  poison();
  rooftop::rmsnorm(x, a, 1e-3);
  rooftop::rmsnorm(Exec(), x, b, 1e-3);
  CHECK(host(a) == host(b));
  poison();
  rooftop::rmsnorm(x, a);
  rooftop::rmsnorm(Exec(), x, b);
  CHECK(host(a) == host(b));
}

TEST_CASE("preconditions: norms name the op and extents") {
  auto x = test::random_matrix<float>(4, 8), y = test::poisoned_matrix<float>(4, 7);
  auto w8 = test::random_vector<float>(8), w7 = test::random_vector<float>(7);
  CHECK_THROWS_WITH_AS(rooftop::layernorm(Exec(), x, y), "layernorm: x is 4x8 but y is 4x7", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::layernorm(Exec(), x, x, 1e-5, w7, w8),
                       "layernorm: x is 4x8 but weight is 7 (expected 8 or 0 for none)", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::layernorm(Exec(), x, x, 1e-5, w8, w7),
                       "layernorm: x is 4x8 but bias is 7 (expected 8 or 0 for none)", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::layernorm(Exec(), x, x, -1.0), "layernorm: eps is -1, expected >= 0", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::rmsnorm(Exec(), x, x, std::nan("")), "rmsnorm: eps is nan, expected >= 0", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::rmsnorm(Exec(), x, y), "rmsnorm: x is 4x8 but y is 4x7", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::rmsnorm(Exec(), x, x, 1e-6, w7), "rmsnorm: x is 4x8 but weight is 7 (expected 8 or 0 for none)",
                       rooftop::Error);
  for (double v : host(y)) REQUIRE(std::isnan(v));
  // Rows shifted by one against their input, or a weight or bias inside the output, are refused.
  const auto before = host(x);
  const auto lo = Kokkos::subview(x, std::make_pair(0, 3), Kokkos::ALL), hi = Kokkos::subview(x, std::make_pair(1, 4), Kokkos::ALL);
  CHECK_THROWS_WITH_AS(rooftop::layernorm(Exec(), lo, hi),
                       "layernorm: x and y overlap but are not the same elements (x is 3x8 with strides (8, 1), y is 3x8 with strides (8, "
                       "1) from 32 bytes after x's first element): pass the same View to compute in place, or Views that do not overlap",
                       rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::rmsnorm(Exec(), hi, lo),
                       "rmsnorm: x and y overlap but are not the same elements (x is 3x8 with strides (8, 1), y is 3x8 with strides (8, "
                       "1) from -32 bytes after x's first element): pass the same View to compute in place, or Views that do not overlap",
                       rooftop::Error);
  const auto last_row = Kokkos::subview(x, 3, Kokkos::ALL);
  CHECK_THROWS_WITH_AS(rooftop::rmsnorm(Exec(), x, x, 1e-6, last_row),
                       "rmsnorm: weight and y overlap (weight is 8 with strides (1), y is 4x8 with strides (8, 1)): y would be written "
                       "while weight is read",
                       rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::layernorm(Exec(), x, x, 1e-5, w8, last_row),
                       "layernorm: bias and y overlap (bias is 8 with strides (1), y is 4x8 with strides (8, 1)): y would be written "
                       "while bias is read",
                       rooftop::Error);
  // An output whose rows are all one row.
  auto wide = test::random_matrix<float>(4, 16);
  const Kokkos::View<float**, Kokkos::LayoutStride, BackendMemory> one_row(y.data(), Kokkos::LayoutStride(4, 0, 7, 1));
  const auto x47 = Kokkos::subview(wide, Kokkos::ALL, std::make_pair(0, 7));
  CHECK_THROWS_WITH_AS(rooftop::layernorm(Exec(), x47, one_row),
                       "layernorm: y is 4x7 with strides (0, 1): its strides do not nest, so its elements may share memory and writes to them could race",
                       rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::rmsnorm(Exec(), x47, one_row),
                       "rmsnorm: y is 4x7 with strides (0, 1): its strides do not nest, so its elements may share memory and writes to them could race",
                       rooftop::Error);
  CHECK(host(x) == before);
}

TEST_CASE("layernorm_cost and rmsnorm_cost: one FLOP per entry and one row of bytes per parameter given") {
  const Cost both = layernorm_cost<float>(3, 100), none = layernorm_cost<float>(3, 100, false, false);
  CHECK(both.flops == 9.0 * 300);
  CHECK(both.bytes == 4.0 * (2 * 300 + 2 * 100));
  CHECK(none.flops == 7.0 * 300);
  CHECK(none.bytes == 4.0 * 2 * 300);
  CHECK(layernorm_cost<bf16>(3, 100, true, false).flops == 8.0 * 300);
  CHECK(layernorm_cost<bf16>(3, 100, false, true).bytes == 2.0 * (2 * 300 + 100));
  CHECK(rmsnorm_cost<float>(3, 100).flops == 4.0 * 300);
  CHECK(rmsnorm_cost<float>(3, 100).bytes == 4.0 * (2 * 300 + 100));
  CHECK(rmsnorm_cost<fp16>(3, 100, false).flops == 3.0 * 300);
  CHECK(rmsnorm_cost<fp16>(3, 100, false).bytes == 2.0 * 2 * 300);
}

TEST_CASE_TEMPLATE("layernorm and rmsnorm read const RandomAccess Views (on CUDA: values, no addresses)", T, ROOFTOP_ML_DTYPES) {
  // On CUDA such a View's operator() returns a value read through the texture path, so a
  // kernel that took &x(i, j) would not compile; elsewhere the trait changes nothing.
  using RandomAccess = Kokkos::MemoryTraits<Kokkos::RandomAccess>;
  const std::int64_t rows = 5, cols = 768;
  auto x = test::random_matrix<T>(rows, cols, -3, 3);
  auto w = test::random_vector<T>(cols, 0.5, 1.5), b = test::random_vector<T>(cols, -1, 1);
  const Kokkos::View<const T**, Kokkos::LayoutRight, BackendMemory, RandomAccess> xr = x;
  const Kokkos::View<const T*, BackendMemory, RandomAccess> wr = w, br = b;
  for (const bool rms : {false, true}) {
    CAPTURE(rms);
    auto plain = test::poisoned_matrix<T>(rows, cols), traced = test::poisoned_matrix<T>(rows, cols);
    if (rms) {
      rooftop::rmsnorm(Exec(), x, plain, 1e-5, w);
      rooftop::rmsnorm(Exec(), xr, traced, 1e-5, wr);
    } else {
      rooftop::layernorm(Exec(), x, plain, 1e-5, w, b);
      rooftop::layernorm(Exec(), xr, traced, 1e-5, wr, br);
    }
    CHECK(host(traced) == host(plain));
  }
}
