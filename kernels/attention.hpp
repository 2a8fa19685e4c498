// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// attention: scaled dot-product attention over (batch, heads, seq, head_dim) tensors,
///   O(b, h, i, :) = sum_j softmax_j(scale * Q(b, h, i, :) . K(b, h, j, :)) V(b, h, j, :)
/// with Q and O of seq_q queries and K and V of seq_k keys, optionally causal.
///
/// Causal mask, top-left aligned as PyTorch's scaled_dot_product_attention(is_causal=True):
/// key j is visible to query i iff j <= i (also when seq_q != seq_k; queries i >= seq_k see
/// every key). A query that sees no key (only when seq_k == 0) gets an output row of 0, as
/// rooftop::softmax gives a fully masked row all 0.
///
/// FlashAttention-style: one team per (batch, head, block of BQ queries); tiles of BK keys and
/// values stream through team scratch while each query keeps a running max m, a running sum l
/// of exp(score - m) and an fp32 accumulator of head_dim values (rescaled by exp(m_old - m_new)
/// when m grows). The seq_q x seq_k score matrix is never formed: memory beyond the inputs and
/// the output is one team's tiles, O(BQ * head_dim + BK * head_dim + BQ * BK) per team.
///
/// Storage fp32, bf16 or fp16 (Q, K, V and O of one type); scores, softmax and accumulation
/// in fp32. head_dim at most attention_max_head_dim. Views are LayoutRight (head_dim
/// contiguous). On GPUs bf16 and fp16 at head_dim 64 or 128 run on the matrix units (tensor
/// cores: detail::attention_matrix_units), which multiply V by the probabilities rounded to
/// the storage type. On AVX-512 and AVX2 hosts the scores are formed transposed and the
/// softmax runs a register of queries at a time (detail::attention_host_columns); with
/// AVX512-BF16, bf16 scores two products per instruction (gemm_uses_bf16_pairs).
#pragma once

#include "../backends/cpu/exp_vectors.hpp"
#include "../backends/cuda/warp_mma.hpp"
#include "../core/cost.hpp"
#include "../core/error.hpp"
#include "../core/math.hpp"
#include "../core/parallel.hpp"
#include "../core/reduction.hpp"
#include "../core/types.hpp"
#include "gemm.hpp"

#include <cstdint>
#include <limits>
#include <type_traits>

namespace rooftop {

/// Largest head_dim rooftop::attention supports (a block of queries' accumulators and a tile of
/// keys and values of that width live in team scratch).
inline constexpr std::int64_t attention_max_head_dim = 256;

namespace detail {

/// Tile sizes of attention on one backend.
template <class Exec>
struct AttentionTiles {
  static constexpr bool gpu = ReductionShape<Exec, float>::gpu;
  /// Queries per team (BQ), at most: halved (down to min_queries) until the team's scratch fits
  /// scratch_budget. CPU: a multiple of block_rows; at head_dim 64 all tiles take 161 KiB, at
  /// 256 (BQ 48) 377 KiB, in L2.
  static constexpr std::int64_t queries = gpu ? 32 : 96;
  static constexpr std::int64_t min_queries = gpu ? 8 : 24;
  /// Keys per tile (BK). CPU: 128, so the per-row softmax overhead (two reductions, one exp for
  /// the rescaling) is spread over more keys (measured ~25% faster than 64).
  static constexpr std::int64_t keys = gpu ? 32 : 128;
  /// Row stride of the K^T tile: on GPUs one more than BK, so the transposing store of a tile
  /// row (consecutive threads on consecutive head_dim entries) hits distinct shared-memory banks.
  static constexpr std::int64_t kt_stride = gpu ? keys + 1 : keys;
  /// CPU register block of the two products: `block_rows` queries x `block_cols` keys (QK^T)
  /// or head_dim entries (PV), i.e. 6 x 2 AVX2 accumulators (12 of the 16 registers); per step
  /// of the shared dimension 2 row loads and 6 broadcasts feed 12 FMAs, so the FMA units, not
  /// the loads, bound it (a 4-row block measured about 2/3 of the 6-row one's rate). BQ is a
  /// multiple of it. GPUs: 1 x 1 (a thread per output entry).
  static constexpr std::int64_t block_rows = gpu ? 1 : 6;
  static constexpr std::int64_t block_cols = gpu ? 1 : 16;
  /// Scratch bytes a team may use: Kokkos 3.4's level-0 limit for CUDA (40 KiB) on GPUs
  /// (past it, from head_dim 128, the tiles go to level-1 scratch, i.e. global memory), 3/4 of
  /// a 512 KiB L2 on CPUs.
  static constexpr std::int64_t scratch_budget = gpu ? 40 * 1024 : 384 * 1024;
  /// Independent partials of the softmax's max and sum over a tile row (two AVX2 registers).
  static constexpr int softmax_lanes = gpu ? 1 : 16;
  /// Threads per team on GPUs (spread over queries x keys, then queries x head_dim); 1 on CPUs.
  static constexpr int threads = gpu ? 128 : 1;

  static constexpr std::int64_t round_up(std::int64_t n, std::int64_t m) { return (n + m - 1) / m * m; }

  /// Tile layout in floats for block_q queries and head_dim d (padded to block_cols):
  /// Q (block_q, dp), K^T (dp, kt_stride), V (keys, dp), scores (block_q, keys),
  /// accumulator (block_q, dp), and m, l, alpha (block_q) each.
  struct Layout {
    std::int64_t block_q, dp, q, kt, v, s, acc, m, l, alpha, floats;
  };
  static constexpr Layout layout(std::int64_t block_q, std::int64_t head_dim) {
    Layout t{};
    t.block_q = block_q;
    t.dp = round_up(head_dim, block_cols);
    t.q = 0;
    t.kt = t.q + block_q * t.dp;
    t.v = t.kt + t.dp * kt_stride;
    t.s = t.v + keys * t.dp;
    t.acc = t.s + block_q * keys;
    t.m = t.acc + block_q * t.dp;
    t.l = t.m + block_q;
    t.alpha = t.l + block_q;
    t.floats = t.alpha + block_q;
    return t;
  }
  /// The largest query block (a power-of-two fraction of `queries`) whose tiles fit the budget.
  static constexpr Layout layout_for(std::int64_t head_dim) {
    std::int64_t q = queries;
    while (q > min_queries && layout(q, head_dim).floats * static_cast<std::int64_t>(sizeof(float)) > scratch_budget) q /= 2;
    return layout(q, head_dim);
  }
};

/// Strides of the first three extents of a rank-4 View, in elements.
struct Strides3 {
  std::int64_t s[3];
  template <class View>
  explicit Strides3(const View& v) : s{static_cast<std::int64_t>(v.stride(0)), static_cast<std::int64_t>(v.stride(1)),
                                       static_cast<std::int64_t>(v.stride(2))} {}
  KOKKOS_INLINE_FUNCTION std::int64_t operator[](int r) const { return s[r]; }
};

/// One team's loops: on GPUs split over the team's threads (consecutive threads on the
/// consecutive, contiguous inner index), on CPUs (one thread) plain nested loops the compiler
/// vectorizes.
template <class Member, bool gpu>
struct AttentionTeam {
  const Member& member;

