// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// spmv: y = alpha * A x + beta * y for a sparse matrix A in CSR form (rows, cols), (cols) x and
/// (rows) y; plus the CSR type and generators that build test and benchmark matrices on the
/// device: the 2D 5-point and 3D 7-point Laplacians (Dirichlet boundary) and a random sparsity
/// pattern.
///
/// Values, x and y are double, float, bf16 or fp16 (all the same type T); each row's dot
/// product accumulates in compute_t<T> and is rounded once to T. Indices are int32 or int64.
/// beta == 0 never reads y (y may hold NaN or garbage); an empty row gives beta * y, so 0 for
/// the plain y = A x (with a finite alpha: its empty sum is scaled by alpha too, so an Inf or
/// NaN alpha gives NaN there, as alpha * A x computed in full would). alpha == 0 gives
/// y = beta * y as in BLAS (and gemm): A and x are not read, so an Inf or NaN there does not
/// turn y into NaN. Columns need not be sorted within a
/// row for spmv (the generators sort them). x and y must not alias. spmv trusts A's contents:
/// check_csr checks a matrix whose arrays the caller filled.
///
/// Parallelization: on CPUs a thread takes contiguous blocks of rows. On AVX-512 hosts, with
/// x and y of stride 1, runs of 16 rows (8 for fp64) of one structure (each
/// L <= 8 entries long at the same column offsets from its row: a stencil's or banded
/// matrix's interior rows) go a vector of rows at a time (cpu::spmv_block), the structure
/// checked from row_ptr and col_idx on every run. Other rows go one at a time: rows of up to 8
/// entries summed as a balanced tree of their products, longer ones by a loop over their
/// entries. On GPUs every row gets `vector_length` lanes of one thread's
/// vector (a group of consecutive lanes of a warp): the lanes read consecutive entries of the
/// row's col_idx and values (coalesced; consecutive rows are consecutive in memory too), and
/// reduce their partial sums; a team is a block of such rows.
#pragma once

#include "../backends/cpu/spmv_block.hpp"
#include "../backends/cpu/streaming_store.hpp"
#include "../core/cost.hpp"
#include "../core/error.hpp"
#include "../core/random.hpp"
#include "../core/reduction.hpp"
#include "../core/types.hpp"
#include "stream.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace rooftop {

/// A (rows, cols) sparse matrix in compressed sparse row form: row r's entries are
/// col_idx(k), values(k) for k in [row_ptr(r), row_ptr(r + 1)). row_ptr has rows + 1 entries
/// (row_ptr(0) == 0, non-decreasing, row_ptr(rows) == nnz); col_idx and values have nnz.
template <class T, class Index = std::int32_t, class Memory = Kokkos::DefaultExecutionSpace::memory_space>
struct Csr {
  static_assert(is_supported_dtype_v<T>, "Csr: values are double, float, bf16 or fp16");
  static_assert(std::is_same_v<Index, std::int32_t> || std::is_same_v<Index, std::int64_t>, "Csr: indices are int32 or int64");
  using value_type = T;
  using index_type = Index;
  using memory_space = Memory;

  std::int64_t rows = 0, cols = 0;
  Kokkos::View<Index*, Memory> row_ptr;  // (rows + 1)
  Kokkos::View<Index*, Memory> col_idx;  // (nnz)
  Kokkos::View<T*, Memory> values;       // (nnz)

  Csr() = default;
  /// Allocates a (rows, cols) matrix with room for nnz entries, all zero (row_ptr too: every
  /// row empty until the caller fills it).
  Csr(std::int64_t rows_, std::int64_t cols_, std::int64_t nnz)
      : rows(rows_), cols(cols_), row_ptr("rooftop::Csr::row_ptr", rows_ + 1), col_idx("rooftop::Csr::col_idx", nnz),
        values("rooftop::Csr::values", nnz) {}

  /// Number of stored entries.
  std::int64_t nnz() const { return static_cast<std::int64_t>(values.extent(0)); }
};

