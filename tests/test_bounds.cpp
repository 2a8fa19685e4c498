// SPDX-License-Identifier: BSD-3-Clause
// Bounds: every op run on the host with its arrays flush against an inaccessible page
// (PROT_NONE) after their last byte, or starting right after one, at sizes that end a vector
// register, a cache line or a block anywhere, with plain and with streaming stores. A read or
// a write past either end faults and kills the test, where an ordinary allocation's slack
// would hide it. Outputs start as NaN and must all be written (finite). Host backends only:
// device memory cannot be guarded this way.
#include "common.hpp"

#include <rooftop/kernels/activation.hpp>
#include <rooftop/kernels/attention.hpp>
#include <rooftop/kernels/dropout.hpp>
#include <rooftop/kernels/embedding.hpp>
#include <rooftop/kernels/gemm.hpp>
#include <rooftop/kernels/norm.hpp>
#include <rooftop/kernels/reduce.hpp>
#include <rooftop/kernels/softmax.hpp>
#include <rooftop/kernels/spmv.hpp>
#include <rooftop/kernels/stencil.hpp>
#include <rooftop/kernels/stream.hpp>
#include <rooftop/kernels/transpose.hpp>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <csignal>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#if !defined(ROOFTOP_BACKEND_CUDA)

using namespace rooftop;
using test::Exec;

namespace {

/// Where a Guarded array lies: its last byte just before an inaccessible page, or its first
/// byte just after one (page-aligned).
enum class Flush { end, start };

/// n elements of T in pages of their own, flush against an inaccessible page as `flush` says
/// (there is one on either side). Flush::end places the array at an offset of n * sizeof(T)
/// below a page boundary: aligned to its elements, not to a line.
template <class T>
class Guarded {
 public:
  Guarded(std::int64_t n, Flush flush) : n_(n) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(T), span = (bytes + page - 1) / page * page;
    mapped_ = span + 2 * page;
    void* const map = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(map != MAP_FAILED);
    base_ = static_cast<char*>(map);
    REQUIRE(mprotect(base_, page, PROT_NONE) == 0);
    REQUIRE(mprotect(base_ + page + span, page, PROT_NONE) == 0);
    data_ = reinterpret_cast<T*>(flush == Flush::end ? base_ + page + span - bytes : base_ + page);
  }
  ~Guarded() { munmap(base_, mapped_); }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;

  T* data() const { return data_; }
  std::int64_t size() const { return n_; }
  /// Random values in [lo, hi).
  void random(double lo, double hi) {
    std::mt19937_64 gen(test::next_seed());
    std::uniform_real_distribution<double> u(lo, hi);
    for (std::int64_t i = 0; i < n_; ++i) data_[i] = T(static_cast<float>(u(gen)));
  }
  void poison() {
    for (std::int64_t i = 0; i < n_; ++i) data_[i] = T(std::nanf(""));
  }
  /// Whether every element is finite (every output was written).
  bool finite() const {
    for (std::int64_t i = 0; i < n_; ++i)
      if (!std::isfinite(static_cast<double>(static_cast<float>(data_[i])))) return false;
    return true;
  }

 private:
  std::int64_t n_;
  std::size_t mapped_ = 0;
  char* base_ = nullptr;
  T* data_ = nullptr;
};

template <class T, int rank>
struct Unmanaged;
template <class T>
struct Unmanaged<T, 1> {
  using type = Kokkos::View<T*, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
};
template <class T>
struct Unmanaged<T, 2> {
  using type = Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
};
template <class T>
struct Unmanaged<T, 3> {
  using type = Kokkos::View<T***, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
};
template <class T>
struct Unmanaged<T, 4> {
  using type = Kokkos::View<T****, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
};

/// A guarded array of the extents' product as a LayoutRight View of those extents.
template <class T, class... Extents>
auto view_of(const Guarded<T>& g, Extents... extents) {
  return typename Unmanaged<T, sizeof...(Extents)>::type(g.data(), static_cast<std::size_t>(extents)...);
}

const Flush flushes[] = {Flush::end, Flush::start};

