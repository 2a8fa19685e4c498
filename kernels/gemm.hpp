// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// gemm: C = alpha * op(A) * op(B) + beta * C, op = none or transpose, for rank-2 Views and for
/// the strided batched form (rank-3 Views, batch first: C(b) = alpha * op(A(b)) * op(B(b)) +
/// beta * C(b)). Any Kokkos layout (LayoutRight, LayoutLeft, LayoutStride). A and B are fp64,
/// fp32, bf16 or fp16; the products accumulate in compute_t (fp64 for fp64 inputs, fp32 for the
/// others); C may be of any of these types. beta == 0 never reads C (NaN in C is overwritten,
/// as in BLAS); K == 0 or alpha == 0 gives C = beta * C (A and B not read).
///
/// One team computes one tile of C. A and B go through team scratch tile by tile along K,
/// converted to the accumulation type and packed so that the innermost loop reads both
/// contiguously; each thread then updates a register-blocked MR x NR block of C with
/// MR * NR independent FMA chains per K step. Two drivers share that packing and micro-kernel:
/// - CPUs (a team is one thread): the team's C tile (up to MC x NC) accumulates in scratch;
///   for each KC-long slice of K the thread sweeps all its MR x NR blocks, keeping the B
///   micro-panel in L1 while the A micro-panels stream from L2 (Goto's loop order).
/// - GPUs (a team is TY x TX threads): each thread owns one MR x NR block whose accumulators stay
///   in registers for the whole K loop, in runs of `vec` consecutive rows and columns (rows
///   ty * vec + g * TY * vec + q, q < vec), so it reads each run from scratch in one vector load
///   and a warp's loads are conflict-free. The tiles of A and B are double-buffered in scratch:
///   each thread loads its part of the next K slice into registers before it computes on the
///   current one (the loads' latency hidden behind the FMAs), one barrier per slice.
/// - GPUs with bf16 or fp16 A and B (gemm_uses_matrix_units): the matrix units (tensor cores,
///   backends/cuda/warp_matrix.hpp). Each warp owns a block of 16 x 16 accumulator tiles; the
///   K slices go through double-buffered scratch in the inputs' own type, loaded as above.
/// - CPUs with AVX512-BF16 and bf16 A and B (gemm_uses_bf16_pairs): the CPU driver with A and
///   B packed in pairs along k, two products per instruction (gemm_slice_bf16_pairs).
/// - CPUs, at most skinny_gemm_rows rows of op(A) and op(B)'s columns or rows contiguous (a
///   decode step times a weight matrix): no tiles, op(B) read once in place (gemm_cpu_skinny).
/// The tile sizes are the named parameters of CpuGemmTiles, GpuGemmTiles and MatrixGemmTiles.
#pragma once

#include "../backends/cpu/gemm_block.hpp"
#include "../backends/cuda/warp_matrix.hpp"
#include "../core/cost.hpp"
#include "../core/error.hpp"
#include "../core/parallel.hpp"
#include "../core/reduction.hpp"
#include "../core/types.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace rooftop {

/// op(X) of gemm: X itself or its transpose.
enum class Trans { none, transpose };

/// Tile sizes of the CPU driver: a team's C tile is at most mc x nc (at least min_mc x min_nc,
/// see cpu_gemm_tile), K advances kc at a time, and the register block is mr x nr, nr two
/// vector registers (cpu::gemm_block_columns: 12 accumulators, of AVX2's 16 registers or
/// AVX-512's 32). With AVX-512 nr had stayed at one register (64 bytes), 6 accumulators for
/// FMAs of latency 4 on two pipes: two registers took fp32 at n = 2048 from 0.65 of the FP32
/// peak to 0.88 (Zen 5 VM, 2 threads, scratch program, two runs: 336 -> 455-457 GFLOP/s; fp64
/// 149-153 -> 195). Chosen by measurement on a Zen 3
/// core (32 KiB L1d, 512 KiB L2): packed A (mc x kc) stays in L2 and one packed B micro-panel
/// (kc x nr) in L1, while the packed B (kc x nc) and the C tile are read from L2 or L3 once
/// per K slice. A and B are packed once per tile and K slice, so the larger the tile, the less
/// packing per FMA: at 96 x 128 the packing took a third of the time (n = 2048, 2 threads:
/// 105 GFLOP/s, 150-163 with the packing skipped); at 288 x 512 (scratch program, GFLOP/s:
/// 108-128 -> 125-147, five runs) it takes a fifth. `rooftop_vs_blas 2048`, builds
/// alternated three times, ours / OpenBLAS: fp32 0.71-0.77 -> 0.83-0.91, fp64 0.65-0.73 ->
/// 0.74-0.88 (with A's rows prefetched, below). kc is 1 KB of A's row (256 fp32, 128 fp64) but
/// never more than keeps B's micro-panel (kc x nr) within 16 KB, half the L1d of the
/// AVX-512 hosts with the smallest (Zen 4, Skylake-SP: 32 KB): with two registers per row the
/// fp32 panel had grown to 32 KB, all of their L1d. On the Zen 5 VM (48 KB L1d), fp32 at n =
/// 2048, 2 threads, scratch program, three alternations: kc 256 412-418, 128 408-414 GFLOP/s.
template <class Acc>
struct CpuGemmTiles {
  static constexpr int mr = 6, nr = cpu::gemm_block_columns<Acc>, mc = 288, nc = 512, min_mc = 96, min_nc = 128,
                       kc = std::min(256 * 4 / static_cast<int>(sizeof(Acc)), 16384 / (nr * static_cast<int>(sizeof(Acc))));
};

/// Tile sizes of the GPU driver: TY x TX threads per team, each with an mr x nr register
/// block in runs of vec (mr and nr multiples of it), so the team's C tile is (TY * mr) x (TX *
/// nr); K advances kc at a time; at most 65536 / (ty tx min_teams) registers per thread, so
/// that min_teams teams fit on a multiprocessor. fp32: the classic 128 x 128 tile of 256
/// threads with 64 accumulators each, runs of 4 (16-byte loads); fp64: 64 x 64, runs of 2.
/// (The first GPU driver, one element per scratch load, K slices loaded and then computed
/// with two barriers each, used 146 registers, one team per multiprocessor: fp32 7.8 TFLOP/s
/// on an H100, 0.16x cuBLAS, 26 November 2026. This one, on an H100 on 27 November 2026: fp32
/// 36.1 TFLOP/s at n = 2048, 0.73x cuBLAS with TF32 off; fp64 9.7, 0.17x.)
template <class Acc>
struct GpuGemmTiles {
  static constexpr int ty = 16, tx = 16, mr = sizeof(Acc) == 8 ? 4 : 8, nr = sizeof(Acc) == 8 ? 4 : 8, kc = 8,
                       vec = sizeof(Acc) == 8 ? 2 : 4, min_teams = 2;
};

/// Tile sizes of the matrix-unit driver (bf16/fp16 A and B on GPUs): warps_m x warps_n warps
/// per team, each with frags_m x frags_n accumulator tiles of 16 x 16, so the team's C tile is
/// (warps_m * frags_m * 16) x (warps_n * frags_n * 16); K advances kc at a time. The 128 x 128
/// tile of 8 warps, 64 x 32 per warp, K slices of 32: double-buffered 37 KB of scratch, under
/// Kokkos 3.4's 40 KiB. On an H100 (27 November 2026) at n = 2048: bf16 79.1, fp16 81.8
/// TFLOP/s, 0.16-0.17x cuBLAS.
struct MatrixGemmTiles {
  static constexpr int warps_m = 2, warps_n = 4, frags_m = 4, frags_n = 2, kc = 32, min_teams = 1;
};

/// Whether gemm runs on the matrix units (tensor cores) for A of TA and B of TB on Exec: on
/// GPUs, for A and B both bf16 or both fp16 (fp32 accumulation).
template <class Exec, class TA, class TB>
inline constexpr bool gemm_uses_matrix_units =
    detail::ReductionShape<Exec, float>::gpu && std::is_same_v<std::remove_cv_t<TA>, std::remove_cv_t<TB>> &&
    (std::is_same_v<std::remove_cv_t<TA>, bf16> || std::is_same_v<std::remove_cv_t<TA>, fp16>);

/// Whether the CPU driver multiplies A of TA and B of TB two products per instruction
/// (cpu::gemm_block_bf16_pairs): on hosts with AVX512-BF16, for A and B both bf16 (fp32
/// accumulation). Zen 5 VM, one core, independent chains: 476-482 GFLOP/s against 257-261 for
/// fp32 FMAs.
template <class Exec, class TA, class TB>
inline constexpr bool gemm_uses_bf16_pairs =
#if defined(ROOFTOP_HAS_BF16_PAIRS)
    detail::on_host<Exec> && std::is_same_v<std::remove_cv_t<TA>, bf16> && std::is_same_v<std::remove_cv_t<TB>, bf16>;
#else
    false;
#endif

namespace detail {

/// Element (i, k) of op(X) of batch b, converted to the accumulation type. Rank-2 Views ignore b.
template <class View, class Acc>
struct GemmOperand {
  using value_type = typename View::value_type;
  View x;
  bool trans;

