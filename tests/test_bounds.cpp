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
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
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
    for (const Flush flush : flushes)
      for (const std::int64_t n : lengths) {
        CAPTURE(threshold);
        CAPTURE(n);
        CAPTURE(flush == Flush::end);
        test::StreamingThreshold stores(threshold);
        Guarded<T> gx(n, flush), gy(n, flush), gz(n, flush);
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
  const std::int64_t widths[] = {1, 7, 13, 16, 33, 65, 773, 4173};
  for (const std::size_t threshold : test::store_thresholds)
    for (const Flush flush : flushes)
      for (const std::int64_t cols : widths) {
        const std::int64_t rows = 3;
        CAPTURE(threshold);
        CAPTURE(cols);
        CAPTURE(flush == Flush::end);
        test::StreamingThreshold stores(threshold);
        Guarded<T> gx(rows * cols, flush), gy(rows * cols, flush), gw(cols, flush), gb(cols, flush);
        gx.random(-3, 3);
        gw.random(0.5, 1.5);
        gb.random(-1, 1);
        const auto x = view_of(gx, rows, cols), y = view_of(gy, rows, cols);
        const auto w = view_of(gw, cols), b = view_of(gb, cols);
        auto out = [&](const auto& run) {
          gy.poison();
          run();
          Kokkos::fence();
          CHECK(gy.finite());
        };
        out([&] { bias_add(Exec(), x, b, y); });
        out([&] { bias_gelu(Exec(), x, b, y); });
        out([&] { bias_gelu_dropout(Exec(), x, b, y, 0.25, 7, 3); });
        out([&] { softmax(Exec(), x, y); });
        out([&] { layernorm(Exec(), x, y, 1e-5, w, b); });
        out([&] { rmsnorm(Exec(), x, y, 1e-6, w); });
        Guarded<T> gt(cols * rows, flush);
        const auto t = view_of(gt, cols, rows);
        gt.poison();
        transpose(Exec(), x, t);
        CHECK(gt.finite());
        gt.poison();
        transpose_naive(Exec(), x, t);
        CHECK(gt.finite());
        // embedding: the table is x (3 rows), ids at either end of it.
        const std::int64_t tokens = 5;
        Guarded<std::int32_t> gi(tokens, flush);
        for (std::int64_t i = 0; i < tokens; ++i) gi.data()[i] = static_cast<std::int32_t>((i * 2) % rows);
        Guarded<T> ge(tokens * cols, flush);
        ge.poison();
        embedding(Exec(), x, view_of(gi, tokens), view_of(ge, tokens, cols));
        CHECK(ge.finite());
      }
}

TEST_CASE_TEMPLATE("bounds: gemm, attention, stencil and spmv stay within their arrays", T, ROOFTOP_DTYPES) {
  for (const Flush flush : flushes) {
    CAPTURE(flush == Flush::end);
    for (const std::int64_t n : {1, 5, 17, 33, 70}) {
      CAPTURE(n);
      // gemm: (n, n + 3) times (n + 3, n + 1), each operand transposed or not.
      const std::int64_t k = n + 3, m = n + 1;
      Guarded<T> ga(n * k, flush), gb(k * m, flush);
      Guarded<compute_t<T>> gc(n * m, flush);
      ga.random(-1, 1);
      gb.random(-1, 1);
      for (const Trans ta : {Trans::none, Trans::transpose})
        for (const Trans tb : {Trans::none, Trans::transpose}) {
          const auto a = ta == Trans::none ? view_of(ga, n, k) : view_of(ga, k, n);
          const auto b = tb == Trans::none ? view_of(gb, k, m) : view_of(gb, m, k);
          gc.poison();
          gemm(Exec(), ta, a, tb, b, view_of(gc, n, m));
          Kokkos::fence();
          CHECK(gc.finite());
        }
      // attention: (1, 2, n, d) queries, (1, 2, n + 2, d) keys and values (fp32 math: not fp64).
      if constexpr (!std::is_same_v<T, double>) {
        for (const std::int64_t d : {8, 64, 80}) {
          CAPTURE(d);
          const std::int64_t sk = n + 2;
          Guarded<T> gq(2 * n * d, flush), gk(2 * sk * d, flush), gv(2 * sk * d, flush), go(2 * n * d, flush);
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
      Guarded<T> gin(n * (n + 1) * (n + 2), flush), gout(n * (n + 1) * (n + 2), flush);
      gin.random(-1, 1);
      gout.poison();
      stencil(Exec(), view_of(gin, n, n + 1, n + 2), view_of(gout, n, n + 1, n + 2), 0.5, 1.0 / 12);
      Kokkos::fence();
      CHECK(gout.finite());
      // spmv: the 3D Laplacian of the same grid, its arrays copied into guarded ones.
      const auto L = laplacian_3d<T, std::int32_t>(Exec(), n, n + 1, n + 2);
      Guarded<std::int32_t> gp(L.rows + 1, flush), gcol(L.nnz(), flush);
      Guarded<T> gval(L.nnz(), flush), gxv(L.cols, flush), gyv(L.rows, flush);
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
      spmv(Exec(), A, view_of(gxv, L.cols), view_of(gyv, L.rows));
      Kokkos::fence();
      CHECK(gyv.finite());
    }
  }
}

#else

TEST_CASE("bounds: host backends only (device memory cannot be guarded by pages)") {}

#endif
