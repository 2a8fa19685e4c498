// SPDX-License-Identifier: BSD-3-Clause
// Activations (relu, gelu tanh/erf, silu) and the row-wise bias ops (bias_add, bias_gelu) over
// every ML dtype and size, against float64; special values; preconditions.
#include "common.hpp"

#include "../benchmarks/reference.hpp"

#include <rooftop/kernels/activation.hpp>

#include <cmath>
#include <iomanip>
#include <tuple>
#include <limits>

using namespace rooftop;
using test::Exec;
using test::host;

namespace {

/// Checks y = f(x) elementwise: `ulps` fp32 roundings relative to |x| + |f(x)|, plus the
/// rounding to T.
template <class T, class Ref>
void check_unary(const std::vector<double>& x, const std::vector<double>& y, Ref ref, double ulps) {
  std::vector<double> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = ref(x[i]);
  const std::string error = reference::compare(
      y, want, [&](std::size_t i) { return reference::tolerance<T>(want[i], std::abs(x[i]) + std::abs(want[i]), ulps); });
  CHECK_MESSAGE(error.empty(), error);
}

}  // namespace

TEST_CASE_TEMPLATE("relu, gelu (tanh and erf), silu match float64 (plain and streaming stores)", T, ROOFTOP_ML_DTYPES) {
  for (const std::size_t threshold : test::store_thresholds)
  for (const std::int64_t n : test::sizes) {
    CAPTURE(threshold);
    CAPTURE(n);
    test::StreamingThreshold stores(threshold);
    // [-12, 12): the activations' bends and tails (erf-form gelu(-12) ~ -1e-32; the tanh form's
    // tail below about -10 is under fp32's normal range and comes out 0 or subnormal).
    auto x = test::random_vector<T>(n, -12, 12);
    const auto hx = host(x);
    auto y = test::poisoned_vector<T>(n);
    rooftop::relu(Exec(), x, y);
    check_unary<T>(hx, host(y), reference::relu, 0);
    y = test::poisoned_vector<T>(n);
    rooftop::gelu(Exec(), x, y);  // tanh form by default
    check_unary<T>(hx, host(y), reference::gelu_tanh, 16);
    y = test::poisoned_vector<T>(n);
    rooftop::gelu(Exec(), x, y, Gelu::erf);
    check_unary<T>(hx, host(y), reference::gelu_erf, 16);
    y = test::poisoned_vector<T>(n);
    rooftop::silu(Exec(), x, y);
    check_unary<T>(hx, host(y), reference::silu, 8);
  }
}

TEST_CASE("fp32 gelu (tanh form) and silu are within 2 ulp of |x|, gelu's erf form within 6 (the documented bounds)") {
  // 2^20 floats evenly spread over the bit patterns of [1e-6, 100], both signs.
  const std::int64_t n = std::int64_t(1) << 20;
  test::Vector<float> x("x", n);
  {
    auto hx = Kokkos::create_mirror_view(x);
    const std::uint32_t lo = 0x358637bdu, hi = 0x42c80000u;  // 1e-6f, 100.0f
    for (std::int64_t i = 0; i < n; ++i)
      hx(i) = compat::bit_cast<float>((lo + static_cast<std::uint32_t>(double(hi - lo) * double(i / 2) / double(n / 2))) |
                                      (i & 1 ? 0x80000000u : 0u));
    Kokkos::deep_copy(x, hx);
  }
  const auto hx = host(x);
  auto worst = [&](const std::vector<double>& y, double (*ref)(double)) {
    double most = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const float ax = std::abs(static_cast<float>(hx[i]));
      const double e = std::abs(y[i] - ref(hx[i])) / double(std::nextafter(ax, 1e30f) - ax);
      if (!(e <= most)) most = e;  // a NaN (a value left unwritten) stays the worst
    }
    return most;
  };
  auto y = test::poisoned_vector<float>(n);
  rooftop::gelu(Exec(), x, y);
  CHECK(worst(host(y), reference::gelu_tanh) <= 2);
  fill_nan(Exec(), y);
  rooftop::silu(Exec(), x, y);
  CHECK(worst(host(y), reference::silu) <= 2);
  fill_nan(Exec(), y);
  rooftop::gelu(Exec(), x, y, Gelu::erf);
  const auto e = host(y);
  CHECK(worst(e, reference::gelu_erf) <= 6);
  // Below x = -2 the erf form's result is Phi's tail, x Phi(x): relative to itself within 2e-5
  // (the rounding of b^2 in its exponent, core/math.hpp) down to results of 1e-37.
  double tail = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double want = reference::gelu_erf(hx[i]);
    if (hx[i] < -2 && std::abs(want) >= 1e-37) {
      const double relative = std::abs(e[i] - want) / std::abs(want);
      if (!(relative <= tail)) tail = relative;  // a NaN stays the worst
    }
  }
  CHECK(tail <= 2e-5);
}

