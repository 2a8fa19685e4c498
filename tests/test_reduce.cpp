// SPDX-License-Identifier: BSD-3-Clause
// Reductions (sum, max, nrm2) over every dtype and size, against a float64 host reference;
// exactness on integers; empty inputs; NaN; range; the host kernels' four-region tails.
#include "common.hpp"

#include <rooftop/kernels/reduce.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace rooftop;
using test::Exec;
using test::host;

TEST_CASE_TEMPLATE("sum, max, nrm2 match float64", T, ROOFTOP_DTYPES) {
  for (const std::int64_t n : test::sizes) {
    CAPTURE(n);
    auto x = test::random_vector<T>(n);
    const auto hx = host(x);
    double sum = 0, sum_abs = 0, max = -std::numeric_limits<double>::infinity(), squares = 0;
    for (double v : hx) {
      sum += v;
      sum_abs += std::abs(v);
      max = std::max(max, v);
      squares += v * v;
    }
    const double eps = epsilon<compute_t<T>>();
    CHECK(std::abs(rooftop::sum(Exec(), x) - sum) <= test::reduction_tolerance(n, eps, true) * sum_abs);
    CHECK(static_cast<double>(rooftop::max(Exec(), x)) == max);  // exact: a max rounds nothing
    const double norm = std::sqrt(squares);
    CHECK(std::abs(rooftop::nrm2(Exec(), x) - norm) <= (test::reduction_tolerance(n, 0x1p-52, true) + 2 * eps) * norm);
  }
}

TEST_CASE_TEMPLATE("sum of small integers is exact (no element dropped or counted twice)", T, ROOFTOP_DTYPES) {
  for (const std::int64_t n : test::sizes) {
    CAPTURE(n);
    test::Vector<T> x("x", n);
    fill_integers(Exec(), x, test::next_seed(), -4, 4);
    double want = 0;
    for (double v : host(x)) want += v;
    CHECK(static_cast<double>(rooftop::sum(Exec(), x)) == want);
  }
}

TEST_CASE("a long fp32 sum folds its blocks' results pairwise, not one after another") {
  // 2^26 copies of 1 + 2^-15: every partial of the host's fold (at most 512 terms per lane), every
  // block's result (16384.5 for reduce_regions' blocks of four runs of 4096) and every pairwise
  // sum of those is exact in fp32, so the spans' cascade gives the exact 2^26 + 2^11. Folded one
  // block after another, a thread's running sum passed 2^24, where adding 16384.5 rounds off 0.5
  // each time: 1536 (2 threads) to 1792 (1 thread) short.
  if constexpr (detail::ReductionShape<Exec, float>::gpu) return;  // the GPU folds as reduce_blocks_gpu does
  const std::int64_t n = std::int64_t{1} << 26;
  test::Vector<float> x("x", n);
  Kokkos::deep_copy(x, 1.0f + 0x1p-15f);
  CHECK(rooftop::sum(Exec(), x) == 0x1p26f + 0x1p11f);
}

// The GPU reductions' spans, slots and partials (detail::reduce_blocks_gpu) on this backend, with
// the largest team it allows up to 256 (on CPUs often 1 or 2): every element counted once, at
// sizes with one span, many, and a short last span and slot.
TEST_CASE_TEMPLATE("the GPU reduction (teams over spans of slots) on this backend", T, double, float, bf16) {
  const int team = std::min(256, test::max_team_size());
  CAPTURE(team);
  for (const std::int64_t n : {std::int64_t(1), std::int64_t(13), std::int64_t(2048 * 3 + 5), std::int64_t(1 << 20) + 7,
                               std::int64_t(5 << 20) + 3}) {
    CAPTURE(n);
    test::Vector<T> x("x", n);
    fill_integers(Exec(), x, test::next_seed(), -4, 4);
    double want = 0;
    for (double v : host(x)) want += v;
    using C = compute_t<T>;
    const auto got = detail::reduce_blocks_gpu(
        "test", Exec(), n, C(0), detail::Plus{}, KOKKOS_LAMBDA(const std::int64_t b, std::int64_t) { return C(x(b)); }, team);
    CHECK(static_cast<double>(got) == want);
  }
}

