// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// transpose: out(j, i) = in(i, j) for a (rows, cols) matrix in and a (cols, rows) matrix out.
///
/// Two kernels. `transpose` is tiled: on GPUs a team copies one tile x tile block of in, row by
/// row (coalesced reads), into team scratch, then writes it out row by row of out (coalesced
/// writes), reading the scratch tile down its columns; on CPUs each thread transposes a run of
/// blocks in register tiles, streaming large outputs from L1 buffers (see HostTranspose), or,
/// with AVX-512, writes each tile's rows straight from registers: streamed where out is large
/// and its rows are whole cache lines (see transpose_lines), streamed with each line joined
/// from two tiles where they are not (see transpose_shifted_lines), stored plainly where out
/// is smaller (transpose_lines again).
/// Elements of 32 bytes or more go element by element on GPUs, as do elements past about 1.9
/// KB on CPUs (HostTranspose::fits_stack).
/// `transpose_naive` is the reference
/// without tiling: reads follow in's rows, so every write lands in a different row of out
/// (strided), which is what the tiled kernel avoids. Storage any dtype (pure data movement,
/// exact). in and out must not overlap (checked). Any layouts; LayoutRight is what the access patterns
/// above describe.
#pragma once

#include "../backends/cpu/transpose_tile.hpp"
#include "../core/cost.hpp"
#include "../core/error.hpp"
#include "../core/kokkos_compat.hpp"
#include "../core/parallel.hpp"
#include "../core/types.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace rooftop {

namespace detail {
/// Tile and team shape of the tiled transpose. GPU: 32 x 32 tiles (a warp reads or writes
/// one tile row, whole 32-byte sectors even for 2-byte types) by teams of 256 threads (four
/// elements each); the scratch rows are padded by one element so a warp walking down a tile
/// column hits 32 different banks. CPU: no scratch (L1 is the scratch): blocks of
/// host_block<T> x host_block<T> elements, 256 bytes of a row each (four cache lines of every
/// row read and of every row written), transposed in register tiles (HostTranspose).
template <class Exec>
struct TransposeShape {
  static constexpr bool gpu = ReductionShape<Exec, float>::gpu;
  static constexpr std::int64_t tile = 32;  // GPU only
  static constexpr std::int64_t pad = 1;
  static constexpr int team = 256;
  /// Whether GPU tiles of T pay: elements below 32 bytes. Element by element
  /// (transpose_elements), each write down a column of out of an element of 32 bytes or more
  /// is whole 32-byte sectors already; and a tile of elements of 45 bytes or more would not
  /// fit the 48 KB of shared memory a block gets by default (Kokkos refused the launch).
  template <class T>
  static constexpr bool tiles_pay = sizeof(T) < 32;
  /// (A whole number of register tiles, at least one, for any element size: 12 bytes, say,
  /// takes blocks of 16.)
  template <class T>
  static constexpr std::int64_t host_block =  // CPU only
      std::max<std::int64_t>(cpu::tile_edge<T>, static_cast<std::int64_t>(256 / sizeof(T)) / cpu::tile_edge<T> * cpu::tile_edge<T>);
  /// CPU line tiles (transpose_lines): src rows per group, 128 bytes of each dst row (2 lines,
  /// two line tiles: 16 fp64 rows, 64 two-byte ones), and how far ahead along each src row its
  /// lines are prefetched: two lines (a scratch program, 2 threads, four alternations, GB/s:
  /// 512 bytes ahead -> 128, bf16 8192^2 54-59 -> 60-64, fp16 56-62 -> 60-64, fp64 4096^2
  /// 65-66 -> 62-70, fp32 5793^2 alike).
  template <class T>
  static constexpr std::int64_t host_group_rows = 128 / sizeof(T);
  static constexpr std::int64_t host_ahead_bytes = 128;
  /// CPU shifted lines (transpose_shifted_lines): src rows per group, 512 bytes of each dst row.
  template <class T>
  static constexpr std::int64_t host_shifted_group_rows = 512 / sizeof(T);
};

/// Preconditions of both kernels: out is (in.extent(1), in.extent(0)) and shares no memory
/// with in (an in-place transpose would read elements already overwritten).
template <class In, class Out>
void require_transposed(const char* op, const In& in, const Out& out) {
  ROOFTOP_REQUIRE(out.extent(0) == in.extent(1) && out.extent(1) == in.extent(0), op, "in is ", shape_of(in), " but out is ",
                  shape_of(out), " (expected ", in.extent(1), "x", in.extent(0), ")");
  ROOFTOP_REQUIRE(!detail::overlap(in, out), op, "in and out overlap (in is ", shape_of(in), ", out is ", shape_of(out), ")");
  detail::require_distinct_elements(op, "out", out);
}
}  // namespace detail

