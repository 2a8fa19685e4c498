// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Streaming (non-temporal) stores for CPU kernels whose output is larger than the cache.
///
/// A plain store to a line that is not in cache first reads the line (read for ownership), so
/// an op that writes n bytes to main memory moves 2n bytes over the memory bus for them, and
/// the line then evicts something useful. A streaming store writes whole lines through
/// write-combining buffers without reading them. Measured on the 2-core Zen 3 VM with 128 MiB
/// arrays: copy 27-30 GB/s with plain stores, 34-39 GB/s with streaming ones, relu fp32 28 vs
/// 36-39 GB/s. Below the cache size streaming stores lose: the next kernel would find its
/// input in cache, and a streamed line goes to memory.
///
/// Host kernels write through `stream_whole_lines` from a small buffer in L1 (the compiler
/// vectorizes the loop that fills it), then `stream_fence` once per work item: streaming
/// stores are weakly ordered, and the fence makes them visible before the kernel ends.
/// On hosts without SSE2 both fall back to plain stores.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "avx512_warnings.hpp"

#if (defined(__SSE2__) || defined(_M_X64)) && !defined(__CUDA_ARCH__)
#include <immintrin.h>
#define ROOFTOP_HAS_STREAMING_STORES 1
#endif

namespace rooftop {

namespace cpu {

/// Size of the host's largest cache in bytes, from Linux's sysfs (sysconf is wrong on some
/// VMs); 32 MiB if it cannot be read.
inline std::size_t last_level_cache_bytes() {
  static const std::size_t bytes = [] {
    double largest = 0;
    for (int index = 0; index < 8; ++index) {
      std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
      double value = 0;
      std::string unit;
      if (f >> value) {
        std::getline(f, unit);
        const double scale = unit == "K" ? 1024.0 : unit == "M" ? 1024.0 * 1024 : 1.0;
        largest = std::max(largest, value * scale);
      }
    }
    return largest > 0 ? static_cast<std::size_t>(largest) : std::size_t{32} << 20;
  }();
  return bytes;
}

/// The streaming-store threshold that `text` names (the ROOFTOP_STREAMING_STORE_THRESHOLD
/// environment variable): a byte count in decimal with an optional K, M or G suffix (KiB, MiB,
/// GiB), or "never" (no output streamed); nullopt for anything else.
inline std::optional<std::size_t> parse_streaming_threshold(const std::string& text) {
  if (text == "never") return std::numeric_limits<std::size_t>::max();
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 15 || text.size() > digits + 1) return std::nullopt;  // under 10^15 before the suffix
  const std::string suffix = text.substr(digits);
  const int shift = suffix.empty() ? 0 : suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : -1;
  const auto value = static_cast<std::size_t>(std::stoull(text.substr(0, digits)));
  if (shift < 0 || value > std::numeric_limits<std::size_t>::max() >> shift) return std::nullopt;
  return value << shift;
}

/// Half the last-level cache, where plain stores would start to evict their own output, unless
/// ROOFTOP_STREAMING_STORE_THRESHOLD says otherwise (a value it does not parse is reported on
/// stderr once and ignored: this is read inside kernels, where nothing may throw).
inline std::size_t initial_streaming_threshold() {
  const char* const text = std::getenv("ROOFTOP_STREAMING_STORE_THRESHOLD");
  if (text == nullptr) return last_level_cache_bytes() / 2;
  if (const auto bytes = parse_streaming_threshold(text)) return *bytes;
  std::fprintf(stderr,
               "rooftop: ignoring ROOFTOP_STREAMING_STORE_THRESHOLD=\"%s\" (expected bytes, with an optional K, M or G "
               "suffix, or \"never\"); streaming outputs from %zu bytes\n",
               text, last_level_cache_bytes() / 2);
  return last_level_cache_bytes() / 2;
}

inline std::atomic<std::size_t>& streaming_threshold() {
  static std::atomic<std::size_t> bytes{initial_streaming_threshold()};
  return bytes;
}

/// Whether this host has streaming stores (x86 with SSE2); without them outputs are written
/// with plain stores whatever the threshold.
inline constexpr bool has_streaming_stores =
#if defined(ROOFTOP_HAS_STREAMING_STORES)
    true;
#else
    false;
#endif

/// Copies n < 64 bytes from src to dst (the same bytes, or not overlapping) in at most two
/// moves of a constant size each: a memcpy of variable size is a library call or `rep movs`
/// (GCC 12), slow for a few bytes.
inline void copy_short(char* d, const char* s, std::size_t n) {
  auto twice = [&](auto width) {
    constexpr std::size_t w = decltype(width)::value;
    char a[w], b[w];
    std::memcpy(a, s, w);
    std::memcpy(b, s + n - w, w);
    std::memcpy(d, a, w);
    std::memcpy(d + n - w, b, w);
  };
  if (n >= 32)
    twice(std::integral_constant<std::size_t, 32>{});
  else if (n >= 16)
    twice(std::integral_constant<std::size_t, 16>{});
  else if (n >= 8)
    twice(std::integral_constant<std::size_t, 8>{});
  else if (n >= 4)
    twice(std::integral_constant<std::size_t, 4>{});
  else
    for (std::size_t i = 0; i < n; ++i) d[i] = s[i];
}

/// Prefetches the cache line holding p into L2 (a no-op on hosts without SSE).
/// Every prefetch helper is always_inline: GCC 12 counts an out-of-line function whose only
/// effect is a prefetch as `const` and deletes the calls to it, so where it declined to inline
/// one (the harness's one large translation unit) the prefetches were silently gone: dropout
/// fp32 2^25 at 19-22 GB/s there against 68-78 with them (Zen 5 VM, 2 threads, two
/// alternations). tests/codegen checks that they survive -fno-inline.
[[gnu::always_inline]] inline void prefetch_line(const void* p) {
#if defined(ROOFTOP_HAS_STREAMING_STORES)
  _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T1);
#else
  (void)p;
#endif
}

