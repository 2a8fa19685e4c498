// SPDX-License-Identifier: BSD-3-Clause
// STREAM-family ops (copy, scale, add, triad, dot) over every dtype and size, against a
// float64 host reference; preconditions; aliasing and strided Views.
#include "common.hpp"

#include <rooftop/kernels/stream.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

using namespace rooftop;
using test::Exec;
using test::host;

namespace {

/// Checks out[i] against reference(x[i], y[i]) with the dtype's elementwise tolerance relative
/// to magnitude(x[i], y[i]); poisoned (NaN) outputs fail.
template <class T, class Ref, class Mag>
void check_elementwise(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& out, Ref reference,
                       Mag magnitude) {
  const double tol = test::elementwise_tolerance<T>();
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double xi = x[i], yi = y.empty() ? 0.0 : y[i];
    const double want = reference(xi, yi);
    if (!(std::abs(out[i] - want) <= tol * magnitude(xi, yi) + denorm_min<T>())) {
      FAIL_CHECK("element " << i << " of " << out.size() << ": got " << out[i] << ", want " << want);
      return;
    }
  }
}

}  // namespace

// Ranges of work items index with 64 bits on every backend (Kokkos 3.4's default for
// Kokkos::Cuda is unsigned int, which would wrap at 2^32 elements).
static_assert(std::is_same_v<decltype(detail::elements(std::declval<Exec>(), std::declval<Kokkos::View<float*>>()))::index_type,
                             std::int64_t>);
#if defined(KOKKOS_ENABLE_CUDA)
static_assert(std::is_same_v<compat::Range<Kokkos::Cuda>::index_type, std::int64_t>);
#endif

TEST_CASE("a launch of more teams than a Kokkos TeamPolicy takes (an int) is refused, not narrowed") {
  CHECK(detail::league_size("op", 0) == 0);
  CHECK(detail::league_size("op", std::numeric_limits<int>::max()) == std::numeric_limits<int>::max());
  CHECK_THROWS_WITH_AS(detail::league_size("op", std::int64_t(1) << 32), doctest::Contains("op: the work needs 4294967296 teams"),
                       rooftop::Error);
  // A kernel's label ("rooftop::embedding", as row_policy passes it) is named as its op.
  CHECK_THROWS_WITH_AS(detail::league_size("rooftop::embedding", std::int64_t(1) << 31),
                       "embedding: the work needs 2147483648 teams, more than the 2147483647 one Kokkos launch takes",
                       rooftop::Error);
}

TEST_CASE("scratch per team beyond the int Kokkos 3.4's PerTeam takes is refused, not narrowed") {
  CHECK(detail::team_scratch_bytes("op", std::numeric_limits<int>::max()) == std::numeric_limits<int>::max());
  CHECK_THROWS_WITH_AS(detail::team_scratch_bytes("rooftop::softmax", std::size_t{1} << 32),
                       "softmax: the work needs 4294967296 bytes of scratch per team (rows this long), more than the 2147483647 "
                       "one Kokkos team takes",
                       rooftop::Error);
  // The row kernels' policy: rows of 2^30 floats of scratch each (a softmax of rows that long)
  // once narrowed to an int gave every team 320 bytes, and the kernel wrote through a null
  // pointer (or, at 6e8 floats, a negative size made Kokkos abort the process).
  if constexpr (!detail::RowTeam<Exec>::gpu) {
    detail::RowPlan plan;
    plan.scratch_floats = std::int64_t{1} << 30;
    CHECK_THROWS_WITH_AS(detail::row_policy("rooftop::softmax", Exec(), 4, plan),
                         doctest::Contains("softmax: the work needs 4294967360 bytes of scratch per team"), rooftop::Error);
  }
}

