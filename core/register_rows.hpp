// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Row-wise kernels with each row held in registers, the GPU path of softmax, layernorm and
/// rmsnorm. One team per row; each thread of a team of T holds R of the row's values as floats
/// (a warp's loads consecutive), R fixed at compile time (8 or 16) and T chosen per call so
/// that T R covers the row where it can (up to 1024 threads; longer rows go in chunks of T R,
/// see RegisterRow::each_chunk). The R values come in runs of 16 bytes'
/// worth of consecutive columns (8 bf16/fp16, 4 floats), one load and one store per run where
/// the row is contiguous and aligned. A thread issues all its loads before it uses any, the
/// team combines the threads' partials (on CUDA by warp shuffles, backends/cuda/warp.hpp), and
/// each thread writes its own values: a row of one chunk (up to 16384 entries) is read from
/// memory once and written once.
///
/// What it replaces on GPUs (RowTeam: Kokkos' automatic team size, one element per thread per
/// step of a TeamThreadRange, the row read again from memory or cache for each pass) ran at
/// 0.10-0.68 of the H100's measured bandwidth ceiling and 0.17-0.76x PyTorch (26 November 2026,
/// docs/measured/h100-2026-11-26): few bytes in flight per thread, and rows of 32768 read two or
/// three times. Its first form, one column per thread a team apart (loads of 2 or 4 bytes) and
/// Kokkos' team reduction, ran on an H100 (27 November 2026) at 0.21-0.74 of the ceiling, at
/// 120-265 G elements/s whatever the dtype. Runs of 16 bytes and the shuffle fold took it to
/// 0.34-0.95 (softmax bf16 768: 1000 -> 1722 GB/s), and Nsight Compute still put that softmax
/// at 84% of the issue slots with DRAM at 41%: bound by instructions. Softmax's exponentials on
/// the special-function unit (math::exp2_in_range) and the fold's second stage by shuffles
/// took it to 0.40-0.98 (1795): the table is in docs/kernels.md, the runs in
/// docs/measured/h100-2026-11-27.
///
/// Only the team fold and the 16-byte accesses have CUDA forms (backends/cuda/warp.hpp): the
/// tests run the rest on the host backends with the teams they allow (RegisterRows::launch with
/// an explicit team size), runs copied by memcpy.
#pragma once

#include "../backends/cuda/warp.hpp"
#include "error.hpp"
#include "parallel.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

namespace rooftop::detail {

/// Values of T a thread of a register-row kernel with R values per thread holds in one run of
/// consecutive columns: 16 bytes' worth (8 of a 2-byte type, 4 floats) where R is a multiple of
/// that, else 1.
template <class T, int R>
inline constexpr int row_run = sizeof(T) <= 16 && 16 % sizeof(T) == 0 && R % (16 / sizeof(T)) == 0 ? int(16 / sizeof(T)) : 1;

/// One row of a register-row kernel, as thread member.team_rank() of its team sees it. The row
/// is cut into `chunks` chunks of T * R columns (one for rows up to T * R); in chunk c the
/// thread's values are columns col(k, c) for k < R (those past the row's end are padding), in
/// runs of V consecutive columns: run g of thread t is columns ((c R / V + g) T + t) V + [0, V),
/// so a warp's runs are consecutive (column col(g V, c) + j is value g V + j). Where a View's
/// rows are contiguous and a run's bytes aligned, a whole run is loaded and stored in one access
/// (copy_aligned), else value by value.
template <class Exec, int R, int V = 1>
struct RegisterRow {
  static_assert(V >= 1 && R % V == 0, "RegisterRow: runs of V values divide R");
  using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
  static constexpr int values = R, run = V;

  const Member& member;
  std::int64_t row, cols;
  int chunks;

  KOKKOS_FORCEINLINE_FUNCTION std::int64_t col(int k, int chunk) const {
    const std::int64_t team = member.team_size();
    return ((static_cast<std::int64_t>(chunk) * (R / V) + k / V) * team + member.team_rank()) * V + k % V;
  }
  /// Whether value k of the chunk is in the row (not padding).
  KOKKOS_FORCEINLINE_FUNCTION bool has(int k, int chunk) const { return col(k, chunk) < cols; }

  /// v[k] = float(x(row, col(k, chunk))), or `pad` past the row's end: every load before any use.
  template <class X>
  KOKKOS_FORCEINLINE_FUNCTION void load(const X& x, float (&v)[R], float pad, int chunk) const {
    using T = std::remove_const_t<typename X::value_type>;
    const bool runs = whole_runs(x);
    ROOFTOP_UNROLL
    for (int g = 0; g < R / V; ++g) {
      const std::int64_t c = col(g * V, chunk);
      if (runs && c + V <= cols) {
        alignas(16) T t[V];
        copy_aligned<V * sizeof(T)>(t, compat::address(x, row, c));
        ROOFTOP_UNROLL
        for (int j = 0; j < V; ++j) v[g * V + j] = float(t[j]);
      } else {
        ROOFTOP_UNROLL
        for (int j = 0; j < V; ++j) v[g * V + j] = c + j < cols ? float(x(row, c + j)) : pad;
      }
    }
  }

