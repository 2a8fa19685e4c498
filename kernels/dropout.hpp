// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Dropout with a counter-based generator, and the fused bias + GELU + dropout chain.
///
/// Element i is kept iff its 16 random bits are >= round(p * 2^16). Its counter c = offset + i
/// names a pair (c >> 1) and a half (c & 1): the pair's 32 bits are MurmurHash3's 32-bit
/// finalizer of the pair's number keyed by the seed, the even element takes their low half and
/// the odd one their high half. The mask is a pure function of (seed, offset, index), so it is
/// the same on every backend and thread count, and no mask is stored (the backward pass
/// recomputes it from the same seed and offset). The drop probability is p rounded to a
/// multiple of 2^-16 (within 7.7e-6 of p; FlashAttention-2's dropout rounds it to 2^-8), and
/// kept values are scaled by 1 / (1 - that), so that the output's expectation is the input
/// (scaled by 1 / (1 - p), p = 0.99999 kept 1.5e-5 of the values and its output's mean was
/// 1.53 x the input's);
/// p = 0 copies, p = 1 zeroes. The counter's high word is xor-ed into the key, so each seed has
/// 2^32 pair hashes: blocks of 2^32 counters draw disjoint halves of them or the same ones in
/// another order (the mask at offset 2^33 is the one at offset 0, pairs permuted). Runs that
/// draw more than 2^32 counters and need unrelated masks change the seed every 2^32 counters.
///
/// One hash per pair rather than per element: the hash is most of the mask's work, and on the
/// host two elements' 16-bit halves are compared in one instruction in their memory order
/// (see DropoutMask::Lanes). Zen 4 VM, a scratch loop of bf16 dropout in L1, TSC cycles per
/// sixteen values: 8.1 with a hash per element, 6.1-6.7 with one per pair; docs/kernels.md has
/// the op's figures.
///
/// Storage fp32, bf16 or fp16; math in fp32. Input and output may be the same View (partly
/// overlapping ones throw).
#pragma once

#include "activation.hpp"

#include <algorithm>
#include <cstdint>

namespace rooftop {

/// The keep/drop decision and scaling of one dropout call.
struct DropoutMask {
  std::uint32_t key0 = 0, key1 = 0;
  std::uint32_t threshold = 0;  // keep iff the element's 16 bits >= threshold (and keep_any)
  bool keep_any = true;         // false for p = 1 (and p within 2^-17 of 1)
  float scale = 1;              // 1 / keep_probability() (0 where nothing is kept)

  /// Mask for drop probability p and `seed`; elements are numbered from `offset`. Throws
  /// rooftop::Error (naming `op`) if p is outside [0, 1] or NaN.
  DropoutMask(double p, std::uint64_t seed, std::uint64_t offset, const char* op = "DropoutMask") : offset_(offset) {
    ROOFTOP_REQUIRE(p >= 0 && p <= 1, op, "drop probability p is ", p, ", expected 0 <= p <= 1");
    // splitmix64 of the seed: nearby seeds give unrelated keys.
    std::uint64_t z = seed + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    key0 = static_cast<std::uint32_t>(z);
    key1 = static_cast<std::uint32_t>(z >> 32);
    const double rounded = p * 65536.0 + 0.5;  // round(p * 2^16)
    keep_any = rounded < 65536.0;
    threshold = keep_any ? static_cast<std::uint32_t>(rounded) : 0u;
    scale = keep_any ? static_cast<float>(1.0 / keep_probability()) : 0.0f;
  }

  /// The probability that an element is kept: 1 - round(p 2^16) / 2^16.
  KOKKOS_INLINE_FUNCTION double keep_probability() const { return keep_any ? (65536.0 - threshold) / 65536.0 : 0.0; }

