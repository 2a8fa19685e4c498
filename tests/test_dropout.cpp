// SPDX-License-Identifier: BSD-3-Clause
// dropout (counter-based mask: reproducible, offset-shiftable, right keep rate, p = 0 and 1)
// and the fused bias + GELU + dropout chain against the three unfused kernels and float64.
#include "common.hpp"

#include "../benchmarks/reference.hpp"

#include <rooftop/kernels/dropout.hpp>

#include <cmath>
#include <limits>

using namespace rooftop;
using test::Exec;
using test::host;

namespace {
/// dropout of n fresh values from `offset`, each output checked against its mask's decision and
/// x / (1 - p) for p rounded to 2^-16; returns how many were kept.
template <class T>
std::int64_t checked_dropout(double p, std::uint64_t offset, std::int64_t n) {
  auto x = test::random_vector<T>(n, 0.5, 1.5);  // nonzero, so a dropped element is visible
  auto y = test::poisoned_vector<T>(n);
  const std::uint64_t seed = test::next_seed();
  rooftop::dropout(Exec(), x, y, p, seed, offset);
  const auto hx = host(x), hy = host(y);
  const DropoutMask mask(p, seed, offset);
  const double p_kernel = std::round(p * 65536) / 65536;  // p in steps of 2^-16
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double want = mask.keep(static_cast<std::uint64_t>(i)) ? hx[i] / (1 - p_kernel) : 0.0;
    REQUIRE(std::abs(hy[i] - want) <= reference::tolerance<T>(want, want, 2));
    kept += hy[i] != 0;
  }
  return kept;
}
}  // namespace

TEST_CASE_TEMPLATE("dropout keeps 1 - p of the elements, scaled by 1 / (1 - p) for p rounded to 2^-16, by its mask (plain and "
                   "streaming stores)",
                   T, ROOFTOP_ML_DTYPES) {
  // p = 0.9999 keeps 7 in 65536 (p rounds to 65529 / 65536): scaled by 1 / (1 - p), the kept
  // values came out 7% too large, the output's expectation 1.07 x the input's.
  for (const std::size_t threshold : test::store_thresholds)
  for (const double p : {0.0, 0.1, 0.5, 0.9, 0.9999, 1.0}) {
    for (const std::int64_t n : test::sizes) {
      CAPTURE(threshold);
      CAPTURE(p);
      CAPTURE(n);
      test::StreamingThreshold stores(threshold);
      const double p_kernel = std::round(p * 65536) / 65536;
      const std::int64_t kept = checked_dropout<T>(p, 0, n);
      if (p == 0) CHECK(kept == n);
      if (p == 1) CHECK(kept == 0);
      if (n > 100000) {  // binomial in the kernel's p (0.9999 is 0.99989: 112 kept, not 105): within 6 sd
        const double expected = (1 - p_kernel) * n, sd = std::sqrt(n * p_kernel * (1 - p_kernel));
        CHECK(std::abs(kept - expected) <= 6 * sd + 1);
      }
    }
  }
}

TEST_CASE("dropout and bias_gelu_dropout without an execution space take seeds and offsets of any integer type") {
  // The overloads that take one first are there only for execution spaces: with int or unsigned
  // seeds these calls were ambiguous (a compile error).
  const std::int64_t rows = 7, cols = 300;
  auto x = test::random_matrix<float>(rows, cols, -2, 2);
  auto bias = test::random_vector<float>(cols, -1, 1);
  auto a = test::poisoned_matrix<float>(rows, cols), b = test::poisoned_matrix<float>(rows, cols);
  rooftop::bias_gelu_dropout(x, bias, a, 0.25, 42, 3);
  rooftop::bias_gelu_dropout(Exec(), x, bias, b, 0.25, std::uint64_t{42}, std::uint64_t{3});
  CHECK(host(a) == host(b));
  const test::Vector<const float> flat_x(x.data(), x.size());
  auto c = test::poisoned_vector<float>(rows * cols), d = test::poisoned_vector<float>(rows * cols);
  rooftop::dropout(flat_x, c, 0.25, 42u, 3);
  rooftop::dropout(Exec(), flat_x, d, 0.25, std::uint64_t{42}, std::uint64_t{3});
  CHECK(host(c) == host(d));
}

