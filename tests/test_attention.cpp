// SPDX-License-Identifier: BSD-3-Clause
// attention: every ML dtype against a float64 reference that forms the scores, over sequence
// lengths 1, 13, 69 (no multiple of a tile), 200 and head_dim 1, 16, 64, 80, 128 (and 100, 200, 256),
// causal or not, seq_q != seq_k, empty extents; huge logits; the default scale; memory
// O(seq) at a sequence whose score matrix would take 4 GiB; that the float64 check sees a
// left-out tile of keys; the cost model; preconditions.
#include "common.hpp"

#include "../benchmarks/attention_ops.hpp"

#include <rooftop/kernels/attention.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>

using namespace rooftop;
using test::Exec;

namespace {

template <class T>
using Tensor = Kokkos::View<T****, Kokkos::LayoutRight, BackendMemory>;

struct Dims {
  std::int64_t batch, heads, seq_q, seq_k, head_dim;
};

template <class T>
Tensor<T> random_tensor(std::int64_t b, std::int64_t h, std::int64_t s, std::int64_t d, double lo = -1, double hi = 1) {
  Tensor<T> t("rooftop::test::t", b, h, s, d);
  fill_uniform(Exec(), test::flat(t), test::next_seed(), lo, hi);
  return t;
}

/// As random_tensor, one element into a larger allocation (kept alive by `keep`): rows that
/// do not start 16-byte aligned.
template <class T>
Tensor<T> misaligned_tensor(std::int64_t b, std::int64_t h, std::int64_t s, std::int64_t d, test::Vector<T>& keep) {
  keep = test::Vector<T>("rooftop::test::buffer", b * h * s * d + 1);
  fill_uniform(Exec(), keep, test::next_seed(), -1, 1);
  return Tensor<T>(keep.data() + 1, b, h, s, d);
}

template <class T>
Tensor<T> poisoned_tensor(std::int64_t b, std::int64_t h, std::int64_t s, std::int64_t d) {
  Tensor<T> t("rooftop::test::out", b, h, s, d);
  fill_nan(Exec(), test::flat(t));
  return t;
}

/// Q, K, V and O as float64 on the host, each (batch, heads, seq, head_dim) row-major.
struct Host {
  Dims dims;
  std::vector<double> q, k, v, o;
};

template <class T>
Host to_host(const Dims& dims, const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v, const Tensor<T>& o) {
  return {dims, test::host(test::flat(q)), test::host(test::flat(k)), test::host(test::flat(v)), test::host(test::flat(o))};
}

/// "" if query row (b, h, i) of O matches the float64 reference (reference::attention_row;
/// p_rounded: the probabilities were rounded to T, as on the matrix units).
template <class T>
std::string check_row(const Host& x, float scale, bool causal, std::int64_t b, std::int64_t h, std::int64_t i, bool p_rounded) {
  const Dims& n = x.dims;
  const std::int64_t bh = b * n.heads + h, d = n.head_dim;
  const std::int64_t visible = causal ? std::min(i + 1, n.seq_k) : n.seq_k;
  // Pointer arithmetic, not &x.q[...]: with no keys or head_dim 0 the vectors are empty, and
  // indexing one is undefined (UBSan's "reference binding to null pointer").
  const std::string error = reference::attention_row<T>(x.q.data() + (bh * n.seq_q + i) * d, x.k.data() + bh * n.seq_k * d,
                                                        x.v.data() + bh * n.seq_k * d, visible, d, scale,
                                                        x.o.data() + (bh * n.seq_q + i) * d, p_rounded);
  if (error.empty()) return "";
  std::ostringstream msg;
  msg << "O(" << b << ", " << h << ", " << i << ", :): " << error;
  return msg.str();
}

/// Checks every row of O.
template <class T>
void check_all(const Host& x, float scale, bool causal, bool p_rounded) {
  for (std::int64_t b = 0; b < x.dims.batch; ++b)
    for (std::int64_t h = 0; h < x.dims.heads; ++h)
      for (std::int64_t i = 0; i < x.dims.seq_q; ++i) {
        const std::string error = check_row<T>(x, scale, causal, b, h, i, p_rounded);
        REQUIRE_MESSAGE(error.empty(), error);
      }
}

/// run_and_check's Matrix for the portable driver (detail::attention_portable with the
/// backend's tiles): what hosts without AVX2 and GPUs without matrix units for T run.
struct Portable {};

/// Runs attention at `dims` with inputs uniform in [-1, 1) and checks every row: rooftop::attention,
/// with `Matrix` (MatrixAttentionTiles or smaller) its matrix-unit driver at head_dim D (tiles
/// emulated off GPUs), or with Portable the portable driver.
template <class T, int D = 0, class Matrix = void>
void run_and_check(const Dims& n, float scale, bool causal, bool misaligned = false) {
  CAPTURE(n.batch);
  CAPTURE(n.heads);
  CAPTURE(n.seq_q);
  CAPTURE(n.seq_k);
  CAPTURE(n.head_dim);
  CAPTURE(causal);
  CAPTURE(misaligned);
  test::Vector<T> keep[3];
  auto input = [&](std::int64_t s, int x) {
    return misaligned ? misaligned_tensor<T>(n.batch, n.heads, s, n.head_dim, keep[x]) : random_tensor<T>(n.batch, n.heads, s, n.head_dim);
  };
  auto q = input(n.seq_q, 0), k = input(n.seq_k, 1), v = input(n.seq_k, 2);
  auto o = poisoned_tensor<T>(n.batch, n.heads, n.seq_q, n.head_dim);
  constexpr bool portable = std::is_same_v<Matrix, Portable>, matrix_units = !std::is_void_v<Matrix> && !portable;
  if constexpr (portable) {
    detail::attention_portable<detail::AttentionTiles<Exec>>(Exec(), q, k, v, o, scale, causal);
  } else if constexpr (matrix_units) {
    REQUIRE(n.head_dim == D);
    detail::attention_matrix_units<D, Matrix>(Exec(), q, k, v, o, scale, causal);
  } else {
    rooftop::attention(Exec(), q, k, v, o, scale, causal);
  }
  // The matrix units and the host's bf16 pairs multiply V by the probabilities rounded to T.
  check_all<T>(to_host(n, q, k, v, o), scale, causal,
               matrix_units || (!portable && (detail::attention_uses_matrix_units<Exec, T>(n.head_dim) ||
                                              detail::attention_uses_bf16_pairs<Exec, T>)));
}

/// Tiles for the matrix-unit driver with one warp (on the host, one thread) or two, and tiles
/// of 16, 32 or 64 keys.
template <int W, int BK>
struct FewWarps {
  static constexpr int warps = W, keys = BK, teams_per_sm = 1;
};

/// The matrix-unit driver at head_dim D with tiles Matrix over sequence lengths of one, several
/// and partial tiles and blocks, unequal lengths, huge logits and no keys, causal or not.
template <class T, int D, class Matrix>
void check_matrix_attention() {
  CAPTURE(D);
  CAPTURE(Matrix::warps);
  CAPTURE(Matrix::keys);
  constexpr int lanes = detail::matrix_tile_lanes<Exec>;
  if (test::max_team_size() < Matrix::warps * lanes) {  // (checked with fewer warps too)
    MESSAGE("skipped: teams of " << Matrix::warps * lanes << " threads; this backend's teams hold " << test::max_team_size());
    return;
  }
  for (const bool causal : {false, true}) {
    for (const std::int64_t s : {1, 13, 69, 200}) run_and_check<T, D, Matrix>(Dims{2, 2, s, s, D}, 1.0f / std::sqrt(float(D)), causal);
    const std::int64_t unequal[][2] = {{13, 200}, {200, 13}, {69, 1}, {1, 69}};
    for (const auto& seq : unequal) run_and_check<T, D, Matrix>(Dims{1, 3, seq[0], seq[1], D}, 0.3f, causal);
    run_and_check<T, D, Matrix>(Dims{1, 2, 69, 69, D}, 100.0f, causal);
    run_and_check<T, D, Matrix>(Dims{1, 2, 13, 0, D}, 1.0f, causal);
    // Rows not 16-byte aligned: loaded element by element.
    run_and_check<T, D, Matrix>(Dims{2, 2, 69, 69, D}, 0.3f, causal, true);
  }
}

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;  // KiB on Linux
}


}  // namespace

