// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Activations: relu, gelu (tanh or erf form), silu elementwise over rank-1 Views; bias_add
/// and bias_gelu (bias add fused with GELU) over the rows of a (rows, cols) tensor.
///
/// Storage fp32, bf16 or fp16; math in fp32 (core/math.hpp: vectorizable exp and erfc), rounded
/// once to the storage type. Input and output may be the same View (partly overlapping ones
/// throw, as does a bias that overlaps the output).
#pragma once

#include "../core/cost.hpp"
#include "../core/error.hpp"
#include "../core/math.hpp"
#include "../core/parallel.hpp"
#include "../core/types.hpp"
#include "../backends/cpu/exp_vectors.hpp"

#include <cstdint>
#include <type_traits>

namespace rooftop {

/// Which GELU: the tanh approximation (GPT-2, BERT) or the exact erf form (PyTorch default).
enum class Gelu { tanh, erf };

#if defined(ROOFTOP_HAS_EXP_LANES) && defined(ROOFTOP_HAS_MAP_LINES)
/// GELU (both forms) and SiLU in registers of lanes on the host (AVX-512 or AVX2; see has_lanes).
#define ROOFTOP_HAS_ACTIVATION_LANES 1
#endif

namespace detail {
/// What an elementwise op's function costs per element, which decides how it writes large
/// outputs (elementwise_stores).
enum class Work {
  light,  // a few instructions (relu)
  exp,    // an exp and a division (gelu's tanh form, silu)
  heavy,  // more (gelu's erf form: a polynomial and an exponential for erfc)
};

/// Stores for an elementwise op of `work` writing T: light ops as light_op_stores; exp ops
/// stream fp32 where the host computes them in registers of lanes (map_lanes). AVX-512, 2^25
/// elements, 2 threads, Zen 4 VM, four alternations, GB/s (share of the copy run beside it):
/// gelu 36-56 (0.73-0.80) -> 47-52 (0.69-1.01), silu 33-37 (0.80-0.82) -> 46-61 (0.83-1.05).
/// AVX2 lanes, Zen 3 VM, min of four alternations: gelu 29.8 -> 35.4, silu 31.3 -> 40.7
/// (through convert_map's buffers, streaming had lost there: 0.72-0.83x). bf16/fp16 gained
/// nothing then (gelu bf16 22.0-22.1 vs 21.5-21.8 on the Zen 4 VM), nor did bias_gelu (fp32
/// 682x32768 41-46 -> 33-37), with the lanes one register at a time (see below for AVX-512
/// hosts now). On AVX2 hosts those and the erf form keep plain stores.
template <Work work, class T>
constexpr Stores elementwise_stores() {
  if constexpr (work == Work::light) return light_op_stores<T>();
#if defined(ROOFTOP_HAS_ACTIVATION_LANES)
  if constexpr (work == Work::exp && sizeof(T) >= 4) return Stores::streamed_when_large;
  // On AVX-512 hosts, since the lanes went four and eight registers at a time, 2-byte outputs
  // (cpu::streams_narrowed) and GELU's erf form's fp32 ones stream too. Zen 5 VM, the harness,
  // 2 threads, --quick, two alternations in a steady phase of the memory, paired fraction of
  // the roof: gelu bf16 / fp16 0.73-0.79 -> 0.93-0.95, silu 0.76-0.78 -> 0.92-0.97, gelu_erf
  // fp32 0.77-0.79 -> 0.84-0.88, bf16 / fp16 0.48-0.51 -> 0.52-0.54.
  if constexpr (work != Work::light && cpu::streams_narrowed<T>) return Stores::streamed_when_large;
  if constexpr (work == Work::heavy && sizeof(T) >= 4 && cpu::float_lanes == 16) return Stores::streamed_when_large;
#endif
  return Stores::plain;
}

/// Whether the functor F also computes a register of fp32 lanes at once on the host (a static
/// F::lanes(cpu::Floats): sixteen lanes on AVX-512 hosts, eight on AVX2 hosts; bit for bit its
/// operator()): set for each such functor.
template <class F>
inline constexpr bool has_lanes = false;
#if defined(ROOFTOP_HAS_ACTIVATION_LANES)

/// Registers of lanes the functor F (an activation with lanes, or a row functor of
/// map_rows_with_bias) computes together for outputs of T: F::together where it says, else
/// step_registers<T>.
template <class F, class T, class = void>
inline constexpr int registers_together = step_registers<T>;
template <class F, class T>
inline constexpr int registers_together<F, T, std::void_t<decltype(F::together)>> = F::together;

/// Whether the host computes activations writing T in registers of lanes: fp32, bf16 and fp16,
/// but bf16 on AVX2 hosts, where its narrowing's constants beside GELU's spill from sixteen
/// registers and the portable blocks (convert_map) ran faster (Zen 3 VM, gelu bf16, min of
/// six alternations: 2^26 on 2 threads 0.338 against 0.382 ns per element; 64x4096 on one
/// thread 0.64 against 0.70).
template <class T>
inline constexpr bool activation_lanes_pay = cpu::has_float_lanes<T> && !(cpu::float_lanes == 8 && std::is_same_v<T, bf16>);

/// Whether map_lanes computes T in pairs of registers, the even and the odd positions of
/// sixteen values (cpu::load_pairs, cpu::merge_pairs): bf16 on AVX2 hosts, where widening and
/// narrowing in order take lane shuffles whose constants spill beside GELU's. Zen 3 VM, one
/// process alternating with the portable blocks (convert_map), best ns per element: one thread,
/// 64x4096, gelu 0.814 -> 0.702, silu 0.709 -> 0.605; 2 threads, 16384x4096 (memory), gelu
/// 0.384 -> 0.350, silu 0.375 -> 0.315. Two cache lines (eight registers) together rather than
/// one (map_line_registers in pairs, registers_together), one thread, 16384 values in L2, the
/// builds alternated twice, best us: gelu 10.43 -> 8.56, silu 9.94 -> 8.25, GELU's erf form
/// 16.15 -> 13.94; bias_gelu rows of 768 11.04 -> 9.02, of 4096 10.97 -> 9.00, of 32768 20.96
/// -> 17.11. From memory (2 threads, --quick) within the noise: they stay near 0.4 of the
/// paired roof there, streamed or not.
template <class T>
inline constexpr bool activation_pairs =
#if defined(ROOFTOP_HAS_AVX2_LANES)
    std::is_same_v<T, bf16>;
#else
    false;
#endif

/// y(i) = f(x(i)) for contiguous rank-1 x and y of T on an AVX-512 or AVX2 host, a register of
/// lanes at a time (F::lanes; map_line_registers), in 32 KB chunks, streamed where `stores` and the size
/// say so; false, and nothing done, where a View is strided. Against map_inputs' path (GCC's
/// vectorization of the portable functions), one process alternating, 2 threads, Zen 5 VM,
/// median GB/s: gelu bf16 2^26 22 -> 31, silu bf16 26 -> 35, gelu fp32 2^18 (in L2) 70-72 ->
/// 75-76, 2^25 36 -> 37 (memory); one thread in L1, 7.8 against 8.9 cycles per sixteen fp32.
/// AVX2 lanes, Zen 3 VM, one thread, 64x4096 (in L3), min of six alternations, ns per element:
/// gelu fp32 0.43 -> 0.40, fp16 0.53 -> 0.46; silu fp32 0.35 -> 0.32, fp16 0.45 -> 0.39 (bf16:
/// see activation_lanes_pay).
template <Stores stores, class Exec, class X, class Y, class F>
bool map_lanes(const char* label, const Exec& exec, const X& x, const Y& y, const F& f) {
  using T = typename Y::value_type;
  if (x.stride(0) != 1 || y.stride(0) != 1) return false;
  const T* const in = x.data();
  T* const out = y.data();
  const auto n = static_cast<std::int64_t>(y.extent(0));
  auto run = [&](auto streaming) {
    constexpr bool streamed = decltype(streaming)::value;
    for_each_chunk<T, streamed>(label, exec, n, [=](const std::int64_t lo, const std::int64_t hi) {
      const T* const from = in + lo;
      auto one = [&](const std::int64_t j) { return f(float(from[j])); };
      // Several registers at a time (four on AVX2 hosts, on AVX-512 hosts four or eight: see
      // step_registers and long_step_registers), computed together (F::lanes of an array, see
      // cpu::times_sigmoid_of_exp2), bias_gelu's rows likewise. Against a register at a time
      // (on AVX2 bf16 a pair), Zen 3 VM: one thread, 16384 values (in L2), best us: gelu fp32
      // 7.2 -> 6.7, bf16 11.2 -> 9.9, fp16 8.0 -> 7.1; silu fp32 and bf16 unchanged, fp16 6.8
      // -> 6.2; bias_gelu 4-15% less. 2 threads,
      // the harness's main-memory sizes, the builds alternated three times, GB/s: gelu bf16
      // 10.4-11.5 -> 12.7-12.8 (fp32 and fp16 within the noise), silu fp16 15.7-16.0 ->
      // 17.1-20.6, bias_gelu fp32 rows of 4096 and 32768 21.6-24.4 -> 27.0-34.9, bf16
      // 10.2-10.9 -> 10.6-12.7, fp16 11.2-14.5 -> 13.1-17.1. On AVX-512 (Zen 5 VM), one
      // thread in L2: gelu 6-10%, silu 4-11%, GELU's erf form 17-23% less time; from memory
      // the erf form's bf16/fp16 1.3x (docs/kernels.md has the figures).
#if defined(ROOFTOP_HAS_AVX2_LANES)
      if constexpr (activation_pairs<T>) {
        return map_line_registers<streamed, registers_together<F, T>, true>(
            out + lo, hi - lo,
            [&](const std::int64_t j, auto& v) {
              load_pair_lines(from + j, v);
              F::lanes(v);
            },
            one);
      }
#endif
      map_line_registers<streamed, registers_together<F, T>>(
          out + lo, hi - lo,
          [&](const std::int64_t j, auto& v) {
            // The input prefetch_distance ahead: the hardware prefetcher alone fell behind
            // while the core computed. Granite Rapids VM, 2 threads, a scratch program, 2 x 10^8
            // values from memory, best of 6, two alternations, GB/s: gelu fp32 26.9-27.7 ->
            // 33.4-34.5, bf16 16.2-17.6 -> 23.2-24.4; silu fp32 28.0-28.2 -> 31.4-32.5, bf16
            // 17.4-18.8 -> 25.1-25.3 (relu, not through here, 33.4-34.6).
            cpu::prefetch_ahead(from + j, registers_of<decltype(v)> * cpu::float_lanes);
            for (int u = 0; u < registers_of<decltype(v)>; ++u) v[u] = cpu::load_floats(from + j + cpu::float_lanes * u);
            F::lanes(v);
          },
          one);
    });
  };
  if (stores == Stores::streamed_when_large && host_streams<Exec> && streams<T>(n)) {
    run(std::true_type{});
  } else {
    run(std::false_type{});
  }
  return true;
}
#endif

/// What every elementwise activation requires of its rank-1 x and y.
template <class Exec, class X, class Y>
void require_map_args(const char* op, const X& x, const Y& y) {
  mandate_input<Exec, X, 1>();
  mandate_output<Exec, Y, 1>();
  mandate_fp32_math<X, Y>();
  require_elementwise(op, "x", x, "y", y);
}

/// y(i) = f(x(i)) in fp32 for rank-1 x, y already checked (require_map_args), large outputs
/// written as elementwise_stores says.
template <Work work, class Exec, class X, class Y, class F>
void map_checked(const char* label, const Exec& exec, const X& x, const Y& y, const F& f) {
  using T = typename Y::value_type;
#if defined(ROOFTOP_HAS_ACTIVATION_LANES)
  if constexpr (on_host<Exec> && has_lanes<F> && (activation_lanes_pay<T> || activation_pairs<T>) &&
                std::is_same_v<typename X::non_const_value_type, T>) {
    if (map_lanes<elementwise_stores<work, T>()>(label, exec, x, y, f)) return;
  }
#endif
  map_inputs<elementwise_stores<work, T>()>(label, exec, y, KOKKOS_LAMBDA(const std::int64_t, const float v) { return f(v); }, x);
}

/// y(i) = f(x(i)) in fp32 for rank-1 x, y: require_map_args, then map_checked.
template <Work work, class Exec, class X, class Y, class F>
void map_elements(const char* label, const char* op, const Exec& exec, const X& x, const Y& y, const F& f) {
  require_map_args<Exec>(op, x, y);
  map_checked<work>(label, exec, x, y, f);
}

/// Whether a row functor G splits on the host into g.value(v) per element and g.stage(in, out,
/// c, count) over each block of a row's values (see convert_map).
template <class G, class = void>
inline constexpr bool has_stage = false;
template <class G>
inline constexpr bool has_stage<G, std::void_t<decltype(&G::stage)>> = true;

/// Whether the row functor G (of map_rows_with_bias) computes registers of columns on an
/// AVX-512 or AVX2 host: G::row_lanes, with g.lanes(cols) returning (v, c) -> nothing, which
/// replaces the cpu::Floats v[U] (any U), the sums x + bias of columns [c, c + U
/// cpu::float_lanes), by their values, computed together, bit for bit g(v, c).
template <class G, class = void>
inline constexpr bool has_row_lanes = false;
template <class G>
inline constexpr bool has_row_lanes<G, std::void_t<decltype(G::row_lanes)>> = G::row_lanes;

/// Whether the row functor G (of map_rows_with_bias) computes its registers without regard to
/// the columns (G::pair_lanes, with G::lanes_of(v) of an array of registers, computed
/// together), so that it may take them in pairs of registers (activation_pairs, AVX2 hosts).
template <class G, class = void>
inline constexpr bool has_pair_lanes = false;
template <class G>
inline constexpr bool has_pair_lanes<G, std::void_t<decltype(G::pair_lanes)>> = G::pair_lanes;

/// Whether the row functor G (of map_rows_with_bias) writes a row on the host in blocks of
/// registers, two loops over each (G::block_lanes, AVX2 hosts: see GeluDropout), through
/// g.lanes_in_blocks(in, bias, out, cols).
template <class G, class = void>
inline constexpr bool has_block_lanes = false;
template <class G>
inline constexpr bool has_block_lanes<G, std::void_t<decltype(G::block_lanes)>> = G::block_lanes;

/// From how many elements (rows x cols) host rows of T (bf16 or fp16) computed in lanes take a
/// float copy of their bias (map_rows_with_bias): the copy costs about 2 us a call (allocation,
/// widening, the threads' wait for it); below these sizes each register of a row widening its
/// part of the bias costs less (fp16's widening is a vcvtph2ps, bf16's a shift). 2 threads, Zen
/// 4 VM, rows of 4096, one process alternating with the copy at every size (medians of 21
/// timings of 50 calls), speedup without it: 2 rows bias_gelu 2.18-2.25x, bias_gelu_dropout
/// 1.93-2.03x; 8 rows 1.38-1.44x, 1.22-1.33x; 32 rows (2^17) bf16 1.11x, 1.07x, fp16 1.04x,
/// 1.01x; 127 rows bf16 1.06x, 0.99x, fp16 0.96x, 0.91x. Built for AVX2 (-march=znver3), where of
/// these only fp16 bias_gelu takes the copy: 2 rows 2.10x, 8 rows 1.29x, 31 rows 1.11x.
template <class T>
inline constexpr std::int64_t widened_bias_from = std::int64_t{1} << (std::is_same_v<T, fp16> ? 17 : 19);

/// y(r, c) = f.row(r)(x(r, c) + bias(c), c) in fp32 for (rows, cols) x, y and (cols) bias
/// (f.row(r) holds what is fixed along row r); `light` (bias_add) and rows written by block
/// lanes: streamed as light_op_stores says, else plain stores (see elementwise_stores).
template <bool light, class Exec, class X, class B, class Y, class F>
void map_rows_with_bias(const char* label, const char* op, const Exec& exec, const X& x, const B& bias, const Y& y,
                        const F& f) {
  mandate_input<Exec, X, 2>();
  mandate_input<Exec, B, 1>();
  mandate_output<Exec, Y, 2>();
  using T = typename Y::value_type;
  mandate_fp32_math<X, B, Y>();
  require_elementwise(op, "x", x, "y", y);
  ROOFTOP_REQUIRE(bias.extent(0) == x.extent(1), op, "x is ", shape_of(x), " but bias is ", shape_of(bias),
                  " (expected ", x.extent(1), ")");
  require_apart(op, "bias", bias, "y", y);
  const auto cols = static_cast<std::int64_t>(x.extent(1));
  // Contiguous rows on the host: a register of columns at a time where the row functor has
  // lanes (AVX-512 and AVX2 hosts: bias_gelu; bias_gelu_dropout on AVX-512; plain stores), in
  // blocks of two register loops where it has block lanes (bias_gelu_dropout on AVX2), else
  // through convert_map where it converts T in blocks (2-byte types) or where f's rows have a
  // stage (dropout's mask).
  using G = std::decay_t<decltype(f.row(0))>;
  constexpr bool lanes_of_rows =
#if defined(ROOFTOP_HAS_ACTIVATION_LANES)
      on_host<Exec> && has_row_lanes<G> && activation_lanes_pay<T> && std::is_same_v<typename X::non_const_value_type, T> &&
      (std::is_same_v<typename B::non_const_value_type, T> || std::is_same_v<typename B::non_const_value_type, float>);
#else
      false;
#endif
  // A 2-byte bias of rows computed in lanes is widened once per call (widened_copy) where the
  // rows hold widened_bias_from<T> elements or more, so that each register of a row takes one fp32
  // load of it, not a load and its widening: these rows are bound by their arithmetic on
  // AVX-512 hosts. `rooftop --ops bias_gelu --dtypes bf16,fp16`, 2 threads, Zen 4 VM, three
  // alternations with the previous build, GB/s: in cache bf16 rows of 768 / 4096 29.1-29.4 /
  // 29.4-29.6 -> 30.4-30.5 / 30.8-30.9, fp16 27.5 / 27.6-27.7 -> 29.5-29.6 / 29.7-29.8, rows of
  // 32768 1-3% more; from memory (`--quick`) bf16 rows of 4096 and 32768 27.9-29.0 -> 30.4-31.0,
  // fp16 26.4-27.1 -> 28.0-29.2 (paired 0.55-0.63 -> 0.60-0.67).
  if constexpr (!light && lanes_of_rows && sizeof(T) == 2 && !std::is_same_v<typename B::non_const_value_type, float>) {
    if (x.extent(0) > 1 && static_cast<std::int64_t>(x.extent(0) * x.extent(1)) >= widened_bias_from<T>)
      return map_rows_with_bias<light>(label, op, exec, x, widened_copy(bias), y, f);
  }
  constexpr bool pairs_of_rows =
#if defined(ROOFTOP_HAS_ACTIVATION_LANES)
      on_host<Exec> && has_pair_lanes<G> && activation_pairs<T> && std::is_same_v<typename X::non_const_value_type, T> &&
      std::is_same_v<typename B::non_const_value_type, T>;
#else
      false;
#endif
  constexpr bool lanes_in_blocks =
#if defined(ROOFTOP_HAS_ACTIVATION_LANES)
      on_host<Exec> && has_block_lanes<G> && cpu::has_float_lanes<T> && std::is_same_v<typename X::non_const_value_type, T> &&
      std::is_same_v<typename B::non_const_value_type, T>;
#else
      false;
#endif
  // fp32 rows of lanes stream (large ones, the plan says): on AVX2 hosts as softmax's rows do
  // (Zen 3 VM, 2 threads, 2^25 fp32 values, a scratch program, best of six alternations, GB/s
  // plain -> streamed: rows of 768 24.9 -> 27.5, 4096 26.6 -> 29.6, 32768 24.4 -> 29.8 in one
  // run, within 3% either way in another), and on AVX-512 hosts since their lanes went four and
  // eight registers at a time (Zen 5 VM, the harness, 2 threads, --quick, two alternations in
  // a steady phase of the memory, paired fraction of the roof: bias_gelu rows of 768 0.79-0.82
  // -> 0.94-0.96, 4096 0.75-0.76 -> 0.93-0.94, 32768 0.74-0.76 -> 0.82-0.85;
  // bias_gelu_dropout 0.67-0.68 -> 0.83-0.85). 2-byte rows stream too where cpu::narrow
  // streams (AVX-512): plain stores read every output line first. Zen 5 VM, 2 threads, --quick,
  // three alternations in a slow phase of the memory (copy 53-58 GB/s), paired fraction:
  // bias_gelu bf16 / fp16 rows of 4096 0.75-0.77 / 0.70-0.75 -> 0.86-0.93 / 0.83-0.90, 32768
  // 0.58-0.74 / 0.69-0.72 -> 0.74-0.84 / 0.70-0.77, and (see light_op_stores) rows of 768
  // 35-54 / 38-41 -> 51-53 / 47-49 GB/s; bias_gelu_dropout, bound by its arithmetic, 33-37
  // GB/s either way. (In the twenty-seventh session, a run whose memory changed phase had left
  // it undecided.)
  constexpr bool lanes_stream = lanes_of_rows && (sizeof(T) >= 4 || cpu::streams_narrowed<T>);
  constexpr bool blocks = host_converts_all<Exec, T, X, B> || (on_host<Exec> && has_stage<G>);
  const bool contiguous = x.stride(1) == 1 && y.stride(1) == 1 && bias.stride(0) == 1;
  for_each_row(
      label, exec, static_cast<std::int64_t>(x.extent(0)),
      KOKKOS_LAMBDA(const RowTeam<Exec>& r) {
        const auto g = f.row(r.row);
        if (!contiguous || !(blocks || lanes_of_rows || pairs_of_rows || lanes_in_blocks)) {
          r.write(y, cols, [&](const std::int64_t c) { return g(float(x(r.row, c)) + float(bias(c)), c); });
          return;
        }
#if !defined(__CUDA_ARCH__)
#if defined(ROOFTOP_HAS_ACTIVATION_LANES)
        if constexpr (lanes_of_rows) {
          const T* const in = &x(r.row, 0);
          const auto* const b = bias.data();
          const auto lanes = g.lanes(cols);
          // x's lines prefetched a page ahead (cpu::prefetch_ahead): from rows of 8192 fp32
          // (bias over 32 KB, out of L1) the hardware prefetcher alone fell behind. Zen 5 VM, 2
          // threads, a scratch program calling bias_gelu over 2^25 fp32 / 2^26 bf16 values,
          // two runs, GB/s without -> with, rows of 4096 / 8192 / 32768: fp32 55-56 / 49-50 /
          // 48-50 -> 55 / 53-55 / 51-55, bf16 50-53 / 44-45 / 42 -> 53-54 / 53-54 / 53-54 (flat
          // gelu beside them 56-58); the harness, three alternations, rows of 32768 fp32 / bf16 /
          // fp16 49.5 / 41.5 / 39.3 -> 56.0 / 52.6 / 49.2, rows of 768 and 4096 within 2%;
          // built for AVX2 (-march=znver3) on that VM, fp32 rows of 4096-32768 41-48 -> 51-55.
          // Forced inline: with the fused chain's GELU and mask behind `lanes`, GCC 12 had left
          // this lambda out of line, its eight registers stored and reloaded through memory
          // (`perf annotate`). Zen 4 VM, one process alternating (medians of 15-21, outputs
          // identical), bias_gelu_dropout 8 x 4096 in L2, one thread: fp32 1.21x, bf16 1.14x,
          // fp16 1.18x (with dropout's one broadcast); 8192 x 4096, 2 threads: 1.10x, 1.18x, 1.19x.
          const auto registers = [&](const std::int64_t c, auto& v) __attribute__((always_inline)) {
            cpu::prefetch_ahead(in + c, cpu::float_lanes * registers_of<decltype(v)>);
            for (int u = 0; u < registers_of<decltype(v)>; ++u)
              v[u] = cpu::load_floats(in + c + cpu::float_lanes * u) + cpu::load_floats(b + c + cpu::float_lanes * u);
            lanes(v, c);
          };
          const auto scalar = [&](const std::int64_t c) { return g(float(in[c]) + float(b[c]), c); };
          if constexpr (lanes_stream) {
            if (r.stream) return map_line_registers<true, registers_together<G, T>>(&y(r.row, 0), cols, registers, scalar);
          }
          map_line_registers<false, registers_together<G, T>>(&y(r.row, 0), cols, registers, scalar);
          return;
        }
#if defined(ROOFTOP_HAS_AVX2_LANES)
        if constexpr (pairs_of_rows) {
          const T* const in = &x(r.row, 0);
          const T* const b = bias.data();
          map_line_registers<false, registers_together<G, T>, true>(
              &y(r.row, 0), cols,
              [&](const std::int64_t c, auto& s) {
                constexpr int U = registers_of<decltype(s)>;
                cpu::Floats w[U];
                load_pair_lines(in + c, s);
                load_pair_lines(b + c, w);
                for (int u = 0; u < U; ++u) s[u] += w[u];
                G::lanes_of(s);
              },
              [&](const std::int64_t c) { return g(float(in[c]) + float(b[c]), c); });
          return;
        }
#endif
        if constexpr (lanes_in_blocks) {
          g.lanes_in_blocks(&x(r.row, 0), bias.data(), &y(r.row, 0), cols, r.stream);
          return;
        }
#endif
        auto map = [&](auto streaming) {
          constexpr bool streamed = decltype(streaming)::value;
          if constexpr (blocks && has_stage<G>) {
            convert_map<streamed>(
                &y(r.row, 0), cols, [&](std::int64_t, const float v, const float b) { return g.value(v + b); },
                [&](auto... block) { g.stage(block...); }, &x(r.row, 0), bias.data());
          } else if constexpr (blocks) {
            convert_map<streamed>(&y(r.row, 0), cols,
                                  [&](const std::int64_t c, const float v, const float b) { return g(v + b, c); }, NoStage{},
                                  &x(r.row, 0), bias.data());
          }
        };
        // Streamed where the plan says so (light ops' large 2-byte outputs, cpu::streams_narrowed).
        if constexpr (cpu::streams_narrowed<T>) {
          if (r.stream) return map(std::true_type{});
        }
        map(std::false_type{});
#endif
      },
      plan_rows<Exec, light || lanes_in_blocks || lanes_stream ? light_op_stores<T>() : Stores::plain>(y));
}

// The functors' operator() are force-inlined: they are the body of every loop above, and in a
// large translation unit (a program calling many ops) GCC 12 left GeluTanh's out of line, one
// scalar call per element (fp32 gelu 5.4-6.0 instead of 0.47 ns per element, one thread).
struct Relu {
  KOKKOS_FORCEINLINE_FUNCTION float operator()(float v) const { return math::select((v > 0.0f) | (v != v), v, 0.0f); }
};
/// GELU's tanh form; SiLU below. On AVX2 hosts eight registers together (step_registers is
/// four there; the sixteen registers spill, but the chains overlap more). Zen 3 VM, one thread,
/// 16384 values in L2, the builds alternated twice, best us: gelu fp32 6.62 -> 6.25, fp16 7.71
/// -> 6.72, bf16 see activation_pairs; bias_gelu fp32 rows of 768 / 4096 / 32768 7.26 / 7.20 /
/// 13.69 -> 6.78 / 6.68 / 12.63, fp16 8.40 / 8.25 / 15.73 -> 7.47 / 7.26 / 13.77; silu fp32
/// 5.70 -> 5.49, fp16 6.61 -> 6.67 (bf16 see activation_pairs).
struct GeluTanh {
  KOKKOS_FORCEINLINE_FUNCTION float operator()(float v) const { return math::gelu_tanh(v); }
#if defined(ROOFTOP_HAS_ACTIVATION_LANES)
#if defined(ROOFTOP_HAS_AVX2_LANES)
  static constexpr int together = 8;
#endif
  [[gnu::always_inline]] static cpu::Floats lanes(cpu::Floats v) { return cpu::gelu_tanh(v); }
  template <int U>
  [[gnu::always_inline]] static void lanes(cpu::Floats (&v)[U]) { cpu::gelu_tanh(v); }
#endif
};
/// GELU's erf form; on AVX-512 and AVX2 hosts in lanes too (cpu::gelu_erf, bit for bit this).
/// Against GCC's vectorization of the portable form, Zen 3 VM, the harness's gelu_erf, the
/// builds alternated three times: one thread, 16384 values in L2, best ns per element, fp32
/// 1.45 -> 0.93, bf16 1.81 -> 1.27, fp16 1.69 -> 1.01 (the tanh form 0.39, 0.60, 0.43); 2
/// threads from memory (`--quick`), GB/s: fp32 9.3-10.6 -> 14.0-15.8, bf16 3.7-4.3 -> 5.7-6.2,
/// fp16 4.0-4.7 -> 6.6-7.6. Still bound by its arithmetic there: a division, a ten-term
/// polynomial and an exponential (math::gelu_erf), about twice the tanh form's work. Eight
/// registers together on AVX2 hosts too (their sixteen registers spill; long_step_registers
/// is four there): the chain is long enough that more of it in flight pays. Zen 3 VM, one
/// thread, 16384 values in L2, builds alternated twice, GB/s: fp32 10.66 -> 11.93-11.97,
/// bf16 4.11-4.12 -> 4.11-4.20.
struct GeluErf {
  KOKKOS_FORCEINLINE_FUNCTION float operator()(float v) const { return math::gelu_erf(v); }
#if defined(ROOFTOP_HAS_ACTIVATION_LANES)
  static constexpr int together = 8;
  [[gnu::always_inline]] static cpu::Floats lanes(cpu::Floats v) { return cpu::gelu_erf(v); }
  template <int U>
  [[gnu::always_inline]] static void lanes(cpu::Floats (&v)[U]) { cpu::gelu_erf(v); }
#endif
};
/// Calls f with the functor of the selected GELU form (chosen on the host, so each kernel
/// compiles one straight-line form).
template <class F>
void with_gelu(Gelu form, const F& f) {
  if (form == Gelu::tanh) {
    f(GeluTanh{});
  } else {
    f(GeluErf{});
  }
}
/// SiLU: eight registers together on AVX2 hosts, as GeluTanh (its figures are above).
struct Silu {
  KOKKOS_FORCEINLINE_FUNCTION float operator()(float v) const { return math::silu(v); }
#if defined(ROOFTOP_HAS_ACTIVATION_LANES)
#if defined(ROOFTOP_HAS_AVX2_LANES)
  static constexpr int together = 8;
#endif
  [[gnu::always_inline]] static cpu::Floats lanes(cpu::Floats v) { return cpu::silu(v); }
  template <int U>
  [[gnu::always_inline]] static void lanes(cpu::Floats (&v)[U]) { cpu::silu(v); }
#endif
};
#if defined(ROOFTOP_HAS_ACTIVATION_LANES)
template <>
inline constexpr bool has_lanes<GeluTanh> = true;
template <>
inline constexpr bool has_lanes<Silu> = true;
template <>
inline constexpr bool has_lanes<GeluErf> = true;
#endif
struct Identity {
  KOKKOS_FORCEINLINE_FUNCTION float operator()(float v) const { return v; }
};
/// A function of the value alone, for map_rows_with_bias.
template <class F>
struct Pointwise {
  F f;
  KOKKOS_INLINE_FUNCTION const Pointwise& row(std::int64_t) const { return *this; }
  KOKKOS_FORCEINLINE_FUNCTION float operator()(float v, std::int64_t) const { return f(v); }
#if defined(ROOFTOP_HAS_ACTIVATION_LANES)
  /// On an AVX-512 or AVX2 host where F has lanes: F's values of the registers, together (see
  /// has_row_lanes; the column does not matter, see has_pair_lanes).
  static constexpr bool row_lanes = has_lanes<F>;
  static constexpr bool pair_lanes = has_lanes<F>;
  auto lanes(std::int64_t) const {
    return [](auto& v, std::int64_t) __attribute__((always_inline)) { F::lanes(v); };
  }
  template <int U>
  [[gnu::always_inline]] static void lanes_of(cpu::Floats (&v)[U]) { F::lanes(v); }
#endif
};

#if defined(ROOFTOP_HAS_ACTIVATION_LANES)
/// A pointwise row functor's registers go together as its function's do.
template <class F, class T>
inline constexpr int registers_together<Pointwise<F>, T, void> = registers_together<F, T>;
#endif

/// Elementwise cost over n elements of T: `flops` each; read x, write y.
template <class T>
constexpr Cost unary_cost(std::int64_t n, double flops) { return {flops * n, bytes_of<T>(2.0 * n)}; }
/// Row-wise bias op over (rows, cols) of T: `flops` each; read x and bias, write y.
template <class T>
constexpr Cost bias_cost(std::int64_t rows, std::int64_t cols, double flops) {
  return {flops * rows * cols, bytes_of<T>(2.0 * rows * cols + cols)};
}
#if defined(ROOFTOP_HAS_WHOLE_LINES)
#define ROOFTOP_HAS_RELU_BITS 1
ROOFTOP_AVX512_WARNINGS_OFF
/// relu over n contiguous 2-byte values on an AVX2 or AVX-512 host, on their bits: a value whose
/// sign bit is set and that is not NaN becomes +0, the others stay. The same values as
/// T(Relu{}(float(v))), widening and narrowing being exact for them, without converting: 32
/// values per cache line of out with AVX-512BW, 16 per half line with AVX2 (map_whole_lines),
/// in 32 KB chunks, streamed where `streamed`. Against map_inputs' path (widened, compared,
/// narrowed in blocks), 2 threads, 2^26 values, GB/s: Zen 5 VM, one process, median, bf16
/// 66-67 -> 79-83 (copy beside it: 81); Zen 3 VM (AVX2), two binaries alternated three times,
/// best, bf16 17.6-24.0 -> 36.4-42.4, fp16 19.5-27.8 -> 36.3-38.6 (copy 37-48).
template <class T, class Exec>
void relu_bits(const Exec& exec, const T* in, T* out, std::int64_t n, bool streamed) {
  static_assert(sizeof(T) == 2, "relu_bits: bf16 or fp16");
  constexpr short infinity_bits = std::is_same_v<T, bf16> ? 0x7f80 : 0x7c00;
  auto run = [&](auto streaming) {
    for_each_chunk<T, decltype(streaming)::value>("rooftop::relu", exec, n, [=](const std::int64_t lo, const std::int64_t hi) {
      const T* const x = in + lo;
      map_whole_lines<decltype(streaming)::value>(
          out + lo, hi - lo,
          [&](const std::int64_t j) {
#if defined(__AVX512BW__) && defined(ROOFTOP_HAS_STREAM_VECTORS)
            const __m512i v = _mm512_loadu_si512(x + j);
            const __mmask32 keep = ~_mm512_movepi16_mask(v) |
                                   _mm512_cmpgt_epu16_mask(_mm512_and_si512(v, _mm512_set1_epi16(0x7fff)), _mm512_set1_epi16(infinity_bits));
            return _mm512_maskz_mov_epi16(keep, v);
#else
            // The magnitude's bits compare as a signed 16-bit number (its sign bit is clear).
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + j));
            const __m256i nan = _mm256_cmpgt_epi16(_mm256_and_si256(v, _mm256_set1_epi16(0x7fff)), _mm256_set1_epi16(infinity_bits));
            const __m256i negative = _mm256_srai_epi16(v, 15);
            return _mm256_andnot_si256(_mm256_andnot_si256(nan, negative), v);
#endif
          },
          [&](const std::int64_t j) { return Relu{}(float(x[j])); });
    });
  };
  if (streamed) {
    run(std::true_type{});
  } else {
    run(std::false_type{});
  }
}
ROOFTOP_AVX512_WARNINGS_ON
#endif
}  // namespace detail