  KOKKOS_INLINE_FUNCTION Acc operator()(std::int64_t b, std::int64_t i, std::int64_t k) const { return static_cast<Acc>(element(b, i, k)); }
  /// Element (i, k) of op(X) of batch b as stored.
  KOKKOS_INLINE_FUNCTION std::remove_cv_t<value_type> element(std::int64_t b, std::int64_t i, std::int64_t k) const {
    if constexpr (View::rank == 3) {
      return trans ? x(b, k, i) : x(b, i, k);
    } else {
      (void)b;
      return trans ? x(k, i) : x(i, k);
    }
  }
  /// Address of element (i, k) of op(X) of batch b, and the element strides of op(X) along i
  /// and along k (host packing reads contiguous runs through them).
  KOKKOS_INLINE_FUNCTION const typename View::value_type* address(std::int64_t b, std::int64_t i, std::int64_t k) const {
    if constexpr (View::rank == 3) {
      return trans ? compat::address(x, b, k, i) : compat::address(x, b, i, k);
    } else {
      (void)b;
      return trans ? compat::address(x, k, i) : compat::address(x, i, k);
    }
  }
  /// op(X)^T: element (k, i) of it is element (i, k) of op(X).
  KOKKOS_INLINE_FUNCTION GemmOperand transposed() const { return GemmOperand{x, !trans}; }
  std::int64_t stride_i() const { return static_cast<std::int64_t>(x.stride(View::rank - (trans ? 1 : 2))); }
  std::int64_t stride_k() const { return static_cast<std::int64_t>(x.stride(View::rank - (trans ? 2 : 1))); }
  std::int64_t rows() const { return static_cast<std::int64_t>(x.extent(View::rank - (trans ? 1 : 2))); }
  /// Whether every run of `v` elements of op(X) along i (along_i) or k, starting at a multiple
  /// of v, is contiguous and 16-byte aligned in memory: one 16-byte load each.
  bool runs_of(int v, bool along_i) const {
    const std::int64_t along = along_i ? stride_i() : stride_k(), across = along_i ? stride_k() : stride_i();
    const bool batch = View::rank == 2 || static_cast<std::int64_t>(x.stride(0)) % v == 0;
    return along == 1 && across % v == 0 && batch && reinterpret_cast<std::uintptr_t>(x.data()) % 16 == 0 &&
           static_cast<std::int64_t>(sizeof(value_type)) * v == 16;
  }
  std::int64_t cols() const { return static_cast<std::int64_t>(x.extent(View::rank - (trans ? 2 : 1))); }
};

/// Writes alpha * acc + beta * C(b, i, j) (C not read when beta == 0).
template <class CView, class Acc>
KOKKOS_INLINE_FUNCTION void gemm_store(const CView& c, std::int64_t b, std::int64_t i, std::int64_t j, Acc acc, Acc alpha,
                                       Acc beta) {
  using TC = typename CView::value_type;
  if constexpr (CView::rank == 3) {
    c(b, i, j) = static_cast<TC>(beta == Acc(0) ? alpha * acc : alpha * acc + beta * static_cast<Acc>(c(b, i, j)));
  } else {
    (void)b;
    c(i, j) = static_cast<TC>(beta == Acc(0) ? alpha * acc : alpha * acc + beta * static_cast<Acc>(c(i, j)));
  }
}

/// acc[i][j] += sum over k < kc of a[k * a_k + i * a_i] * b[k * b_k + j]: MR x NR independent
/// FMA chains in registers (fixed trip counts: unrolled, the j loop vectorized). The CPU
/// driver's packed panels are a_k = 1, a_i = KC, b_k = NR; attention runs it on row-major tiles.
template <int MR, int NR, class Acc, class Index>
KOKKOS_FORCEINLINE_FUNCTION void gemm_micro_kernel(Index kc, const Acc* a, Index a_k, Index a_i, const Acc* b, Index b_k,
                                                   Acc (&acc)[MR][NR]) {
  for (Index k = 0; k < kc; ++k) {
    ROOFTOP_UNROLL
    for (int i = 0; i < MR; ++i) {
      const Acc ai = a[k * a_k + i * a_i];
      ROOFTOP_SIMD
      for (int j = 0; j < NR; ++j) acc[i][j] = compat::mul_add(ai, b[k * b_k + j], acc[i][j]);
    }
  }
}

/// The problem as the drivers see it.
template <class OpA, class OpB, class CView, class Accumulator>
struct GemmProblem {
  using A = OpA;
  using B = OpB;
  using Acc = Accumulator;
  OpA a;
  OpB b;
  CView c;
  Acc alpha, beta;
  std::int64_t batch, m, n, k;
};

/// out[j] = Acc(in[j]) for j in [0, n) on the host: fp16 and bf16 eight at a time
/// (cpu::widen), the rest a loop the compiler vectorizes.
template <class T, class Acc>
inline void convert_run(const T* in, Acc* out, std::int64_t n) {
  if constexpr (std::is_same_v<Acc, float>) {
    cpu::widen(in, out, n);
  } else {
    for (std::int64_t j = 0; j < n; ++j) out[j] = static_cast<Acc>(in[j]);
  }
}

/// The C tile of the CPU driver for an m x n product (batch of them) on `threads` threads: the
/// largest of Tiles (mc x nc) that leaves at least four tiles per thread, halving the longer
/// side (as a share of its largest) down to min_mc x min_nc; then evened out, so that the tiles
/// along each side are as equal as whole register blocks allow (M = 2048: 8 tiles of 258 rows,
/// not 7 of 288 and one of 32).
template <class Tiles>
void cpu_gemm_tile(std::int64_t batch, std::int64_t m, std::int64_t n, int threads, int& mc, int& nc) {
  auto count = [](std::int64_t extent, int tile) { return (extent + tile - 1) / tile; };
  mc = Tiles::mc;
  nc = Tiles::nc;
  while (batch * count(m, mc) * count(n, nc) < 4 * static_cast<std::int64_t>(threads) && (mc > Tiles::min_mc || nc > Tiles::min_nc)) {
    if (nc > Tiles::min_nc && (mc <= Tiles::min_mc || nc * Tiles::mc >= mc * Tiles::nc)) {
      nc = std::max(Tiles::min_nc, (nc / 2 + Tiles::nr - 1) / Tiles::nr * Tiles::nr);
    } else {
      mc = std::max(Tiles::min_mc, (mc / 2 + Tiles::mr - 1) / Tiles::mr * Tiles::mr);
    }
  }
  auto even = [&](std::int64_t extent, int tile, int block) {
    const std::int64_t tiles = std::max<std::int64_t>(count(extent, tile), 1);
    return static_cast<int>(std::min<std::int64_t>(tile, (count(extent, static_cast<int>(tiles)) + block - 1) / block * block));
  };
  mc = even(m, mc, Tiles::mr);
  nc = even(n, nc, Tiles::nr);
}

#if defined(ROOFTOP_HAS_BF16_PAIRS)
/// The CPU driver's K slice [k0, k0 + kc) of the mv x nv C tile at (m0, n0) of batch bt (cs,
/// row stride nc) for bf16 A and B (gemm_uses_bf16_pairs): A and B packed as they are stored,
/// in pairs along k (odd kc padded with a 0), A's micro-panel rows KC words apart and B's
/// micro-panels kp x NR words, then cpu::gemm_block_bf16_pairs over every register block.
/// run_a, run_b: as in gemm_cpu.
template <int MR, int NR, int KC, int b_rows_ahead, class P>
void gemm_slice_bf16_pairs(const P& p, std::int64_t bt, std::int64_t m0, std::int64_t n0, int mv, int nv, std::int64_t k0, int kc,
                           bool run_a, bool run_b, std::uint32_t* as, std::uint32_t* bs, float* cs, int nc) {
  const int kp = (kc + 1) / 2, row_blocks = (mv + MR - 1) / MR, panels = (nv + NR - 1) / NR;
  const bf16 zero = bf16::from_bits(0);
  for (int row = 0; row < row_blocks * MR; ++row) {
    std::uint32_t* const dst = as + static_cast<std::int64_t>(row) * KC;
    if (row >= mv) {
      for (int q = 0; q < kp; ++q) dst[q] = 0;
    } else if (run_a) {
      cpu::bf16_row_pairs(p.a.address(bt, m0 + row, k0), kc, dst);
    } else {
      for (int q = 0; q < kp; ++q)
        dst[q] = cpu::bf16_pair(p.a.element(bt, m0 + row, k0 + 2 * q), 2 * q + 1 < kc ? p.a.element(bt, m0 + row, k0 + 2 * q + 1) : zero);
    }
  }
  for (int q = 0; q < kp; ++q) {
    for (int r = 2 * q + b_rows_ahead; r < 2 * q + b_rows_ahead + 2 && run_b && r < kc; ++r)
      cpu::prefetch_run(p.b.address(bt, k0 + r, n0), nv);
    const bool odd = 2 * q + 1 < kc;
    for (int jr = 0; jr < panels; ++jr) {
      std::uint32_t* const dst = bs + (static_cast<std::int64_t>(jr) * kp + q) * NR;
      const int j0 = jr * NR;
      if (run_b && j0 + NR <= nv) {
        cpu::bf16_interleave_rows(p.b.address(bt, k0 + 2 * q, n0 + j0), odd ? p.b.address(bt, k0 + 2 * q + 1, n0 + j0) : nullptr, NR, dst);
      } else {
        for (int j = 0; j < NR; ++j)
          dst[j] = j0 + j >= nv ? 0u
                                : cpu::bf16_pair(p.b.element(bt, k0 + 2 * q, n0 + j0 + j),
                                                 odd ? p.b.element(bt, k0 + 2 * q + 1, n0 + j0 + j) : zero);
      }
    }
  }
  for (int jr = 0; jr < panels; ++jr)
    for (int ir = 0; ir < row_blocks; ++ir)
      cpu::gemm_block_bf16_pairs<MR, NR>(kp, as + static_cast<std::int64_t>(ir) * MR * KC, KC,
                                         bs + static_cast<std::int64_t>(jr) * kp * NR, NR, cs + ir * MR * nc + jr * NR, nc);
}
#endif

/// CPU driver: one thread per team, the team's C tile accumulated in scratch (see file comment).
template <class Tiles, class Exec, class P>
void gemm_cpu(const Exec& exec, const P& p) {
  using Acc = decltype(p.alpha);
  constexpr int MR = Tiles::mr, NR = Tiles::nr, KC = Tiles::kc;
  static_assert(Tiles::mc % MR == 0 && Tiles::nc % NR == 0 && Tiles::min_mc % MR == 0 && Tiles::min_nc % NR == 0,
                "gemm: CPU tile sizes must be multiples of the register block");
  int MC = 0, NC = 0;
  cpu_gemm_tile<Tiles>(p.batch, p.m, p.n, compat::concurrency(exec), MC, NC);
  // Tiles handed out dynamically: on a shared machine a core that is busy elsewhere takes
  // fewer of them instead of holding up the whole call.
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Scratch = Kokkos::View<Acc*, typename Exec::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  const std::int64_t tiles_m = (p.m + MC - 1) / MC, tiles_n = (p.n + NC - 1) / NC;
  const std::size_t scratch = scratch_lines_bytes<Exec, Acc>(MC * KC) + scratch_lines_bytes<Exec, Acc>(KC * NC) + scratch_lines_bytes<Exec, Acc>(MC * NC);
  const int league = league_size("gemm", p.batch * tiles_m * tiles_n);
  const Policy policy = Policy(exec, league, 1).set_scratch_size(1, Kokkos::PerTeam(scratch));
  // Where A's rows run along k and B's along its columns in memory (LayoutRight, not
  // transposed), packing converts whole runs through pointers (convert_run): element by
  // element through the operand's layout and transpose test it cost more than the FMAs (n =
  // 2048, 2 threads, scratch program alternating builds, GFLOP/s: fp32 54-75 -> 74-83, bf16
  // 55-76 -> 103-109, fp16 38-46 -> 103-118).
  const bool run_a = on_host<Exec> && p.a.stride_k() == 1, run_b = on_host<Exec> && p.b.stride_k() == 1;
#if defined(ROOFTOP_HAS_BF16_PAIRS)
  // bf16 A and B on AVX512-BF16 hosts: packed in pairs along k, two products per instruction
  // (gemm_slice_bf16_pairs); the scratch holds words instead of floats, in the same room.
  constexpr bool pairs = gemm_uses_bf16_pairs<Exec, typename P::A::value_type, typename P::B::value_type> &&
                         std::is_same_v<Acc, float> && NR % 16 == 0;
#endif
  Kokkos::parallel_for("rooftop::gemm", policy, KOKKOS_LAMBDA(const typename Policy::member_type& team) {
    const std::int64_t t = team.league_rank(), bt = t / (tiles_m * tiles_n);
    const std::int64_t m0 = t / tiles_n % tiles_m * MC, n0 = t % tiles_n * NC;
    const int mv = static_cast<int>(p.m - m0 < MC ? p.m - m0 : MC), nv = static_cast<int>(p.n - n0 < NC ? p.n - n0 : NC);
    const auto& space = team.team_scratch(1);
    Scratch as(scratch_lines<Acc>(space, MC * KC), MC * KC), bs(scratch_lines<Acc>(space, KC * NC), KC * NC),
        cs(scratch_lines<Acc>(space, MC * NC), MC * NC);
    for (int e = 0; e < MC * NC; ++e) cs(e) = Acc(0);
    for (std::int64_t k0 = 0; k0 < p.k; k0 += KC) {
      const int kc = static_cast<int>(p.k - k0 < KC ? p.k - k0 : KC);
#if defined(ROOFTOP_HAS_BF16_PAIRS)
      if constexpr (pairs) {
        gemm_slice_bf16_pairs<MR, NR, KC, 8>(p, bt, m0, n0, mv, nv, k0, kc, run_a, run_b, reinterpret_cast<std::uint32_t*>(as.data()),
                                             reinterpret_cast<std::uint32_t*>(bs.data()), cs.data(), NC);
        continue;
      }
#endif
      // Packed A: micro-panel ir holds its MR rows as they are, KC apart (the micro-kernel
      // broadcasts a[i * KC + k], each row a stream along k); rows past M are 0. Packed as kc
      // runs of MR, a row contiguous in A was converted into a buffer and then spread MR apart
      // one element at a time, a third of the fp32 driver's time at n = 1024 on one thread
      // (Zen 3 VM, perf). rooftop_vs_blas 2048, 2 threads, binaries alternated, ours /
      // OpenBLAS: fp32 0.41-0.49 (four runs) -> 0.45-0.56 (seven), fp64 0.60-0.64 -> 0.59-0.69.
      constexpr int a_rows_ahead = 8;
      for (int ir = 0; ir < (mv + MR - 1) / MR; ++ir)
        for (int i = 0; i < MR; ++i) {
          const int row = ir * MR + i;
          Acc* dst = &as((ir * MR + i) * KC);
#if !defined(__CUDA_ARCH__)
          // The row a_rows_ahead on prefetched, as B's rows are below (n = 2048, 2 threads,
          // scratch program, two runs of six alternations: fp32 1.02-1.05x, fp64 1.02-1.06x).
          if (run_a && row + a_rows_ahead < mv) cpu::prefetch_run(p.a.address(bt, m0 + row + a_rows_ahead, k0), kc);
#endif
          if (row < mv) {
            if (!run_a) {
              for (int kk = 0; kk < kc; ++kk) dst[kk] = p.a(bt, m0 + row, k0 + kk);
            } else {
#if !defined(__CUDA_ARCH__)
              // A row contiguous along k: converted in one run.
              if constexpr (on_host<Exec>) convert_run(p.a.address(bt, m0 + row, k0), dst, kc);
#endif
            }
          } else {
            for (int kk = 0; kk < kc; ++kk) dst[kk] = Acc(0);
          }
        }
      // Packed B: micro-panel jr holds columns jr*NR.. as kc runs of NR; columns past N are 0.
      // Row by row of the slice, each row's run of columns prefetched b_rows_ahead rows before
      // it is read: B's rows are n apart, a stream of its own each, and the first line of each
      // run had stalled the packing for a third of the fp32 driver's time (one thread, n =
      // 2048, perf). rooftop_vs_blas 2048, 2 threads, builds alternated three times: fp32 97-102
      // -> 106-110 GFLOP/s (0.55-0.62 -> 0.67-0.69 of OpenBLAS beside it); fp64 unchanged;
      // the harness's gemm (huge pages), twice: fp32 79-106 -> 125-133.
      constexpr int b_rows_ahead = 8;
      for (int kk = 0; kk < kc; ++kk) {
#if !defined(__CUDA_ARCH__)
        if (run_b && kk + b_rows_ahead < kc) cpu::prefetch_run(p.b.address(bt, k0 + kk + b_rows_ahead, n0), nv);
#endif
        for (int jr = 0; jr < (nv + NR - 1) / NR; ++jr) {
          Acc* dst = &bs(jr * NR * kc + kk * NR);
          if (!run_b || (jr + 1) * NR > nv) {
            for (int j = 0; j < NR; ++j) dst[j] = jr * NR + j < nv ? p.b(bt, k0 + kk, n0 + jr * NR + j) : Acc(0);
          } else {
#if !defined(__CUDA_ARCH__)
            // B row contiguous along its columns: the NR of them converted in one run.
            if constexpr (on_host<Exec>) convert_run(p.b.address(bt, k0 + kk, n0 + jr * NR), dst, NR);
#endif
          }
        }
      }
      for (int jr = 0; jr < (nv + NR - 1) / NR; ++jr)
        for (int ir = 0; ir < (mv + MR - 1) / MR; ++ir) {
          Acc* c = &cs(ir * MR * NC + jr * NR);
#if defined(ROOFTOP_HAS_GEMM_BLOCK)
          if constexpr (cpu::has_gemm_block<Acc, NR>) {
            cpu::gemm_block<MR, NR>(kc, &as(ir * MR * KC), 1, KC, &bs(jr * NR * kc), NR, c, NC);
            continue;
          }
#endif
          Acc acc[MR][NR];  // the slice's sums from 0, then added to C (see cpu::gemm_block)
          for (int i = 0; i < MR; ++i)
            for (int j = 0; j < NR; ++j) acc[i][j] = Acc(0);
          gemm_micro_kernel<MR, NR>(kc, &as(ir * MR * KC), 1, KC, &bs(jr * NR * kc), NR, acc);
          for (int i = 0; i < MR; ++i)
            for (int j = 0; j < NR; ++j) c[i * NC + j] += acc[i][j];
        }
    }
    for (int i = 0; i < mv; ++i)
      for (int j = 0; j < nv; ++j) gemm_store(p.c, bt, m0 + i, n0 + j, cs(i * NC + j), p.alpha, p.beta);
  });
}

/// out[q] = in[q] for q < V from team scratch: on CUDA one 16-byte load per four floats or two
/// doubles (`in` aligned to V values), elsewhere V loads.
template <int V, class Acc>
KOKKOS_FORCEINLINE_FUNCTION void load_run(const Acc* in, Acc* out) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<Acc, float> && V % 4 == 0) {
    ROOFTOP_UNROLL
    for (int q = 0; q < V; q += 4) {
      const float4 v = *reinterpret_cast<const float4*>(in + q);
      out[q] = v.x, out[q + 1] = v.y, out[q + 2] = v.z, out[q + 3] = v.w;
    }
  } else if constexpr (std::is_same_v<Acc, double> && V % 2 == 0) {
    ROOFTOP_UNROLL
    for (int q = 0; q < V; q += 2) {
      const double2 v = *reinterpret_cast<const double2*>(in + q);
      out[q] = v.x, out[q + 1] = v.y;
    }
  } else
