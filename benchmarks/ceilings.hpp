// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Machine ceilings, measured by rooftop's own kernels: main-memory and last-level-cache
/// bandwidth (STREAM-family kernels), FP32/FP64 peak (independent FMA chains), the matrix
/// units' bf16/fp16 peak where gemm uses them (independent chains of tile products), and
/// kernel launch overhead (empty kernel).
#pragma once

#include "../backends/cuda/device.hpp"
#include "../core/backend.hpp"
#include "../core/reduction.hpp"
#include "../core/random.hpp"
#include "../core/timer.hpp"
#include "../kernels/gemm.hpp"
#include "../kernels/stream.hpp"
#include "huge_pages.hpp"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iomanip>
#include <istream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#if !defined(__CUDA_ARCH__) && defined(__FMA__)
#include <immintrin.h>
#define ROOFTOP_HAS_FMA_REGISTERS 1
#endif

namespace rooftop::harness {

/// The CPU model in Linux's /proc/cpuinfo text: x86's "model name"; on AArch64, whose
/// cpuinfo names none, the first core's implementer and part numbers, with the name of the
/// server cores listed here ("Neoverse V2 (implementer 0x41, part 0xd4f)").
inline std::string cpu_model(std::istream& cpuinfo) {
  auto value = [](const std::string& line) {
    const std::size_t colon = line.find(':');
    const std::size_t from = colon == std::string::npos ? line.size() : line.find_first_not_of(" \t", colon + 1);
    const std::size_t to = line.find_last_not_of(" \t\r");
    return from == std::string::npos || to == std::string::npos || to < from ? std::string() : line.substr(from, to - from + 1);
  };
  std::string implementer, part;
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0 && !value(line).empty()) return value(line);
    if (line.rfind("CPU implementer", 0) == 0 && implementer.empty()) implementer = value(line);
    if (line.rfind("CPU part", 0) == 0 && part.empty()) part = value(line);
  }
  if (implementer.empty() || part.empty()) return "unknown CPU";
  struct Known { const char* implementer; const char* part; const char* name; };
  // Linux's arch/arm64/include/asm/cputype.h (ARM_CPU_PART_NEOVERSE_*, FUJITSU_CPU_PART_A64FX).
  static constexpr Known known[] = {{"0x41", "0xd0c", "Neoverse N1"}, {"0x41", "0xd40", "Neoverse V1"},
                                    {"0x41", "0xd49", "Neoverse N2"}, {"0x41", "0xd4f", "Neoverse V2"},
                                    {"0x41", "0xd84", "Neoverse V3"}, {"0x41", "0xd8e", "Neoverse N3"},
                                    {"0x46", "0x001", "A64FX"}};
  const std::string ids = "implementer " + implementer + ", part " + part;
  for (const Known& k : known)
    if (implementer == k.implementer && part == k.part) return std::string(k.name) + " (" + ids + ")";
  return "AArch64 CPU (" + ids + ")";
}

/// The device Exec runs on: the GPU's name on CUDA, else the CPU model (the report's
/// system.device, rooftop_bench's context "device").
template <class Exec>
std::string device_name(const Exec& exec) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) return cuda::device_name(exec);
#endif
  (void)exec;
  std::ifstream f("/proc/cpuinfo");
  return cpu_model(f);
}

/// From how many bytes Exec's kernels write their outputs with streaming stores
/// (rooftop::streaming_store_threshold(), which ROOFTOP_STREAMING_STORE_THRESHOLD may set): none
/// where they write none (GPU backends, hosts without them, "never"). The ceilings and every op
/// are measured under it, so the harness and the benchmarks report it.
template <class Exec>
std::optional<std::size_t> host_streaming_threshold() {
  if constexpr (rooftop::detail::host_streams<Exec>) {
    if (streaming_store_threshold() != std::numeric_limits<std::size_t>::max()) return streaming_store_threshold();
  }
  return std::nullopt;
}
/// host_streaming_threshold in words.
inline std::string host_outputs_text(const std::optional<std::size_t>& threshold) {
  return threshold ? "streaming stores from " + std::to_string(*threshold) + " bytes" : "plain stores only";
}

