// SPDX-License-Identifier: BSD-3-Clause
// Must not compile: the output View is const.
#include <rooftop/kernels/stream.hpp>
int main() {
  Kokkos::View<const float*> x, y;
  rooftop::copy(x, y);
}