#endif
  {
    ROOFTOP_UNROLL
    for (int q = 0; q < V; ++q) out[q] = in[q];
  }
}

/// One operand's R x KC tile of a K slice (rows r of op(A), or of op(B)^T) on its way from
/// memory into team scratch, as the GPU drivers load it: thread `me` of `threads` holds
/// elements me + threads * s in registers, as T (the accumulation type, or the inputs' own
/// type for the matrix units), from fetch (0 outside the operand) to stash. Consecutive
/// threads take consecutive elements along whichever dimension is contiguous in memory, r
/// where possible (`along_r`), else k: coalesced loads.
///
/// Where the operand's runs along that dimension are 16-byte aligned (GemmOperand::runs_of: it
/// is stored as T), the tile lies wholly inside the operand and splits evenly into runs of V =
/// 16 / sizeof(T) over the threads, each thread loads whole runs instead (V consecutive
/// elements, one 16-byte load each), and stores a run at once where it is contiguous in scratch.
template <class T, int R, int KC, int threads>
struct GemmTileLoad {
  static constexpr int per = (KC * R + threads - 1) / threads, V = 16 / sizeof(T);
  static constexpr bool has_runs = V > 1 && R % V == 0 && KC % V == 0 && (KC * R) % (V * threads) == 0;
  bool along_r, runs;
  bool now = false;  // the tile in registers was fetched in runs
  int me;
  alignas(16) T regs[per];