struct Ceilings {
  std::map<std::string, double> bandwidth_gbs;  // "dram", "llc", and per kernel "dram_triad", ...
  double peak_gflops_fp32 = 0;
  double peak_gflops_fp64 = 0;
  /// Matrix units: bf16 and fp16 tiles with fp32 accumulators on GPUs' tensor cores, or bf16
  /// pair dot products on AVX512-BF16 CPUs (bf16 only), measured where gemm runs on them; 0
  /// elsewhere.
  double peak_gflops_bf16_matrix = 0;
  double peak_gflops_fp16_matrix = 0;
  double launch_overhead_us = 0;
  double llc_bytes = 0;  // last-level cache size the sweep and the cache roof are based on
  double main_memory_bytes = 0;  // the sweep's main-memory working set (main_memory_working_set)

  double dram() const { return bandwidth_gbs.at("dram"); }
  /// Whether the cache ceiling was measured above main memory's. On GPUs it has not been
  /// (every GPU report in docs/measured: H100 1652-2314 GB/s against a main memory of
  /// 2866-2924, H200 2165-2224 against 4114-4213): a quarter of L2 (cache_working_set) copies
  /// in 5-9 us, near a launch's 3.2-4.8, so the launches probably set it (not profiled). Such a
  /// ceiling is neither a roof nor a yardstick for the ops' cache runs. (On CPUs it has always
  /// been above: the Granite Rapids VM's LLC 59.5 against 51.5 GB/s the closest.)
  bool cache_above_memory() const {
    const auto llc = bandwidth_gbs.find("llc");
    return llc != bandwidth_gbs.end() && llc->second > dram();
  }
  /// Whether a working set is held to the cache roof: cache-resident (below), with a cache
  /// ceiling above main memory's.
  bool uses_cache_roof(double working_set_bytes) const { return is_cache_resident(working_set_bytes) && cache_above_memory(); }
  /// Bandwidth roof for a working set: the cache's where uses_cache_roof, else main memory's.
  double bandwidth_for(double working_set_bytes) const {
    return uses_cache_roof(working_set_bytes) ? bandwidth_gbs.at("llc") : dram();
  }
  /// Conservative: below 4x the reported last-level cache a working set may still be partly
  /// cached (VMs often report less cache than the host has), so it is held to the cache roof;
  /// but from half the main-memory working set on (main_memory_working_set, where the host's
  /// memory bounds it below 8x the cache) it is main memory's.
  bool is_cache_resident(double working_set_bytes) const {
    return working_set_bytes < std::min(4 * llc_bytes, main_memory_bytes > 0 ? main_memory_bytes / 2 : 4 * llc_bytes);
  }
  /// The compute roof of an op of dtype d: the matrix units' peak for ops whose FLOPs run on
  /// them (where it was measured), else FP64's or FP32's (the 2-byte types compute in fp32).
  double peak_for(DType d, bool matrix_units = false) const {
    const double matrix = d == DType::bf16 ? peak_gflops_bf16_matrix : d == DType::fp16 ? peak_gflops_fp16_matrix : 0;
    if (matrix_units && matrix > 0) return matrix;
    return d == DType::fp64 ? peak_gflops_fp64 : peak_gflops_fp32;
  }
  /// Seconds the roofline allows for an op: max(bytes / bandwidth roof, FLOPs / peak).
  double roof_seconds(const Cost& cost, DType d, bool matrix_units = false) const {
    return std::max(cost.bytes / (bandwidth_for(cost.bytes) * 1e9), cost.flops / (peak_for(d, matrix_units) * 1e9));
  }
};

/// Size of the host's last-level cache in bytes (sysfs; 32 MiB if it cannot be read).
inline double last_level_cache_bytes() { return static_cast<double>(cpu::last_level_cache_bytes()); }

/// Working set (bytes) the harness uses for main memory: 8x the reported last-level cache, at
/// least 256 MB, so at most an eighth of it can be served from cache; but no more than a
/// sixteenth of the host's memory (host_memory_bytes, where it is known; never below 256 MB):
/// an op's float64 verification holds up to eight doubles per element of 2-byte inputs and
/// outputs, nine times its working set, beside it and the ceiling kernels' arrays. A VM on a
/// slice of a large CPU can report far more cache than its cores see: the Granite Rapids VM's
/// sysfs says 480 MiB of L3 for 2 cores and 23 GB of memory, so 8x would have been 4 GB (the
/// bf16 ops' verification alone ~32 GB), where its read-only dot ran at the same 35 GB/s from
/// 256 MB up to 4 GB (1.6 GB, the bound there, is ~3x the L3 it reports).
inline double main_memory_working_set(double llc_bytes, double host_memory) {
  const double ws = std::max(8 * llc_bytes, 256e6);
  return host_memory > 0 ? std::max(std::min(ws, host_memory / 16), 256e6) : ws;
}
inline double main_memory_working_set(double llc_bytes) { return main_memory_working_set(llc_bytes, host_memory_bytes()); }
/// Working set (bytes) the harness uses for the cache roof: a quarter of the last-level cache.
inline double cache_working_set(double llc_bytes) { return llc_bytes / 4; }

