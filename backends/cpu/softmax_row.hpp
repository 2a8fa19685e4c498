// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The passes of a host softmax row over contiguous fp32, bf16 or fp16 values (each widened as
/// it is loaded) before its output, with AVX-512 or AVX2
/// (kernels/softmax.hpp's softmax_row_vector, which then writes e / sum through
/// cpu::stream_vectors): the row max, then e = exp(x - max) kept in a scratch row and summed
/// in registers. The exponential is exp_vectors.hpp's (the same values as math::exp2_in_range,
/// bit for bit). One thread, 32x4096 fp32 in L2, Zen 5 VM: 0.203 -> 0.186 ns per element
/// against GCC's vectorization of the portable form.
#pragma once

#include "../../core/math.hpp"
#include "avx512_warnings.hpp"
#include "convert.hpp"
#include "exp_vectors.hpp"
#include "stream_vectors.hpp"

#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#if defined(ROOFTOP_HAS_EXP_VECTORS) && defined(ROOFTOP_HAS_AVX512_CONVERT)
#define ROOFTOP_HAS_AVX512_SOFTMAX 1
#define ROOFTOP_HAS_VECTOR_SOFTMAX 1
#endif

namespace rooftop::cpu {

#if defined(ROOFTOP_HAS_AVX512_SOFTMAX)
ROOFTOP_AVX512_WARNINGS_OFF
namespace detail {
/// The first `count` (1 to 16) values of T at p as floats, zeros after: a masked load of fp32,
/// 2-byte values widened one by one into a buffer (the tail of a row).
template <class T>
[[gnu::always_inline]] inline __m512 load_first(const T* p, std::int64_t count, __mmask16 mask) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm512_maskz_loadu_ps(mask, p);
  } else {
    alignas(64) float w[16] = {};
    for (std::int64_t i = 0; i < count; ++i) w[i] = float(p[i]);
    return _mm512_load_ps(w);
  }
}

#if defined(__AVX512FP16__)
#define ROOFTOP_HAS_FP16_MAX 1
/// The running max of fp16 values 32 at a time as they are, skipping NaN (vmaxph returns its
/// second operand where either is NaN, as vmaxps does), and its value as a float: a max is
/// exact in any precision, and one vmaxph does the work of two vcvtph2ps (two
/// micro-operations each) and two vmaxps (see LineMax).
struct Fp16Max {
  __m512h m = _mm512_castsi512_ph(_mm512_set1_epi16(static_cast<short>(0xfc00)));  // -Inf
  [[gnu::always_inline]] void add(const fp16* p) { m = _mm512_max_ph(_mm512_loadu_ph(p), m); }
  [[gnu::always_inline]] float result() const {
    const __m512i bits = _mm512_castph_si512(m);
    return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(bits)), _mm512_cvtph_ps(_mm512_extracti64x4_epi64(bits, 1))));
  }
};
#endif
}  // namespace detail

/// The largest of x[0, n) (fp32, bf16 or fp16, each value widened as it is loaded; with
/// AVX512-FP16 fp16 compared as it is, detail::Fp16Max), skipping NaN entries (as softmax's
/// detail::Max does); -Inf for an empty or all -Inf row.
template <class T>
inline float softmax_max(const T* x, std::int64_t n) {
#if defined(ROOFTOP_HAS_FP16_MAX)
  if constexpr (std::is_same_v<T, fp16>) {
    if (n >= 64) {
      detail::Fp16Max a, b;
      std::int64_t c = 0;
      for (; c + 64 <= n; c += 64) {
        a.add(x + c);
        b.add(x + c + 32);
      }
      const float m = std::max(a.result(), b.result());
      return c == n ? m : std::max(m, softmax_max(x + c, n - c));  // (the rest: n - c < 64)
    }
  }
#endif
  __m512 m[4];
  for (auto& v : m) v = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  std::int64_t c = 0;
  // vmaxps returns its second operand where either is NaN: the running max.
  for (; c + 64 <= n; c += 64)
    for (int k = 0; k < 4; ++k) m[k] = _mm512_max_ps(load16(x + c + 16 * k), m[k]);
  for (; c < n; c += 16) {
    const auto mask = static_cast<__mmask16>(n - c >= 16 ? 0xffff : (1u << (n - c)) - 1);
    m[0] = _mm512_mask_max_ps(m[0], mask, detail::load_first(x + c, n - c < 16 ? n - c : 16, mask), m[0]);
  }
  return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3])));
}