  KOKKOS_FORCEINLINE_FUNCTION GemmTileLoad(bool along, bool aligned_runs, int rank)
      : along_r(along), runs(has_runs && aligned_runs), me(rank), regs{} {}

  /// Element e < KC * R is (r, kk); run e < KC * R / V starts at (r, kk).
  KOKKOS_FORCEINLINE_FUNCTION void at(int e, int& r, int& kk) const {
    r = along_r ? e % R : e / KC;
    kk = along_r ? e / R : e % KC;
  }
  KOKKOS_FORCEINLINE_FUNCTION void run_at(int e, int& r, int& kk) const {
    r = along_r ? e % (R / V) * V : e / (KC / V);
    kk = along_r ? e / (R / V) : e % (KC / V) * V;
  }
  /// f(s, e, r, kk) for this thread's elements (s: register, e: element), or f(s, r, kk) for
  /// its runs (registers s V to s V + V - 1).
  template <class F>
  KOKKOS_FORCEINLINE_FUNCTION void each_element(const F& f) const {
    ROOFTOP_UNROLL
    for (int s = 0; s < per; ++s) {
      int r, kk;
      const int e = me + threads * s;
      at(e, r, kk);
      f(s, e, r, kk);
    }
  }
  template <class F>
  KOKKOS_FORCEINLINE_FUNCTION void each_run(const F& f) const {
    ROOFTOP_UNROLL
    for (int s = 0; s < per / V; ++s) {
      int r, kk;
      run_at(me + threads * s, r, kk);
      f(s, r, kk);
    }
  }

  /// The tile at (r0, k0) of op (a GemmOperand, or one transposed) of batch bt, whose rows
  /// past `rows` and columns past `cols` are 0.
  template <class Op>
  KOKKOS_FORCEINLINE_FUNCTION void fetch(const Op& op, std::int64_t bt, std::int64_t r0, std::int64_t k0, std::int64_t rows,
                                         std::int64_t cols) {
    now = runs && r0 + R <= rows && k0 + KC <= cols;
    if constexpr (has_runs) {
      if (now) {
        each_run([&](const int s, const int r, const int kk) { copy_aligned<16>(regs + s * V, op.address(bt, r0 + r, k0 + kk)); });
        return;
      }
    }
    each_element([&](const int s, const int e, const int r, const int kk) {
      regs[s] = e < KC * R && r0 + r < rows && k0 + kk < cols ? static_cast<T>(op.element(bt, r0 + r, k0 + kk)) : T(0.0f);
    });
  }

  /// Element (r, kk) to to[r * SR + kk * SK]; a run contiguous in scratch too (SR = 1 along
  /// r, SK = 1 along k) in one 16-byte store: the other stride a multiple of V, `to` 16-byte
  /// aligned.
  template <int SR, int SK>
  KOKKOS_FORCEINLINE_FUNCTION void stash(T* to) const {
    static_assert(!has_runs || ((SR == 1 || SR % V == 0) && (SK == 1 || SK % V == 0)), "gemm: scratch rows must keep runs 16-byte aligned");
    if constexpr (has_runs) {
      if (now) {
        each_run([&](const int s, const int r, const int kk) {
          T* const run = to + r * SR + kk * SK;
          if ((along_r ? SR : SK) == 1) {
            copy_aligned<16>(run, regs + s * V);
          } else {
            ROOFTOP_UNROLL
            for (int q = 0; q < V; ++q) run[q * (along_r ? SR : SK)] = regs[s * V + q];
          }
        });
        return;
      }
    }
    each_element([&](const int s, const int e, const int r, const int kk) {
      if (e < KC * R) to[r * SR + kk * SK] = regs[s];
    });
  }
};

/// One K slice of op(A) (BM x KC) and op(B) (KC x BN), loaded as GemmTileLoad tiles: op(A)'s
/// rows i, and op(B)'s columns j as the rows of op(B)^T.
template <class T, int BM, int BN, int KC, int threads>
struct GemmSlice {
  static constexpr int kc = KC, V = 16 / sizeof(T);
  GemmTileLoad<T, BM, KC, threads> a;
  GemmTileLoad<T, BN, KC, threads> b;

  /// How the operands load (on the host, once per call): the contiguous dimension of each
  /// (i of op(A), j of op(B), else k) and whether its runs of V along it are aligned.
  struct Plan {
    bool a_along_i, b_along_j, a_runs, b_runs;
  };
  template <class P>
  static Plan plan(const P& p) {
    const bool a_along_i = p.a.stride_i() == 1, b_along_j = p.b.stride_k() == 1;
    return {a_along_i, b_along_j, p.a.runs_of(V, a_along_i), p.b.transposed().runs_of(V, b_along_j)};
  }

  KOKKOS_FORCEINLINE_FUNCTION GemmSlice(const Plan& plan, int rank)
      : a(plan.a_along_i, plan.a_runs, rank), b(plan.b_along_j, plan.b_runs, rank) {}

  template <class P>
  KOKKOS_FORCEINLINE_FUNCTION void fetch(const P& p, std::int64_t bt, std::int64_t m0, std::int64_t n0, std::int64_t k0) {
    a.fetch(p.a, bt, m0, k0, p.m, p.k);
    b.fetch(p.b.transposed(), bt, n0, k0, p.n, p.k);
  }
  /// a(i, kk) to as[i * AI + kk * AK], b(kk, j) to bs[kk * BK + j].
  template <int AI, int AK, int BK>
  KOKKOS_FORCEINLINE_FUNCTION void stash(T* as, T* bs) const {
    a.template stash<AI, AK>(as);
    b.template stash<1, BK>(bs);
  }
};

/// The K loop of the GPU drivers over `slices` slices of K: slice s is computed from scratch
/// buffer s & 1 (compute(buf)) while slice s + 1 is fetched into registers, then stashed into
/// the other buffer (stash(buf)), which was last read before the previous barrier; one team
/// barrier per slice.
template <class Member, class Slice, class P, class Stash, class Compute>
KOKKOS_FORCEINLINE_FUNCTION void gemm_slices(const Member& team, Slice& slice, const P& p, std::int64_t bt, std::int64_t m0,
                                             std::int64_t n0, std::int64_t slices, const Stash& stash, const Compute& compute) {
  if (slices > 0) {
    slice.fetch(p, bt, m0, n0, 0);
    stash(0);
  }
  team.team_barrier();
  for (std::int64_t s = 0; s < slices; ++s) {
    const int buf = static_cast<int>(s & 1);
    const bool more = s + 1 < slices;
    if (more) slice.fetch(p, bt, m0, n0, (s + 1) * Slice::kc);
    compute(buf);
    if (more) stash(buf ^ 1);
    team.team_barrier();
  }
}

