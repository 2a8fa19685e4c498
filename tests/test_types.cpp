// SPDX-License-Identifier: BSD-3-Clause
// bf16 / fp16 storage types: rounding to nearest even, NaN, Inf, overflow, subnormals, and the
// same results from conversions run inside a kernel.
#include "common.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace rooftop;

namespace {

float from_bits32(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Independent float64 references: the value of a half, and the nearest half to a double.
double half_value(std::uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}
std::uint16_t nearest_half(double d) {
  const std::uint16_t sign = std::signbit(d) ? 0x8000 : 0;
  const double a = std::fabs(d);
  if (a >= 65520.0) return sign | 0x7c00;
  int lo = 0, hi = 0x7bff;  // positive finite halves are ordered like their bits
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (half_value(static_cast<std::uint16_t>(mid)) <= a) lo = mid; else hi = mid - 1;
  }
  int best = lo;
  if (lo < 0x7bff) {
    const double below = a - half_value(static_cast<std::uint16_t>(lo)), above = half_value(static_cast<std::uint16_t>(lo + 1)) - a;
    if (above < below || (above == below && (lo & 1))) best = lo + 1;
  }
  return static_cast<std::uint16_t>(sign | best);
}

/// The bf16 nearest to a finite float, ties to even, found by distances in double rather than
/// by bf16(float)'s carry into the upper half: the float's bits truncated (toward zero) or the
/// next bf16 away from zero, whose value past the largest finite one is 2^128 (so the overflow
/// threshold sits half way, where round to nearest even puts it).
std::uint16_t nearest_bf16(float f) {
  const std::uint32_t down = compat::bit_cast<std::uint32_t>(f) & 0xffff0000u, up = down + 0x10000u;
  const double a = std::fabs(static_cast<double>(f));
  const double below = a - std::fabs(static_cast<double>(from_bits32(down)));
  const double above = ((up & 0x7fffffffu) == 0x7f800000u ? 0x1p128 : std::fabs(static_cast<double>(from_bits32(up)))) - a;
  const bool round_up = above < below || (above == below && (down & 0x10000u));
  return static_cast<std::uint16_t>((round_up ? up : down) >> 16);
}

// A finite float of any sign and normal exponent for the narrowing tests; half of them with the
// low 16 bits (what bf16 drops) at a rounding boundary: zero, one, just below, at and just above
// the tie, the largest, where a wrong carry or tie rule shows.
template <class Rng>
float narrowing_input(Rng& rng) {
  std::uint32_t u = (static_cast<std::uint32_t>(rng()) & 0x807fffffu) | ((static_cast<std::uint32_t>(rng() % 254) + 1) << 23);
  constexpr std::uint32_t boundaries[] = {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xfffeu, 0xffffu};
  if (rng() % 2) u = (u & 0xffff0000u) | boundaries[rng() % std::size(boundaries)];
  return from_bits32(u);
}

}  // namespace

TEST_CASE("fp16: every half converts to float exactly and back to itself") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16::from_bits(static_cast<std::uint16_t>(h));
    const int exponent = (h >> 10) & 31, mantissa = h & 1023;
    if (exponent == 31 && mantissa != 0) {
      REQUIRE(std::isnan(f));
      REQUIRE(std::isnan(float(fp16(f))));
      continue;
    }
    if (exponent == 31) REQUIRE(std::isinf(f));
    else REQUIRE(static_cast<double>(f) == half_value(static_cast<std::uint16_t>(h)));
    REQUIRE(std::signbit(f) == static_cast<bool>(h & 0x8000));
    REQUIRE(fp16(f).bits == h);
  }
}

TEST_CASE("fp16: rounding to nearest even, overflow, subnormals, NaN") {
  CHECK(fp16(1.0f + 0x1p-11f).bits == 0x3c00);               // tie, rounds to even (down)
  CHECK(fp16(1.0f + 3 * 0x1p-11f).bits == 0x3c02);           // tie, rounds to even (up)
  CHECK(fp16(1.0f + 0x1p-11f + 0x1p-20f).bits == 0x3c01);    // just above the tie
  CHECK(fp16(65504.0f).bits == 0x7bff);                      // largest finite
  CHECK(fp16(65519.0f).bits == 0x7bff);
  CHECK(fp16(65520.0f).bits == 0x7c00);                      // tie with 65536 rounds to Inf
  CHECK(fp16(1e10f).bits == 0x7c00);
  CHECK(fp16(-1e10f).bits == 0xfc00);
  CHECK(fp16(std::numeric_limits<float>::infinity()).bits == 0x7c00);
  CHECK(fp16(0x1p-24f).bits == 0x0001);                      // smallest subnormal
  CHECK(fp16(0x1p-25f).bits == 0x0000);                      // tie with zero: to even
  CHECK(fp16(0x1p-25f + 0x1p-40f).bits == 0x0001);
  CHECK(fp16(3 * 0x1p-25f).bits == 0x0002);                  // 1.5 ulp: tie to even (2)
  CHECK(fp16(0x1p-14f - 0x1p-25f).bits == 0x0400);           // rounds up into the normals
  CHECK(fp16(-0.0f).bits == 0x8000);
  CHECK(std::isnan(float(fp16(std::nanf("")))));
  CHECK(std::isnan(float(fp16(-std::nanf("")))));
  CHECK(std::isnan(float(fp16(from_bits32(0x7f800001u)))));  // signalling NaN stays NaN
}

