// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// stencil: one Jacobi sweep of the 3D 7-point stencil on an (nx, ny, nz) grid,
///
///   out(i, j, k) = c0 * in(i, j, k) + c1 * (in(i-1, j, k) + in(i+1, j, k) + in(i, j-1, k)
///                                          + in(i, j+1, k) + in(i, j, k-1) + in(i, j, k+1))
///
/// at interior points (0 < i < nx-1, 0 < j < ny-1, 0 < k < nz-1). Boundary rule (Dirichlet):
/// every point with an index on the grid's faces keeps its value, out(i, j, k) = in(i, j, k)
/// (a grid with an extent below 3 is all boundary). Storage double, float, bf16 or fp16; math
/// in compute_t<T> (fp64 for fp64, fp32 otherwise), rounded once to the storage type. in and
/// out must be distinct, non-overlapping Views of the same extents (a Jacobi sweep reads only
/// old values). Any layout; LayoutRight (k contiguous) is the one the CPU loop vectorizes over.
/// Dense grids on x86 hosts (detail::host_streams) are swept a run of rows at a time
/// (stencil_rows), large ones with streaming stores and a prefetch of the next plane (on
/// AVX-512 hosts a cache line at a time straight from the registers, cpu::stencil_streamed; on
/// AVX2 hosts 2-byte grids only where rows are whole cache lines, see StencilShape); 2-byte
/// grids there where the host has AVX-512 or AVX2 (cpu::stencil_span). Other grids and hosts take a multi-dimensional range. The paths sum
/// the six neighbours in different orders, so results may differ by a few ulps between them
/// (within the tests' bound).
#pragma once

#include "../core/cost.hpp"
#include "../core/error.hpp"
#include "../core/parallel.hpp"
#include "../core/types.hpp"
#include "../backends/cpu/stencil_row.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace rooftop {