TEST_CASE_TEMPLATE("attention matches float64 over sequence lengths and head dims, causal or not", T, ROOFTOP_ML_DTYPES) {
  const std::vector<std::int64_t> seqs = {1, 13, 69, 200};
  for (const std::int64_t d : {std::int64_t{1}, std::int64_t{16}, std::int64_t{64}, std::int64_t{80}, std::int64_t{128}})
    for (const bool causal : {false, true}) {
      for (const std::int64_t s : seqs) run_and_check<T>(Dims{2, 2, s, s, d}, 1.0f / std::sqrt(static_cast<float>(d)), causal);
      // seq_q != seq_k: queries past seq_k (top-left causal) see every key.
      const std::int64_t unequal[][2] = {{13, 200}, {200, 13}, {69, 1}, {1, 69}};
      for (const auto& seq : unequal) run_and_check<T>(Dims{1, 3, seq[0], seq[1], d}, 0.3f, causal);
    }
  // head_dim not a multiple of 16, and the largest supported (on AVX hosts both take tiles of
  // 64 keys: two whole ones and a part of one here).
  run_and_check<T>(Dims{1, 2, 69, 77, 100}, 0.1f, true);
  run_and_check<T>(Dims{1, 2, 130, 130, 200}, 0.07f, true);
  run_and_check<T>(Dims{1, 1, 69, 130, attention_max_head_dim}, 0.0625f, false);
  run_and_check<T>(Dims{1, 1, 130, 130, attention_max_head_dim}, 0.0625f, true);
}