TEST_CASE_TEMPLATE("copy, scale, add, triad match float64 (plain and streaming stores)", T, ROOFTOP_DTYPES) {
  const double alpha = -1.75;
  for (const std::size_t threshold : test::store_thresholds)
  for (const std::int64_t n : test::sizes) {
    CAPTURE(threshold);
    CAPTURE(n);
    test::StreamingThreshold stores(threshold);
    auto x = test::random_vector<T>(n), y = test::random_vector<T>(n);
    const auto hx = host(x), hy = host(y);
    auto abs1 = [](double a, double) { return std::abs(a); };

    auto out = test::poisoned_vector<T>(n);
    rooftop::copy(Exec(), x, out);
    CHECK(host(out) == hx);  // exact

    out = test::poisoned_vector<T>(n);
    rooftop::scale(Exec(), alpha, x, out);
    check_elementwise<T>(hx, {}, host(out), [&](double a, double) { return alpha * a; },
                         [&](double a, double) { return std::abs(alpha * a); });

    out = test::poisoned_vector<T>(n);
    rooftop::add(Exec(), x, y, out);
    check_elementwise<T>(hx, hy, host(out), [](double a, double b) { return a + b; },
                         [](double a, double b) { return std::abs(a) + std::abs(b); });

    out = test::poisoned_vector<T>(n);
    rooftop::triad(Exec(), alpha, x, y, out);
    check_elementwise<T>(hx, hy, host(out), [&](double a, double b) { return a + alpha * b; },
                         [&](double a, double b) { return std::abs(a) + std::abs(alpha * b); });
    (void)abs1;
  }
}

TEST_CASE_TEMPLATE("dot matches float64", T, ROOFTOP_DTYPES) {
  for (const std::int64_t n : test::sizes) {
    CAPTURE(n);
    auto x = test::random_vector<T>(n), y = test::random_vector<T>(n);
    const auto hx = host(x), hy = host(y);
    double want = 0, magnitude = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      want += hx[i] * hy[i];
      magnitude += std::abs(hx[i] * hy[i]);
    }
    const double got = rooftop::dot(Exec(), x, y);
    CHECK(std::abs(got - want) <= test::reduction_tolerance(n, epsilon<compute_t<T>>()) * magnitude + 1e-300);
  }
}

TEST_CASE_TEMPLATE("dot of small integers is exact (no element dropped or counted twice)", T, ROOFTOP_DTYPES) {
  for (const std::int64_t n : test::sizes) {
    CAPTURE(n);
    test::Vector<T> x("x", n), y("y", n);
    fill_integers(Exec(), x, test::next_seed(), -3, 3);
    fill_integers(Exec(), y, test::next_seed(), -3, 3);
    const auto hx = host(x), hy = host(y);
    double want = 0;
    for (std::int64_t i = 0; i < n; ++i) want += hx[i] * hy[i];
    CHECK(static_cast<double>(rooftop::dot(Exec(), x, y)) == want);
  }
}

TEST_CASE_TEMPLATE("outputs may alias inputs; strided and misaligned Views work", T, ROOFTOP_DTYPES) {
  const std::int64_t n = 1001;
  for (const std::size_t threshold : test::store_thresholds) {
    CAPTURE(threshold);
    test::StreamingThreshold stores(threshold);
    auto x = test::random_vector<T>(n), y = test::random_vector<T>(n);
    const auto hx = host(x), hy = host(y);
    rooftop::triad(Exec(), 2.0, x, y, x);  // x = x + 2 y in place
    check_elementwise<T>(hx, hy, host(x), [](double a, double b) { return a + 2 * b; },
                         [](double a, double b) { return std::abs(a) + std::abs(2 * b); });

    // Every other element of a (n, 2) LayoutRight matrix: a strided rank-1 View.
    Kokkos::View<T**, Kokkos::LayoutRight, BackendMemory> m("m", n, 2);
    auto column = Kokkos::subview(m, Kokkos::ALL, 1);
    rooftop::copy(Exec(), y, column);
    CHECK(host(column) == hy);
    CHECK(host(Kokkos::subview(m, Kokkos::ALL, 0)) == std::vector<double>(n, 0.0));  // untouched

    // Contiguous Views that start one element past an aligned allocation (a streamed output's
    // head and tail are plain stores); the elements around them stay untouched.
    auto whole = test::Vector<T>("whole", n + 2);
    auto inner = Kokkos::subview(whole, std::make_pair(std::int64_t{1}, n + 1));
    auto y_inner = Kokkos::subview(y, std::make_pair(std::int64_t{0}, n));
    rooftop::copy(Exec(), y_inner, inner);
    CHECK(host(inner) == hy);
    rooftop::scale(Exec(), 2.0, y, inner);
    check_elementwise<T>(hy, {}, host(inner), [](double a, double) { return 2 * a; },
                         [](double a, double) { return std::abs(2 * a); });
    const auto scaled = host(inner);
    rooftop::copy(Exec(), inner, inner);  // in place
    CHECK(host(inner) == scaled);
    const auto hw = host(whole);
    CHECK(hw.front() == 0.0);
    CHECK(hw.back() == 0.0);
  }
}

