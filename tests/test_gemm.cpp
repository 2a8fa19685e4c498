// SPDX-License-Identifier: BSD-3-Clause
// gemm: every dtype, op = none/transpose, LayoutRight/LayoutLeft, batched; sizes 1, odd, not a
// multiple of any tile, K = 0; beta = 0 never reads C (NaN in C does not propagate); both
// drivers (the GPU one run here with small teams); preconditions.
#include "common.hpp"

#include "../benchmarks/ceilings.hpp"
#include "../benchmarks/reference.hpp"

#include <rooftop/kernels/gemm.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

using namespace rooftop;
using test::Exec;

namespace {

template <class T, class Layout>
using Mat = Kokkos::View<T**, Layout, BackendMemory>;

/// A rows x cols View of T with uniform values in [-1, 1) (through a contiguous rank-1 View).
template <class T, class Layout>
Mat<T, Layout> random_mat(std::int64_t rows, std::int64_t cols) {
  Mat<T, Layout> m("m", rows, cols);
  test::Vector<T> flat_values = test::random_vector<T>(rows * cols);
  Kokkos::View<T*, BackendMemory, Kokkos::MemoryUnmanaged> flat(m.data(), m.size());
  Kokkos::deep_copy(flat, flat_values);
  return m;
}

/// Element (i, j) of a rank-2 or rank-3 (batch b) host View as float64.
template <class H>
double at(const H& h, std::int64_t b, std::int64_t i, std::int64_t j) {
  using T = typename H::value_type;
  if constexpr (H::rank == 3) {
    return static_cast<double>(static_cast<compute_t<T>>(h(b, i, j)));
  } else {
    (void)b;
    return static_cast<double>(static_cast<compute_t<T>>(h(i, j)));
  }
}

/// Runs `call` (which computes C = alpha op(A) op(B) + beta C in place) and checks C against a
/// float64 reference computed from the inputs and C's value before the call.
template <class A, class B, class C, class Call>
void check_gemm(Trans ta, const A& a, Trans tb, const B& b, const C& c, double alpha, double beta, const Call& call) {
  using TC = typename C::value_type;
  using Acc = compute_t<typename A::value_type>;
  constexpr int r = static_cast<int>(C::rank);
  const auto ha = test::host_view(a);
  const auto hb = test::host_view(b);
  const auto hc0 = test::host_copy(c);  // a copy, even on the host
  call();
  const auto hc = test::host_view(c);
  const std::int64_t batch = r == 3 ? static_cast<std::int64_t>(c.extent(0)) : 1;
  const std::int64_t m = c.extent(r - 2), n = c.extent(r - 1);
  const std::int64_t k = static_cast<std::int64_t>(ta == Trans::none ? a.extent(r - 1) : a.extent(r - 2));
  for (std::int64_t bt = 0; bt < batch; ++bt)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        const std::string error = reference::gemm_entry<Acc, TC>(
            [&](std::int64_t kk) { return ta == Trans::none ? at(ha, bt, i, kk) : at(ha, bt, kk, i); },
            [&](std::int64_t kk) { return tb == Trans::none ? at(hb, bt, kk, j) : at(hb, bt, j, kk); }, k, alpha, beta,
            at(hc0, bt, i, j), at(hc, bt, i, j));
        if (!error.empty()) {
          std::ostringstream msg;
          msg << "C(" << bt << ", " << i << ", " << j << ") " << error << " (m n k = " << m << " " << n << " " << k << ")";
          FAIL(msg.str());
        }
      }
}

const std::vector<std::array<std::int64_t, 3>> shapes = {
    {1, 1, 1}, {13, 7, 29}, {97, 130, 300}, {200, 3, 5}, {3, 200, 513}, {0, 5, 3}, {5, 0, 3}, {6, 17, 0},
    {40, 48, 64}, {256, 256, 96}};  // (the last two: rows of 16 bytes' multiples, so the GPU drivers load whole
                                    // tiles in 16-byte runs: the small test tiles at 40 x 48 x 64, the
                                    // library's own (128 x 128 on CUDA) at 256 x 256 x 96)

/// Small tiles for running the GPU driver on the host: 1 x 1 teams (and 1 x 2 and 2 x 1, if
/// the backend allows teams of two threads) with blocks that do not divide the test sizes, in
/// runs of one and of two (vec).
struct TinyTiles {
  static constexpr int ty = 1, tx = 1, mr = 3, nr = 5, kc = 4, vec = 1, min_teams = 1;
};
struct PairTiles {
  static constexpr int ty = 1, tx = 2, mr = 4, nr = 3, kc = 7, vec = 1, min_teams = 1;
};
struct RunTiles {
  static constexpr int ty = 2, tx = 1, mr = 4, nr = 6, kc = 5, vec = 2, min_teams = 1;
};
/// One thread whose tiles split into 16-byte runs of fp32 and fp64 (GemmSlice::has_runs).
struct VectorTiles {
  static constexpr int ty = 1, tx = 1, mr = 4, nr = 8, kc = 8, vec = 4, min_teams = 1;
};

/// f(ta, a, tb, b, m, n) for every shape and both ops of A and B: fresh random A of layout LA
/// and B of layout LB (m x k / k x n after op).
template <class T, class LA, class LB, class F>
void for_each_case(const F& f) {
  for (const auto& shape : shapes)
    for (Trans ta : {Trans::none, Trans::transpose})
      for (Trans tb : {Trans::none, Trans::transpose}) {
        const std::int64_t m = shape[0], n = shape[1], k = shape[2];  // (not a structured binding: C++17 lambdas cannot capture one)
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(static_cast<int>(ta));
        CAPTURE(static_cast<int>(tb));
        auto a = ta == Trans::none ? random_mat<T, LA>(m, k) : random_mat<T, LA>(k, m);
        auto b = tb == Trans::none ? random_mat<T, LB>(k, n) : random_mat<T, LB>(n, k);
        f(ta, a, tb, b, m, n);
      }
}

}  // namespace