TEST_CASE_TEMPLATE("attention on padded LayoutRight Views (Kokkos::AllowPadding) matches float64", T, ROOFTOP_ML_DTYPES) {
  // Kokkos pads a LayoutRight View's outermost stride to a multiple of 64 bytes: here each
  // batch entry's heads x seq x head_dim (3 x 69 x 13, 3 x 77 x 13 elements) is followed by a
  // gap, so the kernels must step batches by the View's stride, not by the product of extents.
  const Dims n{2, 3, 69, 77, 13};
  auto padded = [](const Tensor<T>& t) {
    Tensor<T> p(Kokkos::view_alloc("rooftop::test::padded", Kokkos::AllowPadding), t.extent(0), t.extent(1), t.extent(2), t.extent(3));
    Kokkos::deep_copy(p, t);
    return p;
  };
  for (const bool causal : {false, true}) {
    CAPTURE(causal);
    auto q = random_tensor<T>(n.batch, n.heads, n.seq_q, n.head_dim), k = random_tensor<T>(n.batch, n.heads, n.seq_k, n.head_dim),
         v = random_tensor<T>(n.batch, n.heads, n.seq_k, n.head_dim);
    auto o = poisoned_tensor<T>(n.batch, n.heads, n.seq_q, n.head_dim);
    const auto qp = padded(q), kp = padded(k), vp = padded(v), op = padded(o);
    REQUIRE(qp.stride(0) > static_cast<std::size_t>(n.heads * n.seq_q * n.head_dim));
    REQUIRE(kp.stride(0) > static_cast<std::size_t>(n.heads * n.seq_k * n.head_dim));
    rooftop::attention(Exec(), qp, kp, vp, op, 0.3f, causal);
    Kokkos::deep_copy(o, op);
    check_all<T>(to_host(n, q, k, v, o), 0.3f, causal,
                 detail::attention_uses_matrix_units<Exec, T>(n.head_dim) || detail::attention_uses_bf16_pairs<Exec, T>);
  }
}