/// Where a case's inputs and its outputs lie: the same way (the same offsets from a line), or
/// the other way (an input and an output at different offsets from a line).
struct Placement {
  Flush in, out;
};
const Placement placements[] = {{Flush::end, Flush::end}, {Flush::start, Flush::start}, {Flush::end, Flush::start},
                                {Flush::start, Flush::end}};

/// Lengths that end a register of 8 or 16 lanes, a 64-byte line and the larger blocks of the
/// host's loops anywhere.
const std::int64_t lengths[] = {1, 3, 7, 15, 16, 17, 31, 33, 63, 65, 127, 257, 1000, 4097, 65537};

}  // namespace

TEST_CASE("bounds: the guard pages fault, one element past either end") {
  // In a child process: reading the element after a Flush::end array's last, or before a
  // Flush::start array's first, must end it with SIGSEGV (else the tests below prove nothing).
  for (const Flush flush : flushes) {
    CAPTURE(flush == Flush::end);
    Guarded<float> g(33, flush);
    g.random(-1, 1);
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      std::signal(SIGSEGV, SIG_DFL);  // (not doctest's handler, which reports a crash)
      const volatile float* p = g.data();
      const volatile float v = flush == Flush::end ? p[g.size()] : p[-1];
      (void)v;
      _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGSEGV);
  }
}

TEST_CASE_TEMPLATE("bounds: elementwise ops and reductions stay within their arrays", T, ROOFTOP_DTYPES) {
  for (const std::size_t threshold : test::store_thresholds)
    for (const Placement at : placements)
      for (const std::int64_t n : lengths) {
        CAPTURE(threshold);
        CAPTURE(n);
        CAPTURE(at.in == Flush::end);
        CAPTURE(at.out == Flush::end);
        test::StreamingThreshold stores(threshold);
        Guarded<T> gx(n, at.in), gy(n, at.in), gz(n, at.out);
        gx.random(-3, 3);
        gy.random(-3, 3);
        const auto x = view_of(gx, n), y = view_of(gy, n), z = view_of(gz, n);
        auto out = [&](const auto& run) {
          gz.poison();
          run();
          Kokkos::fence();
          CHECK(gz.finite());
        };
        out([&] { copy(Exec(), x, z); });
        out([&] { scale(Exec(), 2.0, x, z); });
        out([&] { add(Exec(), x, y, z); });
        out([&] { triad(Exec(), 0.5, x, y, z); });
        if constexpr (!std::is_same_v<T, double>) {
          out([&] { relu(Exec(), x, z); });
          out([&] { gelu(Exec(), x, z); });
          out([&] { gelu(Exec(), x, z, Gelu::erf); });
          out([&] { silu(Exec(), x, z); });
          out([&] { dropout(Exec(), x, z, 0.25, 7, 3); });
        }
        CHECK(std::isfinite(static_cast<double>(dot(Exec(), x, y))));
        CHECK(std::isfinite(static_cast<double>(sum(Exec(), x))));
        CHECK(std::isfinite(static_cast<double>(max(Exec(), x))));
        CHECK(std::isfinite(static_cast<double>(nrm2(Exec(), x))));
      }
}