TEST_CASE_TEMPLATE("scale of every bf16/fp16 bit pattern rounds exactly like the scalar conversion", T, bf16, fp16) {
  // Every bit pattern (NaN, Inf, subnormals, ties) times 1, 2^-12 and 2^12: the result must be
  // T(alpha * float(x)) bit for bit (NaN: any NaN), whichever way the host narrows (cpu::narrow:
  // F16C blocks for fp16, with a scalar tail: n is not a multiple of 8; streamed: a line of 32
  // at a time, cpu::narrow32, whose one-instruction bf16 form flushes subnormals).
  const std::int64_t n = 65536 + 5;
  auto x = test::Vector<T>("x", n);
  auto hx = Kokkos::create_mirror_view(x);
  for (std::int64_t i = 0; i < n; ++i) hx(i) = T::from_bits(static_cast<std::uint16_t>(i));
  Kokkos::deep_copy(x, hx);
  for (const std::size_t threshold : test::store_thresholds)
  for (const double alpha : {1.0, 0x1p-12, 0x1p12}) {
    CAPTURE(threshold);
    CAPTURE(alpha);
    test::StreamingThreshold stores(threshold);
    auto y = test::poisoned_vector<T>(n);
    rooftop::scale(Exec(), alpha, x, y);
    auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
    for (std::int64_t i = 0; i < n; ++i) {
      const T want(static_cast<float>(alpha) * float(hx(i)));
      const bool ok = std::isnan(float(want)) ? std::isnan(float(hy(i))) : hy(i).bits == want.bits;
      if (!ok) {
        FAIL_CHECK("x bits " << hx(i).bits << ": got bits " << hy(i).bits << ", want " << want.bits);
        break;
      }
    }
  }
}

TEST_CASE("copy moves integer values exactly (plain and streaming stores)") {
  // Odd int64 values up to 2^62: most would not survive a trip through double.
  for (const std::size_t threshold : test::store_thresholds) {
    CAPTURE(threshold);
    test::StreamingThreshold stores(threshold);
    const std::int64_t n = 100003;
    test::Vector<std::int64_t> x("x", n), y("y", n);
    const auto hx = Kokkos::create_mirror_view(x);
    const std::uint64_t seed = test::next_seed();
    for (std::int64_t i = 0; i < n; ++i) hx(i) = static_cast<std::int64_t>(hash64(seed, i) >> 2 | 1);
    Kokkos::deep_copy(x, hx);
    Kokkos::deep_copy(y, -1);
    rooftop::copy(Exec(), x, y);
    const auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
    for (std::int64_t i = 0; i < n; ++i) REQUIRE(hy(i) == hx(i));
  }
}