TEST_CASE_TEMPLATE("attention's portable driver (hosts without AVX2, GPUs without matrix units) matches float64", T,
                   ROOFTOP_ML_DTYPES) {
  // rooftop::attention takes the host's vector code where the compiler targets AVX2 or AVX-512,
  // so this driver runs here only when called by name.
  for (const std::int64_t d : {std::int64_t{1}, std::int64_t{16}, std::int64_t{80}})
    for (const bool causal : {false, true}) {
      for (const std::int64_t s : {1, 13, 200}) run_and_check<T, 0, Portable>(Dims{2, 2, s, s, d}, 1.0f / std::sqrt(float(d)), causal);
      const std::int64_t unequal[][2] = {{13, 200}, {200, 13}, {69, 1}};
      for (const auto& seq : unequal) run_and_check<T, 0, Portable>(Dims{1, 3, seq[0], seq[1], d}, 0.3f, causal);
    }
  run_and_check<T, 0, Portable>(Dims{1, 2, 69, 69, 64}, 100.0f, true);  // huge logits
  run_and_check<T, 0, Portable>(Dims{1, 2, 13, 0, 64}, 1.0f, false);    // no keys: 0
  run_and_check<T, 0, Portable>(Dims{1, 1, 130, 130, attention_max_head_dim}, 0.0625f, true);  // the smallest query blocks
}

TEST_CASE_TEMPLATE("attention's matrix-unit driver (tensor-core tiles; emulated off GPUs) on this backend", T, rooftop::bf16,
                   rooftop::fp16) {
  check_matrix_attention<T, 64, FewWarps<1, 16>>();
  check_matrix_attention<T, 64, FewWarps<2, 32>>();
  check_matrix_attention<T, 128, FewWarps<1, 32>>();
  check_matrix_attention<T, 64, FewWarps<2, 64>>();  // the library's tiles of keys at 64, on 2 warps
  // The library's own tiles, where the backend runs their teams (4 warps).
  check_matrix_attention<T, 64, detail::MatrixAttentionTiles<64>>();
  check_matrix_attention<T, 128, detail::MatrixAttentionTiles<128>>();
}

TEST_CASE_TEMPLATE("attention: empty extents; no keys gives 0", T, ROOFTOP_ML_DTYPES) {
  for (const Dims& n : {Dims{0, 2, 5, 5, 16}, Dims{1, 0, 5, 5, 16}, Dims{1, 2, 0, 5, 16}, Dims{1, 2, 5, 5, 0}})
    run_and_check<T>(n, 1.0f, false);
  for (const bool causal : {false, true}) {
    auto q = random_tensor<T>(1, 2, 13, 16);
    auto kv = random_tensor<T>(1, 2, 0, 16);
    auto o = poisoned_tensor<T>(1, 2, 13, 16);
    rooftop::attention(Exec(), q, kv, kv, o, 1.0f, causal);
    for (const double x : test::host(test::flat(o))) REQUIRE(x == 0.0);  // as softmax of a fully masked row
  }
}

TEST_CASE_TEMPLATE("attention is stable at huge logits", T, ROOFTOP_ML_DTYPES) {
  // Scores up to +-100 * head_dim / 3 on average: exp of the raw scores overflows fp32 by far.
  for (const bool causal : {false, true}) {
    run_and_check<T>(Dims{1, 2, 69, 69, 64}, 100.0f, causal);
    run_and_check<T>(Dims{1, 1, 13, 200, 16}, 1e4f, causal);
  }
}

TEST_CASE_TEMPLATE("attention in place (O = Q) gives what a separate O gets", T, ROOFTOP_ML_DTYPES) {
  // Each query block reads its rows of Q before it writes them; blocks never read each other's.
  for (const bool causal : {false, true})
    for (const Dims& n : {Dims{1, 2, 300, 200, 64}, Dims{2, 1, 37, 41, 16}}) {
      CAPTURE(causal);
      CAPTURE(n.seq_q);
      auto q = random_tensor<T>(n.batch, n.heads, n.seq_q, n.head_dim);
      auto k = random_tensor<T>(n.batch, n.heads, n.seq_k, n.head_dim);
      auto v = random_tensor<T>(n.batch, n.heads, n.seq_k, n.head_dim);
      auto o = poisoned_tensor<T>(n.batch, n.heads, n.seq_q, n.head_dim);
      rooftop::attention(Exec(), q, k, v, o, 0.3f, causal);
      rooftop::attention(Exec(), q, k, v, q, 0.3f, causal);
      REQUIRE(test::host(test::flat(q)) == test::host(test::flat(o)));
    }
}