// FLOPs per element counted by the cost models: the arithmetic of the formula, with exp, erf
// and a division counted as one each (what the roofline compares is bytes, these ops being far
// left of the ridge point).

// ---- relu ------------------------------------------------------------------------------------

/// y = max(x, 0) (NaN stays NaN). Throws rooftop::Error if the extents differ.
template <class Exec, class X, class Y>
void relu(const Exec& exec, const X& x, const Y& y) {
  detail::require_map_args<Exec>("relu", x, y);
#if defined(ROOFTOP_HAS_RELU_BITS)
  using T = typename Y::value_type;
  if constexpr (detail::on_host<Exec> && (std::is_same_v<T, bf16> || std::is_same_v<T, fp16>) &&
                std::is_same_v<typename X::non_const_value_type, T>) {
    if (x.stride(0) == 1 && y.stride(0) == 1) {
      const auto n = static_cast<std::int64_t>(y.extent(0));
      // Streamed when large, as copy is: no conversion bounds this loop.
      detail::relu_bits(exec, x.data(), y.data(), n, detail::streams<T>(n));
      return;
    }
  }
#endif
  detail::map_checked<detail::Work::light>("rooftop::relu", exec, x, y, detail::Relu{});
}
template <class X, class Y>
void relu(const X& x, const Y& y) { relu(typename Y::execution_space{}, x, y); }