TEST_CASE_TEMPLATE("bounds: row ops stay within their arrays", T, ROOFTOP_ML_DTYPES) {
  // Widths of whole lines too (the host's runs of rows, 2-byte pairs, streamed rows), rows of 3
  // and 8 (runs of one and of two rows at a time), and one row past softmax's split.
  const std::int64_t widths[] = {1, 7, 13, 16, 32, 33, 64, 65, 256, 773, 1024, 4096, 4173};
  for (const std::size_t threshold : test::store_thresholds)
    for (const Placement at : placements)
      for (const std::int64_t rows : {3, 8})
        for (const std::int64_t cols : widths) {
          CAPTURE(threshold);
          CAPTURE(rows);
          CAPTURE(cols);
          CAPTURE(at.in == Flush::end);
          CAPTURE(at.out == Flush::end);
          test::StreamingThreshold stores(threshold);
          Guarded<T> gx(rows * cols, at.in), gy(rows * cols, at.out), gw(cols, at.in), gb(cols, at.in);
          gx.random(-3, 3);
          gw.random(0.5, 1.5);
          gb.random(-1, 1);
          const auto x = view_of(gx, rows, cols), y = view_of(gy, rows, cols);
          const auto w = view_of(gw, cols), b = view_of(gb, cols);
          const typename Unmanaged<T, 1>::type none;
          auto out = [&](const auto& run) {
            gy.poison();
            run();
            Kokkos::fence();
            CHECK(gy.finite());
          };
          out([&] { bias_add(Exec(), x, b, y); });
          out([&] { bias_gelu(Exec(), x, b, y); });
          out([&] { bias_gelu(Exec(), x, b, y, Gelu::erf); });
          out([&] { bias_gelu_dropout(Exec(), x, b, y, 0.25, 7, 3); });
          out([&] { softmax(Exec(), x, y); });
          out([&] { layernorm(Exec(), x, y, 1e-5, w, b); });
          out([&] { layernorm(Exec(), x, y, 1e-5, none, none); });
          out([&] { rmsnorm(Exec(), x, y, 1e-6, w); });
          out([&] { rmsnorm(Exec(), x, y, 1e-6, none); });
          // transpose there and back: outputs of short rows, then of long ones.
          Guarded<T> gt(cols * rows, at.out);
          const auto t = view_of(gt, cols, rows);
          gt.poison();
          transpose(Exec(), x, t);
          CHECK(gt.finite());
          out([&] { transpose(Exec(), t, y); });
          gt.poison();
          transpose_naive(Exec(), x, t);
          CHECK(gt.finite());
          out([&] { transpose_naive(Exec(), t, y); });
          // embedding: the table is x, ids at either end of theirs.
          const std::int64_t tokens = 5;
          Guarded<std::int32_t> gi(tokens, at.in);
          for (std::int64_t i = 0; i < tokens; ++i) gi.data()[i] = static_cast<std::int32_t>((i * 2) % rows);
          Guarded<T> ge(tokens * cols, at.out);
          ge.poison();
          embedding(Exec(), x, view_of(gi, tokens), view_of(ge, tokens, cols));
          CHECK(ge.finite());
        }
  // One row of more than 65536 entries (detail::split_softmax_from on AVX hosts: cut into
  // pieces; the portable build has no split).
  for (const Placement at : placements) {
    const std::int64_t cols = 65536 + 77;
    Guarded<T> gx(cols, at.in), gy(cols, at.out);
    gx.random(-3, 3);
    gy.poison();
    softmax(Exec(), view_of(gx, 1, cols), view_of(gy, 1, cols));
    Kokkos::fence();
    CHECK(gy.finite());
  }
}