TEST_CASE("fp16: random floats round to the nearest half") {
  std::mt19937_64 rng(test::next_seed());
  for (int i = 0; i < 200000; ++i) {
    // Magnitudes from 2^-30 to 2^17: subnormal, normal and overflowing halves.
    const std::uint32_t u = static_cast<std::uint32_t>(rng()) & 0x807fffffu;
    const std::uint32_t exponent = 97 + static_cast<std::uint32_t>(rng() % 48);
    const float f = from_bits32(u | (exponent << 23));
    REQUIRE_MESSAGE(fp16(f).bits == nearest_half(f), "f = " << f);
  }
}

TEST_CASE("bf16: random floats round to the nearest bf16, subnormal ones too") {
  std::mt19937_64 rng(test::next_seed());
  for (int i = 0; i < 200000; ++i) {
    float f = narrowing_input(rng);
    if (i % 8 == 0) f = from_bits32(compat::bit_cast<std::uint32_t>(f) & 0x807fffffu);  // subnormal (or zero)
    REQUIRE_MESSAGE(bf16(f).bits == nearest_bf16(f), "f = " << f << " (bits " << std::hex << compat::bit_cast<std::uint32_t>(f) << ")");
  }
}

TEST_CASE("bf16: rounding to nearest even, overflow, subnormals, NaN") {
  CHECK(bf16(1.0f).bits == 0x3f80);
  CHECK(bf16(from_bits32(0x3f808000u)).bits == 0x3f80);  // tie, even stays
  CHECK(bf16(from_bits32(0x3f818000u)).bits == 0x3f82);  // tie, odd rounds up
  CHECK(bf16(from_bits32(0x3f808001u)).bits == 0x3f81);  // above the tie
  CHECK(bf16(from_bits32(0x7f7fffffu)).bits == 0x7f80);  // max float rounds to Inf
  CHECK(bf16(from_bits32(0x7f7f7fffu)).bits == 0x7f7f);  // below the tie stays finite
  CHECK(bf16(-std::numeric_limits<float>::infinity()).bits == 0xff80);
  CHECK(bf16(from_bits32(0x00018000u)).bits == 0x0002);  // subnormal tie to even
  CHECK(bf16(from_bits32(0x00010001u)).bits == 0x0001);
  CHECK(float(bf16::from_bits(0x0001)) == from_bits32(0x00010000u));
  CHECK(std::isnan(float(bf16(std::nanf("")))));
  CHECK(std::isnan(float(bf16(from_bits32(0x7f800001u)))));  // low-payload NaN must not become Inf
  CHECK(std::isnan(float(bf16(from_bits32(0xffffffffu)))));
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16::from_bits(static_cast<std::uint16_t>(h));
    if (!std::isnan(f)) REQUIRE(bf16(f).bits == h);
  }
}