TEST_CASE("dropout's mask is a pure function of (seed, offset, index)") {
  const std::int64_t n = 100003;
  auto x = test::random_vector<float>(n, 0.5, 1.5);
  auto a = test::poisoned_vector<float>(n), b = test::poisoned_vector<float>(n);
  rooftop::dropout(Exec(), x, a, 0.3, 42);
  rooftop::dropout(Exec(), x, b, 0.3, 42);
  CHECK(host(a) == host(b));  // same call, same result, whatever the thread schedule
  // The second half of a call with offset 0 is a call on the second half with offset n/2.
  const std::int64_t half = n / 2;
  auto tail_in = Kokkos::subview(x, std::make_pair(half, n));
  test::Vector<float> tail("tail", n - half);
  rooftop::dropout(Exec(), tail_in, tail, 0.3, 42, half);
  const auto ha = host(a), ht = host(tail);
  CHECK(std::vector<double>(ha.begin() + half, ha.end()) == ht);
  // Another seed gives another mask.
  rooftop::dropout(Exec(), x, b, 0.3, 43);
  CHECK(host(a) != host(b));
  // Masks of nearby seeds and offsets are uncorrelated: agreement ~ p^2 + (1-p)^2.
  const DropoutMask m1(0.5, 1, 0), m2(0.5, 2, 0), m3(0.5, 1, 1);
  int same12 = 0, same13 = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    same12 += m1.keep(i) == m2.keep(i);
    same13 += m1.keep(i) == m3.keep(i);
  }
  CHECK(std::abs(same12 - n / 2.0) < 6 * std::sqrt(n / 4.0));
  CHECK(std::abs(same13 - n / 2.0) < 6 * std::sqrt(n / 4.0));
}

TEST_CASE("dropout's two elements of a pair take independent halves of its hash; p is rounded to a multiple of 2^-16") {
  // Counters 2k and 2k + 1 share one hash, its low and high 16 bits: their decisions must
  // still be independent, for every p. From an odd offset the pair of counters 2k and 2k + 1
  // is elements 2k - 1 and 2k.
  const std::int64_t pairs = 200000;
  for (const double p : {0.1, 0.5, 0.9}) {
    CAPTURE(p);
    for (const std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{1}}) {
      CAPTURE(offset);
      const DropoutMask mask(p, 77, offset);
      const auto odd = static_cast<std::int64_t>(offset & 1);
      std::int64_t both = 0, first = 0, second = 0;
      for (std::int64_t k = odd; k < pairs + odd; ++k) {
        const bool a = mask.keep(2 * k - odd), b = mask.keep(2 * k + 1 - odd);
        first += a;
        second += b;
        both += a && b;
      }
      const double q = 1 - p, sd = std::sqrt(pairs * q * q * (1 - q * q));
      CHECK(std::abs(first - q * pairs) <= 6 * std::sqrt(pairs * p * q) + 1);
      CHECK(std::abs(second - q * pairs) <= 6 * std::sqrt(pairs * p * q) + 1);
      CHECK(std::abs(both - q * q * pairs) <= 6 * sd + 1);
    }
  }
  // A drop probability within 2^-17 of 0 drops nothing, within 2^-17 of 1 everything.
  const DropoutMask tiny(0x1p-18, 5, 0), almost(1 - 0x1p-18, 5, 0);
  for (std::uint64_t i = 0; i < 100000; ++i) {
    REQUIRE(tiny.keep(i));
    REQUIRE(!almost.keep(i));
  }
  // Between, the keep rate is 1 - p to within 2^-17: p = 2^-14 drops 4 in 65536.
  const DropoutMask rare(0x1p-14, 5, 0);
  std::int64_t dropped = 0;
  const std::int64_t n = std::int64_t{1} << 24;
  for (std::int64_t i = 0; i < n; ++i) dropped += !rare.keep(static_cast<std::uint64_t>(i));
  CHECK(std::abs(dropped - n * 0x1p-14) <= 6 * std::sqrt(n * 0x1p-14));
}

TEST_CASE_TEMPLATE("dropout from odd offsets: each register's pairs start half way (plain and streaming stores)", T, ROOFTOP_ML_DTYPES) {
  // From an odd counter an element's pair partner is the element before it: AVX-512 hosts then
  // take each 32 elements' bits as words 1-32 of a register of hashes (DropoutMask::Lanes).
  for (const std::size_t threshold : test::store_thresholds)
    for (const std::uint64_t offset : {std::uint64_t{1}, std::uint64_t{12345}, (std::uint64_t{3} << 32) - 33})
      for (const std::int64_t n : test::sizes) {
        CAPTURE(threshold);
        CAPTURE(offset);
        CAPTURE(n);
        test::StreamingThreshold stores(threshold);
        checked_dropout<T>(0.3, offset, n);
      }
}

