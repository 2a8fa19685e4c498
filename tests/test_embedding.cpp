// SPDX-License-Identifier: BSD-3-Clause
// embedding: exact gathers for every dtype and both id types; out-of-range ids are an error
// naming the token, never an out-of-bounds read; preconditions.
#include "common.hpp"

#include <rooftop/kernels/embedding.hpp>

#include <cmath>
#include <limits>

using namespace rooftop;
using test::Exec;
using test::host;

TEST_CASE_TEMPLATE("embedding gathers rows exactly (plain and streaming stores)", T, ROOFTOP_DTYPES) {
  for (const std::size_t threshold : test::store_thresholds)
  for (const std::int64_t dim : {1, 13, 768 + 5}) {
    for (const std::int64_t tokens : test::sizes) {
      if (tokens > 100000) continue;  // (tokens, dim) of the large size would be gigabytes
      CAPTURE(threshold);
      CAPTURE(dim);
      CAPTURE(tokens);
      test::StreamingThreshold stores(threshold);
      const std::int64_t vocab = 1000;
      auto table = test::random_matrix<T>(vocab, dim);
      test::Vector<std::int64_t> ids64("ids", tokens);
      test::Vector<std::int32_t> ids32("ids", tokens);
      fill_integers(Exec(), ids64, test::next_seed(), 0, vocab - 1);
      Kokkos::deep_copy(ids32, 0);
      Kokkos::parallel_for(Kokkos::RangePolicy<Exec>(0, tokens), KOKKOS_LAMBDA(const std::int64_t t) {
        ids32(t) = static_cast<std::int32_t>(ids64(t));
      });
      const auto ht = host(table);
      const auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ids64);
      auto out = test::poisoned_matrix<T>(tokens, dim);
      rooftop::embedding(Exec(), table, ids64, out);
      auto ho = host(out);
      for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t c = 0; c < dim; ++c) REQUIRE(ho[t * dim + c] == ht[hid(t) * dim + c]);
      out = test::poisoned_matrix<T>(tokens, dim);
      rooftop::embedding(Exec(), table, ids32, out);
      CHECK(host(out) == ho);
    }
  }
}

TEST_CASE("embedding moves integer values exactly (a gather does no arithmetic)") {
  // int64 values above 2^53 would not survive a trip through float or double. 4096 tokens of a
  // 1000-row table with rows of 96 int64 (768 bytes): the host's grouped gather; 7 tokens: the
  // gather in token order.
  const std::int64_t vocab = 1000, dim = 96;
  test::Matrix<std::int64_t> table("table", vocab, dim);
  const auto ht = Kokkos::create_mirror_view(table);
  const std::uint64_t seed = test::next_seed();
  for (std::int64_t v = 0; v < vocab; ++v)
    for (std::int64_t c = 0; c < dim; ++c) ht(v, c) = static_cast<std::int64_t>(hash64(seed, v * dim + c) >> 2 | 1);
  Kokkos::deep_copy(table, ht);
  for (const std::int64_t tokens : {7, 4096}) {
    CAPTURE(tokens);
    test::Vector<std::int32_t> ids("ids", tokens);
    fill_integers(Exec(), ids, test::next_seed(), 0, static_cast<int>(vocab - 1));
    test::Matrix<std::int64_t> out("out", tokens, dim);
    Kokkos::deep_copy(out, -1);
    rooftop::embedding(Exec(), table, ids, out);
    const auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ids);
    const auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t c = 0; c < dim; ++c) REQUIRE(ho(t, c) == ht(hid(t), c));
  }
}

TEST_CASE_TEMPLATE("embedding with LayoutLeft tables and outputs (rows not contiguous)", T, ROOFTOP_DTYPES) {
  using Left = Kokkos::View<T**, Kokkos::LayoutLeft, BackendMemory>;
  const std::int64_t vocab = 100, dim = 13, tokens = 37;
  const auto right_table = test::random_matrix<T>(vocab, dim);
  test::Vector<std::int32_t> ids("ids", tokens);
  fill_integers(Exec(), ids, test::next_seed(), 0, vocab - 1);
  const auto ht = host(right_table);
  const auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ids);
  Left left_table("table", vocab, dim);
  Kokkos::deep_copy(left_table, right_table);
  for (const bool left_out : {false, true}) {
    CAPTURE(left_out);
    auto out = test::poisoned_matrix<T>(tokens, dim);
    if (left_out) {
      Left o("out", tokens, dim);
      Kokkos::deep_copy(o, out);  // poisoned
      rooftop::embedding(Exec(), right_table, ids, o);
      Kokkos::deep_copy(out, o);
    } else {
      rooftop::embedding(Exec(), left_table, ids, out);
    }
    const auto ho = host(out);
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t c = 0; c < dim; ++c) REQUIRE(ho[t * dim + c] == ht[hid(t) * dim + c]);
  }
}