/// Last-level cache of the device Exec runs on: the GPU's L2 on CUDA, else the CPU's.
template <class Exec>
double last_level_cache_bytes(const Exec& exec) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) return cuda::l2_bytes(exec);
#endif
  (void)exec;
  return last_level_cache_bytes();
}

/// The memory an op's arrays must fit in, and whose: the device's on CUDA where it is smaller
/// than the host's (the arrays live there; their copies for verification on the host), else
/// the host's (0 if unknown).
template <class Exec>
std::pair<double, const char*> memory_for_arrays(const Exec& exec) {
  const double host = host_memory_bytes();
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
    const double device = cuda::memory_bytes(exec);
    if (host <= 0 || device < host) return {device, "device's"};
  }
#endif
  (void)exec;
  return {host, "host's"};
}

/// Bytes of the widest vector register host code is compiled for (the FMA chains' width).
constexpr int host_vector_bytes() {
#if defined(__AVX512F__)
  return 64;
#else
  return 32;
#endif
}

/// Independent FMA chains per work item, per backend. CPU: twelve registers of the widest
/// vector the host code is compiled for, enough to cover FMA latency x FMA pipes (Zen 3 and
/// Zen 5: 4 cycles x 2 pipes = 8 registers in flight; Zen 1: 5 cycles x 2 pipes of 128-bit
/// halves) with registers to spare; with AVX-512 the chains are in zmm registers, and 256-bit
/// sizing left only 6 of them. GPU: 8 per thread hides
/// the FMA latency with a few warps per scheduler; the launch supplies many more, and few
/// registers per thread keep occupancy high.
template <class Exec, class T>
constexpr int fma_chains() {
  if constexpr (rooftop::detail::ReductionShape<Exec, T>::gpu) return 8;
  return 12 * static_cast<int>(host_vector_bytes() / sizeof(T));
}

