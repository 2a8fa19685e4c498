# SPDX-License-Identifier: BSD-3-Clause
# The fusion summary: chain_unfused and chain_fused at one small size, then timed side by side.
# Expected: exit status 0, report.json's "fusion" entry for that shape with its best-time
# speedup and a "side_by_side" object (9 pairs in --quick, median within [min, max], both
# outputs verified), and the terminal's line for it.
#   cmake -DROOFTOP=<rooftop binary> [-DEMULATOR=<command>] -DOUT=<scratch directory> -P check_fusion.cmake
# A cross build runs rooftop through its emulator (EMULATOR, its words joined by spaces).
separate_arguments(rooftop UNIX_COMMAND "${EMULATOR}")
list(APPEND rooftop "${ROOFTOP}")
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND ${rooftop} --quick --ops chain_unfused,chain_fused --dtypes fp32 --sizes 262144 --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "expected exit status 0, got ${rc}\n${out}\n${err}")
endif()
if(NOT out MATCHES "fp32/64x4096: [^\n]* faster\n +side by side, 9 pairs of runs alternated: [0-9.]+x \\(median; [0-9.]+-[0-9.]+x\\)")
  message(FATAL_ERROR "the fusion lines are not on the terminal:\n${out}")
endif()
file(READ "${OUT}/report.json" json)
string(JSON entries LENGTH "${json}" fusion)
string(JSON rows GET "${json}" fusion 0 shape 0)
string(JSON speedup GET "${json}" fusion 0 speedup)
string(JSON pairs GET "${json}" fusion 0 side_by_side pairs)
string(JSON low GET "${json}" fusion 0 side_by_side speedup_min)
string(JSON median GET "${json}" fusion 0 side_by_side speedup_median)
string(JSON high GET "${json}" fusion 0 side_by_side speedup_max)
string(JSON verified GET "${json}" fusion 0 side_by_side verified)
if(NOT entries EQUAL 1 OR NOT rows EQUAL 64 OR NOT pairs EQUAL 9 OR NOT verified OR NOT speedup GREATER 0 OR NOT low GREATER 0
   OR median LESS low OR median GREATER high)
  message(FATAL_ERROR "expected one fusion entry at 64x4096 with 9 verified side-by-side pairs in report.json:\n${json}")
endif()
message(STATUS "ok: fusion ${speedup}x by best times, ${median}x side by side (${low}-${high}x)")
