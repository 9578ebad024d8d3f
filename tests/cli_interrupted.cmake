# A run whose orchestrator dies without a word (kill -9): while it runs, a second orchestrator is
# refused; once it is killed, show says the run is interrupted with the command that resumes it
# (and leaves the database as it was), and that command completes the run.
# cmake -DTUNEBENCH=<binary> -DSOURCE=<source dir> -DWORK=<scratch dir> -P cli_interrupted.cmake
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(db ${WORK}/killed.sqlite)
set(TB_CWD ${SOURCE})

# The shell starts the run in the background (TMPDIR a folder of the test's, to see what the
# run leaves there) and, once two trials are stored, tries to resume it (refused: its
# orchestrator is alive), then kills the orchestrator with SIGKILL. Its workers must die with it
# (their parent-death signal): a worker left running would share the CPUs with the resumed run's
# workers and skew its arms. Then a stand-in for a worker that did outlive it (a process carrying
# the dead orchestrator's worker tag, core/liveness.h) is left running for the resume to stop.
set(tmp ${WORK}/tmp)
file(MAKE_DIRECTORY ${tmp})
execute_process(COMMAND bash -c [=[
  tb=$0 db=$1 tmp=$2
  TMPDIR=$tmp "$tb" run --suite tests/suites/killed.json --db "$db" --quiet 2>/dev/null &
  pid=$!
  for i in $(seq 1200); do
    n=$("$tb" export latest --db "$db" --format json 2>/dev/null | grep -c '"spec"')
    [ "${n:-0}" -ge 2 ] && break
    sleep 0.1
  done
  echo "stored before the kill: $n"
  "$tb" run --resume latest --db "$db" 2>&1
  echo "resume while it runs: exit $?"
  # The orchestrator's worker tag: its pid and start ticks (field 22 of its stat), one length.
  tag=$(awk '{printf "%07d:%020d", $1, $22}' /proc/$pid/stat)
  # The third trial's worker runs for several seconds (tests/suites/killed.json): kill during it.
  for i in $(seq 100); do
    workers=$(cat /proc/$pid/task/*/children 2>/dev/null)
    [ -n "$workers" ] && break
    sleep 0.05
  done
  echo "workers at the kill: $(echo $workers | wc -w)"
  kill -9 $pid
  wait $pid
  echo "orchestrator: exit $?"
  left=$workers
  for i in $(seq 10); do
    # Running, not a zombie (a killed worker waits as one until whoever inherited it reaps it).
    left=$(for w in $workers; do awk '$3 != "Z" {print $1}' /proc/$w/stat 2>/dev/null; done)
    [ -z "$left" ] && break
    sleep 0.1
  done
  echo "workers alive 1 s after the kill: $(echo $left | wc -w)"
  for w in $left; do kill -9 -- -$w 2>/dev/null; done  # so that nothing is left running
  ( exec env -i TUNEBENCH_ORCHESTRATOR=$tag sleep 300 ) >/dev/null 2>&1 &
  echo "stand-in: $!"
  echo "folders left: $(ls $tmp | grep -c '^tunebench-')"
  ]=] ${TUNEBENCH} ${db} ${tmp}
  WORKING_DIRECTORY ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the background run could not be started and killed: ${rc}\n${out}\n${err}")
endif()
if(NOT out MATCHES "stored before the kill: [2-5]\n" OR NOT out MATCHES "workers at the kill: [1-9]")
  message(FATAL_ERROR "the run was not killed mid-run:\n${out}\n${err}")
endif()
expect("resume while it runs: exit 2" "${out}" "a second orchestrator")
expect("is still running here (its orchestrator, pid" "${out}" "a second orchestrator")
expect("two orchestrators" "${out}" "a second orchestrator")
expect("orchestrator: exit 137" "${out}" "the kill")
expect("workers alive 1 s after the kill: 0\n" "${out}" "a worker outlived its orchestrator")
string(REGEX MATCH "stand-in: ([0-9]+)" _ "${out}")
set(stand_in ${CMAKE_MATCH_1})
string(REGEX MATCH "folders left: ([0-9]+)" _ "${out}")
if(CMAKE_MATCH_1 LESS 1)
  message(FATAL_ERROR "the killed run left no folder in TMPDIR to clear:\n${out}")
endif()

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
run_tb(0 shown show latest --verbose --db ${db})
expect("${uuid}  suite killed  label ''  interrupted (orchestrator gone)" "${shown}" "show")
expect("is no longer running" "${shown}" "show")
expect("resume with: ${command}" "${shown}" "show")
# show only reads: the database still says running until a writer marks it.
run_tb(0 again show latest --db ${db} --json)
string(JSON stored_status GET "${again}" stored_status)
if(NOT stored_status STREQUAL "running")
  message(FATAL_ERROR "show wrote the status: ${stored_status}")
endif()

# The command show gave, as given (the binary under test for `tunebench`), in the same TMPDIR.
run_cmd(0 resumed ${TB_CWD} ${CMAKE_COMMAND} -E env TMPDIR=${tmp} ${TUNEBENCH} run --resume ${uuid}
        --db ${db})
expect("resuming run ${uuid} (interrupted: its orchestrator, pid" "${resumed}" "resume")
expect("run ${uuid} completed: 6 trials" "${resumed}" "resume")
# What the killed run left was cleared before the resume measured anything, and said.
expect("stopped worker pid ${stand_in}, left running by an orchestrator that is gone"
       "${resumed}" "the resume")
execute_process(COMMAND kill -0 ${stand_in} RESULT_VARIABLE alive ERROR_QUIET)
if(alive EQUAL 0)
  execute_process(COMMAND kill -9 ${stand_in})
  message(FATAL_ERROR "the resume left the killed run's stand-in worker ${stand_in} running")
endif()
expect("left by a run that is gone" "${resumed}" "the resume")
file(GLOB left_behind ${tmp}/tunebench-*)
if(left_behind)
  message(FATAL_ERROR "folders left in TMPDIR after the resume: ${left_behind}")
endif()
# The host state the resume found is stored beside the start's.
run_tb(0 shown_json show latest --db ${db} --json)
string(JSON resumed_at GET "${shown_json}" host_state resumed 0 at)
if(NOT resumed_at MATCHES "^20")
  message(FATAL_ERROR "the resume's host state was not stored: ${shown_json}")
endif()
run_tb(0 shown show latest --db ${db} --json)
string(JSON status GET "${shown}" status)
string(JSON resume TYPE "${shown}" resume)
if(NOT status STREQUAL "completed" OR NOT resume STREQUAL "NULL")
  message(FATAL_ERROR "after the resume: status ${status}, resume ${resume}\n${shown}")
endif()
file(REMOVE_RECURSE ${WORK})
