# SPDX-License-Identifier: BSD-3-Clause
# Configures, builds and runs the parent project in consumer/parent, which adds rooftop with
# add_subdirectory beside the Kokkos package rooftop's build found. ROOFTOP_BACKEND is set to
# a backend that Kokkos may lack (OTHER_BACKEND): it names what rooftop's own executables run
# on, and a parent builds none, so it must not stop the configure.
set(build "${ROOFTOP_BUILD}/consumer-subdirectory")
file(REMOVE_RECURSE "${build}")
function(step)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "add_subdirectory consumer step failed (${rc}): ${ARGV}")
  endif()
endfunction()
step(${CMAKE_COMMAND} -E env --unset=Kokkos_ROOT ${CMAKE_COMMAND} -S "${PARENT_SOURCE}" -B "${build}"
     -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_COMPILER=${CXX}" "-DKokkos_DIR=${KOKKOS_DIR}"
     "-DROOFTOP_SOURCE=${ROOFTOP_SOURCE}" "-DROOFTOP_BACKEND=${OTHER_BACKEND}")
step(${CMAKE_COMMAND} --build "${build}")
step("${build}/consumer")