/// e[c] = 2^((x[c] - sub) log2(e) - offset) for c in [0, n) (softmax's detail::ExpMinusMax:
/// sub is 0 but for rows of very large magnitude), returning their sum; x fp32, bf16 or fp16
/// (widened as loaded), e 64-byte aligned.
template <class T>
inline float softmax_exp_sum(const T* x, float* e, std::int64_t n, float sub, float offset) {
  const __m512 log2e = _mm512_set1_ps(math::log2e), minus_offset = _mm512_set1_ps(-offset), shift = _mm512_set1_ps(sub);
  auto pass = [&](auto shifted) {
    auto exp_of = [&](const __m512 v) {
      return exp2_or_zero(_mm512_fmadd_ps(decltype(shifted)::value ? _mm512_sub_ps(v, shift) : v, log2e, minus_offset));
    };
    __m512 s[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    std::int64_t c = 0;
    for (; c + 32 <= n; c += 32)
      for (int k = 0; k < 2; ++k) {
        const __m512 v = exp_of(load16(x + c + 16 * k));
        _mm512_store_ps(e + c + 16 * k, v);
        s[k] = _mm512_add_ps(s[k], v);
      }
    for (; c < n; c += 16) {
      const auto mask = static_cast<__mmask16>(n - c >= 16 ? 0xffff : (1u << (n - c)) - 1);
      const __m512 v = _mm512_maskz_mov_ps(mask, exp_of(detail::load_first(x + c, n - c < 16 ? n - c : 16, mask)));
      _mm512_mask_store_ps(e + c, mask, v);
      s[0] = _mm512_add_ps(s[0], v);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s[0], s[1]));
  };
  // (x - 0 is x: the subtraction is left out of the rows that do not need it.)
  return sub == 0.0f ? pass(std::false_type{}) : pass(std::true_type{});
}

ROOFTOP_AVX512_WARNINGS_ON
#elif defined(ROOFTOP_HAS_AVX2_LANES) && defined(ROOFTOP_HAS_EXP_LANES)
#define ROOFTOP_HAS_VECTOR_SOFTMAX 1
// The same passes in eight lanes on AVX2 hosts; the elements after the last whole register
// (or block) go through a zero-padded register too, so every exponential is the vector one.

/// The largest of x[0, n) (fp32, bf16 or fp16, each value widened as it is loaded), skipping
/// NaN entries (as softmax's detail::Max does); -Inf for an empty or all -Inf row.
template <class T>
inline float softmax_max(const T* x, std::int64_t n) {
  const __m256 minus_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 m[4] = {minus_inf, minus_inf, minus_inf, minus_inf};
  std::int64_t c = 0;
  // vmaxps returns its second operand where either is NaN: the running max.
  for (; c + 32 <= n; c += 32)
    for (int k = 0; k < 4; ++k) m[k] = _mm256_max_ps(load8(x + c + 8 * k), m[k]);
  float rest = reduce_max(_mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3])));
  for (; c < n; ++c) {
    const float v = float(x[c]);
    rest = v > rest ? v : rest;
  }
  return rest;
}

