// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// transpose: out(j, i) = in(i, j) for a (rows, cols) matrix in and a (cols, rows) matrix out.
///
/// Two kernels. `transpose` is tiled: a team copies one tile x tile block of in, row by row
/// (coalesced reads), into team scratch, then writes it out row by row of out (coalesced
/// writes), reading the scratch tile down its columns. `transpose_naive` is the reference
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
/// column hits 32 different banks. CPU: one thread per team and 16 x 16 tiles for every dtype,
/// no padding: on the 2-core EPYC VM this was tuned on (32 KB L1, 4 KB pages), 16 beat 32, 64
/// and 128 at every dtype (1.1x to 2.5x); each tile row stays at least half a cache line and
/// the fewer rows in flight the better the page and stream behaviour.
template <class Exec>
struct TransposeShape {
  static constexpr bool gpu = ReductionShape<Exec, float>::gpu;
  static constexpr std::int64_t tile = gpu ? 32 : 16;
  static constexpr std::int64_t pad = gpu ? 1 : 0;
  static constexpr int team = gpu ? 256 : 1;
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
  constexpr std::int64_t tile = Shape::tile, stride = Shape::tile + Shape::pad;
  const auto rows = static_cast<std::int64_t>(in.extent(0)), cols = static_cast<std::int64_t>(in.extent(1));
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
        // Named here, outside the constexpr-if: nvcc's device lambdas may not first-capture there.
        const auto& src = in;
        const auto& dst = out;
        if constexpr (Shape::gpu) {
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
        } else {
          for (std::int64_t r = 0; r < h; ++r)
            for (std::int64_t c = 0; c < w; ++c) buffer(r, c) = src(i0 + r, j0 + c);
          for (std::int64_t r = 0; r < w; ++r)
            for (std::int64_t c = 0; c < h; ++c) dst(j0 + r, i0 + c) = buffer(c, r);
        }
      });
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
