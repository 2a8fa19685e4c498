// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Converting blocks between fp32 and the 2-byte storage types on the host, eight values per
/// instruction sequence: fp16 through F16C (vcvtph2ps, vcvtps2ph), bf16 through AVX2 integer
/// operations. GCC 12 vectorizes neither fp16 conversion (not rooftop's branch-free one, not
/// _Float16 casts) and vectorizes bf16's into about twice the instructions written here. On the
/// 2-core Zen 3 VM, one thread, a block loop widen -> f -> narrow over 8K elements in L1, ns
/// per element (scratch program, not in the project), element by element vs in blocks:
/// relu fp16 0.81 -> 0.105, bf16 0.33 -> 0.21; scale fp16 0.78 -> 0.06, bf16 0.29 -> 0.18;
/// gelu fp16 1.71 -> 0.49, bf16 0.93 -> 0.71 (fp32, for scale: relu 0.12, gelu 0.47).
/// Compiled for AVX-512, sixteen values at a time the same way (bf16 gelu 2^25 elements, 2
/// threads on the Zen 5 VM: 20-21 -> 29-30 GB/s; fp16 23 -> 37-38; see docs/kernels.md), and
/// bf16 narrowed by AVX512-BF16's vcvtneps2bf16 where the compiler targets it (2^25 elements,
/// 2 threads, Zen 5 VM, three alternations, GB/s: relu 40-44 -> 60-70, dropout 33-36 ->
/// 40-45, gelu 30 -> 33-34, bias_gelu_dropout 19.1-19.4 -> 20.4-20.9).
#pragma once

#include "../../core/types.hpp"
#include "avx512_warnings.hpp"

#include <cstdint>
#include <type_traits>

#if !defined(__CUDA_ARCH__) && (defined(__F16C__) || defined(__AVX2__))
#include <immintrin.h>
#endif
#if !defined(__CUDA_ARCH__) && defined(__F16C__) && defined(__AVX__)
#define ROOFTOP_HAS_F16C 1
#endif
#if !defined(__CUDA_ARCH__) && defined(__AVX2__)
#define ROOFTOP_HAS_AVX2_BF16 1
#endif
#if defined(ROOFTOP_HAS_F16C) && defined(ROOFTOP_HAS_AVX2_BF16) && defined(__AVX512F__)
#define ROOFTOP_HAS_AVX512_CONVERT 1
#endif

#if defined(ROOFTOP_HAS_AVX512_CONVERT)
ROOFTOP_AVX512_WARNINGS_OFF
#endif