  /// f(chunk) for every chunk with v holding it (padded with `pad`): first the chunk v holds
  /// already (`held`: -1 for none), then the others, loaded; `held` is updated. With one chunk
  /// the row is loaded once for all passes; with more, each pass after the first reloads all but
  /// one (from L2, for rows that fit there).
  template <class X, class F>
  KOKKOS_INLINE_FUNCTION void each_chunk(const X& x, float (&v)[R], float pad, int& held, const F& f) const {
    const bool forward = held <= 0;
    for (int i = 0; i < chunks; ++i) {
      const int chunk = forward ? i : chunks - 1 - i;
      if (chunk != held) load(x, v, pad, chunk);
      held = chunk;
      f(chunk);
    }
  }

  /// The team's fold of every thread's `part` with `combine` (identity `identity`); every thread
  /// gets it. On CUDA, teams of whole warps fold through block_fold. Elsewhere a TeamThreadRange
  /// of exactly the team's size gives each thread one index (chunks of one on the host
  /// backends), so each adds its partial once.
  template <class Acc, class Combine>
  KOKKOS_INLINE_FUNCTION Acc all(const Acc& part, const Acc& identity, const Combine& combine) const {
#if defined(__CUDA_ARCH__)
    if (block_folds()) return block_fold(part, identity, combine);
#endif
    Acc result = identity;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, member.team_size()), [&](const int, Acc& p) { p = combine(p, part); },
        CombineReducer<Acc, Combine>(result, identity, combine));
    member.team_barrier();  // before an adjacent reduction may reuse its shared memory (see reduce_blocks_gpu)
    return result;
  }

  /// y(row, col(k, chunk)) = T(value(k)) for the chunk's values in the row (value is called for
  /// every k, padding too).
  template <class Y, class Value>
  KOKKOS_FORCEINLINE_FUNCTION void store(const Y& y, int chunk, const Value& value) const {
    store_runs(y, chunk, [&](const int g, float (&o)[V]) {
      ROOFTOP_UNROLL
      for (int j = 0; j < V; ++j) o[j] = value(g * V + j);
    });
  }

  /// The same, a run at a time: runs(g, o) sets o[j] to value g V + j of the chunk for j < V
  /// (those past the row's end are not stored).
  template <class Y, class Runs>
  KOKKOS_FORCEINLINE_FUNCTION void store_runs(const Y& y, int chunk, const Runs& runs) const {
    using T = typename Y::value_type;
    const bool whole = whole_runs(y);
    ROOFTOP_UNROLL
    for (int g = 0; g < R / V; ++g) {
      const std::int64_t c = col(g * V, chunk);
      float o[V];
      runs(g, o);
      if (whole && c + V <= cols) {
        alignas(16) T t[V];
        ROOFTOP_UNROLL
        for (int j = 0; j < V; ++j) t[j] = T(o[j]);
        copy_aligned<V * sizeof(T)>(&y(row, c), t);
      } else {
        ROOFTOP_UNROLL
        for (int j = 0; j < V; ++j)
          if (c + j < cols) y(row, c + j) = T(o[j]);
      }
    }
  }

  /// p[j] = float(w(col(g V + j, chunk))) for the V columns of run g of the chunk, from a rank-1
  /// View w over the row's columns (a norm's weight or bias, of any type): in one or two
  /// accesses where w is contiguous and the run's bytes (4, 8, 16 or 32) aligned, else value by
  /// value (0 past the row's end).
  template <class W>
  KOKKOS_FORCEINLINE_FUNCTION void load_run(const W& w, float (&p)[V], int g, int chunk) const {
    using T = std::remove_const_t<typename W::value_type>;
    const std::int64_t c = col(g * V, chunk);
    if constexpr (runs_of<T>) {
      if (whole_runs(w) && c + V <= cols) {
        alignas(16) T t[V];
        copy_aligned<V * sizeof(T)>(t, compat::address(w, c));
        ROOFTOP_UNROLL
        for (int j = 0; j < V; ++j) p[j] = float(t[j]);
        return;
      }
    }
    ROOFTOP_UNROLL
    for (int j = 0; j < V; ++j) p[j] = c + j < cols ? float(w(c + j)) : 0.0f;
  }

 private:
  /// Whether a run of V values of T is a size copy_aligned moves (4, 8, 16 or 32 bytes).
  template <class T>
  static constexpr bool runs_of = V > 1 && (V * sizeof(T) == 4 || V * sizeof(T) == 8 || V * sizeof(T) == 16 || V * sizeof(T) == 32);

  /// Whether this row of z (rank 2), or z (rank 1), is loaded and stored a run at a time: its
  /// columns contiguous, each run's bytes (4, 8, 16 or 32) aligned to their size up to 16.
  template <class Z>
  KOKKOS_FORCEINLINE_FUNCTION bool whole_runs(const Z& z) const {
    constexpr std::size_t bytes = V * sizeof(typename Z::value_type), align = bytes < 16 ? bytes : 16;
    if constexpr (!runs_of<typename Z::value_type>) {
      return false;
    } else if constexpr (Z::rank == 1) {
      return z.stride(0) == 1 && reinterpret_cast<std::uintptr_t>(z.data()) % align == 0;
    } else {
      return z.stride(1) == 1 && reinterpret_cast<std::uintptr_t>(z.data() + row * z.stride(0)) % align == 0;
    }
  }
};