/// Cost of relu over n elements of T: one comparison each; read x, write y.
template <class T>
constexpr Cost relu_cost(std::int64_t n) { return detail::unary_cost<T>(n, 1); }

// ---- gelu ------------------------------------------------------------------------------------

/// y = GELU(x), tanh form (default) or erf form. Throws rooftop::Error if the extents differ.
template <class Exec, class X, class Y>
on_exec_space_t<Exec> gelu(const Exec& exec, const X& x, const Y& y, Gelu form = Gelu::tanh) {
  detail::with_gelu(form, [&](auto g) {
    constexpr auto work = std::is_same_v<decltype(g), detail::GeluTanh> ? detail::Work::exp : detail::Work::heavy;
    detail::map_elements<work>("rooftop::gelu", "gelu", exec, x, y, g);
  });
}
template <class X, class Y>
void gelu(const X& x, const Y& y, Gelu form = Gelu::tanh) { gelu(typename Y::execution_space{}, x, y, form); }

namespace detail {
/// GELU's FLOPs per element: tanh form 8 (3 for the cubic, 2 scalings, exp, add, divide), erf
/// form 5 (0.5 x (1 + erf(x / sqrt 2)): 3 multiplies, erf, add).
constexpr double gelu_flops(Gelu form) { return form == Gelu::tanh ? 8 : 5; }
}  // namespace detail