TEST_CASE_TEMPLATE("gemm matches float64 for every op, layout and size", T, ROOFTOP_DTYPES) {
  for_each_case<T, Kokkos::LayoutRight, Kokkos::LayoutLeft>([](Trans ta, const auto& a, Trans tb, const auto& b, std::int64_t m, std::int64_t n) {
    // beta = 0: C is poisoned and must not leak into the result.
    Mat<T, Kokkos::LayoutRight> c("c", m, n);
    fill_nan(Exec(), test::flat(c));
    check_gemm(ta, a, tb, b, c, 1.0, 0.0, [&] { gemm(Exec(), ta, a, tb, b, c); });
    // beta != 0 with a LayoutLeft C.
    auto c2 = random_mat<T, Kokkos::LayoutLeft>(m, n);
    check_gemm(ta, a, tb, b, c2, -0.5, 2.0, [&] { gemm(Exec(), ta, a, tb, b, c2, -0.5, 2.0); });
  });
}

TEST_CASE_TEMPLATE("gemm: K = 0 gives beta * C whatever alpha is (BLAS does not read alpha then)", T, ROOFTOP_DTYPES) {
  using Acc = compute_t<T>;
  for (const Acc alpha : {std::numeric_limits<Acc>::infinity(), std::numeric_limits<Acc>::quiet_NaN(), Acc(2)}) {
    CAPTURE(alpha);
    auto a = random_mat<T, Kokkos::LayoutRight>(9, 0);
    auto b = random_mat<T, Kokkos::LayoutRight>(0, 21);
    auto c = random_mat<T, Kokkos::LayoutRight>(9, 21);
    check_gemm(Trans::none, a, Trans::none, b, c, 1.0, 0.5, [&] { gemm(Exec(), Trans::none, a, Trans::none, b, c, alpha, Acc(0.5)); });
    Mat<T, Kokkos::LayoutRight> poisoned("c", 9, 21);
    fill_nan(Exec(), test::flat(poisoned));
    gemm(Exec(), Trans::none, a, Trans::none, b, poisoned, alpha, Acc(0));
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), poisoned);
    for (std::size_t i = 0; i < h.size(); ++i)
      if (!(static_cast<double>(static_cast<Acc>(h.data()[i])) == 0.0)) REQUIRE(static_cast<double>(static_cast<Acc>(h.data()[i])) == 0.0);
  }
}

TEST_CASE_TEMPLATE("gemm: alpha = 0 gives beta * C without reading A and B (NaN there does not propagate)", T, ROOFTOP_DTYPES) {
  using Acc = compute_t<T>;
  Mat<T, Kokkos::LayoutRight> a("a", 9, 13), b("b", 13, 21);
  fill_nan(Exec(), test::flat(a));
  fill_nan(Exec(), test::flat(b));
  auto c = random_mat<T, Kokkos::LayoutRight>(9, 21);
  check_gemm(Trans::none, a, Trans::none, b, c, 0.0, -2.0, [&] { gemm(Exec(), Trans::none, a, Trans::none, b, c, Acc(0), Acc(-2)); });
}

TEST_CASE_TEMPLATE("gemm: bf16/fp16 inputs with an fp32 C", T, rooftop::bf16, rooftop::fp16) {
  auto a = random_mat<T, Kokkos::LayoutRight>(70, 301), b = random_mat<T, Kokkos::LayoutRight>(301, 45);
  auto c = random_mat<float, Kokkos::LayoutRight>(70, 45);
  check_gemm(Trans::none, a, Trans::none, b, c, 1.5, 1.0, [&] { gemm(Exec(), Trans::none, a, Trans::none, b, c, 1.5f, 1.0f); });
}

TEST_CASE_TEMPLATE("gemm on the host sums each slice of K from 0 before adding it to C", T, float, rooftop::bf16) {
  // K = 10^5, every entry of A and B 0.1. The tiled driver (64 x 64) added each slice's
  // products onto the running C, so an entry passed through 10^5 additions (fp32 relative
  // error 6.7e-4; OpenBLAS 2.6e-6); summed per slice first, through one per slice (1.1e-5).
  // The skinny path's accumulators (m = 1 and 8 times B^T) summed k / 16 products each
  // (7.2e-5); in stretches of detail::skinny_stretch, 9.5e-7. m = 2 times B row-major: the
  // skinny path's slabs. (The GPU drivers keep each entry's sum in registers over all of K,
  // as cuBLAS's kernels do.)
  if constexpr (detail::on_host<Exec>) {
    const std::int64_t n = 64, k = 100000;
    for (const std::int64_t m : {std::int64_t{64}, std::int64_t{1}, std::int64_t{8}, std::int64_t{2}})
      for (const Trans tb : {Trans::none, Trans::transpose}) {
        if (m == 2 && tb == Trans::transpose) continue;
        CAPTURE(m);
        CAPTURE(static_cast<int>(tb));
        Mat<T, Kokkos::LayoutRight> a("a", m, k), b = tb == Trans::none ? Mat<T, Kokkos::LayoutRight>("b", k, n)
                                                                         : Mat<T, Kokkos::LayoutRight>("b", n, k);
        Mat<float, Kokkos::LayoutRight> c("c", m, n);
        Kokkos::deep_copy(a, T(0.1f));
        Kokkos::deep_copy(b, T(0.1f));
        fill_nan(Exec(), test::flat(c));
        gemm(Exec(), Trans::none, a, tb, b, c);
        const double entry = static_cast<float>(T(0.1f)), want = static_cast<double>(k) * entry * entry;
        double worst = 0;
        for (const double v : test::host(test::flat(c))) {
          const double e = std::abs(v - want) / want;
          if (!(e <= worst)) worst = e;  // a NaN (an entry left unwritten) stays the worst
        }
        CAPTURE(worst);
        CHECK(worst <= 2.5e-5);
      }
  }
}