  /// f(i, c) for i in [0, n0), c in [0, n1).
  template <class F>
  KOKKOS_INLINE_FUNCTION void for_each(std::int64_t n0, std::int64_t n1, const F& f) const {
    if constexpr (gpu) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n0 * n1), [&](const std::int64_t t) { f(t / n1, t % n1); });
    } else {
      for (std::int64_t i = 0; i < n0; ++i)
        for (std::int64_t c = 0; c < n1; ++c) f(i, c);
    }
  }
  KOKKOS_INLINE_FUNCTION void barrier() const {
    if constexpr (gpu) member.team_barrier();
  }
};

/// out(i, j) = sum_c a(i, c) * b(c, j) for i in [0, rows), j in [0, cols) (rows a multiple of
/// block_rows, cols of block_cols): row-major a with stride lda, b with ldb, out with ldo;
/// `out_init(i, j)` is the initial value of the sum (0 or the rescaled accumulator). The
/// CPU register block keeps Tiles::block_rows x block_cols sums in registers over the whole
/// reduction (fixed trip counts: the compiler unrolls and vectorizes the inner two loops).
template <class Tiles, class Team, class Init>
KOKKOS_INLINE_FUNCTION void attention_product(const Team& team, std::int64_t rows, std::int64_t cols, std::int64_t inner,
                                              const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                                              float* out, std::int64_t ldo, const Init& out_init) {
  if constexpr (Tiles::gpu) {
    team.for_each(rows, cols, [&](const std::int64_t i, const std::int64_t j) {
      float sum = out_init(i, j);
      for (std::int64_t c = 0; c < inner; ++c) sum = compat::mul_add(a[i * lda + c], b[c * ldb + j], sum);
      out[i * ldo + j] = sum;
    });
  } else {
    constexpr std::int64_t R = Tiles::block_rows, C = Tiles::block_cols;
    for (std::int64_t i0 = 0; i0 < rows; i0 += R)
      for (std::int64_t j0 = 0; j0 < cols; j0 += C) {
        float sum[R][C];
        for (std::int64_t r = 0; r < R; ++r)
          for (std::int64_t j = 0; j < C; ++j) sum[r][j] = out_init(i0 + r, j0 + j);
        gemm_micro_kernel<R, C>(inner, a + i0 * lda, std::int64_t{1}, lda, b + j0, ldb, sum);
        for (std::int64_t r = 0; r < R; ++r)
          for (std::int64_t j = 0; j < C; ++j) out[(i0 + r) * ldo + j0 + j] = sum[r][j];
      }
  }
}

/// Online-softmax update of one query row with a tile's scores s[0, keys) of which the first
/// `visible` count (keys a multiple of `lanes`): m and l are updated, s is overwritten with
/// exp(s - m_new) (0 where not visible) and the accumulator's rescaling factor
/// exp(m_old - m_new) is returned. The max and the sum fold into `lanes` independent partials
/// (SIMD registers on CPUs); indices are int, so masks stay 32-bit lanes.
template <int lanes>
KOKKOS_INLINE_FUNCTION float attention_softmax_row(float* s, int keys, int visible, float& m, float& l) {
  constexpr float minus_inf = -std::numeric_limits<float>::infinity();
  for (int j = visible; j < keys; ++j) s[j] = minus_inf;  // masked: exp gives exactly 0
  float part[lanes];
  for (int k = 0; k < lanes; ++k) part[k] = minus_inf;
  for (int j = 0; j < keys; j += lanes) {
    ROOFTOP_SIMD
    for (int k = 0; k < lanes; ++k) part[k] = NanMax{}(part[k], s[j + k]);
  }
  for (int width = lanes / 2; width > 0; width /= 2)
    for (int k = 0; k < width; ++k) part[k] = NanMax{}(part[k], part[k + width]);
  const float m_new = NanMax{}(m, part[0]);
  // No visible key yet (m_new = -Inf): subtract 0 instead, so every exponent is -Inf (p = 0,
  // alpha = 0 on an accumulator of 0) rather than -Inf - -Inf = NaN.
  const float m_safe = math::select(m_new == minus_inf, 0.0f, m_new);
  const float alpha = math::exp(m - m_safe);
  for (int k = 0; k < lanes; ++k) part[k] = 0.0f;
  for (int j = 0; j < keys; j += lanes) {
    ROOFTOP_SIMD
    for (int k = 0; k < lanes; ++k) {
      const float p = math::exp(s[j + k] - m_safe);
      s[j + k] = p;
      part[k] += p;
    }
  }
  for (int width = lanes / 2; width > 0; width /= 2)
    for (int k = 0; k < width; ++k) part[k] += part[k + width];
  l = compat::mul_add(l, alpha, part[0]);
  m = m_new;
  return alpha;
}

/// Tile sizes of attention on the matrix units: `warps` warps per team, each owning 16 queries
/// (a block of 16 * warps), tiles of `keys` keys, and the teams an SM should hold at once (the
/// registers each thread may take: 128 at 4, for D = 64's 80 or so accumulator and operand
/// registers). Scratch holds two pairs of K and V tiles in the inputs' type, rows of D + 8
/// values: 36 KiB at D = 64, 34 KiB at D = 128, within Kokkos 3.4's 40 KiB of level 0.
template <int D>
struct MatrixAttentionTiles {
  static constexpr int warps = 4, keys = D <= 64 ? 64 : 32, teams_per_sm = D <= 64 ? 4 : 2;
};

/// 2^z for z <= 0: math::exp2_or_zero, except on CUDA devices, where exp2_in_range's
/// ex2.approx.ftz alone gives 0 at z = -Inf and flushes results below 2^-126 (no selects).
KOKKOS_FORCEINLINE_FUNCTION float exp2_nonpositive(float z) {
#if defined(__CUDA_ARCH__)
  return math::exp2_in_range(z);
#else
  return math::exp2_or_zero(z);
#endif
}