TEST_CASE("inputs of another type are converted to the output's compute type first (documented)") {
  // fp64 into fp32: 1 + 2^-30 is rounded to 1 before the add.
  test::Vector<double> a("a", 1), b("b", 1);
  Kokkos::deep_copy(a, 1.0 + 0x1p-30);
  Kokkos::deep_copy(b, -1.0);
  test::Vector<float> z("z", 1);
  rooftop::add(Exec(), a, b, z);
  CHECK(host(z)[0] == 0.0);
  // fp64 scaled by 1 into bf16, through fp32: 1 + 2^-8 + 2^-30 becomes the tie 1 + 2^-8, which
  // rounds to even (1); bf16(double) rounds once, up to 1 + 2^-7.
  Kokkos::deep_copy(a, 1.0 + 0x1p-8 + 0x1p-30);
  test::Vector<bf16> y("y", 1);
  rooftop::scale(Exec(), 1.0, a, y);
  CHECK(host(y)[0] == 1.0);
  CHECK(static_cast<float>(bf16(1.0 + 0x1p-8 + 0x1p-30)) == 1.0f + 0x1p-7f);
}

TEST_CASE("default execution space overloads") {
  auto x = test::random_vector<float>(100), y = test::poisoned_vector<float>(100);
  rooftop::copy(x, y);
  CHECK(host(y) == host(x));
  CHECK(rooftop::dot(x, y) == doctest::Approx(rooftop::dot(Exec(), x, x)));
}

TEST_CASE("preconditions: mismatched extents throw rooftop::Error naming op and extents") {
  auto a = test::random_vector<float>(13), b = test::random_vector<float>(12), c = test::poisoned_vector<float>(13);
  CHECK_THROWS_WITH_AS(rooftop::copy(Exec(), a, b), "copy: x is 13 but y is 12", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::scale(Exec(), 2.0, b, a), "scale: x is 12 but y is 13", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::add(Exec(), a, b, c), "add: x is 13 but y is 12", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::add(Exec(), a, a, b), "add: x is 13 but z is 12", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::triad(Exec(), 2.0, a, b, c), "triad: x is 13 but y is 12", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::triad(Exec(), 2.0, a, a, b), "triad: x is 13 but z is 12", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::dot(Exec(), a, b), "dot: x is 13 but y is 12", rooftop::Error);
  // Nothing was written: c is still all NaN.
  for (double v : host(c)) REQUIRE(std::isnan(v));
}