  /// The pairs' bits fmix32(m ^ key) ^ key1 (MurmurHash3's 32-bit finalizer) of U pair numbers
  /// m in place: uint32 values, or on the host GCC vectors of them (DropoutMask::Lanes), each
  /// step over all of them before the next: one register's hash is a chain of a dozen dependent
  /// operations (Zen 3 VM, AVX2, a scratch program, one thread in L1, TSC cycles per register of
  /// eight: 5.3 one register at a time, 4.4 four together).
  template <class Bits, int U>
  KOKKOS_FORCEINLINE_FUNCTION static void pair_bits(Bits (&h)[U], std::uint32_t key, std::uint32_t key1) {
    for (int u = 0; u < U; ++u) h[u] ^= key;
    for (int u = 0; u < U; ++u) h[u] = (h[u] ^ (h[u] >> 16)) * 0x85ebca6bu;
    for (int u = 0; u < U; ++u) h[u] = (h[u] ^ (h[u] >> 13)) * 0xc2b2ae35u;
    for (int u = 0; u < U; ++u) h[u] ^= (h[u] >> 16) ^ key1;
  }
  /// The key of the counters whose high word is `high`.
  KOKKOS_FORCEINLINE_FUNCTION std::uint32_t key_for(std::uint32_t high) const { return key0 ^ (high * 0x9e3779b9u); }
  /// Whether the element whose counter has low word `low` is kept, `key` the key of its high
  /// word: the half (low & 1) of its pair's bits (pair_bits of low >> 1). One keyed
  /// finalizer round, a bijection of the pair's number for each key, with the high word folded
  /// into the key (2^32 is even: a pair never spans two high words).
  KOKKOS_FORCEINLINE_FUNCTION bool keeps(std::uint32_t low, std::uint32_t key) const {
    std::uint32_t bits[1] = {low >> 1};
    pair_bits(bits, key, key1);
    return (((bits[0] >> ((low & 1u) * 16u)) & 0xffffu) >= threshold) & keep_any;
  }
  /// The elements first + j for j < 2^32, with the 64-bit arithmetic of their counters done once:
  /// per element only 32-bit operations remain, which vectorize on CPUs (64-bit lanes cost
  /// more in packing than the hash itself).
  struct Span {
    std::uint32_t low0;       // low word of the counter of element `first`
    std::uint32_t key;        // key0 folded with the high word
    std::uint32_t key_carry;  // the same once the low word has wrapped
  };
  KOKKOS_INLINE_FUNCTION Span span(std::uint64_t first) const {
    const std::uint64_t counter = offset_ + first;
    const auto high = static_cast<std::uint32_t>(counter >> 32);
    return {static_cast<std::uint32_t>(counter), key_for(high), key_for(high + 1u)};
  }
  /// Whether element first + j of span s is kept.
  KOKKOS_FORCEINLINE_FUNCTION bool keep(const Span& s, std::uint32_t j) const {
    const std::uint32_t low = s.low0 + j;
    return keeps(low, low < s.low0 ? s.key_carry : s.key);
  }
  /// Whether element i (counted from the offset) is kept.
  KOKKOS_INLINE_FUNCTION bool keep(std::uint64_t i) const { return keep(span(i), 0); }
  /// v scaled if element first + j of span s is kept, else 0.
  KOKKOS_FORCEINLINE_FUNCTION float apply(float v, const Span& s, std::uint32_t j) const {
    return math::select(keep(s, j), v * scale, 0.0f);
  }

  /// run(j, count, low, key) over the runs of elements [first, first + count) whose counters
  /// share their high word (j: the run's first element, counted from `first`; low: the low
  /// word of its counter; key: key_for the high word): one run unless the low word wraps or
  /// count exceeds 2^31 (runs are at most 2^31 elements). In a
  /// run an element's mask is keeps(low + j', key), 32-bit arithmetic only, which vectorizes
  /// (through keep, per element, the wrap test and the 64-bit index cost about as much as the
  /// hash: 2048 fp32 elements in L1, one thread, 0.40-0.44 -> 0.21-0.31 ns per element).
  template <class Run>
  void for_each_run(std::uint64_t first, std::int64_t count, const Run& run) const {
    std::uint64_t counter = offset_ + first;
    for (std::int64_t j = 0; j < count;) {
      const auto low = static_cast<std::uint32_t>(counter);
      // At most 2^31: a run's length fits the 32-bit loop counters of its callers (2^32 would
      // wrap to 0).
      const std::int64_t to_wrap = std::min(static_cast<std::int64_t>((std::uint64_t{1} << 32) - low), std::int64_t{1} << 31);
      const std::int64_t n = count - j < to_wrap ? count - j : to_wrap;
      run(j, n, low, key_for(static_cast<std::uint32_t>(counter >> 32)));
      j += n;
      counter += static_cast<std::uint64_t>(n);
    }
  }