/// attention's matrix-unit driver for bf16 or fp16 Q, K, V and O with head_dim D (a multiple
/// of 16), as FlashAttention-2's forward pass does it on tensor cores, on WarpMma's m16n8k16
/// tiles whose lane layout is known: each warp keeps its 16 queries of Q as A tiles in
/// registers; for each tile of keys it forms the 16 x keys scores S = Q K^T in accumulator
/// registers, takes the online softmax of its rows there in base 2 (scale log2(e) applied to
/// the scores; each row's max over the four lanes that hold it, its sum kept per lane until
/// the end), turns the probabilities P into A tiles rounded to the inputs' type, rescales its
/// fp32 output accumulators (registers too) by 2^(m_old - m_new) and adds P V. The K and V
/// tiles pass through scratch in two pairs: the next pair's copies (cp.async on GPUs) are in
/// flight while the current pair is multiplied. The probabilities' rounding (at most one unit
/// in the last place of the type, relative) is the one error the fp32 path does not have. On
/// hosts, and in the tests, each warp is one thread holding whole tiles
/// (backends/cuda/warp_mma.hpp).
template <int D, class Tiles, class Exec, class Q, class K, class V, class O>
void attention_matrix_units(const Exec& exec, const Q& q, const K& k, const V& v, const O& o, float scale, bool causal) {
  using T = typename O::non_const_value_type;
  using Units = WarpMma<T>;
  constexpr int W = Tiles::warps, BK = Tiles::keys, BQ = 16 * W, slots = Units::row_slots;
  static_assert(D % 16 == 0 && BK % 16 == 0, "attention: matrix-unit tiles of 16");
  // Rows of D + 8 values: the eight 16-byte rows ldmatrix reads at once fall in distinct banks.
  constexpr int ld = D + 8, tile = BK * ld;
  static_assert(BQ <= 2 * BK, "attention: the block of Q is read through the second pair of tiles' bytes");
  constexpr std::size_t align = 128, bytes = 4 * tile * sizeof(T);
  constexpr int threads = W * matrix_tile_lanes<Exec>;
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::LaunchBounds<threads, Tiles::teams_per_sm>>;
  using Member = typename Policy::member_type;
  constexpr float minus_inf = -std::numeric_limits<float>::infinity();
  const auto heads = static_cast<std::int64_t>(q.extent(1)), seq_q = static_cast<std::int64_t>(q.extent(2)),
             seq_k = static_cast<std::int64_t>(k.extent(2));
  const std::int64_t q_blocks = (seq_q + BQ - 1) / BQ;
  const int league = detail::league_size("attention", static_cast<std::int64_t>(q.extent(0)) * heads * q_blocks);
  // On GPUs in shared memory (level 0), which the copies and ldmatrix require; the host's
  // level 0 may be smaller (32 KiB for OpenMP), and its level 1 is as good.
  constexpr bool gpu = ReductionShape<Exec, float>::gpu;
  const bool fits = bytes + align <= static_cast<std::size_t>(Policy::scratch_size_max(0));
  ROOFTOP_REQUIRE(fits || !gpu, "attention", "the matrix-unit tiles take ", bytes + align,
                  " bytes of team scratch; this backend has ", Policy::scratch_size_max(0));
  const int level = fits ? 0 : 1;
  const Strides3 q_stride(q), k_stride(k), v_stride(v), o_stride(o);
  // Rows copied 16 bytes at a time when every row of Q, K and V starts 16-byte aligned.
  auto aligned = [](const auto& x, const Strides3& s) {
    return reinterpret_cast<std::uintptr_t>(x.data()) % 16 == 0 && s[0] % 8 == 0 && s[1] % 8 == 0 && s[2] % 8 == 0;
  };
  const bool runs = aligned(q, q_stride) && aligned(k, k_stride) && aligned(v, v_stride);
  const float scale2 = scale * math::log2e;  // scores in base 2
  Kokkos::parallel_for(
      "rooftop::attention", Policy(exec, league, threads).set_scratch_size(level, Kokkos::PerTeam(bytes + align)),
      KOKKOS_LAMBDA(const Member& member) {
        T* const tiles = in_shared(static_cast<T*>(member.team_scratch(level).get_shmem_aligned(bytes, align)));
        const int rank = member.team_rank(), size = member.team_size(), warp = rank / Units::lanes;
        const std::int64_t block = member.league_rank();
        const std::int64_t b = block / (heads * q_blocks), h = block / q_blocks % heads, q0 = block % q_blocks * BQ;
        const std::int64_t nq = seq_q - q0 < BQ ? seq_q - q0 : BQ;
        const T* const q_rows = q.data() + b * q_stride[0] + h * q_stride[1] + q0 * q_stride[2];
        const T* const k_rows = k.data() + b * k_stride[0] + h * k_stride[1];
        const T* const v_rows = v.data() + b * v_stride[0] + h * v_stride[1];
        // Rows [0, count) of D values into a tile (ld apart), rows from n on 0: by 16-byte async
        // copies where the rows allow (see `runs`), else value by value.
        auto load_rows = [&](T* const dst, const T* const rows, const std::int64_t stride, const std::int64_t n, const int count) {
          if (runs) {
            for (int e = rank; e < count * (D / 8); e += size) {
              const int j = e / (D / 8), c = e % (D / 8) * 8;
              copy16_async(dst + j * ld + c, j < n ? rows + j * stride + c : rows, j < n);
            }
          } else {
            for (int e = rank; e < count * D; e += size) dst[e / D * ld + e % D] = e / D < n ? rows[e / D * stride + e % D] : T(0.0f);
          }
        };
        // Causal: the block's last query sees keys up to its own index; tiles past it are skipped.
        const std::int64_t key_end = causal && q0 + nq < seq_k ? q0 + nq : seq_k;
        const std::int64_t key_tiles = (key_end + BK - 1) / BK;
        // Tile t's pair: K at tiles + (t % 2) * 2 * tile, V after it. Q's block goes through the
        // second pair's bytes, read into registers before tile 1 is copied there.
        auto load_pair = [&](const std::int64_t t) {
          const std::int64_t k0 = t * BK, n = key_end - k0 < BK ? key_end - k0 : BK;
          T* const pair = tiles + t % 2 * 2 * tile;
          load_rows(pair, k_rows + k0 * k_stride[2], k_stride[2], n, BK);
          load_rows(pair + tile, v_rows + k0 * v_stride[2], v_stride[2], n, BK);
          async_commit();
        };
        load_rows(tiles + 2 * tile, q_rows, q_stride[2], nq, BQ);
        async_commit();
        if (key_tiles > 0) load_pair(0);
        async_wait<0>();
        member.team_barrier();
        typename Units::A qf[D / 16];
        ROOFTOP_UNROLL
        for (int c = 0; c < D / 16; ++c) Units::load_a(qf[c], tiles + 2 * tile + warp * 16 * ld + c * 16, ld);
        // This warp's queries [first, first + rows); every one of them sees keys [0, sees_all),
        // and keys from sees_any on are seen by none.
        const std::int64_t first = q0 + warp * 16;
        const std::int64_t rows = nq - warp * 16 < 16 ? nq - warp * 16 : 16;
        const std::int64_t sees_all = causal && first + 1 < seq_k ? first + 1 : seq_k;
        const std::int64_t sees_any = causal && first + rows < seq_k ? first + rows : seq_k;
        // Per row slot: the running max m (base 2) and this lane's part of the sum l.
        float m[slots], l[slots];
        for (int r = 0; r < slots; ++r) {
          m[r] = minus_inf;
          l[r] = 0.0f;
        }
        typename Units::C acc[D / 8];
        ROOFTOP_UNROLL
        for (int c = 0; c < D / 8; ++c) Units::zero(acc[c]);
        for (std::int64_t t = 0; t < key_tiles; ++t) {
          const std::int64_t k0 = t * BK;
          member.team_barrier();  // every warp is done with the other pair (Q's block or tile t - 1)
          if (t + 1 < key_tiles) {
            load_pair(t + 1);
            async_wait<1>();  // tile t's copies are done, tile t + 1's may still be in flight
          } else {
            async_wait<0>();
          }
          member.team_barrier();  // tile t is in scratch, from every thread's copies
          if (rows <= 0 || k0 >= sees_any) continue;
          const T* const kt = tiles + t % 2 * 2 * tile;
          const T* const vt = kt + tile;
          // Scores S (16 x BK) = Q K^T, K's rows read as the columns of K^T.
          typename Units::C s[BK / 8];
          ROOFTOP_UNROLL
          for (int j = 0; j < BK / 8; ++j) Units::zero(s[j]);
          ROOFTOP_UNROLL
          for (int c = 0; c < D / 16; ++c) {
            ROOFTOP_UNROLL
            for (int j = 0; j < BK / 16; ++j) {
              typename Units::B b0, b1;
              Units::load_b_columns(b0, b1, kt + j * 16 * ld + c * 16, ld);
              Units::mma(s[2 * j], qf[c], b0);
              Units::mma(s[2 * j + 1], qf[c], b1);
            }
          }
          // In base 2; keys a row does not see (past seq_k, or causal past its query) -Inf.
          const bool masks = k0 + BK > sees_all;
          float mx[slots];
          for (int r = 0; r < slots; ++r) mx[r] = m[r];
          ROOFTOP_UNROLL
          for (int j = 0; j < BK / 8; ++j) {
            ROOFTOP_UNROLL
            for (int e = 0; e < Units::c_values; ++e) {
              float z = s[j].x[e] * scale2;
              if (masks) {
                const std::int64_t query = first + Units::row(e), key = k0 + 8 * j + Units::col(e);
                if (key >= seq_k || (causal && key > query)) z = minus_inf;
              }
              s[j].x[e] = z;
              mx[Units::slot(e)] = z > mx[Units::slot(e)] ? z : mx[Units::slot(e)];
            }
          }
          // No key seen yet (max -Inf): subtract 0, so every p and alpha is 0, not NaN.
          float ms[slots], alpha[slots];
          for (int r = 0; r < slots; ++r) {
            const float m_new = Units::row_max(mx[r]);
            ms[r] = m_new == minus_inf ? 0.0f : m_new;
            alpha[r] = exp2_nonpositive(m[r] - ms[r]);
            m[r] = m_new;
            l[r] *= alpha[r];
          }
          ROOFTOP_UNROLL
          for (int j = 0; j < BK / 8; ++j) {
            ROOFTOP_UNROLL
            for (int e = 0; e < Units::c_values; ++e) {
              const float p = exp2_nonpositive(s[j].x[e] - ms[Units::slot(e)]);
              s[j].x[e] = p;
              l[Units::slot(e)] += p;
            }
          }
          ROOFTOP_UNROLL
          for (int c = 0; c < D / 8; ++c) {
            ROOFTOP_UNROLL
            for (int e = 0; e < Units::c_values; ++e) acc[c].x[e] *= alpha[Units::slot(e)];
          }
          // Accumulators (16 x D) += P (16 x BK) V (BK x D).
          ROOFTOP_UNROLL
          for (int j = 0; j < BK / 16; ++j) {
            typename Units::A p;
            Units::to_a(p, s[2 * j], s[2 * j + 1]);
            ROOFTOP_UNROLL
            for (int c = 0; c < D / 16; ++c) {
              typename Units::B b0, b1;
              Units::load_b_rows(b0, b1, vt + j * 16 * ld + c * 16, ld);
              Units::mma(acc[2 * c], p, b0);
              Units::mma(acc[2 * c + 1], p, b1);
            }
          }
        }
        // Every warp is done with the tiles before a next league rank's copies reach them (a
        // block may run several in turn: Kokkos's debug serial execution runs all in one).
        member.team_barrier();
        if (rows <= 0) return;
        // l = 0: no visible key (seq_k == 0), output 0.
        float inv[slots];
        for (int r = 0; r < slots; ++r) {
          const float sum = Units::row_sum(l[r]);
          inv[r] = sum > 0.0f ? 1.0f / sum : 0.0f;
        }
        T* const o_rows = o.data() + b * o_stride[0] + h * o_stride[1] + first * o_stride[2];
        ROOFTOP_UNROLL
        for (int c = 0; c < D / 8; ++c) {
          ROOFTOP_UNROLL
          for (int e = 0; e < Units::c_values; ++e) {
            const int i = Units::row(e);
            if (i < rows) o_rows[i * o_stride[2] + 8 * c + Units::col(e)] = T(acc[c].x[e] * inv[Units::slot(e)]);
          }
        }
      });
}

