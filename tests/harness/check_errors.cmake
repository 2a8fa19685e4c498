# SPDX-License-Identifier: BSD-3-Clause
# The harness goes on past an op instance that fails: here copy at 10^15 doubles, whose inputs
# cannot be allocated, beside copy at 1000. Expected: exit status 1, the small copy measured
# and verified in report.json, the large one listed under "errors" with its message. Then copy
# of doubles filling 0.7 of the host's memory (its two arrays, its compulsory bytes, 1.4 of it:
# more than the memory, though half of them is not) refused before anything is allocated
# beside copy at 2000, and the first run's report kept as report.prev.json beside the second's
# (and an fp16 copy, an fp32 embedding and an fp32 softmax whose arrays fit but whose float64
# verification would not, refused too);
# a third run of the refused size alone measures nothing and writes no report over those two.
# Last, an earlier report that cannot be kept, refused at start-up; bad arguments refused with
# exit status 2.
#   cmake -DROOFTOP=<rooftop binary> [-DEMULATOR=<command>] -DOUT=<scratch directory> -P check_errors.cmake
# A cross build runs rooftop through its emulator (EMULATOR, its words joined by spaces).
separate_arguments(rooftop UNIX_COMMAND "${EMULATOR}")
list(APPEND rooftop "${ROOFTOP}")
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND ${rooftop} --quick --ops copy --dtypes fp64 --sizes 1000,1000000000000000 --out "${OUT}"
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
string(JSON measured GET "${json}" errors 0 rounds_measured)
if(NOT errors EQUAL 1 OR NOT shape STREQUAL "1000000000000000" OR NOT error MATCHES "allocate" OR NOT measured EQUAL 0)
  message(FATAL_ERROR "expected copy at 10^15 under errors in report.json:\n${json}")