namespace detail {
/// Precondition of `op`: a matrix of (rows, cols) with nnz entries is indexable with Index.
template <class Index>
void require_indexable(const char* op, std::int64_t rows, std::int64_t cols, std::int64_t nnz) {
  ROOFTOP_REQUIRE(rows >= 0 && cols >= 0, op, "rows and cols must not be negative (rows is ", rows, ", cols is ", cols, ")");
  constexpr std::int64_t most = std::numeric_limits<Index>::max();
  ROOFTOP_REQUIRE(nnz <= most && cols <= most, op, rows, "x", cols, " with ", nnz, " entries exceeds the range of ",
                  sizeof(Index) == 4 ? "int32" : "int64", " indices");
}

/// Structural preconditions spmv can check without reading device memory.
template <class Matrix>
void require_csr_extents(const char* op, const Matrix& A) {
  ROOFTOP_REQUIRE(A.row_ptr.extent(0) != 0, op, "A has no row_ptr (a default-constructed Csr?): make it with Csr(rows, cols, nnz), "
                  "csr_from_host, random_csr, laplacian_2d or laplacian_3d; a matrix of 0 rows has a row_ptr of 1");
  ROOFTOP_REQUIRE(A.rows >= 0 && A.cols >= 0 && static_cast<std::int64_t>(A.row_ptr.extent(0)) == A.rows + 1, op, "A has ",
                  A.rows, " rows but row_ptr is ", A.row_ptr.extent(0), " (expected ", A.rows + 1, ")");
  ROOFTOP_REQUIRE(A.col_idx.extent(0) == A.values.extent(0), op, "A's col_idx is ", A.col_idx.extent(0), " but values is ",
                  A.values.extent(0));
  // Row offsets and column indices past Index's range cannot be stored: filled by a caller,
  // they would have wrapped to negative offsets.
  require_indexable<typename Matrix::index_type>(op, A.rows, A.cols, A.nnz());
}

/// How spmv is spread over Exec (see the file comment).
template <class Exec>
struct SpmvShape {
  static constexpr bool gpu = ReductionShape<Exec, float>::gpu;
  /// GPU: threads (rows x lanes) per team: 8 warps, several teams per SM.
  static constexpr int gpu_team_threads = 256;
  /// GPU: most lanes per row (a warp; Kokkos' vector length is a power of two up to 32).
  static constexpr int gpu_max_vector_length = 32;
  /// CPU: rows per work item (a contiguous block): ~thousands of entries per item keep
  /// scheduling overhead negligible, while many items per thread keep uneven rows balanced.
  static constexpr std::int64_t cpu_rows_per_block = 512;
  /// CPU: bytes ahead of each row's first entry at which one line of values and one of
  /// col_idx are prefetched. Each row's short FMA chain, its x loads and its y store leave the
  /// hardware prefetcher behind. 3D Laplacian, 2 threads, Zen 4 VM, scratch loops, GB/s: fp32
  /// 158^3 none 29-30, these distances 33-34, twice them 30; fp64 137^3 none 28-31, these
  /// 46-48. Every line of each row's range instead (a loop of 1 or 2 prefetches per row, or
  /// each line once as the rows reach it: a branch that goes either way from row to row):
  /// fp32 25-28, fp64 35-39.
  static constexpr std::int64_t cpu_values_ahead = 4096;
  static constexpr std::int64_t cpu_col_idx_ahead = 2048;
  /// CPU: the longest rows summed as a tree of their products (see spmv_blocks); at most 8
  /// (HostEntries::sum_short_row).
  static constexpr std::int64_t cpu_tree_entries = 8;
  static_assert(cpu_tree_entries <= 8, "spmv: sum_short_row sums rows of at most 8 entries");
  /// CPU: fewest rows of one structure that go as a vector (cpu::spmv_block) when a block ends
  /// early; fewer go one at a time.
  static constexpr int cpu_block_min_rows = 4;
  /// CPU: most rows taken one at a time after misses in a row before spmv_block is tried again.
  static constexpr std::int64_t cpu_block_backoff = 64;

  /// GPU lanes per row: the mean row length rounded up to a power of two, at most a warp (7 for
  /// the 3D Laplacian gives 8; long rows loop over their entries 32 at a time).
  static int vector_length(std::int64_t rows, std::int64_t nnz) {
    if (!gpu) return 1;
    const std::int64_t mean = rows > 0 ? (nnz + rows - 1) / rows : 1;
    int v = 1;
    while (v < mean && v < gpu_max_vector_length) v *= 2;
    return v;
  }
};

/// spmv on a GPU: a vector of lanes per row, a block of rows per team.
template <class Exec, class RowPtr, class ColIdx, class Values, class X, class Y, class C>
void spmv_teams(const Exec& exec, std::int64_t rows, std::int64_t nnz, const RowPtr& row_ptr, const ColIdx& col_idx,
                const Values& values, const X& x, const Y& y, C a, C b, bool reads_y) {
  using T = typename Y::value_type;
  using Shape = SpmvShape<Exec>;
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Member = typename Policy::member_type;
  const int lanes = Shape::vector_length(rows, nnz);
  const std::int64_t rows_per_team = Shape::gpu_team_threads / lanes;
  const int league = league_size("spmv", (rows + rows_per_team - 1) / rows_per_team);
  Kokkos::parallel_for(
      "rooftop::spmv", Policy(exec, league, static_cast<int>(rows_per_team), lanes), KOKKOS_LAMBDA(const Member& member) {
        const std::int64_t first = static_cast<std::int64_t>(member.league_rank()) * rows_per_team;
        const std::int64_t count = rows - first < rows_per_team ? rows - first : rows_per_team;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, count), [&](const std::int64_t k) {
          const std::int64_t r = first + k;
          const std::int64_t begin = row_ptr(r), end = row_ptr(r + 1);
          C sum = 0;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(member, begin, end),
              [&](const std::int64_t j, C& part) { part += C(values(j)) * C(x(col_idx(j))); }, sum);
          Kokkos::single(Kokkos::PerThread(member), [&] { y(r) = T(reads_y ? a * sum + b * C(y(r)) : a * sum); });
        });
      });
}

