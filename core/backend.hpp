// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// The execution space the build's backend selects (CMake: -DROOFTOP_BACKEND=OpenMP|Serial|CUDA).
/// Used by rooftop's harness, benchmarks and tests; the kernels themselves take any space.
/// Included with none of ROOFTOP_BACKEND_{SERIAL,CUDA,OPENMP} defined (as by a user's code,
/// which rooftop::kernels leaves undefined), it names Kokkos's default execution space, the one
/// Kokkos::View<T*> and RangePolicy use there.
#pragma once

#include "kokkos_compat.hpp"

namespace rooftop {

#if defined(ROOFTOP_BACKEND_SERIAL)
#if !defined(KOKKOS_ENABLE_SERIAL)
#error "ROOFTOP_BACKEND=Serial needs a Kokkos built with Kokkos_ENABLE_SERIAL=ON"
#endif
using BackendExec = Kokkos::Serial;
inline constexpr const char* backend_name = "Serial";
#elif defined(ROOFTOP_BACKEND_CUDA)
#if !defined(KOKKOS_ENABLE_CUDA)
#error "ROOFTOP_BACKEND=CUDA needs a Kokkos built with Kokkos_ENABLE_CUDA=ON"
#endif
using BackendExec = Kokkos::Cuda;
inline constexpr const char* backend_name = "CUDA";
#elif defined(ROOFTOP_BACKEND_OPENMP)
#if !defined(KOKKOS_ENABLE_OPENMP)
#error "ROOFTOP_BACKEND=OpenMP needs a Kokkos built with Kokkos_ENABLE_OPENMP=ON"
#endif
using BackendExec = Kokkos::OpenMP;
inline constexpr const char* backend_name = "OpenMP";
#else
using BackendExec = Kokkos::DefaultExecutionSpace;
inline const char* const backend_name = Kokkos::DefaultExecutionSpace::name();
#endif

/// Memory space of the backend's Views.
using BackendMemory = typename BackendExec::memory_space;

}  // namespace rooftop