TEST_CASE("attention: default scale 1/sqrt(head_dim), and the overloads without an execution space") {
  const Dims n{2, 3, 37, 41, 64};
  auto q = random_tensor<float>(n.batch, n.heads, n.seq_q, n.head_dim);
  auto k = random_tensor<float>(n.batch, n.heads, n.seq_k, n.head_dim);
  auto v = random_tensor<float>(n.batch, n.heads, n.seq_k, n.head_dim);
  auto o = poisoned_tensor<float>(n.batch, n.heads, n.seq_q, n.head_dim);
  rooftop::attention(Exec(), q, k, v, o, true);
  check_all<float>(to_host(n, q, k, v, o), 0.125f, true, false);
  o = poisoned_tensor<float>(n.batch, n.heads, n.seq_q, n.head_dim);
  rooftop::attention(q, k, v, o, false);
  check_all<float>(to_host(n, q, k, v, o), 0.125f, false, false);
  o = poisoned_tensor<float>(n.batch, n.heads, n.seq_q, n.head_dim);
  rooftop::attention(q, k, v, o, 0.5f, true);
  check_all<float>(to_host(n, q, k, v, o), 0.5f, true, false);
}

TEST_CASE("attention's memory is O(seq): 32768 keys, whose fp32 score matrix would take 4 GiB") {
  // batch 1, head 1, seq 32768, head_dim 16: 6.9e10 FLOPs (a few seconds on 2 cores). Neither
  // the peak resident set (host memory) nor what Kokkos allocates in any memory space (device
  // memory on GPUs) may grow by more than 64 MiB (the inputs and output,
  // 8 MiB together, are allocated before), 1/64 of the score matrix; a few rows are checked
  // against float64 over all their keys.
  const Dims n{1, 1, 32768, 32768, 16};
  auto q = random_tensor<float>(1, 1, n.seq_q, n.head_dim);
  auto k = random_tensor<float>(1, 1, n.seq_k, n.head_dim);
  auto v = random_tensor<float>(1, 1, n.seq_k, n.head_dim);
  auto o = poisoned_tensor<float>(1, 1, n.seq_q, n.head_dim);
  const long before = peak_rss_kib();
  std::int64_t kokkos_bytes = 0;
  {
    const test::KokkosAllocations allocations;
    rooftop::attention(Exec(), q, k, v, o, 0.25f, false);
    Kokkos::fence();
    kokkos_bytes = allocations.peak_bytes();
  }
  const long grown_kib = peak_rss_kib() - before;
  CHECK_MESSAGE(grown_kib < 64 * 1024, "peak resident set grew by ", grown_kib, " KiB");
  CHECK_MESSAGE(kokkos_bytes < std::int64_t{64} << 20, "Kokkos allocated up to ", kokkos_bytes, " bytes more");
  // The counter sees what an op allocates: a View of the score matrix's first 256 rows, 32 MiB.
  {
    const test::KokkosAllocations allocations;
    Kokkos::View<float**, BackendMemory> rows("rows", 256, n.seq_k);
    CHECK(allocations.peak_bytes() >= std::int64_t{32} << 20);
  }
  const Host x = to_host(n, q, k, v, o);
  for (const std::int64_t i : {std::int64_t{0}, std::int64_t{1}, std::int64_t{63}, std::int64_t{64}, std::int64_t{20011},
                               n.seq_q - 1}) {
    const std::string error = check_row<float>(x, 0.25f, false, 0, 0, i, false);
    CHECK_MESSAGE(error.empty(), error);
  }
}