namespace detail {
/// out = in^T element by element, checked: one work item per element on GPUs (consecutive
/// threads read consecutive elements of a row of in and write down a column of out), one per
/// row of in on CPUs (a row read in order, written down a column). transpose_naive, and the
/// tiled transpose of elements too large for its tiles.
template <class Exec, class In, class Out>
void transpose_elements(const char* label, const Exec& exec, const In& in, const Out& out) {
  const auto rows = static_cast<std::int64_t>(in.extent(0)), cols = static_cast<std::int64_t>(in.extent(1));
  constexpr bool gpu = ReductionShape<Exec, float>::gpu;
  // (A per-element division would make the CPU version compute-bound, not memory-bound.)
  Kokkos::parallel_for(label, compat::Range<Exec>(exec, 0, gpu ? rows * cols : rows), KOKKOS_LAMBDA(const std::int64_t e) {
    const std::int64_t n = cols;  // (captured outside the constexpr-if, for nvcc)
    const auto& src = in;
    const auto& dst = out;
    if constexpr (ReductionShape<Exec, float>::gpu) {
      const std::int64_t i = e / n, j = e % n;
      dst(j, i) = src(i, j);
    } else {
      for (std::int64_t j = 0; j < n; ++j) dst(j, e) = src(e, j);
    }
  });
}

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
      Policy(exec, detail::league_size("transpose", tile_rows * tile_cols), Shape::team)
          .set_scratch_size(0, Kokkos::PerTeam(scratch_bytes)),
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
        member.team_barrier();  // buffer free again: a block may run several league ranks in turn (Kokkos's
                                // debug serial execution runs all of them in one)
      });
}

/// CPU: a (rows, cols) matrix whose rows lie `src_stride` elements apart, transposed into one
/// whose rows lie `dst_stride` apart, in blocks of host_block<T> x host_block<T> (256 bytes of
/// a row each: four cache lines of every row read and of every row written), each block in
/// register tiles (cpu::transpose_tile).
///
/// Blocks go along strips of src rows, or down strips of src columns (`down`: a strip is then
/// a run of dst rows), and work item k of `items` takes the k-th contiguous run of them. While
/// it transposes a block into one of two L1 buffers, it prefetches the next block's lines and
/// writes out the previous block's buffer, a few dst rows per tile: reads and writes overlap,
/// where transposing a whole block and then writing it left the memory bus half idle in each
/// phase (fp64 4096 x 4096 on the 2-core Zen 3 VM, in one process: 25-28 GB/s one phase after
/// the other, 30-34 overlapped, copy 38-43). Tiles stored straight into dst would write rows a
/// power of two bytes apart into a handful of L1 sets (fp32 1024 x 1024: 23 GB/s). Blocks of
/// 128 x 64 or 256 x 64 two-byte values (rows x columns) moved 10-15% more than 128 x 128
/// when rows were line-aligned and less otherwise; fp32 and fp64 did best with square blocks.
///
/// When `streamed`, dst's whole lines are written with streaming stores. Where dst's rows are
/// not line-aligned, a block's row segment ends inside a line that the next block down the
/// strip completes: its last elements wait in a per-row carry and go out with the next
/// segment's first ones as one whole streamed line. Written with plain stores instead (as
/// partial lines are, at strip and run ends), fp32 5793 x 5793 ran at 12-15 GB/s against
/// 25-33 for 5760 x 5760. Joining a carry to the next segment and keeping a segment's tail
/// take a lane permute each with AVX-512 (cpu::stream_joined_line, cpu::keep_last), where
/// element copies branching on the carry's length cost the unaligned case a fifth of its
/// speed (Zen 4 VM, 2 threads, `rooftop --quick --ops transpose --sizes 5793,5760`, two
/// alternations, GB/s: fp32 5793^2 30.8-32.0 -> 35.5-38.5, fp64 31.0-31.3 -> 36.4-43.4, bf16
/// 27.3-28.2 -> 34.1-35.7; 5760^2 47-49 either way). Blocks cut by the matrix's edge are
/// copied element by element.
template <class Shape, class T>
struct HostTranspose {
  static constexpr std::int64_t block = Shape::template host_block<T>, edge = cpu::tile_edge<T>;
  static constexpr std::int64_t tiles = (block / edge) * (block / edge);
  static constexpr std::int64_t line = sizeof(T) < 64 ? 64 / static_cast<std::int64_t>(sizeof(T)) : 1;  // elements per cache line
  static_assert(block % edge == 0, "transpose: the host block must be whole tiles");
  /// Whether operator()'s buffers (two blocks and a carry, on the thread's stack: 144 KB for
  /// 1-byte elements, 136 elements for 64 bytes and more) stay within 256 KB; elements past
  /// about 1.9 KB are transposed element by element instead.
  static constexpr bool fits_stack = sizeof(T) * (2 * block * block + block * line) <= 256 * 1024;

