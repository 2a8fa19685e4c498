// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Host row kernels' vector output: a row of fp32, bf16 or fp16 streamed a cache line at a time
/// as its values come out of AVX-512 or AVX2 code (stream_vectors), for the row ops that
/// compute in vector registers (kernels/softmax.hpp, kernels/norm.hpp through
/// RowTeam::vector_stream_row).
#pragma once

#include "avx512_warnings.hpp"
#include "convert.hpp"
#include "streaming_store.hpp"

#include <cstdint>
#include <type_traits>

namespace rooftop::cpu {

#if defined(ROOFTOP_HAS_AVX512_CONVERT) && defined(ROOFTOP_HAS_STREAMING_STORES)
#define ROOFTOP_HAS_STREAM_VECTORS 1
#endif

#if defined(ROOFTOP_HAS_STREAM_VECTORS) || (defined(ROOFTOP_HAS_AVX2_LANES) && defined(ROOFTOP_HAS_WHOLE_LINES))
/// A cache line of a 2-byte T converted whole in registers, both ways (AVX-512 and AVX2 hosts):
/// core/parallel.hpp's stream_lines, for the elementwise ops whose inputs are out's type.
#define ROOFTOP_HAS_LINE_CONVERT 1
ROOFTOP_AVX512_WARNINGS_OFF
/// Streams the 64-byte line out (aligned) of a 2-byte T: the 32 floats at values (aligned,
/// just stored: load_stored_floats) narrowed as cpu::narrow does (narrow32 with AVX-512, two
/// narrow16 with AVX2).
template <class T>
[[gnu::always_inline]] inline void stream_narrowed_line(T* out, const float* values) {
  static_assert(sizeof(T) == 2, "stream_narrowed_line: bf16 or fp16");
#if defined(ROOFTOP_HAS_STREAM_VECTORS)
  _mm512_stream_si512(reinterpret_cast<__m512i*>(out), narrow32<T>(load_stored_floats(values), load_stored_floats(values + 16)));
#else
  store_bits<true>(out, narrow16<T>(_mm256_load_ps(values), _mm256_load_ps(values + 8)));
  store_bits<true>(out + 16, narrow16<T>(_mm256_load_ps(values + 16), _mm256_load_ps(values + 24)));
#endif
}

/// The 32 values of a 2-byte T at in (unaligned) as floats into w (aligned).
template <class T>
[[gnu::always_inline]] inline void widen_line(const T* in, float* w) {
  static_assert(sizeof(T) == 2, "widen_line: bf16 or fp16");
  for (int q = 0; q < 32; q += static_cast<int>(float_lanes)) store_floats(w + q, load_floats(in + q));
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

#if defined(ROOFTOP_HAS_FLOAT_LANES) && defined(ROOFTOP_HAS_WHOLE_LINES)
/// Row kernels' vector code on AVX-512 and AVX2 hosts (stream_vectors below,
/// RowTeam::vector_stream_row).
#define ROOFTOP_HAS_VECTOR_ROWS 1
ROOFTOP_AVX512_WARNINGS_OFF
/// Nothing beside each line (stream_bits' default).
struct NothingBeside {
  void operator()(std::int64_t, std::int64_t) const {}
};

/// The integer register as wide as Floats (the bits stream_bits stores).
using FloatBits = decltype(float_bits(splat(0.0f)));
/// G registers, one for each of G rows written side by side (stream_rows_bits). Not a
/// std::array: a vector type as a template argument loses its attributes, and GCC warns.
template <int G>
struct RowFloats {
  Floats v[G];
  [[gnu::always_inline]] Floats& operator[](int g) { return v[g]; }
  [[gnu::always_inline]] const Floats& operator[](int g) const { return v[g]; }
};
template <int G>
struct RowBits {
  FloatBits v[G];
  [[gnu::always_inline]] FloatBits& operator[](int g) { return v[g]; }
  [[gnu::always_inline]] const FloatBits& operator[](int g) const { return v[g]; }
};

/// out[c, c + per register) from bits(c), the bits of those values of T as an integer register
/// as wide as Floats, for c = 0, per register, ..., n - per register, each cache line streamed
/// as soon as its values are computed, with the lines of `ahead` at the same elements
/// prefetched into L2: out line-aligned, n a whole number of lines. beside(c, count) runs
/// before the line of elements [c, c + count) is computed: other work interleaved line by
/// line, so that the core computes while the line goes out (softmax_exp_sum_streaming). The
/// caller fences. `streamed` false writes the same lines with plain stores, for outputs that
/// should stay in cache (the row runs of small outputs). stream_rows_bits does the same for G
/// rows of n values side by side, bits(c) giving the G rows' registers at c (RowBits), so that
/// what the rows share (a norm's weight and bias) is loaded once per line of each.
template <int G, class T, class Bits, class Beside = NothingBeside>
[[gnu::always_inline]] inline void stream_rows_bits(T* const* out, std::int64_t n, const Prefetch& ahead, const Bits& bits,
                                                    const Beside& beside = {}, bool streamed = true) {
  constexpr std::int64_t line = 64 / static_cast<std::int64_t>(sizeof(T));
  constexpr std::int64_t per_store = static_cast<std::int64_t>(sizeof(Floats) / sizeof(T));
  for (std::int64_t c = 0; c < n; c += line) {
    ahead.lines(c * ahead.element_bytes, (c + line) * ahead.element_bytes);
    beside(c, line);
    for (std::int64_t q = 0; q < line; q += per_store) {
      const auto registers = bits(c + q);
      for (int g = 0; g < G; ++g) {
        if (streamed) {
          store_bits<true>(out[g] + c + q, registers[g]);
        } else {
          store_bits<false>(out[g] + c + q, registers[g]);
        }
      }
    }
  }
}
template <class T, class Bits, class Beside = NothingBeside>
[[gnu::always_inline]] inline void stream_bits(T* out, std::int64_t n, const Prefetch& ahead, const Bits& bits,
                                               const Beside& beside = {}) {
  stream_rows_bits<1>(&out, n, ahead, [&](const std::int64_t c) { return RowBits<1>{{bits(c)}}; }, beside);
}
/// out[c, c + float_lanes) = T(f(c)) (f returns a Floats of fp32 values) for c = 0,
/// float_lanes, ..., n - float_lanes, a cache line streamed as soon as its values are computed
/// (fp32 values, or 2-byte ones narrowed as cpu::narrow does), with the lines of `ahead` at the
/// same elements prefetched into L2: out line-aligned, n a whole number of lines. The caller
/// fences. For row kernels whose vector code reads its inputs through raw pointers: through
/// stream_values' L1 buffer (a generic value(j) computed 64 at a time) the same rows ran
/// 15-20% slower (Zen 5 VM, 2 threads, 8192x4096 fp32, scratch program, three alternations,
/// GB/s: rmsnorm 45-46 -> 49-52 at 0.91-0.96 of a hand-written loop beside it, softmax 44 ->
/// 51-52; 16384x4096, bf16 / fp16: rmsnorm 27-31 / 25-29 -> 31-33 / 28-32, softmax 21-25 /
/// 21-24 -> 23-26 / 24-27). stream_vectors_rows: G rows side by side, f(c) giving the G rows'
/// Floats at c (RowFloats; see stream_rows_bits).
template <int G, class T, class F, class Beside = NothingBeside>
[[gnu::always_inline]] inline void stream_vectors_rows(T* const* out, std::int64_t n, const Prefetch& ahead, const F& f,
                                                       const Beside& beside = {}, bool streamed = true) {
  static_assert(has_float_lanes<T>, "stream_vectors: fp32, bf16 or fp16 outputs");
  stream_rows_bits<G>(out, n, ahead,
                      [&](const std::int64_t c) {
                        // (bits_of's two cases, each register of f's computed once for all rows)
                        const auto v = f(c);
                        RowBits<G> bits;
                        if constexpr (sizeof(T) == 4) {
                          for (int g = 0; g < G; ++g) bits[g] = float_bits(v[g]);
                        } else {
                          const auto hi = f(c + float_lanes);
                          for (int g = 0; g < G; ++g) bits[g] = narrow_bits<T>(v[g], hi[g]);
                        }
                        return bits;
                      },
                      beside, streamed);
}
template <class T, class F, class Beside = NothingBeside>
[[gnu::always_inline]] inline void stream_vectors(T* out, std::int64_t n, const Prefetch& ahead, const F& f, const Beside& beside = {},
                                                  bool streamed = true) {
  stream_vectors_rows<1>(&out, n, ahead, [&](const std::int64_t c) { return RowFloats<1>{{f(c)}}; }, beside, streamed);
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

}  // namespace rooftop::cpu