TEST_CASE_TEMPLATE("bounds: gemm, attention, stencil and spmv stay within their arrays", T, ROOFTOP_DTYPES) {
  for (const Placement at : placements) {
    CAPTURE(at.in == Flush::end);
    CAPTURE(at.out == Flush::end);
    const Flush flush = at.in;
    for (const std::int64_t n : {1, 5, 17, 33, 70}) {
      CAPTURE(n);
      // gemm: (n, n + 3) times (n + 3, n + 1), each operand transposed or not; beta 0 (C not
      // read) and 0.5 (C read); batched, 2 of each.
      const std::int64_t k = n + 3, m = n + 1;
      Guarded<T> ga(n * k, flush), gb(k * m, flush), ga3(2 * n * k, flush), gb3(2 * k * m, flush);
      Guarded<compute_t<T>> gc(n * m, at.out), gc3(2 * n * m, at.out);
      ga.random(-1, 1);
      gb.random(-1, 1);
      ga3.random(-1, 1);
      gb3.random(-1, 1);
      for (const Trans ta : {Trans::none, Trans::transpose})
        for (const Trans tb : {Trans::none, Trans::transpose}) {
          const auto a = ta == Trans::none ? view_of(ga, n, k) : view_of(ga, k, n);
          const auto b = tb == Trans::none ? view_of(gb, k, m) : view_of(gb, m, k);
          const auto into = [&](auto& g) {  // beta 0, then 0.5
            g.poison();
            gemm(Exec(), ta, a, tb, b, view_of(g, n, m));
            Kokkos::fence();
            CHECK(g.finite());
            gemm(Exec(), ta, a, tb, b, view_of(g, n, m), 2.0, 0.5);
            Kokkos::fence();
            CHECK(g.finite());
          };
          into(gc);
          if constexpr (!std::is_same_v<T, compute_t<T>>) {  // a C of 2-byte values: narrower stores
            Guarded<T> gc2(n * m, at.out);
            into(gc2);
          }
          const auto a3 = ta == Trans::none ? view_of(ga3, 2, n, k) : view_of(ga3, 2, k, n);
          const auto b3 = tb == Trans::none ? view_of(gb3, 2, k, m) : view_of(gb3, 2, m, k);
          gc3.poison();
          gemm(Exec(), ta, a3, tb, b3, view_of(gc3, 2, n, m));
          Kokkos::fence();
          CHECK(gc3.finite());
        }
      // attention: (1, 2, n, d) queries, (1, 2, n + 2, d) keys and values (fp32 math: not fp64).
      if constexpr (!std::is_same_v<T, double>) {
        for (const std::int64_t d : {8, 64, 80}) {
          CAPTURE(d);
          const std::int64_t sk = n + 2;
          Guarded<T> gq(2 * n * d, flush), gk(2 * sk * d, flush), gv(2 * sk * d, flush), go(2 * n * d, at.out);
          gq.random(-1, 1);
          gk.random(-1, 1);
          gv.random(-1, 1);
          for (const bool causal : {false, true}) {
            go.poison();
            attention(Exec(), view_of(gq, 1, 2, n, d), view_of(gk, 1, 2, sk, d), view_of(gv, 1, 2, sk, d),
                      view_of(go, 1, 2, n, d), 0.125f, causal);
            Kokkos::fence();
            CHECK(go.finite());
          }
        }
      }
      // stencil on an (n, n + 1, n + 2) grid.
      Guarded<T> gin(n * (n + 1) * (n + 2), flush), gout(n * (n + 1) * (n + 2), at.out);
      gin.random(-1, 1);
      gout.poison();
      stencil(Exec(), view_of(gin, n, n + 1, n + 2), view_of(gout, n, n + 1, n + 2), 0.5, 1.0 / 12);
      Kokkos::fence();
      CHECK(gout.finite());
      // spmv: the 3D Laplacian of the same grid, its arrays copied into guarded ones.
      const auto L = laplacian_3d<T, std::int32_t>(Exec(), n, n + 1, n + 2);
      Guarded<std::int32_t> gp(L.rows + 1, flush), gcol(L.nnz(), flush);
      Guarded<T> gval(L.nnz(), flush), gxv(L.cols, flush), gyv(L.rows, at.out);
      Kokkos::deep_copy(view_of(gp, L.rows + 1), L.row_ptr);
      Kokkos::deep_copy(view_of(gcol, L.nnz()), L.col_idx);
      Kokkos::deep_copy(view_of(gval, L.nnz()), L.values);
      Csr<T, std::int32_t, Kokkos::HostSpace> A;
      A.rows = L.rows;
      A.cols = L.cols;
      A.row_ptr = view_of(gp, L.rows + 1);
      A.col_idx = view_of(gcol, L.nnz());
      A.values = view_of(gval, L.nnz());
      gxv.random(-1, 1);
      gyv.poison();
      check_csr(Exec(), A);
      spmv(Exec(), A, view_of(gxv, L.cols), view_of(gyv, L.rows));
      Kokkos::fence();
      CHECK(gyv.finite());
      spmv(Exec(), 0.5, A, view_of(gxv, L.cols), 2.0, view_of(gyv, L.rows));  // y read too
      Kokkos::fence();
      CHECK(gyv.finite());
    }
  }
}

#else

TEST_CASE("bounds: host backends only (device memory cannot be guarded by pages)") {}

#endif