TEST_CASE_TEMPLATE("dropout's counters cross a 2^32 boundary inside a call (the low word wraps; plain and streaming stores)", T, ROOFTOP_ML_DTYPES) {
  const std::int64_t rows = 7, cols = 301, n = rows * cols;
  const std::uint64_t offset = (std::uint64_t{5} << 32) - 1000;  // element 1000 has counter 5 * 2^32
  for (const std::size_t threshold : test::store_thresholds) {
  CAPTURE(threshold);
  test::StreamingThreshold stores(threshold);
  auto x = test::random_matrix<T>(rows, cols, 0.5, 1.5);
  const auto flat = Kokkos::View<const T*, Kokkos::LayoutRight, test::Exec::memory_space>(x.data(), n);
  auto y = test::poisoned_vector<T>(n);
  rooftop::dropout(Exec(), flat, y, 0.5, 9, offset);
  const DropoutMask mask(0.5, 9, offset);
  const auto hx = host(x), hy = host(y);
  for (std::int64_t i = 0; i < n; ++i) REQUIRE(hy[i] == (mask.keep(i) ? hx[i] * 2 : 0.0));
  // The fused form numbers element (r, c) r * cols + c: the same mask.
  test::Vector<T> zero_bias("zero_bias", cols);
  auto fused = test::poisoned_matrix<T>(rows, cols);
  rooftop::bias_gelu_dropout(Exec(), x, zero_bias, fused, 0.5, 9, offset);
  const auto hf = host(fused);
  for (std::int64_t i = 0; i < n; ++i) REQUIRE(((hf[i] != 0) == mask.keep(i) && !std::isnan(hf[i])));
  }
}

TEST_CASE("DropoutMask::for_each_run covers a block of 2^32 + 5 elements in runs of at most 2^31, keyed by their high words") {
  // A run of 2^32 elements would have wrapped apply_block's 32-bit loop counter to 0. Only the
  // runs are walked (no data).
  const DropoutMask mask(0.5, 3, 0);
  for (const std::uint64_t first : {std::uint64_t{0}, std::uint64_t{7}}) {
    CAPTURE(first);
    const std::int64_t count = (std::int64_t{1} << 32) + 5;
    std::int64_t next = 0;
    int runs = 0;
    mask.for_each_run(first, count, [&](const std::int64_t j, const std::int64_t n, const std::uint32_t low, const std::uint32_t key) {
      const std::uint64_t counter = first + static_cast<std::uint64_t>(j);
      CHECK(j == next);
      CHECK(n >= 1);
      CHECK(n <= std::int64_t{1} << 31);
      CHECK(low == static_cast<std::uint32_t>(counter));
      CHECK(key == mask.span(counter).key);
      // A run never crosses a high word.
      CHECK((counter >> 32) == ((counter + static_cast<std::uint64_t>(n) - 1) >> 32));
      next = j + n;
      ++runs;
    });
    CHECK(next == count);
    CHECK(runs == 3);  // 2^31, then to the wrap (2^31 - first), then the rest
  }
}

TEST_CASE_TEMPLATE("dropout and bias_gelu_dropout work in place (plain and streaming stores)", T, ROOFTOP_ML_DTYPES) {
  const std::int64_t rows = 3, cols = 300, n = rows * cols;  // rows not a multiple of the host's blocks
  for (const std::size_t threshold : test::store_thresholds) {
  CAPTURE(threshold);
  test::StreamingThreshold stores(threshold);
  auto x = test::random_matrix<T>(rows, cols, -3, 3);
  auto bias = test::random_vector<T>(cols);
  const auto flat = test::flat(x);
  auto y = test::poisoned_vector<T>(n);
  auto fused = test::poisoned_matrix<T>(rows, cols);
  rooftop::dropout(Exec(), flat, y, 0.3, 5, 11);
  rooftop::bias_gelu_dropout(Exec(), x, bias, fused, 0.3, 5, 11);
  auto x2 = test::random_matrix<T>(rows, cols);
  Kokkos::deep_copy(x2, x);
  rooftop::dropout(Exec(), flat, flat, 0.3, 5, 11);
  CHECK(host(x) == host(y));
  rooftop::bias_gelu_dropout(Exec(), x2, bias, x2, 0.3, 5, 11);
  CHECK(host(x2) == host(fused));
  }
}

