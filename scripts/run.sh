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
# without -march=native), clang (OpenMP built with Clang) or cuda.
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-}"
[ $# -gt 0 ] && shift
case "$what" in
  roofline|test|bench|build) ;;
  *) sed -n '3,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
preset="${ROOFTOP_PRESET:-openmp}"

kokkos_root=$(scripts/setup.sh --backend "$preset" | sed -n 's/^KOKKOS_ROOT=//p')
export Kokkos_ROOT="$kokkos_root"
echo "[run] configuring and building (preset $preset, Kokkos from $kokkos_root)" >&2
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)" >/dev/null 2>build/build-"$preset".log || { cat build/build-"$preset".log >&2; exit 1; }

# Pinned threads: stable bandwidth figures, and no Kokkos warning.
export OMP_PROC_BIND="${OMP_PROC_BIND:-spread}" OMP_PLACES="${OMP_PLACES:-threads}"
case "$what" in
  roofline) exec "build/$preset/bin/rooftop" "$@" ;;
  test) exec ctest --preset "$preset" "$@" ;;
  bench) exec "build/$preset/bin/rooftop_bench" "$@" ;;
  build) echo "[run] built build/$preset/bin: $(ls "build/$preset/bin" | tr '\n' ' ')" >&2 ;;
esac
