#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Offline, idempotent set-up of everything rooftop builds against, from Debian's archive only.
#
#   scripts/setup.sh [--backend openmp|serial|portable|avx2|clang|aarch64|cuda] [--kokkos5-headers]
#
# - Debian packages (doctest, Google Benchmark, nlohmann/json, CLI11, OpenBLAS for rooftop_vs_blas) are installed if missing;
#   for cuda also Debian 12 non-free's nvidia-cuda-toolkit (CUDA 11.8) and g++-11, its host
#   compiler (~1.6 GB download once); for clang (the OpenMP backend built with Clang: the
#   CMake preset `clang`) also Debian's clang and libomp-dev; for aarch64 (the preset of that
#   name: 64-bit Arm, cross-built) Debian's cross compiler g++-aarch64-linux-gnu and qemu-user.
# - Kokkos: if Kokkos_ROOT is set it is used as is. Otherwise Kokkos 3.4.01 is extracted from
#   Debian 12's `trilinos` source package and built into a cache prefix outside the source tree:
#   ${ROOFTOP_CACHE:-~/.cache/rooftop}/kokkos-3.4.01-openmp (OpenMP + Serial) or
#   .../kokkos-3.4.01-cuda-sm80-sm90 (CUDA machine code for sm_80 and sm_90 (Hopper) + OpenMP)
#   or .../kokkos-3.4.01-openmp-aarch64 (OpenMP + Serial for AArch64, cmake/aarch64-linux-gnu.cmake).
#   A second run finds it there and returns in seconds.
# - --kokkos5-headers unpacks the Kokkos 5.x headers of Debian unstable's libkokkos-dev (never
#   installed) into the cache, for the C++20 compile-compatibility check (scripts/check-kokkos5.sh).
# The system's apt sources are never modified: source and unstable look-ups use a private list.
# Prints `KOKKOS_ROOT=<prefix>` as its last line.
set -euo pipefail

backend=openmp
want_kokkos5=0
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) [ $# -ge 2 ] || { echo "setup.sh: --backend needs a value (openmp|serial|portable|avx2|clang|aarch64|cuda)" >&2; exit 2; }
      backend="${2,,}"; shift 2 ;;
    --backend=*) backend="${1#*=}"; backend="${backend,,}"; shift ;;
    --kokkos5-headers) want_kokkos5=1; shift ;;
    -h|--help) sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$backend" in
  openmp|serial|portable|avx2|clang|aarch64|cuda) ;;
  *) echo "setup.sh: unknown backend '$backend' (openmp|serial|portable|avx2|clang|aarch64|cuda)" >&2; exit 2 ;;
esac

cache="${ROOFTOP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rooftop}"
mkdir -p "$cache"
log() { echo "[setup] $*" >&2; }
jobs=$(nproc 2>/dev/null || echo 2)

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "setup.sh: '$*' needs root; run it as root or install the packages yourself" >&2; exit 1; fi
}

# --- 1. Debian packages ------------------------------------------------------------------------
packages=(cmake g++ make libbenchmark-dev doctest-dev nlohmann-json3-dev libcli11-dev libopenblas-dev)
[ "$backend" = clang ] && packages+=(clang libomp-dev)
[ "$backend" = aarch64 ] && packages+=(g++-aarch64-linux-gnu qemu-user)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Private apt configurations (the system's sources are never touched): `lookup` has bookworm's
# sources and unstable's binaries (downloads only, never installed from); `nonfree` has
# bookworm main + contrib + non-free, to install the CUDA toolkit from Debian 12 itself.
private_apt() {
  local name="$1" dir="$cache/apt-$1"
  mkdir -p "$dir/lists/partial" "$dir/archives/partial"
  case "$name" in
    lookup) printf '%s\n' "deb-src http://deb.debian.org/debian bookworm main" "deb http://deb.debian.org/debian sid main" ;;
    nonfree) printf '%s\n' "deb http://deb.debian.org/debian bookworm main contrib non-free" \
                           "deb http://deb.debian.org/debian bookworm-updates main contrib non-free" \
                           "deb http://deb.debian.org/debian-security bookworm-security main contrib non-free" ;;
  esac > "$dir/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o "Dir::State::Lists=$dir/lists" -o Dir::Cache::archives="$dir/archives"
            -o APT::Sandbox::User=root -qq)
  if [ ! -e "$dir/lists/.updated" ] || [ -n "$(find "$dir/lists/.updated" -mmin +1440)" ]; then
    log "updating private apt lists ($name)"
    apt-get "${apt_opts[@]}" update
    touch "$dir/lists/.updated"
  fi
}

