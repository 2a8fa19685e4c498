#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One entry point: set up dependencies (scripts/setup.sh), configure and build, then run.
#
#   scripts/run.sh roofline [rooftop args...]   roofline harness -> results/ (report.json, report.csv, roofline.svg)
#   scripts/run.sh test [ctest args...]         the whole test suite
#   scripts/run.sh bench [benchmark args...]    the Google Benchmark suite
#   scripts/run.sh build                        set up and build only (binaries in build/<preset>/bin)
#
# ROOFTOP_PRESET selects the CMake preset: openmp (the default), serial, portable (OpenMP
# without -march=native), avx2 (OpenMP for AVX2 hosts without AVX-512), clang (OpenMP built
# with Clang), aarch64 (64-bit Arm, cross-built and run under QEMU; no bench) or cuda.
# Paths given to roofline and bench (--out, --benchmark_out) are taken from the directory
# run.sh is run in, as the binaries' own would be.
set -euo pipefail
caller="$PWD"
cd "$(dirname "$0")/.."
repo="$PWD"
what="${1:-}"
[ $# -gt 0 ] && shift
case "$what" in
  roofline|test|bench|build) ;;
  *) sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
preset="${ROOFTOP_PRESET:-openmp}"
if [ "$preset" = aarch64 ] && [ "$what" = bench ]; then
  echo "run.sh: the aarch64 preset builds no benchmark suite (Google Benchmark is not installed for Arm)" >&2
  exit 2
fi

kokkos_root=$(scripts/setup.sh --backend "$preset" | sed -n 's/^KOKKOS_ROOT=//p')
export Kokkos_ROOT="$kokkos_root"
# roofline and bench build their binary alone; test and build, everything.
case "$what" in
  roofline) targets=(--target rooftop) ;;
  bench) targets=(--target rooftop_bench) ;;
  *) targets=() ;;
esac
log="build/build-$preset.log"
echo "[run] configuring and building ${targets[1]:-everything} (preset $preset, Kokkos from $kokkos_root; log in $log)" >&2
# Kokkos_DIR unset: a build folder configured with another Kokkos_ROOT before would keep the
# Kokkos it found then (a cached <Package>_DIR wins over <Package>_ROOT).
cmake --preset "$preset" -U Kokkos_DIR >/dev/null
# Progress: one line per file compiled and binary linked; on failure, the log less those lines.
status=0
cmake --build --preset "$preset" -j "$(nproc)" ${targets[@]+"${targets[@]}"} 2>&1 | tee "$log" |
  { grep --line-buffered -E '^\[ *[0-9]+%\] (Building|Linking)' | sed -u 's/^/[run]   /' >&2 || true; } || status=$?
if [ "$status" -ne 0 ]; then
  grep -v -E '^\[ *[0-9]+%\] ' "$log" >&2 || true
  echo "[run] the build failed (exit status $status); its whole output is in $log" >&2
  exit 1
fi

# A cross build's binaries run under the emulator its toolchain file names, which CMake keeps
# in the build folder's cache as a ;-list (ctest adds it itself).
emulator=()
IFS=";" read -r -a emulator < <(sed -n 's/^CMAKE_CROSSCOMPILING_EMULATOR:[A-Z]*=//p' "build/$preset/CMakeCache.txt") || true

# Pinned threads: stable bandwidth figures, and no Kokkos warning.
export OMP_PROC_BIND="${OMP_PROC_BIND:-spread}" OMP_PLACES="${OMP_PLACES:-threads}"
case "$what" in
  roofline) cd "$caller" && exec ${emulator[@]+"${emulator[@]}"} "$repo/build/$preset/bin/rooftop" "$@" ;;
  test) exec ctest --preset "$preset" "$@" ;;
  bench) cd "$caller" && exec "$repo/build/$preset/bin/rooftop_bench" "$@" ;;
  build) echo "[run] built build/$preset/bin: $(ls "build/$preset/bin" | tr '\n' ' ')" >&2 ;;
esac