namespace rooftop::cpu {

/// Whether narrow<T> converts eight values at a time (faster than element by element): fp16
/// where the compiler targets F16C, bf16 where it targets AVX2.
template <class T>
inline constexpr bool narrows_in_blocks =
#if defined(ROOFTOP_HAS_F16C)
    std::is_same_v<T, fp16> ||
#endif
#if defined(ROOFTOP_HAS_AVX2_BF16)
    std::is_same_v<T, bf16> ||
#endif
    false;

/// Whether large outputs of T are worth streaming stores (core/parallel.hpp's Stores): fp32
/// blocks narrowed together (narrow) and streamed out, where narrowing is one AVX-512
/// instruction sequence per sixteen values. bf16 at 2^26 / 2^25.4 elements, 2 threads, Zen 4
/// VM, three alternations, GB/s (share of the copy run beside it): relu 36-54 (0.75-0.81) ->
/// 48-51 (1.01-1.03), scale 36-39 -> 49-53, add 37-39 -> 44-49, triad 37-41 -> 45-50. With
/// AVX2's eight at a time (and more instructions for bf16) the conversions bound the loop and
/// streaming lost (bf16 scale, triad, relu on the Zen 3 VM: 0.81-0.89x): plain stores there.
/// (Those were blocks narrowed through L1; the STREAM ops, converted a line at a time in
/// registers, stream on AVX2 hosts as well: core/parallel.hpp's stream_op_stores.)
template <class T>
inline constexpr bool streams_narrowed =
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
    narrows_in_blocks<T>;
#else
    false;
#endif

/// Whether widening values of T into a buffer first (widen<T>) pays over converting each one
/// where it is read: fp16 with F16C. bf16 widens with one shift, which the compiler vectorizes
/// in place; going through a buffer lost 10-30% on bf16 sum, dot and max at 64 MB.
template <class T>
inline constexpr bool widens_in_blocks =
#if defined(ROOFTOP_HAS_F16C)
    std::is_same_v<T, fp16> ||
#endif
    false;

#if defined(ROOFTOP_HAS_AVX2_BF16)
namespace detail {
/// bf16::from_float of eight floats (add 0x7fff plus the lowest kept bit; NaN quieted): the
/// bf16 of each in the high half of its 32-bit lane. The path of registers holding a NaN
/// (any_nan); the others round in 16-bit lanes (round_words).
[[gnu::always_inline]] inline __m256i bf16_high(__m256 f) {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i lowest_kept = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lowest_kept);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(rounded, _mm256_or_si256(u, _mm256_set1_epi32(0x400000)), nan);
}
/// Whether a lane of a or of b is NaN: one compare for two registers, so that code narrowing
/// them can leave NaN's quieting to a branch rarely taken. The compare's sign bits read with
/// vmovmskps, not vtestps (Zen 1 VM, one thread, a scratch loop narrowing a bf16 LayerNorm
/// output in L1: 0.52-0.54 -> 0.49-0.51 ns per value; one micro-op on Intel cores where vtestps
/// takes two).
[[gnu::always_inline]] inline bool any_nan(__m256 a, __m256 b) {
  return _mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_UNORD_Q)) != 0;
}
/// bf16::from_float's rounding of sixteen floats without NaN, finished in 16-bit lanes:
/// `truncated` holds the high halves of their bits (each bf16 cut short), `dropped` the low
/// halves in the same lanes. Adding 0x7fff plus the lowest kept bit carries into the high half
/// exactly where dropped + lowest > 0x8000: a signed saturating add to dropped ^ 0x8000 and a
/// compare with zero give the carry as -1, subtracted (an overflow to the exponent's top is
/// Inf, as from_float's). Five instructions and no shift; rounding each half in 32-bit lanes
/// took four, a shift among them (vpsrld: one pipe on Zen 1), before the two were joined.
/// bf16_bits and merge_pairs on that VM (one thread, 4096 floats in L1, checked equal to the
/// 32-bit sequence over all 2^32 inputs): 0.276 -> 0.230 and 0.227 -> 0.183 ns per value.
[[gnu::always_inline]] inline __m256i round_words(__m256i truncated, __m256i dropped) {
  const __m256i lowest_kept = _mm256_and_si256(truncated, _mm256_set1_epi16(1));
  const __m256i over = _mm256_adds_epi16(_mm256_xor_si256(dropped, _mm256_set1_epi16(static_cast<short>(0x8000))), lowest_kept);
  return _mm256_sub_epi16(truncated, _mm256_cmpgt_epi16(over, _mm256_setzero_si256()));
}
/// bf16(f) for sixteen floats (lo the first eight), packed into sixteen 16-bit lanes in order.
/// One byte shuffle per register parts each 128-bit lane into its values' high halves and low
/// halves; the unpacks pair them for round_words, and one lane permute puts them in order.
/// (Registers with a NaN: rounded in 32-bit lanes, the high halves packed.)
inline __m256i bf16_bits(__m256 lo, __m256 hi) {
  if (__builtin_expect(any_nan(lo, hi), 0))
    return _mm256_permute4x64_epi64(_mm256_packus_epi32(_mm256_srli_epi32(bf16_high(lo), 16), _mm256_srli_epi32(bf16_high(hi), 16)), 0xd8);
  const __m256i halves = _mm256_setr_epi8(2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9, 12, 13,  //
                                          2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9, 12, 13);
  const __m256i l = _mm256_shuffle_epi8(_mm256_castps_si256(lo), halves);
  const __m256i h = _mm256_shuffle_epi8(_mm256_castps_si256(hi), halves);
  return _mm256_permute4x64_epi64(round_words(_mm256_unpacklo_epi64(l, h), _mm256_unpackhi_epi64(l, h)), 0xd8);
}
}  // namespace detail
#endif
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
namespace detail {
/// Sixteen bf16 values (the bits in v's 16-bit lanes) as floats, exactly: each moved into the
/// high half of its 32-bit lane. With AVX512-BW one vpermw with a zeroing mask; else widened
/// (vpmovzxwd) and shifted. The permute loads faster: a bf16 stencil sweep (406^3, 2 threads,
/// Zen 5 VM, scratch program calling rooftop::stencil, two runs of three) 27-30 -> 34-36 GB/s
/// (fp16 beside it 32-37), in L2 (64^3, one thread) 26.7-26.9 -> 27.8.
[[gnu::always_inline]] inline __m512 bf16_floats(__m256i v) {
#if defined(__AVX512BW__)
  const __m512i high_halves = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0,  // lane 2i + 1 <- value i
                                               7, 0, 6, 0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
  return _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau, high_halves, _mm512_castsi256_si512(v)));