TEST_CASE_TEMPLATE("max finds a single extreme anywhere, and propagates NaN", T, ROOFTOP_DTYPES) {
  // The host takes four regions of whole blocks of 4096 together (detail::reduce_regions), the
  // rest after them: 14 blocks and 77 make regions of 3 blocks and a rest of 2 blocks and 77.
  for (const std::int64_t n : {std::int64_t(4096 * 3 + 77), std::int64_t(4096 * 14 + 77)}) {
    const std::int64_t region = n / (4 * 4096) * 4096;
    std::vector<std::int64_t> places = {0, 4095, 4096, n - 1};
    if (region > 0)
      for (std::int64_t at : {region - 1, region, 2 * region + 4100, 3 * region + 11, 4 * region - 1, 4 * region, 4 * region + 8192})
        places.push_back(at);
    for (const std::int64_t where : places) {
      CAPTURE(n);
      CAPTURE(where);
      auto x = test::random_vector<T>(n);
      Kokkos::deep_copy(Kokkos::subview(x, where), T(7.0f));
      CHECK(static_cast<double>(rooftop::max(Exec(), x)) == 7.0);
      Kokkos::deep_copy(Kokkos::subview(x, where), T(std::nanf("")));
      CHECK(std::isnan(rooftop::max(Exec(), x)));
    }
  }
}

TEST_CASE_TEMPLATE("max: a NaN at every position of a short vector, infinities without NaN", T, ROOFTOP_DTYPES) {
  const std::int64_t n = 100;  // several vector steps of the host's fold, and a tail
  auto x = test::random_vector<T>(n);
  Kokkos::deep_copy(Kokkos::subview(x, 3), T(std::numeric_limits<float>::infinity()));
  Kokkos::deep_copy(Kokkos::subview(x, 40), T(-std::numeric_limits<float>::infinity()));
  CHECK(rooftop::max(Exec(), x) == std::numeric_limits<compute_t<T>>::infinity());
  for (std::int64_t where = 0; where < n; ++where) {
    CAPTURE(where);
    auto y = test::random_vector<T>(n);
    Kokkos::deep_copy(Kokkos::subview(y, where), T(std::nanf("")));
    CHECK(std::isnan(rooftop::max(Exec(), y)));
  }
}

TEST_CASE_TEMPLATE("max of two-byte values: every bit pattern, runs of negatives, negative NaN", T, rooftop::bf16, rooftop::fp16) {
  // On AVX-512BW and AVX2 hosts bf16/fp16 max compares bits (cpu::max_of_bits): a signed max, an
  // unsigned min for rows with no non-negative value, and NaN on either side of the sign.
  std::mt19937_64 rng(test::next_seed());
  std::vector<std::uint16_t> all(65536), negatives;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    all[h] = static_cast<std::uint16_t>(h);
    const float f = T::from_bits(static_cast<std::uint16_t>(h));
    if (!std::isnan(f) && std::signbit(f)) negatives.push_back(static_cast<std::uint16_t>(h));
  }
  auto max_of = [](const std::vector<std::uint16_t>& bits, std::size_t count) {
    test::Vector<T> x("x", static_cast<std::int64_t>(count));
    auto hx = Kokkos::create_mirror_view(x);
    for (std::size_t i = 0; i < count; ++i) hx(i) = T::from_bits(bits[i]);
    Kokkos::deep_copy(x, hx);
    return static_cast<double>(rooftop::max(Exec(), x));
  };
  auto reference = [](const std::vector<std::uint16_t>& bits, std::size_t count) {
    double m = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < count; ++i) {
      const double v = static_cast<float>(T::from_bits(bits[i]));
      if (std::isnan(v)) return v;
      m = std::max(m, v);
    }
    return m;
  };
  std::shuffle(all.begin(), all.end(), rng);
  CHECK(std::isnan(max_of(all, all.size())));
  std::vector<std::uint16_t> numbers;
  for (const std::uint16_t h : all)
    if (!std::isnan(static_cast<float>(T::from_bits(h)))) numbers.push_back(h);
  CHECK(max_of(numbers, numbers.size()) == std::numeric_limits<double>::infinity());
  std::shuffle(negatives.begin(), negatives.end(), rng);
  for (const std::size_t count : {std::size_t{1}, std::size_t{31}, std::size_t{32}, std::size_t{33}, std::size_t{129}, std::size_t{5000},
                                  negatives.size()}) {
    CAPTURE(count);
    CHECK(max_of(negatives, count) == reference(negatives, count));  // a negative (or -0)
    auto with_nan = negatives;
    with_nan[count / 2] = static_cast<std::uint16_t>(T(-std::numeric_limits<float>::infinity()).bits | 0x41);  // -NaN
    CHECK(std::isnan(max_of(with_nan, count)));
    auto with_positive = negatives;
    with_positive[count - 1] = 0x0001;  // the least positive subnormal
    CHECK(max_of(with_positive, count) == static_cast<double>(static_cast<float>(T::from_bits(0x0001))));
  }
}