/// Whether attention of T with this head_dim runs on the matrix units (tensor cores) on Exec:
/// on GPUs, for bf16 or fp16 and head_dim 64 or 128.
template <class Exec, class T>
constexpr bool attention_uses_matrix_units(std::int64_t head_dim) {
  return gemm_uses_matrix_units<Exec, T, T> && (head_dim == 64 || head_dim == 128);
}

/// Whether attention_host_columns forms the scores of T in bf16 pairs (gemm_uses_bf16_pairs:
/// bf16 on AVX512-BF16 hosts).
template <class Exec, class T>
inline constexpr bool attention_uses_bf16_pairs = gemm_uses_bf16_pairs<Exec, T, T>;

#if defined(ROOFTOP_HAS_GEMM_BLOCK) && defined(ROOFTOP_HAS_EXP_LANES)
/// Tiles of attention_host_columns: BQ queries (a multiple of the register block's rows, 6,
/// and of its columns, two vector registers) against BK keys at a time. The first of the
/// shapes (BQ, BK) whose tiles fit 384 KiB of scratch: (192, 128), then (96, 128) (head_dim
/// 128), then (96, 64) (head_dim up to 256, attention_max_head_dim). On the portable driver
/// head_dim 256 ran at 91-97 GFLOP/s (1x8x4096x256, 2 threads, Zen 5 VM) against 380-400 for
/// head_dim 128 here.
struct HostAttentionTiles {
  static constexpr std::int64_t block_rows = 6, block_cols = cpu::gemm_block_columns<float>;
  /// Partials of each query's max and sum over a tile's keys (keys j, j + P, ... in partial j
  /// % P), so that the softmax's column pass keeps 2P chains of operations going (one: 38 ms
  /// of 1x8x4096x64's 116, 2 threads; two: 85-88 ms in all; four: 84-89).
  static constexpr int softmax_partials = 2;
  static constexpr std::int64_t shapes[3][2] = {{192, 128}, {96, 128}, {96, 64}};  // (BQ, BK)
  static constexpr std::int64_t scratch_budget = 384 * 1024;
  static constexpr std::int64_t round_up(std::int64_t n, std::int64_t m) { return (n + m - 1) / m * m; }
  /// In floats, for BQ queries, BK keys and head_dim d: Q^T (d, BQ), K (BKr, d), V (BK, dp),
  /// the scores and then probabilities transposed (BKr, BQ), the accumulator (BQ, dp; with
  /// bf16 pairs transposed, (dr, BQ)), and m, l, alpha (BQ) each; BKr is BK rounded up to the
  /// block's rows, dp head_dim to its columns, dr head_dim to its rows.
  struct Layout {
    std::int64_t block_q, keys, dp, dr, bkr, qt, k, v, st, acc, m, l, alpha, floats;
  };
  static constexpr Layout layout(std::int64_t block_q, std::int64_t keys, std::int64_t d) {
    Layout t{};
    t.block_q = block_q;
    t.keys = keys;
    t.dp = round_up(d, block_cols);
    t.dr = round_up(d, block_rows);
    t.bkr = round_up(keys, block_rows);
    t.qt = 0;
    t.k = t.qt + d * block_q;
    t.v = t.k + t.bkr * d;
    t.st = t.v + keys * t.dp;
    t.acc = t.st + t.bkr * block_q;
    t.m = t.acc + block_q * (t.dp > t.dr ? t.dp : t.dr);
    t.l = t.m + block_q;
    t.alpha = t.l + block_q;
    t.floats = t.alpha + block_q;
    return t;
  }
  /// The layout of the first shape that fits the budget; block_q 0 if none does.
  static constexpr Layout layout_for(std::int64_t d) {
    for (const auto& shape : shapes)
      if (layout(shape[0], shape[1], d).floats * static_cast<std::int64_t>(sizeof(float)) <= scratch_budget)
        return layout(shape[0], shape[1], d);
    return Layout{};
  }
};
static_assert([] {
  for (const auto& shape : HostAttentionTiles::shapes)
    if (shape[0] % HostAttentionTiles::block_rows != 0 || shape[0] % HostAttentionTiles::block_cols != 0) return false;
  return HostAttentionTiles::layout_for(attention_max_head_dim).block_q > 0;
}(), "attention: BQ a multiple of the register block's rows and columns, and tiles for every head_dim");