  const T* src;
  T* dst;
  std::int64_t rows, cols, src_stride, dst_stride;
  bool streamed;  // requires 64 % sizeof(T) == 0 (see transpose_host)
  bool down;      // blocks in order down strips of src columns, else along strips of src rows

  std::int64_t block_rows() const { return (rows + block - 1) / block; }
  std::int64_t block_cols() const { return (cols + block - 1) / block; }
  std::int64_t blocks() const { return block_rows() * block_cols(); }
  /// Block b's first row and column in src.
  std::int64_t row_of(std::int64_t b) const { return (down ? b % block_rows() : b / block_cols()) * block; }
  std::int64_t col_of(std::int64_t b) const { return (down ? b / block_rows() : b % block_cols()) * block; }

  /// The dst rows of the strip being written: the last elements of each, waiting for the rest
  /// of their line (streamed only).
  struct Carry {
    alignas(64) T values[block][line];
    std::int64_t count[block] = {};
  };

  /// Transposes blocks [first, last).
  void operator()(std::int64_t first, std::int64_t last) const {
    alignas(64) T buffer[2][block * block];  // buffer[k][c * block + r] = block's src(r, c)
    Carry carry;
    const T* pending = nullptr;  // the previous block's buffer, still to write out to `pending_at`
    T* pending_at = nullptr;
    for (std::int64_t b = first; b < last; ++b) {
      const std::int64_t i0 = row_of(b), j0 = col_of(b);
      T* const out = dst + j0 * dst_stride + i0;
      const bool cut = rows - i0 < block || cols - j0 < block;
      if (cut || (down && i0 == 0)) {  // a new strip, or one whose next segment is not a whole block
        write(carry, pending, pending_at, 0, block);
        finish(carry, pending_at);
        pending = nullptr;
      }
      if (cut) {
        const std::int64_t h = rows - i0 < block ? rows - i0 : block, w = cols - j0 < block ? cols - j0 : block;
        for (std::int64_t c = 0; c < w; ++c)
          for (std::int64_t r = 0; r < h; ++r) out[c * dst_stride + r] = src[(i0 + r) * src_stride + j0 + c];
        continue;
      }
      const std::int64_t nb = b + 1 < last ? b + 1 : b;  // prefetched meanwhile
      const T* const next = src + row_of(nb) * src_stride + col_of(nb);
      T* const buf = buffer[b & 1];
      std::int64_t tile = 0;
      for (std::int64_t r0 = 0; r0 < block; r0 += edge)
        for (std::int64_t c0 = 0; c0 < block; c0 += edge, ++tile) {
          if (c0 % line == 0)  // every line of the next block's rows, also the last one where rows are not line-aligned
            for (std::int64_t r = 0; r < edge; ++r) cpu::prefetch_line(next + (r0 + r) * src_stride + c0);
          if (c0 + edge == block)
            for (std::int64_t r = 0; r < edge; ++r) cpu::prefetch_line(next + (r0 + r) * src_stride + block - 1);
          cpu::transpose_tile(src + (i0 + r0) * src_stride + j0 + c0, src_stride, buf + c0 * block + r0, block);
          write(carry, pending, pending_at, tile * block / tiles, (tile + 1) * block / tiles);
        }
      pending = buf, pending_at = out;
    }
    write(carry, pending, pending_at, 0, block);
    finish(carry, pending_at);
  }

