// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The op cost model: FLOPs and compulsory bytes (every input read once, every output
/// written once, read-modify-write counted twice). Each kernel header states its own cost
/// next to the kernel with these helpers; the harness and benchmarks read it from there.
#pragma once

#include <cstddef>

namespace rooftop {

/// FLOPs and compulsory bytes of one call of an op.
struct Cost {
  double flops = 0;
  double bytes = 0;
  /// Arithmetic intensity, FLOPs per compulsory byte (0 for ops without bytes).
  constexpr double ai() const { return bytes > 0 ? flops / bytes : 0; }
  /// The cost of two calls in sequence (e.g. the kernels of an unfused chain).
  friend constexpr Cost operator+(const Cost& a, const Cost& b) { return {a.flops + b.flops, a.bytes + b.bytes}; }
};

/// Bytes of `count` elements of T.
template <class T>
constexpr double bytes_of(double count) {
  return count * static_cast<double>(sizeof(T));
}

}  // namespace rooftop
