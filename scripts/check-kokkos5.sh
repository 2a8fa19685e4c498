#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Compile-compatibility check against current Kokkos: every kernel/core header, the harness,
# the benchmarks and the tests, with -std=c++20 -fsyntax-only against the Kokkos 5 headers of
# Debian unstable's libkokkos-dev (unpacked by scripts/setup.sh --kokkos5-headers, never installed).
# On x86 the headers are checked three times: as compiled for any x86-64 (the portable loops),
# for AVX2 hosts (-march=x86-64-v3) and for AVX-512 ones with BF16 and FP16
# (-march=x86-64-v4 -mavx512bf16 -mavx512fp16): most host paths are behind those macros (a
# syntax check does not need the CPU to run them). The sources once, for any x86-64.
set -euo pipefail
cd "$(dirname "$0")/.."
k5=$(scripts/setup.sh --kokkos5-headers | sed -n 's/^KOKKOS5_HEADERS=//p')
inc=$(mktemp -d)
trap 'rm -rf "$inc"' EXIT
mkdir -p "$inc/rooftop"
for d in core kernels backends; do ln -s "$PWD/$d" "$inc/rooftop/$d"; done
cmake -DSOURCE="$PWD" -DOUT="$inc/rooftop_git.hpp" -P cmake/RooftopGitDescribe.cmake  # the harness's commit header
flags=(-std=c++20 -fopenmp -fsyntax-only -Wall -Wextra -I"$k5" -I"$inc")
version=$(sed -n 's/^#define KOKKOS_VERSION \([0-9]*\)/\1/p' "$k5/KokkosCore_config.h")
echo "[kokkos5] checking against Kokkos $version headers in $k5"
fail=0
check() {
  if out=$(g++ "${flags[@]}" "$@" 2>&1); then echo "  ok    ${*: -1}"; else echo "  FAIL  ${*: -1}"; echo "$out" | head -30; fail=1; fi
}
arches=("")
[ "$(uname -m)" = x86_64 ] && arches+=("-march=x86-64-v3" "-march=x86-64-v4 -mavx512bf16 -mavx512fp16")
for arch in "${arches[@]}"; do
  echo "  (${arch:-no -march})"
  read -r -a arch_flags <<< "$arch"
  for h in core/*.hpp kernels/*.hpp; do check ${arch_flags[@]+"${arch_flags[@]}"} -x c++ "$h"; done
done
for src in benchmarks/*.cpp tests/*.cpp; do check "$src"; done
[ "$fail" = 0 ] && echo "[kokkos5] all files compile against Kokkos $version" || { echo "[kokkos5] FAILED"; exit 1; }
