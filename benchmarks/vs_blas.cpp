// SPDX-License-Identifier: BSD-3-Clause
// rooftop_vs_blas: rooftop's gemm beside the system BLAS (OpenBLAS on Debian) on the same
// square problems in one run. Calls alternate (time_alternated: after one untimed call of each,
// pairs of calls, BLAS's first in even pairs and ours in odd ones) so both see the same machine
// state; each keeps its best time, and each pair gives a ratio. Then both Cs are poisoned again,
// each call made once more, and rooftop's C compared with BLAS's.
//
//   rooftop_vs_blas [n ...]          default: 2048; fp32 (SGEMM) and fp64 (DGEMM)
//   rooftop_vs_blas --decode [n ...] m = 1, 2, 4, 8 rows times an n x n B and B^T (a decode
//                                    step times a weight), fp32 and fp64; default n: 4096
//   --seed N                         the random inputs' seed (default: fresh each run, printed);
//                                    each problem's inputs are a function of it and the
//                                    problem's shape and type, so --seed N with one size
//                                    replays that size from a run of many
//
// Exit status 0 where every problem agrees; 1 where the two Cs differ (or either holds a NaN
// or an infinity: both start poisoned) or a problem cannot run (an allocation fails), naming
// the seed; 2 on a bad argument or a size whose matrices exceed the host's memory.
//
// Threads: rooftop uses the Kokkos OpenMP threads, BLAS its own (OPENBLAS_NUM_THREADS, default
// all the cores the process may run on when it loads). Set OMP_WAIT_POLICY=passive so idle
// OpenMP threads do not spin while BLAS runs, and leave OMP_PROC_BIND unset (see main).
#include "../core/backend.hpp"
#include "../core/random.hpp"
#include "../core/timer.hpp"
#include "../kernels/gemm.hpp"
#include "huge_pages.hpp"

#include <cblas.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#if defined(__linux__)
#include <sched.h>
#endif

using namespace rooftop;

namespace {

template <class T>
void blas_gemm(int m, int n, int k, bool b_transposed, const T* a, const T* b, T* c) {
  const CBLAS_TRANSPOSE tb = b_transposed ? CblasTrans : CblasNoTrans;
  const int ldb = b_transposed ? k : n;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, m, n, k, 1.0f, a, k, b, ldb, 0.0f, c, n);
  } else {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, tb, m, n, k, 1.0, a, k, b, ldb, 0.0, c, n);
  }
}