/// A row to prefetch while another is written: `element_bytes` of it per element written.
struct Prefetch {
  const char* data = nullptr;
  std::int64_t element_bytes = 0;
  /// Prefetches the line holding byte b of the row into L2 (nothing if data is null).
  [[gnu::always_inline]] void line(std::int64_t b) const {
    if (data) prefetch_line(data + b);
  }
  /// Prefetches the cache lines of [begin, end) bytes of the row into L2 (none if data is null).
  [[gnu::always_inline]] void lines(std::int64_t begin, std::int64_t end) const {
    if (data)
      for (std::int64_t b = begin & ~std::int64_t{63}; b < end; b += 64) prefetch_line(data + b);
  }
};

/// Copies n bytes from src to dst (the same bytes, or not overlapping at all): streaming stores
/// for the whole 64-byte lines of dst, plain stores for the partial lines at its ends, whose
/// rest another work item may write (or the same one much later: a transpose's short row
/// segments). A streamed partial line leaves a half-filled write-combining buffer and a line
/// written both ways: fp32 5793 x 5793 transposed at 4 GB/s that way on the 2-core Zen 3 VM,
/// and rmsnorm over rows one element off line alignment at 2.8 GB/s. With `prefetching`,
/// `ahead` names a row of the next n bytes to be copied, prefetched line by line meanwhile
/// (embedding's next gathered row, or copy's own source 1 KB on: see there); without, the loop
/// has no trace of it.
template <bool prefetching = false>
inline void stream_whole_lines(void* dst, const void* src, std::size_t n, const Prefetch& ahead = {}) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const std::size_t head = std::min<std::size_t>((64 - (reinterpret_cast<std::uintptr_t>(d) & 63)) & 63, n);
  copy_short(d, s, head);
  if constexpr (prefetching) ahead.lines(0, static_cast<std::int64_t>(head));
  std::size_t i = head;
#if defined(ROOFTOP_HAS_STREAMING_STORES)
  for (; i + 64 <= n; i += 64) {
    if constexpr (prefetching) ahead.line(static_cast<std::int64_t>(i));
#if defined(__AVX__)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 32), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32)));
#else
    for (std::size_t k = 0; k < 64; k += 16)
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + k), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + k)));
#endif
  }
#else
  for (; i + 64 <= n; i += 64) std::memmove(d + i, s + i, 64);
#endif
  if constexpr (prefetching) ahead.lines(static_cast<std::int64_t>(i), static_cast<std::int64_t>(n));
  copy_short(d + i, s + i, n - i);
}