#if defined(ROOFTOP_HAS_FMA_REGISTERS)
/// One host vector register of T, host_vector_bytes() wide, and its FMA: the CPU's FMA chains
/// are written in these, not left to the auto-vectorizer, whose vector width is the compiler's
/// tuning choice. GCC's -march=znver1 (Zen 1, whose 256-bit FMAs are two 128-bit halves)
/// prefers 128-bit vectors, and the plain loop's 96 float chains, 24 xmm registers where there
/// are 16, then lived in memory, a load and a store around each FMA: the FP32 ceiling came out
/// at 35.1 GFLOP/s, below FP64's 39.5 (their 48 chains mostly in registers).
template <class T>
struct FmaRegister;
#if defined(__AVX512F__)
template <>
struct FmaRegister<float> {
  using V = __m512;
  static V splat(float x) { return _mm512_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
};
template <>
struct FmaRegister<double> {
  using V = __m512d;
  static V splat(double x) { return _mm512_set1_pd(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
};
#else
template <>
struct FmaRegister<float> {
  using V = __m256;
  static V splat(float x) { return _mm256_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
};
template <>
struct FmaRegister<double> {
  using V = __m256d;
  static V splat(double x) { return _mm256_set1_pd(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
};
#endif
#endif

/// Runs `items` work items of fma_chains<Exec, T>() independent chains x `iters` FMAs; returns FLOPs.
/// On a host built without FMA instructions (ROOFTOP_FUSED_MUL_ADD 0) each step is a multiply
/// and an add (compat::mul_add), the peak that build's kernels can reach; still 2 FLOPs.
/// The chains converge (a < 1) so values stay normal; their sum is written so nothing is dead.
template <class Exec, class T>
double run_fma_chains(const Exec& exec, const Kokkos::View<T*, typename Exec::memory_space>& out, int iters) {
  constexpr int chains = fma_chains<Exec, T>();
#if defined(ROOFTOP_HAS_FMA_REGISTERS)
  if constexpr (!rooftop::detail::ReductionShape<Exec, T>::gpu) {
    using R = FmaRegister<T>;
    using V = typename R::V;
    constexpr int lanes = static_cast<int>(sizeof(V) / sizeof(T)), registers = chains / lanes;
    static_assert(registers * lanes == chains, "run_fma_chains: whole registers");
    Kokkos::parallel_for("rooftop::peak_fma", compat::Range<Exec>(exec, 0, out.extent(0)), [=](const std::int64_t i) {
      V acc[registers];  // chain c is lane c % lanes of register c / lanes, as the plain loop's acc[c] starts
      for (int k = 0; k < registers; ++k)
        for (int l = 0; l < lanes; ++l) acc[k][l] = T(1) + T(1e-3) * T(k * lanes + l + i % 7);
      const V a = R::splat(T(0.9999)), b = R::splat(T(1e-4));
      for (int it = 0; it < iters; ++it) {
        ROOFTOP_UNROLL
        for (int k = 0; k < registers; ++k) acc[k] = R::fma(acc[k], a, b);
      }
      T s = 0;
      for (int k = 0; k < registers; ++k)
        for (int l = 0; l < lanes; ++l) s += acc[k][l];
      out(i) = s;
    });
  } else
#endif
  {
    Kokkos::parallel_for(
        "rooftop::peak_fma", compat::Range<Exec>(exec, 0, out.extent(0)), KOKKOS_LAMBDA(const std::int64_t i) {
          T acc[chains];
          for (int k = 0; k < chains; ++k) acc[k] = T(1) + T(1e-3) * T(k + i % 7);
          const T a = T(0.9999), b = T(1e-4);
          for (int it = 0; it < iters; ++it)
            for (int k = 0; k < chains; ++k) acc[k] = compat::mul_add(acc[k], a, b);
          T s = 0;
          for (int k = 0; k < chains; ++k) s += acc[k];
          out(i) = s;
        });
  }
  return 2.0 * chains * iters * static_cast<double>(out.extent(0));
}

/// GFLOP/s of run(iters) (which returns its FLOPs), the work grown until one run takes >= 20 ms
/// (clock ramp-up and launch cost amortized), then the best of several runs.
template <class Exec, class Run>
double measure_peak(const Exec& exec, bool quick, const Run& run) {
  int iters = 1000;
  double flops = 0;
  for (;;) {
    double seconds = time_fenced(exec, [&] { flops = run(iters); });
    if (seconds > 0.02 || iters > (1 << 26)) break;
    iters *= 4;
  }
  const Timing t = time_repeated(exec, [&] { flops = run(iters); }, 1, quick ? 3 : 7, quick ? 0.1 : 0.4);
  return flops / t.seconds_min * 1e-9;
}

/// Host: 64 work items per thread. GPU: 4 per resident thread (concurrency: SMs x 2048 on an
/// H100), a few waves of 8 chains per thread. 64 per thread there made each run at the
/// starting 1000 iterations about 5 s (FP32) and 8.5 s (FP64) on an H100, a minute of
/// ceilings before the sweep and again after each round; 4 make it about 0.3 and 0.5 s.
template <class Exec, class T>
double measure_peak_gflops(const Exec& exec, bool quick) {
  constexpr int per_thread = rooftop::detail::ReductionShape<Exec, T>::gpu ? 4 : 64;
  const std::int64_t items = std::int64_t{std::max(1, compat::concurrency(exec))} * per_thread;
  Kokkos::View<T*, typename Exec::memory_space> out("rooftop::peak_out", items);
  return measure_peak(exec, quick, [&](int iters) { return run_fma_chains(exec, out, iters); });
}

/// Teams of `warps` warps, each warp running `chains` independent chains of `iters` 16 x 16 x
/// 16 matrix-unit products of T tiles (loaded once from scratch) into fp32 accumulators; each
/// thread then writes the sum of what its lane holds of them. Returns FLOPs.
template <class Exec, class T, int warps = 4>
double run_matrix_chains(const Exec& exec, const Kokkos::View<float*, typename Exec::memory_space>& out, int iters) {
  using Units = rooftop::detail::WarpMatrix<T>;
  constexpr int chains = 4, lanes = rooftop::detail::matrix_tile_lanes<Exec>;
  constexpr int tile = Units::m * Units::k + Units::k * Units::n, staged = warps * Units::m * Units::n;
  constexpr std::size_t bytes = tile * sizeof(T) + staged * sizeof(float), align = 128;
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::LaunchBounds<warps * lanes, 1>>;
  const std::int64_t teams = static_cast<std::int64_t>(out.extent(0)) / (warps * lanes);
  const Policy policy = Policy(exec, teams, warps * lanes).set_scratch_size(0, Kokkos::PerTeam(bytes + align));
  Kokkos::parallel_for("rooftop::peak_matrix", policy, KOKKOS_LAMBDA(const typename Policy::member_type& team) {
    void* const base = team.team_scratch(0).get_shmem_aligned(bytes, align);
    T* const tiles = rooftop::detail::in_shared(static_cast<T*>(base));
    float* const stage = rooftop::detail::in_shared(reinterpret_cast<float*>(tiles + tile));
    // Small values of both signs (exact in bf16 and fp16): the sums stay far from overflow.
    for (int e = team.team_rank(); e < tile; e += team.team_size()) tiles[e] = T(static_cast<float>(e % 7 - 3) * 0x1p-7f);
    team.team_barrier();
    const int warp = team.team_rank() / Units::lanes, lane = team.team_rank() % Units::lanes;
    float sum = 0;
    if (warp < warps) {
      typename Units::A a;
      typename Units::B b;
      Units::load(a, tiles, Units::k);
      Units::load(b, tiles + Units::m * Units::k, Units::n);
      typename Units::C c[chains];
      for (int ch = 0; ch < chains; ++ch) Units::zero(c[ch]);
      for (int it = 0; it < iters; ++it) {
        ROOFTOP_UNROLL
        for (int ch = 0; ch < chains; ++ch) Units::mma(c[ch], a, b);
      }
      float* const mine = stage + warp * Units::m * Units::n;
      ROOFTOP_UNROLL
      for (int ch = 0; ch < chains; ++ch) {
        Units::store(mine, c[ch], Units::n);
        Units::sync_lanes();
        for (int e = lane; e < Units::m * Units::n; e += Units::lanes) sum += mine[e];
        Units::sync_lanes();
      }
    }
    out(team.league_rank() * team.team_size() + team.team_rank()) = sum;
  });
  return 2.0 * Units::m * Units::n * Units::k * chains * iters * warps * static_cast<double>(teams);
}

#if defined(ROOFTOP_HAS_BF16_PAIRS)
/// Runs `items` work items of 12 independent chains x `iters` bf16 pair dot products
/// (cpu::bf16_pair_dot, 64 FLOPs each: sixteen lanes of two products and two additions) on the
/// host; returns FLOPs. Products of 2^-7 and 2^-7: after 2^26 steps a lane holds 2^13.
template <class Exec>
double run_bf16_pair_chains(const Exec& exec, const Kokkos::View<float*, typename Exec::memory_space>& out, int iters) {
  constexpr int chains = 12;
  Kokkos::parallel_for("rooftop::peak_bf16_pairs", compat::Range<Exec>(exec, 0, out.extent(0)), [=](const std::int64_t i) {
    __m512 acc[chains];
    for (int k = 0; k < chains; ++k) acc[k] = _mm512_set1_ps(static_cast<float>(k + i % 7));
    __m512i x = _mm512_set1_epi32(0x3c003c00), y = x;  // two bf16 2^-7 per word
    for (int it = 0; it < iters; ++it) {
      ROOFTOP_UNROLL
      for (int k = 0; k < chains; ++k) acc[k] = cpu::bf16_pair_dot(acc[k], x, y);
      __asm__ volatile("" : "+v"(x), "+v"(y));  // not hoisted: one instruction per chain and step
    }
    for (int k = 1; k < chains; ++k) acc[0] = _mm512_add_ps(acc[0], acc[k]);
    float lanes[16];
    _mm512_storeu_ps(lanes, acc[0]);
    float sum = 0;
    for (const float v : lanes) sum += v;
    out(i) = sum;
  });
  return 64.0 * chains * iters * static_cast<double>(out.extent(0));
}
#endif

template <class Exec, class T>
double measure_matrix_peak_gflops(const Exec& exec, bool quick) {
#if defined(ROOFTOP_HAS_BF16_PAIRS)
  if constexpr (gemm_uses_bf16_pairs<Exec, T, T>) {
    Kokkos::View<float*, typename Exec::memory_space> out("rooftop::peak_bf16_pairs_out", std::max(1, compat::concurrency(exec)) * 64);
    return measure_peak(exec, quick, [&](int iters) { return run_bf16_pair_chains(exec, out, iters); });
  } else
#endif
  {
    const std::int64_t threads = std::max(128, compat::concurrency(exec));
    Kokkos::View<float*, typename Exec::memory_space> out("rooftop::peak_matrix_out", threads / 128 * 128);
    return measure_peak(exec, quick, [&](int iters) { return run_matrix_chains<Exec, T>(exec, out, iters); });
  }
}

/// The bandwidth ceiling kernels over three arrays of n doubles: STREAM's copy, add and triad,
/// and a read-only dot. Which mix of reads and writes streams fastest depends on the machine
/// (on a few cores of a large CPU a read-only stream is limited by the core's outstanding
/// misses, and one with a write stream beside it can move more bytes), so the ceiling is the
/// best of all four. Kept allocated so the harness can sample them again whenever it likes.
template <class Exec>
class StreamCeilingKernels {
 public:
  StreamCeilingKernels(const Exec& exec, std::int64_t n, std::string prefix)
      : exec_(exec), n_(n), prefix_(std::move(prefix)), x_("rooftop::bw_x", n), y_("rooftop::bw_y", n), z_("rooftop::bw_z", n) {
    fill_uniform(exec, x_, 1, 0.5, 1.5);
    fill_uniform(exec, y_, 2, 0.5, 1.5);
    fill_uniform(exec, z_, 3, 0.5, 1.5);
  }

  static constexpr int kernels = 4;

  /// Best GB/s of each kernel over at least `reps` runs and `min_seconds`: "<prefix>_copy",
  /// "<prefix>_add", "<prefix>_triad", "<prefix>_read", and "<prefix>", the best of them.
  std::map<std::string, double> measure(int reps, double min_seconds) const {
    std::map<std::string, double> out;
    for (int k = 0; k < kernels; ++k) {
      const Timing t = time_repeated(exec_, [&] { run(k); }, 1, reps, min_seconds);
      out[prefix_ + "_" + name(k)] = bytes(k) / t.seconds_min * 1e-9;
    }
    double top = 0;
    for (const auto& [key, gbs] : out) top = std::max(top, gbs);
    out[prefix_] = top;
    return out;
  }

  /// The key of the best-of figure ("dram" or "llc").
  const std::string& prefix() const { return prefix_; }

  /// The kernel whose best so far in c is the highest: the one the roof is (0 if none is in c).
  int binding(const Ceilings& c) const {
    int best = 0;
    double top = 0;
    for (int k = 0; k < kernels; ++k) {
      const auto it = c.bandwidth_gbs.find(prefix_ + "_" + name(k));
      if (it != c.bandwidth_gbs.end() && it->second > top) top = it->second, best = k;
    }
    return best;
  }

  /// One timed run of kernel k, as measure() reports it (one key and the best-of key).
  std::map<std::string, double> measure_once(int k) const {
    const double gbs = bytes(k) / time_fenced(exec_, [&] { run(k); }) * 1e-9;
    return {{prefix_ + "_" + name(k), gbs}, {prefix_, gbs}};
  }

 private:
  static const char* name(int k) { return k == 0 ? "copy" : k == 1 ? "add" : k == 2 ? "triad" : "read"; }
  double bytes(int k) const {
    return k == 0   ? copy_cost<double>(n_).bytes
           : k == 1 ? add_cost<double>(n_).bytes
           : k == 2 ? triad_cost<double>(n_).bytes
                    : dot_cost<double>(n_).bytes;
  }
  void run(int k) const {
    if (k == 0) rooftop::copy(exec_, x_, z_);
    if (k == 1) rooftop::add(exec_, x_, y_, z_);
    if (k == 2) rooftop::triad(exec_, 0.5, x_, y_, z_);
    if (k == 3) sink_ = rooftop::dot(exec_, x_, y_);
  }

  using V = Kokkos::View<double*, typename Exec::memory_space>;
  mutable volatile double sink_ = 0;
  Exec exec_;
  std::int64_t n_;
  std::string prefix_;
  V x_, y_, z_;
};

/// Keeps, per kernel, the best of `measured` and what `c` already holds.
inline void keep_best_bandwidth(Ceilings& c, const std::map<std::string, double>& measured) {
  for (const auto& [name, gbs] : measured) c.bandwidth_gbs[name] = std::max(c.bandwidth_gbs[name], gbs);
}

/// The main-memory and cache ceiling kernels at the sweep's two working sets (three arrays
/// totalling each), allocated once: measured in full before the sweep and after every round,
/// and run between the timed runs of every op. On a shared machine the bandwidth drifts by tens
/// of percent within seconds, and ceiling samples interleaved with an op's samples see the
/// machine states the op saw. Every measurement keeps, per kernel, the best so far.
template <class Exec>
class BandwidthSampler {
 public:
  explicit BandwidthSampler(const Exec& exec)
      : llc_bytes_(last_level_cache_bytes(exec)),
        dram_(exec, static_cast<std::int64_t>(main_memory_working_set(llc_bytes_) / 24), "dram"),
        llc_(exec, static_cast<std::int64_t>(cache_working_set(llc_bytes_) / 24), "llc"),
        exec_(exec) {}

  /// The last-level cache the working sets are based on.
  double llc_bytes() const { return llc_bytes_; }

  /// Both ceilings in full (at least `reps` runs and `min_seconds` per kernel), into c.
  void measure(Ceilings& c, bool quick, const std::function<void(const std::string&)>& progress) const {
    const int reps = quick ? 5 : 20;
    const double min_seconds = quick ? 0.1 : 0.5;
    progress("main-memory bandwidth (working set " + std::to_string(static_cast<long>(main_memory_working_set(llc_bytes_) / 1e6)) +
             " MB)");
    keep_best_bandwidth(c, dram_.measure(reps, min_seconds));
    progress("last-level-cache bandwidth (working set " + std::to_string(static_cast<long>(cache_working_set(llc_bytes_) / 1e6)) +
             " MB)");
    keep_best_bandwidth(c, llc_.measure(reps, min_seconds));
  }

  /// Times f() like time_repeated (warm-up, then at least `reps` runs and `min_seconds`),
  /// with one run of a ceiling kernel at the op's working set (the cache's where
  /// cache_resident, which keeps the op's data in the cache, else main memory's) after each
  /// timed run, kept in c
  /// where it beats it. `paired_gbs` is raised to the best of those runs: the bandwidth the
  /// machine gave a ceiling kernel while the op was being timed. Three runs in four are of the
  /// kernel the roof is so far (binding; copy on the VMs measured), the fourth of copy, add,
  /// triad and read in turn, so that another kernel can still overtake it. An op's best time
  /// is the fastest of many runs, and a roof sampled by each kernel in turn gave the binding
  /// kernel a quarter as many chances to catch the machine's fastest moments: silu fp32 2^25
  /// landed at 1.08 of its roof (paired 1.10) in one fresh run on the Zen 4 VM, whose copy
  /// moves between 42 and 90 GB/s within minutes.
  template <class F>
  Timing time_interleaved(Ceilings& c, bool cache_resident, F&& f, int warmup, int reps, double min_seconds, double& paired_gbs) {
    const StreamCeilingKernels<Exec>& kernels = cache_resident ? llc_ : dram_;
    return time_repeated_with(exec_, f, warmup, reps, min_seconds, [&] {
      const int turn = next_++;
      const int k = turn % 4 == 3 ? turn / 4 % StreamCeilingKernels<Exec>::kernels : kernels.binding(c);
      const std::map<std::string, double> sample = kernels.measure_once(k);
      paired_gbs = std::max(paired_gbs, sample.at(kernels.prefix()));
      keep_best_bandwidth(c, sample);
    });
  }
  /// Ceiling kernel runs interleaved with ops so far.
  int samples() const { return next_; }

 private:
  double llc_bytes_;
  StreamCeilingKernels<Exec> dram_, llc_;
  Exec exec_;
  int next_ = 0;
};

/// Seconds per launch of an empty kernel, averaged over many launches, then fenced.
template <class Exec>
double measure_launch_overhead_us(const Exec& exec) {
  const int launches = 2000;
  auto empty = [&] {
    for (int i = 0; i < launches; ++i)
      Kokkos::parallel_for("rooftop::empty", compat::Range<Exec>(exec, 0, 1), KOKKOS_LAMBDA(const std::int64_t) {});
  };
  const Timing t = time_repeated(exec, empty, 1, 5, 0.05);
  return t.seconds_median / launches * 1e6;
}

/// Host <-> device copy bandwidth (GB/s) of 256 MB, from pageable and from pinned host memory:
/// "h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned". Only for devices with their own
/// memory; empty otherwise.
template <class Exec>
std::map<std::string, double> measure_transfer_bandwidth(const Exec& exec, bool quick,
                                                         const std::function<void(const std::string&)>& progress) {
  std::map<std::string, double> out;
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
    progress("host <-> device bandwidth (pageable and pinned)");
    const std::int64_t n = 32 << 20;  // doubles: 256 MB
    const double bytes = 8.0 * n;
    Kokkos::View<double*, Kokkos::CudaSpace> device("rooftop::xfer_device", n);
    Kokkos::View<double*, Kokkos::HostSpace> pageable("rooftop::xfer_pageable", n);
    Kokkos::View<double*, Kokkos::CudaHostPinnedSpace> pinned("rooftop::xfer_pinned", n);
    Kokkos::deep_copy(pageable, 1.0);
    Kokkos::deep_copy(pinned, 1.0);
    const int reps = quick ? 3 : 10;
    auto best = [&](const char* name, const auto& dst, const auto& src) {
      const Timing t = time_repeated(exec, [&] { Kokkos::deep_copy(exec, dst, src); }, 1, reps, 0);
      out[name] = bytes / t.seconds_min * 1e-9;
    };
    best("h2d_pageable", device, pageable);
    best("h2d_pinned", device, pinned);
    best("d2h_pageable", pageable, device);
    best("d2h_pinned", pinned, device);
  }
#endif
  (void)exec;
  (void)quick;
  (void)progress;
  return out;
}

/// Measures the FP32 and FP64 peaks (and the matrix units' where gemm uses them) into c,
/// keeping the better of the new and any earlier value: the harness calls it before the sweep
/// and after every round, as it does the bandwidth ceilings, so a core that was busy elsewhere
/// during one measurement cannot leave a compute roof below what the ops then attain.
/// FP32 runs at least at FP64's rate on every CPU and GPU that rooftop targets (twice the lanes or
/// more), so an FP32 peak measured below FP64's was taken while the cores were busy elsewhere:
/// both are measured again, at most twice, before the sweep relies on them.
template <class Exec>
void measure_compute_peaks(const Exec& exec, Ceilings& c, bool quick, const std::function<void(const std::string&)>& progress) {
  for (int tries = 0; tries < 3; ++tries) {
    if (tries > 0) {
      std::ostringstream why;
      why << std::fixed << std::setprecision(1) << "FP32 peak " << c.peak_gflops_fp32 << " GFLOP/s measured below FP64's "
          << c.peak_gflops_fp64 << ": the cores were busy elsewhere; measuring both again";
      progress(why.str());
    }
    progress("FP32 peak (FMA chains)");
    c.peak_gflops_fp32 = std::max(c.peak_gflops_fp32, measure_peak_gflops<Exec, float>(exec, quick));
    progress("FP64 peak (FMA chains)");
    c.peak_gflops_fp64 = std::max(c.peak_gflops_fp64, measure_peak_gflops<Exec, double>(exec, quick));
    if (c.peak_gflops_fp32 >= c.peak_gflops_fp64) break;
  }
  if constexpr (gemm_uses_matrix_units<Exec, bf16, bf16>) {
    progress("bf16 and fp16 matrix-unit peaks (tensor-core tile chains)");
    c.peak_gflops_bf16_matrix = std::max(c.peak_gflops_bf16_matrix, measure_matrix_peak_gflops<Exec, bf16>(exec, quick));
    c.peak_gflops_fp16_matrix = std::max(c.peak_gflops_fp16_matrix, measure_matrix_peak_gflops<Exec, fp16>(exec, quick));
  } else if constexpr (gemm_uses_bf16_pairs<Exec, bf16, bf16>) {
    progress("bf16 pair dot-product peak (AVX512-BF16 chains)");
    c.peak_gflops_bf16_matrix = std::max(c.peak_gflops_bf16_matrix, measure_matrix_peak_gflops<Exec, bf16>(exec, quick));
  }
}

/// Measures every ceiling, the bandwidth ones with `bandwidth`'s kernels. `progress` receives
/// one line per step.
template <class Exec>
Ceilings measure_ceilings(const Exec& exec, const BandwidthSampler<Exec>& bandwidth, bool quick,
                          const std::function<void(const std::string&)>& progress) {
  Ceilings c;
  c.llc_bytes = bandwidth.llc_bytes();
  c.main_memory_bytes = main_memory_working_set(c.llc_bytes);
  bandwidth.measure(c, quick, progress);
  measure_compute_peaks(exec, c, quick, progress);
  progress("kernel launch overhead");
  c.launch_overhead_us = measure_launch_overhead_us(exec);
  const auto transfers = measure_transfer_bandwidth(exec, quick, progress);
  c.bandwidth_gbs.insert(transfers.begin(), transfers.end());
  return c;
}

}  // namespace rooftop::harness
