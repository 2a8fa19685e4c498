// SPDX-License-Identifier: BSD-3-Clause
// Must not compile: sum computes in the View's dtype's compute type, and an integer View would
// be summed in float (2^24 + 1 comes back as 2^24), so integer values are refused.
#include <rooftop/kernels/reduce.hpp>
int main() {
  Kokkos::View<long*> x;
  rooftop::sum(x);
}
