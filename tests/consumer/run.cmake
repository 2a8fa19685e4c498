# SPDX-License-Identifier: BSD-3-Clause
# Installs the rooftop build into a scratch prefix, then configures, builds and runs the consumer.
set(prefix "${ROOFTOP_BUILD}/consumer-test/prefix")
set(build "${ROOFTOP_BUILD}/consumer-test/build")
file(REMOVE_RECURSE "${ROOFTOP_BUILD}/consumer-test")
function(step)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer test step failed (${rc}): ${ARGV}")
  endif()
endfunction()
step(${CMAKE_COMMAND} --install "${ROOFTOP_BUILD}" --prefix "${prefix}" --component Unspecified)
# Kokkos is not named here (nor in the environment): the installed package finds the one
# rooftop was built against.
step(${CMAKE_COMMAND} -E env --unset=Kokkos_ROOT --unset=Kokkos_DIR ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE}" -B "${build}"
     -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX}")
step(${CMAKE_COMMAND} --build "${build}")
step("${build}/consumer")
