// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Matrix units: 16 x 16 x 16 products of bf16 or fp16 tiles accumulated in fp32.
/// - On CUDA devices of compute capability 8.0 and later they run on the tensor cores, through
///   CUDA's warp matrix functions (nvcuda::wmma): the 32 threads of a warp hold one tile
///   together (`lanes` = 32), in a layout the hardware chooses and code never looks into.
/// - Everywhere else one thread holds a whole tile as 256 floats (`lanes` = 1), and the same
///   calls do the same arithmetic in plain loops, so kernels written on them (gemm's
///   matrix-unit driver, the harness's matrix peak) run, and are tested, on every backend.
/// Tiles are read from and written to team scratch (row-major, `ld` values apart, ld a
/// multiple of 8 for bf16/fp16 and of 4 for floats, every tile's address 32-byte aligned).
/// That is the CUDA C++ contract of load/store_matrix_sync. The PTX ISA's wmma.load/store asks
/// more, each row aligned to the fragment's size: 32 bytes for fp16 A/B and fp32 C, which the
/// kernels' 16-byte row padding does not give (the sm_90 code loads them with LDSM and
/// LDS.64, which need 16 and 8); 16 bytes for bf16, whose loads here are that PTX.
/// test_gemm, its bf16 and fp16 cases among them, passed on an H100 (27 November 2026).
/// (Kernels that work on the accumulators in registers use backends/cuda/warp_mma.hpp, whose
/// tiles' layout is known.)
/// `in_shared` gives a scratch pointer the shared address space, so the loads compile to
/// shared-memory instructions instead of generic ones.
#pragma once

#include "../../core/kokkos_compat.hpp"
#include "../../core/reduction.hpp"
#include "../../core/types.hpp"
#include "warp.hpp"

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define ROOFTOP_WARP_MATRIX_UNITS 1
#endif

namespace rooftop::detail {

/// p, a pointer into a team's level-0 scratch, as a pointer the compiler knows is in shared
/// memory on CUDA devices (Kokkos' scratch pointer may be either level, so it is generic and
/// its loads are generic loads); p itself elsewhere. Only for level-0 scratch.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T* in_shared(T* p) {
#if defined(__CUDA_ARCH__)
  extern __shared__ __align__(16) unsigned char rooftop_shared_base[];
  return reinterpret_cast<T*>(rooftop_shared_base +
                              (__cvta_generic_to_shared(p) - __cvta_generic_to_shared(rooftop_shared_base)));
#else
  return p;
#endif
}

/// Threads per matrix-unit tile a team of Exec is launched with: a warp on GPUs, one thread
/// elsewhere. (Inside a kernel WarpMatrix<T>::lanes says what the code compiled for the device
/// uses; it is 1 on GPUs older than compute capability 8.0, whose threads each emulate a tile.)
template <class Exec>
inline constexpr int matrix_tile_lanes = ReductionShape<Exec, float>::gpu ? 32 : 1;

/// The matrix-unit operations on tiles of T (bf16 or fp16) with fp32 accumulators.
template <class T>
struct WarpMatrix {
  static_assert(std::is_same_v<T, bf16> || std::is_same_v<T, fp16>, "rooftop: matrix units take bf16 or fp16 tiles");
  static constexpr int m = 16, n = 16, k = 16;
#if defined(ROOFTOP_WARP_MATRIX_UNITS)
  static constexpr int lanes = 32;
  using Native = std::conditional_t<std::is_same_v<T, bf16>, __nv_bfloat16, __half>;
  using A = nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, m, n, k, Native, nvcuda::wmma::row_major>;
  using B = nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, m, n, k, Native, nvcuda::wmma::row_major>;
  using C = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, m, n, k, float>;