#else
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
#endif
}

/// bf16(f) for sixteen floats, as detail::bf16_bits, packed into sixteen 16-bit lanes.
inline __m256i bf16_bits(__m512 f) {
#if defined(__AVX512BF16__) && defined(__AVX512DQ__)
  // AVX512-BF16's vcvtneps2bf16 rounds and quiets NaN the same way in one instruction (checked
  // against the sequence below over all 2^32 inputs), except that it flushes denormal inputs to
  // zero: sixteen values with a denormal among them take the sequence below.
  if (__builtin_expect(_mm512_fpclass_ps_mask(f, 0x20) == 0, 1)) return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(f));
#endif
  const __m512i u = _mm512_castps_si512(f);
  const __m512i lowest_kept = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lowest_kept);
  const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
  const __m512i bits = _mm512_mask_blend_epi32(nan, rounded, _mm512_or_si512(u, _mm512_set1_epi32(0x400000)));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16));
}
}  // namespace detail

/// Sixteen values of T from p (unaligned) as floats, exactly: fp32, bf16 or fp16.
template <class T>
[[gnu::always_inline]] inline __m512 load16(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm512_loadu_ps(p);
  } else if constexpr (std::is_same_v<T, bf16>) {
    return detail::bf16_floats(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  } else {
    static_assert(std::is_same_v<T, fp16>, "load16: fp32, bf16 or fp16");
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
}

/// Sixteen floats as T, packed into sixteen 16-bit lanes (bf16 or fp16): the bits of
/// narrow<T>.
template <class T>
[[gnu::always_inline]] inline __m256i narrow16(__m512 v) {
  if constexpr (std::is_same_v<T, bf16>) {
    return detail::bf16_bits(v);
  } else {
    static_assert(std::is_same_v<T, fp16>, "narrow16: bf16 or fp16");
    return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
}

/// Thirty-two floats as T (lo the first sixteen), packed into one 64-byte line: narrow16 of
/// each half. bf16 with AVX512-BF16: one vcvtne2ps2bf16 for both halves and one subnormal test
/// (narrow16 twice: two of each and a lane insert). One thread in L1, TSC cycles per sixteen
/// bf16 values of GELU: 6.9 -> 5.1. 2 threads, Zen 5 VM, 2^26 bf16, old and new builds
/// alternated twice, median GB/s: gelu 23-26 -> 28-29, silu 27-29 -> 32-34, dropout 28-30 ->
/// 31-32 (copy 46-47 beside them); bias_gelu_dropout 10922x4096 15-16 -> 16.
template <class T>
[[gnu::always_inline]] inline __m512i narrow32(__m512 lo, __m512 hi) {
#if defined(__AVX512BF16__) && defined(__AVX512DQ__)
  if constexpr (std::is_same_v<T, bf16>) {
    if (__builtin_expect((_mm512_fpclass_ps_mask(lo, 0x20) | _mm512_fpclass_ps_mask(hi, 0x20)) == 0, 1))
      return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
  }
#endif
  return _mm512_inserti64x4(_mm512_zextsi256_si512(narrow16<T>(lo)), narrow16<T>(hi), 1);
}

/// Stores sixteen floats at p (unaligned) as T: fp32, or narrowed as narrow16 does.
template <class T>
[[gnu::always_inline]] inline void store16(T* p, __m512 v) {
  if constexpr (std::is_same_v<T, float>) {
    _mm512_storeu_ps(p, v);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow16<T>(v));
  }
}

#if defined(__AVX512BW__) && defined(__AVX512VL__)
/// load16 of the lanes in m (the rest 0), reading only those: masked loads, which never fault
/// on the lanes left out.
template <class T>
[[gnu::always_inline]] inline __m512 load16(__mmask16 m, const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm512_maskz_loadu_ps(m, p);
  } else if constexpr (std::is_same_v<T, bf16>) {
    return detail::bf16_floats(_mm256_maskz_loadu_epi16(m, p));
  } else {
    static_assert(std::is_same_v<T, fp16>, "load16: fp32, bf16 or fp16");
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
}

/// store16 of the lanes in m, writing only those.
template <class T>
[[gnu::always_inline]] inline void store16(__mmask16 m, T* p, __m512 v) {
  if constexpr (std::is_same_v<T, float>) {
    _mm512_mask_storeu_ps(p, m, v);
  } else {
    _mm256_mask_storeu_epi16(p, m, narrow16<T>(v));
  }
}
#endif
#endif

#if !defined(ROOFTOP_HAS_AVX512_CONVERT) && defined(ROOFTOP_HAS_F16C) && defined(ROOFTOP_HAS_AVX2_BF16) && defined(__FMA__)
#define ROOFTOP_HAS_AVX2_LANES 1
/// Eight values of T from p (unaligned) as floats, exactly: fp32, bf16 or fp16 (AVX2 hosts).
template <class T>
[[gnu::always_inline]] inline __m256 load8(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm256_loadu_ps(p);
  } else if constexpr (std::is_same_v<T, bf16>) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  } else {
    static_assert(std::is_same_v<T, fp16>, "load8: fp32, bf16 or fp16");
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
}

