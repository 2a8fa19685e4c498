// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// attention's entries in the op table (`attention`, and `attention_causal` with the causal
/// mask), and the float64 reference of one query row that the harness and
/// tests/test_attention.cpp verify against.
#pragma once

#include "ml_ops.hpp"
#include "op_spec.hpp"
#include "reference.hpp"

#include "../kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace rooftop::reference {

/// Checks one query row `got` (head_dim entries) of attention against float64: scores of q
/// (head_dim) with the first `visible` rows of k (row stride head_dim) formed in full,
/// softmax, times the rows of v. "" if every entry is within the bound, else the first wrong
/// entry. The bound: one rounding of the result to T, and fp32 errors relative to
/// sum_j p_j |v_jc|: the scores' (a head_dim-long fma chain on scale * q, and the subtraction
/// of the max) times the largest scale * sum_c |q_c k_jc|, which perturb p relatively by that
/// much, plus the roundings of the sums over the visible keys, counted as gemm_bound_random
/// counts a dot product's (10 sqrt(visible): roundings of either sign add up as a random walk;
/// the worst case, visible, would let a result that left out a whole tile of 128 keys among
/// 32768 pass, tests/test_attention.cpp); with `p_rounded` (the matrix-unit path, which
/// multiplies V by the probabilities rounded to T) one more epsilon of T relative to that sum.
template <class T>
std::string attention_row(const double* q, const double* k, const double* v, std::int64_t visible, std::int64_t head_dim,
                          double scale, const double* got, bool p_rounded = false) {
  std::vector<double> p(static_cast<std::size_t>(visible));
  double score_mag = 0, max_score = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < visible; ++j) {
    double dot = 0, mag = 0;
    for (std::int64_t c = 0; c < head_dim; ++c) {
      dot += q[c] * k[j * head_dim + c];
      mag += std::abs(q[c] * k[j * head_dim + c]);
    }
    p[j] = scale * dot;
    score_mag = std::max(score_mag, std::abs(scale) * mag);
    max_score = std::max(max_score, p[j]);
  }
  double sum = 0;
  for (std::int64_t j = 0; j < visible; ++j) sum += (p[j] = std::exp(p[j] - max_score));
  const double fp32_roundings =
      (2.0 * static_cast<double>(head_dim) + 8) * score_mag + 10 * std::sqrt(static_cast<double>(visible)) + 16;
  for (std::int64_t c = 0; c < head_dim; ++c) {
    double want = 0, mag = 0;  // no visible key: 0 (as rooftop::attention documents)
    for (std::int64_t j = 0; j < visible; ++j) {
      want += p[j] / sum * v[j * head_dim + c];
      mag += p[j] / sum * std::abs(v[j * head_dim + c]);
    }
    const double bound = 2 * epsilon<T>() * std::abs(want) + (fp32_roundings * epsilon<float>() + (p_rounded ? epsilon<T>() : 0.0)) * mag +
                         denorm_min<T>();
    if (!(std::abs(got[c] - want) <= bound)) {
      std::ostringstream msg;
      msg.precision(9);
      msg << "entry " << c << " is " << got[c] << ", expected " << want << " (bound " << bound << ")";
      return msg.str();
    }
  }
  return "";
}

}  // namespace rooftop::reference