endif()
# `rooftop --quick --ops <op> --dtypes <dtype> --sizes <size>` must exit with status 1, each
# shape given after the size (a regular expression) refused for its float64 verification's
# memory (with the 0.5 GB kept for the rest of the process) before anything is allocated.
function(expect_verification_refused op dtype size)
  execute_process(COMMAND ${rooftop} --quick --ops ${op} --dtypes ${dtype} --sizes ${size} --out "${OUT}-${op}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  file(REMOVE_RECURSE "${OUT}-${op}")
  set(refused TRUE)
  foreach(shape IN LISTS ARGN)
    if(NOT out MATCHES "${op} +${dtype}/${shape} +FAILED: cannot verify: its float64 verification needs at least [0-9.]+ GB of host memory[^\n]*, less 0[.]5 GB kept for the rest of the process")
      set(refused FALSE)
    endif()
  endforeach()
  if(NOT rc EQUAL 1 OR NOT refused OR ARGC LESS 4)
    message(FATAL_ERROR "${op} ${dtype} at ${size} was not refused for its verification's memory (exit status ${rc}):\n${out}\n${err}")
  endif()
endfunction()
file(READ /proc/meminfo meminfo)
if(meminfo MATCHES "MemTotal: +([0-9]+) kB")
  set(memory_kb ${CMAKE_MATCH_1})
  math(EXPR n "${memory_kb} * 1024 / 8 * 70 / 100")
  execute_process(COMMAND ${rooftop} --quick --ops copy --dtypes fp64 --sizes 2000,${n} --out "${OUT}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT out MATCHES "copy +fp64/${n} +FAILED: cannot allocate: its [0-9.]+ GB of compulsory bytes exceed the host's [0-9.]+ GB of memory")
    message(FATAL_ERROR "copy at ${n} doubles was not refused before allocation (exit status ${rc}):\n${out}\n${err}")
  endif()
  # The first run's report, in the same --out, is kept as report.prev.json, not overwritten.
  if(NOT EXISTS "${OUT}/report.prev.json" OR NOT EXISTS "${OUT}/report.prev.csv" OR NOT EXISTS "${OUT}/roofline.prev.svg"
     OR NOT out MATCHES "Kept the previous run's report as [^\n]*report.prev.json")
    message(FATAL_ERROR "the first run's report was not kept as report.prev.*:\n${out}")
  endif()
  file(READ "${OUT}/report.prev.json" previous)
  string(JSON shape GET "${previous}" ops 0 shape 0)
  if(NOT shape EQUAL 1000)
    message(FATAL_ERROR "report.prev.json is not the first run's report (copy at 1000):\n${previous}")
  endif()
  # fp16 copy whose arrays take 0.3 of the memory: they fit, but its float64 verification
  # (8 bytes for each 2 of theirs) would not, so it is refused before allocating too.
  math(EXPR n16 "${memory_kb} * 1024 * 3 / 40")
  expect_verification_refused(copy fp16 ${n16} ${n16})
  # fp32 embedding of n / 16 elements per row length: its arrays and float64 copies of them
  # (8 bytes for each 4) take 0.75 of the memory, but its verification also holds the expected
  # output and the whole 32000-row table as doubles, so it is refused before allocating too.
  math(EXPR ne "${memory_kb} * 1024 / 16")
  expect_verification_refused(embedding fp32 ${ne} "[0-9]+x768" "[0-9]+x4096")
  # fp32 softmax of n / 36 elements: its arrays take 0.22 of the memory and as doubles 0.44,
  # but its verification also holds the expected output and an error scale per element (1.1
  # of the memory in all), so it is refused before allocating too.
  math(EXPR ns "${memory_kb} * 1024 / 36")
  expect_verification_refused(softmax fp32 ${ns} "[0-9]+x768" "[0-9]+x4096" "[0-9]+x32768")
  file(READ "${OUT}/report.json" second)
  execute_process(COMMAND ${rooftop} --quick --ops copy --dtypes fp64 --sizes ${n} --out "${OUT}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  file(READ "${OUT}/report.json" json)
  file(READ "${OUT}/report.prev.json" kept)
  if(NOT rc EQUAL 1 OR NOT out MATCHES "nothing was measured, so the earlier report in [^\n]* is left as it was"
     OR NOT json STREQUAL second OR NOT kept STREQUAL previous)
    message(FATAL_ERROR "a run that measured nothing replaced or moved the earlier reports (exit status ${rc}):\n${out}\n${err}")
  endif()
endif()
# An earlier report that cannot be kept (report.prev.csv a directory, which report.csv cannot
# be renamed over) is refused at start-up, before the sweep: exit status 2, the message naming
# the directory, the earlier report as it was and nothing of it moved to report.prev.*.
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND ${rooftop} --quick --ops copy --dtypes fp64 --sizes 1000 --out "${OUT}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "copy at 1000 failed (exit status ${rc})")
endif()
file(READ "${OUT}/report.csv" first_csv)
file(READ "${OUT}/report.json" first_json)
file(MAKE_DIRECTORY "${OUT}/report.prev.csv/taken")
execute_process(COMMAND ${rooftop} --quick --ops copy --dtypes fp64 --sizes 2000 --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(READ "${OUT}/report.csv" csv)
file(READ "${OUT}/report.json" json)
if(NOT rc EQUAL 2 OR NOT err MATCHES "cannot keep the previous [^\n]*report.csv as [^\n]*report.prev.csv is a directory"
   OR out MATCHES "Round 1" OR NOT csv STREQUAL first_csv OR NOT json STREQUAL first_json OR EXISTS "${OUT}/report.prev.json")
  message(FATAL_ERROR "a report that could not be kept was not refused at start-up, or was moved (exit status ${rc}):\n${out}\n${err}")
endif()
# A bad argument is refused with exit status 2 and its message whether the option parser or the
# harness finds it (CLI11's own codes are 104-114); --help exits 0. In a fresh --out, each
# beside arguments that would run a quick copy: one accepted would run it and exit 0.
file(REMOVE_RECURSE "${OUT}")
foreach(case "--sizes;1000,0|--sizes: expected a positive whole number, got '0'"
             "--sizes;1000;--pages;foo|--pages: foo not in" "--sizes;1000;--rounds;x|--rounds: expected a positive whole number, got 'x'"
             "--sizes;1000;--ops;nope|unknown op 'nope'" "--sizes;1000;--ops;copy,,copy|--ops has an empty item in 'copy,,copy'"
             "--sizes;1000;--ops;copy,|--ops has an empty item in 'copy,'" "--sizes;1000;--kokkos|unknown argument '--kokkos'"
             "--sizes;1000;--kokkos-thread=1|Kokkos does not know the argument '--kokkos-thread=1'")
  string(REPLACE "|" ";" parts "${case}")
  list(POP_BACK parts expected)
  if(NOT parts MATCHES "--ops")
    list(APPEND parts --ops copy)
  endif()
  execute_process(COMMAND ${rooftop} --quick --dtypes fp64 ${parts} --out "${OUT}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT "${out}${err}" MATCHES "${expected}")
    message(FATAL_ERROR "rooftop ${parts}: expected exit status 2 and '${expected}', got ${rc}\n${out}\n${err}")
  endif()
endforeach()
# An --out that cannot be made (a file of that name) is a bad argument too.
file(WRITE "${OUT}.file" "")
execute_process(COMMAND ${rooftop} --quick --ops copy --dtypes fp64 --sizes 1000 --out "${OUT}.file"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(REMOVE "${OUT}.file")
if(NOT rc EQUAL 2 OR NOT err MATCHES "cannot make the --out directory")
  message(FATAL_ERROR "rooftop --out <a file>: expected exit status 2, got ${rc}\n${out}\n${err}")
endif()
execute_process(COMMAND ${rooftop} --help RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "rooftop --help: expected exit status 0, got ${rc}")
endif()
message(STATUS "ok: the failed instances reported, the sweep went on, exit status 1; a run that measured nothing writes no report; an earlier report that cannot be kept is refused at start-up; bad arguments exit 2")