/// A CSR matrix's entries against x on the host, entry e being values[e] * x[col_idx[e]]
/// in C (x's stride is 1 where `contiguous`, known at compile time: a stride multiplying
/// every x index would lengthen each entry's chain from col_idx to x). Members, not lambdas:
/// in the harness's one large translation unit GCC 12 left a lambda of this out of line for
/// bf16 and fp16, a call per entry (3D Laplacian 175^3: 10-17 -> 5-6.5 GB/s).
template <class T, class Index, class C, bool contiguous>
struct HostEntries {
  const T* values;
  const Index* col_idx;
  const T* x;
  std::int64_t x_stride;

  [[gnu::always_inline]] C product(std::int64_t e) const { return cpu::to_compute(values[e]) * cpu::to_compute(at(e)); }
  /// sum + entry e in one compat::mul_add (fused where the host has the instruction). A chain
  /// of these, not sum += product: GCC 12 turns the latter into AVX2 gathers and an in-order
  /// vector reduction whose set-up costs more than a row of ~7 entries saves (fp32 3D
  /// Laplacian: ~20% slower measured); the chain stays scalar.
  /// bf16/fp16 convert one value at a time (cpu::to_compute: a vpinsrw from memory, and for
  /// fp16 a vcvtph2ps, where the plain conversion took a load, a shift or a move from an
  /// integer register each; 3D Laplacian, 2 threads, Zen 5 VM, scratch program, two
  /// alternations, GB/s: bf16 175^3 14.8-15.4 -> 21.8-23.9, 55^3 (in cache) 14.6-15.2 ->
  /// 22.0-24.0; fp16 55^3 20.7-20.8 -> 22.0-22.1). That beat gathering a run of rows' x into
  /// a buffer, converting and multiplying it in one vectorized loop, then summing each row's
  /// products (3D Laplacian 175^3, 2 threads, Zen 5 VM, two alternations, GB/s: bf16
  /// 15.0-15.1 -> 15.7-15.9, fp16 10.3-10.4 -> 20.8-21.0).
  [[gnu::always_inline]] C add(std::int64_t e, C sum) const {
    return compat::mul_add(cpu::to_compute(values[e]), cpu::to_compute(at(e)), sum);
  }
  /// The products of entries b, ..., b + L - 1 summed as a balanced tree (halves summed
  /// recursively), each pair of leaves in one compat::mul_add.
  template <int L>
  [[gnu::always_inline]] C tree_sum(std::int64_t b) const {
    if constexpr (L == 1) {
      return product(b);
    } else if constexpr (L == 2) {
      return add(b, product(b + 1));
    } else {
      constexpr int half = (L + 1) / 2;
      return tree_sum<half>(b) + tree_sum<L - half>(b + half);
    }
  }
  /// The sum of the `length` <= 8 entries from b (tree_sum of its length; 0 if none).
  [[gnu::always_inline]] C sum_short_row(std::int64_t b, std::int64_t length) const {
    switch (length) {
      case 1: return tree_sum<1>(b);
      case 2: return tree_sum<2>(b);
      case 3: return tree_sum<3>(b);
      case 4: return tree_sum<4>(b);
      case 5: return tree_sum<5>(b);
      case 6: return tree_sum<6>(b);
      case 7: return tree_sum<7>(b);
      case 8: return tree_sum<8>(b);
      default: return C(0);
    }
  }

 private:
  [[gnu::always_inline]] const T& at(std::int64_t e) const {
    if constexpr (contiguous) {
      return x[col_idx[e]];
    } else {
      return x[col_idx[e] * x_stride];
    }
  }
};