/// GPU driver: TY x TX threads per team, each keeping its MR x NR block of C in registers (see
/// file comment). Correct for any team shape, so the tests also run it on CPUs.
template <class Tiles, class Exec, class P>
void gemm_gpu(const Exec& exec, const P& p) {
  using Acc = decltype(p.alpha);
  constexpr int TY = Tiles::ty, TX = Tiles::tx, MR = Tiles::mr, NR = Tiles::nr, KC = Tiles::kc, V = Tiles::vec;
  static_assert(MR % V == 0 && NR % V == 0, "gemm: GPU register blocks must be whole runs of vec");
  constexpr int BM = TY * MR, BN = TX * NR, threads = TY * TX;
  // Scratch rows (one per k) of the A and B tiles, padded by a run: a warp storing down a
  // column of A (k consecutive in memory) spreads over the banks.
  constexpr int LA = BM + V, LB = BN + V, tile = KC * LA + KC * LB;
  constexpr std::size_t align = V * sizeof(Acc);
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::LaunchBounds<threads, Tiles::min_teams>>;
  const std::int64_t tiles_m = (p.m + BM - 1) / BM, tiles_n = (p.n + BN - 1) / BN, slices = (p.k + KC - 1) / KC;
  const std::size_t scratch = 2 * tile * sizeof(Acc) + align;
  const int league = league_size("gemm", p.batch * tiles_m * tiles_n);
  const Policy policy = Policy(exec, league, threads).set_scratch_size(0, Kokkos::PerTeam(scratch));
  using Slice = GemmSlice<Acc, BM, BN, KC, threads>;
  const typename Slice::Plan plan = Slice::plan(p);
  Kokkos::parallel_for("rooftop::gemm", policy, KOKKOS_LAMBDA(const typename Policy::member_type& team) {
    const std::int64_t t = team.league_rank(), bt = t / (tiles_m * tiles_n);
    const std::int64_t m0 = t / tiles_n % tiles_m * BM, n0 = t % tiles_n * BN;
    const int me = team.team_rank(), ty = me / TX, tx = me % TX;
    Acc* const as = in_shared(static_cast<Acc*>(team.team_scratch(0).get_shmem_aligned(2 * tile * sizeof(Acc), align)));
    // Buffer buf holds a(i, kk) at kk * LA + i and b(kk, j) at kk * LB + j.
    Slice slice(plan, me);
    auto stash = [&](const int buf) { slice.template stash<1, LA, LB>(as + buf * tile, as + buf * tile + KC * LA); };
    Acc acc[MR][NR];
    ROOFTOP_UNROLL
    for (int i = 0; i < MR; ++i) {
      ROOFTOP_UNROLL
      for (int j = 0; j < NR; ++j) acc[i][j] = Acc(0);
    }
    gemm_slices(team, slice, p, bt, m0, n0, slices, stash, [&](const int buf) {
      const Acc* const a = as + buf * tile;
      const Acc* const b = a + KC * LA;
      // Rows of the slice past K are 0 in both tiles: the whole slice, a loop of fixed length.
      ROOFTOP_UNROLL
      for (int kk = 0; kk < KC; ++kk) {
        Acc ak[MR], bk[NR];
        ROOFTOP_UNROLL
        for (int g = 0; g < MR / V; ++g) load_run<V>(a + kk * LA + g * TY * V + ty * V, ak + g * V);
        ROOFTOP_UNROLL
        for (int g = 0; g < NR / V; ++g) load_run<V>(b + kk * LB + g * TX * V + tx * V, bk + g * V);
        ROOFTOP_UNROLL
        for (int i = 0; i < MR; ++i) {
          ROOFTOP_UNROLL
          for (int j = 0; j < NR; ++j) acc[i][j] = compat::mul_add(ak[i], bk[j], acc[i][j]);
        }
      }
    });
    ROOFTOP_UNROLL
    for (int i = 0; i < MR; ++i) {
      ROOFTOP_UNROLL
      for (int j = 0; j < NR; ++j) {
        const std::int64_t row = m0 + i / V * (TY * V) + ty * V + i % V, col = n0 + j / V * (TX * V) + tx * V + j % V;
        if (row < p.m && col < p.n) gemm_store(p.c, bt, row, col, acc[i][j], p.alpha, p.beta);
      }
    }
  });
}

/// Matrix-unit driver for bf16 or fp16 A and B (both the same type), fp32 accumulation: a team
/// of WM x WN warps computes a C tile of (WM * FM * 16) x (WN * FN * 16), each warp FM x FN
/// tiles of 16 x 16 with its accumulators in the matrix units' registers for the whole K loop.
/// The slices of A (as i, k) and B (as k, j) go through double-buffered scratch in the inputs'
/// own type, loaded as gemm_gpu loads its own (GemmSlice: the next slice into registers while
/// the current one is multiplied, one barrier per slice). C leaves through scratch, one 16 x 16
/// tile per warp at a time, alpha and beta applied as gemm_store writes it. On hosts, and in
/// the tests, each warp is one thread emulating the tiles (backends/cuda/warp_matrix.hpp).
template <class Tiles, class Exec, class P>
void gemm_matrix_units(const Exec& exec, const P& p) {
  using T = std::remove_cv_t<typename P::A::value_type>;
  using Units = WarpMatrix<T>;
  static_assert(std::is_same_v<T, std::remove_cv_t<typename P::B::value_type>>, "gemm: matrix units take A and B of one type");
  constexpr int WM = Tiles::warps_m, WN = Tiles::warps_n, FM = Tiles::frags_m, FN = Tiles::frags_n, KC = Tiles::kc;
  constexpr int tm = Units::m, tn = Units::n, tk = Units::k;
  static_assert(KC % tk == 0, "gemm: the matrix units' K slice must be whole tiles");
  constexpr int warps = WM * WN, BM = WM * FM * tm, BN = WN * FN * tn;
  constexpr int threads = warps * matrix_tile_lanes<Exec>;
  // Scratch rows padded by 8 values (16 bytes): consecutive rows of a tile start in different
  // banks; every tile starts 32 bytes aligned (ld a multiple of 8 values, 16-row steps).
  constexpr int LA = KC + 8, LB = BN + 8, LS = tn + 4, tile = BM * LA + KC * LB;
  constexpr std::size_t align = 128, buffers = 2 * tile * sizeof(T), staging = warps * tm * LS * sizeof(float);
  constexpr std::size_t bytes = buffers > staging ? buffers : staging;
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::LaunchBounds<threads, Tiles::min_teams>>;
  const std::int64_t tiles_m = (p.m + BM - 1) / BM, tiles_n = (p.n + BN - 1) / BN, slices = (p.k + KC - 1) / KC;
  const int league = league_size("gemm", p.batch * tiles_m * tiles_n);
  const Policy policy = Policy(exec, league, threads).set_scratch_size(0, Kokkos::PerTeam(bytes + align));
  using Slice = GemmSlice<T, BM, BN, KC, threads>;
  const typename Slice::Plan plan = Slice::plan(p);
  Kokkos::parallel_for("rooftop::gemm", policy, KOKKOS_LAMBDA(const typename Policy::member_type& team) {
    const std::int64_t t = team.league_rank(), bt = t / (tiles_m * tiles_n);
    const std::int64_t m0 = t / tiles_n % tiles_m * BM, n0 = t % tiles_n * BN;
    // A warp (one thread where the tiles are emulated) per work unit; threads past the last
    // unit only load (GPUs too old for the matrix units, whose warps' threads each emulate).
    const int me = team.team_rank(), warp = me / Units::lanes, lane = me % Units::lanes;
    const bool computes = warp < warps;
    const int wm = warp / WN, wn = warp % WN;
    void* const base = team.team_scratch(0).get_shmem_aligned(bytes, align);
    T* const ts = in_shared(static_cast<T*>(base));
    // Buffer buf holds a(i, kk) at i * LA + kk and b(kk, j) at kk * LB + j.
    Slice slice(plan, me);
    auto stash = [&](const int buf) { slice.template stash<LA, 1, LB>(ts + buf * tile, ts + buf * tile + BM * LA); };
    typename Units::C acc[FM][FN];
    ROOFTOP_UNROLL
    for (int f = 0; f < FM; ++f) {
      ROOFTOP_UNROLL
      for (int g = 0; g < FN; ++g) Units::zero(acc[f][g]);
    }
    gemm_slices(team, slice, p, bt, m0, n0, slices, stash, [&](const int buf) {
      if (computes) {
        const T* const a = ts + buf * tile + wm * FM * tm * LA;
        const T* const b = ts + buf * tile + BM * LA + wn * FN * tn;
        // Rows of the slice past K are 0 in both tiles: whole tiles of k.
        ROOFTOP_UNROLL
        for (int kk = 0; kk < KC; kk += tk) {
          typename Units::A fa[FM];
          typename Units::B fb[FN];
          ROOFTOP_UNROLL
          for (int f = 0; f < FM; ++f) Units::load(fa[f], a + f * tm * LA + kk, LA);
          ROOFTOP_UNROLL
          for (int g = 0; g < FN; ++g) Units::load(fb[g], b + kk * LB + g * tn, LB);
          ROOFTOP_UNROLL
          for (int f = 0; f < FM; ++f) {
            ROOFTOP_UNROLL
            for (int g = 0; g < FN; ++g) Units::mma(acc[f][g], fa[f], fb[g]);
          }
        }
      }
    });
    // Every buffer was last read before the last barrier: the scratch now stages C, tm x LS
    // floats per warp.
    if (computes) {
      float* const stage = in_shared(static_cast<float*>(base)) + warp * tm * LS;
      // Unrolled: an accumulator indexed at run time would live in local memory.
      ROOFTOP_UNROLL
      for (int f = 0; f < FM; ++f) {
        ROOFTOP_UNROLL
        for (int g = 0; g < FN; ++g) {
          Units::store(stage, acc[f][g], LS);
          Units::sync_lanes();
          for (int e = lane; e < tm * tn; e += Units::lanes) {
            const std::int64_t row = m0 + (wm * FM + f) * tm + e / tn, col = n0 + (wn * FN + g) * tn + e % tn;
            if (row < p.m && col < p.n) gemm_store(p.c, bt, row, col, stage[e / tn * LS + e % tn], p.alpha, p.beta);
          }
          Units::sync_lanes();
        }
      }
    }
    // The stage overlaps buffer 0. Where one block runs several teams in turn (Kokkos' CUDA
    // serial-execution debug mode), a warp must not stash the next team's first slice there
    // while another still reads its stage.
    team.team_barrier();
  });
}

