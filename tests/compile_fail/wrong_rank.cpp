// SPDX-License-Identifier: BSD-3-Clause
// Must not compile: triad takes rank-1 Views.
#include <rooftop/kernels/stream.hpp>
int main() {
  Kokkos::View<float**> x;
  rooftop::triad(2.0, x, x, x);
}
