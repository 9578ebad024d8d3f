# Software A/B as an experiment: the same tiny GPT run by this build (OFF) and by the
# other LibTorch build this repo makes (ON, knob worker_build), as resident pairs. Both arms must
# pass the guard (the same function within the knob's tolerance), each arm's evidence names the
# executable and LibTorch version that ran it, and the effect is stored with its interval.
# Skipped (SKIPPED:) where the other build is not there yet: CI builds debian, tests it, then
# builds pypi and tests that, so the pypi tests run it against the debian build.
# cmake -DTUNEBENCH=<binary> -DOTHER=<other build's binary> -DSOURCE=<src> -DWORK=<dir> -P …
if(NOT EXISTS ${OTHER})
  message("SKIPPED: the other build ${OTHER} is not built")
  return()
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(db ${WORK}/ab.sqlite)
set(TB_CWD ${SOURCE})
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)

file(WRITE ${WORK}/ab.json "{
  \"name\": \"software-ab-test\",
  \"defaults\": {\"warmup\": 2, \"iterations\": 10, \"batch\": 4, \"timeout_s\": 120,
               \"settings\": {\"omp_threads\": 1}},
  \"experiments\": [
    {\"name\": \"builds.gpt-tiny-infer\", \"knob\": \"worker_build\", \"model\": \"gpt\",
     \"preset\": \"tiny\", \"mode\": \"infer\",
     \"arms\": {\"off\": {\"worker_build\": \"${TUNEBENCH}\"}, \"on\": {\"worker_build\": \"${OTHER}\"}},
     \"design\": \"auto\", \"workers\": 3, \"blocks\": 4, \"block_samples\": 3, \"budget_s\": 0}
  ]
}
")
run_tb(0 out run --suite ${WORK}/ab.json --db ${db} -q)
run_tb(0 out show --verbose --db ${db})
expect("libtorch=" "${out}" "each arm's build in show's evidence line")
expect("effect on time: " "${out}" "an effect with its interval")
execute_process(COMMAND sqlite3 ${db}
  "SELECT DISTINCT json_extract(evidence, '$.torch_version') || ' ' || json_extract(evidence, '$.executable') FROM trials ORDER BY arm"
  OUTPUT_VARIABLE builds OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REPLACE "\n" ";" builds "${builds}")
list(LENGTH builds n)
if(NOT n EQUAL 2)
  message(FATAL_ERROR "expected two builds in the arms' evidence, got: ${builds}")
endif()
execute_process(COMMAND sqlite3 ${db}
  "SELECT COUNT(*) FROM trials WHERE status = 'ok' AND paired_blocks = 4"
  OUTPUT_VARIABLE ok OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT ok EQUAL 6)
  message(FATAL_ERROR "expected 6 ok paired trials (3 resident pairs), got ${ok}")
endif()
# Every worker was started from a copy of its own build (harness/run/launch_paths.h: fresh_copy), every
# copy's name of one length, and their evidence names the builds themselves (checked above: two
# builds); the copies went with their pairs, the run's folder of links with the run.
execute_process(COMMAND sqlite3 ${db}
  "SELECT COUNT(DISTINCT length(json_extract(evidence, '$.launched_as'))), COUNT(DISTINCT json_extract(evidence, '$.launched_as')), SUM(json_extract(evidence, '$.launched_as') = json_extract(evidence, '$.executable') OR json_extract(evidence, '$.executable') LIKE '%tunebench-exe-%') FROM trials"
  OUTPUT_VARIABLE launched OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT launched STREQUAL "1|6|0")
  message(FATAL_ERROR "expected the 6 workers started from 6 copies, names of one length (lengths|paths|started by its own path or naming the copy as its build: 1|6|0), got ${launched}")
endif()
execute_process(COMMAND sqlite3 ${db}
  "SELECT DISTINCT rtrim(json_extract(evidence, '$.launched_as'), '0123456789') FROM trials"
  OUTPUT_VARIABLE folder OUTPUT_STRIP_TRAILING_WHITESPACE)
if(folder STREQUAL "" OR EXISTS ${folder})
  message(FATAL_ERROR "the launch folder '${folder}' outlived the run")
endif()
