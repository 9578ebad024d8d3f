# A worker that segfaults, aborts, is killed, prints garbage or nothing, or hangs: each trial is
# stored as failed with its reason, the run goes on to the end and finishes "completed with
# failures" with exit 1. Without TUNEBENCH_TEST_FAULTS=1 the fault setting is refused.
# cmake -DTUNEBENCH=<binary> -DSOURCE=<source dir> -DWORK=<scratch dir> -P cli_faults.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(db ${WORK}/faults.sqlite)

execute_process(COMMAND ${TUNEBENCH} run --suite tests/suites/faults.json --db ${db}
                WORKING_DIRECTORY ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "test-only setting")
  message(FATAL_ERROR "fault settings were accepted without TUNEBENCH_TEST_FAULTS=1: ${rc}\n${err}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -E env TUNEBENCH_TEST_FAULTS=1
                        ${TUNEBENCH} run --suite tests/suites/faults.json --db ${db}
                WORKING_DIRECTORY ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "a run with failed trials must exit 1, got ${rc}\n${out}\n${err}")
endif()
if(NOT err MATCHES "completed with failures: 14 trials, 12 failed, 0 invalid")
  message(FATAL_ERROR "the run did not go on to the end:\n${err}")
endif()
execute_process(COMMAND ${TUNEBENCH} export latest --db ${db} --format csv
                RESULT_VARIABLE rc OUTPUT_VARIABLE csv ERROR_VARIABLE err)
string(REGEX MATCHALL ",works,[^\n]*,ok," good "${csv}")
list(LENGTH good n)
if(NOT n EQUAL 4)
  message(FATAL_ERROR "the working experiment should have 2 trials x 2 samples stored:\n${csv}")
endif()
execute_process(COMMAND ${TUNEBENCH} show latest --verbose --db ${db}
                RESULT_VARIABLE rc OUTPUT_VARIABLE shown ERROR_VARIABLE err)
foreach(reason "killed by signal 11 (Segmentation fault)" "killed by signal 6 (Aborted)"
        "killed by signal 9 (Killed): killed from outside, e.g. by the kernel's out-of-memory killer"
        "printed no result: this is not JSON" "worker exited with code 0 and printed no result"
        "timed out after 3 s; its process group was killed" "completed with failures")
  string(FIND "${shown}" "${reason}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "show lacks the reason '${reason}':\n${shown}")
  endif()
endforeach()

# A report renderer that never returns (here a stand-in Python that sleeps, with a child of its
# own) is stopped at --timeout with everything it started, and said: exit 1, not a hang.
file(WRITE ${WORK}/hang-python "#!/bin/sh\nsleep 300 &\necho $$ $! > ${WORK}/hang-pids\nwait\n")
file(CHMOD ${WORK}/hang-python PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
string(TIMESTAMP before "%s")
execute_process(COMMAND ${CMAKE_COMMAND} -E env TUNEBENCH_PYTHON=${WORK}/hang-python
                        ${TUNEBENCH} report --db ${db} --out ${WORK}/report --timeout 2
                WORKING_DIRECTORY ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 60)
string(TIMESTAMP after "%s")
math(EXPR took "${after} - ${before}")
if(NOT rc EQUAL 1 OR NOT err MATCHES "renderer \\(reports/render.py\\) did not return within 2 s")
  message(FATAL_ERROR "a hanging renderer: expected exit 1 and the deadline's message, got ${rc}:\n${err}")
endif()
if(took GREATER 30)
  message(FATAL_ERROR "a hanging renderer held the report for ${took} s past its 2-s --timeout")
endif()
file(READ ${WORK}/hang-pids pids)
string(STRIP "${pids}" pids)
string(REPLACE " " ";" pids "${pids}")
# Gone within a few seconds (a killed child whose parent is gone is a zombie until reaped: it
# counts as gone).
foreach(pid IN LISTS pids)
  foreach(try RANGE 50)
    execute_process(COMMAND ps -o stat= -p ${pid} OUTPUT_VARIABLE stat
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(stat STREQUAL "" OR stat MATCHES "^Z")
      break()
    endif()
    execute_process(COMMAND sleep 0.1)
  endforeach()
  if(NOT stat STREQUAL "" AND NOT stat MATCHES "^Z")
    message(FATAL_ERROR "the renderer's process ${pid} (${stat}) outlived its deadline")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
