// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// transpose: out(j, i) = in(i, j) for a (rows, cols) matrix in and a (cols, rows) matrix out.
///
/// Two kernels. `transpose` is tiled: on GPUs a team copies one tile x tile block of in, row by
/// row (coalesced reads), into team scratch, then writes it out row by row of out (coalesced
/// writes), reading the scratch tile down its columns; on CPUs a thread transposes a block in
/// small tiles straight from in to out (see TransposeShape). `transpose_naive` is the reference
/// without tiling: reads follow in's rows, so every write lands in a different row of out
/// (strided), which is what the tiled kernel avoids. Storage any dtype (pure data movement,
/// exact). in and out must not overlap (checked). Any layouts; LayoutRight is what the access patterns
/// above describe.
#pragma once

#include "../core/cost.hpp"
#include "../core/error.hpp"
#include "../core/reduction.hpp"
#include "../core/types.hpp"

#include <cstdint>

namespace rooftop {

namespace detail {
/// Tile and team shape of the tiled transpose. GPU: 32 x 32 tiles (a warp reads or writes
/// one tile row, whole 32-byte sectors even for 2-byte types) by teams of 256 threads (four
/// elements each); the scratch rows are padded by one element so a warp walking down a tile
/// column hits 32 different banks. CPU: no scratch (L1 is the scratch): one thread per block
/// of 256 x 256 elements, transposed in 8 x 8 tiles with constant trip counts (the compiler
/// unrolls and vectorizes them). Measured on the 2-core EPYC VM (4 KB pages, in-cache
/// 256 x 256): 8 x 8 tiles moved 24 GB/s per thread in fp32 and 46 in fp64, against 17 and 34
/// for 16 x 16 and 8.5 and 17 for the earlier runtime-bounded 16 x 16 loops through team
/// scratch; blocks of 256 keep the pages a thread touches in a while (256 rows of in and of
/// out) within the TLB's reach.
template <class Exec>
struct TransposeShape {
  static constexpr bool gpu = ReductionShape<Exec, float>::gpu;
  static constexpr std::int64_t tile = gpu ? 32 : 8;
  static constexpr std::int64_t pad = gpu ? 1 : 0;
  static constexpr int team = gpu ? 256 : 1;
  static constexpr std::int64_t block = 256;  // CPU only
};

/// Preconditions of both kernels: out is (in.extent(1), in.extent(0)) and shares no memory
/// with in (an in-place transpose would read elements already overwritten).
template <class In, class Out>
void require_transposed(const char* op, const In& in, const Out& out) {
  ROOFTOP_REQUIRE(out.extent(0) == in.extent(1) && out.extent(1) == in.extent(0), op, "in is ", shape_of(in), " but out is ",
                  shape_of(out), " (expected ", in.extent(1), "x", in.extent(0), ")");
  ROOFTOP_REQUIRE(!detail::overlap(in, out), op, "in and out overlap (in is ", shape_of(in), ", out is ", shape_of(out), ")");
}
}  // namespace detail

namespace detail {
/// GPU: one team per tile: the tile is read row by row of in into scratch (coalesced), then
/// written row by row of out (coalesced), reading the scratch tile down its columns.
template <class Shape, class Exec, class In, class Out>
void transpose_tiles_in_scratch(const Exec& exec, const In& in, const Out& out, std::int64_t rows, std::int64_t cols) {
  using T = typename Out::value_type;
  constexpr std::int64_t tile = Shape::tile, stride = Shape::tile + Shape::pad;
  const std::int64_t tile_rows = (rows + tile - 1) / tile, tile_cols = (cols + tile - 1) / tile;
  if (tile_rows == 0 || tile_cols == 0) return;
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = typename Policy::member_type;
  using Scratch = Kokkos::View<T**, Kokkos::LayoutRight, typename Exec::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  const auto scratch_bytes = Scratch::shmem_size(tile, stride);
  Kokkos::parallel_for(
      "rooftop::transpose",
      Policy(exec, tile_rows * tile_cols, Shape::team).set_scratch_size(0, Kokkos::PerTeam(scratch_bytes)),
      KOKKOS_LAMBDA(const Member& member) {
        const std::int64_t t = member.league_rank();
        const std::int64_t i0 = (t / tile_cols) * tile, j0 = (t % tile_cols) * tile;  // tile origin in in
        const std::int64_t h = rows - i0 < tile ? rows - i0 : tile;                    // tile extent in in
        const std::int64_t w = cols - j0 < tile ? cols - j0 : tile;
        Scratch buffer(member.team_scratch(0), tile, stride);  // (h, w) of it used: in's tile as is
        const auto& src = in;
        const auto& dst = out;
        // Consecutive threads on consecutive columns, of in when loading, of out when storing.
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, tile * tile), [&](const std::int64_t e) {
          const std::int64_t r = e / tile, c = e % tile;
          if (r < h && c < w) buffer(r, c) = src(i0 + r, j0 + c);
        });
        member.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, tile * tile), [&](const std::int64_t e) {
          const std::int64_t r = e / tile, c = e % tile;  // dst(j0 + r, i0 + c)
          if (r < w && c < h) dst(j0 + r, i0 + c) = buffer(c, r);
        });
      });
}

