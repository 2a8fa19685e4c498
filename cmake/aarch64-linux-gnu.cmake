# SPDX-License-Identifier: BSD-3-Clause
# Cross build for 64-bit Arm Linux (AArch64: Neoverse, Grace, Graviton, A64FX) on an x86-64
# Debian host, with Debian's cross compiler (g++-aarch64-linux-gnu), its AArch64 C and C++
# libraries in /usr/aarch64-linux-gnu, and QEMU's user-mode emulator (qemu-user) to run what
# it builds: the CMake preset `aarch64` (scripts/setup.sh --backend aarch64 installs them and
# builds Kokkos with this file). ctest runs the tests through the emulator; the emulated
# figures of the harness say nothing of an Arm CPU's speed.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
# Header-only packages (doctest, nlohmann_json, CLI11) and the Kokkos built for AArch64 are
# found outside the target's root too.
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# Cached, so that scripts/run.sh finds it in the build folder (and -D can name another).
set(CMAKE_CROSSCOMPILING_EMULATOR "qemu-aarch64;-L;/usr/aarch64-linux-gnu"
    CACHE STRING "The command that runs the target's binaries on this host")
