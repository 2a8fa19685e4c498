// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The ML memory-bound ops' entries in the op table: activations, softmax, norms, dropout,
/// embedding, and the bias + GELU + dropout chain unfused and fused. Each instance is verified
/// against the float64 references in reference.hpp.
#pragma once

#include "op_spec.hpp"
#include "reference.hpp"

#include "../kernels/activation.hpp"
#include "../kernels/dropout.hpp"
#include "../kernels/embedding.hpp"
#include "../kernels/norm.hpp"
#include "../kernels/softmax.hpp"

namespace rooftop::harness {

namespace ml {

template <class T>
using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, BackendMemory>;

/// Calls f(type_tag<T>) for the ML dtypes (fp32, bf16, fp16: math in fp32).
template <class F>
auto dispatch(DType d, F&& f) {
  switch (d) {
    case DType::fp32: return f(type_tag<float>{});
    case DType::bf16: return f(type_tag<bf16>{});
    case DType::fp16: return f(type_tag<fp16>{});
    default: throw std::invalid_argument(std::string("ML ops run in fp32, bf16 or fp16, not ") + dtype_name(d));
  }
}

/// A typed cost model cost(tag, shape) as a function of the dtype.
template <class CostF>
std::function<Cost(DType, const Shape&)> by_dtype(CostF cost) {
  return [cost](DType d, const Shape& shape) { return dispatch(d, [&](auto tag) { return cost(tag, shape); }); };
}

/// An op spec over the ML dtypes; cost(tag, shape) and make(tag, exec, shape, seed) are typed.
template <class CostF, class MakeF>
OpSpec spec(std::string name, std::vector<std::int64_t> row_lengths, CostF cost, MakeF make) {
  OpSpec s;
  s.name = std::move(name);
  s.dtypes = {DType::fp32, DType::bf16, DType::fp16};
  s.row_lengths = std::move(row_lengths);
  s.cost = by_dtype(cost);
  s.make = [make](const Exec& e, DType d, const Shape& shape, std::uint64_t seed) {
    return dispatch(d, [&](auto tag) { return make(tag, e, shape, seed); });
  };
  return s;
}

/// Elementwise op over n elements, inputs uniform in [-4, 4) (where the activations bend).
template <class T, class Run, class Ref>
OpInstance unary(const Exec& exec, std::int64_t n, std::uint64_t seed, Cost cost, Run run, Ref reference, double fp32_ulps) {
  Vector<T> x("rooftop::x", n), y("rooftop::y", n);
  fill_uniform(exec, x, seed, -4, 4);
  OpInstance op;
  op.poison = [=] { fill_nan(exec, y); };
  op.poison();
  op.cost = cost;
  op.shape = {n};
  op.streamable_output_bytes = view_bytes(y);
  op.run = [=] { run(exec, x, y); };
  op.verify = [=]() -> std::string {
    const auto hx = detail::to_host(x), hy = detail::to_host(y);
    std::vector<double> want(hx.size());
    reference::host_for(static_cast<std::int64_t>(hx.size()), [&](const std::int64_t i) { want[i] = reference(hx[i], i); });
    return reference::compare(hy, want, [&](std::size_t i) {
      return reference::tolerance<T>(want[i], std::abs(hx[i]) + std::abs(want[i]), fp32_ulps);
    });
  };
  return op;
}

constexpr double dropout_p = 0.1;

/// (rows, cols) x uniform in [-4, 4) plus a (cols) bias uniform in [-1, 1), through the
/// bias + GELU (+ dropout) kernels `run`; intermediate_roundings counts roundings to T of
/// intermediates in memory (the unfused chain's two), poisoned with the output where
/// poison_intermediates does so.
template <class T, class Run>
OpInstance bias_chain(const Exec& exec, const Shape& shape, std::uint64_t seed, Cost cost, bool with_dropout, Run run,
                      int intermediate_roundings, const std::function<void()>& poison_intermediates = {}) {
  const std::int64_t rows = shape[0], cols = shape[1];
  Matrix<T> x("rooftop::x", rows, cols), y("rooftop::y", rows, cols);
  Vector<T> bias("rooftop::bias", cols);
  fill_uniform(exec, flat(x), seed, -4, 4);
  fill_uniform(exec, bias, seed + 1, -1, 1);
  const DropoutMask mask(with_dropout ? dropout_p : 0.0, seed, 0);
  OpInstance op;
  op.poison = [=] {
    fill_nan(exec, flat(y));
    if (poison_intermediates) poison_intermediates();
  };
  op.poison();
  op.cost = cost;
  op.shape = shape;
  op.streamable_output_bytes = view_bytes(y);
  op.run = [=] { run(exec, x, bias, y, mask, seed); };
  op.verify = [=]() -> std::string {
    const auto hx = to_host_flat(x), hb = detail::to_host(bias), hy = to_host_flat(y);
    std::vector<double> want(hx.size()), scale(hx.size());
    reference::host_for(static_cast<std::int64_t>(hx.size()), [&](const std::int64_t i) {
      const double v = hx[i] + hb[i % cols];
      const double factor = mask.keep(i) ? 1 / mask.keep_probability() : 0.0;
      want[i] = reference::gelu_tanh(v) * factor;
      scale[i] = (std::abs(v) + std::abs(reference::gelu_tanh(v))) * factor;
    });
    return reference::compare(hy, want, [&](std::size_t i) {
      return reference::tolerance<T>(want[i], scale[i], 16) + 2 * intermediate_roundings * epsilon<T>() * scale[i];
    });
  };
  return op;
}

/// (rows, cols) op with x uniform in [lo, hi) and optional (cols) parameters; reference_row(x,
/// params, y) writes one row's float64 result and scale_row its per-element error scale.
template <class T, class Run, class RefRow>
OpInstance rowwise(const Exec& exec, const Shape& shape, std::uint64_t seed, Cost cost, double lo, double hi, int params,
                   Run run, RefRow reference_row) {
  const std::int64_t rows = shape[0], cols = shape[1];
  Matrix<T> x("rooftop::x", rows, cols), y("rooftop::y", rows, cols);
  Vector<T> w("rooftop::weight", params > 0 ? cols : 0), b("rooftop::bias", params > 1 ? cols : 0);
  fill_uniform(exec, flat(x), seed, lo, hi);
  fill_uniform(exec, w, seed + 1, 0.5, 1.5);
  fill_uniform(exec, b, seed + 2, -1, 1);
  OpInstance op;
  op.poison = [=] { fill_nan(exec, flat(y)); };
  op.poison();
  op.cost = cost;
  op.shape = shape;
  op.streamable_output_bytes = view_bytes(y);
  op.run = [=] { run(exec, x, w, b, y); };
  op.verify = [=]() -> std::string {
    const auto hx = to_host_flat(x), hy = to_host_flat(y), hw = detail::to_host(w), hb = detail::to_host(b);
    std::vector<double> want(hx.size()), scale(hx.size());
    reference::host_for(rows, [&](const std::int64_t r) {
      reference_row(&hx[r * cols], cols, params > 0 ? hw.data() : nullptr, params > 1 ? hb.data() : nullptr, &want[r * cols],
                    &scale[r * cols]);
    });
    const double roundings = reference::row_roundings(cols);
    return reference::compare(hy, want, [&](std::size_t i) { return reference::tolerance<T>(want[i], scale[i], roundings); });
  };
  return op;
}

constexpr double norm_eps = 1e-5;

/// `s` with the doubles per compulsory element its verification holds (OpSpec::
/// verification_doubles_per_element): 1.5 for `unary` (input, output, expected output), 2 for
/// `rowwise` and `bias_chain` (and an error scale).
inline OpSpec verified_with(double doubles_per_element, OpSpec s) {
  s.verification_doubles_per_element = doubles_per_element;
  return s;
}

}  // namespace ml

/// Appends the ML ops to the op table.
inline void append_ml_ops(std::vector<OpSpec>& t) {
  using namespace ml;
  const std::vector<std::int64_t> row_lengths = {768, 4096, 32768};
  auto n_of = [](const Shape& s) { return s[0]; };

  t.push_back(verified_with(1.5, spec("relu", {}, [=](auto tag, const Shape& s) { return relu_cost<typename decltype(tag)::type>(n_of(s)); },
                   [=](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
                     using T = typename decltype(tag)::type;
                     return unary<T>(e, s[0], seed, relu_cost<T>(s[0]), [](const Exec& x, auto a, auto o) { rooftop::relu(x, a, o); },
                                     [](double v, std::size_t) { return reference::relu(v); }, 0);
                   })));
  t.push_back(verified_with(1.5, spec("gelu", {}, [=](auto tag, const Shape& s) { return gelu_cost<typename decltype(tag)::type>(n_of(s)); },
                   [=](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
                     using T = typename decltype(tag)::type;
                     return unary<T>(e, s[0], seed, gelu_cost<T>(s[0]), [](const Exec& x, auto a, auto o) { rooftop::gelu(x, a, o); },
                                     [](double v, std::size_t) { return reference::gelu_tanh(v); }, 16);
                   })));
  // GELU's erf form (PyTorch's default, nn.GELU()), under its own name.
  t.push_back(verified_with(1.5, spec("gelu_erf", {},
                   [=](auto tag, const Shape& s) { return gelu_cost<typename decltype(tag)::type>(n_of(s), Gelu::erf); },
                   [=](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
                     using T = typename decltype(tag)::type;
                     return unary<T>(
                         e, s[0], seed, gelu_cost<T>(s[0], Gelu::erf),
                         [](const Exec& x, auto a, auto o) { rooftop::gelu(x, a, o, Gelu::erf); },
                         [](double v, std::size_t) { return reference::gelu_erf(v); }, 16);
                   })));
  t.push_back(verified_with(1.5, spec("silu", {}, [=](auto tag, const Shape& s) { return silu_cost<typename decltype(tag)::type>(n_of(s)); },
                   [=](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
                     using T = typename decltype(tag)::type;
                     return unary<T>(e, s[0], seed, silu_cost<T>(s[0]), [](const Exec& x, auto a, auto o) { rooftop::silu(x, a, o); },
                                     [](double v, std::size_t) { return reference::silu(v); }, 8);
                   })));
  t.push_back(verified_with(2, spec("bias_gelu", row_lengths,
                   [](auto tag, const Shape& s) { return bias_gelu_cost<typename decltype(tag)::type>(s[0], s[1]); },
                   [](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
                     using T = typename decltype(tag)::type;
                     return bias_chain<T>(
                         e, s, seed, bias_gelu_cost<T>(s[0], s[1]), false,
                         [](const Exec& x, auto in, auto bias, auto out, const DropoutMask&, std::uint64_t) {
                           rooftop::bias_gelu(x, in, bias, out);
                         },
                         0);
                   })));
  t.push_back(verified_with(2, spec("softmax", row_lengths,
                   [](auto tag, const Shape& s) { return softmax_cost<typename decltype(tag)::type>(s[0], s[1]); },
                   [](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
                     using T = typename decltype(tag)::type;
                     return rowwise<T>(
                         e, s, seed, softmax_cost<T>(s[0], s[1]), -8, 8, 0,
                         [](const Exec& x, auto in, auto, auto, auto out) { rooftop::softmax(x, in, out); },
                         [](const double* x, std::int64_t n, const double*, const double*, double* y, double* scale) {
                           reference::softmax_row(x, n, y);
                           for (std::int64_t i = 0; i < n; ++i) scale[i] = y[i];
                         });
                   })));
  // Norm rows are uniform in [1, 3): a mean far from 0 checks the variance's cancellation.
  t.push_back(verified_with(2, spec("layernorm", row_lengths,
                   [](auto tag, const Shape& s) { return layernorm_cost<typename decltype(tag)::type>(s[0], s[1]); },
                   [](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
                     using T = typename decltype(tag)::type;
                     return rowwise<T>(
                         e, s, seed, layernorm_cost<T>(s[0], s[1]), 1, 3, 2,
                         [](const Exec& x, auto in, auto w, auto b, auto out) { rooftop::layernorm(x, in, out, norm_eps, w, b); },
                         [](const double* x, std::int64_t n, const double* w, const double* b, double* y, double* scale) {
                           reference::layernorm_row(x, n, norm_eps, nullptr, nullptr, scale);  // normalized x
                           for (std::int64_t i = 0; i < n; ++i) {
                             y[i] = scale[i] * w[i] + b[i];
                             scale[i] = std::abs(w[i]) * (1 + std::abs(scale[i])) + std::abs(b[i]);
                           }
                         });
                   })));
  t.push_back(verified_with(2, spec("rmsnorm", row_lengths,
                   [](auto tag, const Shape& s) { return rmsnorm_cost<typename decltype(tag)::type>(s[0], s[1]); },
                   [](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
                     using T = typename decltype(tag)::type;
                     return rowwise<T>(
                         e, s, seed, rmsnorm_cost<T>(s[0], s[1]), -2, 2, 1,
                         [](const Exec& x, auto in, auto w, auto, auto out) { rooftop::rmsnorm(x, in, out, norm_eps, w); },
                         [](const double* x, std::int64_t n, const double* w, const double*, double* y, double* scale) {
                           reference::rmsnorm_row(x, n, norm_eps, w, y);
                           for (std::int64_t i = 0; i < n; ++i) scale[i] = std::abs(y[i]);
                         });
                   })));
  t.push_back(verified_with(1.5, spec("dropout", {}, [=](auto tag, const Shape& s) { return dropout_cost<typename decltype(tag)::type>(n_of(s)); },
                   [=](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
                     using T = typename decltype(tag)::type;
                     const DropoutMask mask(dropout_p, seed, 0);
                     return unary<T>(
                         e, s[0], seed, dropout_cost<T>(s[0]),
                         [seed](const Exec& x, auto a, auto o) { rooftop::dropout(x, a, o, dropout_p, seed); },
                         [mask](double v, std::size_t i) { return mask.keep(i) ? v / mask.keep_probability() : 0.0; }, 2);
                   })));
  {
    // A vocabulary of 32000 rows (LLaMA's): the table far exceeds the cache, so the gather
    // reads main memory; only the main-memory sweep applies. The ids are uniform, so tokens
    // beyond a few thousand repeat rows: the compulsory bytes count each distinct row once
    // (the instance counts its own ids' rows; the spec, for sizes and the memory check, their
    // expected number), while the sweep sizes tokens by every gather's bytes.
    static constexpr std::int64_t vocab = 32000;
    OpSpec s = spec(
        "embedding", {768, 4096},
        [](auto tag, const Shape& s) {
          const double expected_rows = -static_cast<double>(vocab) * std::expm1(static_cast<double>(s[0]) * std::log1p(-1.0 / vocab));
          return embedding_cost<typename decltype(tag)::type, std::int64_t>(s[0], s[1], std::llround(expected_rows));
        },
        [](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
          using T = typename decltype(tag)::type;
          const std::int64_t tokens = s[0], dim = s[1];
          Matrix<T> table("rooftop::table", vocab, dim), out("rooftop::out", tokens, dim);
          Vector<std::int64_t> ids("rooftop::ids", tokens);
          fill_uniform(e, flat(table), seed, -1, 1);
          fill_integers(e, ids, seed + 1, 0, static_cast<int>(vocab - 1));
          std::int64_t distinct_rows = 0;
          {
            const auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ids);
            std::vector<bool> seen(vocab);
            for (std::int64_t t = 0; t < tokens; ++t)
              if (!seen[hid(t)]) seen[hid(t)] = true, ++distinct_rows;
          }
          OpInstance op;
          op.poison = [=] { fill_nan(e, flat(out)); };
          op.poison();
          op.cost = embedding_cost<T, std::int64_t>(tokens, dim, distinct_rows);
          op.shape = s;
          op.streamable_output_bytes = view_bytes(out);
          op.run = [=] { rooftop::embedding(e, table, ids, out); };
          op.verify = [=]() -> std::string {
            const auto ht = to_host_flat(table), ho = to_host_flat(out);
            const auto hid = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ids);
            std::vector<double> want(ho.size());
            reference::host_for(tokens, [&](const std::int64_t t) {
              for (std::int64_t c = 0; c < dim; ++c) want[t * dim + c] = ht[hid(t) * dim + c];
            });
            return reference::compare(ho, want, [](std::size_t) { return 0.0; });
          };
          return op;
        });
    s.sizing = by_dtype([](auto tag, const Shape& s) { return embedding_cost<typename decltype(tag)::type, std::int64_t>(s[0], s[1]); });
    // The whole table, the output and the expected output as doubles, and the ids.
    s.verification_bytes = [](DType, const Shape& s) {
      return static_cast<double>(vocab * s[1] + 2 * s[0] * s[1]) * sizeof(double) + static_cast<double>(s[0]) * sizeof(std::int64_t);
    };
    s.cache_sizes = false;
    t.push_back(s);
  }
  // bias + GELU + dropout: three kernels with two intermediates in memory, and one kernel, at
  // the same shapes (sized by the fused chain's bytes).
  auto fused_cost = [](auto tag, const Shape& s) { return bias_gelu_dropout_cost<typename decltype(tag)::type>(s[0], s[1]); };
  OpSpec unfused = spec(
      "chain_unfused", {4096},
      [](auto tag, const Shape& s) {
        using T = typename decltype(tag)::type;
        return bias_add_cost<T>(s[0], s[1]) + gelu_cost<T>(s[0] * s[1]) + dropout_cost<T>(s[0] * s[1]);
      },
      [](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
        using T = typename decltype(tag)::type;
        Matrix<T> t1("rooftop::t1", s[0], s[1]), t2("rooftop::t2", s[0], s[1]);
        const Cost cost = bias_add_cost<T>(s[0], s[1]) + gelu_cost<T>(s[0] * s[1]) + dropout_cost<T>(s[0] * s[1]);
        return bias_chain<T>(
            e, s, seed, cost, true,
            [t1, t2](const Exec& x, auto in, auto bias, auto out, const DropoutMask&, std::uint64_t sd) {
              rooftop::bias_add(x, in, bias, t1);
              rooftop::gelu(x, flat(t1), flat(t2));
              rooftop::dropout(x, flat(t2), flat(out), dropout_p, sd);
            },
            2,
            // The intermediates too: a stage that stopped writing would leave the warm-ups'.
            [e, t1, t2] {
              fill_nan(e, flat(t1));
              fill_nan(e, flat(t2));
            });
      });
  unfused.sizing = by_dtype(fused_cost);
  // bias_chain's four doubles per element, over its six compulsory elements (x, y and each
  // intermediate twice).
  unfused.verification_doubles_per_element = 4.0 / 6;
  t.push_back(unfused);
  t.push_back(verified_with(2, spec(
      "chain_fused", {4096}, fused_cost,
      [](auto tag, const Exec& e, const Shape& s, std::uint64_t seed) {
        using T = typename decltype(tag)::type;
        return bias_chain<T>(
            e, s, seed, bias_gelu_dropout_cost<T>(s[0], s[1]), true,
            [](const Exec& x, auto in, auto bias, auto out, const DropoutMask&, std::uint64_t sd) {
              rooftop::bias_gelu_dropout(x, in, bias, out, dropout_p, sd);
            },
            0);
      })));
}

}  // namespace rooftop::harness
