// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// What the harness needs from CUDA beyond Kokkos: the device's name and L2 size, and timing
/// with CUDA events recorded on the execution space's stream (the GPU's own clock: neither
/// asynchronous launches nor host-side jitter can shorten or stretch what is measured).
#pragma once

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace rooftop::cuda {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

inline cudaDeviceProp properties(const Kokkos::Cuda& exec) {
  cudaDeviceProp p;
  check(cudaGetDeviceProperties(&p, exec.cuda_device()), "cudaGetDeviceProperties");
  return p;
}

/// "NVIDIA H100 80GB HBM3, 132 SMs".
inline std::string device_name(const Kokkos::Cuda& exec) {
  const cudaDeviceProp p = properties(exec);
  return std::string(p.name) + ", " + std::to_string(p.multiProcessorCount) + " SMs";
}

/// Bytes of the device's L2 cache (its last-level cache).
inline double l2_bytes(const Kokkos::Cuda& exec) { return static_cast<double>(properties(exec).l2CacheSize); }

/// Bytes of the device's memory.
inline double memory_bytes(const Kokkos::Cuda& exec) { return static_cast<double>(properties(exec).totalGlobalMem); }

/// A CUDA event, destroyed with its scope (also where f() or a check throws).
struct Event {
  cudaEvent_t event{};
  Event() { check(cudaEventCreate(&event), "cudaEventCreate"); }
  ~Event() { cudaEventDestroy(event); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

/// Seconds f() takes on exec's stream, between two CUDA events (f must only enqueue work on
/// exec). The instance is fenced first, so earlier work is not counted.
template <class F>
double time_events(const Kokkos::Cuda& exec, F&& f) {
  const Event start, stop;
  exec.fence();
  check(cudaEventRecord(start.event, exec.cuda_stream()), "cudaEventRecord");
  f();
  check(cudaEventRecord(stop.event, exec.cuda_stream()), "cudaEventRecord");
  check(cudaEventSynchronize(stop.event), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start.event, stop.event), "cudaEventElapsedTime");
  exec.fence();  // work f() enqueued elsewhere (other instances) is finished too
  return 1e-3 * ms;
}

}  // namespace rooftop::cuda
#endif