#if defined(ROOFTOP_HAS_STREAMING_STORES) && defined(__AVX2__)
/// Host code that writes whole registers of bits (map_whole_lines, stream_vectors): 256-bit
/// ones with AVX2 (or lines of two), and 512-bit ones with AVX-512.
#define ROOFTOP_HAS_WHOLE_LINES 1
/// Stores one register of bits at the aligned p, streamed where `streamed`.
template <bool streamed>
[[gnu::always_inline]] inline void store_bits(void* p, __m256i bits) {
  if constexpr (streamed) {
    _mm256_stream_si256(static_cast<__m256i*>(p), bits);
  } else {
    _mm256_store_si256(static_cast<__m256i*>(p), bits);
  }
}
#if defined(__AVX512F__)
template <bool streamed>
[[gnu::always_inline]] inline void store_bits(void* p, __m512i bits) {
  if constexpr (streamed) {
    _mm512_stream_si512(static_cast<__m512i*>(p), bits);
  } else {
    _mm512_store_si512(p, bits);
  }
}
#endif
/// The host's widest integer register: 512 bits with AVX-512, else 256.
#if defined(__AVX512F__)
using WideBits = __m512i;
#else
using WideBits = __m256i;
#endif
/// N such registers of bits, stored one after another from part[0]: with AVX2 a cache line in
/// two, or more lines.
template <int N>
struct RegisterBits {
  WideBits part[N];
};
/// Stores N registers of bits at the aligned p, streamed where `streamed`.
template <bool streamed, int N>
[[gnu::always_inline]] inline void store_bits(void* p, const RegisterBits<N>& bits) {
  for (int k = 0; k < N; ++k) store_bits<streamed>(static_cast<char*>(p) + k * sizeof(WideBits), bits.part[k]);
}
#endif

#if defined(ROOFTOP_HAS_STREAMING_STORES) && defined(__AVX512F__)
/// The 64 bytes at p (64-byte aligned) that a loop the compiler vectorized has just stored, as
/// two 256-bit loads joined: store forwarding serves each half from one store whether the loop
/// stored 256-bit or 512-bit registers, where one 512-bit load over two 256-bit stores misses
/// it and waits for them to reach L1. GCC's tuning for Intel's AVX-512 cores (-march=native on
/// Sapphire and Granite Rapids) vectorizes loops 256 bits wide: on the Granite Rapids VM
/// (scratch program, one thread, 2^18 values in L2, streamed) scale took 0.337 ns/value fp32
/// and 0.374 bf16 with one 512-bit load, 0.188 and 0.096 when GCC was told to prefer 512 bits.
ROOFTOP_AVX512_WARNINGS_OFF
[[gnu::always_inline]] inline __m512i load_stored_line(const void* p) {
  const auto* half = static_cast<const __m256i*>(p);
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_load_si256(half)), _mm256_load_si256(half + 1), 1);
}
[[gnu::always_inline]] inline __m512 load_stored_floats(const float* p) { return _mm512_castsi512_ps(load_stored_line(p)); }
ROOFTOP_AVX512_WARNINGS_ON
#endif

/// Streams the 64 bytes at src (64-byte aligned), just stored by the caller, to the 64-byte
/// aligned line dst: one 512-bit streaming store on AVX-512 hosts (load_stored_line), else as
/// stream_whole_lines stores a line.
ROOFTOP_AVX512_WARNINGS_OFF
[[gnu::always_inline]] inline void stream_line(void* dst, const void* src) {
#if defined(ROOFTOP_HAS_STREAMING_STORES) && defined(__AVX512F__)
  _mm512_stream_si512(static_cast<__m512i*>(dst), load_stored_line(src));
#else
  stream_whole_lines(dst, src, 64);
#endif
}
ROOFTOP_AVX512_WARNINGS_ON

#if defined(__AVX512F__) && defined(ROOFTOP_HAS_STREAMING_STORES)
/// Whether 2-byte lanes can be permuted (AVX512BW).
inline constexpr bool has_avx512bw =
#if defined(__AVX512BW__)
    true;
#else
    false;
#endif
#if defined(__AVX512BW__)
/// 0, 1, ..., 31 in 16-bit lanes.
inline __m512i lanes_epi16() {
  alignas(64) static constexpr short lanes[32] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                                                  16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};
  return _mm512_load_si512(lanes);
}
#endif
#endif

