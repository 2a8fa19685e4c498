// SPDX-License-Identifier: BSD-3-Clause
// Must not compile: gemm accumulates in its inputs' compute type, which for integers would be
// float (products past 2^24 rounded), so integer values are refused.
#include <rooftop/kernels/gemm.hpp>
int main() {
  Kokkos::View<int**> a, b, c;
  rooftop::gemm(rooftop::Trans::none, a, rooftop::Trans::none, b, c, 1, 0);
}