TEST_CASE("activations of special values: +-0, +-Inf, NaN, huge") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> in = {0.0f, -0.0f, inf, -inf, nan, 1e30f, -1e30f, 88.0f, -88.0f, 200.0f, -200.0f};
  test::Vector<float> x("x", in.size()), y("y", in.size());
  auto hx = Kokkos::create_mirror_view(x);
  for (std::size_t i = 0; i < in.size(); ++i) hx(i) = in[i];
  Kokkos::deep_copy(x, hx);
  auto run = [&](auto op) {
    op(x, y);
    return host(y);
  };
  const auto r = run([](auto a, auto b) { rooftop::relu(Exec(), a, b); });
  const auto g = run([](auto a, auto b) { rooftop::gelu(Exec(), a, b); });
  const auto e = run([](auto a, auto b) { rooftop::gelu(Exec(), a, b, Gelu::erf); });
  const auto s = run([](auto a, auto b) { rooftop::silu(Exec(), a, b); });
  for (const auto* out : {&r, &g, &e, &s}) {
    CHECK((*out)[0] == 0.0);
    CHECK((*out)[2] == inf);               // f(+Inf) = +Inf
    CHECK(std::isnan((*out)[4]));          // NaN stays NaN
    CHECK((*out)[5] == doctest::Approx(1e30).epsilon(1e-6));  // f(x) = x for large x
    CHECK((*out)[9] == doctest::Approx(200.0));
  }
  CHECK(r[3] == 0.0);
  for (const auto* out : {&g, &e, &s}) {
    CHECK(std::signbit((*out)[1]));  // f(-0) = -0: x times a gate
    CHECK((*out)[3] == 0.0);  // f(-Inf) = 0 (signs below)
    CHECK(std::abs((*out)[6]) == 0.0);
    CHECK(std::abs((*out)[10]) < 1e-30);
  }
  CHECK(s[8] == doctest::Approx(-88.0 / (1 + std::exp(88.0))).epsilon(1e-5));
  // At -Inf the tanh form and silu gate x / (1 + 2^z), z = +Inf, to +0; the erf form's
  // max(x, 0) - |x| Phi(-|x|) keeps x's sign: -0.
  CHECK(!std::signbit(g[3]));
  CHECK(!std::signbit(s[3]));
  CHECK(std::signbit(e[3]));
}

TEST_CASE_TEMPLATE("relu, gelu (both forms) and silu equal the scalar functions bit for bit, wherever an element falls"
                   " (host vector code)",
                   T, ROOFTOP_ML_DTYPES) {
  // Host kernels compute whole lines in vector registers and the elements around them one at a
  // time: every element, special values among them, must come out as the scalar function
  // gives it, at any offset from a line boundary and with either kind of store. (Host only:
  // device code is compared with float64 above.)
  if constexpr (!detail::on_host<Exec>) return;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> special = {0.0f, -0.0f, inf, -inf, nan, std::copysign(nan, -1.0f), 1e30f, -1e30f, 88.0f, -88.0f,
                                      200.0f, -200.0f, 60.0f, -60.0f};
  const std::int64_t n = 4096 + 77;
  auto x = test::random_vector<T>(n, -12, 12);
  test::edit(x, [&](const auto& hx) {
    for (std::int64_t i = 0; i < n; i += 7) hx(i) = T(special[static_cast<std::size_t>(i / 7) % special.size()]);
  });
  const auto hx = host(x);
  for (const std::size_t threshold : test::store_thresholds)
    for (const std::int64_t first : {0, 1, 5, 31}) {
      CAPTURE(threshold);
      CAPTURE(first);
      test::StreamingThreshold stores(threshold);
      const auto range = std::make_pair(first, n);
      const auto xs = Kokkos::subview(x, range);
      auto check = [&](auto op, auto scalar) {
        auto y = test::poisoned_vector<T>(n - first);
        op(xs, y);
        const auto hy = host(y);
        for (std::int64_t i = 0; i < n - first; ++i) {
          const double want = double(T(scalar(float(T(hx[i + first])))));
          if (std::isnan(want)) {
            REQUIRE(std::isnan(hy[i]));
          } else {
            REQUIRE(hy[i] == want);
            REQUIRE(std::signbit(hy[i]) == std::signbit(want));  // relu(-0) = +0
          }
        }
      };
      check([](auto a, auto b) { rooftop::relu(Exec(), a, b); }, [](float v) { return v > 0.0f || v != v ? v : 0.0f; });
      check([](auto a, auto b) { rooftop::gelu(Exec(), a, b); }, [](float v) { return math::gelu_tanh(v); });
      check([](auto a, auto b) { rooftop::gelu(Exec(), a, b, Gelu::erf); }, [](float v) { return math::gelu_erf(v); });
      check([](auto a, auto b) { rooftop::silu(Exec(), a, b); }, [](float v) { return math::silu(v); });
    }
}