  /// Writes rows [lo, hi) of a transposed block's buffer (none if buf is null) to dst at `at`.
  void write(Carry& carry, const T* buf, T* at, std::int64_t lo, std::int64_t hi) const {
    if (!buf) return;
    for (std::int64_t c = lo; c < hi; ++c) {
      T* const to = at + c * dst_stride;
      const T* const from = buf + c * block;
      if (!streamed) {
        std::memcpy(to, from, block * sizeof(T));
      } else if constexpr (64 % sizeof(T) == 0) {  // else never streamed (transpose_host)
        // A carry begun by the block above is completed by this segment's first `head` elements
        // (those up to the next line boundary) and streamed as one whole line; the rest of the
        // segment is streamed up to its last line boundary, and what follows waits in the carry.
        const std::int64_t head = static_cast<std::int64_t>((64 - (reinterpret_cast<std::uintptr_t>(to) & 63)) & 63) / sizeof(T);
        std::int64_t& waiting = carry.count[c];
        std::int64_t start = 0;
        if (waiting > 0) {
          cpu::stream_joined_line(to - waiting, carry.values[c], waiting, from);
          start = head;
        }
        const std::int64_t tail = (block - head) % line;
        cpu::stream_whole_lines(to + start, from + start, (block - start - tail) * sizeof(T));
        cpu::keep_last(carry.values[c], from + block, tail);
        waiting = tail;
      }
    }
  }

  /// Copies n < line elements (a part of one line) without a variable-size memcpy.
  static void copy_elements(T* to, const T* from, std::int64_t n) {
    cpu::copy_short(reinterpret_cast<char*>(to), reinterpret_cast<const char*>(from), static_cast<std::size_t>(n) * sizeof(T));
  }

  /// Writes what waits in the carry with plain stores (at the end of the block written to `at`;
  /// none before the first block, where `at` is null and nothing waits).
  void finish(Carry& carry, T* at) const {
    if constexpr (64 % sizeof(T) != 0) return;  // never streamed: nothing waits (transpose_host)
    if (!at) return;
    for (std::int64_t c = 0; c < block; ++c) {
      copy_elements(at + c * dst_stride + block - carry.count[c], carry.values[c], carry.count[c]);
      carry.count[c] = 0;
    }
  }
};

/// The frame of the host line-tile walks (transpose_lines, transpose_shifted_lines): src's rows
/// in groups of `group` (a multiple of the tile edge e), one work item each, tiles(i0, i1,
/// tiled_rows, tiled_cols) called for a group's rows [i0, i1) of the whole e x e tiles; the rows
/// and the columns past the last whole tile are copied element by element (plain stores; the
/// rows below by the last work item: a work item of their own would be one more for the first
/// thread of a static schedule).
template <class T, class Exec, class Tiles>
void for_each_row_group(const Exec& exec, const T* src, T* dst, std::int64_t rows, std::int64_t cols, std::int64_t src_stride,
                        std::int64_t dst_stride, std::int64_t e, std::int64_t group, const Tiles& tiles) {
  const std::int64_t tiled_rows = rows / e * e, tiled_cols = cols / e * e;
  const std::int64_t groups = (tiled_rows + group - 1) / group;
  auto copy_elements = [=](std::int64_t i0, std::int64_t i1, std::int64_t j0, std::int64_t j1) {
    for (std::int64_t i = i0; i < i1; ++i)
      for (std::int64_t j = j0; j < j1; ++j) dst[j * dst_stride + i] = src[i * src_stride + j];
  };
  const std::int64_t items = groups > 0 ? groups : 1;
  Kokkos::parallel_for("rooftop::transpose", compat::Range<Exec>(exec, 0, items), [=](const std::int64_t g) {
    if (g == items - 1) copy_elements(tiled_rows, rows, 0, cols);
    if (g >= groups) return;
    const std::int64_t i0 = g * group, i1 = i0 + group < tiled_rows ? i0 + group : tiled_rows;
    tiles(i0, i1, tiled_rows, tiled_cols);
    copy_elements(i0, i1, tiled_cols, cols);
  });
}