/// Cost of gelu over n elements of T: detail::gelu_flops(form) FLOPs each; read x, write y.
template <class T>
constexpr Cost gelu_cost(std::int64_t n, Gelu form = Gelu::tanh) { return detail::unary_cost<T>(n, detail::gelu_flops(form)); }

// ---- silu ------------------------------------------------------------------------------------

/// y = x * sigmoid(x). Throws rooftop::Error if the extents differ.
template <class Exec, class X, class Y>
void silu(const Exec& exec, const X& x, const Y& y) {
  detail::map_elements<detail::Work::exp>("rooftop::silu", "silu", exec, x, y, detail::Silu{});
}
template <class X, class Y>
void silu(const X& x, const Y& y) { silu(typename Y::execution_space{}, x, y); }

/// Cost of silu over n elements of T: 4 FLOPs each (negate, exp, add, divide); read x, write y.
template <class T>
constexpr Cost silu_cost(std::int64_t n) { return detail::unary_cost<T>(n, 4); }

// ---- bias_add --------------------------------------------------------------------------------

/// y(r, c) = x(r, c) + bias(c) for (rows, cols) x and y, (cols) bias. Throws rooftop::Error if
/// the extents do not match.
template <class Exec, class X, class B, class Y>
void bias_add(const Exec& exec, const X& x, const B& bias, const Y& y) {
  detail::map_rows_with_bias<true>("rooftop::bias_add", "bias_add", exec, x, bias, y,
                             detail::Pointwise<detail::Identity>{{}});
}
template <class X, class B, class Y>
void bias_add(const X& x, const B& bias, const Y& y) { bias_add(typename Y::execution_space{}, x, bias, y); }