/// Products of at most this many rows of op(A) on the host take gemm_cpu_skinny (the shape
/// of a model's decode step: a few tokens times a weight matrix).
inline constexpr std::int64_t skinny_gemm_rows = 8;

/// The row stride, in elements, of the skinny paths' scratch rows (op(A) widened, the partial
/// sums of C) of len Accs: whole 64-byte lines, an odd number of them, so that the rows their
/// step reads together fall in different sets of L1 (an 8-way L1 holds only 8 lines whose
/// addresses agree in bits 6-11). Zen 4 VM, 2 threads, op(B) 4096 x 4096 fp32 row-major, M = 8
/// (8 rows of sums 16 KB apart, each with the 4 rows of op(B), all in one set): 16.5 GB/s of
/// op(B), against 22.4-22.6 at n = 3968 and 4112.
template <class Acc>
constexpr std::int64_t skinny_row_stride(std::int64_t len) {
  constexpr std::int64_t line = 64 / static_cast<std::int64_t>(sizeof(Acc));
  const std::int64_t lines = (len + line - 1) / line;
  return (lines % 2 == 0 ? lines + 1 : lines) * line;
}

/// run(std::integral_constant<int, MM>) for the skinny paths' rows of op(A), mm = 1, 2, 4 or 8.
template <class Run>
void with_skinny_rows(int mm, const Run& run) {
  switch (mm) {
    case 1: run(std::integral_constant<int, 1>{}); break;
    case 2: run(std::integral_constant<int, 2>{}); break;
    case 4: run(std::integral_constant<int, 4>{}); break;
    default: run(std::integral_constant<int, 8>{}); break;
  }
}

/// gemm_cpu_skinny where op(B)'s rows are contiguous (B row-major: x W with W stored (in,
/// out)), from a, op(A) widened into mm rows of k, ka apart, per batch entry (mm: m rounded up
/// to 1, 2, 4 or 8; zeros past m). op(B) is read in slabs of skinny_slab rows, each slab's rows
/// streamed whole (four at a time, so each line of the slab's partial sums takes four rows'
/// products), its partial sums of C (mm rows of n, skinny_row_stride apart, in L1 or L2) kept
/// in a scratch; then the slabs' partial sums are added in order. The slabs are fixed by k, so
/// the values do not depend on the thread count; work items are a slab's stretch of columns, as
/// many stretches as give each thread four items. Zen 4 VM, 2 threads, op(B) 4096 x 4096 fp32,
/// a scratch program alternating the library's tiled driver with hand-written AVX-512 loops of
/// this kind (medians of 11, GB/s of op(B)): M = 1 12.0-14.3 -> 26.7-41.7, on a par with
/// gemm_cpu_skinny's B^T beside them (25.7-35.7); M = 4 11.5-13.4 -> 24.4-27.1, M = 8 11.5-12.3
/// -> 16.4-17.2. Stretches of 512 or 1024 columns (the partial sums of M = 8 in L1) and slabs
/// of 128 rows ran no faster. The library (this code, against the tiled driver in the same
/// phase, separate processes): fp32 M = 1 / 2 / 4 / 8 13.6 / 13.7 / 13.9 / 11.3 -> 30.7 / 25.9
/// / 25.0 / 19.4 GB/s; bf16 (C fp32) M = 1 12.9 -> 18.9, M = 4 11.8 -> 15.0 (fp16 9.0 -> 20.2,
/// 9.5 -> 15.4), but M = 8 9.8 -> 8.4 (the tiled driver's bf16 pairs), so 2-byte op(B) with
/// more than 4 rows of op(A) stayed tiled. With AVX-512, 2 to 8 rows take
/// cpu::skinny_rows_block, which loads each register of the four rows of op(B) once for all
/// rows of C (the loop here loads them again for each): Zen 5 VM, 2 threads, op(B) 4096 x 4096,
/// GB/s of op(B), fp32 M = 2 / 4 / 8 29.1-29.3 / 24.7-24.8 / 19.8-20.4 -> 39.2-44.6 / 32.6-35.2
/// / 22.3-28.0; bf16 M = 4 23.9-25.9 -> 34.1-35.4, and M = 8 23.1-24.4 against the tiled
/// driver's 18.6-21.1, so there 2-byte op(B) takes this path at M = 8 too.
inline constexpr std::int64_t skinny_slab = 256;
template <class Exec, class P, class A>
void gemm_cpu_skinny_rows(const Exec& exec, const P& p, const A& a, std::int64_t ka, int mm) {
  using Acc = decltype(p.alpha);
  using TB = std::remove_cv_t<typename P::B::value_type>;
  constexpr int lanes = 64 / static_cast<int>(sizeof(Acc));
  constexpr std::int64_t chunk = 256;  // columns widened at a time (2-byte op(B))
  const std::int64_t m = p.m, n = p.n, k = p.k, batch = p.batch;
  const std::int64_t slabs = (k + skinny_slab - 1) / skinny_slab;
  const std::int64_t wanted = (4 * compat::concurrency(exec) + batch * slabs - 1) / (batch * slabs);
  const std::int64_t stretch_count = std::max<std::int64_t>(1, std::min(wanted, (n + chunk - 1) / chunk));
  const std::int64_t stretch = ((n + stretch_count - 1) / stretch_count + lanes - 1) / lanes * lanes;
  const std::int64_t stretches = (n + stretch - 1) / stretch;
  const std::int64_t ld = skinny_row_stride<Acc>(n);
  // With cpu::skinny_rows_block, bytes from a row of op(B) to the row four on, whose lines each
  // step prefetches (the hardware's prefetcher sees four new streams at every step of four
  // rows). Zen 4 VM, 2 threads, op(B) 4096 x 4096 row-major, GB/s of op(B), alternated four
  // times: fp32 M = 8 22.0-26.4 -> 29.0-32.0, bf16 M = 4 21.2-26.8 -> 29.9-33.5 (4096 x 11008
  // fp32 M = 8 22.2-23.8 -> 28.3-29.7); the portable loop (M = 1) gained nothing from it.
  [[maybe_unused]] const std::int64_t ahead = 4 * p.b.stride_i() * static_cast<std::int64_t>(sizeof(TB));
  Kokkos::View<Acc*, Kokkos::HostSpace> part(Kokkos::view_alloc(Kokkos::WithoutInitializing, "rooftop::gemm_skinny_sums"),
                                             batch * slabs * mm * ld);
  auto run = [&](auto rows) {
    constexpr int MM = decltype(rows)::value;
    [[maybe_unused]] constexpr bool rows_block = MM >= 2 && cpu::has_skinny_blocks<Acc, TB>;
    Kokkos::parallel_for("rooftop::gemm", compat::Range<Exec>(exec, 0, batch * slabs * stretches), [=](const std::int64_t item) {
      const std::int64_t bt = item / (slabs * stretches), s = item / stretches % slabs;
      const std::int64_t j0 = item % stretches * stretch, j1 = std::min(n, j0 + stretch);
      const std::int64_t k0 = s * skinny_slab, k1 = std::min(k, k0 + skinny_slab);
      const Acc* const ab = a.data() + bt * MM * ka;
      Acc* const sums = part.data() + (bt * slabs + s) * MM * ld;
      for (int i = 0; i < MM; ++i)
        for (std::int64_t j = j0; j < j1; ++j) sums[i * ld + j] = Acc(0);
      alignas(64) Acc widened[4][chunk];
      auto row_run = [&](const std::int64_t kk, const int u, const std::int64_t j, const std::int64_t len) -> const Acc* {
        const TB* const b = p.b.address(bt, kk + u, j);
        if constexpr (std::is_same_v<TB, Acc>) {
          return b;
        } else {
          convert_run(b, widened[u], len);
          return widened[u];
        }
      };
      std::int64_t kk = k0;
      for (; kk + 4 <= k1; kk += 4) {
        Acc av[MM][4];
        for (int i = 0; i < MM; ++i)
          for (int u = 0; u < 4; ++u) av[i][u] = ab[i * ka + kk + u];
#if defined(ROOFTOP_HAS_GEMM_BLOCK)
        if constexpr (rows_block) {
          const TB* const b[4] = {p.b.address(bt, kk, j0), p.b.address(bt, kk + 1, j0), p.b.address(bt, kk + 2, j0),
                                  p.b.address(bt, kk + 3, j0)};
          cpu::skinny_rows_block<MM>(j1 - j0, b, av, sums + j0, ld, ahead);
          continue;
        }
#endif
        for (std::int64_t j = j0; j < j1; j += chunk) {
          const std::int64_t len = std::min(chunk, j1 - j);
          const Acc* const b0 = row_run(kk, 0, j, len);
          const Acc* const b1 = row_run(kk, 1, j, len);
          const Acc* const b2 = row_run(kk, 2, j, len);
          const Acc* const b3 = row_run(kk, 3, j, len);
          ROOFTOP_UNROLL
          for (int i = 0; i < MM; ++i) {
            Acc* const out = sums + i * ld + j;
            ROOFTOP_SIMD
            for (std::int64_t jj = 0; jj < len; ++jj) {
              const Acc first = compat::mul_add(av[i][1], b1[jj], compat::mul_add(av[i][0], b0[jj], out[jj]));
              out[jj] = compat::mul_add(av[i][3], b3[jj], compat::mul_add(av[i][2], b2[jj], first));
            }
          }
        }
      }
      for (; kk < k1; ++kk)
        for (std::int64_t j = j0; j < j1; j += chunk) {
          const std::int64_t len = std::min(chunk, j1 - j);
          const Acc* const b0 = row_run(kk, 0, j, len);
          for (int i = 0; i < MM; ++i) {
            const Acc ai = ab[i * ka + kk];
            Acc* const out = sums + i * ld + j;
            ROOFTOP_SIMD
            for (std::int64_t jj = 0; jj < len; ++jj) out[jj] = compat::mul_add(ai, b0[jj], out[jj]);
          }
        }
    });
  };
  with_skinny_rows(mm, run);
  // C = alpha (the slabs' sums, added in order) + beta C.
  const std::int64_t runs = (n + chunk - 1) / chunk;
  Kokkos::parallel_for("rooftop::gemm", compat::Range<Exec>(exec, 0, batch * m * runs), [=](const std::int64_t item) {
    const std::int64_t bt = item / (m * runs), i = item / runs % m, j0 = item % runs * chunk, j1 = std::min(n, j0 + chunk);
    alignas(64) Acc total[chunk];
    for (std::int64_t j = j0; j < j1; ++j) total[j - j0] = Acc(0);
    for (std::int64_t s = 0; s < slabs; ++s) {
      const Acc* const sums = part.data() + ((bt * slabs + s) * mm + i) * ld;
      ROOFTOP_SIMD
      for (std::int64_t j = j0; j < j1; ++j) total[j - j0] += sums[j];
    }
    for (std::int64_t j = j0; j < j1; ++j) gemm_store(p.c, bt, i, j, total[j - j0], p.alpha, p.beta);
  });
}