TEST_CASE("attention's check against float64 catches a result that left out one tile of keys among 32768") {
  // The float64 check's bound grows with the square root of the visible keys (see
  // reference::attention_row): a result computed without 32 or 128 of 32768 keys (a GPU's or
  // a CPU's tile), first or last, fails it in some of its rows (the harness checks 512); the
  // complete result is within it (its error about 1e-3 of the bound here). Sixteen query rows,
  // head_dim 16.
  const Dims n{1, 1, 16, 32768, 16};
  const float scale = 0.25f;
  auto q = random_tensor<float>(1, 1, n.seq_q, n.head_dim);
  auto k = random_tensor<float>(1, 1, n.seq_k, n.head_dim);
  auto v = random_tensor<float>(1, 1, n.seq_k, n.head_dim);
  auto o = poisoned_tensor<float>(1, 1, n.seq_q, n.head_dim);
  rooftop::attention(Exec(), q, k, v, o, scale, false);
  const Host whole = to_host(n, q, k, v, o);
  for (std::int64_t i = 0; i < n.seq_q; ++i) {
    const std::string error = check_row<float>(whole, scale, false, 0, 0, i, false);
    CHECK_MESSAGE(error.empty(), error);
  }
  for (const std::int64_t dropped : {std::int64_t{32}, std::int64_t{128}})
    for (const std::int64_t first : {std::int64_t{0}, dropped}) {  // the last tile left out, or the first
      CAPTURE(dropped);
      CAPTURE(first);
      const std::int64_t kept = n.seq_k - dropped;
      auto k_part = poisoned_tensor<float>(1, 1, kept, n.head_dim), v_part = poisoned_tensor<float>(1, 1, kept, n.head_dim);
      const auto keys = std::make_pair(first, first + kept);
      Kokkos::deep_copy(Kokkos::subview(k_part, 0, 0, Kokkos::ALL, Kokkos::ALL), Kokkos::subview(k, 0, 0, keys, Kokkos::ALL));
      Kokkos::deep_copy(Kokkos::subview(v_part, 0, 0, Kokkos::ALL, Kokkos::ALL), Kokkos::subview(v, 0, 0, keys, Kokkos::ALL));
      auto o_part = poisoned_tensor<float>(1, 1, n.seq_q, n.head_dim);
      rooftop::attention(Exec(), q, k_part, v_part, o_part, scale, false);
      const Host part = to_host(n, q, k, v, o_part);  // checked against all the keys
      int failed = 0;
      for (std::int64_t i = 0; i < n.seq_q; ++i) failed += !check_row<float>(part, scale, false, 0, 0, i, false).empty();
      CHECK(failed > 0);  // (each row alone: off by 1.3-4.6x its bound, 64 rows of two runs)
    }
}

TEST_CASE("attention_cost: 4 head_dim FLOPs per visible pair, Q K V read and O written once") {
  const Cost full = attention_cost<float>(2, 8, 1024, 512, 64, false);
  CHECK(full.flops == 4.0 * 2 * 8 * 1024 * 512 * 64);
  CHECK(full.bytes == 4.0 * 2 * 8 * 64 * (2 * 1024 + 2 * 512));
  CHECK(attention_cost<bf16>(2, 8, 1024, 512, 64, false).bytes == full.bytes / 2);
  // Causal, top-left: query i sees min(i + 1, seq_k) keys.
  CHECK(attention_cost<float>(1, 1, 100, 100, 8, true).flops == 4.0 * 8 * (100 * 101 / 2));
  CHECK(attention_cost<float>(1, 1, 100, 40, 8, true).flops == 4.0 * 8 * (40 * 41 / 2 + 60 * 40));
  CHECK(attention_cost<float>(1, 1, 40, 100, 8, true).flops == 4.0 * 8 * (40 * 41 / 2));
  // Causal with seq_q < seq_k: keys and values past seq_q are seen by no query and not read.
  CHECK(attention_cost<float>(1, 1, 40, 100, 8, true).bytes == 4.0 * 8 * (2 * 40 + 2 * 40));
  CHECK(attention_cost<float>(1, 1, 100, 40, 8, true).bytes == 4.0 * 8 * (2 * 100 + 2 * 40));
  CHECK(attention_cost<float>(1, 1, 40, 100, 8, false).bytes == 4.0 * 8 * (2 * 40 + 2 * 100));
}