/// Streams the line at `at` (line-aligned) made of the first `w` elements of `carry` followed
/// by the first 64 / sizeof(T) - w elements of `next` (at least a line's worth readable), for
/// 0 < w < 64 / sizeof(T). With AVX-512 (AVX512BW for 2-byte T): one load of each, a lane
/// permute and a masked move, where the element copies of the portable version branch on w
/// (a transpose of rows that are not line-aligned meets every w in turn). The permutes are
/// the zero-masking forms with every lane set: GCC 12's plain ones pass an undefined vector
/// and trip -Wmaybe-uninitialized.
template <class T>
inline void stream_joined_line(T* at, const T* carry, std::int64_t w, const T* next) {
  static_assert(64 % sizeof(T) == 0, "stream_joined_line: elements must tile a cache line");
  constexpr std::int64_t line = 64 / static_cast<std::int64_t>(sizeof(T));
#if defined(__AVX512F__) && defined(ROOFTOP_HAS_STREAMING_STORES)
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8 || (sizeof(T) == 2 && has_avx512bw)) {
    const __m512i c = _mm512_loadu_si512(carry), v = _mm512_loadu_si512(next);
    __m512i joined;
    if constexpr (sizeof(T) == 4) {
      const __m512i from = _mm512_sub_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(static_cast<int>(w)));
      joined = _mm512_mask_mov_epi32(_mm512_maskz_permutexvar_epi32(static_cast<__mmask16>(0xffff), from, v), static_cast<__mmask16>((1u << w) - 1), c);
    } else if constexpr (sizeof(T) == 8) {
      const __m512i from = _mm512_sub_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(w));
      joined = _mm512_mask_mov_epi64(_mm512_maskz_permutexvar_epi64(static_cast<__mmask8>(0xff), from, v), static_cast<__mmask8>((1u << w) - 1), c);
    } else {
#if defined(__AVX512BW__)
      const __m512i from = _mm512_sub_epi16(lanes_epi16(), _mm512_set1_epi16(static_cast<short>(w)));
      joined = _mm512_mask_mov_epi16(_mm512_maskz_permutexvar_epi16(~__mmask32{0}, from, v), static_cast<__mmask32>((1ull << w) - 1), c);
#endif
    }
    _mm512_stream_si512(reinterpret_cast<__m512i*>(at), joined);
    return;
  }
#endif
  alignas(64) T whole[line];
  copy_short(reinterpret_cast<char*>(whole), reinterpret_cast<const char*>(carry), static_cast<std::size_t>(w) * sizeof(T));
  copy_short(reinterpret_cast<char*>(whole + w), reinterpret_cast<const char*>(next), static_cast<std::size_t>(line - w) * sizeof(T));
  stream_whole_lines(at, whole, 64);
}

/// Copies the last n < 64 / sizeof(T) elements before `end` to the front of `carry` (room for
/// a line), reading the line's worth before `end`. With AVX-512 one load, a lane permute and a
/// store, where the portable copy branches on n.
template <class T>
inline void keep_last(T* carry, const T* end, std::int64_t n) {
  static_assert(64 % sizeof(T) == 0, "keep_last: elements must tile a cache line");
#if defined(__AVX512F__) && defined(ROOFTOP_HAS_STREAMING_STORES)
  constexpr std::int64_t line = 64 / static_cast<std::int64_t>(sizeof(T));
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8 || (sizeof(T) == 2 && has_avx512bw)) {
    const __m512i v = _mm512_loadu_si512(end - line);
    __m512i kept = v;
    if constexpr (sizeof(T) == 4) {
      kept = _mm512_maskz_permutexvar_epi32(static_cast<__mmask16>(0xffff), _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(static_cast<int>(line - n))), v);
    } else if constexpr (sizeof(T) == 8) {
      kept = _mm512_maskz_permutexvar_epi64(static_cast<__mmask8>(0xff), _mm512_add_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(line - n)), v);
    } else {
#if defined(__AVX512BW__)
      kept = _mm512_maskz_permutexvar_epi16(~__mmask32{0}, _mm512_add_epi16(lanes_epi16(), _mm512_set1_epi16(static_cast<short>(line - n))), v);
#endif
    }
    _mm512_storeu_si512(carry, kept);
    return;
  }
#endif
  copy_short(reinterpret_cast<char*>(carry), reinterpret_cast<const char*>(end - n), static_cast<std::size_t>(n) * sizeof(T));
}

/// Bytes ahead of a host loop's reading position that prefetch_ahead asks for: far enough that
/// the line arrives before the loop gets there. The hardware prefetcher alone fell behind
/// dropout's fp32 loop (blocks of 128 floats read in place, DropoutMask::apply_block): 2^25
/// elements, 2 threads, Zen 5 VM, three alternations of binaries without and with it, 20-23 ->
/// 71-82 GB/s (relu, streamed, 72-88 in the same runs); a scratch loop prefetching 16 KB ahead
/// did no better than 4 KB. (That loop's loads are masked memory operands, which stall on the
/// Zen 5 VM when they miss the cache; see kernels/dropout.hpp's DropoutMask::Lanes.)
inline constexpr std::int64_t prefetch_distance = 4096;

