// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The host's memory as the harness and rooftop_vs_blas see it: its size, and the harness's
/// page policy (its host arrays in transparent huge pages where Linux offers them).
///
/// With 4 KiB pages the bandwidth a streaming kernel attains depends on where its arrays
/// happened to land. On the 2-core Zen 3 VM, four sets of triad arrays (268 MB each) allocated
/// one after another and timed round-robin in one process had medians from 26 to 37 GB/s, in
/// the same order run after run, so a ceiling measured on one allocation and an op on another
/// differed by up to 30% for no reason of their own (the ceiling came out below the ops it
/// bounds). In 2 MiB pages all sets ran alike: medians within 3%, best runs within 2%.
///
/// Debian's default THP mode is "madvise": only memory that asks gets huge pages. The harness
/// asks for every host View it allocates: a Kokkos Tools allocation callback, which Kokkos
/// calls after allocating and before the View's first touch, marks the View's whole 2 MiB
/// pages MADV_HUGEPAGE. Users' codes can do the same (or start with
/// GLIBC_TUNABLES=glibc.malloc.hugetlb=1, glibc 2.35 or later); `rooftop --pages system`
/// measures with the system's default pages instead.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__unix__)
#include <unistd.h>
#endif

namespace rooftop::harness {

namespace detail {

/// The value of the first "Key: N kB" line of a Linux /proc file (/proc/meminfo,
/// /proc/self/smaps_rollup) whose key is `key` (with its colon), in KiB, or -1 where the file
/// or the line is missing or does not parse.
inline long long kib_field(const char* path, const std::string& key) {
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);)
    if (line.rfind(key, 0) == 0) {
      long long kib = -1;
      std::istringstream(line.substr(key.size())) >> kib;
      return kib;
    }
  return -1;
}

}  // namespace detail

/// The host's physical memory in bytes, or 0 where it cannot be read: the bound that sizes
/// beyond the memory are refused against before anything is allocated.
inline double host_memory_bytes() {
#if defined(__unix__) && defined(_SC_PHYS_PAGES)
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
#else
  return 0.0;
#endif
}

/// The host memory available to this process now in bytes (Linux's MemAvailable: free memory
/// and the page cache the kernel can reclaim, net of what this process and others hold), else
/// host_memory_bytes(): what a verification can count on, where the physical memory is more
/// than any one process gets (a 25.3 GB VM killed a 24.4 GB process for memory).
inline double host_available_bytes() {
  const long long kib = detail::kib_field("/proc/meminfo", "MemAvailable:");
  return kib > 0 ? static_cast<double>(kib) * 1024 : host_memory_bytes();
}

/// Host memory a run keeps free beside the bytes it counts against host_available_bytes (its
/// arrays; the harness's float64 verification) for what it does not count: the reference's
/// temporaries, the report, the allocator's slack. Zen 5 VM, `/usr/bin/time -v rooftop --quick
/// --ops gelu --dtypes fp32 --sizes N`, peak resident above the bytes counted (the process's
/// start included): N = 2e8, 6.4 GB counted, 0.13 GB; Zen 3 VM, N = 745000000, 23.8 GB
/// counted, 0.3 GB.
inline constexpr double process_reserve_bytes = 0.5e9;

/// "the 24.6 GB the host has available (of 25.3 GB), less 0.5 GB kept for the rest of the
/// process": `available` (host_available_bytes), the physical memory and
/// process_reserve_bytes, in the words a refusal for memory gives them.
inline std::string host_available_words(double available) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << "the " << available * 1e-9 << " GB the host has available (of " << host_memory_bytes() * 1e-9 << " GB), less "
    << process_reserve_bytes * 1e-9 << " GB kept for the rest of the process";
  return s.str();
}

/// Linux's transparent huge page mode ("always", "madvise" or "never"), or "unknown".
inline std::string transparent_huge_pages_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(f, line);  // e.g. "always [madvise] never"
  const auto open = line.find('['), close = line.find(']');
  return open != std::string::npos && close > open ? line.substr(open + 1, close - open - 1) : "unknown";
}

/// Bytes of this process's anonymous memory now in transparent huge pages, or -1 if unknown.
inline long long anon_huge_page_bytes() {
  const long long kib = detail::kib_field("/proc/self/smaps_rollup", "AnonHugePages:");
  return kib < 0 ? -1 : kib * 1024;
}

namespace detail {

/// Kokkos Tools allocation callback: marks the whole 2 MiB pages inside a new host allocation
/// MADV_HUGEPAGE (the View is not yet touched, so its pages fault in huge).
inline void advise_huge_pages(const Kokkos_Profiling_SpaceHandle space, const char*, const void* ptr, const std::uint64_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (std::strcmp(space.name, Kokkos::HostSpace::name()) != 0) return;
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  const auto begin = (reinterpret_cast<std::uintptr_t>(ptr) + huge - 1) & ~(huge - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(ptr) + bytes) & ~(huge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // advice: failure is harmless
#else
  (void)space, (void)ptr, (void)bytes;
#endif
}

}  // namespace detail

/// Asks for transparent huge pages for every host View allocated from now on (call after
/// Kokkos is initialized). Does nothing where THP is off ("never"), already on for everything
/// ("always"), or a Kokkos tool is loaded (its allocation callback is left alone). Returns the
/// page policy in words, for the terminal and the report.
inline std::string use_huge_pages_for_host_views() {
  const std::string mode = transparent_huge_pages_mode();
  if (mode == "always") return "transparent huge pages (THP always)";
  if (mode != "madvise") return "system default pages (THP " + mode + ")";
  if (Kokkos::Tools::profileLibraryLoaded()) return "system default pages (THP madvise; a Kokkos tool is loaded)";
  Kokkos::Tools::Experimental::set_allocate_data_callback(&detail::advise_huge_pages);
  return "transparent huge pages (THP madvise, asked for per host View)";
}

}  // namespace rooftop::harness