TEST_CASE("preconditions: an output overlapping an input in part, or sharing memory, is refused before anything is written") {
  const std::int64_t n = 100000;  // several host work items: a shifted overlap would race between them
  auto whole = test::random_vector<float>(n + 1);
  const auto before = host(whole);
  const auto lo = Kokkos::subview(whole, std::make_pair(std::int64_t{0}, n));
  const auto hi = Kokkos::subview(whole, std::make_pair(std::int64_t{1}, n + 1));
  auto other = test::random_vector<float>(n);
  const auto shifted = [](const std::string& op, const std::string& in, const std::string& out, long bytes) {
    return op + ": " + in + " and " + out + " overlap but are not the same elements (" + in + " is 100000 with strides (1), " + out +
           " is 100000 with strides (1) from " + std::to_string(bytes) + " bytes after " + in +
           "'s first element): pass the same View to compute in place, or Views that do not overlap";
  };
  CHECK_THROWS_WITH_AS(rooftop::copy(Exec(), lo, hi), shifted("copy", "x", "y", 4).c_str(), rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::scale(Exec(), 2.0, lo, hi), shifted("scale", "x", "y", 4).c_str(), rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::add(Exec(), lo, other, hi), shifted("add", "x", "z", 4).c_str(), rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::triad(Exec(), 2.0, hi, other, lo), shifted("triad", "x", "z", -4).c_str(), rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::add(Exec(), other, lo, hi), shifted("add", "y", "z", 4).c_str(), rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::triad(Exec(), 2.0, other, hi, lo), shifted("triad", "y", "z", -4).c_str(), rooftop::Error);
  CHECK(host(whole) == before);

  // An output of stride 0: every element the same memory.
  const Kokkos::View<float*, Kokkos::LayoutStride, BackendMemory> one_place(whole.data(), Kokkos::LayoutStride(n, 0));
  CHECK_THROWS_WITH_AS(rooftop::copy(Exec(), other, one_place),
                       "copy: y is 100000 with strides (0): its strides do not nest, so its elements may share memory and writes to them could race", rooftop::Error);
  CHECK(host(whole) == before);

  // Interleaved Views of one array share no element: the columns of an (n, 2) matrix.
  Kokkos::View<float**, Kokkos::LayoutRight, BackendMemory> m("m", n, 2);
  Kokkos::deep_copy(Kokkos::subview(m, Kokkos::ALL, 0), other);
  rooftop::scale(Exec(), 2.0, Kokkos::subview(m, Kokkos::ALL, 0), Kokkos::subview(m, Kokkos::ALL, 1));
  const auto h_other = host(other), h_col = host(Kokkos::subview(m, Kokkos::ALL, 1));
  for (std::int64_t i = 0; i < n; ++i) REQUIRE(h_col[i] == static_cast<float>(2 * h_other[i]));
  // One element is one element, whatever its stride (0 too, where Kokkos 3.4 gives a span of 0).
  const Kokkos::View<float*, Kokkos::LayoutStride, BackendMemory> first(whole.data(), Kokkos::LayoutStride(1, 7));
  rooftop::scale(Exec(), 2.0, Kokkos::subview(whole, std::make_pair(std::int64_t{0}, std::int64_t{1})), first);  // in place
  CHECK(host(whole)[0] == static_cast<float>(2 * before[0]));
  const Kokkos::View<float*, Kokkos::LayoutStride, BackendMemory> last(whole.data() + n, Kokkos::LayoutStride(1, 0));
  rooftop::copy(Exec(), Kokkos::subview(other, std::make_pair(std::int64_t{0}, std::int64_t{1})), last);
  CHECK(host(whole)[n] == h_other[0]);
}

// The GPU elementwise loop (detail::write_elements_gpu: each thread several elements a slot
// count apart, loads before stores) run on this backend: every element written once, with the
// value of its own index, at sizes that leave the last slots short.
TEST_CASE_TEMPLATE("the GPU elementwise loop (slots of several elements) on this backend", T, double, float, bf16) {
  for (const std::int64_t n : test::sizes) {
    CAPTURE(n);
    const auto x = test::random_vector<T>(n);
    const auto y = test::poisoned_vector<T>(n);
    using C = compute_t<T>;
    detail::write_elements_gpu("test", Exec(), y, KOKKOS_LAMBDA(const std::int64_t i) { return C(x(i)) * C(2) + C(i % 3); });
    const auto hx = host(x), hy = host(y);
    std::int64_t wrong = 0, first = -1;
    for (std::int64_t i = 0; i < n; ++i)
      if (!(hy[i] == static_cast<double>(T(static_cast<C>(hx[i]) * C(2) + C(i % 3)))) && wrong++ == 0) first = i;
    CAPTURE(first);
    CHECK(wrong == 0);
  }
}

TEST_CASE("ROOFTOP_STREAMING_STORE_THRESHOLD's values") {
  using rooftop::cpu::parse_streaming_threshold;
  CHECK(parse_streaming_threshold("0") == std::size_t{0});
  CHECK(parse_streaming_threshold("4096") == std::size_t{4096});
  CHECK(parse_streaming_threshold("64K") == std::size_t{64} << 10);
  CHECK(parse_streaming_threshold("16M") == std::size_t{16} << 20);
  CHECK(parse_streaming_threshold("2G") == std::size_t{2} << 30);
  CHECK(parse_streaming_threshold("never") == std::numeric_limits<std::size_t>::max());
  for (const char* bad : {"", "-1", "16MB", "16m", "M", " 16", "1.5M", "nevermore", "999999999999999999", "999999999999999G"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_streaming_threshold(bad).has_value());
  }
}