TEST_CASE_TEMPLATE("gemm strided batched", T, ROOFTOP_DTYPES) {
  const std::int64_t batch = 3, m = 50, n = 37, k = 131;
  Kokkos::View<T***, Kokkos::LayoutRight, BackendMemory> a("a", batch, k, m), b("b", batch, k, n), c("c", batch, m, n);
  fill_uniform(Exec(), test::flat(a), test::next_seed(), -1, 1);
  fill_uniform(Exec(), test::flat(b), test::next_seed(), -1, 1);
  fill_nan(Exec(), test::flat(c));
  check_gemm(Trans::transpose, a, Trans::none, b, c, 1.0, 0.0, [&] { gemm(Exec(), Trans::transpose, a, Trans::none, b, c); });
  // Every other batch entry of a larger View: a LayoutStride batch.
  Kokkos::View<T***, Kokkos::LayoutRight, BackendMemory> big("big", 2 * batch, m, n);
  fill_uniform(Exec(), test::flat(big), test::next_seed(), -1, 1);
  Kokkos::View<T***, Kokkos::LayoutStride, BackendMemory> every_other(
      big.data(), Kokkos::LayoutStride(batch, 2 * m * n, m, n, n, 1));
  check_gemm(Trans::transpose, a, Trans::none, b, every_other, 1.0, -1.0,
             [&] { gemm(Exec(), Trans::transpose, a, Trans::none, b, every_other, 1.0, -1.0); });
  // One A for every batch entry (a batch stride of 0, as cuBLAS' strideA = 0 allows): its
  // span is one matrix, fewer elements than it has, which is fine for an input.
  Kokkos::View<T***, Kokkos::LayoutStride, BackendMemory> shared_a(a.data(), Kokkos::LayoutStride(batch, 0, k, m, m, 1));
  fill_nan(Exec(), test::flat(c));
  check_gemm(Trans::transpose, shared_a, Trans::none, b, c, 1.0, 0.0,
             [&] { gemm(Exec(), Trans::transpose, shared_a, Trans::none, b, c); });
}

TEST_CASE_TEMPLATE("gemm of a few rows times B^T stored row-major (nn.Linear) or times B row-major (the host's skinny paths)", T,
                   ROOFTOP_DTYPES) {
  // m = 1 to 9 (9: the tiled driver), n not a multiple of a work item's columns, k not one of
  // the lanes; C poisoned with beta = 0, random (LayoutLeft, op(A) strided) with beta != 0; a
  // batch with a shared A. B row-major: k = 1003 is three slabs of rows and a fourth whose
  // last rows are not four (detail::skinny_slab), and n = 600 is more than one stretch of
  // columns on two threads and more than one widened run of 256 in each.
  const std::int64_t n = 37, k = 1003;
  for (std::int64_t m = 1; m <= detail::skinny_gemm_rows + 1; ++m) {
    CAPTURE(m);
    auto a = random_mat<T, Kokkos::LayoutRight>(m, k);
    auto at = random_mat<T, Kokkos::LayoutRight>(k, m);  // op(A) strided: widened element by element
    for (const std::int64_t cols : {n, std::int64_t{600}})
      for (const Trans tb : {Trans::transpose, Trans::none}) {
        CAPTURE(cols);
        CAPTURE(static_cast<int>(tb));
        auto b = tb == Trans::transpose ? random_mat<T, Kokkos::LayoutRight>(cols, k) : random_mat<T, Kokkos::LayoutRight>(k, cols);
        Mat<T, Kokkos::LayoutRight> c("c", m, cols);
        fill_nan(Exec(), test::flat(c));
        check_gemm(Trans::none, a, tb, b, c, 1.0, 0.0, [&] { gemm(Exec(), Trans::none, a, tb, b, c); });
        auto c2 = random_mat<T, Kokkos::LayoutLeft>(m, cols);
        check_gemm(Trans::transpose, at, tb, b, c2, -0.5, 2.0, [&] { gemm(Exec(), Trans::transpose, at, tb, b, c2, -0.5, 2.0); });
      }
  }
  const std::int64_t batch = 3, m = 3;
  Kokkos::View<T***, Kokkos::LayoutRight, BackendMemory> a("a", batch, m, k), w("w", batch, n, k), c("c", batch, m, n);
  fill_uniform(Exec(), test::flat(a), test::next_seed(), -1, 1);
  fill_uniform(Exec(), test::flat(w), test::next_seed(), -1, 1);
  fill_nan(Exec(), test::flat(c));
  check_gemm(Trans::none, a, Trans::transpose, w, c, 1.0, 0.0, [&] { gemm(Exec(), Trans::none, a, Trans::transpose, w, c); });
  Kokkos::View<T***, Kokkos::LayoutStride, BackendMemory> shared_a(a.data(), Kokkos::LayoutStride(batch, 0, m, k, k, 1));
  fill_nan(Exec(), test::flat(c));
  check_gemm(Trans::none, shared_a, Trans::transpose, w, c, 1.0, 0.0,
             [&] { gemm(Exec(), Trans::none, shared_a, Trans::transpose, w, c); });
  Kokkos::View<T***, Kokkos::LayoutRight, BackendMemory> b("b", batch, k, n);
  fill_uniform(Exec(), test::flat(b), test::next_seed(), -1, 1);
  fill_nan(Exec(), test::flat(c));
  check_gemm(Trans::none, shared_a, Trans::none, b, c, 1.0, 0.0, [&] { gemm(Exec(), Trans::none, shared_a, Trans::none, b, c); });
}