/// spmv on a CPU: blocks of rows per work item, one row at a time.
template <class Exec, class RowPtr, class ColIdx, class Values, class X, class Y, class C>
void spmv_blocks(const Exec& exec, std::int64_t rows, const RowPtr& row_ptr, const ColIdx& col_idx, const Values& values,
                 const X& x, const Y& y, C a, C b, bool reads_y) {
  using T = typename Y::value_type;
  using Index = typename ColIdx::value_type;
  using Shape = SpmvShape<Exec>;
  constexpr std::int64_t block = Shape::cpu_rows_per_block;
  // One line per row in each, ahead of the row's first entry (see SpmvShape); not for
  // 2-byte values, whose conversions bound the loop (bf16 3D Laplacian 175^3, the harness,
  // three alternations: 15.1-16.4 -> 13.5-13.9 GB/s with the prefetches; fp16 unchanged).
  // Known at compile time, with the element sizes: as cpu::Prefetch objects (a null test and
  // a multiply by the element size per row each, and two registers, which pushed GCC to park
  // 64-bit values in xmm registers) the row loop ran slower (one thread, fp32 3D Laplacian
  // 40^3 in L2, scratch program, two runs: 2.88-2.99 -> 2.68-2.75 ns per row this way; fp64
  // and bf16 unchanged).
  constexpr bool prefetches = sizeof(T) >= 4;
  constexpr std::int64_t values_ahead = Shape::cpu_values_ahead / static_cast<std::int64_t>(sizeof(T));
  constexpr std::int64_t col_idx_ahead = Shape::cpu_col_idx_ahead / static_cast<std::int64_t>(sizeof(Index));
  // Csr's arrays are contiguous Views; x and y any rank-1 Views (see HostEntries).
  auto run = [&](auto unit) {
    constexpr bool contiguous = decltype(unit)::value;
    const Index* const rp = row_ptr.data();
    const HostEntries<T, Index, C, contiguous> entries{values.data(), col_idx.data(), x.data(),
                                                       static_cast<std::int64_t>(x.stride(0))};
    T* const yp = y.data();
    const std::int64_t sy = contiguous ? 1 : static_cast<std::int64_t>(y.stride(0));
    Kokkos::parallel_for(
        "rooftop::spmv", compat::Range<Exec>(exec, 0, (rows + block - 1) / block), [=](const std::int64_t blk) {
          // Everything the loop reads from the closure is in these locals: a store to y
          // could otherwise alias the closure's a and b (floats, like y's fp32 elements),
          // which GCC then reloaded after every row.
          const C alpha = a, beta = b;
          const bool beta_y = reads_y;
          const auto row_entries = entries;
          const std::int64_t last = (blk + 1) * block < rows ? (blk + 1) * block : rows;
          // A row at a time (one_row). A row of up to Shape::cpu_tree_entries entries (a stencil's, a
          // finite element's) is summed as a balanced tree of its products, straight-line code
          // picked by its length (HostEntries::sum_short_row); a longer one by an FMA chain
          // (HostEntries::add): a tree is 3 additions deep for 7 entries where the chain is 7 FMAs,
          // presumably what held the previous loop (two rows at a time, their chains interleaved)
          // to its speed from memory with its data in cache. Against it, 3D Laplacian, 2 threads,
          // Zen 3 VM, scratch program alternating both in one process, three runs: fp32 1.08-1.10x
          // (64^3, in cache) and 1.03-1.09x (158^3), fp64 1.04-1.13x and 0.92-1.15x, bf16
          // 1.02-1.10x, fp16 0.91-0.97x (its conversions fill the FP pipes, and a tree of 7 takes
          // 10 FP operations where the chain takes 7); the harness's single runs moved more than
          // that from run to run.
          auto one_row = [&](const std::int64_t r) __attribute__((always_inline)) {
            const std::int64_t b0 = rp[r], e0 = rp[r + 1];
            if constexpr (prefetches) {
              cpu::prefetch_line(row_entries.values + b0 + values_ahead);
              cpu::prefetch_line(row_entries.col_idx + b0 + col_idx_ahead);
            }
            C sum = 0;
            if (e0 - b0 <= Shape::cpu_tree_entries) {
              sum = row_entries.sum_short_row(b0, e0 - b0);
            } else {
              for (std::int64_t e = b0; e < e0; ++e) sum = row_entries.add(e, sum);
            }
            T& out = yp[r * sy];
            out = cpu::from_compute<T>(beta_y ? alpha * sum + beta * cpu::to_compute(out) : alpha * sum);
          };
          std::int64_t r = blk * block;
#if defined(ROOFTOP_HAS_SPMV_BLOCK)
          if constexpr (contiguous) {
            // Blocks of rows of one structure a vector of rows at a time (cpu::spmv_block), the
            // rest one at a time. A block that ends early (a row of another length or pattern,
            // or the end of the work item) still goes as a vector if it has
            // Shape::cpu_block_min_rows rows; a shorter one goes row by row, and so, after
            // misses in a row (a matrix without such blocks: random sparsity, long rows), do
            // further rows, up to Shape::cpu_block_backoff, so that checking costs little
            // where it never pays.
            constexpr int lanes = cpu::spmv_block_lanes<T>;
            // Blocks prefetch as far ahead as the rows do, in every dtype. 3D Laplacian 150^3,
            // 2 threads, Zen 4 VM, scratch program, four alternations, median GB/s without ->
            // with: fp64 31.9 -> 41.5, fp32 37.5 -> 34.5; 55^3 (in cache) fp64 68.6 -> 62.1, fp32
            // 67.8 -> 57.3. On the Zen 5 VM (one process alternating both, medians of 15) fp32
            // 158^3 18.5 -> 37.8 (the fp32 rows had moved half fp64's bytes per second), bf16 /
            // fp16 175^3 16.0 / 16.1 -> 15.6 / 15.8; on the Granite Rapids VM (two binaries
            // alternated twice, bf16 and fp16 alike, medians of 9) 2-byte 300^3 25.4-26.0 ->
            // 28.9-29.3, 120^3 (in cache) 37.2-42.1 -> 48.4-50.6, so 2-byte blocks now prefetch
            // too.
            int misses = 0;
            while (r < last) {
              const int most = last - r < lanes ? static_cast<int>(last - r) : lanes;
              const auto length = rp[r + 1] - rp[r];
              int n = 0;
              auto take = [&](auto entries) __attribute__((always_inline)) {
                constexpr int L = decltype(entries)::value;
                n = cpu::spmv_block_rows<L, T>(rp, row_entries.col_idx, r, most);
                // Every line of the block's values and col_idx, as far ahead as the rows'.
                const std::int64_t b0 = rp[r];
                for (std::int64_t k = 0; k < L * lanes; k += 64 / static_cast<std::int64_t>(sizeof(T)))
                  cpu::prefetch_line(row_entries.values + b0 + values_ahead + k);
                for (std::int64_t k = 0; k < L * lanes; k += 64 / static_cast<std::int64_t>(sizeof(Index)))
                  cpu::prefetch_line(row_entries.col_idx + b0 + col_idx_ahead + k);
                if (n == lanes) {
                  cpu::spmv_block<L, true>(rp, row_entries.col_idx, row_entries.values, row_entries.x, yp, r, n, alpha, beta, beta_y);
                } else if (n >= Shape::cpu_block_min_rows) {
                  cpu::spmv_block<L, false>(rp, row_entries.col_idx, row_entries.values, row_entries.x, yp, r, n, alpha, beta, beta_y);
                } else {
                  n = -n;
                }
              };
              switch (length) {
                case 1: take(std::integral_constant<int, 1>{}); break;
                case 2: take(std::integral_constant<int, 2>{}); break;
                case 3: take(std::integral_constant<int, 3>{}); break;
                case 4: take(std::integral_constant<int, 4>{}); break;
                case 5: take(std::integral_constant<int, 5>{}); break;
                case 6: take(std::integral_constant<int, 6>{}); break;
                case 7: take(std::integral_constant<int, 7>{}); break;
                case 8: take(std::integral_constant<int, 8>{}); break;
                default: break;
              }
              if (n > 0) {
                r += n;
                misses = 0;
                continue;
              }
              // A miss: the -n rows that fit (or none), or more after misses in a row, one at a time.
              ++misses;
              const std::int64_t backoff = std::min(std::int64_t{1} << std::min(misses, 16), Shape::cpu_block_backoff);
              const std::int64_t until = std::min(last, r + std::max<std::int64_t>(backoff, -n));
              for (; r < until; ++r) one_row(r);
            }
          }
#endif
          for (; r < last; ++r) one_row(r);
        });
  };
  if (x.stride(0) == 1 && y.stride(0) == 1) {
    run(std::true_type{});
  } else {
    run(std::false_type{});
  }
}
}  // namespace detail

