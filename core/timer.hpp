// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Fenced timing: the execution space instance is fenced before the clock starts and before it
/// stops, so asynchronous launches cannot hide work from the timer (on CUDA the clock is a
/// pair of CUDA events on the instance's stream).
#pragma once

#include "kokkos_compat.hpp"
#include "../backends/cuda/device.hpp"

#include <algorithm>
#include <chrono>
#include <type_traits>
#include <utility>
#include <vector>

namespace rooftop {

/// Min and median of repeated timings, in seconds, and the samples they come from.
struct Timing {
  double seconds_min = 0;
  double seconds_median = 0;
  int repetitions = 0;
  std::vector<double> samples;  // sorted

  explicit Timing(std::vector<double> s = {}) : samples(std::move(s)) {
    std::sort(samples.begin(), samples.end());
    const std::size_t n = samples.size();
    repetitions = static_cast<int>(n);
    if (n == 0) return;
    seconds_min = samples.front();
    seconds_median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  }
  /// The timings of two runs of the same work taken together (e.g. two rounds of a sweep).
  friend Timing merge(const Timing& a, const Timing& b) {
    std::vector<double> all = a.samples;
    all.insert(all.end(), b.samples.begin(), b.samples.end());
    return Timing(std::move(all));
  }
};

/// Seconds taken by f(), with exec fenced before and after; on CUDA, measured between CUDA
/// events on exec's stream (the device's clock).
template <class Exec, class F>
double time_fenced(const Exec& exec, F&& f) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) return cuda::time_events(exec, f);
#endif
  exec.fence();
  const auto start = std::chrono::steady_clock::now();
  f();
  exec.fence();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Runs f() `warmup` times untimed, then times it at least `min_reps` times and until
/// `min_seconds` of timed work have passed (at most `max_reps` times), calling between() after
/// each timed run (untimed).
template <class Exec, class F, class Between>
Timing time_repeated_with(const Exec& exec, F&& f, int warmup, int min_reps, double min_seconds, Between&& between,
                          int max_reps = 1000) {
  for (int i = 0; i < warmup; ++i) time_fenced(exec, f);
  std::vector<double> samples;
  double total = 0;
  while (static_cast<int>(samples.size()) < min_reps ||
         (total < min_seconds && static_cast<int>(samples.size()) < max_reps)) {
    samples.push_back(time_fenced(exec, f));
    total += samples.back();
    between();
  }
  return Timing(std::move(samples));
}

/// time_repeated_with, nothing between the runs.
template <class Exec, class F>
Timing time_repeated(const Exec& exec, F&& f, int warmup, int min_reps, double min_seconds, int max_reps = 1000) {
  return time_repeated_with(exec, f, warmup, min_reps, min_seconds, [] {}, max_reps);
}

}  // namespace rooftop