TEST_CASE_TEMPLATE("bias_gelu_dropout equals bias_add, gelu and dropout in sequence (both GELU forms; plain and streaming stores)", T,
                   ROOFTOP_ML_DTYPES) {
  // Every row length, and rows on either side of the host's float copy of a 2-byte bias.
  const auto shapes = test::row_shapes(19, detail::widened_bias_from<T>);
  for (const std::size_t threshold : test::store_thresholds)
    for (const Gelu form : {Gelu::tanh, Gelu::erf})
      for (const auto& shape : shapes) {
        const std::int64_t rows = shape[0], cols = shape[1];
        CAPTURE(threshold);
        CAPTURE(form == Gelu::erf);
        CAPTURE(rows);
        CAPTURE(cols);
        test::StreamingThreshold stores(threshold);
        auto x = test::random_matrix<T>(rows, cols, -4, 4);
        auto bias = test::random_vector<T>(cols, -1, 1);
        const std::uint64_t seed = test::next_seed(), offset = 1000;
        auto fused = test::poisoned_matrix<T>(rows, cols);
        rooftop::bias_gelu_dropout(Exec(), x, bias, fused, 0.2, seed, offset, form);
        const auto hx = host(x), hb = host(bias), hf = host(fused);
        const DropoutMask mask(0.2, seed, offset);
        const auto gelu = form == Gelu::tanh ? reference::gelu_tanh : reference::gelu_erf;
        std::vector<double> want(hx.size());
        for (std::size_t i = 0; i < hx.size(); ++i) want[i] = mask.keep(i) ? gelu(hx[i] + hb[i % cols]) / 0.8 : 0.0;
        const std::string error = reference::compare(hf, want, [&](std::size_t i) {
          return reference::tolerance<T>(want[i], (std::abs(hx[i] + hb[i % cols]) + std::abs(want[i])) / 0.8, 18);
        });
        CHECK_MESSAGE(error.empty(), error);

        // The unfused chain (fp32: no intermediate rounding, so the same mask gives the same zeros).
        test::Matrix<T> t1("t1", rows, cols), t2("t2", rows, cols), unfused("unfused", rows, cols);
        rooftop::bias_add(Exec(), x, bias, t1);
        rooftop::gelu(Exec(), test::flat(t1), test::flat(t2), form);
        rooftop::dropout(Exec(), test::flat(t2), test::flat(unfused), 0.2, seed, offset);
        const auto hu = host(unfused);
        // A kept value below the smallest subnormal (fp16: x + b = +-2^-24) may round to 0 in
        // the chain's intermediate and not in the fused kernel: those are left out.
        for (std::size_t i = 0; i < hu.size(); ++i)
          if (want[i] == 0 || std::abs(want[i]) >= denorm_min<T>()) REQUIRE((hu[i] == 0) == (hf[i] == 0 && want[i] == 0));
      }
}

TEST_CASE_TEMPLATE("dropout of strided Views and of another input type gives the contiguous result (plain and streaming stores)", T,
                   ROOFTOP_ML_DTYPES) {
  // The host's fallback for what its vector paths do not take (strided x or y, x of another
  // type): the same mask, so the same outputs bit for bit.
  const std::int64_t n = 70001;  // several host work items, not a multiple of a register
  for (const std::size_t threshold : test::store_thresholds) {
    CAPTURE(threshold);
    test::StreamingThreshold stores(threshold);
    const std::uint64_t seed = test::next_seed(), offset = 77;
    auto x = test::random_vector<T>(n, -2, 2);
    auto want = test::poisoned_vector<T>(n);
    rooftop::dropout(Exec(), x, want, 0.3, seed, offset);
    const auto hw = host(want);
    // x and y as columns of (n, 2) matrices: stride 2.
    Kokkos::View<T**, Kokkos::LayoutRight, BackendMemory> xm("xm", n, 2), ym("ym", n, 2);
    Kokkos::deep_copy(Kokkos::subview(xm, Kokkos::ALL, 1), x);
    Kokkos::deep_copy(ym, T(std::numeric_limits<float>::quiet_NaN()));
    rooftop::dropout(Exec(), Kokkos::subview(xm, Kokkos::ALL, 1), Kokkos::subview(ym, Kokkos::ALL, 0), 0.3, seed, offset);
    CHECK(host(Kokkos::subview(ym, Kokkos::ALL, 0)) == hw);
    for (double v : host(Kokkos::subview(ym, Kokkos::ALL, 1))) REQUIRE(std::isnan(v));  // untouched
    // A strided output from a contiguous input, and the reverse.
    auto y = test::poisoned_vector<T>(n);
    rooftop::dropout(Exec(), Kokkos::subview(xm, Kokkos::ALL, 1), y, 0.3, seed, offset);
    CHECK(host(y) == hw);
    // fp32 input into T: the values are T's, so the same as from x of T.
    auto xf = test::poisoned_vector<float>(n);
    const auto hx = host(x);
    test::edit(xf, [&](const auto& h) {
      for (std::int64_t i = 0; i < n; ++i) h(i) = static_cast<float>(hx[i]);
    });
    auto yf = test::poisoned_vector<T>(n);
    rooftop::dropout(Exec(), xf, yf, 0.3, seed, offset);
    CHECK(host(yf) == hw);
  }
}