/// gemm_cpu_skinny's accumulators, with op(B)'s columns contiguous, sum this many products per
/// lane from 0 before they are added to the running sums: an entry of C passes through about
/// skinny_stretch + k / (skinny_stretch lanes) additions, where summing all of k in the
/// accumulators took k / lanes (fp32 M = 1, k = 10^5, all 0.1: relative error 7.2e-5).
inline constexpr std::int64_t skinny_stretch = 256;

/// C = alpha op(A) op(B) + beta C on the host for m <= skinny_gemm_rows where each column of
/// op(B) is one contiguous run along k (`nn.Linear`'s weight W as B^T, W row-major), or each
/// row (gemm_cpu_skinny_rows): bound by reading op(B) once, where the tiled driver packed it
/// first (transposing W element by element: 2.1-3.1 GB/s of op(B) against 13.8-30.2 this way,
/// below). op(A) is widened once into a float (fp64) copy of MM rows of k (skinny_row_stride
/// apart), MM = m rounded up to a power of two (the rows past m zeros). With op(B)'s columns
/// contiguous, a work item takes `columns` columns of C: for each `lanes`-long stretch of k it
/// loads the MM rows' stretches once and multiplies them with each column's, MM x columns
/// accumulators in registers, each the partial sums of `lanes` lanes (over skinny_stretch
/// stretches at a time, then added to running sums) added in a fixed order at the end.
/// Returns false (nothing done) where neither op(B)'s rows nor its columns are contiguous. 2
/// threads, Zen 4 VM, op(B) 4096 x 4096 (C fp32), one process alternating with the tiled
/// driver, medians of 11, GB/s of op(B): fp32 M = 1 / 2 / 4 / 8 2.1-2.4 -> 28.9 / 28.7 / 30.2
/// / 20.7 (9.1-13.4x), bf16 2.9-3.1 -> 28.5 / 30.1 / 25.6 / 13.8 (4.7-9.8x); M = 1, 11008 x
/// 4096 (a model's MLP), fp32 4.7x, bf16 7.4x. M = 4 and 8 are bound by the core, not the
/// memory: with AVX-512 their step is cpu::skinny_dot_block, each register of op(A) and op(B)
/// loaded once (GCC's code loaded op(A) again for every column; Zen 5 VM, 2 threads, fp32 M = 8
/// 18.4-20.6 -> 23.0-29.8 GB/s, bf16 11.5-12.9 -> 15.7-18.0, alternated in one phase).
template <class Exec, class P>
bool gemm_cpu_skinny(const Exec& exec, const P& p) {
  using Acc = decltype(p.alpha);
  using TB = std::remove_cv_t<typename P::B::value_type>;
  constexpr int lanes = 64 / static_cast<int>(sizeof(Acc));
  // (2-byte rows of op(B) for more than 4 rows of op(A) ran slower than the tiled driver
  // without cpu::skinny_rows_block: see gemm_cpu_skinny_rows.)
  const bool columns_contiguous = p.b.stride_i() == 1;
  const bool rows_contiguous =
      p.b.stride_k() == 1 && (sizeof(TB) >= sizeof(float) || p.m <= 4 || cpu::has_skinny_blocks<Acc, TB>);
  if (!(columns_contiguous || rows_contiguous) || p.k == 0) return false;
  const std::int64_t m = p.m, n = p.n, k = p.k, batch = p.batch;
  const int mm = m <= 1 ? 1 : m <= 2 ? 2 : m <= 4 ? 4 : 8;
  const std::int64_t ka = skinny_row_stride<Acc>(k);
  Kokkos::View<Acc*, Kokkos::HostSpace> a(Kokkos::view_alloc(Kokkos::WithoutInitializing, "rooftop::gemm_skinny_a"), batch * mm * ka);
  Kokkos::parallel_for("rooftop::gemm", compat::Range<Exec>(exec, 0, batch * mm), [=](const std::int64_t row) {
    const std::int64_t bt = row / mm, i = row % mm;
    Acc* const out = a.data() + row * ka;
    if (i >= m) {
      for (std::int64_t kk = 0; kk < k; ++kk) out[kk] = Acc(0);
    } else if (p.a.stride_k() == 1) {
      convert_run(p.a.address(bt, i, 0), out, k);
    } else {
      for (std::int64_t kk = 0; kk < k; ++kk) out[kk] = p.a(bt, i, kk);
    }
  });
  if (!columns_contiguous) {
    gemm_cpu_skinny_rows(exec, p, a, ka, mm);
    return true;
  }
  auto run = [&](auto rows) {
    constexpr int MM = decltype(rows)::value;
    // 4 or 8 rows (bound by the core, not the memory) take cpu::skinny_dot_block where it runs,
    // 8 rows with 3 columns (24 accumulators, 11 loads per 24 FMAs); the portable loop keeps 2
    // (its array spills beyond 16 accumulators).
    constexpr bool dot_block = MM >= 4 && cpu::has_skinny_blocks<Acc, TB>;
    constexpr int columns = MM <= 4 ? 4 : dot_block ? 3 : 2;
    const std::int64_t items = (n + columns - 1) / columns;
    // Bytes from a column to the same column of the work item two on, whose lines each step
    // prefetches (a thread's items are consecutive): the hardware's prefetcher sees a new
    // stream at each item, and with short columns or many rows of op(A) (the FMAs filling the
    // core's window) too few of its lines were under way.
    const std::int64_t ahead = 2 * columns * p.b.stride_k() * static_cast<std::int64_t>(sizeof(TB));
    Kokkos::parallel_for("rooftop::gemm", compat::Range<Exec>(exec, 0, batch * items), [=](const std::int64_t item) {
      const std::int64_t bt = item / items, j0 = item % items * columns;
      const int nv = static_cast<int>(std::min<std::int64_t>(columns, n - j0));
      const Acc* const ab = a.data() + bt * MM * ka;
      const TB* col[columns];
      for (int c = 0; c < columns; ++c) col[c] = p.b.address(bt, 0, j0 + (c < nv ? c : 0));  // (a short item repeats its first)
      Acc total[MM][columns][lanes] = {};
      const std::int64_t whole = k - k % lanes;
      for (std::int64_t k0 = 0; k0 < whole; k0 += skinny_stretch * lanes) {
        const std::int64_t k1 = std::min(whole, k0 + skinny_stretch * lanes);
        Acc part[MM][columns][lanes] = {};
#if defined(ROOFTOP_HAS_GEMM_BLOCK)
        if constexpr (dot_block) {
          cpu::skinny_dot_block<MM, columns>(k0, k1, ab, ka, col, &part[0][0][0], ahead);
        } else
#endif
        for (std::int64_t kk = k0; kk < k1; kk += lanes) {
          Acc bv[columns][lanes];
          ROOFTOP_UNROLL
          for (int c = 0; c < columns; ++c) convert_run(col[c] + kk, bv[c], lanes);
          for (int c = 0; c < columns; ++c) cpu::prefetch_line(reinterpret_cast<const char*>(col[c] + kk) + ahead);
          ROOFTOP_UNROLL
          for (int i = 0; i < MM; ++i) {
            Acc av[lanes];
            for (int l = 0; l < lanes; ++l) av[l] = ab[i * ka + kk + l];
            ROOFTOP_UNROLL
            for (int c = 0; c < columns; ++c) {
              ROOFTOP_SIMD
              for (int l = 0; l < lanes; ++l) part[i][c][l] = compat::mul_add(av[l], bv[c][l], part[i][c][l]);
            }
          }
        }
        for (int i = 0; i < MM; ++i)
          for (int c = 0; c < columns; ++c) {
            ROOFTOP_SIMD
            for (int l = 0; l < lanes; ++l) total[i][c][l] += part[i][c][l];
          }
      }
      for (std::int64_t kk = whole; kk < k; ++kk)
        for (int c = 0; c < columns; ++c) {
          const Acc bk = static_cast<Acc>(col[c][kk]);
          for (int i = 0; i < MM; ++i) total[i][c][kk % lanes] = compat::mul_add(ab[i * ka + kk], bk, total[i][c][kk % lanes]);
        }
      for (int i = 0; i < MM && i < m; ++i)
        for (int c = 0; c < nv; ++c) {
          Acc sum = 0;
          for (int l = 0; l < lanes; ++l) sum += total[i][c][l];
          gemm_store(p.c, bt, i, j0 + c, sum, p.alpha, p.beta);
        }
    });
  };
  with_skinny_rows(mm, run);
  return true;
}