/// Tiles for the matrix-unit driver: one warp with one 16 x 16 tile and K slices of one tile;
/// two warps down, and two across, each with 2 x 2 tiles (so a warp's tiles and the warps
/// interleave differently from contiguously, along both dimensions). On the host a warp is
/// one thread emulating the matrix units.
struct OneTile {
  static constexpr int warps_m = 1, warps_n = 1, frags_m = 1, frags_n = 1, kc = 16, min_teams = 1;
};
struct WarpsDown {
  static constexpr int warps_m = 2, warps_n = 1, frags_m = 2, frags_n = 2, kc = 32, min_teams = 1;
};
struct WarpsAcross {
  static constexpr int warps_m = 1, warps_n = 2, frags_m = 2, frags_n = 2, kc = 16, min_teams = 1;
};
/// One warp with 1 x 2 tiles and K slices of two: a second one-thread shape, in 16-byte runs.
struct RunsTile {
  static constexpr int warps_m = 1, warps_n = 1, frags_m = 1, frags_n = 2, kc = 32, min_teams = 1;
};

/// run(tiles, ta, a, tb, b, c, alpha, beta) (a driver with its tiles) over every case: the
/// first tiles (one thread) with beta = 0 and C poisoned, and in 16-byte runs where the
/// tiles allow (`runs`); the other two (teams of two threads on the host, where the backend
/// allows them) with beta != 0 and a LayoutRight and a LayoutLeft C. Every op: the drivers'
/// loads run along i or k of op(A) and j or k of op(B), whichever is contiguous in memory.
template <class T, class Run, class First, class Second, class Third, class Runs>
void check_driver(const Run& run, First first, Second second, Third third, Runs runs) {
  const bool pairs = test::max_team_size() >= 2;
  for_each_case<T, Kokkos::LayoutRight, Kokkos::LayoutRight>(
      [&](Trans ta, const auto& a, Trans tb, const auto& b, std::int64_t m, std::int64_t n) {
        Mat<T, Kokkos::LayoutRight> c("c", m, n);
        fill_nan(Exec(), test::flat(c));
        check_gemm(ta, a, tb, b, c, 1.0, 0.0, [&] { run(first, ta, a, tb, b, c, 1, 0); });
        Mat<T, Kokkos::LayoutRight> c1("c", m, n);
        fill_nan(Exec(), test::flat(c1));
        check_gemm(ta, a, tb, b, c1, 1.0, 0.0, [&] { run(runs, ta, a, tb, b, c1, 1, 0); });
        if (pairs) {
          auto c2 = random_mat<T, Kokkos::LayoutRight>(m, n);
          check_gemm(ta, a, tb, b, c2, 2.0, 0.5, [&] { run(second, ta, a, tb, b, c2, 2, 0.5); });
          auto c3 = random_mat<T, Kokkos::LayoutLeft>(m, n);
          check_gemm(ta, a, tb, b, c3, -1.0, 1.0, [&] { run(third, ta, a, tb, b, c3, -1, 1); });
        }
      });
}

/// Small tiles for the CPU driver: register blocks and C tiles that do not divide the test
/// sizes, K slices of 8, tiles chosen between 4 x 8 and 12 x 16 (detail::cpu_gemm_tile).
struct SmallCpuTiles {
  static constexpr int mr = 2, nr = 4, mc = 12, nc = 16, min_mc = 4, min_nc = 8, kc = 8;
};

TEST_CASE_TEMPLATE("gemm's CPU driver with small tiles, on the host", T, double, float, rooftop::bf16, rooftop::fp16) {
  if constexpr (detail::on_host<Exec>) {
    for_each_case<T, Kokkos::LayoutRight, Kokkos::LayoutRight>(
        [&](Trans ta, const auto& a, Trans tb, const auto& b, std::int64_t m, std::int64_t n) {
          auto c = random_mat<T, Kokkos::LayoutLeft>(m, n);
          check_gemm(ta, a, tb, b, c, 2.0, 0.5, [&] {
            detail::gemm_checked(Exec(), ta, a, tb, b, c, compute_t<T>(2), compute_t<T>(0.5),
                                 [](const Exec& e, const auto& p) { detail::gemm_cpu<SmallCpuTiles>(e, p); });
          });
        });
  }
}