/// attention on an AVX-512 or AVX2 host, a block of BQ queries per work item, the scores held
/// transposed (keys x queries: S^T = K Q^T), so that the online softmax runs down the columns
/// with a vector register of queries at a time: each query's max, sum, m, l and rescaling
/// factor are lanes, with no fold across lanes and no per-row chain of scalar work. Both
/// products through gemm's register block (cpu::gemm_block): S^T from K's rows as they are
/// (no transposed copy of the K tile) and Q^T, made once per block; P V from S^T read
/// transposed. Exponentials as 2^((s - m) log2 e) (cpu::exp2_or_zero). Against the row-wise
/// form (the portable driver below, with each row's softmax in vector registers and
/// exponentials in base 2), the harness's 1x8x4096x64, 2 threads, Zen 5 VM, two alternations:
/// 97-99 -> 84-86 ms, 0.73-0.75 of the FP32 peak (the products and tile copies alone take
/// 77-80).
template <class Exec, class Q, class K, class V, class O>
void attention_host_columns(const Exec& exec, const Q& q, const K& k, const V& v, const O& o, float scale, bool causal,
                            const HostAttentionTiles::Layout& tile) {
  using T = typename O::value_type;
  using Tiles = HostAttentionTiles;
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Member = typename Policy::member_type;
  using cpu::Floats;
  constexpr std::int64_t R = Tiles::block_rows, C = Tiles::block_cols, W = cpu::float_lanes;
  constexpr float minus_inf = -std::numeric_limits<float>::infinity();
  const auto heads = static_cast<std::int64_t>(q.extent(1)), seq_q = static_cast<std::int64_t>(q.extent(2)),
             seq_k = static_cast<std::int64_t>(k.extent(2)), d = static_cast<std::int64_t>(q.extent(3));
  const std::int64_t BQ = tile.block_q, BK = tile.keys, dp = tile.dp;
  const std::int64_t q_blocks = (seq_q + BQ - 1) / BQ;
  const int league = league_size("attention", static_cast<std::int64_t>(q.extent(0)) * heads * q_blocks);
  const auto scratch_bytes = scratch_lines_bytes<Exec, float>(tile.floats);
  // bf16 on AVX512-BF16 hosts: S^T from Q and K in pairs along head_dim as stored (dw words a
  // row, an odd head_dim's last pair padded with 0), two products per instruction
  // (cpu::gemm_block_bf16_pairs), and the scale applied to the scores; P V likewise, from the
  // probabilities rounded to bf16 (as on GPUs' matrix units), into a transposed accumulator.
  constexpr bool pairs = attention_uses_bf16_pairs<Exec, T>;
  const std::int64_t dw = (d + 1) / 2;
  const int level = scratch_bytes <= static_cast<std::size_t>(Policy::scratch_size_max(0)) ? 0 : 1;
  const Strides3 q_stride(q), k_stride(k), v_stride(v), o_stride(o);
  Kokkos::parallel_for(
      "rooftop::attention", Policy(exec, league, 1).set_scratch_size(level, Kokkos::PerTeam(scratch_bytes)),
      [=](const Member& member) {
        float* const scratch = scratch_lines<float>(member.team_scratch(level), tile.floats);
        float *const qt = scratch + tile.qt, *const ks = scratch + tile.k, *const vs = scratch + tile.v;
        float *const st = scratch + tile.st, *const acc = scratch + tile.acc;
        float *const m = scratch + tile.m, *const l = scratch + tile.l, *const alpha = scratch + tile.alpha;
        std::uint32_t *const qtw = reinterpret_cast<std::uint32_t*>(qt), *const ksw = reinterpret_cast<std::uint32_t*>(ks);
        const std::int64_t block = member.league_rank();
        const std::int64_t b = block / (heads * q_blocks), h = block / q_blocks % heads, q0 = block % q_blocks * BQ;
        const std::int64_t nq = seq_q - q0 < BQ ? seq_q - q0 : BQ;
        // Queries padded to the register block's rows (rows), those to its columns (cols, the
        // columns of S^T computed, a whole number of registers).
        const std::int64_t rows = Tiles::round_up(nq, R), cols = Tiles::round_up(rows, C), regs = cols / W;
        const T* const q_rows = q.data() + b * q_stride[0] + h * q_stride[1] + q0 * q_stride[2];
        const T* const k_rows = k.data() + b * k_stride[0] + h * k_stride[1];
        const T* const v_rows = v.data() + b * v_stride[0] + h * v_stride[1];
        const std::int64_t q_ld = q_stride[2], k_ld = k_stride[2], v_ld = v_stride[2];
        // Q^T (d, BQ) scaled, queries past nq 0 (bf16 pairs: Q^T in pairs along head_dim, as
        // stored, the scale applied to the scores); the accumulator, m and l as for no key yet.
        if constexpr (pairs) {
          for (std::int64_t i = 0; i < BQ; ++i) {
            if (i < nq) {
              cpu::bf16_row_pairs(q_rows + i * q_ld, d, qtw + i, BQ);
            } else {
              for (std::int64_t w = 0; w < dw; ++w) qtw[w * BQ + i] = 0u;
            }
          }
        } else {
          for (std::int64_t c = 0; c < d; ++c)
            for (std::int64_t i = 0; i < BQ; ++i) qt[c * BQ + i] = i < nq ? scale * float(q_rows[i * q_ld + c]) : 0.0f;
        }
        for (std::int64_t t = 0; t < tile.m - tile.acc; ++t) acc[t] = 0.0f;
        for (std::int64_t i = 0; i < BQ; ++i) {
          m[i] = minus_inf;
          l[i] = 0.0f;
        }
        for (std::int64_t t = 0; t < BK * dp; ++t) vs[t] = 0.0f;  // head_dim's padding stays 0 (pairs: V^T's rows past d)
        const Floats log2e = cpu::splat(math::log2e), scale_lanes = cpu::splat(scale);
        const std::int64_t key_end = causal && q0 + nq < seq_k ? q0 + nq : seq_k;
        for (std::int64_t k0 = 0; k0 < key_end; k0 += BK) {
          const std::int64_t nk = key_end - k0 < BK ? key_end - k0 : BK;
          const std::int64_t key_rows = Tiles::round_up(nk, R);
          for (std::int64_t j = 0; j < nk; ++j) {
            if constexpr (pairs) {
              cpu::bf16_row_pairs(k_rows + (k0 + j) * k_ld, d, ksw + j * dw);
            } else {
              ROOFTOP_SIMD
              for (std::int64_t c = 0; c < d; ++c) ks[j * d + c] = float(k_rows[(k0 + j) * k_ld + c]);
              ROOFTOP_SIMD
              for (std::int64_t c = 0; c < d; ++c) vs[j * dp + c] = float(v_rows[(k0 + j) * v_ld + c]);
            }
          }
          if constexpr (pairs) {
            for (std::int64_t t = nk * dw; t < key_rows * dw; ++t) ksw[t] = 0u;
          } else {
            for (std::int64_t t = nk * d; t < key_rows * d; ++t) ks[t] = 0.0f;
          }
          // S^T (key_rows, cols) = K tile x Q^T. Causal, a block whose keys all come after its
          // queries is left unformed: the softmax masks every score of it to -inf (below).
          // (That and the shorter P V below: 1x8x4096x64 causal, 2 threads, scratch program,
          // three alternations: 47.2-49.2 -> 46.3-47.7 ms, the same outputs.)
          for (std::int64_t j0 = 0; j0 < key_rows; j0 += R)
            for (std::int64_t i0 = 0; i0 < cols; i0 += C)
              if (!causal || k0 + j0 <= q0 + i0 + C - 1) {
#if defined(ROOFTOP_HAS_BF16_PAIRS)
                if constexpr (pairs) {
                  cpu::gemm_block_bf16_pairs<R, C, false>(dw, ksw + j0 * dw, dw, qtw + i0, BQ, st + j0 * BQ + i0, BQ);
                  continue;
                }
#endif
                cpu::gemm_block<R, C, false>(d, ks + j0 * d, 1, d, qt + i0, BQ, st + j0 * BQ + i0, BQ);
              }
          // The online softmax down each column (query), a register block's two registers of
          // queries at a time, each with P partials (keys j, j + P, ... in partial j % P): 2P
          // chains of operations. Key k0 + j is visible to query q0 + i if j < nk and, causal,
          // k0 + j <= q0 + i.
          constexpr int P = Tiles::softmax_partials;
          const auto nan_max = [](const Floats x, const Floats y) { return ((x != x) | (x > y)) ? x : y; };
          for (std::int64_t g = 0; g < regs; g += 2) {
            Floats lane[2];
            for (int u = 0; u < 2; ++u)
              for (std::int64_t e = 0; e < W; ++e) lane[u][e] = static_cast<float>(q0 + (g + u) * W + e - k0);
            auto score = [&](const std::int64_t j, const int u) {
              Floats x = cpu::load_floats(st + j * BQ + (g + u) * W);
              if constexpr (pairs) x = x * scale_lanes;
              return causal ? (lane[u] >= cpu::splat(static_cast<float>(j)) ? x : cpu::splat(minus_inf)) : x;
            };
            Floats m_old[2], m_new[2], m_safe[2], part[2][P];
            for (int u = 0; u < 2; ++u) {
              m_old[u] = cpu::load_floats(m + (g + u) * W);
              part[u][0] = m_old[u];
              for (int t = 1; t < P; ++t) part[u][t] = cpu::splat(minus_inf);
            }
            std::int64_t j = 0;
            for (; j + P <= nk; j += P)
              for (int t = 0; t < P; ++t)
                for (int u = 0; u < 2; ++u) part[u][t] = nan_max(part[u][t], score(j + t, u));
            for (int t = 0; j + t < nk; ++t)
              for (int u = 0; u < 2; ++u) part[u][t] = nan_max(part[u][t], score(j + t, u));
            for (int u = 0; u < 2; ++u) {
              m_new[u] = part[u][0];
              for (int t = 1; t < P; ++t) m_new[u] = nan_max(m_new[u], part[u][t]);
              m_safe[u] = m_new[u] == cpu::splat(minus_inf) ? cpu::splat(0.0f) : m_new[u];
              for (int t = 0; t < P; ++t) part[u][t] = cpu::splat(0.0f);
            }
            auto exp_of = [&](const std::int64_t jj, const int u) {
              const Floats e = cpu::exp2_or_zero((score(jj, u) - m_safe[u]) * log2e);
              __builtin_memcpy(st + jj * BQ + (g + u) * W, &e, sizeof e);
              return e;
            };
            for (j = 0; j + P <= nk; j += P)
              for (int t = 0; t < P; ++t)
                for (int u = 0; u < 2; ++u) part[u][t] += exp_of(j + t, u);
            for (int t = 0; j + t < nk; ++t)
              for (int u = 0; u < 2; ++u) part[u][t] += exp_of(j + t, u);
            for (int u = 0; u < 2; ++u) {
              Floats sum = part[u][0];
              for (int t = 1; t < P; ++t) sum += part[u][t];
              const Floats a = cpu::exp2_or_zero((m_old[u] - m_safe[u]) * log2e);
              const Floats l_new = cpu::fmadd(cpu::load_floats(l + (g + u) * W), a, sum);
              __builtin_memcpy(m + (g + u) * W, &m_new[u], sizeof(Floats));
              __builtin_memcpy(l + (g + u) * W, &l_new, sizeof(Floats));
              __builtin_memcpy(alpha + (g + u) * W, &a, sizeof(Floats));
            }
          }
#if defined(ROOFTOP_HAS_BF16_PAIRS)
          if constexpr (pairs) {
            // The accumulator transposed, (dr, BQ) = alpha * it + V^T x P^T, both in bf16 pairs
            // along the keys: P^T's from S^T's rows two at a time, rounded to bf16 and written
            // over them in place (row p of words from rows 2p and 2p + 1 of floats, already
            // read); V^T's from V's rows two at a time, written down the columns of the V
            // tile's room (d, BK / 2).
            const std::int64_t nkp = (nk + 1) / 2, kpt = BK / 2;
            auto* const pw = reinterpret_cast<std::uint32_t*>(st);
            auto* const vtw = reinterpret_cast<std::uint32_t*>(vs);
            const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                                        6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
            for (std::int64_t p = 0; p < nkp; ++p)
              for (std::int64_t i = 0; i < cols; i += W) {
                const __m512 even = _mm512_loadu_ps(st + 2 * p * BQ + i);
                const __m512 odd = 2 * p + 1 < nk ? _mm512_loadu_ps(st + (2 * p + 1) * BQ + i) : _mm512_setzero_ps();
                const __m512i halves = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(odd, even));
                _mm512_storeu_si512(pw + p * BQ + i, _mm512_permutexvar_epi16(interleave, halves));
              }
            for (std::int64_t p = 0; p < nkp; ++p) {
              const T* const even = v_rows + (k0 + 2 * p) * v_ld;
              cpu::bf16_interleave_rows(even, 2 * p + 1 < nk ? even + v_ld : nullptr, d, vtw + p, kpt);
            }
            for (std::int64_t c = 0; c < tile.dr; ++c)
              for (std::int64_t i = 0; i < cols; ++i) acc[c * BQ + i] *= alpha[i];
            for (std::int64_t i0 = 0; i0 < cols; i0 += C) {
              // Causal: the keys past the block's last query have probability 0 in all its columns.
              const std::int64_t visible = causal && q0 + i0 + C - k0 < nk ? q0 + i0 + C - k0 : nk;
              for (std::int64_t c0 = 0; c0 < tile.dr && visible > 0; c0 += R)
                cpu::gemm_block_bf16_pairs<R, C>((visible + 1) / 2, vtw + c0 * kpt, kpt, pw + i0, BQ, acc + c0 * BQ + i0, BQ);
            }
            continue;
          }
#endif
          // Accumulator (rows, dp) = alpha * accumulator + P (read from S^T) x V tile.
          for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t c = 0; c < dp; ++c) acc[i * dp + c] *= alpha[i];
          for (std::int64_t i0 = 0; i0 < rows; i0 += R) {
            // Causal: the keys past the block's last query have probability 0 in all its rows.
            const std::int64_t visible = causal && q0 + i0 + R - k0 < nk ? q0 + i0 + R - k0 : nk;
            for (std::int64_t c0 = 0; c0 < dp && visible > 0; c0 += C)
              cpu::gemm_block<R, C>(visible, st + i0, BQ, 1, vs + c0, dp, acc + i0 * dp + c0, dp);
          }
        }
        T* const o_rows = o.data() + b * o_stride[0] + h * o_stride[1] + q0 * o_stride[2];
        for (std::int64_t i = 0; i < nq; ++i) {
          const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;  // l = 0: no visible key, output 0
          for (std::int64_t c = 0; c < d; ++c)
            o_rows[i * o_stride[2] + c] = T((pairs ? acc[c * BQ + i] : acc[i * dp + c]) * inv);
        }
      });
}
#endif