/// C (m x n) = A (m x k) op(B), op(B) = B (k x n) or B^T (B n x k), all row-major: BLAS and
/// rooftop alternated, then each run once more into a poisoned C and the Cs compared; prints
/// GFLOP/s (square problems) or GB/s of B (a few rows). A and B come from hash64 of `seed` and
/// the problem (m, n, k, op(B), T), the same in any run given the same seed.
template <class T>
void compare(int m, int n, int k, bool b_transposed, int reps, std::uint64_t seed) {
  using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace>;
  BackendExec exec;
  Matrix a("a", m, k), b("b", b_transposed ? n : k, b_transposed ? k : n), c("c", m, n), c_blas("c_blas", m, n);
  using Flat = Kokkos::View<T*, Kokkos::HostSpace>;
  // Fields apart: m, n, k below 2^20 (n <= 65536), op(B) one bit, T's size four.
  const std::uint64_t problem = (std::uint64_t(m) << 45) | (std::uint64_t(n) << 25) | (std::uint64_t(k) << 5) |
                                (std::uint64_t{b_transposed} << 4) | sizeof(T);
  fill_uniform(exec, Flat(a.data(), a.size()), hash64(seed, 2 * problem), -1, 1);
  fill_uniform(exec, Flat(b.data(), b.size()), hash64(seed, 2 * problem + 1), -1, 1);
  const Trans tb = b_transposed ? Trans::transpose : Trans::none;
  const auto call_blas = [&] { blas_gemm(m, n, k, b_transposed, a.data(), b.data(), c_blas.data()); };
  const auto call_ours = [&] { gemm(exec, Trans::none, a, tb, b, c); };
  // ratios: BLAS's time over ours in each pair, so above 1 where rooftop is faster.
  const Alternation t = time_alternated(exec, call_blas, call_ours, 1, reps);
  // Poisoned, then one call each: an entry that call leaves unwritten stays NaN and fails the
  // comparison (a C written by the timed calls before would hide it).
  fill_nan(exec, Flat(c.data(), c.size()));
  fill_nan(exec, Flat(c_blas.data(), c_blas.size()));
  exec.fence();
  call_blas();
  call_ours();
  exec.fence();
  const double ours = t.b.seconds_min, theirs = t.a.seconds_min;
  // The largest |ours - BLAS| relative to the row's largest |BLAS| entry; NaN where either C
  // holds a NaN or an infinity (std::max would pass over a NaN).
  double worst = 0;
  for (int i = 0; i < m && !std::isnan(worst); ++i) {
    double scale = 0, diff = 0;
    for (int j = 0; j < n; ++j) {
      const double ours_ij = double(c(i, j)), blas_ij = double(c_blas(i, j));
      if (!std::isfinite(ours_ij) || !std::isfinite(blas_ij)) {
        diff = std::numeric_limits<double>::quiet_NaN();
        break;
      }
      scale = std::max(scale, std::abs(blas_ij));
      diff = std::max(diff, std::abs(ours_ij - blas_ij));
    }
    worst = std::isnan(diff) ? diff : std::max(worst, diff / std::max(scale, std::numeric_limits<double>::min()));
  }
  const char* type = sizeof(T) == 4 ? "fp32" : "fp64";
  if (m == n && n == k && !b_transposed) {
    const double flops = 2.0 * n * n * n;
    std::printf("%-4s n=%-5d rooftop %8.1f GFLOP/s   BLAS %8.1f GFLOP/s", type, n, flops / ours * 1e-9, flops / theirs * 1e-9);
  } else {
    const double bytes = static_cast<double>(sizeof(T)) * k * n;
    std::printf("%-4s m=%d %s %dx%d  rooftop %6.1f GB/s of B   BLAS %6.1f GB/s", type, m, b_transposed ? "B^T" : "B  ",
                static_cast<int>(b.extent(0)), static_cast<int>(b.extent(1)), bytes / ours * 1e-9, bytes / theirs * 1e-9);
  }
  std::printf("   rooftop/BLAS %.2f (pairs: median %.2f, %.2f-%.2f)   max rel. diff %.1e\n", theirs / ours, t.ratio_median(),
              t.ratios.front(), t.ratios.back(), worst);
  std::fflush(stdout);
  if (!(worst < (sizeof(T) == 4 ? 1e-3 : 1e-10)))
    throw std::runtime_error(std::string(type) + " m=" + std::to_string(m) + " n=" + std::to_string(n) + (b_transposed ? " B^T" : "") +
                             (std::isnan(worst) ? ": results differ: a C entry is NaN or infinite (unwritten, or overflowed)"
                                                : ": results differ"));
}