/// Cost of bias_add over (rows, cols) of T: one add each; read x and bias, write y.
template <class T>
constexpr Cost bias_add_cost(std::int64_t rows, std::int64_t cols) { return detail::bias_cost<T>(rows, cols, 1); }

// ---- bias_gelu -------------------------------------------------------------------------------

/// y(r, c) = GELU(x(r, c) + bias(c)) in one pass. Throws rooftop::Error if the extents do not
/// match.
template <class Exec, class X, class B, class Y>
on_exec_space_t<Exec> bias_gelu(const Exec& exec, const X& x, const B& bias, const Y& y, Gelu form = Gelu::tanh) {
  detail::with_gelu(form, [&](auto g) {
    detail::map_rows_with_bias<false>("rooftop::bias_gelu", "bias_gelu", exec, x, bias, y, detail::Pointwise<decltype(g)>{g});
  });
}
template <class X, class B, class Y>
void bias_gelu(const X& x, const B& bias, const Y& y, Gelu form = Gelu::tanh) {
  bias_gelu(typename Y::execution_space{}, x, bias, y, form);
}

/// Cost of bias_gelu over (rows, cols) of T: the add plus GELU's FLOPs for `form`
/// (detail::gelu_flops); read x and bias, write y.
template <class T>
constexpr Cost bias_gelu_cost(std::int64_t rows, std::int64_t cols, Gelu form = Gelu::tanh) {
  return detail::bias_cost<T>(rows, cols, 1 + detail::gelu_flops(form));
}

}  // namespace rooftop