if [ "$backend" = cuda ]; then
  cuda_missing=()
  for p in nvidia-cuda-toolkit g++-11; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || cuda_missing+=("$p")
  done
  if [ ${#cuda_missing[@]} -gt 0 ]; then
    private_apt nonfree
    log "installing ${cuda_missing[*]} from Debian 12 non-free (CUDA 11.8, ~1.6 GB download)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y --no-install-recommends "${cuda_missing[@]}" >/dev/null
    rm -rf "$cache/apt-nonfree/archives"/*.deb
  fi
  # CUDA 11.8's nvcc is /usr/bin/nvcc; a newer toolkit earlier on PATH (CUDA 13 cannot build
  # Kokkos 3.4) must not be picked up.
  export PATH="/usr/bin:$PATH" NVCC_WRAPPER_DEFAULT_COMPILER=g++-11
fi

# --- 2. Kokkos -----------------------------------------------------------------------------------
if [ -n "${Kokkos_ROOT:-}" ]; then
  # Where CMake's find_package looks under a prefix: lib, lib64, a multiarch lib/<triplet>
  # (Debian's /usr) or share.
  configs=("$Kokkos_ROOT"/lib/cmake/Kokkos/KokkosConfig.cmake "$Kokkos_ROOT"/lib64/cmake/Kokkos/KokkosConfig.cmake
           "$Kokkos_ROOT"/lib/*/cmake/Kokkos/KokkosConfig.cmake "$Kokkos_ROOT"/share/cmake/Kokkos/KokkosConfig.cmake)
  found=0
  for config in "${configs[@]}"; do [ -e "$config" ] && found=1; done
  [ "$found" = 1 ] \
    || { echo "setup.sh: Kokkos_ROOT=$Kokkos_ROOT holds no lib*/cmake/Kokkos/KokkosConfig.cmake (nor lib/<triplet>/ or share/)" >&2; exit 1; }
  log "using Kokkos from Kokkos_ROOT=$Kokkos_ROOT"
  prefix="$Kokkos_ROOT"
else
  # One Kokkos build (OpenMP + Serial) serves every x86-64 host preset (openmp, serial,
  # portable, avx2, clang): rooftop picks the execution space. The CUDA build has OpenMP as its
  # host space; aarch64 has one of its own, cross-built.
  case "$backend" in
    cuda) flavour=cuda; prefix="$cache/kokkos-3.4.01-cuda-sm80-sm90" ;;
    aarch64) flavour=openmp-aarch64; prefix="$cache/kokkos-3.4.01-openmp-aarch64" ;;
    *) flavour=openmp; prefix="$cache/kokkos-3.4.01-openmp" ;;
  esac
  if [ -e "$prefix/.rooftop-complete" ]; then
    log "Kokkos 3.4.01 already built in $prefix"
  else
    src="$cache/src/kokkos-3.4.01"
    if [ ! -e "$src/CMakeLists.txt" ]; then
      private_apt lookup
      dl="$cache/src/download"
      rm -rf "$dl" && mkdir -p "$dl"
      log "downloading Debian's trilinos source package (~166 MB) for its Kokkos 3.4.01"
      (cd "$dl" && apt-get "${apt_opts[@]}" source --download-only trilinos)
      tarball=$(ls "$dl"/trilinos_*.orig.tar.gz)
      rm -rf "$src.tmp" && mkdir -p "$src.tmp"
      # Only the kokkos folder: Trilinos-<tag>/packages/kokkos/...
      tar -xzf "$tarball" -C "$src.tmp" --strip-components=3 --wildcards '*/packages/kokkos/*'
      grep -q 'Kokkos_VERSION_MAJOR 3' "$src.tmp/CMakeLists.txt" && grep -q 'Kokkos_VERSION_MINOR 4' "$src.tmp/CMakeLists.txt" \
        || { echo "setup.sh: $tarball does not hold Kokkos 3.4" >&2; exit 1; }
      mv "$src.tmp" "$src"
      rm -rf "$dl"
    fi
    if [ "$flavour" = cuda ]; then
      # Machine code for sm_80 and sm_90 (Hopper; CUDA 11.8 knows it, Kokkos 3.4 has no option
      # for it, and nvcc_wrapper takes one architecture flag, so the second comes through nvcc's
      # NVCC_APPEND_FLAGS). Kokkos::initialize aborts where its own kernels run as compute_80
      # PTX compiled by the driver ("running kernels compiled for compute capability 8.0 on
      # device with compute capability 9.0 is not supported", seen on an H100 on 2026-11-26).
      export NVCC_APPEND_FLAGS="-gencode=arch=compute_90,code=sm_90${NVCC_APPEND_FLAGS:+ $NVCC_APPEND_FLAGS}"
      # nvcc_wrapper prefers $CUDA_ROOT/bin/nvcc to the one on PATH: this Kokkos is built with
      # Debian's CUDA 11.8 (a newer toolkit cannot build Kokkos 3.4), whatever CUDA_ROOT says.
      unset CUDA_ROOT
      flags=(-DCMAKE_CXX_COMPILER="$src/bin/nvcc_wrapper" -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON
             -DKokkos_ENABLE_CUDA_CONSTEXPR=ON -DKokkos_ENABLE_OPENMP=ON -DKokkos_ARCH_AMPERE80=ON -DCMAKE_CXX_FLAGS=-arch=sm_80)
      what="CUDA 11.8 (sm_80, sm_90) + OpenMP"
    elif [ "$flavour" = openmp-aarch64 ]; then
      flags=(-DCMAKE_TOOLCHAIN_FILE="$(cd "$(dirname "$0")/.." && pwd)/cmake/aarch64-linux-gnu.cmake"
             -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=ON)
      what="OpenMP + Serial, cross-built for AArch64"
    else
      flags=(-DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=ON)
      what="OpenMP + Serial"
    fi
    log "building Kokkos 3.4.01 ($what) into $prefix"
    bld="$cache/build/kokkos-3.4.01-$flavour"
    rm -rf "$bld"
    cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
      -DCMAKE_CXX_STANDARD=17 "${flags[@]}" \
      -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF >"$cache/kokkos-$flavour-configure.log" 2>&1 \
      || { tail -30 "$cache/kokkos-$flavour-configure.log" >&2; exit 1; }
    cmake --build "$bld" -j "$jobs" >"$cache/kokkos-$flavour-build.log" 2>&1 || { tail -30 "$cache/kokkos-$flavour-build.log" >&2; exit 1; }
    rm -rf "$prefix"
    cmake --install "$bld" >/dev/null
    touch "$prefix/.rooftop-complete"   # an interrupted install is rebuilt next time
    rm -rf "$bld"
  fi
fi

# --- 3. Kokkos 5 headers for the compile check ----------------------------------------------------
if [ "$want_kokkos5" = 1 ]; then
  k5="$cache/kokkos5-headers"
  if [ -e "$k5/usr/include/kokkos/Kokkos_Core.hpp" ]; then
    log "Kokkos 5 headers already in $k5"
  else
    private_apt lookup
    dl="$cache/apt-lookup/debs"
    rm -rf "$dl" && mkdir -p "$dl"
    log "downloading Debian unstable's libkokkos-dev (headers only, unpacked, never installed)"
    (cd "$dl" && apt-get "${apt_opts[@]}" download libkokkos-dev)
    rm -rf "$k5.tmp" && mkdir -p "$k5.tmp"
    dpkg -x "$dl"/libkokkos-dev_*.deb "$k5.tmp"
    rm -rf "$k5" && mv "$k5.tmp" "$k5" && rm -rf "$dl"
  fi
  echo "KOKKOS5_HEADERS=$k5/usr/include/kokkos"
fi

echo "KOKKOS_ROOT=$prefix"
