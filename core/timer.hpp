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

/// The median of sorted values (0 if there are none).
inline double median_of_sorted(const std::vector<double>& v) {
  const std::size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

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
    seconds_median = median_of_sorted(samples);
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

/// Two pieces of work timed side by side, so that both see the same moments of the machine
/// (on a shared one the memory's speed drifts by tens of percent over seconds, and best times
/// taken minutes apart compare two moments as well as two kernels): `warmup` untimed runs of
/// each, then `pairs` pairs of fenced runs, a() then b() in even pairs and b() then a() in odd
/// ones (neither always finds the caches as the other left them). ratios[i] is a's time over
/// b's in pair i, sorted.
struct Alternation {
  Timing a, b;
  std::vector<double> ratios;
  double ratio_median() const { return median_of_sorted(ratios); }
};
template <class Exec, class A, class B>
Alternation time_alternated(const Exec& exec, A&& a, B&& b, int warmup, int pairs) {
  for (int i = 0; i < warmup; ++i) {
    time_fenced(exec, a);
    time_fenced(exec, b);
  }
  std::vector<double> sa, sb, ratios;
  for (int i = 0; i < pairs; ++i) {
    if (i % 2 == 0) {
      sa.push_back(time_fenced(exec, a));
      sb.push_back(time_fenced(exec, b));
    } else {
      sb.push_back(time_fenced(exec, b));
      sa.push_back(time_fenced(exec, a));
    }
    ratios.push_back(sa.back() / sb.back());
  }
  std::sort(ratios.begin(), ratios.end());
  return {Timing(std::move(sa)), Timing(std::move(sb)), std::move(ratios)};
}

}  // namespace rooftop