TEST_CASE_TEMPLATE("embedding copies every 2-byte pattern bit for bit, signaling NaNs too, whatever the layouts", T, rooftop::bf16,
                   rooftop::fp16) {
  const std::int64_t vocab = 64, dim = 1024;  // every pattern once
  auto hv = Kokkos::create_mirror_view(test::poisoned_matrix<T>(vocab, dim));
  for (std::int64_t v = 0; v < vocab; ++v)
    for (std::int64_t c = 0; c < dim; ++c) hv(v, c) = T::from_bits(static_cast<std::uint16_t>(v * dim + c));
  test::Matrix<T> right("table", vocab, dim);
  Kokkos::deep_copy(right, hv);
  Kokkos::View<T**, Kokkos::LayoutLeft, BackendMemory> left("table", vocab, dim);
  Kokkos::deep_copy(left, right);
  test::Vector<std::int32_t> ids("ids", vocab);
  auto hid = Kokkos::create_mirror_view(ids);
  for (std::int64_t t = 0; t < vocab; ++t) hid(t) = static_cast<std::int32_t>((t * 37 + 11) % vocab);
  Kokkos::deep_copy(ids, hid);
  for (const std::size_t threshold : test::store_thresholds)
    for (const bool left_table : {false, true}) {
      CAPTURE(threshold);
      CAPTURE(left_table);
      test::StreamingThreshold stores(threshold);
      auto out = test::poisoned_matrix<T>(vocab, dim);
      if (left_table) {
        rooftop::embedding(Exec(), left, ids, out);
      } else {
        rooftop::embedding(Exec(), right, ids, out);
      }
      const auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
      for (std::int64_t t = 0; t < vocab; ++t)
        for (std::int64_t c = 0; c < dim; ++c)
          if (ho(t, c).bits != hv(hid(t), c).bits) REQUIRE(ho(t, c).bits == hv(hid(t), c).bits);
    }
}

TEST_CASE("embedding: an out-of-range id throws, naming the first bad token; no read past the table") {
  // Rows of 64 bytes gathered in token order, of 4 KB grouped by buckets of 128 rows
  // (detail::embedding_grouped): one bucket, and four; the first bad token in the first and in
  // the second half of the tokens (each half sorted by a thread of its own where there are two).
  for (const std::int64_t dim : {16, 1024})
  for (const std::int64_t vocab : {50, 500}) {
    const std::int64_t tokens = 12000;
    auto table = test::random_matrix<float>(vocab, dim);
    for (const std::size_t threshold : test::store_thresholds)
    for (const std::int64_t first_bad : {1234, 7000})
    for (const std::int64_t bad_id : {vocab, std::int64_t{-1}, std::int64_t{1} << 40}) {
      CAPTURE(dim);
      CAPTURE(vocab);
      CAPTURE(threshold);
      CAPTURE(first_bad);
      CAPTURE(bad_id);
      test::StreamingThreshold stores(threshold);
      test::Vector<std::int64_t> ids("ids", tokens);
      fill_integers(Exec(), ids, test::next_seed(), 0, vocab - 1);
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ids);
      h(first_bad) = bad_id;
      h(tokens - 1) = bad_id;
      Kokkos::deep_copy(ids, h);
      auto out = test::poisoned_matrix<float>(tokens, dim);
      CHECK_THROWS_WITH_AS(rooftop::embedding(Exec(), table, ids, out),
                           ("embedding: ids(" + std::to_string(first_bad) + ") is " + std::to_string(bad_id) + ", outside the table's " +
                            std::to_string(vocab) + " rows (table is " + std::to_string(vocab) + "x" + std::to_string(dim) + ")").c_str(),
                           rooftop::Error);
      // Good tokens were gathered; bad ones are zero, not garbage.
      const auto ho = host(out), ht = host(table);
      std::int64_t wrong = 0;
      for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t c = 0; c < dim; ++c)
          wrong += ho[t * dim + c] != (t == first_bad || t == tokens - 1 ? 0.0 : ht[h(t) * dim + c]);
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("embedding: an out-of-range int32 id throws, naming the first bad token") {
  const std::int64_t tokens = 3000, vocab = 40, dim = 24;
  auto table = test::random_matrix<float>(vocab, dim);
  for (const std::int32_t bad_id : {std::int32_t{40}, std::int32_t{-1}, std::numeric_limits<std::int32_t>::min()}) {
    CAPTURE(bad_id);
    test::Vector<std::int32_t> ids("ids", tokens);
    fill_integers(Exec(), ids, test::next_seed(), 0, vocab - 1);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ids);
    h(2000) = bad_id;
    Kokkos::deep_copy(ids, h);
    auto out = test::poisoned_matrix<float>(tokens, dim);
    CHECK_THROWS_WITH_AS(rooftop::embedding(Exec(), table, ids, out),
                         ("embedding: ids(2000) is " + std::to_string(bad_id) + ", outside the table's 40 rows (table is 40x24)").c_str(),
                         rooftop::Error);
    const auto ho = host(out), ht = host(table);
    std::int64_t wrong = 0;
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t c = 0; c < dim; ++c) wrong += ho[t * dim + c] != (t == 2000 ? 0.0 : ht[h(t) * dim + c]);
    CHECK(wrong == 0);
  }
}