/// Launches register-row kernels: body(RegisterRow<Exec, R, V>) once per row (body: a functor
/// with a template call operator, as extended lambdas cannot be generic; its member x, the
/// input View, sets V = row_run of its values).
template <class Exec>
struct RegisterRows {
  /// At most 64 registers per thread, so any team up to 1024 threads launches. (16 values per
  /// thread took 56-64 registers, CUDA 11.8 for sm_90; 32 under that cap, or 64 under 128 in
  /// teams of 512, spilled 88-440 bytes to the stack: hence chunks beyond 16 values.)
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::LaunchBounds<1024, 1>>;
  static constexpr std::int64_t warp = 32;

  template <int R, class Body>
  struct Kernel {
    using Row = RegisterRow<Exec, R, row_run<std::remove_const_t<typename decltype(Body::x)::value_type>, R>>;
    Body body;
    std::int64_t cols;
    int chunks;
    KOKKOS_INLINE_FUNCTION void operator()(const typename Policy::member_type& member) const {
      body(Row{member, static_cast<std::int64_t>(member.league_rank()), cols, chunks});
    }
  };

  /// The largest team this backend runs the kernel of Body with R values per thread.
  template <int R, class Body>
  static int most(const Exec& exec, const Body& body) {
    return Policy(exec, 1, 1).team_size_max(Kernel<R, Body>{body, 0, 1}, Kokkos::ParallelForTag());
  }

  /// The rows [0, rows) of `cols` entries, R values per thread per chunk, `team` threads per
  /// row. Throws rooftop::Error if the backend cannot run such a team.
  template <int R, class Body>
  static void launch(const char* label, const Exec& exec, std::int64_t rows, std::int64_t cols, int team, const Body& body) {
    const int largest = most<R>(exec, body);
    ROOFTOP_REQUIRE(team >= 1 && team <= largest, label, "a team of ", team, " threads (this backend runs 1 to ", largest, ")");
    start<R>(label, exec, rows, cols, team, body);
  }

  /// On a GPU: 16 values per thread, but 8 for rows of up to 1024 entries of a 2-byte type, with
  /// the fewest whole warps that cover the row, up to 1024 threads or as many whole warps as the
  /// backend runs (one chunk up to 16384 entries, two to 32768, ...). 16 values are twice the
  /// bytes in flight per thread under the same 64-register cap: on an H200 (4 December 2026,
  /// docs/measured/h200-2026-12-04) rows of 4096 ran 1.18-1.43x faster than with 8, fp32 rows
  /// of 768 1.02-1.12x (a team of 64 threads, a quarter of its values padding), bf16 rows of
  /// 768 0.93-0.95x; rows between 1024 and 4096 entries were not timed. The environment
  /// variable ROOFTOP_ROW_VALUES=8 or 16, read at each kernel's first launch, sets the values
  /// per thread for every row instead (to time one choice against the other in one build).
  template <class Body>
  static void run(const char* label, const Exec& exec, std::int64_t rows, std::int64_t cols, const Body& body) {
    auto launch_with = [&](auto values) {
      constexpr int R = decltype(values)::value;
      const std::int64_t largest = most<R>(exec, body), cap = largest >= warp ? largest / warp * warp : largest;
      const std::int64_t threads = (cols + R - 1) / R, team = threads <= warp ? warp : (threads + warp - 1) / warp * warp;
      start<R>(label, exec, rows, cols, static_cast<int>(team < cap ? team : cap), body);
    };
    static const int forced = forced_values();
    constexpr bool narrow = sizeof(typename decltype(Body::x)::value_type) == 2;
    if (forced == 8 || (forced == 0 && narrow && cols <= 1024)) {
      launch_with(std::integral_constant<int, 8>{});
    } else {
      launch_with(std::integral_constant<int, 16>{});
    }
  }

 private:
  /// ROOFTOP_ROW_VALUES as 8 or 16, 0 where it is unset or empty; throws on any other value.
  static int forced_values() {
    const char* text = std::getenv("ROOFTOP_ROW_VALUES");
    if (text == nullptr || *text == '\0') return 0;
    const std::string value(text);
    ROOFTOP_REQUIRE(value == "8" || value == "16", "ROOFTOP_ROW_VALUES", "must be 8 or 16 (or unset), not '", value, "'");
    return value == "8" ? 8 : 16;
  }

  /// launch() for a team already known to run.
  template <int R, class Body>
  static void start(const char* label, const Exec& exec, std::int64_t rows, std::int64_t cols, int team, const Body& body) {
    const std::int64_t span = static_cast<std::int64_t>(team) * R;
    const Kernel<R, Body> kernel{body, cols, static_cast<int>(cols > span ? (cols + span - 1) / span : 1)};
    if (rows > 0) Kokkos::parallel_for(label, Policy(exec, league_size(label, rows), team), kernel);
  }
};

}  // namespace rooftop::detail