namespace rooftop::harness {

namespace attn {

template <class T>
using Tensor = Kokkos::View<T****, Kokkos::LayoutRight, BackendMemory>;

/// The harness's attention shapes: (batch, heads, seq, head_dim) = (1, 8, seq, 64), seq_q =
/// seq_k, with or without the causal mask.
constexpr std::int64_t batch = 1, heads = 8, head_dim = 64;

/// Query rows verify() checks against float64 (O(seq * head_dim) each; the whole O(seq^2)
/// reference would take minutes at the main-memory size): this many spread evenly over batch,
/// heads and seq (every block of 64 consecutive rows at the largest size holds one), plus every
/// head's first and last query (the last, causal, sees every key). Every row is also checked
/// to be written and within |O| <= max |V| (see verify).
constexpr std::int64_t verified_rows = 512;

template <class T>
Cost cost(const Shape& s, bool causal) {
  return attention_cost<T>(s[0], s[1], s[2], s[2], s[3], causal);
}

template <class T>
OpInstance make(const Exec& exec, const Shape& s, bool causal, std::uint64_t seed) {
  const std::int64_t b = s[0], h = s[1], seq = s[2], d = s[3];
  Tensor<T> q("rooftop::q", b, h, seq, d), k("rooftop::k", b, h, seq, d), v("rooftop::v", b, h, seq, d),
      o("rooftop::o", b, h, seq, d);
  // Before the fills: Kokkos 3.4 may have given a tensor no memory (see require_allocated).
  for (const auto* t : {&q, &k, &v, &o}) rooftop::detail::require_allocated("attention", "a tensor", *t);
  fill_uniform(exec, flat(q), seed, -1, 1);
  fill_uniform(exec, flat(k), seed + 1, -1, 1);
  fill_uniform(exec, flat(v), seed + 2, -1, 1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  OpInstance op;
  op.poison = [=] { fill_nan(exec, flat(o)); };
  op.poison();
  op.cost = cost<T>(s, causal);
  op.shape = s;
  // Every product on GPUs' tensor cores (bf16, fp16) or AVX512-BF16 hosts' pair dot products
  // (bf16), which multiply V by the probabilities rounded to T.
  op.matrix_units = rooftop::detail::attention_uses_matrix_units<Exec, T>(d) || rooftop::detail::attention_uses_bf16_pairs<Exec, T>;
  op.run = [=] { rooftop::attention(exec, q, k, v, o, scale, causal); };
  const bool p_rounded = op.matrix_units;
  op.verify = [=]() -> std::string {
    const auto hq = to_host_flat(q), hk = to_host_flat(k), hv = to_host_flat(v), ho = to_host_flat(o);
    const std::int64_t rows = b * h * seq;
    // Every entry: written (O starts as NaN) and |O| <= 1, as each output row is a weighted
    // mean of V's rows (V in [-1, 1]; room for the probabilities' roundings).
    if (const std::int64_t e = reference::first_outside(ho, 1.01); e >= 0) {
      const std::int64_t row = e / d, bh = row / seq;
      std::ostringstream msg;
      msg << "O(" << bh / h << ", " << bh % h << ", " << row % seq << ", " << e % d << ") is " << ho[e]
          << ": not written, or beyond |O| <= max |V| = 1";
      return msg.str();
    }
    std::vector<std::int64_t> checked;
    for (std::int64_t r = 0; r < std::min(rows, verified_rows); ++r)
      checked.push_back(rows <= verified_rows ? r : r * (rows - 1) / (verified_rows - 1));
    for (std::int64_t bh = 0; bh < b * h && rows > verified_rows; ++bh) {
      checked.push_back(bh * seq);
      checked.push_back(bh * seq + seq - 1);
    }
    for (const std::int64_t row : checked) {
      const std::int64_t bh = row / seq, i = row % seq;
      const std::int64_t visible = causal ? i + 1 : seq;
      const std::string error = reference::attention_row<T>(&hq[row * d], &hk[bh * seq * d], &hv[bh * seq * d], visible, d,
                                                             scale, &ho[row * d], p_rounded);
      if (!error.empty()) {
        std::ostringstream msg;
        msg << "O(" << bh / h << ", " << bh % h << ", " << i << ", :): " << error;
        return msg.str();
      }
    }
    return "";
  };
  return op;
}

}  // namespace attn

/// Appends attention and attention_causal (fp32, bf16, fp16; math in fp32) to the op table.
inline void append_attention_ops(std::vector<OpSpec>& t) {
  for (const bool causal : {false, true}) {
    OpSpec s = ml::spec(
        causal ? "attention_causal" : "attention", {},
        [causal](auto tag, const Shape& shape) { return attn::cost<typename decltype(tag)::type>(shape, causal); },
        [causal](auto tag, const Exec& e, const Shape& shape, std::uint64_t seed) {
          return attn::make<typename decltype(tag)::type>(e, shape, causal, seed);
        });
    // Compute-bound (AI = seq / 4 FLOPs per byte at fp32, half that causal): seq follows the
    // working set (sized by the fp32 bytes, so every dtype and both masks run the same shapes)
    // up to 4096, where one call is ~34 GFLOP (well under a second on 2 cores). The
    // main-memory working set is out of reach in a reasonable time (seq^2 work), and would not
    // change the bound.
    s.shapes_at = [](DType, double working_set) {
      const double per_seq = attn::cost<float>({attn::batch, attn::heads, 1, attn::head_dim}, false).bytes;
      const auto seq = static_cast<std::int64_t>(std::lround(working_set / per_seq / 64)) * 64;
      return std::vector<Shape>{{attn::batch, attn::heads, std::clamp<std::int64_t>(seq, 64, 4096), attn::head_dim}};
    };
    s.shapes_of_size = [](std::int64_t n) { return std::vector<Shape>{{attn::batch, attn::heads, n, attn::head_dim}}; };
    t.push_back(s);
  }
}

}  // namespace rooftop::harness