TEST_CASE_TEMPLATE("from double: rounded once, to the nearest (ties to even), not through the nearest float", T, rooftop::bf16,
                   rooftop::fp16) {
  // The nearest of the neighbours of h (by their bits, same sign) to d, ties to even bits.
  auto nearest = [](double d, std::uint16_t h) {
    std::uint16_t best = h;
    for (const int step : {-1, 1}) {
      const auto c = static_cast<std::uint16_t>(h + step);
      if ((c & 0x7fff) == 0x7fff || ((c ^ h) & 0x8000) != 0) continue;  // past zero or the sign
      const double dc = std::fabs(static_cast<double>(float(T::from_bits(c))) - d);
      const double db = std::fabs(static_cast<double>(float(T::from_bits(best))) - d);
      if (!std::isnan(float(T::from_bits(c))) && (dc < db || (dc == db && (c & 1) == 0))) best = c;
    }
    return best;
  };
  // Just above and below each tie between neighbours, by less than a float can tell: the
  // float nearest to d is the tie itself, which a second rounding takes to even.
  CHECK(bf16(1.0 + 0x1p-8 + 0x1p-40).bits == 0x3f81);
  CHECK(bf16(1.0 + 0x1p-8 - 0x1p-40).bits == 0x3f80);
  CHECK(fp16(1.0 + 0x1p-11 + 0x1p-40).bits == 0x3c01);
  CHECK(fp16(-(1.0 + 0x1p-11 + 0x1p-40)).bits == 0xbc01);
  std::mt19937_64 rng(test::next_seed());
  const std::uint16_t largest = std::is_same_v<T, bf16> ? 0x7f7f : 0x7bff;
  for (int i = 0; i < 200000; ++i) {
    const auto h = static_cast<std::uint16_t>(rng() % largest);  // finite, below the largest
    const double a = float(T::from_bits(h)), b = float(T::from_bits(static_cast<std::uint16_t>(h + 1)));
    const double nudge = (b - a) * std::ldexp(1.0, -20 - static_cast<int>(rng() % 30)) * (rng() & 1 ? 1 : -1);
    const double d = ((rng() & 1) ? (a + b) / 2 + nudge : a + (b - a) * std::ldexp(static_cast<double>(rng() >> 11), -53)) *
                     (rng() & 1 ? 1 : -1);
    const std::uint16_t got = T(d).bits;
    REQUIRE_MESSAGE(got == nearest(d, got), "d = " << d);
  }
  CHECK(std::isnan(float(T(std::nan("")))));
  CHECK(float(T(1e300)) == std::numeric_limits<float>::infinity());
  CHECK(float(T(-1e-300)) == 0.0f);
  CHECK(std::signbit(float(T(-1e-300))));
}

TEST_CASE_TEMPLATE("conversions inside a kernel match the host", T, rooftop::bf16, rooftop::fp16) {
  const std::int64_t n = 1 << 16;
  Kokkos::View<float*, BackendMemory> in("in", n), back("back", n);
  Kokkos::View<T*, BackendMemory> stored("stored", n);
  const std::uint64_t seed = test::next_seed();
  Kokkos::parallel_for(
      "convert", Kokkos::RangePolicy<test::Exec>(0, n), KOKKOS_LAMBDA(const std::int64_t i) {
        // Wide range of magnitudes, including subnormal and overflowing ones, and both signs.
        const std::uint32_t bits = static_cast<std::uint32_t>(hash64(seed, i));
        in(i) = compat::bit_cast<float>((bits & 0x807fffffu) | ((90u + (bits >> 8) % 60u) << 23));
        stored(i) = T(in(i));
        back(i) = float(stored(i));
      });
  auto h_in = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), in);
  auto h_stored = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), stored);
  auto h_back = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), back);
  for (std::int64_t i = 0; i < n; ++i) {
    REQUIRE(h_stored(i).bits == T(h_in(i)).bits);
    const float expected = float(h_stored(i));
    REQUIRE(std::memcmp(&h_back(i), &expected, 4) == 0);
  }
}

TEST_CASE_TEMPLATE("conversions inside a kernel: every 2-byte pattern and the special floats", T, rooftop::bf16, rooftop::fp16) {
  // On GPUs the conversions are the hardware's (core/types.hpp): every stored pattern must
  // widen to the host's value (NaN to a NaN), and the floats at the edges (zeros, Inf, NaN
  // with payloads and signs, float subnormals, the largest finite values, ties between two
  // neighbours, the first values that round to Inf) must narrow to the host's bits.
  std::vector<float> special = {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                from_bits32(0x7fc00000u), from_bits32(0xffc00000u), from_bits32(0x7f800001u), from_bits32(0xff812345u),
                                from_bits32(0x7fbfffffu), from_bits32(0x00000001u), from_bits32(0x807fffffu), from_bits32(0x00400000u),
                                std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                                65504.0f, 65519.99f, 65520.0f, -65520.0f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, -0x1p-26f, 0x1p-14f,
                                0x1.ffcp-15f, 1.0f + 0x1p-11f, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f, 1.0f + 0x3p-11f, from_bits32(0x3f808000u),
                                from_bits32(0x3f818000u), from_bits32(0x7f7f8000u), from_bits32(0x7f7f7fffu)};
  const auto n_special = static_cast<std::int64_t>(special.size()), n_bits = std::int64_t{1} << 16;
  Kokkos::View<float*, BackendMemory> in("in", n_special), widened("widened", n_bits);
  Kokkos::View<T*, BackendMemory> narrowed("narrowed", n_special);
  Kokkos::deep_copy(in, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(special.data(), special.size()));
  Kokkos::parallel_for(
      "convert", Kokkos::RangePolicy<test::Exec>(0, n_bits), KOKKOS_LAMBDA(const std::int64_t i) {
        widened(i) = float(T::from_bits(static_cast<std::uint16_t>(i)));
        if (i < n_special) narrowed(i) = T(in(i));
      });
  auto h_widened = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), widened);
  auto h_narrowed = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), narrowed);
  for (std::int64_t i = 0; i < n_bits; ++i) {
    const float want = T::from_bits(static_cast<std::uint16_t>(i));
    CAPTURE(i);
    if (std::isnan(want)) {
      REQUIRE(std::isnan(h_widened(i)));
    } else {
      REQUIRE(std::memcmp(&h_widened(i), &want, 4) == 0);
    }
  }
  for (std::int64_t i = 0; i < n_special; ++i) {
    CAPTURE(special[i]);
    REQUIRE(h_narrowed(i).bits == T(special[i]).bits);
  }
}