TEST_CASE("preconditions: embedding names the op and extents") {
  auto table = test::random_matrix<float>(10, 8);
  test::Vector<std::int32_t> ids("ids", 5);
  auto out = test::poisoned_matrix<float>(5, 7);
  CHECK_THROWS_WITH_AS(rooftop::embedding(Exec(), table, ids, out),
                       "embedding: table is 10x8 and ids is 5 but out is 5x7 (expected 5x8)", rooftop::Error);
  auto out4 = test::poisoned_matrix<float>(4, 8);
  CHECK_THROWS_WITH_AS(rooftop::embedding(Exec(), table, ids, out4),
                       "embedding: table is 10x8 and ids is 5 but out is 4x8 (expected 5x8)", rooftop::Error);
  // Gathering into the table itself, or into rows that are all one row, would race.
  const auto before = host(table);
  CHECK_THROWS_WITH_AS(rooftop::embedding(Exec(), table, ids, Kokkos::subview(table, std::make_pair(5, 10), Kokkos::ALL)),
                       "embedding: table and out overlap (table is 10x8 with strides (8, 1), out is 5x8 with strides (8, 1)): out would "
                       "be written while table is read",
                       rooftop::Error);
  const Kokkos::View<float**, Kokkos::LayoutStride, BackendMemory> one_row(out4.data(), Kokkos::LayoutStride(5, 0, 8, 1));
  CHECK_THROWS_WITH_AS(rooftop::embedding(Exec(), table, ids, one_row),
                       "embedding: out is 5x8 with strides (0, 1): its strides do not nest, so its elements may share memory and writes to them could race",
                       rooftop::Error);
  CHECK(host(table) == before);
  for (double v : host(out4)) REQUIRE(std::isnan(v));
  // ids read from memory the gather writes.
  auto out5 = test::poisoned_matrix<float>(5, 8);
  const Kokkos::View<std::int32_t*, BackendMemory> ids_in_out(reinterpret_cast<std::int32_t*>(out5.data()), 5);
  CHECK_THROWS_WITH_AS(rooftop::embedding(Exec(), table, ids_in_out, out5),
                       "embedding: ids and out overlap (ids is 5 with strides (1), out is 5x8 with strides (8, 1)): out would be "
                       "written while ids is read",
                       rooftop::Error);
}

TEST_CASE_TEMPLATE("embedding reads a const RandomAccess table (on CUDA: values, no addresses)", T, ROOFTOP_DTYPES) {
  // On CUDA such a View's operator() returns a value read through the texture path, so a
  // kernel that took &table(id, 0) would not compile; elsewhere the trait changes nothing.
  const std::int64_t vocab = 300, dim = 768, tokens = 2000;  // enough tokens for the host's grouped path
  auto table = test::random_matrix<T>(vocab, dim);
  const Kokkos::View<const T**, Kokkos::LayoutRight, BackendMemory, Kokkos::MemoryTraits<Kokkos::RandomAccess>> traced_table = table;
  test::Vector<std::int64_t> ids("ids", tokens);
  fill_integers(Exec(), ids, test::next_seed(), 0, vocab - 1);
  auto plain = test::poisoned_matrix<T>(tokens, dim), traced = test::poisoned_matrix<T>(tokens, dim);
  rooftop::embedding(Exec(), table, ids, plain);
  rooftop::embedding(Exec(), traced_table, ids, traced);
  const auto hp = host(plain), ht = host(table);
  const auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ids);
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t c = 0; c < dim; ++c) REQUIRE(hp[t * dim + c] == ht[hid(t) * dim + c]);
  CHECK(host(traced) == hp);
}
