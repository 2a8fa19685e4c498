// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// embedding: out(t, :) = table(ids(t), :) for (vocab, dim) table, (tokens) integer ids and
/// (tokens, dim) out.
///
/// Ids are int32 or int64. An id outside [0, vocab) is never read through: its output row is
/// written with zeros and the call throws rooftop::Error naming the first such token and its
/// id. The check costs no second pass over the data: the gather itself reduces the index of the
/// first bad token, or, where the host gathers the tokens grouped by row (large gathers whose
/// rows repeat: detail::embedding_grouped), the sort of the ids that groups them finds it.
/// Storage any dtype (a gather does no arithmetic).
#pragma once

#include "../core/cost.hpp"
#include "../core/error.hpp"
#include "../core/parallel.hpp"
#include "../core/types.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace rooftop {

namespace detail {
/// How far ahead embedding prefetches the rows it gathers: the row this many bytes of output
/// ahead (at least the next row), line by line while a row is copied. One row ahead, short rows
/// left too little time for the memory: Zen 4 VM, 2 threads, a scratch program alternating
/// the distances in one process (medians of 11, copy ~46 GB/s): bf16 dim 768 40.6 -> 50.1
/// GB/s at 8 KB (49.0 at 4 KB, 48.3 at 16 KB), fp32 dim 768 32.1 -> 37.1, dim 4096 (one row
/// ahead either way but for 16 KB) 43-47 -> 45-49.
inline constexpr std::int64_t embedding_prefetch_bytes = 8192;

/// Whether the host gathers `tokens` rows of `row_bytes` from a table of `vocab` rows grouped
/// by row (tokens_by_row): from 1024 tokens on, where the table has at most four rows per token,
/// so that rows repeat (each repeat read from cache, the table read once, in order of its rows)
/// and the grouping's arrays stay small beside the output; and rows of 2 KB and more, whose
/// outputs, written in the order of the table's rows, are scattered over the output in pieces
/// still long enough for the memory. Granite Rapids VM, 2 threads, a scratch program, 32000 rows,
/// 1.6 GB of gathers, two alternations, compulsory GB/s as a share of copy beside it: fp32 rows
/// of 768 0.65-0.67 -> 0.81-0.86, of 4096 0.82-0.87 -> 0.97-1.00, bf16 of 4096 0.70-0.72 ->
/// 0.91-0.95; bf16 of 768 (1.5 KB) lost, 0.72-0.74 -> 0.62-0.63.
inline bool embedding_grouped(std::int64_t tokens, std::int64_t vocab, std::int64_t row_bytes) {
  return tokens >= 1024 && vocab <= 4 * tokens && row_bytes >= 2048;
}

/// The tokens [0, ids.extent(0)) in order of their ids (a counting sort: stable, two passes over
/// the ids and one over the table's rows), tokens of ids outside [0, vocab) last, and how many
/// distinct rows they gather; `first_bad` is lowered to the first token of such an id.
struct TokensByRow {
  std::vector<std::int64_t> order;
  std::int64_t rows = 0;
};
template <class Ids>
TokensByRow tokens_by_row(const Ids& ids, std::int64_t vocab, std::int64_t& first_bad) {
  const auto tokens = static_cast<std::int64_t>(ids.extent(0));
  std::vector<std::int64_t> start(static_cast<std::size_t>(vocab) + 2, 0);
  auto bucket = [&](const std::int64_t t) {
    const std::int64_t id = ids(t);
    return id >= 0 && id < vocab ? id : vocab;
  };
  for (std::int64_t t = 0; t < tokens; ++t) {
    const std::int64_t b = bucket(t);
    if (b == vocab && t < first_bad) first_bad = t;
    ++start[static_cast<std::size_t>(b) + 1];
  }
  TokensByRow sorted;
  for (std::int64_t b = 0; b <= vocab; ++b) {
    sorted.rows += b < vocab && start[static_cast<std::size_t>(b) + 1] > 0;
    start[static_cast<std::size_t>(b) + 1] += start[static_cast<std::size_t>(b)];
  }
  sorted.order.resize(static_cast<std::size_t>(tokens));
  for (std::int64_t t = 0; t < tokens; ++t) sorted.order[static_cast<std::size_t>(start[static_cast<std::size_t>(bucket(t))]++)] = t;
  return sorted;
}
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
  // out(t, :) for the token t at position p of the gather: its row of the table, or zeros
  // (and t a bad token) where its id is out of range.
  auto gather = KOKKOS_LAMBDA(const detail::RowTeam<Exec>& r, const std::int64_t p, const std::int64_t* const order,
                              const std::int64_t ahead, std::int64_t& bad) {
    const auto token_at = [&](const std::int64_t q) { return order ? order[q] : q; };
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
        if (p + ahead < rows) {
          const std::int64_t next_id = ids(token_at(p + ahead));
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
  };
  bool grouped = false;
  if constexpr (detail::on_host<Exec>) {
    if (table_rows_contiguous && detail::embedding_grouped(rows, vocab, row_bytes)) {
      // On the host, where rows repeat: the tokens in order of their rows (tokens_by_row), so
      // a row gathered by several tokens comes from memory once and the table is read in
      // order (embedding_grouped has the figures). The sort finds the bad ids.
      grouped = true;
      const detail::TokensByRow by_row = detail::tokens_by_row(ids, vocab, first_bad);
      const std::int64_t* const order = by_row.order.data();
      // Rows prefetched about as many distinct rows ahead as tokens in order are: a row's
      // tokens are its repeats, and one gathered row ahead of 16 repeats is the same row.
      const std::int64_t ahead = ahead_rows * std::max<std::int64_t>(rows / std::max<std::int64_t>(by_row.rows, 1), 1);
      Kokkos::parallel_for("rooftop::embedding", detail::row_policy("rooftop::embedding", exec, rows, plan), [&](const Member& member) {
        detail::for_run_of_item<Exec>(member, rows, plan, [&](const std::int64_t first, const std::int64_t last, float*) {
          std::int64_t bad = none;  // (tokens_by_row found them)
          for (std::int64_t p = first; p < last; ++p) gather(detail::RowTeam<Exec>{member, order[p], plan.stream, nullptr}, p, order, ahead, bad);
        });
      });
      exec.fence();
    }
  }
  if (!grouped) {
    Kokkos::parallel_reduce(
        "rooftop::embedding", detail::row_policy("rooftop::embedding", exec, rows, plan),
        KOKKOS_LAMBDA(const Member& member, std::int64_t& bad) {
          detail::for_rows_of_item<Exec>(member, rows, plan, [&](const detail::RowTeam<Exec>& r) { gather(r, r.row, nullptr, ahead_rows, bad); });
        },
        Kokkos::Min<std::int64_t>(first_bad));
  }
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
