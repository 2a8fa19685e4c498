// SPDX-License-Identifier: BSD-3-Clause
// doctest main: initializes Kokkos once around the whole run and prints the random seed.
#define DOCTEST_CONFIG_IMPLEMENT
#include "common.hpp"

#include <cstdio>

std::uint64_t rooftop::test::run_seed() {
  static const std::uint64_t seed = [] {
    const char* env = std::getenv("ROOFTOP_TEST_SEED");
    return env ? std::strtoull(env, nullptr, 0) : (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  }();
  return seed;
}

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  std::printf("rooftop tests on %s, seed %llu (replay with ROOFTOP_TEST_SEED=%llu)\n", rooftop::backend_name,
              static_cast<unsigned long long>(rooftop::test::run_seed()), static_cast<unsigned long long>(rooftop::test::run_seed()));
  doctest::Context context(argc, argv);
  return context.run();
}
