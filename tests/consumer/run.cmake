# SPDX-License-Identifier: BSD-3-Clause
# Builds and runs a consumer of rooftop, one of two ways:
# - without PARENT_SOURCE: installs the rooftop build into a scratch prefix, then configures,
#   builds and runs the consumer project in CONSUMER_SOURCE (find_package(rooftop));
# - with PARENT_SOURCE: configures, builds and runs that parent project, which adds rooftop's
#   source tree (ROOFTOP_SOURCE) with add_subdirectory beside the Kokkos package rooftop's build
#   found (KOKKOS_DIR). ROOFTOP_BACKEND is set to a backend that Kokkos may lack
#   (OTHER_BACKEND): it names what rooftop's own executables run on, and a parent builds none,
#   so it must not stop the configure. Installing that parent must install none of rooftop.
# A cross build hands its toolchain file (TOOLCHAIN) and emulator (EMULATOR, its words joined by
# spaces): the consumer is built with the one and run through the other.
function(step)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer test step failed (${rc}): ${ARGV}")
  endif()
endfunction()
separate_arguments(run UNIX_COMMAND "${EMULATOR}")
set(toolchain)
if(TOOLCHAIN)
  set(toolchain "-DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN}")
endif()
if(PARENT_SOURCE)
  set(build "${ROOFTOP_BUILD}/consumer-subdirectory")
  file(REMOVE_RECURSE "${build}")
  step(${CMAKE_COMMAND} -E env --unset=Kokkos_ROOT ${CMAKE_COMMAND} -S "${PARENT_SOURCE}" -B "${build}"
       -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_COMPILER=${CXX}" "-DKokkos_DIR=${KOKKOS_DIR}"
       "-DROOFTOP_SOURCE=${ROOFTOP_SOURCE}" "-DROOFTOP_BACKEND=${OTHER_BACKEND}" ${toolchain})
else()
  set(prefix "${ROOFTOP_BUILD}/consumer-test/prefix")
  set(build "${ROOFTOP_BUILD}/consumer-test/build")
  file(REMOVE_RECURSE "${ROOFTOP_BUILD}/consumer-test")
  step(${CMAKE_COMMAND} --install "${ROOFTOP_BUILD}" --prefix "${prefix}" --component Unspecified)
  # Kokkos is not named here (nor in the environment): the installed package finds the one
  # rooftop was built against.
  step(${CMAKE_COMMAND} -E env --unset=Kokkos_ROOT --unset=Kokkos_DIR ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE}" -B "${build}"
       -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX}" ${toolchain})
endif()
step(${CMAKE_COMMAND} --build "${build}")
step(${run} "${build}/consumer")
if(PARENT_SOURCE)
  # ROOFTOP_INSTALL defaults to OFF under add_subdirectory: installing the parent installs none
  # of rooftop (no headers, no export, no package files).
  set(prefix "${build}/install-prefix")
  step(${CMAKE_COMMAND} --install "${build}" --prefix "${prefix}")
  file(GLOB_RECURSE installed RELATIVE "${prefix}" "${prefix}/*")
  if(installed)
    message(FATAL_ERROR "installing a parent of rooftop installed rooftop's files: ${installed}")
  endif()
endif()