TEST_CASE("gemm's CPU tile: whole register blocks, within the bounds, evened out") {
  using Tiles = CpuGemmTiles<float>;
  auto count = [](std::int64_t extent, int tile) { return (extent + tile - 1) / tile; };
  for (const std::int64_t batch : {1, 3})
    for (const std::int64_t m : {1, 5, 97, 300, 2048, 5001})
      for (const std::int64_t n : {1, 17, 130, 1000, 2048, 7000})
        for (const int threads : {1, 2, 16, 64}) {
          CAPTURE(batch);
          CAPTURE(m);
          CAPTURE(n);
          CAPTURE(threads);
          int mc = 0, nc = 0;
          detail::cpu_gemm_tile<Tiles>(batch, m, n, threads, mc, nc);
          CHECK(mc % Tiles::mr == 0);
          CHECK(nc % Tiles::nr == 0);
          CHECK((mc >= Tiles::mr && mc <= Tiles::mc));
          CHECK((nc >= Tiles::nr && nc <= Tiles::nc));
          // Evened out: no tile along a side is a whole register block larger than it needs to be.
          CHECK(mc - Tiles::mr < (m + count(m, mc) - 1) / count(m, mc));
          CHECK(nc - Tiles::nr < (n + count(n, nc) - 1) / count(n, nc));
        }
  int mc = 0, nc = 0;
  detail::cpu_gemm_tile<Tiles>(1, 2048, 2048, 2, mc, nc);
  CHECK(mc == 258);  // 8 tiles of 258 rows, not 7 of 288 and one of 32
  CHECK(nc == 512);
  detail::cpu_gemm_tile<Tiles>(1, 2048, 2048, 16, mc, nc);
  CHECK(mc == 258);
  CHECK(nc == 256);  // 64 tiles for 16 threads
  detail::cpu_gemm_tile<Tiles>(1, 200, 200, 2, mc, nc);
  CHECK(mc == 72);  // shrunk to 96 x 128, which leaves 6 tiles, then evened out: 3 x 2 tiles
  CHECK(nc == (100 + Tiles::nr - 1) / Tiles::nr * Tiles::nr);  // 100 in whole blocks: 112 (nr 16), 128 (nr 32)
  detail::cpu_gemm_tile<Tiles>(4, 2048, 2048, 16, mc, nc);
  CHECK(mc == 258);  // the largest tile, evened out: 4 x 8 x 4 tiles
  CHECK(nc == 512);
}

TEST_CASE_TEMPLATE("gemm's GPU driver (register-blocked teams) on this backend", T, double, float, rooftop::bf16) {
  check_driver<T>(
      [](auto tiles, Trans ta, const auto& a, Trans tb, const auto& b, const auto& c, compute_t<T> alpha, compute_t<T> beta) {
        detail::gemm_checked(Exec(), ta, a, tb, b, c, alpha, beta,
                             [](const Exec& e, const auto& p) { detail::gemm_gpu<decltype(tiles)>(e, p); });
      },
      TinyTiles{}, PairTiles{}, RunTiles{}, VectorTiles{});
}

TEST_CASE_TEMPLATE("gemm's matrix-unit driver (tensor-core tiles; emulated off GPUs) on this backend", T, rooftop::bf16,
                   rooftop::fp16) {
  auto run = [](auto tiles, Trans ta, const auto& a, Trans tb, const auto& b, const auto& c, float alpha, float beta) {
    detail::gemm_checked(Exec(), ta, a, tb, b, c, alpha, beta,
                         [](const Exec& e, const auto& p) { detail::gemm_matrix_units<decltype(tiles)>(e, p); });
  };
  check_driver<T>(run, OneTile{}, WarpsDown{}, WarpsAcross{}, RunsTile{});
  // An fp32 C, batched, with one tile per team, and with the library's own tiles (what gemm
  // runs on GPUs) where the backend runs their teams (on the host, 8 threads); m and k
  // multiples of 8, so whole tiles of op(A) load in 16-byte runs.
  const std::int64_t batch = 2, m = 256, n = 129, k = 96;
  Kokkos::View<T***, Kokkos::LayoutRight, BackendMemory> a("a", batch, k, m), b("b", batch, n, k);
  Kokkos::View<float***, Kokkos::LayoutRight, BackendMemory> c("c", batch, m, n);
  fill_uniform(Exec(), test::flat(a), test::next_seed(), -1, 1);
  fill_uniform(Exec(), test::flat(b), test::next_seed(), -1, 1);
  fill_uniform(Exec(), test::flat(c), test::next_seed(), -1, 1);
  auto batched = [&](auto tiles) {
    check_gemm(Trans::transpose, a, Trans::transpose, b, c, 0.5, -1.0,
               [&] { run(tiles, Trans::transpose, a, Trans::transpose, b, c, 0.5f, -1.0f); });
  };
  batched(OneTile{});
  constexpr int warps = MatrixGemmTiles::warps_m * MatrixGemmTiles::warps_n;
  if (test::max_team_size() >= warps * detail::matrix_tile_lanes<Exec>) batched(MatrixGemmTiles{});
  else MESSAGE("MatrixGemmTiles skipped: teams of " << warps * detail::matrix_tile_lanes<Exec> << " threads; this backend's hold " << test::max_team_size());
}

/// Runs the harness's matrix-unit peak kernel with teams of `warps` warps and checks what it
/// wrote. Its tiles: A(i, k) = (e % 7 - 3) / 128 at e = 16 i + k, B(k, j) likewise at e = 256 +
/// 16 k + j; each warp's lanes together hold 4 chains x iters x A B and write the sum of it.
template <class T, int warps>
void check_matrix_chains() {
  constexpr int lanes = detail::matrix_tile_lanes<Exec>, teams = 3, iters = 5;
  const auto value = [](int e) { return (e % 7 - 3) / 128.0; };
  double ab = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      for (int k = 0; k < 16; ++k) ab += value(16 * i + k) * value(256 + 16 * k + j);
  REQUIRE(ab != 0);
  Kokkos::View<float*, BackendMemory> out("out", teams * warps * lanes);
  fill_nan(Exec(), out);
  const double flops = harness::run_matrix_chains<Exec, T, warps>(Exec(), out, iters);
  CHECK(flops == 2.0 * 16 * 16 * 16 * 4 * iters * warps * teams);
  const auto h = test::host(out);
  for (int w = 0; w < teams * warps; ++w) {
    double sum = 0;
    for (int l = 0; l < lanes; ++l) sum += h[w * lanes + l];
    CAPTURE(w);
    CHECK(std::abs(sum - 4.0 * iters * ab) <= 1e-6 * std::abs(4.0 * iters * ab));
  }
}