/// attention's portable driver (GPUs without matrix units for T, and hosts without the AVX2 and
/// AVX-512 code of attention_host_columns): a team per block of Tiles::layout_for's BQ queries
/// with its Q, K^T, V, score and accumulator tiles in team scratch. Its own entry point so that
/// tests run it on every host (rooftop::attention takes the vector code where there is one).
template <class Tiles, class Exec, class Q, class K, class V, class O>
void attention_portable(const Exec& exec, const Q& q, const K& k, const V& v, const O& o, float scale, bool causal) {
  using T = typename O::value_type;
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Member = typename Policy::member_type;
  using Team = AttentionTeam<Member, Tiles::gpu>;
  constexpr int lanes = Tiles::softmax_lanes;
  constexpr std::int64_t BK = Tiles::keys, R = Tiles::block_rows, C = Tiles::block_cols;
  constexpr float minus_inf = -std::numeric_limits<float>::infinity();

  const auto heads = static_cast<std::int64_t>(q.extent(1)), seq_q = static_cast<std::int64_t>(q.extent(2)),
             seq_k = static_cast<std::int64_t>(k.extent(2)), d = static_cast<std::int64_t>(q.extent(3));
  const typename Tiles::Layout tile = Tiles::layout_for(d);
  const std::int64_t BQ = tile.block_q, dp = tile.dp;
  const std::int64_t q_blocks = (seq_q + BQ - 1) / BQ;
  const int league = league_size("attention", static_cast<std::int64_t>(q.extent(0)) * heads * q_blocks);
  const auto scratch_bytes = scratch_lines_bytes<Exec, float>(tile.floats);
  const int level = scratch_bytes <= static_cast<std::size_t>(Policy::scratch_size_max(0)) ? 0 : 1;

  // Strides of (batch, heads, seq) in elements (LayoutRight: head_dim has stride 1; the
  // others may be padded).
  const Strides3 q_stride(q), k_stride(k), v_stride(v), o_stride(o);

  Kokkos::parallel_for(
      "rooftop::attention",
      Policy(exec, league, Tiles::threads).set_scratch_size(level, Kokkos::PerTeam(scratch_bytes)),
      KOKKOS_LAMBDA(const Member& member) {
        const Team team{member};
        float* const scratch = scratch_lines<float>(member.team_scratch(level), tile.floats);
        float *const qs = scratch + tile.q, *const kt = scratch + tile.kt, *const vs = scratch + tile.v;
        float *const s = scratch + tile.s, *const acc = scratch + tile.acc;
        float *const m = scratch + tile.m, *const l = scratch + tile.l, *const alpha = scratch + tile.alpha;
        const std::int64_t block = member.league_rank();
        const std::int64_t b = block / (heads * q_blocks), h = block / q_blocks % heads, q0 = block % q_blocks * BQ;
        const std::int64_t nq = seq_q - q0 < BQ ? seq_q - q0 : BQ;
        // Rows past nq up to the register block and head_dim columns past d are zero-filled,
        // so every product runs on whole register blocks; they are never written out.
        const std::int64_t rows = Tiles::round_up(nq, R);

        // LayoutRight: rows of head_dim are contiguous, (b, h) holds seq consecutive rows. Raw
        // pointers, so the loops below index plain arrays (View indexing through the captured
        // Views is reloaded per element on CPUs: the float stores may alias them).
        const T* const q_rows = q.data() + b * q_stride[0] + h * q_stride[1] + q0 * q_stride[2];
        const T* const k_rows = k.data() + b * k_stride[0] + h * k_stride[1];
        const T* const v_rows = v.data() + b * v_stride[0] + h * v_stride[1];
        const std::int64_t q_ld = q_stride[2], k_ld = k_stride[2], v_ld = v_stride[2];
        // Padding (query rows past nq up to the register block, head_dim columns past d) is 0,
        // so every product runs on whole register blocks and never meets stale scratch.
        team.for_each(1, rows * dp, [&](std::int64_t, const std::int64_t t) {
          qs[t] = 0.0f;
          acc[t] = 0.0f;
        });
        team.for_each(1, dp * Tiles::kt_stride, [&](std::int64_t, const std::int64_t t) { kt[t] = 0.0f; });
        team.for_each(1, BK * dp, [&](std::int64_t, const std::int64_t t) { vs[t] = 0.0f; });
        team.for_each(rows, 1, [&](const std::int64_t i, std::int64_t) {
          m[i] = minus_inf;
          l[i] = 0.0f;
        });
        team.barrier();
        // Q tile (BQ, dp), pre-multiplied by scale: the scores come out scaled.
        team.for_each(nq, d, [&](const std::int64_t i, const std::int64_t c) { qs[i * dp + c] = scale * float(q_rows[i * q_ld + c]); });
        // Causal: the block's last query sees keys up to its own index; tiles past it are skipped.
        const std::int64_t key_end = causal && q0 + nq < seq_k ? q0 + nq : seq_k;
        for (std::int64_t k0 = 0; k0 < key_end; k0 += BK) {
          const std::int64_t nk = key_end - k0 < BK ? key_end - k0 : BK;
          const std::int64_t cols = Tiles::round_up(nk, C);
          team.barrier();  // the previous tile's V and probabilities are no longer read
          // K^T tile (dp, kt_stride) and V tile (BK, dp), both read along head_dim (contiguous).
          team.for_each(nk, d, [&](const std::int64_t j, const std::int64_t c) { vs[j * dp + c] = float(v_rows[(k0 + j) * v_ld + c]); });
          team.for_each(nk, d, [&](const std::int64_t j, const std::int64_t c) {
            kt[c * Tiles::kt_stride + j] = float(k_rows[(k0 + j) * k_ld + c]);
          });
          // A last, partial tile: keys past nk up to the register block are 0 (not the previous
          // tile's, whose Inf or NaN would reach the sums through p = 0).
          team.for_each(cols - nk, dp, [&](const std::int64_t j, const std::int64_t c) {
            vs[(nk + j) * dp + c] = 0.0f;
            kt[c * Tiles::kt_stride + nk + j] = 0.0f;
          });
          team.barrier();
          // Scores (rows, cols) = Q tile x K^T tile.
          attention_product<Tiles>(team, rows, cols, dp, qs, dp, kt, Tiles::kt_stride, s, BK,
                                   [](std::int64_t, std::int64_t) { return 0.0f; });
          team.barrier();
          team.for_each(rows, 1, [&](const std::int64_t i, std::int64_t) {
            // Keys k0 + j visible to query q0 + i: j < nk, and j <= q0 + i - k0 if causal.
            const std::int64_t last = q0 + i - k0 + 1;
            const std::int64_t visible = causal && last < nk ? (last > 0 ? last : 0) : nk;
            alpha[i] = attention_softmax_row<lanes>(s + i * BK, static_cast<int>(cols), static_cast<int>(visible), m[i], l[i]);
          });
          team.barrier();
          // Accumulator (rows, dp) = alpha * accumulator + probabilities (rows, cols) x V tile.
          attention_product<Tiles>(team, rows, dp, cols, s, BK, vs, dp, acc, dp,
                                   [&](const std::int64_t i, const std::int64_t c) { return acc[i * dp + c] * alpha[i]; });
        }
        team.barrier();
        T* const o_rows = o.data() + b * o_stride[0] + h * o_stride[1] + q0 * o_stride[2];
        team.for_each(nq, d, [&](const std::int64_t i, const std::int64_t c) {
          // l = 0: no visible key (seq_k == 0), output 0.
          const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
          o_rows[i * o_stride[2] + c] = T(acc[i * dp + c] * inv);
        });
        team.barrier();  // scratch free before a next league rank run by this team (Kokkos's debug serial execution runs all in one)
      });
}

}  // namespace detail