/// CPU, where cpu::has_line_tiles<T> (AVX-512, every dtype; AVX2, 2-byte types),
/// cpu::line_tiles_pay says so, and the output is large (`streamed`; see below for the rest) with
/// rows a whole number of cache lines apart from a line-aligned start: src's rows in groups of
/// host_group_rows (one work item each), every group walked along its rows one line-tile
/// column (e = 8 fp64, 16 fp32 or 32 two-byte columns) at a time, each e x e tile of it
/// transposed in registers and streamed straight out, a whole aligned line per dst row
/// (cpu::transpose_line_tile). A step of the walk writes 128 contiguous bytes of e dst rows and
/// reads one line of each of the group's src rows, whose lines host_ahead_bytes further along
/// it prefetches. Against HostTranspose's 256-byte square blocks through L1 buffers, in one
/// process (2 threads, Zen 5 VM, scratch program, GB/s): fp64 4096 x 4096 29.5-30.6 -> 51-53,
/// fp32 5792 x 5792 21-26 -> 40-46 and 4096 x 4096 28-29 -> 44-47, bf16 8192 x 8192 only
/// 22.7-23.6 -> 23.8-27.8, copy 52-96 meanwhile. Groups were then 512 bytes of each dst row:
/// with src rows a power of two bytes apart, the lines prefetched for a group's 64 (fp64) to
/// 256 (2-byte) rows fall into a few L2 sets and evict one another before they are read.
/// Groups of 128 bytes, best of three alternations with the old build (`rooftop --quick --ops
/// copy,transpose`, 2 threads, Zen 5 VM): fp64 4096^2 58.5 -> 65.3 GB/s, bf16 8192^2 52.3 ->
/// 60.1, fp16 51.5 -> 57.8, fp32 5793^2 68.0 -> 68.4 (groups of 64 bytes were slower than 512
/// for fp64 and 2-byte types). Rows and columns past the last whole tile are copied element by
/// element (plain stores; their dst lines are not the streamed ones).
///
/// Not `streamed` (outputs below the streaming threshold, cpu::has_stored_line_tiles: AVX-512),
/// the same walk stores each tile's rows plainly (cpu::transpose_line_tile_stored), wherever
/// they start, in place of HostTranspose's blocks through L1 buffers; but fp32 outputs whose
/// rows lie within 16 bytes of a multiple of 2 KB apart, whose 16 rows a tile stores fall into
/// a few L1 sets, keep the blocks. Zen 4 VM, 2 threads, a scratch program, the two builds
/// alternated twice, GB/s in cache: bf16 362^2 (in L2) 16-29 -> 79-80, 1448^2 24-58 -> 90-113,
/// 2048^2 32 -> 59-60; fp64 724^2 61-90 -> 131-153, 512^2 47-80 -> 70-86; fp32 256^2 (in L2)
/// 75-91 -> 128-135, 1448^2 45-55 -> 115-117, 1100^2 52-53 -> 105-106, 1020^2 49-75 -> 62-64;
/// but fp32 1024^2 42-84 -> 49-67 and 1023^2 46 -> 36 (the memory's phases moved the old
/// build's figures by 2x).
/// The line tile of src at (i, j), its rows' lines host_ahead_bytes further along prefetched
/// (the line-tile walks read a line of each row per step).
template <class Shape, bool streamed, class T>
[[gnu::always_inline]] inline const T* prefetched_tile(const T* src, std::int64_t src_stride, std::int64_t i, std::int64_t j) {
  constexpr std::int64_t e = cpu::line_tile_edge<T>, ahead = Shape::host_ahead_bytes / static_cast<std::int64_t>(sizeof(T));
  const T* const at = src + i * src_stride + j;
  for (std::int64_t r = 0; r < e; ++r) cpu::prefetch_line(at + r * src_stride + ahead);
  // Streamed (large outputs), a row whose lines do not start on a line boundary reads two lines
  // per tile: the second one's line is prefetched too, else it came only one step ahead (the
  // shifted lines' src rows, where the row length is not whole lines). `rooftop --ops
  // copy,transpose --sizes 1448 4095 5793 8191 --rounds 1`, 2 threads, Zen 4 VM, three
  // alternations with the previous build, GB/s: bf16 5793^2 33-38 -> 36-43 (paired 0.49-0.78 ->
  // 0.87-0.91), fp16 34-38 -> 41-43, fp32 8191^2 31-34 -> 36, fp64 4095^2 37-39 -> 42-54,
  // 5793^2 40-47 -> 46-48, 8191^2 36-37 -> 44-53; bf16 8191^2 17-21 -> 22-23. In cache the
  // extra prefetches cost more than they saved (fp32 1448^2 97-109 -> 64-79), so they are not
  // issued there.
  if (streamed && (reinterpret_cast<std::uintptr_t>(at) | static_cast<std::uintptr_t>(src_stride) * sizeof(T)) % 64 != 0)
    for (std::int64_t r = 0; r < e; ++r) cpu::prefetch_line(at + r * src_stride + ahead + e - 1);
  return at;
}