TEST_CASE_TEMPLATE("the harness's matrix-unit peak kernel computes its chains of tile products", T, rooftop::bf16, rooftop::fp16) {
  check_matrix_chains<T, 1>();
  constexpr int lanes = detail::matrix_tile_lanes<Exec>;
  if (test::max_team_size() >= 4 * lanes) check_matrix_chains<T, 4>();  // the harness's teams
  else MESSAGE("teams of 4 warps skipped: they need " << 4 * lanes << " threads; this backend's teams hold " << test::max_team_size());
}

/// The harness's FP32/FP64 peak kernel: every work item's chains start at 1 + 1e-3 (c + i % 7),
/// take `iters` steps of fma(x, 0.9999, 1e-4) in T, and the item writes their sum. Each chain
/// is recomputed here with the same roundings; only the order of the final sum differs. After
/// 20000 steps the chains have gone 86% of the way to 1, far beyond that sum's rounding.
template <class T>
void check_fma_chains() {
  constexpr int chains = harness::fma_chains<Exec, T>(), items = 23, iters = 20000;
  Kokkos::View<T*, BackendMemory> out("out", items);
  fill_nan(Exec(), out);
  const double flops = harness::run_fma_chains<Exec, T>(Exec(), out, iters);
  CHECK(flops == 2.0 * chains * iters * items);
  std::vector<double> chain_end(chains + 7);  // by c + i % 7
  for (std::size_t s = 0; s < chain_end.size(); ++s) {
    T x = T(1) + T(1e-3) * T(static_cast<int>(s));
    // The kernel's own roundings (the chains contract by 0.9999 a step, so an error of a step
    // is carried ~10^4 steps: a multiply and an add do not give the fma's ends): one fused
    // multiply-add on a GPU and on hosts with the instruction, compat::mul_add's two roundings
    // elsewhere.
#if defined(ROOFTOP_BACKEND_CUDA) || ROOFTOP_FUSED_MUL_ADD
    for (int it = 0; it < iters; ++it) x = std::fma(x, T(0.9999), T(1e-4));
#else
    for (int it = 0; it < iters; ++it) x = x * T(0.9999) + T(1e-4);
#endif
    chain_end[s] = x;
  }
  const auto h = test::host(out);
  for (int i = 0; i < items; ++i) {
    double want = 0;
    for (int c = 0; c < chains; ++c) want += chain_end[c + i % 7];
    CAPTURE(i);
    CHECK(std::abs(static_cast<double>(h[i]) - want) <= 4.0 * chains * std::numeric_limits<T>::epsilon() * want);
  }
}

TEST_CASE_TEMPLATE("the harness's FP32 and FP64 peak kernel computes its FMA chains", T, float, double) { check_fma_chains<T>(); }

TEST_CASE("gemm_cost: 2 M N K FLOPs per batch entry, A and B read once, C written once and read when beta != 0") {
  const Cost plain = gemm_cost<float>(3, 5, 7);
  CHECK(plain.flops == 2.0 * 3 * 5 * 7);
  CHECK(plain.bytes == 4.0 * (3 * 7 + 7 * 5 + 3 * 5));
  CHECK(gemm_cost<float>(3, 5, 7, true).bytes == 4.0 * (3 * 7 + 7 * 5 + 2 * 3 * 5));
  CHECK(gemm_cost<rooftop::bf16, float>(3, 5, 7, true).bytes == 2.0 * (3 * 7 + 7 * 5) + 4.0 * 2 * 3 * 5);
  const Cost batched = gemm_cost<double>(3, 5, 7, false, 4);
  CHECK(batched.flops == 4 * 2.0 * 3 * 5 * 7);
  CHECK(batched.bytes == 4 * 8.0 * (3 * 7 + 7 * 5 + 3 * 5));
  CHECK(gemm_cost<float>(2048, 2048, 0).flops == 0);  // K = 0: C = beta C, no products
}