/// y = alpha * A x + beta * y (beta == 0: y = alpha * A x, y not read; alpha == 0: y = beta * y,
/// A and x not read). Throws rooftop::Error if x is not A.cols long, y is not A.rows long, x
/// or any of A's arrays overlaps y, or A's arrays disagree in extent.
template <class Exec, class T, class Index, class Memory, class X, class Y>
void spmv(const Exec& exec, double alpha, const Csr<T, Index, Memory>& A, const X& x, double beta, const Y& y) {
  mandate_input<Exec, decltype(A.values), 1>();
  mandate_input<Exec, X, 1>();
  mandate_output<Exec, Y, 1>();
  static_assert(std::is_same_v<typename X::non_const_value_type, T> && std::is_same_v<typename Y::value_type, T>,
                "spmv: A, x and y differ in value type");
  detail::require_csr_extents("spmv", A);
  ROOFTOP_REQUIRE(static_cast<std::int64_t>(x.extent(0)) == A.cols, "spmv", "x is ", x.extent(0), " but A has ", A.cols,
                  " columns");
  ROOFTOP_REQUIRE(static_cast<std::int64_t>(y.extent(0)) == A.rows, "spmv", "y is ", y.extent(0), " but A has ", A.rows,
                  " rows");
  detail::require_distinct_elements("spmv", "y", y);
  ROOFTOP_REQUIRE(!detail::overlap(x, y), "spmv", "x and y overlap (x is ", shape_of(x), ", y is ", shape_of(y),
                  "): rows would read entries of x that other rows have already written");
  detail::require_apart("spmv", "A.values", A.values, "y", y);
  detail::require_apart("spmv", "A.col_idx", A.col_idx, "y", y);
  detail::require_apart("spmv", "A.row_ptr", A.row_ptr, "y", y);
  if (A.rows == 0) return;
  if (alpha == 0) {  // y = beta * y: 0 * Inf or 0 * NaN (in A or x) would give NaN
    if (beta == 0)
      Kokkos::deep_copy(exec, y, T(0.0f));
    else
      scale(exec, beta, y, y);
    return;
  }
  using C = compute_t<T>;
  const C a = static_cast<C>(alpha), b = static_cast<C>(beta);
  if constexpr (detail::SpmvShape<Exec>::gpu)
    detail::spmv_teams(exec, A.rows, A.nnz(), A.row_ptr, A.col_idx, A.values, x, y, a, b, beta != 0);
  else
    detail::spmv_blocks(exec, A.rows, A.row_ptr, A.col_idx, A.values, x, y, a, b, beta != 0);
}

/// y = A x (y not read).
template <class Exec, class T, class Index, class Memory, class X, class Y>
void spmv(const Exec& exec, const Csr<T, Index, Memory>& A, const X& x, const Y& y) {
  spmv(exec, 1.0, A, x, 0.0, y);
}
template <class T, class Index, class Memory, class X, class Y>
void spmv(const Csr<T, Index, Memory>& A, const X& x, const Y& y) {
  spmv(typename Y::execution_space{}, 1.0, A, x, 0.0, y);
}
template <class T, class Index, class Memory, class X, class Y>
void spmv(double alpha, const Csr<T, Index, Memory>& A, const X& x, double beta, const Y& y) {
  spmv(typename Y::execution_space{}, alpha, A, x, beta, y);
}