/// Prefetches, into L2, the lines of the `count` elements from p on.
template <class T>
[[gnu::always_inline]] inline void prefetch_run(const T* p, std::int64_t count) {
  const char* const from = reinterpret_cast<const char*>(p);
  const std::int64_t bytes = count * static_cast<std::int64_t>(sizeof(T));
  for (std::int64_t b = 0; b < bytes; b += 64) prefetch_line(from + b);
}

/// Prefetches, into L2, the lines of the `count` elements prefetch_distance bytes after p.
template <class T>
[[gnu::always_inline]] inline void prefetch_ahead(const T* p, std::int64_t count) {
  prefetch_run(reinterpret_cast<const char*>(p) + prefetch_distance, count * static_cast<std::int64_t>(sizeof(T)));
}

/// Writes one contiguous run of T, from `dst` on, piece after piece: each piece's values go
/// into slots() (an L1 buffer, at most `capacity` of them), and commit(count) streams out every
/// line of dst those values complete, carrying a partial last line over to the next piece.
/// Only the run's first and last partial lines, which its neighbours in memory may share, are
/// stored plainly (the first as soon as it is complete, the last by finish()). For runs made
/// of pieces that are not whole lines (a stencil's rows of 323 floats): streaming each piece
/// on its own would store the partial lines at every piece's ends plainly. The caller fences.
template <class T, std::int64_t capacity>
class LineStream {
 public:
  explicit LineStream(T* dst)
      : skip_(static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(dst) & 63) / static_cast<std::int64_t>(sizeof(T))),
        at_(dst - skip_),
        held_(skip_) {
    static_assert(64 % sizeof(T) == 0, "LineStream: elements must tile a cache line");
    static_assert(capacity % line == 0, "LineStream: the capacity must be whole lines (commit moves a whole line)");
  }
  LineStream(const LineStream&) = delete;
  LineStream& operator=(const LineStream&) = delete;

  /// Where the next piece's values go (capacity of them at most).
  T* slots() { return stage_ + held_; }

  /// Hands over the `count` values just put into slots().
  void commit(std::int64_t count) {
    held_ += count;
    std::int64_t whole = held_ / line * line;
    if (whole == 0) return;
    std::int64_t from = 0;
    if (skip_ > 0) {  // the run's first line: dst starts inside it
      std::memcpy(at_ + skip_, stage_ + skip_, static_cast<std::size_t>(line - skip_) * sizeof(T));
      skip_ = 0;
      from = line;
    }
    stream_whole_lines(at_ + from, stage_ + from, static_cast<std::size_t>(whole - from) * sizeof(T));
    std::memcpy(stage_, stage_ + whole, 64);  // the partial line left over, as a whole line: a copy of fixed size
    at_ += whole;
    held_ -= whole;
  }

  /// Stores what is left (the run's last partial line) plainly.
  void finish() {
    std::memcpy(at_ + skip_, stage_ + skip_, static_cast<std::size_t>(held_ - skip_) * sizeof(T));
    at_ += held_;
    held_ = skip_ = 0;
  }

 private:
  static constexpr std::int64_t line = 64 / static_cast<std::int64_t>(sizeof(T));
  alignas(64) T stage_[capacity + line];  // stage_[i] belongs at at_ + i
  std::int64_t skip_;                     // leading slots of the first line that are not the run's
  T* at_;                                 // line-aligned
  std::int64_t held_;
};

/// Orders this thread's streaming stores before everything it does next.
inline void stream_fence() {
#if defined(ROOFTOP_HAS_STREAMING_STORES)
  _mm_sfence();
#endif
}

}  // namespace cpu

/// Host kernels write outputs of at least this many bytes with streaming stores (default: half
/// the last-level cache, where plain stores would start to evict their own output, or the
/// ROOFTOP_STREAMING_STORE_THRESHOLD environment variable: bytes, K, M or G, or "never"). A
/// pipeline whose next kernel reads a large output straight back from cache may raise it, and
/// a host whose cores, not its memory, bound the ops may gain from "never" (docs/kernels.md);
/// 0 streams every output (tests use it to cover that path at small sizes). No effect on GPUs.
inline std::size_t streaming_store_threshold() { return cpu::streaming_threshold().load(std::memory_order_relaxed); }
inline void set_streaming_store_threshold(std::size_t bytes) {
  cpu::streaming_threshold().store(bytes, std::memory_order_relaxed);
}

}  // namespace rooftop