TEST_CASE("exp is within 3 ulp up to its overflow and down to its flush, Inf above, 0 below") {
  // Every float near both ends (where 2^n leaves the floats), and a sparser sweep between.
  auto check = [](float x) {
    const float got = math::exp(x);
    if (x > 88.72283f) return got == std::numeric_limits<float>::infinity();
    if (x < -86.6434f) return got == 0.0f;
    const double want = std::exp(static_cast<double>(x));
    const float near = static_cast<float>(want);
    const double ulp = std::nextafter(near, std::numeric_limits<float>::infinity()) - near;
    return std::abs(got - want) <= 3 * ulp;
  };
  std::int64_t checked = 0, wrong = 0;
  const std::tuple<float, float, float> sweeps[] = {{88.0f, 89.0f, 0.0f}, {-87.0f, -86.5f, 0.0f}, {-90.0f, 90.0f, 1e-4f}};
  for (const auto& [lo, hi, step] : sweeps) {
    for (float x = lo; x < hi; x = step > 0 ? x + step : std::nextafter(x, hi)) {
      ++checked;
      if (check(x) || ++wrong > 3) continue;
      FAIL_CHECK("exp(" << std::setprecision(9) << x << ") = " << math::exp(x) << ", want " << std::exp(double(x)));
    }
  }
  CHECK(checked > 100000);
  CHECK_MESSAGE(wrong == 0, wrong, " of ", checked, " arguments wrong");
  CHECK(math::exp(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(math::exp(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::infinity());
}

TEST_CASE("exp and exp2 keep a NaN a NaN, whatever its payload") {
  for (const std::uint32_t bits : {0x7fc00000u, 0x7fc00001u, 0x7fc001ffu, 0xffc00003u, 0x7f800001u}) {
    CAPTURE(bits);
    const float nan = compat::bit_cast<float>(bits);
    CHECK(std::isnan(math::exp(nan)));
    CHECK(std::isnan(math::exp2_in_range(nan)));
  }
}

TEST_CASE_TEMPLATE("bias_add and bias_gelu match float64 over every row length (plain and streaming stores)", T,
                   ROOFTOP_ML_DTYPES) {
  // Every row length, and rows on either side of the host's float copy of a 2-byte bias.
  const auto shapes = test::row_shapes(37, detail::widened_bias_from<T>);
  for (const std::size_t threshold : test::store_thresholds)
  for (const auto& shape : shapes) {
    const std::int64_t rows = shape[0], cols = shape[1];
    CAPTURE(threshold);
    CAPTURE(rows);
    CAPTURE(cols);
    test::StreamingThreshold stores(threshold);
    auto x = test::random_matrix<T>(rows, cols, -6, 6);
    auto bias = test::random_vector<T>(cols, -1, 1);
    const auto hx = host(x), hb = host(bias);
    std::vector<double> v(hx.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = hx[i] + hb[i % cols];

    auto y = test::poisoned_matrix<T>(rows, cols);
    rooftop::bias_add(Exec(), x, bias, y);
    check_unary<T>(v, host(y), [](double a) { return a; }, 1);
    for (const Gelu form : {Gelu::tanh, Gelu::erf}) {
      y = test::poisoned_matrix<T>(rows, cols);
      rooftop::bias_gelu(Exec(), x, bias, y, form);
      check_unary<T>(v, host(y), form == Gelu::tanh ? reference::gelu_tanh : reference::gelu_erf, 17);
    }
  }
  // No rows, and rows of no columns.
  auto empty = test::poisoned_matrix<T>(0, 5);
  rooftop::bias_gelu(Exec(), empty, test::random_vector<T>(5), empty);
  auto no_cols = test::poisoned_matrix<T>(4, 0);
  rooftop::bias_gelu(Exec(), no_cols, test::random_vector<T>(0), no_cols);
}

TEST_CASE_TEMPLATE("activations work in place", T, ROOFTOP_ML_DTYPES) {
  auto x = test::random_vector<T>(1000, -3, 3);
  const auto hx = host(x);
  rooftop::silu(Exec(), x, x);
  check_unary<T>(hx, host(x), reference::silu, 8);
  // Rows through the host's blocks (not a multiple of them), bias_gelu against an out-of-place call.
  auto m = test::random_matrix<T>(3, 300, -3, 3);
  auto bias = test::random_vector<T>(300);
  auto out = test::poisoned_matrix<T>(3, 300);
  rooftop::bias_gelu(Exec(), m, bias, out);
  rooftop::bias_gelu(Exec(), m, bias, m);
  CHECK(host(m) == host(out));
}

TEST_CASE("preconditions: activations name the op and extents") {
  auto a = test::random_vector<float>(13), b = test::poisoned_vector<float>(12);
  CHECK_THROWS_WITH_AS(rooftop::relu(Exec(), a, b), "relu: x is 13 but y is 12", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::gelu(Exec(), a, b), "gelu: x is 13 but y is 12", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::silu(Exec(), a, b), "silu: x is 13 but y is 12", rooftop::Error);
  auto x = test::random_matrix<float>(4, 8), y = test::poisoned_matrix<float>(4, 7);
  auto bias8 = test::random_vector<float>(8), bias7 = test::random_vector<float>(7);
  CHECK_THROWS_WITH_AS(rooftop::bias_gelu(Exec(), x, bias8, y), "bias_gelu: x is 4x8 but y is 4x7", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::bias_add(Exec(), x, bias7, x), "bias_add: x is 4x8 but bias is 7 (expected 8)",
                       rooftop::Error);
  for (double v : host(b)) REQUIRE(std::isnan(v));  // nothing written

  // An output one element past its input, or one whose rows are the bias, is refused; in place
  // is fine.
  auto whole = test::random_vector<float>(14);
  const auto before = host(whole);
  const auto lo = Kokkos::subview(whole, std::make_pair(0, 13)), hi = Kokkos::subview(whole, std::make_pair(1, 14));
  CHECK_THROWS_WITH_AS(rooftop::gelu(Exec(), lo, hi),
                       "gelu: x and y overlap but are not the same elements (x is 13 with strides (1), y is 13 with strides (1) from 4 "
                       "bytes after x's first element): pass the same View to compute in place, or Views that do not overlap",
                       rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::silu(Exec(), hi, lo), doctest::Contains("silu: x and y overlap but are not the same elements"),
                       rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::relu(Exec(), lo, hi), doctest::Contains("relu: x and y overlap but are not the same elements"),
                       rooftop::Error);
  auto buffer = test::random_vector<float>(40);
  const Kokkos::View<float**, Kokkos::LayoutRight, BackendMemory, Kokkos::MemoryUnmanaged> y_in_buffer(buffer.data(), 4, 8);
  CHECK_THROWS_WITH_AS(rooftop::bias_gelu(Exec(), x, Kokkos::subview(buffer, std::make_pair(24, 32)), y_in_buffer),
                       "bias_gelu: bias and y overlap (bias is 8 with strides (1), y is 4x8 with strides (8, 1)): y would be written "
                       "while bias is read",
                       rooftop::Error);
  rooftop::bias_gelu(Exec(), x, Kokkos::subview(buffer, std::make_pair(32, 40)), y_in_buffer);  // apart: fine
  CHECK(host(whole) == before);
  rooftop::gelu(Exec(), lo, lo);  // in place
}
