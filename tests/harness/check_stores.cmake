# SPDX-License-Identifier: BSD-3-Clause
# --compare-stores: with ROOFTOP_STREAMING_STORE_THRESHOLD=300000 (set by the test), copy, dot
# and relu at 65536 and 131072 fp32 values: only copy's and relu's outputs of 131072 values
# (512 KiB) reach it, so those two run again with streaming and plain stores alternated; the
# outputs of 65536 (256 KiB) are never streamed, and dot writes no output that could be. Then
# transpose and transpose_naive at 512 x 512 (1 MiB outputs): transpose's is compared,
# transpose_naive's never (its kernel has no streaming stores).
# Expected: exit status 0, the run's seed 0 kept (--seed 0 replays seed 0), the terminal's
# lines, and report.json's "stores_side_by_side" with threshold 300000, 9 pairs and those two
# verified entries, each median speedup within [min, max].
#   cmake -DROOFTOP=<rooftop binary> [-DEMULATOR=<command>] -DOUT=<scratch directory> -P check_stores.cmake
# A cross build runs rooftop through its emulator (EMULATOR, its words joined by spaces).
separate_arguments(rooftop UNIX_COMMAND "${EMULATOR}")
list(APPEND rooftop "${ROOFTOP}")
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND ${rooftop} --quick --ops copy,dot,relu --dtypes fp32 --sizes 65536,131072 --seed 0 --compare-stores --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "expected exit status 0, got ${rc}\n${out}\n${err}")
endif()
if(NOT out MATCHES "threads, seed 0 \\(quick\\)")
  message(FATAL_ERROR "--seed 0 did not run with seed 0:\n${out}")
endif()
if(NOT out MATCHES "copy +fp32/131072 +streamed +[0-9.]+ us, plain +[0-9.]+ us at best: plain [0-9.]+x \\([0-9.]+-[0-9.]+x\\)\n"
   OR NOT out MATCHES "relu +fp32/131072 +streamed +[0-9.]+ us, plain"
   OR NOT out MATCHES "plain stores more than 5% faster on [0-2] of 2, more than 5% slower on [0-2]\n")
  message(FATAL_ERROR "the stores' lines are not on the terminal:\n${out}")
endif()
if(out MATCHES "fp32/65536 +streamed" OR out MATCHES "dot +fp32/[0-9]+ +streamed")
  message(FATAL_ERROR "an output below the threshold, or dot's, was timed side by side:\n${out}")
endif()
file(READ "${OUT}/report.json" json)
string(JSON threshold GET "${json}" stores_side_by_side streaming_store_threshold_bytes)
string(JSON pairs GET "${json}" stores_side_by_side pairs)
string(JSON entries LENGTH "${json}" stores_side_by_side results)
if(NOT threshold EQUAL 300000 OR NOT pairs EQUAL 9 OR NOT entries EQUAL 2)
  message(FATAL_ERROR "expected stores_side_by_side with threshold 300000, 9 pairs and 2 results in report.json:\n${json}")
endif()
foreach(i 0 1)
  string(JSON op GET "${json}" stores_side_by_side results ${i} op)
  string(JSON size GET "${json}" stores_side_by_side results ${i} shape 0)
  if(NOT size EQUAL 131072 OR NOT op MATCHES "^(copy|relu)$")
    message(FATAL_ERROR "stores_side_by_side result ${i} is ${op} of ${size}, expected copy or relu of 131072:\n${json}")
  endif()
  string(JSON verified GET "${json}" stores_side_by_side results ${i} verified)
  string(JSON low GET "${json}" stores_side_by_side results ${i} plain_speedup_min)
  string(JSON median GET "${json}" stores_side_by_side results ${i} plain_speedup_median)
  string(JSON high GET "${json}" stores_side_by_side results ${i} plain_speedup_max)
  string(JSON streamed GET "${json}" stores_side_by_side results ${i} streamed_seconds_min)
  string(JSON plain GET "${json}" stores_side_by_side results ${i} plain_seconds_min)
  if(NOT verified OR NOT low GREATER 0 OR median LESS low OR median GREATER high OR NOT streamed GREATER 0 OR NOT plain GREATER 0)
    message(FATAL_ERROR "stores_side_by_side result ${i} (${op}) is not a verified timing:\n${json}")
  endif()
  message(STATUS "ok: ${op} plain ${median}x (${low}-${high}x)")
endforeach()

file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND ${rooftop} --quick --ops transpose,transpose_naive --dtypes fp32 --sizes 512 --compare-stores --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\n  transpose +fp32/512x512 +streamed +[0-9.]+ us, plain")
  message(FATAL_ERROR "expected exit status 0 and transpose's stores side by side, got ${rc}:\n${out}\n${err}")
endif()
if(out MATCHES "transpose_naive +fp32/512x512 +streamed")
  message(FATAL_ERROR "transpose_naive, which never streams, was timed side by side:\n${out}")
endif()
message(STATUS "ok: transpose compared, transpose_naive not")