/// Cost of spmv with a (rows, cols) matrix of nnz entries of T and Index indices. FLOPs: 2 per
/// entry (multiply, add), plus 3 per row with beta != 0 (alpha * sum, beta * y, add; the alpha
/// scaling of the plain y = A x is not counted). Compulsory bytes: values and col_idx once,
/// row_ptr once, y written once (and read once with beta != 0), and x read once: perfect reuse
/// of x, as if every x element reached the processor once however many rows use it. That is
/// exact for banded matrices such as the Laplacians (a row's neighbours are still in cache)
/// and a lower bound for scattered sparsity, where x is re-read from memory.
template <class T, class Index = std::int32_t>
constexpr Cost spmv_cost(std::int64_t rows, std::int64_t cols, std::int64_t nnz, bool reads_y = false) {
  return {2.0 * nnz + (reads_y ? 3.0 * rows : 0.0),
          bytes_of<T>(static_cast<double>(nnz)) + bytes_of<Index>(static_cast<double>(nnz) + rows + 1) +
              bytes_of<T>(static_cast<double>(cols) + (reads_y ? 2.0 : 1.0) * rows)};
}

// ---- generators ------------------------------------------------------------------------------

/// Stored entries of the 7-point Laplacian on an (nx, ny, nz) grid: 7 per point less one for
/// each missing neighbour at the boundary. (The 5-point 2D Laplacian is nz = 1.)
constexpr std::int64_t laplacian_3d_nnz(std::int64_t nx, std::int64_t ny, std::int64_t nz) {
  if (nx <= 0 || ny <= 0 || nz <= 0) return 0;
  return 7 * nx * ny * nz - 2 * (ny * nz + nx * nz + nx * ny);
}
constexpr std::int64_t laplacian_2d_nnz(std::int64_t nx, std::int64_t ny) { return laplacian_3d_nnz(nx, ny, 1); }

namespace detail {
/// Precondition of `op` on an (nx, ny, nz) grid's Laplacian: extents not negative, and its
/// points (rows) and entries (7 a point at most) counted in 64 bits without wrapping.
inline void require_grid_points(const char* op, std::int64_t nx, std::int64_t ny, std::int64_t nz) {
  ROOFTOP_REQUIRE(nx >= 0 && ny >= 0 && nz >= 0, op, "grid extents must not be negative (", nx, "x", ny, "x", nz, ")");
  ROOFTOP_REQUIRE(static_cast<double>(nx) * static_cast<double>(ny) * static_cast<double>(nz) <= 1e18, op, "a grid of ", nx, "x",
                  ny, "x", nz, " points is beyond 64-bit row and entry counts");
}

/// The Laplacian stencil on an (nx, ny, nz) grid, points numbered x fastest (row (k*ny + j)*nx
/// + i); diag on the diagonal, -1 for each neighbour inside the grid (Dirichlet: neighbours
/// outside are dropped), columns ascending.
template <class T, class Index, class Exec>
Csr<T, Index, typename Exec::memory_space> laplacian(const char* op, const Exec& exec, std::int64_t nx, std::int64_t ny,
                                                     std::int64_t nz, float diag) {
  require_grid_points(op, nx, ny, nz);
  const std::int64_t rows = nx * ny * nz, nnz = laplacian_3d_nnz(nx, ny, nz);
  require_indexable<Index>(op, rows, rows, nnz);
  Csr<T, Index, typename Exec::memory_space> A(rows, rows, nnz);
  const auto row_ptr = A.row_ptr;
  const auto col_idx = A.col_idx;
  const auto values = A.values;
  const std::int64_t plane = nx * ny;
  Kokkos::parallel_scan(
      "rooftop::laplacian::row_ptr", compat::Range<Exec>(exec, 0, rows),
      KOKKOS_LAMBDA(const std::int64_t r, std::int64_t& offset, const bool final) {
        const std::int64_t i = r % nx, j = r / nx % ny, k = r / plane;
        offset += 1 + (i > 0) + (i < nx - 1) + (j > 0) + (j < ny - 1) + (k > 0) + (k < nz - 1);
        if (final) row_ptr(r + 1) = static_cast<Index>(offset);
      });
  const T off(-1.0f), center(diag);
  Kokkos::parallel_for(
      "rooftop::laplacian::entries", compat::Range<Exec>(exec, 0, rows), KOKKOS_LAMBDA(const std::int64_t r) {
        const std::int64_t i = r % nx, j = r / nx % ny, k = r / plane;
        std::int64_t p = row_ptr(r);
        auto put = [&](bool inside, std::int64_t c, T v) {
          if (inside) {
            col_idx(p) = static_cast<Index>(c);
            values(p) = v;
            ++p;
          }
        };
        put(k > 0, r - plane, off);
        put(j > 0, r - nx, off);
        put(i > 0, r - 1, off);
        put(true, r, center);
        put(i < nx - 1, r + 1, off);
        put(j < ny - 1, r + nx, off);
        put(k < nz - 1, r + plane, off);
      });
  return A;
}
}  // namespace detail

