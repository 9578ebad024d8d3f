# A run whose orchestrator dies without a word (kill -9): while it runs, a second orchestrator is
# refused; once it is killed, show says the run is interrupted with the command that resumes it
# (and leaves the database as it was), and that command completes the run.
# cmake -DTUNEBENCH=<binary> -DSOURCE=<source dir> -DWORK=<scratch dir> -P cli_interrupted.cmake
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(db ${WORK}/killed.sqlite)
set(TB_CWD ${SOURCE})

# The shell starts the run in the background and, once two trials are stored, tries to resume it
# (refused: its orchestrator is alive), then kills the orchestrator with SIGKILL and, so that
# nothing is left running, its worker's process group (workers run in their own groups).
execute_process(COMMAND bash -c [=[
  tb=$0 db=$1
  "$tb" run --suite tests/suites/mini.json --db "$db" --quiet 2>/dev/null &
  pid=$!
  for i in $(seq 1200); do
    n=$("$tb" export latest --db "$db" --format json 2>/dev/null | grep -c '"spec"')
    [ "${n:-0}" -ge 2 ] && break
    sleep 0.1
  done
  echo "stored before the kill: $n"
  "$tb" run --resume latest --db "$db" 2>&1
  echo "resume while it runs: exit $?"
  workers=$(cat /proc/$pid/task/*/children 2>/dev/null)
  kill -9 $pid
  wait $pid
  echo "orchestrator: exit $?"
  for w in $workers; do kill -9 -- -$w 2>/dev/null; done
  ]=] ${TUNEBENCH} ${db}
  WORKING_DIRECTORY ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the background run could not be started and killed: ${rc}\n${out}\n${err}")
endif()
if(NOT out MATCHES "stored before the kill: [2-7]\n")
  message(FATAL_ERROR "the run was not killed mid-run:\n${out}\n${err}")
endif()
expect("resume while it runs: exit 2" "${out}" "a second orchestrator")
expect("is still running here (its orchestrator, pid" "${out}" "a second orchestrator")
expect("two orchestrators" "${out}" "a second orchestrator")
expect("orchestrator: exit 137" "${out}" "the kill")

run_tb(0 shown_json show latest --db ${db} --json)
string(JSON uuid GET "${shown_json}" run)
string(JSON status GET "${shown_json}" status)
string(JSON stored_status GET "${shown_json}" stored_status)
string(JSON resume GET "${shown_json}" resume)
if(NOT status STREQUAL "interrupted" OR NOT stored_status STREQUAL "running")
  message(FATAL_ERROR "show --json: status ${status}, stored ${stored_status}\n${shown_json}")
endif()
set(command "tunebench run --resume ${uuid} --db ${db}")
if(NOT resume STREQUAL command)
  message(FATAL_ERROR "show --json: resume '${resume}', expected '${command}'")
endif()
run_tb(0 shown show latest --db ${db})
expect("${uuid}  suite mini  label ''  interrupted (orchestrator gone)" "${shown}" "show")
expect("is no longer running" "${shown}" "show")
expect("resume with: ${command}" "${shown}" "show")
# show only reads: the database still says running until a writer marks it.
run_tb(0 again show latest --db ${db} --json)
string(JSON stored_status GET "${again}" stored_status)
if(NOT stored_status STREQUAL "running")
  message(FATAL_ERROR "show wrote the status: ${stored_status}")
endif()

# The command show gave, as given (the binary under test for `tunebench`).
run_tb(0 resumed run --resume ${uuid} --db ${db})
expect("resuming run ${uuid} (interrupted: its orchestrator, pid" "${resumed}" "resume")
expect("run ${uuid} completed: 8 trials" "${resumed}" "resume")
run_tb(0 shown show latest --db ${db} --json)
string(JSON status GET "${shown}" status)
string(JSON resume TYPE "${shown}" resume)
if(NOT status STREQUAL "completed" OR NOT resume STREQUAL "NULL")
  message(FATAL_ERROR "after the resume: status ${status}, resume ${resume}\n${shown}")
endif()
file(REMOVE_RECURSE ${WORK})
