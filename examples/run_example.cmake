# SPDX-License-Identifier: MIT
# examples/run_example.cmake - run one example and check it:
#   cmake -DPROGRAM=<file> [-DARGS=<a|b|c>] -DEXPECT=<regex> -P run_example.cmake
# Fails unless the program exits 0 AND its standard output and error,
# together, match EXPECT (ctest's PASS_REGULAR_EXPRESSION alone would ignore
# the exit status).  ARGS separates arguments with '|'.
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${PROGRAM} ${args}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${rc}")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "${PROGRAM}: the output does not match '${EXPECT}'")
endif()