/// The 5-point Laplacian of an (nx, ny) grid (nx*ny rows and columns, point (i, j) at row
/// j*nx + i): 4 on the diagonal, -1 for each of the up to 4 neighbours inside the grid
/// (Dirichlet boundary: rows at the boundary have fewer entries). Built on exec's device.
template <class T, class Index = std::int32_t, class Exec>
Csr<T, Index, typename Exec::memory_space> laplacian_2d(const Exec& exec, std::int64_t nx, std::int64_t ny) {
  return detail::laplacian<T, Index>("laplacian_2d", exec, nx, ny, 1, 4.0f);
}

/// The 7-point Laplacian of an (nx, ny, nz) grid (point (i, j, k) at row (k*ny + j)*nx + i): 6
/// on the diagonal, -1 for each of the up to 6 neighbours inside the grid (Dirichlet).
template <class T, class Index = std::int32_t, class Exec>
Csr<T, Index, typename Exec::memory_space> laplacian_3d(const Exec& exec, std::int64_t nx, std::int64_t ny, std::int64_t nz) {
  return detail::laplacian<T, Index>("laplacian_3d", exec, nx, ny, nz, 6.0f);
}

/// A (rows, cols) matrix with nnz_per_row entries in every row, at distinct columns ascending
/// within the row, values uniform in [-1, 1) rounded to T. A pure function of the seed (the same matrix on
/// every backend and thread count): row r's columns are nnz_per_row draws uniform in
/// [0, cols - nnz_per_row], sorted, the t-th plus t (a sorted multiset shifted into distinct
/// columns). Built on exec's device.
template <class T, class Index = std::int32_t, class Exec>
Csr<T, Index, typename Exec::memory_space> random_csr(const Exec& exec, std::int64_t rows, std::int64_t cols,
                                                      std::int64_t nnz_per_row, std::uint64_t seed) {
  ROOFTOP_REQUIRE(nnz_per_row >= 0 && nnz_per_row <= cols, "random_csr", nnz_per_row, " entries per row do not fit in ", cols,
                  " columns");
  ROOFTOP_REQUIRE(rows >= 0 && (nnz_per_row == 0 || rows <= std::numeric_limits<std::int64_t>::max() / nnz_per_row),
                  "random_csr", rows, " rows of ", nnz_per_row, " entries: not a count of entries (0 to 2^63 - 1)");
  detail::require_indexable<Index>("random_csr", rows, cols, rows * nnz_per_row);
  Csr<T, Index, typename Exec::memory_space> A(rows, cols, rows * nnz_per_row);
  const auto row_ptr = A.row_ptr;
  const auto col_idx = A.col_idx;
  const auto values = A.values;
  const std::int64_t k = nnz_per_row;
  const std::uint64_t span = static_cast<std::uint64_t>(cols) - static_cast<std::uint64_t>(k) + 1;  // (cols up to 2^63 - 1)
  Kokkos::parallel_for(
      "rooftop::random_csr::row_ptr", compat::Range<Exec>(exec, 0, rows + 1),
      KOKKOS_LAMBDA(const std::int64_t r) { row_ptr(r) = static_cast<Index>(r * k); });
  Kokkos::parallel_for(
      "rooftop::random_csr::entries", compat::Range<Exec>(exec, 0, rows), KOKKOS_LAMBDA(const std::int64_t r) {
        const std::int64_t first = r * k;
        // Insertion sort of the row's draws in place (rows are short; this is set-up, not a hot path).
        for (std::int64_t t = 0; t < k; ++t) {
          const auto e = static_cast<std::uint64_t>(first + t);
          const Index c = static_cast<Index>(hash64(seed, 2 * e) % span);
          std::int64_t s = first + t;
          for (; s > first && col_idx(s - 1) > c; --s) col_idx(s) = col_idx(s - 1);
          col_idx(s) = c;
          values(first + t) = T(2.0 * uniform01(seed, 2 * e + 1) - 1.0);
        }
        for (std::int64_t t = 0; t < k; ++t) col_idx(first + t) = static_cast<Index>(col_idx(first + t) + t);
      });
  return A;
}

