# SPDX-License-Identifier: BSD-3-Clause
# Runs PROGRAM with the arguments after `--` and fails unless it exits with STATUS and its
# output (stdout and stderr together) matches the regular expression EXPECT. (CTest's
# PASS_REGULAR_EXPRESSION alone ignores the exit status: a refusal printed as a warning by a
# run that goes on and exits 0 would pass it.)
#   cmake -DPROGRAM=<binary> [-DEMULATOR=<command>] -DSTATUS=<n> -DEXPECT=<regex> -P expect_exit.cmake -- <args>...
# A cross build runs the program through its emulator (EMULATOR, its words joined by spaces).
separate_arguments(command UNIX_COMMAND "${EMULATOR}")
list(APPEND command "${PROGRAM}")
set(after_separator FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(after_separator)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(after_separator TRUE)
  endif()
endforeach()
execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL "${STATUS}" OR NOT "${out}${err}" MATCHES "${EXPECT}")
  string(REPLACE ";" " " shown "${command}")
  message(FATAL_ERROR "${shown}: expected exit status ${STATUS} and output matching '${EXPECT}', got ${rc}:\n${out}\n${err}")
endif()