  /// out[j] = in[j] scaled if element first + j is kept, else 0, for j in [0, count) (in may be
  /// out): the host's loop over a block of values, by runs (for_each_run).
  void apply_block(const float* in, float* out, std::int64_t count, std::uint64_t first) const {
    for_each_run(first, count, [&](const std::int64_t j0, const std::int64_t n, const std::uint32_t low, const std::uint32_t key) {
      const auto run = static_cast<std::uint32_t>(n);
      ROOFTOP_SIMD
      for (std::uint32_t j = 0; j < run; ++j) out[j0 + j] = math::select(keeps(low + j, key), in[j0 + j] * scale, 0.0f);
    });
  }

#if defined(ROOFTOP_HAS_STREAM_VECTORS)
  ROOFTOP_AVX512_WARNINGS_OFF
  /// keeps() sixteen lanes at a time on an AVX-512 host, for this mask's constants (eight on
  /// AVX2 hosts, below). Thirty-two elements are sixteen pairs (seventeen from an odd
  /// counter), and the halves of a register of hashes are their 16-bit numbers in memory
  /// order, compared as words (AVX512-BW, apply_words): half the hashing of one hash
  /// per lane, which hosts without AVX512-BW take, each lane hashing its own pair (an odd
  /// number of registers: from an even counter eight pairs in half a register each, from an
  /// odd one a hash per lane).
  struct Lanes {
    using Bits = std::uint32_t __attribute__((vector_size(64)));
    using HalfBits = std::uint32_t __attribute__((vector_size(32)));
    std::uint32_t key1;
    __m512i threshold_top;    // threshold << 16: a lane's 16 bits moved to its top are >= it iff they are >= threshold
    __m512i threshold_words;  // threshold in every 16-bit word
    __m512 scale;
    __mmask16 any;
    __mmask32 any_words;
    explicit Lanes(const DropoutMask& m)
        : key1(m.key1), threshold_top(_mm512_set1_epi32(static_cast<int>(m.threshold << 16))),
          threshold_words(_mm512_set1_epi16(static_cast<short>(m.threshold))), scale(_mm512_set1_ps(m.scale)),
          any(m.keep_any ? 0xffff : 0), any_words(m.keep_any ? 0xffffffffu : 0u) {}
    /// v[u] scaled in the lanes kept, 0 in the others (scaled), for registers whose lanes'
    /// counters have low words `low[u]` under the keys `key[u]`, each lane hashing its own pair.
    /// Each register's mask is used as soon as it is made, so one mask register is live at a
    /// time (there are seven).
    template <bool computed, int U>
    [[gnu::always_inline]] void apply(__m512 (&v)[U], const Bits (&low)[U], const Bits (&key)[U]) const {
      Bits h[U];
      for (int u = 0; u < U; ++u) h[u] = (low[u] >> 1) ^ key[u];
      pair_bits(h, 0u, key1);
      for (int u = 0; u < U; ++u) {
        // Even lanes take the low half: moved to the top, where the odd lanes' half is.
        const __mmask16 even = _mm512_testn_epi32_mask(reinterpret_cast<__m512i>(low[u]), _mm512_set1_epi32(1));
        const __m512i top = _mm512_mask_slli_epi32(reinterpret_cast<__m512i>(h[u]), even, reinterpret_cast<__m512i>(h[u]), 16);
        v[u] = scaled<computed>(v[u], _mm512_mask_cmpge_epu32_mask(any, top, threshold_top));
      }
    }
    /// The same for registers of the sixteen elements whose counters have low words low + 16u,
    /// ..., low + 16u + 15, all under `key`.
    template <bool computed, int U>
    [[gnu::always_inline]] void apply(__m512 (&v)[U], std::uint32_t low, std::uint32_t key) const {
#if defined(__AVX512BW__) && defined(__AVX512VL__)
      if constexpr (U % 2 == 0) {
        if ((low & 1u) == 0) {
          apply_words<computed, U / 2>(v, low, key);
        } else {
          apply_words<computed, U / 2 + 1>(v, low, key);
        }
        return;
      } else if ((low & 1u) == 0) {  // (an odd number of registers: eight pairs in half a register each)
        const HalfBits pairs = HalfBits{0, 1, 2, 3, 4, 5, 6, 7} + (low >> 1);  // (one broadcast, not one per register)
        HalfBits h[U];
        for (int u = 0; u < U; ++u) h[u] = pairs + 8u * static_cast<std::uint32_t>(u);
        pair_bits(h, key, key1);
        for (int u = 0; u < U; ++u)
          v[u] = scaled<computed>(v[u], _mm256_mask_cmpge_epu16_mask(any, reinterpret_cast<__m256i>(h[u]),
                                                                      _mm512_castsi512_si256(threshold_words)));
        return;
      }
#endif
      Bits lows[U], keys[U];
      counters(low, lows);
      for (auto& k : keys) k = Bits{} + key;
      apply<computed>(v, lows, keys);
    }
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    /// apply of an even number U of registers from `low`: two registers' sixteen pairs hashed
    /// in one register, whose 32 words are the pairs' halves in memory order, compared at once
    /// (the hash once per 32 elements, not per 16, where each lane hashing its own pair takes
    /// it once per 16 and two elements' halves in 256 bits once per 16 too). From an even
    /// counter (H = U / 2 registers of hashes) the elements are words 0-31 of each; from an
    /// odd one (H = U / 2 + 1) words 1-32, the mask shifted down by one with the next
    /// register's first word on top. Granite Rapids VM, a scratch program, the builds
    /// alternated twice, the same outputs bit for bit, ns per value, one thread, 65536 values
    /// in L2: even offsets (before, eight pairs in half a register) bf16 0.215-0.232 ->
    /// 0.139-0.147, fp16 0.223-0.224 -> 0.124-0.131, fp32 0.136-0.144 -> 0.099-0.105; odd
    /// offsets (before, a hash per lane) bf16 0.226-0.232 -> 0.193, fp16 0.212-0.217 -> 0.148,
    /// fp32 0.180-0.185 -> 0.131 (docs/kernels.md has 2 threads).
    template <bool computed, int H, int U>
    [[gnu::always_inline]] void apply_words(__m512 (&v)[U], std::uint32_t low, std::uint32_t key) const {
      static_assert(U % 2 == 0 && (H == U / 2 || H == U / 2 + 1), "apply_words: pairs of registers");
      const Bits pairs = Bits{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15} + (low >> 1);  // (one broadcast)
      Bits h[H];
      for (int w = 0; w < H; ++w) h[w] = pairs + 16u * static_cast<std::uint32_t>(w);
      pair_bits(h, key, key1);
      std::uint32_t keep[H];
      for (int w = 0; w < H; ++w)
        keep[w] = _mm512_mask_cmpge_epu16_mask(any_words, reinterpret_cast<__m512i>(h[w]), threshold_words);
      for (int w = 0; w < U / 2; ++w) {
        const std::uint32_t k = H == U / 2 ? keep[w] : (keep[w] >> 1) | (keep[H == U / 2 ? w : w + 1] << 31);
        v[2 * w] = scaled<computed>(v[2 * w], static_cast<__mmask16>(k));
        v[2 * w + 1] = scaled<computed>(v[2 * w + 1], static_cast<__mmask16>(k >> 16));
      }
    }
#endif
    /// The low words low + 16u, ..., low + 16u + 15 of U registers' lanes.
    template <int U>
    [[gnu::always_inline]] static void counters(std::uint32_t low, Bits (&lows)[U]) {
      for (int u = 0; u < U; ++u) lows[u] = Bits{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15} + (low + 16u * static_cast<std::uint32_t>(u));
    }
    /// v scaled in the lanes of k, 0 in the others: where `computed` (v computed in registers,
    /// not loaded) a masked multiply (bf16 in L1, one thread: 3.9 -> 3.4 TSC cycles per sixteen
    /// against the AND below), else the multiply and then a masked move. Not a masked multiply
    /// of a load: GCC would fold the load into it as a masked memory operand, and masked loads
    /// that miss the cache stalled on the Zen 5 VM (dropout fp32, 2^25 elements, 2 threads: 23
    /// GB/s, 43-60 with the multiply unmasked, scale beside it at 48-66). GCC 12 joins the move
    /// to the multiply as a masked one whose memory operand is `scale`, which stays in L1. A
    /// dropped value was cleared by an AND with the mask's lanes before (a third instruction):
    /// fp32 in L1, one thread, 4.45 -> 3.65 TSC cycles per sixteen.
    template <bool computed>
    [[gnu::always_inline]] __m512 scaled(__m512 v, __mmask16 k) const {
      if constexpr (computed) {
        return _mm512_maskz_mul_ps(k, v, scale);
      } else {
        __m512 product = _mm512_mul_ps(v, scale);
        asm("" : "+v"(product));  // (kept apart from the move: see above)
        return _mm512_maskz_mov_ps(k, product);
      }
    }
  };
  ROOFTOP_AVX512_WARNINGS_ON
#elif defined(ROOFTOP_HAS_MAP_LINES)
  /// keeps() and the scaling eight lanes at a time on an AVX2 host, a few registers together:
  /// a kept lane's mask is all ones, and a dropped value is cleared by an AND. Sixteen
  /// elements from an even counter are eight pairs: the sixteen 16-bit halves of one register
  /// of hashes, in memory order, compared as words and widened to the lanes of two registers
  /// (as the AVX-512 Lanes above, half the hashing); other counters hash each lane's pair.
  struct Lanes {
    using Bits = std::uint32_t __attribute__((vector_size(32)));
    std::uint32_t key1;
    __m256i threshold_top, threshold_words, any;  // as the AVX-512 Lanes' (any: all ones unless p = 1)
    __m256 scale;
    explicit Lanes(const DropoutMask& m)
        : key1(m.key1), threshold_top(_mm256_set1_epi32(static_cast<int>(m.threshold << 16))),
          threshold_words(_mm256_set1_epi16(static_cast<short>(m.threshold))), any(_mm256_set1_epi32(m.keep_any ? -1 : 0)),
          scale(_mm256_set1_ps(m.scale)) {}
    /// All ones in the lanes whose bits (moved to the top) are >= threshold_top: unsigned, as
    /// max(top, threshold_top) == top.
    [[gnu::always_inline]] __m256i at_least(__m256i top) const {
      return _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_max_epu32(top, threshold_top), top), any);
    }
    /// v scaled in the lanes of `keep` (all ones where kept), 0 in the others.
    [[gnu::always_inline]] __m256 scaled(__m256 v, __m256i keep) const {
      return _mm256_and_ps(_mm256_mul_ps(v, scale), _mm256_castsi256_ps(keep));
    }
    /// v[u] scaled in the lanes kept, 0 in the others, for registers whose lanes' counters have
    /// low words `low[u]`, under `key`, each lane hashing its own pair.
    template <int U>
    [[gnu::always_inline]] void apply(__m256 (&v)[U], const Bits (&low)[U], std::uint32_t key) const {
      Bits h[U];
      for (int u = 0; u < U; ++u) h[u] = low[u] >> 1;
      pair_bits(h, key, key1);
      for (int u = 0; u < U; ++u)  // even lanes' low half moved to the top
        v[u] = scaled(v[u], at_least(reinterpret_cast<__m256i>(h[u] << (((low[u] & 1u) ^ 1u) * 16u))));
    }
    /// The same for registers of the elements whose counters have low words low + 8u, ...,
    /// low + 8u + 7, under `key`.
    template <int U>
    [[gnu::always_inline]] void apply(__m256 (&v)[U], std::uint32_t low, std::uint32_t key) const {
      if constexpr (U % 2 == 0) {
        if ((low & 1u) == 0) {
          Bits h[U / 2];
          for (int w = 0; w < U / 2; ++w) h[w] = Bits{0, 1, 2, 3, 4, 5, 6, 7} + ((low >> 1) + 8u * static_cast<std::uint32_t>(w));
          pair_bits(h, key, key1);
          for (int w = 0; w < U / 2; ++w) {
            const __m256i bits = reinterpret_cast<__m256i>(h[w]);
            const __m256i words = _mm256_and_si256(_mm256_cmpeq_epi16(_mm256_max_epu16(bits, threshold_words), bits), any);
            v[2 * w] = scaled(v[2 * w], _mm256_cvtepi16_epi32(_mm256_castsi256_si128(words)));
            v[2 * w + 1] = scaled(v[2 * w + 1], _mm256_cvtepi16_epi32(_mm256_extracti128_si256(words, 1)));
          }
          return;
        }
      }
      Bits lows[U];
      for (int u = 0; u < U; ++u) lows[u] = Bits{0, 1, 2, 3, 4, 5, 6, 7} + (low + 8u * static_cast<std::uint32_t>(u));
      apply(v, lows, key);
    }
    /// apply for bf16 in pairs of registers (load_pair_lines): v = the even and the odd
    /// elements of the sixteen from low, then of the sixteen from low + 16, and so on. From an
    /// even counter the even elements take the low halves of their pairs' hashes (moved to the
    /// top) and the odd ones the high halves, one register of hashes per sixteen elements.
    template <int U>
    [[gnu::always_inline]] void apply_pairs(__m256 (&v)[U], std::uint32_t low, std::uint32_t key) const {
      static_assert(U % 2 == 0, "apply_pairs: pairs of registers");
      const Bits evens = Bits{0, 2, 4, 6, 8, 10, 12, 14} + low;
      if ((low & 1u) == 0) {
        Bits h[U / 2];
        for (int w = 0; w < U / 2; ++w) h[w] = (evens >> 1) + 8u * static_cast<std::uint32_t>(w);
        pair_bits(h, key, key1);
        for (int w = 0; w < U / 2; ++w) {
          v[2 * w] = scaled(v[2 * w], at_least(reinterpret_cast<__m256i>(h[w] << 16)));
          v[2 * w + 1] = scaled(v[2 * w + 1], at_least(reinterpret_cast<__m256i>(h[w])));
        }
        return;
      }
      Bits lows[U];
      for (int w = 0; w < U / 2; ++w) {
        lows[2 * w] = evens + 16u * static_cast<std::uint32_t>(w);
        lows[2 * w + 1] = evens + (16u * static_cast<std::uint32_t>(w) + 1u);
      }
      apply(v, lows, key);
    }
  };
