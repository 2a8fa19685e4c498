// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Matrix-unit tiles whose layout in the lanes' registers is known: the PTX `mma.sync`
/// m16n8k16 shape (A 16 x 16 and B 16 x 8 in bf16 or fp16, accumulators 16 x 8 in fp32), for
/// kernels that work on the accumulators in registers, as FlashAttention-2 does: row-wise
/// softmax on the scores with shuffles inside each quad of lanes, and the scores turned into
/// the next product's A operand without a trip through shared memory. (nvcuda::wmma's
/// fragments, backends/cuda/warp_matrix.hpp, hide their layout, so such kernels must store
/// them to scratch and read them back.)
///
/// On CUDA devices of compute capability 8.0 and later (`lanes` = 32), per the PTX ISA's
/// "Matrix Fragments for mma.m16n8k16": lane = 4 g + t holds, of an accumulator tile,
/// rows g and g + 8 at columns 2t and 2t + 1 (`row`, `col`; `slot` 0 or 1 names the row);
/// tiles come from shared memory through `ldmatrix` (16-byte rows, 16-byte aligned).
/// Everywhere else one thread holds whole tiles in floats (`lanes` = 1, 16 row slots), and the
/// same calls do the same arithmetic in plain loops, so kernels written on them run, and are
/// tested, on every backend; the row reductions across lanes are then no-ops.
/// The async copies (`copy16_async`, `async_commit`, `async_wait`) are `cp.async` on those
/// devices (global to shared without registers; rows past the data zero-filled by the copy
/// engine) and plain copies elsewhere.
#pragma once

#include "../../core/kokkos_compat.hpp"
#include "../../core/types.hpp"
#include "warp_matrix.hpp"

#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace rooftop::detail {

/// 16 bytes from src (global memory) to dst (level-0 team scratch), both 16-byte aligned, or
/// 16 zero bytes to dst if !valid (src is then not read, but must be a valid address). Ordered
/// by async_commit / async_wait and a team barrier, not by the barrier alone.
KOKKOS_FORCEINLINE_FUNCTION void copy16_async(void* dst, const void* src, bool valid) {
#if defined(ROOFTOP_WARP_MATRIX_UNITS)
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(address), "l"(src), "r"(valid ? 16 : 0) : "memory");
#else
  if (valid) {
    std::memcpy(dst, src, 16);
  } else {
    std::memset(dst, 0, 16);
  }
#endif
}

/// Closes the group of this thread's async copies issued since the last commit.
KOKKOS_FORCEINLINE_FUNCTION void async_commit() {
#if defined(ROOFTOP_WARP_MATRIX_UNITS)
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

/// Waits until at most `pending` of this thread's committed groups are still in flight.
template <int pending>
KOKKOS_FORCEINLINE_FUNCTION void async_wait() {
#if defined(ROOFTOP_WARP_MATRIX_UNITS)
  asm volatile("cp.async.wait_group %0;" ::"n"(pending) : "memory");
#endif
}

/// m16n8k16 tiles of T (bf16 or fp16) with fp32 accumulators, their layout known (see the file).
template <class T>
struct WarpMma {
  static_assert(std::is_same_v<T, bf16> || std::is_same_v<T, fp16>, "rooftop: matrix units take bf16 or fp16 tiles");
#if defined(ROOFTOP_WARP_MATRIX_UNITS)
  static constexpr int lanes = 32;
  /// Rows of an accumulator tile one lane holds, and the values it holds of one.
  static constexpr int row_slots = 2, c_values = 4;
  struct A {
    unsigned r[4];
  };
  struct B {
    unsigned r[2];
  };
  struct C {
    float x[c_values];
  };

  /// Row, column and row slot of an accumulator tile's value x[e] in this lane.
  __device__ static int row(int e) { return lane() / 4 + 8 * (e / 2); }
  __device__ static int col(int e) { return lane() % 4 * 2 + e % 2; }
  __device__ static constexpr int slot(int e) { return e / 2; }

  __device__ static void zero(C& c) {
    ROOFTOP_UNROLL
    for (int e = 0; e < c_values; ++e) c.x[e] = 0.0f;
  }
  /// The 16 x 16 A tile at p (row-major, ld apart).
  __device__ static void load_a(A& a, const T* p, int ld) {
    const int i = lane();
    ldmatrix<false>(a.r, p + (i % 8 + 8 * (i / 8 % 2)) * ld + 8 * (i / 16));
  }
  /// Two B tiles (k 16 x n 8) from 16 rows of 16 values at p (ld apart) that hold B's columns,
  /// as the rows of K are the columns of K^T: b0 from rows 0-7, b1 from rows 8-15.
  __device__ static void load_b_columns(B& b0, B& b1, const T* p, int ld) {
    const int i = lane();
    unsigned r[4];
    ldmatrix<false>(r, p + (i % 8 + 8 * (i / 16)) * ld + 8 * (i / 8 % 2));
    b0 = {{r[0], r[1]}};
    b1 = {{r[2], r[3]}};
  }
  /// Two B tiles (k 16 x n 8) from the 16 x 16 row-major k x n block at p (ld apart), as V's
  /// rows: b0 from columns 0-7, b1 from columns 8-15.
  __device__ static void load_b_rows(B& b0, B& b1, const T* p, int ld) {
    const int i = lane();
    unsigned r[4];
    ldmatrix<true>(r, p + (i % 8 + 8 * (i / 8 % 2)) * ld + 8 * (i / 16));
    b0 = {{r[0], r[1]}};
    b1 = {{r[2], r[3]}};
  }
  /// c += a * b.
  __device__ static void mma(C& c, const A& a, const B& b) {
    if constexpr (std::is_same_v<T, bf16>) {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
          "{%0, %1, %2, %3};"
          : "+f"(c.x[0]), "+f"(c.x[1]), "+f"(c.x[2]), "+f"(c.x[3])
          : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]));
    } else {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
          "{%0, %1, %2, %3};"
          : "+f"(c.x[0]), "+f"(c.x[1]), "+f"(c.x[2]), "+f"(c.x[3])
          : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]));
    }
  }
  /// The A tile (16 x 16) of the accumulator tiles c0 (columns 0-7) and c1 (8-15), rounded to
  /// T: an accumulator's lane layout is the A operand's, half a tile wide.
  __device__ static void to_a(A& a, const C& c0, const C& c1) {
    a.r[0] = pack(c0.x[0], c0.x[1]);
    a.r[1] = pack(c0.x[2], c0.x[3]);
    a.r[2] = pack(c1.x[0], c1.x[1]);
    a.r[3] = pack(c1.x[2], c1.x[3]);
  }
  /// The max and the sum of a row's per-lane partials, over the four lanes that hold the row.
  __device__ static float row_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
  }
  __device__ static float row_sum(float v) {
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
  }

 private:
  __device__ static int lane() {
    int i;
    asm("mov.u32 %0, %%laneid;" : "=r"(i));
    return i;
  }
  /// Four 8 x 8 matrices of 16-bit values, lane i giving the address of row i % 8 of matrix i / 8
  /// (16 bytes, 16-byte aligned, in shared memory); r[m] gets matrix m's row lane / 4, columns
  /// 2 (lane % 4) and + 1 (transposed: its column lane / 4, rows 2 (lane % 4) and + 1).
  template <bool trans>
  __device__ static void ldmatrix(unsigned (&r)[4], const T* row_address) {
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row_address));
    if constexpr (trans) {
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                   : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                   : "r"(address)
                   : "memory");
    } else {
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                   : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                   : "r"(address)
                   : "memory");
    }
  }
  /// lo in the low 16 bits, hi in the high (the lower column first), each rounded to nearest.
  __device__ static unsigned pack(float lo, float hi) {
    unsigned u;
    if constexpr (std::is_same_v<T, bf16>) {
      const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
      std::memcpy(&u, &h, sizeof(u));
    } else {
      const __half2 h = __floats2half2_rn(lo, hi);
      std::memcpy(&u, &h, sizeof(u));
    }
    return u;
  }