/// Sixteen bf16 from p (unaligned) in one 256-bit load, as two registers of floats: its 32-bit
/// lanes each hold two values, so shifted up 16 bits they are the values at even positions
/// (p[0], p[2], ..., p[14]) and with their low halves cleared those at odd ones (AVX2 hosts).
/// Two instructions, where widening eight values in order takes a lane-crossing vpmovzxwd and
/// a shift. For code whose lanes do not interact, or that shifts them knowingly (stencil_row).
struct Bf16Pairs {
  __m256 even, odd;
};
[[gnu::always_inline]] inline Bf16Pairs load_pairs(const bf16* p) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return {_mm256_castsi256_ps(_mm256_slli_epi32(v, 16)), _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xffff0000u))))};
}
/// The bits of sixteen bf16 in order from the pairs' values (even, odd as load_pairs gives
/// them), each rounded as narrow<bf16> does: no pack or lane permute. Word blends (vpblendw)
/// join the even values' high halves shifted down with the odd ones' in place, and the odd
/// values' low halves shifted up with the even ones' in place, for detail::round_words.
[[gnu::always_inline]] inline __m256i merge_pairs(__m256 even, __m256 odd) {
  if (__builtin_expect(detail::any_nan(even, odd), 0))
    return _mm256_blend_epi16(_mm256_srli_epi32(detail::bf16_high(even), 16), detail::bf16_high(odd), 0xaa);
  const __m256i e = _mm256_castps_si256(even), o = _mm256_castps_si256(odd);
  return detail::round_words(_mm256_blend_epi16(_mm256_srli_epi32(e, 16), o, 0xaa),
                             _mm256_blend_epi16(e, _mm256_slli_epi32(o, 16), 0xaa));
}

/// Sixteen floats (lo the first eight) as T, packed into sixteen 16-bit lanes: the bits of
/// narrow<T> (AVX2 hosts).
template <class T>
[[gnu::always_inline]] inline __m256i narrow16(__m256 lo, __m256 hi) {
  if constexpr (std::is_same_v<T, bf16>) {
    return detail::bf16_bits(lo, hi);
  } else {
    static_assert(std::is_same_v<T, fp16>, "narrow16: bf16 or fp16");
    constexpr int rne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    return _mm256_set_m128i(_mm256_cvtps_ph(hi, rne), _mm256_cvtps_ph(lo, rne));
  }
}
#endif