TEST_CASE("preconditions: attention names the op and extents") {
  auto q = random_tensor<float>(1, 2, 13, 16), k = random_tensor<float>(1, 2, 20, 16), v = random_tensor<float>(1, 2, 20, 16);
  auto o = poisoned_tensor<float>(1, 2, 13, 16);
  CHECK_THROWS_WITH_AS(rooftop::attention(Exec(), q, k, v, poisoned_tensor<float>(1, 2, 13, 15), 1.0f, false),
                       "attention: Q is 1x2x13x16 but O is 1x2x13x15", rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::attention(Exec(), q, k, random_tensor<float>(1, 2, 21, 16), o, 1.0f, false),
                       "attention: K is 1x2x20x16 but V is 1x2x21x16", rooftop::Error);
  auto k2 = random_tensor<float>(2, 2, 20, 16);
  CHECK_THROWS_WITH_AS(rooftop::attention(Exec(), q, k2, k2, o, 1.0f, false),
                       "attention: Q is 1x2x13x16 but K is 2x2x20x16 (batch, heads and head_dim must match)", rooftop::Error);
  auto k3 = random_tensor<float>(1, 3, 20, 16);
  CHECK_THROWS_WITH_AS(rooftop::attention(Exec(), q, k3, k3, o, 1.0f, false),
                       "attention: Q is 1x2x13x16 but K is 1x3x20x16 (batch, heads and head_dim must match)", rooftop::Error);
  auto k4 = random_tensor<float>(1, 2, 20, 8);
  CHECK_THROWS_WITH_AS(rooftop::attention(Exec(), q, k4, k4, o, 1.0f, true),
                       "attention: Q is 1x2x13x16 but K is 1x2x20x8 (batch, heads and head_dim must match)", rooftop::Error);
  // O over K (or V): other query blocks would read K rows already overwritten. (O over Q is allowed.)
  CHECK_THROWS_WITH_AS(rooftop::attention(Exec(), k, k, v, k, 1.0f, false),
                       "attention: O overlaps K or V (O is 1x2x20x16): other query blocks read K and V while O is written (O may be Q)",
                       rooftop::Error);
  CHECK_THROWS_WITH_AS(rooftop::attention(Exec(), v, k, v, v, 1.0f, true), doctest::Contains("attention: O overlaps K or V"),
                       rooftop::Error);
  // O one head past Q: a query block would read Q rows another has overwritten.
  auto heads = random_tensor<float>(1, 3, 13, 16);
  using Unmanaged = Kokkos::View<float****, Kokkos::LayoutRight, BackendMemory, Kokkos::MemoryUnmanaged>;
  const Unmanaged q_heads(heads.data(), 1, 2, 13, 16), o_heads(heads.data() + 13 * 16, 1, 2, 13, 16);
  CHECK_THROWS_WITH_AS(rooftop::attention(Exec(), q_heads, k, v, o_heads, 1.0f, false),
                       "attention: Q and O overlap but are not the same elements (Q is 1x2x13x16 with strides (416, 208, 16, 1), O is "
                       "1x2x13x16 with strides (416, 208, 16, 1) from 832 bytes after Q's first element): pass the same View to "
                       "compute in place, or Views that do not overlap",
                       rooftop::Error);
  auto wide = random_tensor<float>(1, 1, 3, 257);
  CHECK_THROWS_WITH_AS(rooftop::attention(Exec(), wide, wide, wide, poisoned_tensor<float>(1, 1, 3, 257), 1.0f, false),
                       "attention: head_dim is 257, more than the 256 supported", rooftop::Error);
  for (const double x : test::host(test::flat(o))) REQUIRE(std::isnan(x));
  // Kokkos 3.4 gives a 64 x 32 x 16384 x 128 View (2^32 elements) a span of 0 and no memory (see
  // require_allocated); a Kokkos that sizes it right would allocate 16 GB: then no check.
  const Tensor<float> wrapped(Kokkos::view_alloc("wrapped", Kokkos::WithoutInitializing), 64, 32, 16384, 128);
  if (wrapped.span() < wrapped.size())
    CHECK_THROWS_WITH_AS(rooftop::attention(Exec(), wrapped, wrapped, wrapped, wrapped, 1.0f, false),
                         "attention: Q is 64x32x16384x128 but spans 0 elements: its memory was sized in 32-bit arithmetic "
                         "(Kokkos 3.4, Views of rank 3 and more)",
                         rooftop::Error);
}