template <class Shape, bool streamed = true, class T, class Exec>
void transpose_lines(const Exec& exec, const T* src, T* dst, std::int64_t rows, std::int64_t cols, std::int64_t src_stride,
                     std::int64_t dst_stride) {
  constexpr std::int64_t e = cpu::line_tile_edge<T>;
  for_each_row_group(exec, src, dst, rows, cols, src_stride, dst_stride, e, Shape::template host_group_rows<T>,
                     [=](const std::int64_t i0, const std::int64_t i1, std::int64_t, const std::int64_t tiled_cols) {
                       for (std::int64_t j = 0; j < tiled_cols; j += e)
                         for (std::int64_t i = i0; i < i1; i += e) {
                           const T* const from = prefetched_tile<Shape, streamed>(src, src_stride, i, j);
                           if constexpr (streamed) {
                             cpu::transpose_line_tile(from, src_stride, dst + j * dst_stride + i, dst_stride);
                           } else {
                             cpu::transpose_line_tile_stored(from, src_stride, dst + j * dst_stride + i, dst_stride);
                           }
                         }
                       if constexpr (streamed) cpu::stream_fence();
                     });
}

/// CPU, where cpu::has_shifted_lines<T> (AVX-512) and the output is large with rows that do not
/// start on cache lines (a row length that is not whole lines, or a misaligned start): as
/// transpose_lines, src's rows in groups of host_shifted_group_rows (one work item each), every group
/// walked along its rows one line-tile column at a time, but each line of a dst row now joins
/// two tiles (cpu::ShiftedLines): the line ending s elements into a tile (s, the elements
/// before the row's first line boundary) is the previous tile's column from lane s on, then
/// this one's up to lane s. A group owns the lines that start within its rows, so each
/// column of it transposes one tile more, the next group's first (none past the last whole
/// tile). Only each dst row's first partial line (in the first group) and the last one before
/// the rows past the last whole tile are stored plainly, with masks. Against HostTranspose's
/// blocks and per-row carries (which AVX2 hosts keep), `rooftop --ops copy,transpose --sizes
/// 4095 5793 8191 --rounds 1`, 2 threads, Zen 4 VM, three alternations with the old build,
/// GB/s: fp32 5793^2 27.4-33.5 -> 41.5-51.8 (paired 0.60-0.73 -> 0.73-0.97), 8191^2 28.1-31.4 ->
/// 30.9-34.1; fp64 4095^2 31.6-43.0 -> 44.0-46.2, 8191^2 24.1-29.6 -> 32.7-39.5; bf16 5793^2
/// 26.8-33.3 -> 35.1-39.8, 8191^2 14.0-21.8 -> 20.8-21.3. Groups of 512 bytes of each dst row
/// (host_shifted_group_rows), where the line tiles take 128: the extra tile is then one in
/// eight. A scratch program, fp32 5793^2, two runs of two alternations, GB/s for groups of
/// 128, 256, 512 and 1024 bytes: 25-26, 31-37, 29-39, 32-39 (the old build 25-29).
template <class Shape, class T, class Exec>
void transpose_shifted_lines(const Exec& exec, const T* src, T* dst, std::int64_t rows, std::int64_t cols,
                             std::int64_t src_stride, std::int64_t dst_stride) {
  constexpr std::int64_t e = cpu::line_tile_edge<T>;
  for_each_row_group(
      exec, src, dst, rows, cols, src_stride, dst_stride, e, Shape::template host_shifted_group_rows<T>,
      [=](const std::int64_t i0, const std::int64_t i1, const std::int64_t tiled_rows, const std::int64_t tiled_cols) {
        const std::int64_t last = i1 < tiled_rows ? i1 : tiled_rows - e;  // the group's last tile (the next group's first)
        cpu::ShiftedLines<T> lines(dst, dst_stride);
        for (std::int64_t j = 0; j < tiled_cols; j += e) {
          T* const strip = dst + j * dst_stride;
          auto row = [=](const int c) { return strip + c * dst_stride; };
          auto from = [&](const std::int64_t i) { return prefetched_tile<Shape, true>(src, src_stride, i, j); };
          lines.start(from(i0), src_stride);
          if (i0 == 0) lines.head(row);
          for (std::int64_t i = i0 + e; i <= last; i += e) lines.step(from(i), src_stride, row, i);
          if (i1 == tiled_rows) lines.tail(row, tiled_rows);
        }
        cpu::stream_fence();
      });
}