TEST_CASE_TEMPLATE("one-value conversions on the host match the plain ones", T, rooftop::bf16, rooftop::fp16) {
  // cpu::to_compute (vpinsrw for bf16, F16C for fp16 where compiled for them): every 2-byte
  // pattern, through memory as spmv reads its values and x; NaN stays NaN.
  std::vector<T> all(65536);
  for (std::uint32_t h = 0; h < 65536; ++h) all[h] = T::from_bits(static_cast<std::uint16_t>(h));
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float got = cpu::to_compute(all[h]), expected = float(all[h]);
    if (std::isnan(expected)) REQUIRE(std::isnan(got));
    else REQUIRE_MESSAGE(std::memcmp(&got, &expected, 4) == 0, "bits " << h);
  }
}

TEST_CASE_TEMPLATE("block conversions on the host match element by element", T, rooftop::bf16, rooftop::fp16) {
  // cpu::widen and cpu::narrow (AVX-512, AVX2 / F16C where compiled for them, else the element loop):
  // every 2-byte pattern widened, and random floats over every magnitude (half at bf16's
  // rounding boundaries) plus the special values narrowed, at lengths that leave each vector
  // loop a tail.
  std::vector<T> all(65536);
  for (std::uint32_t h = 0; h < 65536; ++h) all[h] = T::from_bits(static_cast<std::uint16_t>(h));
  std::vector<float> wide(65536 + 1, -1.0f);
  cpu::widen(all.data(), wide.data(), 65535);
  REQUIRE(wide[65535] == -1.0f);  // nothing past n
  for (std::uint32_t h = 0; h < 65535; ++h) {
    const float expected = float(all[h]);
    if (std::isnan(expected)) REQUIRE(std::isnan(wide[h]));
    else REQUIRE(std::memcmp(&wide[h], &expected, 4) == 0);
  }
  std::mt19937_64 rng(test::next_seed());
  const float specials[] = {0.0f, -0.0f, 1.0f, from_bits32(0x3f808000u), from_bits32(0x3f818000u), 65504.0f, 65520.0f,
                            0x1p-25f, from_bits32(0x7f7fffffu), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::nanf(""), from_bits32(0x7f800001u),
                            from_bits32(0xffffffffu), from_bits32(0x7fbfffffu),
                            // subnormals (AVX512-BF16's conversion flushes them; narrow must not)
                            from_bits32(0x00018000u), from_bits32(0x807fffffu)};
  for (const std::int64_t n : {1, 7, 15, 16, 17, 31, 1000, 4099}) {
    std::vector<float> in(static_cast<std::size_t>(n));
    for (auto& f : in) f = narrowing_input(rng);
    for (std::size_t i = 0; i < std::size(specials) && i < in.size(); ++i) in[(i * 7919) % in.size()] = specials[i];
    std::vector<T> out(static_cast<std::size_t>(n) + 1, T::from_bits(0x1234));
    cpu::narrow(in.data(), out.data(), n);
    REQUIRE(out[static_cast<std::size_t>(n)].bits == 0x1234);
    for (std::int64_t i = 0; i < n; ++i) {
      const T expected(in[static_cast<std::size_t>(i)]);
      // F16C keeps a NaN's payload where fp16(float) gives the canonical quiet NaN; bf16
      // matches bit for bit.
      if (std::is_same_v<T, fp16> && std::isnan(in[static_cast<std::size_t>(i)])) REQUIRE(std::isnan(float(out[static_cast<std::size_t>(i)])));
      else REQUIRE_MESSAGE(out[static_cast<std::size_t>(i)].bits == expected.bits, "f = " << in[static_cast<std::size_t>(i)] << ", n = " << n);
    }
  }
}

