// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// What GPU kernels do with warps beyond portable Kokkos, with portable fallbacks:
/// - `copy_aligned<N>`: N bytes (4, 8, 16 or 32) in the widest accesses: one 16-byte load or
///   store per 16 bytes on CUDA devices (a memcpy elsewhere), so a thread moves a run of 2-byte
///   or 4-byte values in one instruction instead of one per value.
/// - `block_fold`: every thread's fold of one value per thread of a CUDA block, through warp
///   shuffles and one slot of shared memory per warp (two block barriers), for blocks of whole
///   warps with one Kokkos vector lane per thread. Kokkos 3.4's team `parallel_reduce` over a
///   custom reducer (CombineReducer) goes through its generic intra-block reduction instead.
#pragma once

#include "../../core/kokkos_compat.hpp"

#include <cstring>

namespace rooftop::detail {

/// Copies N bytes from src to dst, both min(N, 16)-byte aligned: in 16-byte accesses on CUDA
/// devices (8 or 4 for N of 8 or 4), a memcpy elsewhere.
template <int N>
KOKKOS_FORCEINLINE_FUNCTION void copy_aligned(void* dst, const void* src) {
  static_assert(N == 4 || N == 8 || N == 16 || N == 32, "copy_aligned: 4, 8, 16 or 32 bytes");
#if defined(__CUDA_ARCH__)
  if constexpr (N == 32) {
    static_cast<uint4*>(dst)[0] = static_cast<const uint4*>(src)[0];
    static_cast<uint4*>(dst)[1] = static_cast<const uint4*>(src)[1];
  } else if constexpr (N == 16) {
    *static_cast<uint4*>(dst) = *static_cast<const uint4*>(src);
  } else if constexpr (N == 8) {
    *static_cast<uint2*>(dst) = *static_cast<const uint2*>(src);
  } else {
    *static_cast<unsigned*>(dst) = *static_cast<const unsigned*>(src);
  }
#else
  std::memcpy(dst, src, N);
#endif
}

#if defined(__CUDA_ARCH__)
/// Whether this block can go through block_fold: whole warps, one Kokkos vector lane per thread
/// (a team's threads along y and z, as Kokkos launches a TeamPolicy of vector length 1).
__device__ inline bool block_folds() { return blockDim.x == 1 && (blockDim.y * blockDim.z) % 32 == 0; }

/// Lane 0's fold of the warp's values v (lane order, a fixed tree of shuffles down); the other
/// lanes' results are partial.
template <int words, class Acc, class Combine>
__device__ Acc warp_fold_down(Acc v, const Combine& combine) {
  for (int d = 16; d >= 1; d /= 2) {
    unsigned w[words];
    std::memcpy(w, &v, sizeof(Acc));
    for (int i = 0; i < words; ++i) w[i] = __shfl_down_sync(0xffffffffu, w[i], d);
    Acc other = v;
    std::memcpy(&other, w, sizeof(Acc));
    v = combine(v, other);
  }
  return v;
}

/// The fold of every thread's v with combine (identity: its identity), the same value in every
/// thread (combine need not commute): each warp folds down to its lane 0 by shuffles, lane 0
/// stores the warp's partial, and every warp folds the partials the same way (lane i takes warp
/// i's) and takes its lane 0's. Ends with a barrier, so a following block_fold may reuse the
/// slots. Only where block_folds(), with every thread of the block calling it. (Every thread
/// reading all the partials in turn cost 16 to 32 loads and folds per thread in teams of 512 or
/// 1024.)
template <class Acc, class Combine>
__device__ Acc block_fold(Acc v, const Acc& identity, const Combine& combine) {
  static_assert(sizeof(Acc) % 4 == 0 && sizeof(Acc) <= 16, "block_fold: values of 4 to 16 bytes in whole words");
  constexpr int words = sizeof(Acc) / 4;
  __shared__ unsigned slots[32 * words];  // a partial per warp (a block has at most 32)
  const unsigned thread = threadIdx.y + blockDim.y * threadIdx.z, lane = thread % 32, warps = blockDim.y * blockDim.z / 32;
  v = warp_fold_down<words>(v, combine);
  if (lane == 0) std::memcpy(slots + thread / 32 * words, &v, sizeof(Acc));
  __syncthreads();
  v = identity;
  if (lane < warps) std::memcpy(&v, slots + lane * words, sizeof(Acc));
  v = warp_fold_down<words>(v, combine);
  unsigned w[words];
  std::memcpy(w, &v, sizeof(Acc));
  for (int i = 0; i < words; ++i) w[i] = __shfl_sync(0xffffffffu, w[i], 0);
  std::memcpy(&v, w, sizeof(Acc));
  __syncthreads();
  return v;
}
#endif

}  // namespace rooftop::detail