#if defined(ROOFTOP_HAS_AVX512_CONVERT) || defined(ROOFTOP_HAS_AVX2_LANES)
#define ROOFTOP_HAS_FLOAT_LANES 1
/// Host vector code written once for AVX-512 and AVX2: the fp32 register (Floats: sixteen
/// lanes, or eight), loads of fp32, bf16 or fp16 into it (load_floats), and two registers' worth
/// of values as the bits of one integer register of T (bits_of: fp32 lo only; 2-byte T both,
/// narrowed as cpu::narrow does).
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
using Floats = __m512;
#else
using Floats = __m256;
#endif
inline constexpr std::int64_t float_lanes = sizeof(Floats) / sizeof(float);
/// Whether Floats code reads and writes T.
template <class T>
inline constexpr bool has_float_lanes = std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, fp16>;
template <class T>
[[gnu::always_inline]] inline Floats load_floats(const T* p) {
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  return load16(p);
#else
  return load8(p);
#endif
}
/// v as sixteen (AVX-512) or eight (AVX2) floats at p, aligned to a register.
[[gnu::always_inline]] inline void store_floats(float* p, Floats v) {
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  _mm512_store_ps(p, v);
#else
  _mm256_store_ps(p, v);
#endif
}
/// v in every lane.
[[gnu::always_inline]] inline Floats splat(float v) {
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  return _mm512_set1_ps(v);
#else
  return _mm256_set1_ps(v);
#endif
}
/// a * b + c, one rounding.
[[gnu::always_inline]] inline Floats fmadd(Floats a, Floats b, Floats c) {
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  return _mm512_fmadd_ps(a, b, c);
#else
  return _mm256_fmadd_ps(a, b, c);
#endif
}
#if !defined(ROOFTOP_HAS_AVX512_CONVERT)
namespace detail {
/// The eight lanes of v folded by op (a 128-bit _mm_add_ps or _mm_max_ps): the two halves,
/// then pairs, then the last two (reduce_add, reduce_max with AVX2).
template <class Op>
[[gnu::always_inline]] inline float fold_lanes(__m256 v, const Op& op) {
  __m128 s = op(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = op(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(op(s, _mm_movehdup_ps(s)));
}
}  // namespace detail
#endif
/// The sum of the lanes of v.
[[gnu::always_inline]] inline float reduce_add(Floats v) {
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  return _mm512_reduce_add_ps(v);
#else
  return detail::fold_lanes(v, [](__m128 a, __m128 b) { return _mm_add_ps(a, b); });
#endif
}
/// a > b ? a : b lane by lane, b where either is NaN (vmaxps), and a < b ? a : b (vminps): a
/// ?: of whole registers is a comparison and a blend where GCC does not see the instruction.
[[gnu::always_inline]] inline Floats max_of(Floats a, Floats b) {
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  return _mm512_max_ps(a, b);
#else
  return _mm256_max_ps(a, b);
#endif
}
[[gnu::always_inline]] inline Floats min_of(Floats a, Floats b) {
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  return _mm512_min_ps(a, b);
#else
  return _mm256_min_ps(a, b);
#endif
}
/// max(v, m) lane by lane, m where v is NaN: a running max that skips NaN values.
[[gnu::always_inline]] inline Floats max_skipping_nan(Floats v, Floats m) { return max_of(v, m); }
/// The largest lane of v (none of them NaN).
[[gnu::always_inline]] inline float reduce_max(Floats v) {
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  return _mm512_reduce_max_ps(v);
#else
  return detail::fold_lanes(v, [](__m128 a, __m128 b) { return _mm_max_ps(a, b); });
#endif
}
/// The bits of fp32 values in an integer register as wide as Floats.
[[gnu::always_inline]] inline auto float_bits(Floats v) {
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  return _mm512_castps_si512(v);
#else
  return _mm256_castps_si256(v);
#endif
}
/// The values of two registers (lo first) as 2-byte T in one integer register as wide as
/// Floats, narrowed as cpu::narrow does.
template <class T>
[[gnu::always_inline]] inline auto narrow_bits(Floats lo, Floats hi) {
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  return narrow32<T>(lo, hi);
#else
  return narrow16<T>(lo, hi);
#endif
}
/// The bits of as many values of T as fill an integer register as wide as Floats, from
/// vector(j), vector(j + float_lanes), ...: fp32 one Floats as it is, 2-byte T two narrowed as
/// cpu::narrow does.
template <class T, class Vector>
[[gnu::always_inline]] inline auto bits_of(const Vector& vector, std::int64_t j) {
  static_assert(has_float_lanes<T>, "bits_of: fp32, bf16 or fp16");
  if constexpr (sizeof(T) == 4) {
    return float_bits(vector(j));
  } else {
    return narrow_bits<T>(vector(j), vector(j + float_lanes));
  }
}
#endif

/// compute_t<T>(v) for one value, in a float register without passing through an integer one
/// (vpinsrw takes its operand straight from memory): fp16 inserted and converted by F16C's
/// vcvtph2ps where the host has it (one instruction for fp16's integer sequence), bf16 with
/// AVX2 inserted as the high half of a zeroed float; else the plain conversion. Exact for
/// every T. (spmv's row loop: 1.5x for bf16, see kernels/spmv.hpp.)
template <class T>
KOKKOS_FORCEINLINE_FUNCTION compute_t<T> to_compute(T v) {
#if defined(ROOFTOP_HAS_F16C)
  if constexpr (std::is_same_v<T, fp16>) return _mm_cvtss_f32(_mm_cvtph_ps(_mm_insert_epi16(_mm_setzero_si128(), v.bits, 0)));
#endif
#if defined(ROOFTOP_HAS_AVX2_BF16)
  if constexpr (std::is_same_v<T, bf16>) return _mm_cvtss_f32(_mm_castsi128_ps(_mm_insert_epi16(_mm_setzero_si128(), v.bits, 1)));
#endif
  return compute_t<T>(v);
}

/// T(c) for one value: fp16 by F16C where the host has it, else T(c); the same bits as narrow
/// (below) gives.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T from_compute(compute_t<T> c) {
#if defined(ROOFTOP_HAS_F16C)
  if constexpr (std::is_same_v<T, fp16>)
    return fp16::from_bits(static_cast<std::uint16_t>(_cvtss_sh(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
#endif
  return T(c);
}

/// out[j] = float(in[j]) for j in [0, n) (exact for every T).
template <class T>
[[gnu::always_inline]] inline void widen(const T* in, float* out, std::int64_t n) {
  std::int64_t j = 0;
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  if constexpr (std::is_same_v<T, fp16>)
    for (; j < n - n % 16; j += 16) _mm512_storeu_ps(out + j, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + j))));
  if constexpr (std::is_same_v<T, bf16>)
    for (; j < n - n % 16; j += 16) _mm512_storeu_ps(out + j, detail::bf16_floats(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + j))));