/// A Csr in Memory holding host arrays (values converted to T). Throws rooftop::Error unless
/// they form a valid (rows, cols) CSR matrix: row_ptr of rows + 1 entries from 0,
/// non-decreasing, ending at the number of entries; columns in [0, cols).
template <class T, class Index, class Memory = Kokkos::DefaultExecutionSpace::memory_space>
Csr<T, Index, Memory> csr_from_host(std::int64_t rows, std::int64_t cols, const std::vector<Index>& row_ptr,
                                    const std::vector<Index>& col_idx, const std::vector<double>& values) {
  const auto nnz = static_cast<std::int64_t>(values.size());
  detail::require_indexable<Index>("csr_from_host", rows, cols, nnz);
  ROOFTOP_REQUIRE(static_cast<std::int64_t>(row_ptr.size()) == rows + 1, "csr_from_host", "row_ptr is ", row_ptr.size(),
                  " but the matrix has ", rows, " rows (expected ", rows + 1, ")");
  ROOFTOP_REQUIRE(static_cast<std::int64_t>(col_idx.size()) == nnz, "csr_from_host", "col_idx is ", col_idx.size(),
                  " but values is ", nnz);
  ROOFTOP_REQUIRE(row_ptr[0] == 0 && row_ptr[rows] == nnz, "csr_from_host", "row_ptr runs from ", row_ptr[0], " to ",
                  row_ptr[rows], " (expected 0 to ", nnz, ")");
  for (std::int64_t r = 0; r < rows; ++r)
    ROOFTOP_REQUIRE(row_ptr[r] <= row_ptr[r + 1], "csr_from_host", "row_ptr(", r, ") is ", row_ptr[r], " but row_ptr(", r + 1,
                    ") is ", row_ptr[r + 1]);
  for (std::int64_t e = 0; e < nnz; ++e)
    ROOFTOP_REQUIRE(col_idx[e] >= 0 && col_idx[e] < cols, "csr_from_host", "col_idx(", e, ") is ", col_idx[e],
                    ", outside the ", cols, " columns");
  Csr<T, Index, Memory> A(rows, cols, nnz);
  auto hp = Kokkos::create_mirror_view(A.row_ptr);
  auto hc = Kokkos::create_mirror_view(A.col_idx);
  auto hv = Kokkos::create_mirror_view(A.values);
  for (std::int64_t r = 0; r <= rows; ++r) hp(r) = row_ptr[r];
  for (std::int64_t e = 0; e < nnz; ++e) {
    hc(e) = col_idx[e];
    hv(e) = T(values[e]);
  }
  Kokkos::deep_copy(A.row_ptr, hp);
  Kokkos::deep_copy(A.col_idx, hc);
  Kokkos::deep_copy(A.values, hv);
  return A;
}

/// Checks that A is a valid CSR matrix, as the comment on Csr says (row_ptr from 0,
/// non-decreasing, ending at nnz; every column in [0, cols)), and throws rooftop::Error naming
/// the first row or entry that is not. For matrices whose arrays the caller filled: spmv
/// trusts A's contents (checking them would cost a pass over row_ptr and col_idx per call),
/// and an invalid matrix makes it read out of bounds. One parallel pass over row_ptr and
/// col_idx on exec (O(rows + nnz)), then a few values copied to the host; csr_from_host and
/// the generators build valid matrices.
template <class Exec, class T, class Index, class Memory>
void check_csr(const Exec& exec, const Csr<T, Index, Memory>& A) {
  mandate_input<Exec, decltype(A.values), 1>();
  detail::require_csr_extents("check_csr", A);  // with the extents' fit in Index
  const std::int64_t rows = A.rows, cols = A.cols, nnz = A.nnz();
  const auto row_ptr = A.row_ptr;
  const auto col_idx = A.col_idx;
  auto host_copy = [&](const auto& view, const std::int64_t from, const std::int64_t to) {
    std::vector<Index> out(static_cast<std::size_t>(to - from));
    const Kokkos::View<Index*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(out.data(), out.size());
    Kokkos::deep_copy(exec, h, Kokkos::subview(view, std::make_pair(from, to)));
    exec.fence();
    return out;
  };
  const Index first = host_copy(row_ptr, 0, 1)[0], last = host_copy(row_ptr, rows, rows + 1)[0];
  ROOFTOP_REQUIRE(first == 0 && last == nnz, "check_csr", "row_ptr runs from ", first, " to ", last, " (expected 0 to ", nnz,
                  ")");
  // The first row whose range is not [row_ptr(r), row_ptr(r + 1)) within the entries, or that
  // holds a column outside [0, cols) (read only where its range is within the entries).
  std::int64_t bad = rows;
  Kokkos::parallel_reduce(
      "rooftop::check_csr", compat::Range<Exec>(exec, 0, rows),
      KOKKOS_LAMBDA(const std::int64_t r, std::int64_t& first_bad) {
        const Index begin = row_ptr(r), end = row_ptr(r + 1);
        bool ok = 0 <= begin && begin <= end && end <= nnz;
        for (Index k = begin; ok && k < end; ++k) ok = 0 <= col_idx(k) && col_idx(k) < cols;
        if (!ok && r < first_bad) first_bad = r;
      },
      Kokkos::Min<std::int64_t>(bad));
  exec.fence();
  if (bad >= rows) return;
  const std::vector<Index> range = host_copy(row_ptr, bad, bad + 2);
  ROOFTOP_REQUIRE(range[0] <= range[1], "check_csr", "row_ptr(", bad, ") is ", range[0], " but row_ptr(", bad + 1, ") is ",
                  range[1]);
  ROOFTOP_REQUIRE(range[0] >= 0 && range[1] <= nnz, "check_csr", "row ", bad, " runs from ", range[0], " to ", range[1],
                  ", outside the ", nnz, " entries");
  const std::vector<Index> columns = host_copy(col_idx, range[0], range[1]);
  for (std::size_t k = 0; k < columns.size(); ++k)
    ROOFTOP_REQUIRE(columns[k] >= 0 && columns[k] < cols, "check_csr", "col_idx(", range[0] + static_cast<std::int64_t>(k),
                    ") (row ", bad, ") is ", columns[k], ", outside the ", cols, " columns");
}
template <class T, class Index, class Memory>
void check_csr(const Csr<T, Index, Memory>& A) {
  check_csr(typename Memory::execution_space{}, A);
}

}  // namespace rooftop