TEST_CASE_TEMPLATE("sum, nrm2 and max of contiguous and strided Views agree bit for bit", T, ROOFTOP_DTYPES) {
  // The host's contiguous paths (bf16/fp16 partials in registers, cpu::sum_partials) fold the
  // same partials in the same order as the portable fold that strided Views take. (Elements
  // added to other partials changed the fp32 sum in these trials; nrm2's fp64 squares
  // rarely show an order, so its check guards only against gross errors.)
  for (int trial = 0; trial < 64; ++trial) {
    // (The host sums four regions of whole blocks of 4096 together from 16384 elements on.)
    const std::int64_t n = std::vector<std::int64_t>{13, 77, 200, 4096 * 3 + 77, 4096 * 14 + 77}[trial % 5];
    CAPTURE(n);
    // Magnitudes from 2^-12 to 2^16, so that partial sums round (sums of a few values of
    // narrow range are exact in fp32 whatever the order).
    test::Vector<T> wide("wide", 2 * n);
    {
      std::mt19937_64 rng(test::next_seed());
      auto h = Kokkos::create_mirror_view(wide);
      for (std::int64_t i = 0; i < 2 * n; ++i)
        h(i) = T(static_cast<float>(std::ldexp((rng() & 1 ? -1.0 : 1.0) * (1.0 + (rng() % 1024) / 1024.0), static_cast<int>(rng() % 28) - 12)));
      Kokkos::deep_copy(wide, h);
    }
    const auto every_other = Kokkos::subview(Kokkos::View<T**, Kokkos::LayoutRight, BackendMemory>(wide.data(), n, 2), Kokkos::ALL, 0);
    REQUIRE(every_other.stride(0) == 2);
    test::Vector<T> x("x", n);
    Kokkos::deep_copy(x, every_other);
    const auto s = rooftop::sum(Exec(), x), s_strided = rooftop::sum(Exec(), every_other);
    const auto r = rooftop::nrm2(Exec(), x), r_strided = rooftop::nrm2(Exec(), every_other);
    CHECK(std::memcmp(&s, &s_strided, sizeof s) == 0);
    CHECK(std::memcmp(&r, &r_strided, sizeof r) == 0);
    // max, exact in any order: the strided loop finds what the contiguous paths find, here a
    // largest entry planted at a trial-drawn place (above the draws' 65472, or equal to it
    // once rounded to bf16), with the odd elements, which every_other skips, +Inf.
    const T planted(65504.0f);
    test::edit(wide, [&](const auto& h) {
      for (std::int64_t i = 0; i < n; ++i) h(2 * i + 1) = T(std::numeric_limits<float>::infinity());
      h(2 * ((trial * 7919) % n)) = planted;
    });
    Kokkos::deep_copy(x, every_other);
    const auto m = rooftop::max(Exec(), x), m_strided = rooftop::max(Exec(), every_other);
    CHECK(static_cast<double>(m) == static_cast<double>(static_cast<float>(planted)));
    CHECK(std::memcmp(&m, &m_strided, sizeof m) == 0);
  }
}

TEST_CASE_TEMPLATE("empty inputs: sum 0, nrm2 0, max -Inf", T, ROOFTOP_DTYPES) {
  test::Vector<T> x("x", 0);
  CHECK(rooftop::sum(Exec(), x) == 0);
  CHECK(rooftop::nrm2(Exec(), x) == 0);
  CHECK(rooftop::max(Exec(), x) == -std::numeric_limits<compute_t<T>>::infinity());
}

TEST_CASE("nrm2 neither overflows nor underflows for fp32 data") {
  test::Vector<float> big("big", 1000), tiny("tiny", 1000);
  Kokkos::deep_copy(big, 1e30f);   // squares 1e60 overflow fp32
  Kokkos::deep_copy(tiny, 1e-30f); // squares 1e-60 underflow fp32
  CHECK(rooftop::nrm2(Exec(), big) == doctest::Approx(1e30 * std::sqrt(1000.0)).epsilon(1e-6));
  CHECK(rooftop::nrm2(Exec(), tiny) == doctest::Approx(1e-30 * std::sqrt(1000.0)).epsilon(1e-6));
}

