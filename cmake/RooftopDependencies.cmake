# SPDX-License-Identifier: BSD-3-Clause
# Finds rooftop's dependencies. Kokkos: the one CMake finds (Kokkos_ROOT, CMAKE_PREFIX_PATH),
# else the one scripts/setup.sh built into the cache prefix. Nothing is downloaded here.
include(GNUInstallDirs)

set(ROOFTOP_CACHE "$ENV{ROOFTOP_CACHE}")
if(NOT ROOFTOP_CACHE)
  if(DEFINED ENV{XDG_CACHE_HOME})
    set(ROOFTOP_CACHE "$ENV{XDG_CACHE_HOME}/rooftop")
  else()
    set(ROOFTOP_CACHE "$ENV{HOME}/.cache/rooftop")
  endif()
endif()

set(ROOFTOP_SETUP_BACKEND "${ROOFTOP_BACKEND}")  # scripts/setup.sh's --backend that builds it
if(ROOFTOP_BACKEND_UPPER STREQUAL "CUDA")
  set(ROOFTOP_KOKKOS_CACHE_PREFIX "${ROOFTOP_CACHE}/kokkos-3.4.01-cuda-sm80-sm90")
elseif(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")  # cmake/aarch64-linux-gnu.cmake
  set(ROOFTOP_KOKKOS_CACHE_PREFIX "${ROOFTOP_CACHE}/kokkos-3.4.01-openmp-aarch64")
  set(ROOFTOP_SETUP_BACKEND aarch64)
else()
  set(ROOFTOP_KOKKOS_CACHE_PREFIX "${ROOFTOP_CACHE}/kokkos-3.4.01-openmp")
endif()
if(TARGET Kokkos::kokkos AND NOT Kokkos_FOUND)
  # A parent project's Kokkos built in its own tree (add_subdirectory): no package to find.
  message(STATUS "rooftop: the parent project's Kokkos::kokkos target")
else()
  # No version in the call: a package whose version file declares SameMajorVersion (Kokkos
  # 3.4's does) refuses a request across major versions, and a Kokkos 4 or 5 built that way
  # would be reported as not found. The floor is checked below, naming the version found.
  find_package(Kokkos CONFIG QUIET HINTS "${ROOFTOP_KOKKOS_CACHE_PREFIX}")
  if(NOT Kokkos_FOUND)
    message(FATAL_ERROR
      "rooftop: Kokkos (>= 3.4) not found. Either point Kokkos_ROOT at an installed Kokkos, or run\n"
      "  scripts/setup.sh --backend ${ROOFTOP_SETUP_BACKEND}\n"
      "which builds Kokkos 3.4.01 from Debian's trilinos source package into ${ROOFTOP_CACHE}.")
  endif()
  if(Kokkos_VERSION VERSION_LESS 3.4)
    message(FATAL_ERROR "rooftop: the Kokkos in ${Kokkos_DIR} is ${Kokkos_VERSION}; rooftop needs 3.4 or newer.")
  endif()
  message(STATUS "rooftop: Kokkos ${Kokkos_VERSION} from ${Kokkos_DIR}")
endif()

# rooftop's own executables (harness, benchmarks, tests; on by default only where rooftop is
# the top-level project) run on ROOFTOP_BACKEND, whose execution space Kokkos must have
# (checked where rooftop found Kokkos's package, whose variables kokkos_check reads; not for
# a parent's in-tree Kokkos). A parent project that builds none of them runs the kernels on
# its own Kokkos's backends, whichever they are: only what the kernels' device code needs
# from a CUDA Kokkos is checked then.
set(ROOFTOP_BUILDS_EXECUTABLES OFF)
if(ROOFTOP_BUILD_HARNESS OR ROOFTOP_BUILD_BENCHMARKS OR ROOFTOP_BUILD_TESTS)
  set(ROOFTOP_BUILDS_EXECUTABLES ON)
endif()
if(NOT Kokkos_FOUND)
  message(STATUS "rooftop: not checking that the parent's Kokkos has the ${ROOFTOP_BACKEND} backend")
else()
  if(ROOFTOP_BUILDS_EXECUTABLES)
    if(ROOFTOP_BACKEND_UPPER STREQUAL "OPENMP")
      kokkos_check(DEVICES OpenMP)
    elseif(ROOFTOP_BACKEND_UPPER STREQUAL "SERIAL")
      kokkos_check(DEVICES Serial)
    elseif(ROOFTOP_BACKEND_UPPER STREQUAL "CUDA")
      kokkos_check(DEVICES Cuda)
    endif()
  endif()
  kokkos_check(DEVICES Cuda RETURN_VALUE ROOFTOP_KOKKOS_HAS_CUDA)
  if(ROOFTOP_KOKKOS_HAS_CUDA)
    # The kernels' device code is written in KOKKOS_LAMBDAs (Kokkos_ENABLE_CUDA_LAMBDA) and
    # calls constexpr host functions (std::numeric_limits<float>::infinity() among them),
    # which nvcc accepts only with --expt-relaxed-constexpr; Kokkos 3.x adds that flag only
    # when built with Kokkos_ENABLE_CUDA_CONSTEXPR (off by default; scripts/setup.sh turns it
    # on).
    kokkos_check(OPTIONS CUDA_LAMBDA)
    if(Kokkos_VERSION VERSION_LESS 4.0)
      kokkos_check(OPTIONS CUDA_CONSTEXPR RETURN_VALUE ROOFTOP_KOKKOS_RELAXED_CONSTEXPR)
      if(NOT ROOFTOP_KOKKOS_RELAXED_CONSTEXPR)
        message(FATAL_ERROR
          "rooftop: the Kokkos in ${Kokkos_DIR} was built without Kokkos_ENABLE_CUDA_CONSTEXPR, which "
          "rooftop's device code needs (nvcc's --expt-relaxed-constexpr). Rebuild it with "
          "-DKokkos_ENABLE_CUDA_CONSTEXPR=ON, or let scripts/setup.sh --backend cuda build one.")
      endif()
    endif()
  endif()
  # Kokkos links the shared CUDA runtime (CUDA::cudart -> libcudart.so). rooftop's own
  # executables take the static one beside it where the toolkit has it, so that a build carried
  # to a GPU machine needs only the driver there (a CUDA 13 machine has no libcudart.so.11.0).
  # Only where rooftop is the top-level project: the imported target is shared with every
  # target of the build, and a parent's choice of runtime is its own.
  if(ROOFTOP_IS_TOP_LEVEL AND ROOFTOP_BACKEND_UPPER STREQUAL "CUDA" AND TARGET CUDA::cudart)
    get_target_property(ROOFTOP_CUDART CUDA::cudart IMPORTED_LOCATION)
    get_filename_component(ROOFTOP_CUDART_DIR "${ROOFTOP_CUDART}" DIRECTORY)
    if(ROOFTOP_CUDART MATCHES "\\.so" AND EXISTS "${ROOFTOP_CUDART_DIR}/libcudart_static.a")
      # The static runtime also calls dlopen and shm_open: libdl and librt, separate libraries
      # before glibc 2.34 (FindCUDAToolkit's CUDA::cudart_static links the same three). By
      # path: nvcc_wrapper hands -l options to nvlink too, which warns at every host library.
      find_package(Threads REQUIRED)
      find_library(ROOFTOP_DL_LIBRARY dl)
      find_library(ROOFTOP_RT_LIBRARY rt)
      mark_as_advanced(ROOFTOP_DL_LIBRARY ROOFTOP_RT_LIBRARY)
      set(ROOFTOP_CUDART_DEPS Threads::Threads)
      foreach(lib ROOFTOP_DL_LIBRARY ROOFTOP_RT_LIBRARY)
        if(${lib})
          list(APPEND ROOFTOP_CUDART_DEPS "${${lib}}")
        endif()
      endforeach()
      set_target_properties(CUDA::cudart PROPERTIES IMPORTED_LOCATION "${ROOFTOP_CUDART_DIR}/libcudart_static.a"
                                                    INTERFACE_LINK_LIBRARIES "${ROOFTOP_CUDART_DEPS}")
    endif()
  endif()
endif()

# C++17, or C++20 where Kokkos requires it (Kokkos 5).
if(Kokkos_VERSION VERSION_GREATER_EQUAL 5.0)
  set(ROOFTOP_CXX_STANDARD 20)
else()
  set(ROOFTOP_CXX_STANDARD 17)
endif()

# Each for what uses it: the harness writes JSON and parses its command line; only the
# benchmark suite links Google Benchmark.
if(ROOFTOP_BUILD_HARNESS)
  find_package(nlohmann_json 3 REQUIRED)
  find_package(CLI11 REQUIRED)
endif()
if(ROOFTOP_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
if(ROOFTOP_BUILD_TESTS)
  find_package(doctest REQUIRED)
endif()
