// SPDX-License-Identifier: BSD-3-Clause
#include <rooftop/core/backend.hpp>
#include <rooftop/kernels/stream.hpp>

#include <cstdio>
#include <cstring>
#include <type_traits>

// Included without a ROOFTOP_BACKEND_* definition (rooftop::kernels defines none), backend.hpp
// names Kokkos's default execution space, not a host space the Kokkos happens to have.
static_assert(std::is_same_v<rooftop::BackendExec, Kokkos::DefaultExecutionSpace>);

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  Kokkos::View<float*> x("x", 1000), y("y", 1000), z("z", 1000);
  Kokkos::deep_copy(x, 1.0f);
  Kokkos::deep_copy(y, 2.0f);
  rooftop::triad(0.5, x, y, z);  // z = 1 + 0.5 * 2 = 2
  const float d = rooftop::dot(z, z);
  std::printf("consumer on %s: dot = %g\n", rooftop::backend_name, d);
  return d == 4000.0f && std::strcmp(rooftop::backend_name, Kokkos::DefaultExecutionSpace::name()) == 0 ? 0 : 1;
}