/// The problems main was given, each compared (compare), in order.
void run(const std::vector<int>& sizes, bool decode, std::uint64_t seed) {
  for (int n : sizes) {
    if (decode) {
      for (const int m : {1, 2, 4, 8})
        for (const bool transposed : {false, true}) {
          compare<float>(m, n, n, transposed, 11, seed);
          compare<double>(m, n, n, transposed, 11, seed);
        }
      continue;
    }
    const int reps = n <= 1024 ? 20 : 7;
    compare<float>(n, n, n, false, reps, seed);
    compare<double>(n, n, n, false, reps, seed);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // With OMP_PROC_BIND set, libgomp binds the main thread to one core as the program loads,
  // before main, and OpenBLAS's pthreads build, initialised then too, sizes its thread pool by
  // the cores it may run on: one. SGEMM then ran on one core (Zen 5 VM, 2 cores: 95-99 against
  // 189-197 GFLOP/s unbound, rooftop 168-177 either way). Say so rather than print that ratio.
#if defined(__linux__)
  cpu_set_t allowed;
  const bool bound = sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) < static_cast<int>(std::thread::hardware_concurrency());
  const int allowed_cores = bound ? CPU_COUNT(&allowed) : 0;
#else
  const bool bound = false;
  const int allowed_cores = 0;
#endif
  Kokkos::ScopeGuard kokkos(argc, argv);
  std::vector<int> sizes;
  bool decode = false;
  std::uint64_t seed = std::random_device{}();
  const char* const usage = "usage: rooftop_vs_blas [--decode] [--seed N] [n ...]\n";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--kokkos", 0) == 0) continue;  // Kokkos's own
    if (arg == "--decode") {
      decode = true;
      continue;
    }
    if (arg == "--seed") {
      const std::string value = i + 1 < argc ? argv[++i] : "";
      char* end = nullptr;
      errno = 0;
      seed = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || !std::isdigit(static_cast<unsigned char>(value[0])) || *end != '\0' || errno == ERANGE) {
        std::fprintf(stderr, "rooftop_vs_blas: --seed needs a whole number below 2^64, got '%s'\n%s", value.c_str(), usage);
        return 2;
      }
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      std::printf("%s"
                  "  n x n GEMM, fp32 and fp64, rooftop beside the system BLAS (default n: 2048)\n"
                  "  --decode: m = 1, 2, 4, 8 rows times an n x n B and B^T (default n: 4096)\n"
                  "  --seed N: the random inputs' seed (default: fresh each run, printed); each problem's\n"
                  "    inputs depend on it and the problem only, so --seed N with one n replays that n\n",
                  usage);
      return 0;
    }
    char* end = nullptr;
    const long n = std::strtol(arg.c_str(), &end, 10);
    if (arg.empty() || *end != '\0' || n <= 0 || n > 65536) {
      std::fprintf(stderr, "rooftop_vs_blas: '%s' is not a matrix size (a whole number from 1 to 65536)\n%s", arg.c_str(), usage);
      return 2;
    }
    sizes.push_back(static_cast<int>(n));
  }
  if (sizes.empty()) sizes = {decode ? 4096 : 2048};
  // Each problem needs A, B and two Cs: refused before anything runs where they would not fit
  // in the host memory available now (MemAvailable, less process_reserve_bytes: Kokkos throws
  // where an allocation fails, or the process is killed for memory, or the kernel would page).
  const double memory = harness::host_available_bytes();
  for (const int n : sizes) {
    const double bytes = sizeof(double) * (decode ? (static_cast<double>(n) * n + 3.0 * 8 * n) : 4.0 * n * n);
    if (memory > 0 && bytes + harness::process_reserve_bytes > memory) {
      std::fprintf(stderr, "rooftop_vs_blas: n = %d needs %.1f GB for its fp64 matrices, more than %s\n", n, bytes * 1e-9,
                   harness::host_available_words(memory).c_str());
      return 2;
    }
  }
  std::printf("rooftop gemm vs the system BLAS, %s backend, %d threads, seed %llu, best of alternating calls (and the\n"
              "  median of each pair's ratio)\n",
              backend_name, compat::concurrency(BackendExec()), static_cast<unsigned long long>(seed));
  if (bound)
    std::printf("warning: this process started bound to %d of %u cores (OMP_PROC_BIND?), so a BLAS that sizes its threads\n"
                "  by that mask runs on fewer cores than rooftop: unset OMP_PROC_BIND and OMP_PLACES for a fair ratio\n",
                allowed_cores, std::thread::hardware_concurrency());
  try {
    run(sizes, decode, seed);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "rooftop_vs_blas: %s (seed %llu: %s--seed %llu with that n replays it)\n", e.what(),
                 static_cast<unsigned long long>(seed), decode ? "--decode " : "", static_cast<unsigned long long>(seed));
    return 1;
  }
  return 0;
}