TEST_CASE("preconditions: dropout names the op, extents and p") {
  auto a = test::random_vector<float>(13), b = test::poisoned_vector<float>(12);
  CHECK_THROWS_WITH_AS(rooftop::dropout(Exec(), a, b, 0.1, 1), "dropout: x is 13 but y is 12", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::dropout(Exec(), a, a, 1.5, 1), "dropout: drop probability p is 1.5, expected 0 <= p <= 1",
                       rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::dropout(Exec(), a, a, -0.1, 1), "dropout: drop probability p is -0.1, expected 0 <= p <= 1",
                       rooftop::Error);
  auto x = test::random_matrix<float>(4, 8), y = test::poisoned_matrix<float>(4, 7);
  auto bias = test::random_vector<float>(8);
  CHECK_THROWS_WITH_AS(rooftop::bias_gelu_dropout(Exec(), x, bias, y, 0.1, 1), "bias_gelu_dropout: x is 4x8 but y is 4x7",
                       rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::dropout(Exec(), a, a, std::nan(""), 1), "dropout: drop probability p is nan, expected 0 <= p <= 1",
                       rooftop::Error);
  auto y8 = test::poisoned_matrix<float>(4, 8);
  auto bias7 = test::random_vector<float>(7);
  CHECK_THROWS_WITH_AS(rooftop::bias_gelu_dropout(Exec(), x, bias, y8, 2.0, 1),
                       "bias_gelu_dropout: drop probability p is 2, expected 0 <= p <= 1", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::bias_gelu_dropout(Exec(), x, bias7, y8, 0.1, 1), doctest::Contains("bias_gelu_dropout: x is 4x8 but bias is 7"),
                       rooftop::Error);
  // Rows of 2^32 values (no rows: nothing is allocated) exceed the mask's 32-bit column; checked
  // before the bias's extent.
  const std::int64_t wide = std::int64_t{1} << 32;
  test::Matrix<float> xw("xw", 0, wide), yw("yw", 0, wide);
  CHECK_THROWS_WITH_AS(rooftop::bias_gelu_dropout(Exec(), xw, bias, yw, 0.1, 1),
                       "bias_gelu_dropout: x is 0x4294967296, rows longer than 2^32 - 1 are not supported", rooftop::Error);
  // The mask alone (a backward pass rebuilds it) checks p as well.
  CHECK_THROWS_WITH_AS(DropoutMask(-1.0, 1, 0), "DropoutMask: drop probability p is -1, expected 0 <= p <= 1", rooftop::Error);
  CHECK_THROWS_WITH_AS(DropoutMask(std::nan(""), 1, 0), "DropoutMask: drop probability p is nan, expected 0 <= p <= 1", rooftop::Error);
  for (double v : host(b)) REQUIRE(std::isnan(v));
  for (double v : host(y8)) REQUIRE(std::isnan(v));
  // An output one element past its input (across host work items) is refused, before any write.
  auto whole = test::random_vector<float>(100001);
  const auto before = host(whole);
  CHECK_THROWS_WITH_AS(rooftop::dropout(Exec(), Kokkos::subview(whole, std::make_pair(1, 100001)),
                                        Kokkos::subview(whole, std::make_pair(0, 100000)), 0.1, 1),
                       "dropout: x and y overlap but are not the same elements (x is 100000 with strides (1), y is 100000 with strides "
                       "(1) from -4 bytes after x's first element): pass the same View to compute in place, or Views that do not "
                       "overlap",
                       rooftop::Error);
  CHECK(host(whole) == before);
}