  __device__ static void zero(C& c) { nvcuda::wmma::fill_fragment(c, 0.0f); }
  /// The m x k tile of A at p (row-major, ld apart), and the k x n tile of B.
  __device__ static void load(A& a, const T* p, int ld) {
    if constexpr (std::is_same_v<T, bf16>) {
      load_shared_bf16<true>(a, p, ld);
    } else {
      nvcuda::wmma::load_matrix_sync(a, native(p), ld);
    }
  }
  __device__ static void load(B& b, const T* p, int ld) {
    if constexpr (std::is_same_v<T, bf16>) {
      load_shared_bf16<false>(b, p, ld);
    } else {
      nvcuda::wmma::load_matrix_sync(b, native(p), ld);
    }
  }
  /// The m x n tile at p (row-major floats, ld apart) into c.
  __device__ static void load(C& c, const float* p, int ld) {
    nvcuda::wmma::load_matrix_sync(c, in_shared(p), ld, nvcuda::wmma::mem_row_major);
  }
  /// c += a * b.
  __device__ static void mma(C& c, const A& a, const B& b) { nvcuda::wmma::mma_sync(c, a, b, c); }
  /// The m x n tile c to p (row-major, ld apart).
  __device__ static void store(float* p, const C& c, int ld) {
    nvcuda::wmma::store_matrix_sync(in_shared(p), c, ld, nvcuda::wmma::mem_row_major);
  }
  /// Orders the lanes' scratch accesses before and after it (a tile stored, then read by lanes).
  __device__ static void sync_lanes() { __syncwarp(); }

 private:
  __device__ static const Native* native(const T* p) { return reinterpret_cast<const Native*>(in_shared(p)); }
  /// CUDA 11.8's wmma loads of bf16 tiles stay generic loads (LD) even from a shared pointer,
  /// where fp16's become ldmatrix (LDSM): the bf16 ones as the PTX instruction on the shared
  /// address (four 32-bit registers per lane for A and for B of m16n16k16).
  template <bool is_a, class F>
  __device__ static void load_shared_bf16(F& f, const T* p, int ld) {
    static_assert(sizeof(f.x) == 4 * sizeof(unsigned), "rooftop: a bf16 m16n16k16 tile is four registers per lane");
    unsigned* const r = reinterpret_cast<unsigned*>(&f.x[0]);
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(p));
    if constexpr (is_a) {
      asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16 {%0, %1, %2, %3}, [%4], %5;"
                   : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                   : "r"(address), "r"(ld)
                   : "memory");
    } else {
      asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.shared.bf16 {%0, %1, %2, %3}, [%4], %5;"
                   : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                   : "r"(address), "r"(ld)
                   : "memory");
    }
  }
#else
  static constexpr int lanes = 1;
  struct A {
    float v[m * k];
  };
  struct B {
    float v[k * n];
  };
  struct C {
    float v[m * n];
  };

  KOKKOS_INLINE_FUNCTION static void zero(C& c) {
    for (int e = 0; e < m * n; ++e) c.v[e] = 0.0f;
  }
  KOKKOS_INLINE_FUNCTION static void load(A& a, const T* p, int ld) {
    for (int i = 0; i < m; ++i)
      for (int kk = 0; kk < k; ++kk) a.v[i * k + kk] = static_cast<float>(p[i * ld + kk]);
  }
  KOKKOS_INLINE_FUNCTION static void load(B& b, const T* p, int ld) {
    for (int kk = 0; kk < k; ++kk)
      for (int j = 0; j < n; ++j) b.v[kk * n + j] = static_cast<float>(p[kk * ld + j]);
  }
  KOKKOS_INLINE_FUNCTION static void load(C& c, const float* p, int ld) {
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) c.v[i * n + j] = p[i * ld + j];
  }
  KOKKOS_INLINE_FUNCTION static void mma(C& c, const A& a, const B& b) {
    for (int i = 0; i < m; ++i)
      for (int kk = 0; kk < k; ++kk)
        for (int j = 0; j < n; ++j) c.v[i * n + j] = compat::mul_add(a.v[i * k + kk], b.v[kk * n + j], c.v[i * n + j]);
  }
  KOKKOS_INLINE_FUNCTION static void store(float* p, const C& c, int ld) {
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) p[i * ld + j] = c.v[i * n + j];
  }
  KOKKOS_INLINE_FUNCTION static void sync_lanes() {}
#endif
};

}  // namespace rooftop::detail