/// O = softmax(scale * Q K^T, causal mask if `causal`) V for (batch, heads, seq_q, head_dim) Q
/// and O and (batch, heads, seq_k, head_dim) K and V. Causal masks are top-left aligned (key
/// j visible to query i iff j <= i, as PyTorch's is_causal). O may be Q (each query block reads
/// its own rows of Q before writing them) but not overlap K or V. Throws rooftop::Error if the
/// extents do not match, O overlaps K or V, or head_dim exceeds attention_max_head_dim.
template <class Exec, class Q, class K, class V, class O>
on_exec_space_t<Exec> attention(const Exec& exec, const Q& q, const K& k, const V& v, const O& o, float scale,
                                bool causal) {
  mandate_input<Exec, Q, 4>();
  mandate_input<Exec, K, 4>();
  mandate_input<Exec, V, 4>();
  mandate_output<Exec, O, 4>();
  using T = typename O::value_type;
  mandate_fp32_math<Q, K, V, O>();
  static_assert(std::is_same_v<typename Q::array_layout, Kokkos::LayoutRight> &&
                    std::is_same_v<typename K::array_layout, Kokkos::LayoutRight> &&
                    std::is_same_v<typename V::array_layout, Kokkos::LayoutRight> &&
                    std::is_same_v<typename O::array_layout, Kokkos::LayoutRight>,
                "attention: Q, K, V and O must be LayoutRight (head_dim contiguous)");
  static_assert(std::is_same_v<typename Q::non_const_value_type, T> && std::is_same_v<typename K::non_const_value_type, T> &&
                    std::is_same_v<typename V::non_const_value_type, T>,
                "attention: Q, K, V and O differ in value type");
  detail::require_same_shape("attention", "Q", q, "O", o);
  detail::require_same_shape("attention", "K", k, "V", v);
  detail::require_allocated("attention", "Q", q);
  detail::require_allocated("attention", "K", k);
  detail::require_allocated("attention", "V", v);
  detail::require_distinct_elements("attention", "O", o);
  detail::require_in_place_or_apart("attention", "Q", q, "O", o);
  ROOFTOP_REQUIRE(!detail::overlap(o, k) && !detail::overlap(o, v), "attention", "O overlaps K or V (O is ", shape_of(o),
                  "): other query blocks read K and V while O is written (O may be Q)");
  ROOFTOP_REQUIRE(q.extent(0) == k.extent(0) && q.extent(1) == k.extent(1) && q.extent(3) == k.extent(3), "attention",
                  "Q is ", shape_of(q), " but K is ", shape_of(k), " (batch, heads and head_dim must match)");
  ROOFTOP_REQUIRE(static_cast<std::int64_t>(q.extent(3)) <= attention_max_head_dim, "attention", "head_dim is ",
                  q.extent(3), ", more than the ", attention_max_head_dim, " supported");
  if (o.size() == 0) return;
  if constexpr (gemm_uses_matrix_units<Exec, T, T>) {
    if (detail::attention_uses_matrix_units<Exec, T>(q.extent(3))) {
      if (q.extent(3) == 64) return detail::attention_matrix_units<64, detail::MatrixAttentionTiles<64>>(exec, q, k, v, o, scale, causal);
      return detail::attention_matrix_units<128, detail::MatrixAttentionTiles<128>>(exec, q, k, v, o, scale, causal);
    }
  }

#if defined(ROOFTOP_HAS_GEMM_BLOCK) && defined(ROOFTOP_HAS_EXP_LANES)
  if constexpr (detail::on_host<Exec>) {
    // (Every head_dim up to attention_max_head_dim has tiles: HostAttentionTiles' static_assert.)
    return detail::attention_host_columns(exec, q, k, v, o, scale, causal,
                                          detail::HostAttentionTiles::layout_for(static_cast<std::int64_t>(q.extent(3))));
  }
#endif
  detail::attention_portable<detail::AttentionTiles<Exec>>(exec, q, k, v, o, scale, causal);
}