/// CPU: one work item per block of block x block elements, transposed tile by tile straight
/// from in to out (L1 is the scratch): each tile reads `tile` rows of in and writes `tile`
/// rows of out, and a block keeps the pages it touches within the TLB's reach.
template <class Shape, class Exec, class In, class Out>
void transpose_blocks(const Exec& exec, const In& in, const Out& out, std::int64_t rows, std::int64_t cols) {
  constexpr std::int64_t tile = Shape::tile, block = Shape::block;
  const std::int64_t block_rows = (rows + block - 1) / block, block_cols = (cols + block - 1) / block;
  Kokkos::parallel_for("rooftop::transpose", Kokkos::RangePolicy<Exec>(exec, 0, block_rows * block_cols), [=](const std::int64_t b) {
    const std::int64_t ib = b / block_cols * block, jb = b % block_cols * block;
    const std::int64_t ie = rows - ib < block ? rows : ib + block, je = cols - jb < block ? cols : jb + block;
    for (std::int64_t i0 = ib; i0 < ie; i0 += tile) {
      const std::int64_t h = ie - i0 < tile ? ie - i0 : tile;
      for (std::int64_t j0 = jb; j0 < je; j0 += tile) {
        const std::int64_t w = je - j0 < tile ? je - j0 : tile;
        if (h == tile && w == tile) {  // constant trip counts: unrolled and vectorized
          for (std::int64_t c = 0; c < tile; ++c)
            for (std::int64_t r = 0; r < tile; ++r) out(j0 + c, i0 + r) = in(i0 + r, j0 + c);
        } else {
          for (std::int64_t c = 0; c < w; ++c)
            for (std::int64_t r = 0; r < h; ++r) out(j0 + c, i0 + r) = in(i0 + r, j0 + c);
        }
      }
    }
  });
}
}  // namespace detail

/// out = in^T through scratch tiles (see the file comment). Throws rooftop::Error unless out
/// is (in.extent(1), in.extent(0)).
template <class Exec, class In, class Out>
void transpose(const Exec& exec, const In& in, const Out& out) {
  mandate_input<Exec, In, 2>();
  mandate_output<Exec, Out, 2>();
  using T = typename Out::value_type;
  static_assert(std::is_same_v<typename In::non_const_value_type, T>, "transpose: in and out differ in value type");
  detail::require_transposed("transpose", in, out);
  using Shape = detail::TransposeShape<Exec>;
  const auto rows = static_cast<std::int64_t>(in.extent(0)), cols = static_cast<std::int64_t>(in.extent(1));
  if constexpr (Shape::gpu) {
    detail::transpose_tiles_in_scratch<Shape>(exec, in, out, rows, cols);
  } else {
    detail::transpose_blocks<Shape>(exec, in, out, rows, cols);
  }
}
template <class In, class Out>
void transpose(const In& in, const Out& out) { transpose(typename Out::execution_space{}, in, out); }

/// out = in^T without tiling: one work item per element on GPUs (consecutive threads read
/// consecutive elements of a row of in and write down a column of out), one per row of in on
/// CPUs (a row read in order, written down a column). The baseline `transpose` is measured
/// against. Throws rooftop::Error unless out is (in.extent(1), in.extent(0)).
template <class Exec, class In, class Out>
void transpose_naive(const Exec& exec, const In& in, const Out& out) {
  mandate_input<Exec, In, 2>();
  mandate_output<Exec, Out, 2>();
  using T = typename Out::value_type;
  static_assert(std::is_same_v<typename In::non_const_value_type, T>, "transpose_naive: in and out differ in value type");
  detail::require_transposed("transpose_naive", in, out);
  const auto rows = static_cast<std::int64_t>(in.extent(0)), cols = static_cast<std::int64_t>(in.extent(1));
  constexpr bool gpu = detail::ReductionShape<Exec, float>::gpu;
  // (A per-element division would make the CPU version compute-bound, not memory-bound.)
  Kokkos::parallel_for("rooftop::transpose_naive",
                       Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(exec, 0, gpu ? rows * cols : rows),
                       KOKKOS_LAMBDA(const std::int64_t e) {
                         const std::int64_t n = cols;  // (captured outside the constexpr-if, for nvcc)
                         const auto& src = in;
                         const auto& dst = out;
                         if constexpr (detail::ReductionShape<Exec, float>::gpu) {
                           const std::int64_t i = e / n, j = e % n;
                           dst(j, i) = src(i, j);
                         } else {
                           for (std::int64_t j = 0; j < n; ++j) dst(j, e) = src(e, j);
                         }
                       });
}
template <class In, class Out>
void transpose_naive(const In& in, const Out& out) { transpose_naive(typename Out::execution_space{}, in, out); }

/// Cost of transposing (rows, cols) of T, either kernel: no FLOPs; read in once, write out once.
template <class T>
constexpr Cost transpose_cost(std::int64_t rows, std::int64_t cols) {
  return {0, bytes_of<T>(2.0 * rows * cols)};
}

}  // namespace rooftop
