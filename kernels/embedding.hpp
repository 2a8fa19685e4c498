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
#include <memory>
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
/// by table rows (tokens_by_bucket): from 1024 tokens on, where the table has at most four rows
/// per token, so that rows repeat (a bucket's repeats read from cache, the table about once,
/// in order of its buckets), and rows of 512 bytes and more, whose outputs, written in bucket
/// order, are scattered over the output in pieces still long enough for the memory. Granite
/// Rapids VM, 2 threads, a scratch program, a 32000-row table, 788 MB of outputs, best of four,
/// written GB/s in token order / sorted by row (the sort included) / by bucket of 512 KB of
/// rows: rows of 512 bytes 25 / 21-23 / 35, 1.5 KB 32-33 / 36 / 39-40, 3 KB 29-30 / 40 / 40,
/// 8 KB 27 / 36 / 36 (a fill of such pieces at random places runs at 52): the sort by bucket
/// takes 0.9 ms of 548K tokens where the sort by row took 3.0 (its placing stores miss the
/// cache), while a bucket's rows stay in L2 between repeats. The harness (`rooftop --quick
/// --ops copy,embedding`, two alternations with the sort by row, bf16 and fp16 rows of 768 then
/// in token order), share of copy in the same run: 2-byte rows of 768 0.59-0.64 -> 0.73-0.86,
/// rows of 4096 and fp32 rows of 768 within noise (0.80-0.93 / 0.80-0.97).
inline bool embedding_grouped(std::int64_t tokens, std::int64_t vocab, std::int64_t row_bytes) {
  return tokens >= 1024 && vocab <= 4 * tokens && row_bytes >= 512;
}

/// The table rows of a bucket (embedding's grouped gather): a power of two of them, 2^shift,
/// the most whose bytes fit in embedding_bucket_bytes (one row where a row alone is larger).
inline constexpr std::int64_t embedding_bucket_bytes = std::int64_t{512} << 10;
inline int embedding_bucket_shift(std::int64_t row_bytes) {
  int shift = 0;
  while ((std::int64_t{2} << shift) * row_bytes <= embedding_bucket_bytes) ++shift;
  return shift;
}

/// The tokens [0, ids.extent(0)) in order of their ids' buckets of 2^shift table rows (id >>
/// shift), tokens of ids outside [0, vocab) last; `first_bad` is lowered to the first token of
/// such an id. A counting sort (stable), in parallel on the host execution space `exec`: each
/// of its threads counts, then places, the buckets of one stretch of the tokens.
template <class Exec, class Ids>
std::unique_ptr<std::int64_t[]> tokens_by_bucket(const Exec& exec, const Ids& ids, std::int64_t vocab, int shift, std::int64_t& first_bad) {
  const auto tokens = static_cast<std::int64_t>(ids.extent(0));
  const std::int64_t bad = ((vocab - 1) >> shift) + 1, buckets = bad + 1;  // the last bucket: bad ids
  const std::int64_t parts = std::max<std::int64_t>(1, std::min<std::int64_t>(exec.concurrency(), tokens / 4096));
  auto bucket = [=](const std::int64_t t) {
    const std::int64_t id = ids(t);
    return id >= 0 && id < vocab ? id >> shift : bad;
  };
  auto begin = [=](const std::int64_t q) { return tokens * q / parts; };  // stretch q: [begin(q), begin(q + 1))
  std::vector<std::int64_t> at(static_cast<std::size_t>(parts * buckets), 0), first(static_cast<std::size_t>(parts), first_bad);
  std::int64_t* const counts = at.data();
  std::int64_t* const first_of = first.data();
  using Policy = Kokkos::RangePolicy<Exec, Kokkos::Schedule<Kokkos::Static>>;
  Kokkos::parallel_for("rooftop::embedding_count", Policy(exec, 0, parts), [=](const std::int64_t q) {
    std::int64_t* const count = counts + q * buckets;
    for (std::int64_t t = begin(q), end = begin(q + 1); t < end; ++t) {
      const std::int64_t b = bucket(t);
      if (b == bad && t < first_of[q]) first_of[q] = t;
      ++count[b];
    }
  });
  exec.fence();
  std::int64_t start = 0;  // each stretch's first place in each bucket
  for (std::int64_t b = 0; b < buckets; ++b)
    for (std::int64_t q = 0; q < parts; ++q) {
      const std::int64_t n = counts[q * buckets + b];
      counts[q * buckets + b] = start;
      start += n;
    }
  for (const std::int64_t f : first) first_bad = std::min(first_bad, f);
  std::unique_ptr<std::int64_t[]> order(new std::int64_t[static_cast<std::size_t>(tokens)]);
  std::int64_t* const placed = order.get();
  Kokkos::parallel_for("rooftop::embedding_place", Policy(exec, 0, parts), [=](const std::int64_t q) {
    std::int64_t* const next = counts + q * buckets;
    for (std::int64_t t = begin(q), end = begin(q + 1); t < end; ++t) placed[next[bucket(t)]++] = t;
  });
  exec.fence();
  return order;
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
  detail::require_unshared_elements("embedding", "out", out);
  detail::require_apart("embedding", "table", table, "out", out);
  detail::require_apart("embedding", "ids", ids, "out", out);
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
                              std::int64_t& bad) {
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
        if (!detail::RowTeam<Exec>::gpu && p + ahead_rows < rows) {  // a GPU's copy takes no prefetch
          const std::int64_t next_id = ids(token_at(p + ahead_rows));
          if (next_id >= 0 && next_id < vocab)
            next = {reinterpret_cast<const char*>(compat::address(table, next_id, 0)), sizeof(T)};
        }
        r.copy(out, compat::address(table, id, 0), dim, next);  // not &table(...): a value for const RandomAccess Views on CUDA
      } else {
        r.write(out, dim, [&](const std::int64_t c) { return table(id, c); });
      }
    } else {
      r.write(out, dim, [&](std::int64_t) { return T{}; });
      bad = r.row < bad ? r.row : bad;
    }
  };
  bool grouped = false;
  if constexpr (detail::on_host<Exec>) {
    if (table_rows_contiguous && detail::embedding_grouped(rows, vocab, row_bytes)) {
      // On the host, where rows repeat: the tokens in order of their buckets of table rows
      // (tokens_by_bucket), so a row gathered by several tokens of a bucket comes from memory
      // once and then from cache, and the table is read about once, bucket after bucket
      // (embedding_grouped has the figures). The sort finds the bad ids.
      grouped = true;
      const auto order = detail::tokens_by_bucket(exec, ids, vocab, detail::embedding_bucket_shift(row_bytes), first_bad);
      const std::int64_t* const by_bucket = order.get();
      Kokkos::parallel_for("rooftop::embedding", detail::row_policy("rooftop::embedding", exec, rows, plan), [&](const Member& member) {
        detail::for_run_of_item<Exec>(member, rows, plan, [&](const std::int64_t first, const std::int64_t last, float*) {
          std::int64_t bad = none;  // (tokens_by_bucket found them)
          for (std::int64_t p = first; p < last; ++p)
            gather(detail::RowTeam<Exec>{member, by_bucket[p], plan.stream, nullptr}, p, by_bucket, bad);
        });
      });
      exec.fence();
    }
  }
  if (!grouped) {
    Kokkos::parallel_reduce(
        "rooftop::embedding", detail::row_policy("rooftop::embedding", exec, rows, plan),
        KOKKOS_LAMBDA(const Member& member, std::int64_t& bad) {
          detail::for_rows_of_item<Exec>(member, rows, plan, [&](const detail::RowTeam<Exec>& r) { gather(r, r.row, nullptr, bad); });
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