namespace detail {
/// How a stencil sweep is cut into work items: a 3D range over (i, j, chunk of k), tiled.
/// CPU: a work item is a run of `k_chunk` points along the contiguous k axis (one loop the
/// compiler vectorizes, boundary points peeled off), and a tile is `tile_j` rows of one plane
/// so the rows (i, j+-1) just read are still in L1/L2. GPU: a work item is one point; the tile
/// (1, 4, 64) is a thread block of 256 whose 32-thread warps cover consecutive k (Kokkos 4+
/// maps the last index to threadIdx.x; Kokkos 3.4 maps threadIdx.x to i, so its warps are 4
/// rows of 8 consecutive k: still whole 32-byte sectors).
template <class Exec>
struct StencilShape {
  static constexpr bool gpu = ReductionShape<Exec, float>::gpu;
  static constexpr std::int64_t k_chunk = gpu ? 1 : 2048;
  static constexpr std::int64_t tile_i = 1;
  static constexpr std::int64_t tile_j = 4;
  static constexpr std::int64_t tile_k = gpu ? 64 : 1;  // in chunks
  /// Streamed host sweeps on AVX-512 hosts (cpu::stencil_streamed) go down the planes in slabs
  /// of rows holding about this many bytes of each plane, so that the three planes' slabs a row
  /// reads stay in L2 (1 MB on the Zen 4 VM): the sweep walking whole planes read plane i-1 back
  /// from L3 once a plane was 512 KB. 2 threads, Zen 4 VM, a scratch program alternating them in
  /// one process, two runs, median GB/s (copy 50-51): fp64 256^3 whole planes 38.0-38.6, slabs of
  /// 32 rows (64 KB) 42.0-42.6, 64 (128 KB) 44.8-45.0, 128 (256 KB) 45.0-45.1; fp32 323^3 whole
  /// planes 40.8-41.4, 41 rows (53 KB) 43.9-44.9, 81 (105 KB) 49.7-49.8, 162 (209 KB) 51.6-52.1.
  /// One thread: fp64 20.9 -> 25.4 (128 rows), fp32 23.0 -> 31.1 (162 rows).
  static constexpr std::int64_t slab_bytes = 256 * 1024;
  /// Host sweeps of large grids (stencil_rows): whether grids of T whose rows are not whole
  /// cache lines are streamed too, and whether sweeps with plain stores prefetch each row's
  /// neighbour in the next plane (streamed ones do). On AVX2 hosts, 4- and 8-byte grids only,
  /// and no prefetch. On the 2-core Zen 3 VM the prefetch cost plain sweeps 2-20% (2 threads, a
  /// scratch program calling stencil, best of six alternations, two runs: plain with the
  /// prefetch 0.6-5 GB/s lower). Streaming rows that are not whole lines lost there in the
  /// nineteenth session (GB/s streamed -> plain stores, both without the prefetch: fp32 323^3
  /// 13.7-18.6 -> 22.2-29.1, fp64 257^3 21.3 -> 27.0, fp16 406^3 15.1 -> 16.6; the harness,
  /// builds alternated: bf16 406^3 10.4-13.5 -> 13.1-15.8) and paid for fp32 and fp64 in the
  /// twenty-first (stencil_rows called directly, plain against streamed with the prefetch,
  /// medians of eight alternations, six runs: fp32 323^3 18.1-24.0 -> 23.3-27.6, 321^3
  /// 22.3-22.6 -> 26.9-27.4, fp64 257^3 22.5-23.5 -> 25.3-30.4; bf16 and fp16 406^3 lost,
  /// 12.8-17.6 -> 12.5-15.5). Whole-line rows stream either way (fp32 320^3 21.4 -> 24.2, fp64
  /// 256^3 25.6-27.4 -> 27.9-29.3). AVX-512 hosts stream every large grid (cpu::stencil_streamed)
  /// and prefetch in plain sweeps too.
#if defined(ROOFTOP_HAS_AVX2_LANES)
  template <class T>
  static constexpr bool host_streams_partial_lines = sizeof(T) >= 4;
  static constexpr bool host_plain_prefetches = false;
#else
  template <class T>
  static constexpr bool host_streams_partial_lines = true;
  static constexpr bool host_plain_prefetches = true;
#endif
};

/// The host sweep where both Views are dense LayoutRight (strides ny*nz, nz, 1), fp32 or fp64,
/// or bf16 or fp16 where the host has cpu::stencil_span (AVX-512 or AVX2). The work items are runs of whole rows
/// (i, j) of about 32 KB of out, in memory order, so each thread walks its own run of planes.
/// Cache-sized grids (not `streamed`) are written in place; the 3D range below them ran 1.1-3x
/// slower in fp32/fp64 and 3-8x in bf16/fp16 (81^3 to 128^3, 2 threads, Zen 5 VM, scratch
/// program, two alternations, median GB/s: fp32 128^3 35-37 -> 70-71, fp64 81^3 23 -> 44, bf16
/// 128^3 9-10 -> 33, fp16 5.5 -> 35). Large ones, on AVX-512 hosts: slabs of rows walked down
/// the planes (StencilShape::slab_bytes), each plane's part written a cache line at a time from
/// the registers with streaming stores (cpu::stencil_streamed; together 1.15-1.42x the sweep
/// below, docs/kernels.md has the figures). Large ones on AVX2 hosts: a run's output is one
/// contiguous stretch, written through a cpu::LineStream: each interior row is computed
/// `chunk` elements at a time into its L1 buffer (all of it, k = 0 and nz-1 too, whose
/// neighbours along k lie in the rows beside it; those two are then copied over) and every
/// line of out it completes is streamed out, while the lines of plane i+1 prefetch_distance
/// ahead are prefetched: that plane is the sweep's only stream from memory (planes i and i-1
/// were read for the planes before and are still in L2). Boundary rows are copied through it.
/// fp64 256^3, 2 threads, Zen 4 VM, scratch program, in one process: the 3D-range loop with
/// plain stores 21-22 GB/s, this 27-34, a hand-written AVX-512 loop storing each vector with a
/// streaming store 34-39 (streaming stores alone 1.1x, the prefetch alone 0.9x, of plain
/// stores). Streaming each row on its own, with the partial lines at both ends of rows that are
/// not whole lines stored plainly, fp32 323^3 ran at 21-24 GB/s against 29-30 for the 3D-range
/// loop (cpu::stencil_streamed carries its vectors across the rows instead).
template <bool streamed, class T, class C, class Exec>
void stencil_rows(const Exec& exec, const T* in, T* out, std::int64_t nx, std::int64_t ny, std::int64_t nz, C a, C b) {
#if defined(ROOFTOP_HAS_STENCIL_STREAMED)
  if constexpr (streamed) {
    // AVX-512 hosts: straight from the registers (cpu::stencil_streamed), in slabs of rows
    // walked down the planes (see StencilShape::slab_bytes); a work item is one slab over a run
    // of planes, as many runs per slab as it takes to give every thread one.
    const std::int64_t plane = ny * nz, row_bytes = nz * static_cast<std::int64_t>(sizeof(T));
    const std::int64_t most_rows = std::max<std::int64_t>(1, StencilShape<Exec>::slab_bytes / row_bytes);
    const std::int64_t slabs = (ny + most_rows - 1) / most_rows, slab_rows = (ny + slabs - 1) / slabs;
    const std::int64_t runs = std::min<std::int64_t>(nx, (compat::concurrency(exec) + slabs - 1) / slabs);
    Kokkos::parallel_for("rooftop::stencil", compat::Range<Exec>(exec, 0, slabs * runs), [=](const std::int64_t item) {
      const std::int64_t slab = item / runs, run = item % runs;
      const std::int64_t j0 = slab * slab_rows, j1 = std::min(ny, j0 + slab_rows);
      for (std::int64_t i = run * nx / runs; i < (run + 1) * nx / runs; ++i)
        cpu::stencil_streamed(in, out, i * plane + j0 * nz, i * plane + j1 * nz, nx, ny, nz, a, b);
      cpu::stream_fence();
    });
    return;
  }
#endif
  constexpr std::int64_t chunk = 1024 / static_cast<std::int64_t>(sizeof(T));
  const std::int64_t rows = nx * ny, plane = ny * nz;
  const std::int64_t per_item = (32768 / static_cast<std::int64_t>(sizeof(T)) + nz - 1) / nz;
  Kokkos::parallel_for(
      "rooftop::stencil", compat::Range<Exec>(exec, 0, (rows + per_item - 1) / per_item), [=](const std::int64_t item) {
        const std::int64_t first = item * per_item, last = first + per_item < rows ? first + per_item : rows;
        cpu::LineStream<T, chunk> stream(out + first * nz);
        for (std::int64_t row = first; row < last; ++row) {
          const std::int64_t i = row / ny, j = row % ny;
          const T* const c = in + row * nz;
          const bool boundary = i == 0 || i == nx - 1 || j == 0 || j == ny - 1 || nz < 3;
          for (std::int64_t k0 = 0, k1 = 0; k0 < nz; k0 = k1) {
            k1 = k0 + chunk < nz ? k0 + chunk : nz;
            T* const at = streamed ? stream.slots() - k0 : out + row * nz;  // at[k] holds out(i, j, k)
            if (boundary) {
              std::memcpy(at + k0, c + k0, static_cast<std::size_t>(k1 - k0) * sizeof(T));
            } else {
              auto point = [&](const std::int64_t k) {
                const C neighbours = (C(c[k - 1]) + C(c[k + 1])) + (C(c[k - nz]) + C(c[k + nz])) + (C(c[k - plane]) + C(c[k + plane]));
                at[k] = T(a * C(c[k]) + b * neighbours);
              };
#if defined(ROOFTOP_HAS_STENCIL_SPAN)
              // A vector of points per step, the row's own neighbours shifted from the centre
              // vectors (cpu::stencil_span); 2-byte values widened as loaded, narrowed as
              // stored, where element-by-element conversions left the loop scalar (fp16) or
              // twice as long (bf16). See "stencil_row.hpp" for what it saves. AVX2 hosts had
              // 2-byte grids on the 3D range below (values widened in blocks), and fp32/fp64
              // rows in the compiler's vectorized loop (#else): Zen 3 VM, 2 threads, scratch
              // program alternating both in one process, best GB/s: fp16 406^3 9.8 -> 21.7,
              // bf16 9.9 -> 13.1; in cache fp32 102^3 37 -> 49, fp64 81^3 45 -> 58; from
              // memory fp32 323^3 and fp64 256^3 within the noise (26-38 either way).
              if (k1 - k0 >= cpu::stencil_lanes<T>) {
                cpu::stencil_span(c, at, k0, k1, nz, plane, a, b);
              } else {
                for (std::int64_t k = k0; k < k1; ++k) point(k);
              }
#else
              static_assert(sizeof(T) != 2, "stencil_rows: 2-byte grids need cpu::stencil_span");
              // Whole blocks of a vector register (the compiler vectorizes the fixed-length
              // loop), the chunk's last block computed again (the same values) rather than a
              // scalar tail: fp32 102^3, median GB/s, 44-45 -> 59-60 (one loop over the chunk).
              constexpr std::int64_t lanes = 64 / static_cast<std::int64_t>(sizeof(T));
              std::int64_t k = k0;
              for (; k + lanes <= k1; k += lanes) {
                ROOFTOP_SIMD
                for (std::int64_t q = 0; q < lanes; ++q) point(k + q);
              }
              if (k < k1 && k1 - k0 >= lanes) {
                ROOFTOP_SIMD
                for (std::int64_t q = 0; q < lanes; ++q) point(k1 - lanes + q);
                k = k1;
              }
              for (; k < k1; ++k) point(k);
#endif
            }
            if (!boundary) {
              if (k0 == 0) at[0] = c[0];
              if (k1 == nz) at[nz - 1] = c[nz - 1];
              if constexpr (streamed || StencilShape<Exec>::host_plain_prefetches) cpu::prefetch_ahead(c + plane + k0, k1 - k0);
            }
            if constexpr (streamed) stream.commit(k1 - k0);
          }
        }
        if constexpr (streamed) {
          stream.finish();
          cpu::stream_fence();
        }
      });
}
}  // namespace detail