TEST_CASE("bias_gelu_cost and bias_gelu_dropout_cost count the FLOPs of the GELU form asked for") {
  CHECK(bias_gelu_cost<float>(4, 10).flops == 9.0 * 40);
  CHECK(bias_gelu_cost<float>(4, 10, Gelu::erf).flops == 6.0 * 40);
  CHECK(bias_gelu_dropout_cost<bf16>(4, 10).flops == 10.0 * 40);
  CHECK(bias_gelu_dropout_cost<bf16>(4, 10, Gelu::erf).flops == 7.0 * 40);
  CHECK(bias_gelu_dropout_cost<bf16>(4, 10, Gelu::erf).bytes == 2.0 * (2 * 40 + 10));
  CHECK(gelu_cost<float>(40, Gelu::erf).flops == 5.0 * 40);
}

namespace {
/// Whether dropout keeps the element with 64-bit counter `counter` (its index plus the offset),
/// from the formula as documented, written out apart from the kernel: keys from splitmix64 of
/// the seed; the counter's high word folded into the first key (times 0x9e3779b9); the pair's
/// number (low word / 2) through MurmurHash3's 32-bit finalizer after an xor with that key, the
/// second key xored in last; the element's half of those bits (low 16 for even low words),
/// kept iff >= round(p 2^16).
bool documented_keep(double p, std::uint64_t seed, std::uint64_t counter) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  const auto key0 = static_cast<std::uint32_t>(z), key1 = static_cast<std::uint32_t>(z >> 32);
  const auto low = static_cast<std::uint32_t>(counter), high = static_cast<std::uint32_t>(counter >> 32);
  std::uint32_t h = (low >> 1) ^ (key0 ^ (high * 0x9e3779b9u));
  h = (h ^ (h >> 16)) * 0x85ebca6bu;
  h = (h ^ (h >> 13)) * 0xc2b2ae35u;
  h ^= (h >> 16) ^ key1;
  const std::uint32_t bits = (low & 1u) ? h >> 16 : h & 0xffffu;
  return bits >= static_cast<std::uint32_t>(std::floor(p * 65536.0 + 0.5));
}
}  // namespace

TEST_CASE_TEMPLATE("dropout's mask is its hash written out apart from the kernel, bit for bit, and the same as in earlier versions", T, ROOFTOP_ML_DTYPES) {
  // A change of the hash changes every user's masks (a run replayed from its seed no longer
  // drops the same elements): the kernels' mask, across a 2^32 boundary of the counter, equals
  // the formula written out here, and its first 64 bits for seed 42 and p = 0.5 are pinned.
  const std::int64_t n = 4099;
  const std::uint64_t seed = 0x5eed, offset = (std::uint64_t{7} << 32) - 1001;
  auto ones = test::Vector<T>("ones", n);
  Kokkos::deep_copy(ones, T(1.0f));
  for (const double p : {0.1, 0.5, 0.73}) {
    CAPTURE(p);
    auto y = test::poisoned_vector<T>(n);
    rooftop::dropout(Exec(), ones, y, p, seed, offset);
    const auto hy = host(y);
    for (std::int64_t i = 0; i < n; ++i) {
      CAPTURE(i);
      REQUIRE(!std::isnan(static_cast<double>(hy[i])));  // the poison: an element never written
      REQUIRE((hy[i] != 0) == documented_keep(p, seed, offset + static_cast<std::uint64_t>(i)));
    }
  }
  auto y = test::poisoned_vector<T>(64);
  rooftop::dropout(Exec(), Kokkos::subview(ones, std::make_pair(0, 64)), y, 0.5, 42);
  const auto hy = host(y);
  std::uint64_t first64 = 0;
  for (std::uint64_t i = 0; i < 64; ++i) {
    REQUIRE(!std::isnan(static_cast<double>(hy[i])));
    first64 |= std::uint64_t{hy[i] != 0} << i;
  }
  CHECK(first64 == 0x549113ef932cfbb3ull);  // the formula's, computed in Python too
}