TEST_CASE("gemm: mismatched extents are an error naming them") {
  auto a = random_mat<float, Kokkos::LayoutRight>(4, 5), b = random_mat<float, Kokkos::LayoutRight>(6, 7);
  auto c = random_mat<float, Kokkos::LayoutRight>(4, 7);
  CHECK_THROWS_WITH_AS(gemm(Exec(), Trans::none, a, Trans::none, b, c), "gemm: A is 4x5 and B is 6x7: inner extents differ (5 vs 6)",
                       rooftop::Error);
  CHECK_THROWS_WITH_AS(gemm(Exec(), Trans::transpose, a, Trans::none, b, c),
                       "gemm: A^T is 5x4 (A is 4x5) and B is 6x7: inner extents differ (4 vs 6)", rooftop::Error);
  CHECK_THROWS_WITH_AS(gemm(Exec(), Trans::none, a, Trans::transpose, b, c),
                       "gemm: A is 4x5 and B^T is 7x6 (B is 6x7): inner extents differ (5 vs 7)", rooftop::Error);
  auto b2 = random_mat<float, Kokkos::LayoutRight>(5, 7);
  auto c2 = random_mat<float, Kokkos::LayoutRight>(7, 4);
  CHECK_THROWS_WITH_AS(gemm(Exec(), Trans::none, a, Trans::none, b2, c2), "gemm: C is 7x4 but op(A) * op(B) is 4x7", rooftop::Error);
  Kokkos::View<float***, BackendMemory> a3("a", 2, 4, 5), b3("b", 3, 5, 7), c3("c", 2, 4, 7);
  CHECK_THROWS_WITH_AS(gemm(Exec(), Trans::none, a3, Trans::none, b3, c3),
                       "gemm: batch extents differ: A is 2x4x5, B is 3x5x7, C is 2x4x7", rooftop::Error);
  // An output whose batch entries share memory would be written by several teams at once.
  Kokkos::View<float***, BackendMemory> a5("a", 2, 4, 5), b5("b", 2, 5, 7), c5("c", 1, 4, 7);
  const Kokkos::View<float***, Kokkos::LayoutStride, BackendMemory> c_shared(c5.data(), Kokkos::LayoutStride(2, 0, 4, 7, 7, 1));
  CHECK_THROWS_WITH_AS(gemm(Exec(), Trans::none, a5, Trans::none, b5, c_shared),
                       "gemm: C is 2x4x7 with strides (0, 7, 1): its strides do not nest, so its elements may share memory and writes to them could race",
                       rooftop::Error);
  // Likewise with padded rows, whose stride gives the View a span of 64 (Kokkos's span of a
  // LayoutStride View is its largest extent times stride, whatever the others).
  Kokkos::View<float*, BackendMemory> padded("padded", 64);
  const Kokkos::View<float***, Kokkos::LayoutStride, BackendMemory> c_padded_shared(padded.data(),
                                                                                    Kokkos::LayoutStride(2, 0, 4, 16, 7, 1));
  CHECK_THROWS_WITH_AS(gemm(Exec(), Trans::none, a5, Trans::none, b5, c_padded_shared),
                       "gemm: C is 2x4x7 with strides (0, 16, 1): its strides do not nest, so its elements may share memory and writes to them could race",
                       rooftop::Error);
  // Likewise the rows of a rank-2 C with a row stride of 0, with unit or larger column strides,
  // and a C folded onto itself without a stride of 0 (C(2, 0) is C(0, 1)).
  const auto b75 = random_mat<float, Kokkos::LayoutRight>(7, 5);
  for (const int col_stride : {1, 4}) {
    const Kokkos::View<float**, Kokkos::LayoutStride, BackendMemory> c_rows_shared(padded.data(),
                                                                                   Kokkos::LayoutStride(4, 0, 7, col_stride));
    const std::string message = "gemm: C is 4x7 with strides (0, " + std::to_string(col_stride) +
                                "): its strides do not nest, so its elements may share memory and writes to them could race";
    CHECK_THROWS_WITH_AS(gemm(Exec(), Trans::none, a, Trans::transpose, b75, c_rows_shared), message.c_str(), rooftop::Error);
  }
  const Kokkos::View<float**, Kokkos::LayoutStride, BackendMemory> c_folded(padded.data(), Kokkos::LayoutStride(3, 2, 2, 4));
  CHECK_THROWS_WITH_AS(gemm(Exec(), Trans::none, random_mat<float, Kokkos::LayoutRight>(3, 5),
                            Trans::none, random_mat<float, Kokkos::LayoutRight>(5, 2), c_folded),
                       "gemm: C is 3x2 with strides (2, 4): its strides do not nest, so its elements may share memory and writes to them could race",
                       rooftop::Error);
  // C written over A or B: tiles of C would be stored while others still read them.
  auto sq = random_mat<float, Kokkos::LayoutRight>(4, 4), sq2 = random_mat<float, Kokkos::LayoutRight>(4, 4);
  CHECK_THROWS_WITH_AS(gemm(Exec(), Trans::none, sq, Trans::none, sq2, sq),
                       "gemm: C overlaps A (C is 4x4, A is 4x4): C is written while other tiles still read A", rooftop::Error);
  CHECK_THROWS_WITH_AS(gemm(Exec(), Trans::none, sq, Trans::transpose, sq2, sq2),
                       "gemm: C overlaps B (C is 4x4, B is 4x4): C is written while other tiles still read B", rooftop::Error);
  // Kokkos 3.4 gives a 2 x 65536 x 32768 View (2^32 elements) a span of 0 and no memory (see
  // require_allocated); a Kokkos that sizes it right would allocate 16 GB: then no check.
  const Kokkos::View<float***, BackendMemory> wrapped(Kokkos::view_alloc("wrapped", Kokkos::WithoutInitializing), 2, 65536, 32768);
  if (wrapped.span() < wrapped.size()) {
    const Kokkos::View<float***, BackendMemory> a4("a", 2, 65536, 1);
    CHECK_THROWS_WITH_AS(gemm(Exec(), Trans::none, a4, Trans::none, Kokkos::View<float***, BackendMemory>("b", 2, 1, 32768), wrapped),
                         "gemm: C is 2x65536x32768 but spans 0 elements: its memory was sized in 32-bit arithmetic (Kokkos 3.4, "
                         "Views of rank 3 and more)",
                         rooftop::Error);
    // The same View as A, then as B: refused before any read of it.
    const Kokkos::View<float***, BackendMemory> b1("b", 2, 32768, 1), c1("c", 2, 65536, 1);
    CHECK_THROWS_WITH_AS(gemm(Exec(), Trans::none, wrapped, Trans::none, b1, c1),
                         "gemm: A is 2x65536x32768 but spans 0 elements: its memory was sized in 32-bit arithmetic (Kokkos 3.4, "
                         "Views of rank 3 and more)",
                         rooftop::Error);
    const Kokkos::View<float***, BackendMemory> a1("a", 2, 1, 65536), c2("c", 2, 1, 32768);
    CHECK_THROWS_WITH_AS(gemm(Exec(), Trans::none, a1, Trans::none, wrapped, c2),
                         "gemm: B is 2x65536x32768 but spans 0 elements: its memory was sized in 32-bit arithmetic (Kokkos 3.4, "
                         "Views of rank 3 and more)",
                         rooftop::Error);
  }
}

