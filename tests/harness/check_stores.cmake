# SPDX-License-Identifier: BSD-3-Clause
# --compare-stores: with ROOFTOP_STREAMING_STORE_THRESHOLD=0 (set by the test) every result is
# compared, so copy and dot at one small size each run again with streaming and plain stores
# alternated. Expected: exit status 0, the run's seed 0 kept (--seed 0 replays seed 0), the
# terminal's summary line, and report.json's "stores_side_by_side" with threshold 0, 9 pairs and
# two verified entries whose median speedup lies within [min, max].
#   cmake -DROOFTOP=<rooftop binary> -DOUT=<scratch directory> -P check_stores.cmake
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${ROOFTOP}" --quick --ops copy,dot --dtypes fp32 --sizes 65536 --seed 0 --compare-stores --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "expected exit status 0, got ${rc}\n${out}\n${err}")
endif()
if(NOT out MATCHES "threads, seed 0 \\(quick\\)")
  message(FATAL_ERROR "--seed 0 did not run with seed 0:\n${out}")
endif()
if(NOT out MATCHES "copy +fp32/65536 +streamed +[0-9.]+ us, plain +[0-9.]+ us at best: plain [0-9.]+x \\([0-9.]+-[0-9.]+x\\)\n"
   OR NOT out MATCHES "plain stores more than 5% faster on [0-2] of 2, more than 5% slower on [0-2]\n")
  message(FATAL_ERROR "the stores' lines are not on the terminal:\n${out}")
endif()
file(READ "${OUT}/report.json" json)
string(JSON threshold GET "${json}" stores_side_by_side streaming_store_threshold_bytes)
string(JSON pairs GET "${json}" stores_side_by_side pairs)
string(JSON entries LENGTH "${json}" stores_side_by_side results)
if(NOT threshold EQUAL 0 OR NOT pairs EQUAL 9 OR NOT entries EQUAL 2)
  message(FATAL_ERROR "expected stores_side_by_side with threshold 0, 9 pairs and 2 results in report.json:\n${json}")
endif()
foreach(i 0 1)
  string(JSON op GET "${json}" stores_side_by_side results ${i} op)
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