/// e[c] = 2^((x[c] - sub) log2(e) - offset) for c in [0, n) (softmax's detail::ExpMinusMax),
/// returning their sum; x fp32, bf16 or fp16 (widened as loaded), e 32-byte aligned.
template <class T>
inline float softmax_exp_sum(const T* x, float* e, std::int64_t n, float sub, float offset) {
  const __m256 log2e = _mm256_set1_ps(math::log2e), minus_offset = _mm256_set1_ps(-offset), shift = _mm256_set1_ps(sub);
  auto pass = [&](auto shifted) {
    auto exp_of = [&](const __m256 v) {
      return exp2_or_zero(_mm256_fmadd_ps(decltype(shifted)::value ? _mm256_sub_ps(v, shift) : v, log2e, minus_offset));
    };
    __m256 s[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    std::int64_t c = 0;
    for (; c + 16 <= n; c += 16)
      for (int k = 0; k < 2; ++k) {
        const __m256 v = exp_of(load8(x + c + 8 * k));
        _mm256_store_ps(e + c + 8 * k, v);
        s[k] = _mm256_add_ps(s[k], v);
      }
    float rest = 0.0f;
    for (; c < n; c += 8) {
      alignas(32) float w[8] = {};
      const std::int64_t count = n - c < 8 ? n - c : 8;
      for (std::int64_t i = 0; i < count; ++i) w[i] = float(x[c + i]);
      _mm256_store_ps(w, exp_of(_mm256_load_ps(w)));
      for (std::int64_t i = 0; i < count; ++i) {
        e[c + i] = w[i];
        rest += w[i];
      }
    }
    return reduce_add(_mm256_add_ps(s[0], s[1])) + rest;
  };
  // (x - 0 is x: the subtraction is left out of the rows that do not need it.)
  return sub == 0.0f ? pass(std::false_type{}) : pass(std::true_type{});
}
#endif

#if defined(ROOFTOP_HAS_VECTOR_SOFTMAX) && defined(ROOFTOP_HAS_VECTOR_ROWS)
ROOFTOP_AVX512_WARNINGS_OFF
/// How far below the previous row's exponentials softmax_exp_sum_streaming may write a row's
/// (floats): a cache line of 2-byte outputs' values.
inline constexpr std::int64_t exp_row_shift = 32;

/// What softmax_exp_sum_streaming returns: the sum of this row's exponentials and the max of
/// the next row (-Inf where there is none).
struct SumAndNextMax {
  float sum, next_max;
};

/// The running max of a row of T (skipping NaN, as max_skipping_nan), 32 values (a line of a
/// 2-byte T) at a time: each widened as loaded, but with AVX512-FP16 a line of fp16 compared as
/// it is, one vmaxph for two vcvtph2ps (two micro-operations each) and two vmaxps (a max is
/// exact in any precision, and vmaxph skips NaN as vmaxps does). bf16 lines widen with one
/// permute per sixteen values (load16), as cheap as splitting them into their even and odd
/// values (a shift and an and per line: measured, no faster). softmax_exp_sum_streaming's next
/// row. Granite Rapids VM, 2 threads, the harness (`rooftop --quick --ops copy,softmax`), two
/// alternations with the build before, GB/s: fp16 rows of 768 38.8-39.5 -> 40.9-41.2, 4096
/// 39.0-39.5 -> 40.0-41.4, 32768 within noise (35.5-36.4); in cache (2M values, streamed) fp16
/// 1.08-1.10x; bf16 (split into even and odd) within noise.
template <class T>
struct LineMax {
  Floats m = splat(-std::numeric_limits<float>::infinity());
  [[gnu::always_inline]] void add(const T* p) {
    for (int q = 0; q < 32; q += static_cast<int>(float_lanes)) m = max_skipping_nan(load_floats(p + q), m);
  }
  [[gnu::always_inline]] float result() const { return reduce_max(m); }
};
#if defined(ROOFTOP_HAS_FP16_MAX)
template <>
struct LineMax<fp16> : detail::Fp16Max {};
#endif

/// softmax_exp_sum (the same exponentials into e and the same sum, for n a multiple of 16)
/// while the previous row's output goes out beside it and the next row's max is taken: out[c]
/// = TOut(prev[c] * scale) for c in [0, n), each cache line streamed (stream_vectors) as this
/// row's exponentials at the same elements are computed, and the max of next[0, n) (skipping
/// NaN, as softmax_max) loaded at the same elements, with the lines of `ahead` prefetched
/// (the caller points it a few KB ahead in next's row). On its own the output pass is bound by
/// the streaming stores and the exponentials by the core; side by side, each line's stores
/// drain while the core computes (kernels/softmax.hpp, softmax_row_runs), and the next row's
/// reads come in meanwhile, where a max pass of their own would leave the memory idle. next
/// null: no max (-Inf). out line-aligned, n a whole number of its lines; e and prev 64-byte
/// aligned, e either apart from prev or below it by a line of out's values or more (each
/// line's exponentials are written before that line's output is read: e = prev -
/// exp_row_shift writes the lines just read, still in L1). The caller fences; `streamed`
/// false writes out with plain stores (stream_vectors).
template <class T, class TOut>
inline SumAndNextMax softmax_exp_sum_streaming(const T* x, float* e, std::int64_t n, float sub, float offset, TOut* out,
                                               const float* prev, float scale, const T* next, const Prefetch& ahead,
                                               bool streamed = true) {
  const Floats log2e = splat(math::log2e), minus_offset = splat(-offset), shift = splat(sub), by = splat(scale);
  auto pass = [&](auto shifted, auto with_next) {
    // Registers alternate between two sums, as softmax_exp_sum's do. The next row's max a line
    // of 2-byte values at a time (LineMax) where out's lines are as long (else a register).
    constexpr bool by_line = sizeof(T) == 2 && sizeof(TOut) == 2;
    Floats s = splat(0.0f), t = splat(0.0f), m = splat(-std::numeric_limits<float>::infinity());
    LineMax<T> line_max;
    stream_vectors(
        out, n, ahead, [&](const std::int64_t c) { return *reinterpret_cast<const Floats*>(prev + c) * by; },
        [&](const std::int64_t c, const std::int64_t count) {
          for (std::int64_t q = c; q < c + count; q += float_lanes) {
            const Floats v = load_floats(x + q);
            const Floats z = exp2_or_zero(fmadd(decltype(shifted)::value ? v - shift : v, log2e, minus_offset));
            *reinterpret_cast<Floats*>(e + q) = z;
            s += z;
            std::swap(s, t);
            if constexpr (decltype(with_next)::value && !by_line) m = max_skipping_nan(load_floats(next + q), m);
          }
          if constexpr (decltype(with_next)::value && by_line) line_max.add(next + c);
        },
        streamed);
    return SumAndNextMax{reduce_add(s + t), by_line ? line_max.result() : reduce_max(m)};
  };
  auto with = [&](auto shifted) { return next ? pass(shifted, std::true_type{}) : pass(shifted, std::false_type{}); };
  return sub == 0.0f ? with(std::false_type{}) : with(std::true_type{});
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

}  // namespace rooftop::cpu