TEST_CASE("harness working sets: main memory 8x the cache, at least 256 MB, at most a sixteenth of the host's memory") {
  constexpr double MiB = 1024.0 * 1024;
  CHECK(harness::main_memory_working_set(8 * MiB, 64e9) == 256e6);         // a small cache: the floor
  CHECK(harness::main_memory_working_set(32 * MiB, 64e9) == 256 * MiB);    // 8x the cache
  CHECK(harness::main_memory_working_set(480 * MiB, 24e9) == 1.5e9);       // the host's memory bounds it
  CHECK(harness::main_memory_working_set(480 * MiB, 0) == 3840 * MiB);     // memory unknown: 8x the cache
  CHECK(harness::main_memory_working_set(480 * MiB, 2e9) == 256e6);        // never below the floor
  harness::Ceilings c;
  c.bandwidth_gbs = {{"dram", 40.0}, {"llc", 100.0}};
  c.llc_bytes = 480 * MiB;
  c.main_memory_bytes = harness::main_memory_working_set(c.llc_bytes, 24e9);
  CHECK(c.is_cache_resident(0.7e9));
  CHECK(!c.is_cache_resident(0.75e9));  // half the main-memory working set on: main memory's roof
  CHECK(c.bandwidth_for(1.49e9) == 40.0);
  c.llc_bytes = 8 * MiB;
  c.main_memory_bytes = harness::main_memory_working_set(c.llc_bytes, 24e9);
  CHECK(c.is_cache_resident(32 * MiB - 1));  // below 4x the cache
  CHECK(!c.is_cache_resident(32 * MiB));
  CHECK(c.bandwidth_for(16 * MiB) == 100.0);
  CHECK(c.uses_cache_roof(16 * MiB));
  // A cache ceiling not above main memory's (on GPUs its runs time kernel launches) is no roof.
  c.bandwidth_gbs["llc"] = 40.0;
  CHECK(c.is_cache_resident(16 * MiB));
  CHECK(!c.cache_above_memory());
  CHECK(!c.uses_cache_roof(16 * MiB));
  CHECK(c.bandwidth_for(16 * MiB) == 40.0);
  c.bandwidth_gbs["llc"] = 25.0;
  CHECK(c.bandwidth_for(16 * MiB) == 40.0);
  c.peak_gflops_fp32 = 100;
  CHECK(c.roof_seconds(Cost{0, 16 * MiB}, DType::fp32) == doctest::Approx(16 * MiB / 40e9));
}

TEST_CASE("gemm reads const RandomAccess Views (on CUDA: values, no addresses)") {
  using RandomAccess = Kokkos::MemoryTraits<Kokkos::RandomAccess>;
  const std::int64_t n = 70;
  auto a = test::random_matrix<float>(n, n), b = test::random_matrix<float>(n, n);
  const Kokkos::View<const float**, Kokkos::LayoutRight, BackendMemory, RandomAccess> ar = a, br = b;
  auto plain = test::poisoned_matrix<float>(n, n), traced = test::poisoned_matrix<float>(n, n);
  check_gemm(Trans::none, a, Trans::transpose, b, plain, 1.0, 0.0,
             [&] { rooftop::gemm(Exec(), Trans::none, a, Trans::transpose, b, plain); });
  rooftop::gemm(Exec(), Trans::none, ar, Trans::transpose, br, traced);
  CHECK(test::host(traced) == test::host(plain));
}

TEST_CASE("harness device name: x86's model name, AArch64's implementer and part") {
  auto model = [](const std::string& text) {
    std::istringstream in(text);
    return harness::cpu_model(in);
  };
  CHECK(model("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9B45\nflags\t\t: fpu\n") == "AMD EPYC 9B45");
  // AArch64's /proc/cpuinfo (Linux): no model name; the first core's identifiers.
  const std::string grace = "processor\t: 0\nBogoMIPS\t: 2000.00\nCPU implementer\t: 0x41\nCPU architecture: 8\n"
                            "CPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 0\n\nprocessor\t: 1\n"
                            "CPU implementer\t: 0x48\nCPU part\t: 0xd01\n";
  CHECK(model(grace) == "Neoverse V2 (implementer 0x41, part 0xd4f)");
  CHECK(model("CPU implementer\t: 0x46\nCPU part\t: 0x001\n") == "A64FX (implementer 0x46, part 0x001)");
  CHECK(model("CPU implementer\t: 0xc0\nCPU part\t: 0xac3\n") == "AArch64 CPU (implementer 0xc0, part 0xac3)");
  // Nothing to name it by, or an empty value: said so, never a throw.
  CHECK(model("") == "unknown CPU");
  CHECK(model("model name\t:\n") == "unknown CPU");
  CHECK(model("model name\t:   \r\nmodel name : Second\n") == "Second");
  CHECK(model("CPU implementer\t: 0x41\n") == "unknown CPU");
}