/// out = one Jacobi sweep of the 7-point stencil (c0 on the centre, c1 on each of the six
/// neighbours) over the (nx, ny, nz) grid `in`; boundary points are copied. Throws
/// rooftop::Error if the extents differ, in and out overlap, out's elements share memory, or
/// either has no memory though its extents are not 0 (Kokkos 3.4 sized it in 32 bits).
template <class Exec, class In, class Out>
void stencil(const Exec& exec, const In& in, const Out& out, double c0, double c1) {
  mandate_input<Exec, In, 3>();
  mandate_output<Exec, Out, 3>();
  static_assert(supported_values_v<In, Out>, "stencil: values are double, float, bf16 or fp16");
  using T = typename Out::value_type;
  using C = compute_t<T>;
  static_assert(std::is_same_v<typename In::non_const_value_type, T>, "stencil: in and out differ in value type");
  detail::require_same_shape("stencil", "in", in, "out", out);
  detail::require_allocated("stencil", "in", in);
  detail::require_distinct_elements("stencil", "out", out);
  ROOFTOP_REQUIRE(!detail::overlap(in, out), "stencil", "in and out overlap (both ", shape_of(in),
                  "); a Jacobi sweep needs a separate output");
  const auto nx = static_cast<std::int64_t>(in.extent(0)), ny = static_cast<std::int64_t>(in.extent(1)),
             nz = static_cast<std::int64_t>(in.extent(2));
  if (nx == 0 || ny == 0 || nz == 0) return;
  using Shape = detail::StencilShape<Exec>;
  constexpr std::int64_t chunk = Shape::k_chunk;
  using Policy = Kokkos::MDRangePolicy<Exec, Kokkos::Rank<3, Kokkos::Iterate::Right, Kokkos::Iterate::Right>,
                                       Kokkos::IndexType<std::int64_t>>;
  const typename Policy::point_type lower = {{0, 0, 0}};
  const typename Policy::point_type upper = {{nx, ny, (nz + chunk - 1) / chunk}};
  const typename Policy::tile_type tile = {{Shape::tile_i, Shape::tile_j, Shape::tile_k}};
  const C a = static_cast<C>(c0), b = static_cast<C>(c1);
  const bool contiguous = in.stride(2) == 1 && out.stride(2) == 1;
  if constexpr (detail::host_streams<Exec> && (sizeof(T) >= 4 || cpu::has_stencil_span)) {
    auto dense = [&](const auto& v) {
      return v.stride(2) == 1 && static_cast<std::int64_t>(v.stride(1)) == nz && static_cast<std::int64_t>(v.stride(0)) == ny * nz;
    };
    if (dense(in) && dense(out)) {
      const bool whole_lines = nz * static_cast<std::int64_t>(sizeof(T)) % 64 == 0;
      if (detail::streams<T>(nx * ny * nz) && (whole_lines || Shape::template host_streams_partial_lines<T>)) {
        detail::stencil_rows<true>(exec, in.data(), out.data(), nx, ny, nz, a, b);
        return;
      }
      detail::stencil_rows<false>(exec, in.data(), out.data(), nx, ny, nz, a, b);
      return;
    }
  }
  Kokkos::parallel_for(
      "rooftop::stencil", Policy(exec, lower, upper, tile),
      KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j, const std::int64_t chunk_index) {
        const std::int64_t k_begin = chunk_index * chunk;
        const std::int64_t k_end = k_begin + chunk < nz ? k_begin + chunk : nz;
        if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1) {
          for (std::int64_t k = k_begin; k < k_end; ++k) out(i, j, k) = in(i, j, k);
          return;
        }
        // Interior row: the points k = 0 and k = nz-1 (when in this chunk) are boundary,
        // peeled off so the loop between them has no branch (vectorizes on CPUs).
        if (k_begin == 0) out(i, j, 0) = in(i, j, 0);
        if (k_end == nz && nz > 1) out(i, j, nz - 1) = in(i, j, nz - 1);
        const std::int64_t lo = k_begin > 1 ? k_begin : 1;
        const std::int64_t hi = k_end < nz - 1 ? k_end : nz - 1;
        if (!contiguous || !detail::host_widens<Exec, T>) {
          for (std::int64_t k = lo; k < hi; ++k) {
            const C neighbours = (C(in(i - 1, j, k)) + C(in(i + 1, j, k))) + (C(in(i, j - 1, k)) + C(in(i, j + 1, k))) +
                                 (C(in(i, j, k - 1)) + C(in(i, j, k + 1)));
            out(i, j, k) = T(a * C(in(i, j, k)) + b * neighbours);
          }
          return;
        }
#if !defined(__CUDA_ARCH__)
        // fp16 on the host: the seven inputs of each point widened in blocks (k - 1, k, k + 1
        // are the centre row at three offsets), the results narrowed in blocks.
        if constexpr (detail::host_widens<Exec, T>) {
          if (lo < hi) {
            const T* const centre = &in(i, j, lo);
            detail::convert_map(
                &out(i, j, lo), hi - lo,
                [&](std::int64_t, const float w, const float c, const float e, const float xm, const float xp, const float ym,
                    const float yp) { return a * c + b * ((xm + xp) + (ym + yp) + (w + e)); },
                detail::NoStage{}, centre - 1, centre, centre + 1, &in(i - 1, j, lo), &in(i + 1, j, lo), &in(i, j - 1, lo), &in(i, j + 1, lo));
          }
        }
#endif
      });
}
template <class In, class Out>
void stencil(const In& in, const Out& out, double c0, double c1) {
  stencil(typename Out::execution_space{}, in, out, c0, c1);
}

/// Cost of one 7-point sweep over an (nx, ny, nz) grid of T: 8 FLOPs per interior point
/// (5 adds summing the six neighbours, a multiply by c1, a multiply by c0, the add of the
/// two), none at boundary points (copied); read in once, write out once.
template <class T>
constexpr Cost stencil_cost(std::int64_t nx, std::int64_t ny, std::int64_t nz) {
  auto inner = [](std::int64_t n) { return n > 2 ? static_cast<double>(n - 2) : 0.0; };
  const double points = static_cast<double>(nx) * static_cast<double>(ny) * static_cast<double>(nz);
  return {8.0 * inner(nx) * inner(ny) * inner(nz), bytes_of<T>(2.0 * points)};
}

}  // namespace rooftop