#endif

  std::uint64_t offset_;
};

namespace detail {
#if defined(ROOFTOP_HAS_MAP_LINES)
ROOFTOP_AVX512_WARNINGS_OFF
/// out[j] = in[j] scaled if element first + j is kept, else 0, for j in [0, n) on an AVX-512 or
/// AVX2 host (T: fp32, bf16 or fp16), each whole cache line of out computed in registers
/// (DropoutMask::Lanes) and streamed where `streamed` (map_line_registers; the caller fences). Against convert_map's
/// blocks (DropoutMask::apply_block), outputs bit for bit the same, 2 threads, Zen 5 VM,
/// scratch program, two alternations, median GB/s: fp32 2^25 elements 33-34 -> 41.5-43, bf16
/// 2^26 30-31 -> 33, fp16 32-34 -> 37-38, scale fp32 47-49.
template <bool streamed, class In, class T>
void dropout_lines(const DropoutMask& mask, const In* in, T* out, std::int64_t n, std::uint64_t first) {
  const DropoutMask::Lanes lanes(mask);
  mask.for_each_run(first, n, [&](const std::int64_t j0, const std::int64_t count, const std::uint32_t low, const std::uint32_t key) {
    const In* const x = in + j0;
    auto one = [&](const std::int64_t j) {
      return math::select(mask.keeps(low + static_cast<std::uint32_t>(j), key), float(x[j]) * mask.scale, 0.0f);
    };
#if defined(ROOFTOP_HAS_AVX2_LANES)
    if constexpr (std::is_same_v<In, bf16> && std::is_same_v<T, bf16>) {
      // bf16 on AVX2 in pairs of registers (load_pair_lines). Zen 3 VM, one process
      // alternating with the in-order lanes, best: one thread 64x4096 0.425 -> 0.381 ns per
      // element; 2 threads 2^26 elements, two runs, 15.1 -> 17.5 and 17.6 -> 19.5 GB/s. Two
      // cache lines (eight registers) together rather than one: the harness, one thread, 16384
      // values in L2, builds alternated three times, best us 6.32 -> 5.66 (fp32 and fp16 with
      // eight rather than four: 2-3%, within the noise, not taken).
      map_line_registers<streamed, 8, true>(
          out + j0, count,
          [&](const std::int64_t j, auto& v) __attribute__((always_inline)) {
            load_pair_lines(x + j, v);
            lanes.apply_pairs(v, low + static_cast<std::uint32_t>(j), key);
          },
          one);
      return;
    }
#endif
    // Several registers at a time, their hashes in lockstep (Lanes::apply of an array). AVX2,
    // against a register (bf16: a pair) at a time, Zen 3 VM, the harness, one thread, 16384
    // values in L2, builds alternated three times, best us: dropout fp32 4.68 -> 4.46, bf16
    // 6.79 -> 6.32, fp16 5.85 -> 5.19; chain_fused 4x4096 fp32 11.33 -> 10.90, bf16 15.24 ->
    // 14.11, fp16 12.87 -> 11.71. AVX-512, against a register at a time (a cache line of fp32),
    // Zen 4 VM, one thread, 8 x 4096 in L2, one process alternating, medians of 21: fp32 1.34x,
    // bf16 1.17x, fp16 1.25x (with the masked move after the multiply, Lanes::scaled, and the
    // pairs' counters from one broadcast). The input prefetched a page ahead, as the activations'
    // register loop does (cpu::prefetch_ahead): Granite Rapids VM, scratch program, 2 threads,
    // 1e8 fp32 or 2e8 2-byte values, best of 8, two alternations, GB/s: fp32 29.1-29.8 ->
    // 37.9-38.0 (copy 36-37 beside it), bf16 19.2-19.9 -> 28.2-28.3, fp16 19.0-19.5 -> 28.6-29.1.
    map_line_registers<streamed, step_registers<T>>(
        out + j0, count,
        [&](const std::int64_t j, auto& v) __attribute__((always_inline)) {
          cpu::prefetch_ahead(x + j, registers_of<decltype(v)> * cpu::float_lanes);
          for (int u = 0; u < registers_of<decltype(v)>; ++u) v[u] = cpu::load_floats(x + j + cpu::float_lanes * u);
#if defined(ROOFTOP_HAS_AVX2_LANES)
          lanes.apply(v, low + static_cast<std::uint32_t>(j), key);
#else
          // 2-byte values are widened in registers before the multiply (Lanes::apply's `computed`).
          lanes.template apply<sizeof(In) == 2>(v, low + static_cast<std::uint32_t>(j), key);
#endif
        },
        one);
  });
}
ROOFTOP_AVX512_WARNINGS_ON
#endif

/// dropout(gelu(v)) for the elements of a tensor with `cols` columns; element (r, c) is number
/// r * cols + c for the mask.
template <class G>
struct GeluDropout {
  G gelu;
  DropoutMask mask;
  std::uint64_t cols;
  /// Along row r: the row's span of the mask, so each element costs only 32-bit arithmetic
  /// (c < 2^32, checked by bias_gelu_dropout).
  struct Row {
    G gelu;
    DropoutMask mask;
    std::uint64_t first;  // the row's first element
    DropoutMask::Span span;
    KOKKOS_FORCEINLINE_FUNCTION float operator()(float v, std::int64_t c) const {
      return mask.apply(gelu(v), span, static_cast<std::uint32_t>(c));
    }
    /// On the host, in two loops over each block of the row (map_rows_with_bias): GELU, then
    /// the mask over the block's columns [c, c + count).
    KOKKOS_FORCEINLINE_FUNCTION float value(float v) const { return gelu(v); }
    void stage(const float* in, float* out, std::int64_t c, std::int64_t count) const {
      mask.apply_block(in, out, count, first + static_cast<std::uint64_t>(c));
    }
#if defined(ROOFTOP_HAS_STREAM_VECTORS) && defined(ROOFTOP_HAS_ACTIVATION_LANES)
    /// On an AVX-512 host where G has lanes: (v, c) -> v[u] replaced by the values of columns
    /// [c + 16u, c + 16u + 16) of a row of `cols`, from their sums x + bias, bit for bit
    /// operator(): GELU of the registers together, then each one's mask (a lane's key is the
    /// carried one where its low word has wrapped, as in keep; rows whose low words do not wrap
    /// skip that choice). With the masked multiply of Lanes::apply<true>, bf16 4096 columns in L1,
    /// one thread: 10.3 -> 9.2 TSC cycles per sixteen; eight registers together rather than one
    /// (long_step_registers), one thread, 4x4096 in L2, 9-14% less time (docs/kernels.md).
    /// Not on AVX2 hosts (lanes_in_blocks there, below): with sixteen registers the fused lanes
    /// spill, and the two loops over each block (stage) ran faster (Zen 3 VM, one thread, 64x4096, min of six alternations,
    /// ns per element: bf16 0.95 blocks, 1.12 lanes; fp16 0.86, 0.92; fp32 0.77 both).
    static constexpr bool row_lanes = has_lanes<G>;
    static constexpr int together = long_step_registers;
    auto lanes(std::int64_t cols) const {
      return [d = DropoutMask::Lanes(mask), low0 = span.low0, key = span.key, carry = span.key_carry,
              wraps = static_cast<std::uint64_t>(span.low0) + static_cast<std::uint64_t>(cols) > 0x100000000ull](
                 auto& v, const std::int64_t c) __attribute__((always_inline)) {
        G::lanes(v);
        constexpr int U = registers_of<decltype(v)>;
        const std::uint32_t low = low0 + static_cast<std::uint32_t>(c);
        if (!wraps) {
          d.template apply<true>(v, low, key);
        } else {
          using Bits = DropoutMask::Lanes::Bits;
          Bits lows[U], keys[U];
          DropoutMask::Lanes::counters(low, lows);
          for (int u = 0; u < U; ++u) keys[u] = lows[u] < low0 ? Bits{} + carry : Bits{} + key;
          d.template apply<true>(v, lows, keys);
        }
      };
    }
#elif defined(ROOFTOP_HAS_MAP_LINES) && defined(ROOFTOP_HAS_ACTIVATION_LANES)
    /// On an AVX2 host where G has lanes: a row in blocks of `block` columns, each in two loops
    /// of registers (a loop of both spills, see above): GELU of x + bias into an L1 buffer of
    /// floats, then the mask over it, narrowed and stored (dropout_lines). Bit for bit
    /// operator(). Against stage's two loops (GCC's vectorization of the portable functions,
    /// through convert_map's widened blocks), Zen 3 VM, scratch program alternating both in one
    /// process, best ns per element: one thread, 64x4096 (in L2/L3), fp32 0.764 -> 0.705, fp16
    /// 0.851 -> 0.785, bf16 0.959 -> 0.964; 2 threads, 10922x4096 (memory), fp16 0.512 -> 0.442,
    /// bf16 0.648 -> 0.592, fp32 5461x4096 0.577 -> 0.571. Streamed where light ops' outputs
    /// are (`streamed`: fp32, large; the row plan fences): fp32 5461x4096, five runs, median
    /// 10.4-10.8 -> 11.2-15.5 GB/s, best within the noise.
    static constexpr bool block_lanes = has_lanes<G>;
    static constexpr std::int64_t block = 512;
    template <class T>
    void lanes_in_blocks(const T* in, const T* bias, T* out, std::int64_t cols, bool streamed) const {
      alignas(64) float values[block];
      for (std::int64_t c0 = 0; c0 < cols; c0 += block) {
        const std::int64_t n = cols - c0 < block ? cols - c0 : block;
        std::int64_t j = 0;
        // Four registers at a time, their GELUs together (cpu::times_sigmoid_of_exp2): one
        // thread, 4x4096 (in L2), best us: fp32 12.2 -> 11.2, bf16 16.5 -> 15.3, fp16 13.8 ->
        // 12.5; 2 threads, 5461x4096 fp32, three alternations: 15.2-16.3 -> 17.2-20.4 GB/s
        // (side by side with chain_unfused, 1.48-1.50x before and 1.43-1.53x after). Eight
        // since GELU's forms take eight together on AVX2 (registers_together), 4x4096, builds
        // alternated twice, best us: fp32 11.25 -> 10.78, bf16 15.97 -> 14.45, fp16 12.29 -> 11.51.
        constexpr int U = registers_together<G, T>;
        for (; j + U * cpu::float_lanes <= n; j += U * cpu::float_lanes) {
          cpu::Floats v[U];
          for (int u = 0; u < U; ++u) {
            const std::int64_t c = c0 + j + cpu::float_lanes * u;
            v[u] = cpu::load_floats(in + c) + cpu::load_floats(bias + c);
          }
          G::lanes(v);
          for (int u = 0; u < U; ++u) _mm256_store_ps(values + j + cpu::float_lanes * u, v[u]);
        }
        for (; j + cpu::float_lanes <= n; j += cpu::float_lanes)
          _mm256_store_ps(values + j, G::lanes(cpu::load_floats(in + c0 + j) + cpu::load_floats(bias + c0 + j)));
        for (; j < n; ++j) values[j] = gelu(float(in[c0 + j]) + float(bias[c0 + j]));
        if (streamed) {
          dropout_lines<true>(mask, values, out + c0, n, first + static_cast<std::uint64_t>(c0));
        } else {
          dropout_lines<false>(mask, values, out + c0, n, first + static_cast<std::uint64_t>(c0));
        }
      }
    }
#endif
  };
  KOKKOS_INLINE_FUNCTION Row row(std::int64_t r) const {
    const std::uint64_t first = static_cast<std::uint64_t>(r) * cols;
    return {gelu, mask, first, mask.span(first)};
  }
};

}  // namespace detail