#endif
#if defined(ROOFTOP_HAS_F16C)
  if constexpr (std::is_same_v<T, fp16>)
    for (; j < n - n % 8; j += 8) _mm256_storeu_ps(out + j, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + j))));
#endif
#if defined(ROOFTOP_HAS_AVX2_BF16)
  if constexpr (std::is_same_v<T, bf16>)
    for (; j < n - n % 8; j += 8) {
      const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + j)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), _mm256_slli_epi32(wide, 16));
    }
#endif
  for (; j < n; ++j) out[j] = float(in[j]);
}

/// out[j] = T(in[j]) for j in [0, n). The same bits as T(float) element by element, except
/// that an fp16 NaN through F16C keeps its payload's top bits (T(float) gives the canonical
/// quiet NaN); bf16 is bit for bit the same.
template <class T>
[[gnu::always_inline]] inline void narrow(const float* in, T* out, std::int64_t n) {
  std::int64_t j = 0;
#if defined(ROOFTOP_HAS_F16C)
  if constexpr (std::is_same_v<T, fp16>) {
    constexpr int rne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
    for (; j < n - n % 16; j += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), _mm512_cvtps_ph(_mm512_loadu_ps(in + j), rne));
#endif
    for (; j < n - n % 8; j += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), _mm256_cvtps_ph(_mm256_loadu_ps(in + j), rne));
    for (; j < n; ++j) out[j] = from_compute<fp16>(in[j]);
    return;
  }
#endif
#if defined(ROOFTOP_HAS_AVX512_CONVERT)
  if constexpr (std::is_same_v<T, bf16>)
    for (; j < n - n % 16; j += 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), detail::bf16_bits(_mm512_loadu_ps(in + j)));
#elif defined(ROOFTOP_HAS_AVX2_BF16)
  if constexpr (std::is_same_v<T, bf16>)
    for (; j < n - n % 16; j += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), detail::bf16_bits(_mm256_loadu_ps(in + j), _mm256_loadu_ps(in + j + 8)));
#endif
  for (; j < n; ++j) out[j] = T(in[j]);
}

}  // namespace rooftop::cpu

#if defined(ROOFTOP_HAS_AVX512_CONVERT)
ROOFTOP_AVX512_WARNINGS_ON
#endif