/// CPU: the blocks of HostTranspose split into one contiguous run per thread, when in's and
/// out's elements are contiguous along the same axis (both LayoutRight, or both LayoutLeft,
/// which is the same transpose of the (cols, rows) matrix); otherwise an element-by-element
/// loop over blocks of host_block x host_block.
template <class Shape, class Exec, class In, class Out>
void transpose_host(const Exec& exec, const In& in, const Out& out, std::int64_t rows, std::int64_t cols) {
  using T = typename Out::value_type;
  using Kernel = HostTranspose<Shape, T>;
  const bool right = in.stride(1) == 1 && out.stride(1) == 1, left = in.stride(0) == 1 && out.stride(0) == 1;
  if constexpr (Kernel::fits_stack)  // (else not even compiled: its frame would be megabytes)
  if ((right || left) && rows > 0 && cols > 0) {
    // Streamed where whole lines are whole elements (and the output is large).
    const bool streamed = 64 % sizeof(T) == 0 && reinterpret_cast<std::uintptr_t>(out.data()) % sizeof(T) == 0 && streams<T>(rows * cols);
    // Down the strips where out's rows are not line-aligned (the carries need it; AVX-512
    // hosts take the shifted lines there instead), else along
    // src's rows: with rows a power of two bytes apart, the blocks down a strip map to a few
    // L2 sets and evict their own prefetched lines (fp64 4096 x 4096: 24 GB/s down, 33-37
    // along, on the 2-core Zen 3 VM).
    // LayoutLeft on both sides is the LayoutRight transpose of the (cols, rows) matrix.
    const std::int64_t src_rows = right ? rows : cols, src_cols = right ? cols : rows;
    const auto in_stride = static_cast<std::int64_t>(right ? in.stride(0) : in.stride(1));
    const auto out_stride = static_cast<std::int64_t>(right ? out.stride(0) : out.stride(1));
    const bool down = streamed && ((out_stride * sizeof(T)) % 64 != 0 || reinterpret_cast<std::uintptr_t>(out.data()) % 64 != 0);
    if constexpr (cpu::has_line_tiles<T>) {
      if (streamed && !down && cpu::line_tiles_pay<T>(in_stride * static_cast<std::int64_t>(sizeof(T)))) {
        transpose_lines<Shape>(exec, in.data(), out.data(), src_rows, src_cols, in_stride, out_stride);
        return;
      }
    }
    if constexpr (cpu::has_stored_line_tiles<T>) {
      // (fp32 rows within 16 bytes of a multiple of 2 KB apart keep the blocks: see transpose_lines.)
      const std::int64_t off = out_stride * static_cast<std::int64_t>(sizeof(T)) % 2048;
      if (!streamed && !(sizeof(T) == 4 && std::min(off, 2048 - off) < 16)) {
        transpose_lines<Shape, false>(exec, in.data(), out.data(), src_rows, src_cols, in_stride, out_stride);
        return;
      }
    }
    if constexpr (cpu::has_shifted_lines<T>) {
      if (down) {
        transpose_shifted_lines<Shape>(exec, in.data(), out.data(), src_rows, src_cols, in_stride, out_stride);
        return;
      }
    }
    const Kernel kernel{in.data(), out.data(), src_rows, src_cols, in_stride, out_stride, streamed, down};
    const std::int64_t blocks = kernel.blocks(), items = std::min<std::int64_t>(blocks, compat::concurrency(exec));
    Kokkos::parallel_for("rooftop::transpose", compat::Range<Exec>(exec, 0, items), [=](const std::int64_t k) {
      kernel(blocks * k / items, blocks * (k + 1) / items);
      if (kernel.streamed) cpu::stream_fence();
    });
    return;
  }
  constexpr std::int64_t block = Shape::template host_block<T>;
  const std::int64_t block_rows = (rows + block - 1) / block, block_cols = (cols + block - 1) / block;
  Kokkos::parallel_for("rooftop::transpose", compat::Range<Exec>(exec, 0, block_rows * block_cols), [=](const std::int64_t b) {
    const std::int64_t ib = b / block_cols * block, jb = b % block_cols * block;
    const std::int64_t ie = rows - ib < block ? rows : ib + block, je = cols - jb < block ? cols : jb + block;
    for (std::int64_t i = ib; i < ie; ++i)
      for (std::int64_t j = jb; j < je; ++j) out(j, i) = in(i, j);
  });
}
}  // namespace detail

