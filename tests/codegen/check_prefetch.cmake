# SPDX-License-Identifier: BSD-3-Clause
# Compiles prefetch.cpp to assembly with -fno-inline (only always_inline functions are inlined)
# and checks that each of its functions still issues a prefetch: see prefetch.cpp.
execute_process(COMMAND "${CXX}" -std=c++17 -O3 -fno-inline -S -o - "${SOURCE}"
                OUTPUT_VARIABLE assembly ERROR_VARIABLE errors RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling ${SOURCE} failed (${rc}):\n${errors}")
endif()
# Split at the markers: each marker's function body runs from it to the function's end.
string(REPLACE "# rooftop-check " ";" sections "${assembly}")
list(REMOVE_AT sections 0)
list(LENGTH sections count)
if(NOT count EQUAL 5)
  message(FATAL_ERROR "expected 5 marked functions in the assembly, found ${count}")
endif()
foreach(section IN LISTS sections)
  string(REGEX MATCH "^[^\n]*" helper "${section}")
  string(FIND "${section}" ".cfi_endproc" end)
  string(SUBSTRING "${section}" 0 ${end} section)
  if(NOT section MATCHES "prefetcht1")
    message(FATAL_ERROR "${helper}: no prefetch instruction left where it is not inlined by the compiler's choice")
  endif()
  message(STATUS "${helper}: prefetches kept")
endforeach()