/// Checks the extents and runs `driver` (gemm_cpu or gemm_gpu with its tiles).
template <class Exec, class A, class B, class C, class Driver>
void gemm_checked(const Exec& exec, Trans ta, const A& a, Trans tb, const B& b, const C& c,
                  compute_t<typename A::value_type> alpha, compute_t<typename A::value_type> beta, const Driver& driver) {
  constexpr int rank = static_cast<int>(C::rank);
  static_assert(rank == 2 || rank == 3, "rooftop: gemm takes rank-2 Views, or rank-3 Views for the batched form");
  mandate_input<Exec, A, rank>();
  mandate_input<Exec, B, rank>();
  mandate_output<Exec, C, rank>();
  static_assert(supported_values_v<A, B, C>, "gemm: values are double, float, bf16 or fp16");
  using Acc = compute_t<typename A::value_type>;
  static_assert(std::is_same_v<Acc, compute_t<typename B::value_type>>,
                "rooftop: gemm's A and B must share the accumulation type (both fp64, or both fp32/bf16/fp16)");
  const GemmOperand<A, Acc> opa{a, ta == Trans::transpose};
  const GemmOperand<B, Acc> opb{b, tb == Trans::transpose};
  const std::int64_t m = opa.rows(), k = opa.cols(), n = opb.cols();
  // "A is 4x5", or "A^T is 5x4 (A is 4x5)": the extents the inner-extent test compares.
  auto operand = [](const char* name, bool trans, std::int64_t rows, std::int64_t cols, const std::string& stored) {
    return trans ? std::string(name) + "^T is " + std::to_string(rows) + "x" + std::to_string(cols) + " (" + name + " is " + stored + ")"
                 : std::string(name) + " is " + stored;
  };
  ROOFTOP_REQUIRE(opb.rows() == k, "gemm", operand("A", opa.trans, m, k, shape_of(a)), " and ",
                  operand("B", opb.trans, opb.rows(), n, shape_of(b)), ": inner extents differ (", k, " vs ", opb.rows(), ")");
  const std::int64_t cm = static_cast<std::int64_t>(c.extent(rank - 2)), cn = static_cast<std::int64_t>(c.extent(rank - 1));
  ROOFTOP_REQUIRE(cm == m && cn == n, "gemm", "C is ", shape_of(c), " but op(A) * op(B) is ", m, "x", n);
  std::int64_t batch = 1;
  if constexpr (rank == 3) {
    batch = static_cast<std::int64_t>(c.extent(0));
    ROOFTOP_REQUIRE(a.extent(0) == c.extent(0) && b.extent(0) == c.extent(0), "gemm", "batch extents differ: A is ",
                    shape_of(a), ", B is ", shape_of(b), ", C is ", shape_of(c));
    detail::require_allocated("gemm", "A", a);
    detail::require_allocated("gemm", "B", b);
  }
  detail::require_distinct_elements("gemm", "C", c);
  ROOFTOP_REQUIRE(!detail::overlap(a, c), "gemm", "C overlaps A (C is ", shape_of(c), ", A is ", shape_of(a),
                  "): C is written while other tiles still read A");
  ROOFTOP_REQUIRE(!detail::overlap(b, c), "gemm", "C overlaps B (C is ", shape_of(c), ", B is ", shape_of(b),
                  "): C is written while other tiles still read B");
  if (batch == 0 || m == 0 || n == 0) return;
  // K == 0 or alpha == 0: C = beta * C, as in BLAS, which then reads neither alpha (an Inf or
  // NaN alpha times the empty sum would make C NaN) nor A and B (a NaN there times 0 would).
  const bool product = k > 0 && alpha != Acc(0);
  driver(exec, GemmProblem<GemmOperand<A, Acc>, GemmOperand<B, Acc>, C, Acc>{opa, opb, c, product ? alpha : Acc(0), beta, batch,
                                                                                m, n, product ? k : 0});
}

}  // namespace detail

/// C = alpha * op(A) * op(B) + beta * C. Rank-2 Views (M x K, K x N, M x N after op), or rank-3
/// Views for the strided batched form (batch extents equal). Throws rooftop::Error naming the
/// extents if they do not match, and if C overlaps A or B.
template <class Exec, class A, class B, class C>
void gemm(const Exec& exec, Trans ta, const A& a, Trans tb, const B& b, const C& c,
          compute_t<typename A::value_type> alpha = 1, compute_t<typename A::value_type> beta = 0) {
  using Acc = compute_t<typename A::value_type>;
  detail::gemm_checked(exec, ta, a, tb, b, c, alpha, beta, [](const Exec& e, const auto& p) {
    if constexpr (gemm_uses_matrix_units<Exec, typename A::value_type, typename B::value_type>) {
      detail::gemm_matrix_units<MatrixGemmTiles>(e, p);
    } else if constexpr (detail::ReductionShape<Exec, Acc>::gpu) {
      detail::gemm_gpu<GpuGemmTiles<Acc>>(e, p);
    } else {
      if (p.m <= detail::skinny_gemm_rows && detail::gemm_cpu_skinny(e, p)) return;
      detail::gemm_cpu<CpuGemmTiles<Acc>>(e, p);
    }
  });
}
template <class A, class B, class C>
void gemm(Trans ta, const A& a, Trans tb, const B& b, const C& c, compute_t<typename A::value_type> alpha = 1,
          compute_t<typename A::value_type> beta = 0) {
  gemm(typename C::execution_space{}, ta, a, tb, b, c, alpha, beta);
}

/// Cost of gemm over batch x (M x N x K) with inputs of TAB and C of TC: 2*M*N*K FLOPs per
/// batch entry; compulsory bytes read A and B once, write C once and read it too when beta != 0.
template <class TAB, class TC = TAB>
constexpr Cost gemm_cost(std::int64_t m, std::int64_t n, std::int64_t k, bool reads_c = false, std::int64_t batch = 1) {
  const double mn = static_cast<double>(m) * static_cast<double>(n);
  return {2.0 * mn * static_cast<double>(k) * batch,
          batch * (bytes_of<TAB>(static_cast<double>(m) * k + static_cast<double>(k) * n) + bytes_of<TC>(mn * (reads_c ? 2 : 1)))};
}

}  // namespace rooftop