/// out = in^T through scratch tiles (see the file comment). Throws rooftop::Error unless out
/// is (in.extent(1), in.extent(0)), where in and out overlap, or where out's elements share
/// memory.
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
    if constexpr (Shape::template tiles_pay<T>) detail::transpose_tiles_in_scratch<Shape>(exec, in, out, rows, cols);
    else detail::transpose_elements("rooftop::transpose", exec, in, out);
  } else {
    detail::transpose_host<Shape>(exec, in, out, rows, cols);
  }
}
template <class In, class Out>
void transpose(const In& in, const Out& out) { transpose(typename Out::execution_space{}, in, out); }

/// out = in^T without tiling: one work item per element on GPUs (consecutive threads read
/// consecutive elements of a row of in and write down a column of out), one per row of in on
/// CPUs (a row read in order, written down a column). The baseline `transpose` is measured
/// against. Throws as transpose does.
template <class Exec, class In, class Out>
void transpose_naive(const Exec& exec, const In& in, const Out& out) {
  mandate_input<Exec, In, 2>();
  mandate_output<Exec, Out, 2>();
  using T = typename Out::value_type;
  static_assert(std::is_same_v<typename In::non_const_value_type, T>, "transpose_naive: in and out differ in value type");
  detail::require_transposed("transpose_naive", in, out);
  detail::transpose_elements("rooftop::transpose_naive", exec, in, out);
}
template <class In, class Out>
void transpose_naive(const In& in, const Out& out) { transpose_naive(typename Out::execution_space{}, in, out); }

/// Cost of transposing (rows, cols) of T, either kernel: no FLOPs; read in once, write out once.
template <class T>
constexpr Cost transpose_cost(std::int64_t rows, std::int64_t cols) {
  return {0, bytes_of<T>(2.0 * rows * cols)};
}

}  // namespace rooftop
