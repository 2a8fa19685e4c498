// SPDX-License-Identifier: BSD-3-Clause
// Must not compile: gelu computes in fp32, and an integer input would be read as float (values
// past 2^24 rounded) into a float output, so every View's values must be fp32, bf16 or fp16.
#include <rooftop/kernels/activation.hpp>
int main() {
  Kokkos::View<int*> x;
  Kokkos::View<float*> y;
  rooftop::gelu(x, y);
}