#if defined(ROOFTOP_HAS_AVX2_LANES)
TEST_CASE("bf16 pairs of registers narrow as bf16(float) does, NaN in either register or none") {
  // cpu::merge_pairs: one compare finds a NaN in either register, and the blends that quiet it
  // run only then (the others round in 16-bit lanes); random floats of every magnitude, half at
  // rounding boundaries, and the special values, each in the even or the odd register, alone or
  // with a NaN beside it.
  std::mt19937_64 rng(test::next_seed());
  const float specials[] = {0.0f, -0.0f, from_bits32(0x3f808000u), from_bits32(0x3f818000u), from_bits32(0x7f7fffffu),
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            from_bits32(0x00018000u), from_bits32(0x807fffffu), std::nanf(""), from_bits32(0x7f800001u),
                            from_bits32(0xffffffffu), from_bits32(0x7fbfffffu), from_bits32(0x7fff8000u)};
  for (int trial = 0; trial < 4096; ++trial) {
    float values[16];
    for (auto& f : values) f = narrowing_input(rng);
    if (trial % 2) values[rng() % 16] = specials[rng() % std::size(specials)];
    if (trial % 3 == 0) values[rng() % 16] = specials[rng() % std::size(specials)];
    float even[8], odd[8];
    for (int i = 0; i < 8; ++i) {
      even[i] = values[2 * i];
      odd[i] = values[2 * i + 1];
    }
    std::uint16_t got[16];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(got), cpu::merge_pairs(_mm256_loadu_ps(even), _mm256_loadu_ps(odd)));
    for (int i = 0; i < 16; ++i) REQUIRE_MESSAGE(got[i] == bf16(values[i]).bits, "f = " << values[i] << ", trial " << trial);
  }
}
#endif

TEST_CASE("fill_integers: integer Views take the integers themselves, over ranges of any width") {
  // Through float, ids near 5e7 would round (to multiples of 4) and could reach hi + 1.
  Kokkos::View<std::int64_t*, BackendMemory> ids("ids", 100000);
  fill_integers(test::Exec(), ids, test::next_seed(), 0, 49999999);
  const auto h = test::host_view(ids);
  std::int64_t low = h(0), high = h(0), odd_above_2_25 = 0;
  for (std::size_t i = 0; i < h.extent(0); ++i) {
    low = std::min(low, h(i));
    high = std::max(high, h(i));
    odd_above_2_25 += h(i) > (1 << 25) && h(i) % 2 != 0;
  }
  CHECK(low >= 0);
  CHECK(high <= 49999999);
  CHECK(odd_above_2_25 > 10000);
  // bf16 from an integer past 2^24 rounds once: 2^24 + 2^16 + 1 is above the tie between 2^24
  // and 2^24 + 2^17 (through float it was the tie itself, rounded down to even).
  CHECK(rooftop::detail::integer_as<bf16>((1 << 24) + (1 << 16) + 1).bits == bf16(static_cast<float>((1 << 24) + (1 << 17))).bits);
  // The whole int range: its width (2^32) overflowed an int before.
  Kokkos::View<int*, BackendMemory> wide("wide", 100000);
  fill_integers(test::Exec(), wide, test::next_seed(), std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
  const auto hw = test::host_view(wide);
  std::int64_t negative = 0, above_2_30 = 0;
  for (std::size_t i = 0; i < hw.extent(0); ++i) {
    negative += hw(i) < 0;
    above_2_30 += hw(i) > (1 << 30);
  }
  CHECK(negative > 40000);
  CHECK(above_2_30 > 15000);
  CHECK_THROWS_WITH_AS(fill_integers(test::Exec(), wide, 1, 5, 4), "fill_integers: lo is 5 but hi is 4 (expected lo <= hi)", rooftop::Error);
}

TEST_CASE("dtype names round-trip and unknown names are rejected") {
  for (DType d : {DType::fp64, DType::fp32, DType::bf16, DType::fp16}) CHECK(parse_dtype(dtype_name(d)) == d);
  CHECK_THROWS_WITH_AS(parse_dtype("int8"), doctest::Contains("unknown dtype 'int8'"), std::invalid_argument);
}