// ---- dropout ---------------------------------------------------------------------------------

/// y(i) = x(i) / (1 - p) if element i is kept, else 0 (see DropoutMask). Throws rooftop::Error
/// if the extents differ or p is outside [0, 1].
template <class Exec, class X, class Y>
on_exec_space_t<Exec> dropout(const Exec& exec, const X& x, const Y& y, double p, std::uint64_t seed,
                              std::uint64_t offset = 0) {
  mandate_input<Exec, X, 1>();
  mandate_output<Exec, Y, 1>();
  mandate_fp32_math<X, Y>();
  detail::require_elementwise("dropout", "x", x, "y", y);
  const DropoutMask mask(p, seed, offset, "dropout");
  const auto n = static_cast<std::int64_t>(x.extent(0));
#if defined(ROOFTOP_HAS_MAP_LINES)
  using T = typename Y::value_type;
  // Contiguous outputs on AVX-512 and AVX2 hosts: a cache line at a time in registers
  // (detail::dropout_lines), large ones streamed as light ops' are (fp32, and 2-byte types
  // where the host narrows in one AVX-512 sequence). Zen 3 VM (AVX2), 2 threads, min of four
  // alternations against the blocks (apply_block) and the lines unstreamed, GB/s: fp32 2^25
  // 26.3 -> 40.8 (30.8 unstreamed); bf16 2^26 13.2 -> 17.8 unstreamed (16.0 streamed).
  if constexpr (detail::host_streams<Exec> && cpu::has_float_lanes<T> && std::is_same_v<typename X::non_const_value_type, T>) {
    if (x.stride(0) == 1 && y.stride(0) == 1) {
      const T* const in = x.data();
      T* const out = y.data();
      auto run = [&](auto streaming) {
        detail::for_each_chunk<T, decltype(streaming)::value>("rooftop::dropout", exec, n, [=](const std::int64_t lo, const std::int64_t hi) {
          detail::dropout_lines<decltype(streaming)::value>(mask, in + lo, out + lo, hi - lo, static_cast<std::uint64_t>(lo));
        });
      };
      if (detail::light_op_stores<T>() == detail::Stores::streamed_when_large && detail::streams<T>(n)) {
        run(std::true_type{});
      } else {
        run(std::false_type{});
      }
      return;
    }
  }
#endif
  if constexpr (detail::on_host<Exec>) {
    // Contiguous on the host (and not streamed above): the mask over blocks of values
    // (DropoutMask::apply_block), plain stores (with AVX2 streaming lost, 0.72-0.83x on the
    // Zen 3 VM).
    if (detail::map_contiguous<detail::Stores::plain>(
            "rooftop::dropout", exec, y, detail::Pass{},
            [=](const float* in, float* out, const std::int64_t first, const std::int64_t count) {
              mask.apply_block(in, out, count, static_cast<std::uint64_t>(first));
            },
            x))
      return;
  }
  // In pieces of 2^31 elements, so the index within a piece fits the 32-bit arithmetic of
  // DropoutMask::Span (one piece below 2G elements).
  constexpr std::int64_t piece = std::int64_t{1} << 31;
  for (std::int64_t lo = 0; lo < n; lo += piece) {
    const auto range = std::make_pair(lo, n - lo < piece ? n : lo + piece);
    const auto xs = Kokkos::subview(x, range);
    const auto span = mask.span(static_cast<std::uint64_t>(lo));
    detail::map_inputs<detail::Stores::plain>(
        "rooftop::dropout", exec, Kokkos::subview(y, range),
        KOKKOS_LAMBDA(const std::int64_t i, const float v) { return mask.apply(v, span, static_cast<std::uint32_t>(i)); },
        xs);
  }
}
template <class X, class Y>
void dropout(const X& x, const Y& y, double p, std::uint64_t seed, std::uint64_t offset = 0) {
  dropout(typename Y::execution_space{}, x, y, p, seed, offset);
}