#else
  static constexpr int lanes = 1;
  static constexpr int row_slots = 16, c_values = 16 * 8;
  struct A {
    float v[16 * 16];
  };
  struct B {
    float v[16 * 8];  // (k, n) at k * 8 + n
  };
  struct C {
    float x[c_values];  // (row, col) at row * 8 + col
  };

  KOKKOS_INLINE_FUNCTION static constexpr int row(int e) { return e / 8; }
  KOKKOS_INLINE_FUNCTION static constexpr int col(int e) { return e % 8; }
  KOKKOS_INLINE_FUNCTION static constexpr int slot(int e) { return e / 8; }

  KOKKOS_INLINE_FUNCTION static void zero(C& c) {
    for (int e = 0; e < c_values; ++e) c.x[e] = 0.0f;
  }
  KOKKOS_INLINE_FUNCTION static void load_a(A& a, const T* p, int ld) {
    for (int i = 0; i < 16; ++i)
      for (int k = 0; k < 16; ++k) a.v[i * 16 + k] = static_cast<float>(p[i * ld + k]);
  }
  KOKKOS_INLINE_FUNCTION static void load_b_columns(B& b0, B& b1, const T* p, int ld) {
    for (int k = 0; k < 16; ++k)
      for (int n = 0; n < 8; ++n) {
        b0.v[k * 8 + n] = static_cast<float>(p[n * ld + k]);
        b1.v[k * 8 + n] = static_cast<float>(p[(n + 8) * ld + k]);
      }
  }
  KOKKOS_INLINE_FUNCTION static void load_b_rows(B& b0, B& b1, const T* p, int ld) {
    for (int k = 0; k < 16; ++k)
      for (int n = 0; n < 8; ++n) {
        b0.v[k * 8 + n] = static_cast<float>(p[k * ld + n]);
        b1.v[k * 8 + n] = static_cast<float>(p[k * ld + n + 8]);
      }
  }
  KOKKOS_INLINE_FUNCTION static void mma(C& c, const A& a, const B& b) {
    for (int i = 0; i < 16; ++i)
      for (int k = 0; k < 16; ++k)
        for (int n = 0; n < 8; ++n) c.x[i * 8 + n] = compat::mul_add(a.v[i * 16 + k], b.v[k * 8 + n], c.x[i * 8 + n]);
  }
  KOKKOS_INLINE_FUNCTION static void to_a(A& a, const C& c0, const C& c1) {
    for (int i = 0; i < 16; ++i)
      for (int n = 0; n < 8; ++n) {
        a.v[i * 16 + n] = static_cast<float>(T(c0.x[i * 8 + n]));
        a.v[i * 16 + n + 8] = static_cast<float>(T(c1.x[i * 8 + n]));
      }
  }
  KOKKOS_INLINE_FUNCTION static float row_max(float v) { return v; }
  KOKKOS_INLINE_FUNCTION static float row_sum(float v) { return v; }
#endif
};

}  // namespace rooftop::detail
