// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// How kernels are spread over an execution space. Elementwise ops: one work item per
/// element. Row-wise parallelism for ops over the last axis of a (rows, cols) tensor (softmax, norms,
/// embedding, bias + activation): one team per row; inside a row, loops and reductions over
/// the columns. On CPUs a team is one thread and a row is a plain loop the compiler
/// vectorizes (reductions through fold_lanes' independent partials); on GPUs a team's threads
/// share the row, consecutive threads on consecutive columns (coalesced).
#pragma once

#include "reduction.hpp"

#include <cstdint>

/// Loop hints for register-blocked kernels. ROOFTOP_UNROLL fully unrolls a short loop of fixed
/// length (a register block's rows and columns); ROOFTOP_SIMD marks a loop to vectorize (without
/// it GCC 12 keeps part of a register block's sums in memory: a store-load chain per step).
#if defined(__CUDA_ARCH__)
#define ROOFTOP_UNROLL _Pragma("unroll")
#elif defined(__GNUC__) && !defined(__clang__)
#define ROOFTOP_UNROLL _Pragma("GCC unroll 16")
#else
#define ROOFTOP_UNROLL
#endif
#if defined(_OPENMP) && !defined(__CUDA_ARCH__)
#define ROOFTOP_SIMD _Pragma("omp simd")
#else
#define ROOFTOP_SIMD
#endif

namespace rooftop::detail {

/// One work item per element of v (a rank-1 View).
template <class Exec, class View>
Kokkos::RangePolicy<Exec> elements(const Exec& exec, const View& v) {
  return Kokkos::RangePolicy<Exec>(exec, 0, v.extent(0));
}

/// One row of a row-wise kernel: its index and the team working on it.
template <class Exec>
struct RowTeam {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = typename Policy::member_type;
  static constexpr bool gpu = ReductionShape<Exec, float>::gpu;

  const Member& member;
  std::int64_t row;

  /// f(j) for j in [0, n), split over the team.
  template <class F>
  KOKKOS_INLINE_FUNCTION void for_each(std::int64_t n, const F& f) const {
    if constexpr (gpu) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), f);
    } else {
      for (std::int64_t j = 0; j < n; ++j) f(j);
    }
  }

  /// Waits until the whole team is here, so what one thread wrote in an earlier loop over the
  /// row is visible to all (a no-op on CPUs, where the team is one thread).
  KOKKOS_INLINE_FUNCTION void barrier() const {
    if constexpr (gpu) member.team_barrier();
  }

  /// Folds value(j) for j in [0, n) with `combine` (identity `identity`); every thread of the
  /// team gets the result.
  template <class Acc, class Value, class Combine>
  KOKKOS_INLINE_FUNCTION Acc reduce(std::int64_t n, Acc identity, const Value& value, const Combine& combine) const {
    return reduce_by(
        n, identity, [&](Acc& part, const std::int64_t j) { part = combine(part, value(j)); }, combine);
  }

  /// As reduce, where accumulate(part, j) adds element j to a partial result directly (cheaper
  /// than combining with a one-element partial, e.g. for online softmax).
  template <class Acc, class Accumulate, class Combine>
  KOKKOS_INLINE_FUNCTION Acc reduce_by(std::int64_t n, Acc identity, const Accumulate& accumulate,
                                       const Combine& combine) const {
    if constexpr (gpu) {
      Acc result = identity;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(member, n), [&](const std::int64_t j, Acc& part) { accumulate(part, j); },
          CombineReducer<Acc, Combine>(result, identity, combine));
      return result;
    } else {
      return fold_lanes_by<ReductionShape<Exec, Acc>::lanes>(0, n, identity, accumulate, combine);
    }
  }
};

/// The policy row-wise kernels launch: one team per row (one thread per team on CPUs; on GPUs
/// Kokkos picks the team size for the kernel's registers).
template <class Exec>
typename RowTeam<Exec>::Policy row_policy(const Exec& exec, std::int64_t rows) {
  using Policy = typename RowTeam<Exec>::Policy;
  if constexpr (RowTeam<Exec>::gpu) {
    return Policy(exec, rows, Kokkos::AUTO);
  } else {
    return Policy(exec, rows, 1);
  }
}

/// body(RowTeam) for every row in [0, rows).
template <class Exec, class Body>
void for_each_row(const char* label, const Exec& exec, std::int64_t rows, const Body& body) {
  using Member = typename RowTeam<Exec>::Member;
  Kokkos::parallel_for(label, row_policy(exec, rows), KOKKOS_LAMBDA(const Member& member) {
    body(RowTeam<Exec>{member, static_cast<std::int64_t>(member.league_rank())});
  });
}

}  // namespace rooftop::detail
