// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// embedding: out(t, :) = table(ids(t), :) for (vocab, dim) table, (tokens) integer ids and
/// (tokens, dim) out.
///
/// Ids are int32 or int64. An id outside [0, vocab) is never read through: its output row is
/// written with zeros and the call throws rooftop::Error naming the first such token and its
/// id. The check costs no second pass: the gather itself reduces the index of the first bad
/// token. Storage any dtype (a gather does no arithmetic).
#pragma once

#include "../core/cost.hpp"
#include "../core/error.hpp"
#include "../core/parallel.hpp"
#include "../core/types.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace rooftop {

namespace detail {
/// How far ahead embedding prefetches the rows it gathers: the row this many bytes of output
/// ahead (at least the next row), line by line while a row is copied. One row ahead, short rows
/// left too little time for the memory: Zen 4 VM, 2 threads, a scratch program alternating
/// the distances in one process (medians of 11, copy ~46 GB/s): bf16 dim 768 40.6 -> 50.1
/// GB/s at 8 KB (49.0 at 4 KB, 48.3 at 16 KB), fp32 dim 768 32.1 -> 37.1, dim 4096 (one row
/// ahead either way but for 16 KB) 43-47 -> 45-49.
inline constexpr std::int64_t embedding_prefetch_bytes = 8192;
}  // namespace detail

/// out(t, :) = table(ids(t), :). Throws rooftop::Error if the extents do not match or an id is
/// out of range (after the gather; the rows of bad ids are zero).
template <class Exec, class Table, class Ids, class Out>
void embedding(const Exec& exec, const Table& table, const Ids& ids, const Out& out) {
  mandate_input<Exec, Table, 2>();
  mandate_input<Exec, Ids, 1>();
  mandate_output<Exec, Out, 2>();
  using Id = std::remove_const_t<typename Ids::value_type>;
  static_assert(std::is_same_v<Id, std::int32_t> || std::is_same_v<Id, std::int64_t>, "embedding: ids are int32 or int64");
  static_assert(std::is_same_v<typename Table::non_const_value_type, typename Out::value_type>,
                "embedding: table and out differ in value type");
  ROOFTOP_REQUIRE(out.extent(0) == ids.extent(0) && out.extent(1) == table.extent(1), "embedding", "table is ",
                  shape_of(table), " and ids is ", shape_of(ids), " but out is ", shape_of(out), " (expected ",
                  ids.extent(0), "x", table.extent(1), ")");
  using Member = typename detail::RowTeam<Exec>::Member;
  using T = typename Out::value_type;
  const auto vocab = static_cast<std::int64_t>(table.extent(0)), dim = static_cast<std::int64_t>(table.extent(1));
  constexpr std::int64_t none = std::numeric_limits<std::int64_t>::max();
  std::int64_t first_bad = none;
  const auto rows = static_cast<std::int64_t>(ids.extent(0));
  const auto plan = detail::plan_rows<Exec, detail::Stores::streamed_when_large>(out);
  // Streamed rows are copied straight from the table (no buffer) where its rows are contiguous.
  const bool table_rows_contiguous = dim > 0 && (dim == 1 || table.stride(1) == 1);
  // Rows prefetched detail::embedding_prefetch_bytes ahead, at least the next.
  const std::int64_t row_bytes = std::max<std::int64_t>(dim * static_cast<std::int64_t>(sizeof(T)), 1);
  const std::int64_t ahead_rows = (detail::embedding_prefetch_bytes + row_bytes - 1) / row_bytes;
  Kokkos::parallel_reduce(
      "rooftop::embedding", detail::row_policy("rooftop::embedding", exec, rows, plan),
      KOKKOS_LAMBDA(const Member& member, std::int64_t& bad) {
        detail::for_rows_of_item<Exec>(member, rows, plan, [&](const detail::RowTeam<Exec>& r) {
          const std::int64_t id = ids(r.row);
          if (id >= 0 && id < vocab) {
            if (table_rows_contiguous) {
              // A later token's row (ahead_rows on) is prefetched while this one is copied:
              // each row starts somewhere new in the table, where the hardware prefetcher has
              // to find it again (scratch program, 2 threads, Zen 5 VM, rows from a 32000-row
              // table, two alternations, GB/s, the next row prefetched: fp32 dim 4096 39-65 ->
              // 60-87, dim 768 33-51 -> 56-67, bf16 dim 4096 34-55 -> 50-76; the harness gained
              // less, see docs/measured/log.md).
              cpu::Prefetch next;
              if (r.row + ahead_rows < rows) {
                const std::int64_t next_id = ids(r.row + ahead_rows);
                if (next_id >= 0 && next_id < vocab) next = {reinterpret_cast<const char*>(&table(next_id, 0)), sizeof(T)};
              }
              r.copy(out, &table(id, 0), dim, next);
            } else {
              r.write(out, dim, [&](const std::int64_t c) { return table(id, c); });
            }
          } else {
            r.write(out, dim, [&](std::int64_t) { return T(0.0f); });
            bad = r.row < bad ? r.row : bad;
          }
        });
      },
      Kokkos::Min<std::int64_t>(first_bad));
  if (first_bad != none) {
    const auto host_ids = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Kokkos::subview(ids, std::make_pair(first_bad, first_bad + 1)));
    detail::fail("embedding", "ids(", first_bad, ") is ", static_cast<std::int64_t>(host_ids(0)), ", outside the table's ",
                 vocab, " rows (table is ", shape_of(table), ")");
  }
}
template <class Table, class Ids, class Out>
void embedding(const Table& table, const Ids& ids, const Out& out) {
  embedding(typename Out::execution_space{}, table, ids, out);
}

/// Cost of embedding `tokens` rows of `dim` T with Id indices: no FLOPs; read the ids and each
/// distinct table row gathered (`distinct_rows` of them; -1: one per token, every gather from
/// memory) once, write out. Rows that repeat are compulsory bytes once: a table row gathered
/// by two tokens need not come from memory twice.
template <class T, class Id = std::int64_t>
constexpr Cost embedding_cost(std::int64_t tokens, std::int64_t dim, std::int64_t distinct_rows = -1) {
  const double rows = distinct_rows < 0 ? static_cast<double>(tokens) : static_cast<double>(distinct_rows);
  return {0, bytes_of<T>((rows + static_cast<double>(tokens)) * static_cast<double>(dim)) + static_cast<double>(sizeof(Id)) * tokens};
}

}  // namespace rooftop