/// Cost of dropout over n elements of T: one multiply each; read x, write y.
template <class T>
constexpr Cost dropout_cost(std::int64_t n) { return detail::unary_cost<T>(n, 1); }

// ---- bias_gelu_dropout -----------------------------------------------------------------------

/// y = dropout(GELU(x + bias)) in one pass over (rows, cols) x and y, (cols) bias: the same
/// result as bias_add, gelu and dropout in sequence over the flattened tensor (element (r, c)
/// is number r * cols + c for the mask), without the two intermediates in memory. Throws
/// rooftop::Error if the extents do not match or p is outside [0, 1].
template <class Exec, class X, class B, class Y>
on_exec_space_t<Exec> bias_gelu_dropout(const Exec& exec, const X& x, const B& bias, const Y& y, double p,
                                        std::uint64_t seed, std::uint64_t offset = 0, Gelu form = Gelu::tanh) {
  const DropoutMask mask(p, seed, offset, "bias_gelu_dropout");
  const auto cols = static_cast<std::uint64_t>(x.extent(1));  // (rows, cols), checked by map_rows_with_bias
  ROOFTOP_REQUIRE(cols <= 0xffffffffu, "bias_gelu_dropout", "x is ", shape_of(x),
                  ", rows longer than 2^32 - 1 are not supported");
  detail::with_gelu(form, [&](auto gelu) {
    detail::map_rows_with_bias<false>("rooftop::bias_gelu_dropout", "bias_gelu_dropout", exec, x, bias, y,
                               detail::GeluDropout<decltype(gelu)>{gelu, mask, cols});
  });
}
template <class X, class B, class Y>
void bias_gelu_dropout(const X& x, const B& bias, const Y& y, double p, std::uint64_t seed, std::uint64_t offset = 0,
                       Gelu form = Gelu::tanh) {
  bias_gelu_dropout(typename Y::execution_space{}, x, bias, y, p, seed, offset, form);
}

/// Cost of bias_gelu_dropout over (rows, cols) of T: bias_gelu_cost's FLOPs for `form` plus the
/// dropout multiply; read x and bias, write y.
template <class T>
constexpr Cost bias_gelu_dropout_cost(std::int64_t rows, std::int64_t cols, Gelu form = Gelu::tanh) {
  return detail::bias_cost<T>(rows, cols, 2 + detail::gelu_flops(form));
}

}  // namespace rooftop