TEST_CASE("nrm2 of fp64 data whose squares overflow or underflow: summed again, scaled") {
  // Random values of magnitudes up to 1e200, 1e-170 and 1e-155 (squares Inf, 0 and
  // subnormal in fp64), one of 1e-300 among them; a View of stride 2; zeros, Inf and NaN.
  const std::int64_t n = 5001;
  for (const double scale : {1e200, 1e-170, 1e-155}) {
    CAPTURE(scale);
    auto x = test::random_vector<double>(n, -1, 1);
    auto hx = test::host(x);
    hx[17] = 3;  // scaled: 3 * scale, the largest
    for (auto& v : hx) v *= scale;
    hx[4000] = 1e-300;
    test::Vector<double> d("x", n);
    auto mirror = Kokkos::create_mirror_view(d);
    for (std::int64_t i = 0; i < n; ++i) mirror(i) = hx[static_cast<std::size_t>(i)];
    Kokkos::deep_copy(d, mirror);
    long double want = 0;
    for (const double v : hx) want += static_cast<long double>(v / scale) * static_cast<long double>(v / scale);
    const double norm = scale * std::sqrt(static_cast<double>(want));
    CHECK(rooftop::nrm2(Exec(), d) == doctest::Approx(norm).epsilon(1e-13));
    // Elements 0, 2, ..., n - 3 (n - 1 is odd): a View of stride 2.
    const auto every_other = Kokkos::subview(Kokkos::View<double**, Kokkos::LayoutRight, BackendMemory>(d.data(), n / 2, 2), Kokkos::ALL, 0);
    REQUIRE(every_other.stride(0) == 2);
    long double want_even = 0;
    for (std::int64_t i = 0; i + 1 < n; i += 2) want_even += std::pow(static_cast<long double>(hx[static_cast<std::size_t>(i)] / scale), 2);
    CHECK(rooftop::nrm2(Exec(), every_other) == doctest::Approx(scale * std::sqrt(static_cast<double>(want_even))).epsilon(1e-13));
  }
  test::Vector<double> zeros("zeros", 100), one_inf("one_inf", 100), nan_big("nan_big", 100);
  CHECK(rooftop::nrm2(Exec(), zeros) == 0);
  Kokkos::deep_copy(one_inf, 1e300);
  Kokkos::deep_copy(Kokkos::subview(one_inf, 7), std::numeric_limits<double>::infinity());
  CHECK(rooftop::nrm2(Exec(), one_inf) == std::numeric_limits<double>::infinity());
  Kokkos::deep_copy(nan_big, 1e300);
  Kokkos::deep_copy(Kokkos::subview(nan_big, 9), std::numeric_limits<double>::quiet_NaN());
  CHECK(std::isnan(rooftop::nrm2(Exec(), nan_big)));
}

// rooftop::sum, nrm2 and max pass the host kernels regions of whole 4096-element blocks only
// (detail::reduce_regions), so the regions' last elements past whole registers are reached by
// direct calls alone.
#if defined(ROOFTOP_HAS_FLOAT_LANES)
TEST_CASE_TEMPLATE("cpu::sum_partials and sum_square_partials: every element of four regions whose length is not whole lanes", T,
                   float, rooftop::bf16, rooftop::fp16) {
  constexpr std::int64_t region = 64, lanes = static_cast<std::int64_t>(cpu::float_lanes);
  std::vector<T> x(4 * region);
  for (std::int64_t i = 0; i < 4 * region; ++i) x[i] = T(static_cast<float>(i % 7 + 1));
  const std::int64_t counts[] = {1, lanes - 1, lanes + 5, region};
  for (const std::int64_t count : counts) {
    CAPTURE(count);
    double want = 0, want_squares = 0;
    for (int r = 0; r < 4; ++r)
      for (std::int64_t i = 0; i < count; ++i) {
        const double v = static_cast<float>(x[r * region + i]);
        want += v;
        want_squares += v * v;
      }
    alignas(64) float part[cpu::float_partials];
    cpu::sum_partials(x.data(), count, part, region);
    double got = 0;
    for (const float p : part) got += p;
    CHECK(got == want);  // small integers: exact
    alignas(64) double squares[cpu::float_partials];
    cpu::sum_square_partials(x.data(), count, squares, region);
    double got_squares = 0;
    for (const double p : squares) got_squares += p;
    CHECK(got_squares == want_squares);
  }
}
#endif

TEST_CASE_TEMPLATE("cpu::nan_max and max_of_bits over four regions whose length is not whole registers: every region's last element counts",
                   T, float, double, rooftop::bf16) {
#if !defined(ROOFTOP_HAS_BITS_MAX)
  if constexpr (sizeof(T) == 2) return;  // (no max of bits on this host)
#endif
  constexpr std::int64_t region = 64;
  const std::int64_t counts[] = {1, 7, 21, region};
  const float specials[] = {5.0f, std::numeric_limits<float>::quiet_NaN()};
  for (const std::int64_t count : counts)
    for (int r = 0; r < 4; ++r)
      for (const float special : specials) {
        CAPTURE(count);
        CAPTURE(r);
        CAPTURE(special);
        std::vector<T> x(4 * region, T(-1.0f));
        x[r * region + count - 1] = T(special);
        double got = 0;
        if constexpr (sizeof(T) == 2) {
#if defined(ROOFTOP_HAS_BITS_MAX)
          got = cpu::max_of_bits(x.data(), count, T(std::numeric_limits<float>::infinity()).bits, region, count);
#endif
        } else {
          got = cpu::nan_max(x.data(), count, region, count);
        }
        if (std::isnan(special))
          CHECK(std::isnan(got));
        else
          CHECK(got == 5.0);
      }
}