/// attention with the usual scale 1 / sqrt(head_dim).
template <class Exec, class Q, class K, class V, class O, class Causal>
std::enable_if_t<Kokkos::is_execution_space<Exec>::value && std::is_same_v<Causal, bool>> attention(
    const Exec& exec, const Q& q, const K& k, const V& v, const O& o, Causal causal) {
  const float scale = q.extent(3) ? 1.0f / compat::sqrt(static_cast<float>(q.extent(3))) : 1.0f;
  attention(exec, q, k, v, o, scale, causal);
}

/// attention on O's execution space.
template <class Q, class K, class V, class O>
std::enable_if_t<Kokkos::is_view<Q>::value> attention(const Q& q, const K& k, const V& v, const O& o, float scale,
                                                       bool causal) {
  attention(typename O::execution_space{}, q, k, v, o, scale, causal);
}
template <class Q, class K, class V, class O, class Causal>
std::enable_if_t<Kokkos::is_view<Q>::value && std::is_same_v<Causal, bool>> attention(const Q& q, const K& k, const V& v,
                                                                                      const O& o, Causal causal) {
  attention(typename O::execution_space{}, q, k, v, o, causal);
}

/// Key-query pairs attention scores: seq_q * seq_k, or with the top-left causal mask
/// sum_i min(i + 1, seq_k).
constexpr double attention_pairs(std::int64_t seq_q, std::int64_t seq_k, bool causal) {
  if (!causal) return static_cast<double>(seq_q) * seq_k;
  const double full = static_cast<double>(seq_q < seq_k ? seq_q : seq_k);  // rows before the mask saturates
  return full * (full + 1) / 2 + static_cast<double>(seq_q - full) * seq_k;
}

/// Cost of attention of T: 4 * head_dim FLOPs per visible (query, key) pair (a multiply-add
/// per head_dim entry in Q K^T and in P V; the softmax's exp, max and sums, about 5 per pair,
/// are not counted, as in the FlashAttention papers), over batch * heads * attention_pairs:
/// 4 b h seq_q seq_k d, about half of it causal (exactly b h (seq_q (seq_q + 1) / 2) 4 d
/// when seq_q == seq_k). Read Q and the keys and values some query sees once (causal with
/// seq_q < seq_k: the first seq_q, which is all the kernel loads), write O once.
template <class T>
constexpr Cost attention_cost(std::int64_t batch, std::int64_t heads, std::int64_t seq_q, std::int64_t seq_k,
                              std::int64_t head_dim, bool causal) {
  const double bh = static_cast<double>(batch) * heads;
  const double keys_seen = static_cast<double>(causal && seq_q < seq_k ? seq_q : seq_k);
  return {4.0 * bh * attention_pairs(seq_q, seq_k, causal) * head_dim, bytes_of<T>(bh * head_dim * (2.0 * seq_q + 2.0 * keys_seen))};
}

}  // namespace rooftop
