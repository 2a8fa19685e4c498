// SPDX-License-Identifier: BSD-3-Clause
#include <rooftop/kernels/stream.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  Kokkos::View<float*> x("x", 1000), y("y", 1000), z("z", 1000);
  Kokkos::deep_copy(x, 1.0f);
  Kokkos::deep_copy(y, 2.0f);
  rooftop::triad(0.5, x, y, z);  // z = 1 + 0.5 * 2 = 2
  const float d = rooftop::dot(z, z);
  std::printf("consumer: dot = %g\n", d);
  return d == 4000.0f ? 0 : 1;
}
