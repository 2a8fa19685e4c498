// SPDX-License-Identifier: BSD-3-Clause
// Must not compile: softmax computes in fp32, so fp64 storage is refused.
#include <rooftop/kernels/softmax.hpp>
int main() {
  Kokkos::View<double**> x;
  rooftop::softmax(x, x);
}
