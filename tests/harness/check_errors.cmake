# SPDX-License-Identifier: BSD-3-Clause
# The harness goes on past an op instance that fails: here copy at 10^15 doubles, whose inputs
# cannot be allocated, beside copy at 1000. Expected: exit status 1, the small copy measured
# and verified in report.json, the large one listed under "errors" with its message.
#   cmake -DROOFTOP=<rooftop binary> -DOUT=<scratch directory> -P check_errors.cmake
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${ROOFTOP}" --quick --ops copy --dtypes fp64 --sizes 1000,1000000000000000 --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "expected exit status 1, got ${rc}\n${out}\n${err}")
endif()
if(NOT out MATCHES "copy +fp64/1000000000000000 FAILED: [^\n]*allocate")
  message(FATAL_ERROR "the failed instance is not in the table:\n${out}")
endif()
file(READ "${OUT}/report.json" json)
string(JSON ops LENGTH "${json}" ops)
string(JSON shape GET "${json}" ops 0 shape 0)
string(JSON verified GET "${json}" ops 0 verified)
if(NOT ops EQUAL 1 OR NOT shape EQUAL 1000 OR NOT verified)
  message(FATAL_ERROR "expected one verified result, copy at 1000, in report.json:\n${json}")
endif()
string(JSON errors LENGTH "${json}" errors)
string(JSON shape GET "${json}" errors 0 shape 0)
string(JSON error GET "${json}" errors 0 error)
if(NOT errors EQUAL 1 OR NOT shape STREQUAL "1000000000000000" OR NOT error MATCHES "allocate")
  message(FATAL_ERROR "expected copy at 10^15 under errors in report.json:\n${json}")
endif()
message(STATUS "ok: the failed instance reported, the sweep went on, exit status 1")
