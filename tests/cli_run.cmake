# `tunebench run`, `show`, `export` and `list` end to end, as a user meets them: a small suite into
# a fresh database, then a broken suite that must leave that database untouched.
# Run by ctest: cmake -DTUNEBENCH=<binary> -DSOURCE=<source dir> -DWORK=<scratch dir> -P cli_run.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(db ${WORK}/results.sqlite)

set(TB_CWD ${SOURCE})
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)

# A complete run.
run_tb(0 out run --suite tests/suites/mini.json --db ${db} --label cli-test)
expect("completed: 8 trials, 0 failed, 0 invalid" "${out}" "run")
expect("not applicable: channels_last.gpt-tiny-infer: channels_last: applies to resnet50 only" "${out}" "run")
# Every worker process starts its heap at its own random offset (harness/worker/heap_offset.h): the
# offsets are glibc-aligned and in range, and the model's first parameter lies at different places
# inside its page from one process of an experiment to the next (without the offset it lay at the
# same place in every process: 2688 and 1856 bytes into its page here).
expect_sql(${db}
  "SELECT SUM(json_extract(evidence, '$.heap_offset.bytes') BETWEEN 16 AND 65536 AND json_extract(evidence, '$.heap_offset.bytes') % 16 = 0), (SELECT MIN(n) > 1 FROM (SELECT COUNT(DISTINCT json_extract(evidence, '$.heap_offset.first_parameter_page_offset')) AS n FROM trials WHERE status = 'ok' GROUP BY experiment)) FROM trials WHERE status = 'ok'"
  "8|1" "every worker should start its heap at a random offset (trials with an offset in range|the first parameter's place in its page differs between the processes of each experiment)")

# show latest: every experiment with its effect, interval, verdict and evidence.
run_tb(0 out show latest --verbose --db ${db})
foreach(text "no_grad.resnet50-tiny-infer" "omp_threads.gpt-tiny-infer" "claim: faster and less memory"
        "effect on time: " "evidence: threads=1 OMP_NUM_THREADS=1" "grad_mode=off" "not applicable here:")
  expect("${text}" "${out}" "show")
endforeach()
string(REGEX MATCH "effect on time: [0-9.]+x \\[[0-9.]+, [0-9.]+\\] (helps|hurts|no measurable effect)" effect "${out}")
if(NOT effect)
  message(FATAL_ERROR "show: no effect with interval and verdict\n${out}")
endif()

# show latest without --verbose: the run at a glance, one line per effect grouped by verdict with
# its claim and sources by name, what was not applicable, and no evidence lines; no colour in a
# pipe.
run_tb(0 glance show latest --db ${db})
foreach(text "no_grad.resnet50-tiny-infer" "omp_threads.gpt-tiny-infer"
        "faster and less memory (PyTorch Performance Tuning Guide)" "not applicable here ("
        "--verbose")
  expect("${text}" "${glance}" "show at a glance")
endforeach()
if(NOT glance MATCHES "\n(helps|hurts|no measurable effect|no effect beyond ±2%|not precise enough|inconclusive|insufficient data|host too busy) \\([0-9]+\\):\n  [^\n]+ [0-9.]+x \\[[0-9.]+, [0-9.]+\\]")
  message(FATAL_ERROR "show: no verdict group with an effect and its interval\n${glance}")
endif()
string(ASCII 27 escape)
if(glance MATCHES "evidence:" OR glance MATCHES " MAD " OR glance MATCHES "${escape}")
  message(FATAL_ERROR "show at a glance printed evidence, spreads or colour codes:\n${glance}")
endif()
string(REGEX MATCHALL "\n" glance_lines "${glance}")
string(REGEX MATCHALL "\n" verbose_lines "${out}")
list(LENGTH glance_lines glance_count)
list(LENGTH verbose_lines verbose_count)
if(NOT glance_count LESS verbose_count)
  message(FATAL_ERROR "show at a glance (${glance_count} lines) is not shorter than --verbose (${verbose_count})")
endif()

# exports
run_tb(0 out export latest --db ${db} --format csv)
expect("run,experiment,knob,arm,model,preset,mode,batch,process_index,trial_status,sample_index,seconds_per_iteration" "${out}" "csv")
string(REGEX MATCHALL "\n[^\n]+,ok,[0-9]+,[0-9.e-]+" rows "${out}")
list(LENGTH rows n)
if(NOT n EQUAL 24)
  message(FATAL_ERROR "csv: expected 24 sample rows (8 trials x 3 samples), got ${n}\n${out}")
endif()
run_tb(0 out export latest --db ${db} --format gbench)
expect("\"run_type\": \"iteration\"" "${out}" "gbench")
expect("\"name\": \"no_grad.resnet50-tiny-infer/off\"" "${out}" "gbench")
run_tb(2 out export latest --db ${db} --format xml)
# A run compared with itself is said to be one.
run_tb(0 out compare latest latest --db ${db})
expect("are one run" "${out}" "compare of a run with itself")

# A broken suite: one clear message with the file and the JSON path, exit 2, database untouched.
file(SHA256 ${db} before)
run_tb(2 out run --suite tests/suites/broken_knob.json --db ${db})
expect("tests/suites/broken_knob.json: /experiments/0/knob: unknown knob \"no_grd\"; nearest catalog ids: no_grad" "${out}" "broken knob")
run_tb(2 out run --suite tests/suites/broken_syntax.json --db ${db})
expect("broken_syntax.json: line 4, column" "${out}" "broken syntax")
run_tb(2 out run --suite tests/suites/too_big.json --db ${db})
expect("needs an estimated" "${out}" "memory refusal")
expect("GiB available now" "${out}" "memory refusal")
# A suite of more trials than a run takes without --large: its size and a lower bound of its
# duration, before anything is written.
run_tb(2 out run --suite tests/suites/too_many.json --db ${db})
expect("tests/suites/too_many.json: 4000 trials (2 experiments)" "${out}" "large suite")
expect("Pass --large to run it anyway" "${out}" "large suite")
# TMPDIR pointing nowhere: named, before anything is written (no run left "running").
run_cmd(2 out ${TB_CWD} ${CMAKE_COMMAND} -E env TMPDIR=${WORK}/no-such-folder ${TUNEBENCH}
        run --suite tests/suites/mini.json --db ${db})
expect("TMPDIR=${WORK}/no-such-folder is not a usable folder" "${out}" "missing TMPDIR")
expect("Nothing was run or written." "${out}" "missing TMPDIR")
file(SHA256 ${db} after)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "a broken suite, a too large one or a missing TMPDIR changed the database")
endif()
run_tb(2 out run --suite tests/suites/broken_knob.json --db ${WORK}/never.sqlite)
if(EXISTS ${WORK}/never.sqlite)
  message(FATAL_ERROR "a broken suite created a database")
endif()

# Reading a database that is not there is an error, not an empty database.
run_tb(2 out show latest --db ${WORK}/missing.sqlite)
expect("does not exist" "${out}" "missing db")
if(EXISTS ${WORK}/missing.sqlite)
  message(FATAL_ERROR "show created a database")
endif()

# list: every catalog id, applicable or not with the reason.
run_tb(0 out list --suites ${SOURCE}/suites)
foreach(text "no_grad" "omp_threads" "ddp_no_sync" "cuda_graphs" "not applicable" "smoke (")
  expect("${text}" "${out}" "list")
endforeach()
file(REMOVE_RECURSE ${WORK})

# Every worker starts through the run's launch link (harness/run/launch_paths.h), also under a launcher:
# numa_bind's ON arm runs numactl, which would otherwise start its worker by the build's full path
# and the OFF arm's by /proc/self/exe, paths of other lengths (a bias of up to 9 % here).
file(WRITE ${WORK}/numa.json "{
  \"name\": \"numa-launch\",
  \"defaults\": {\"processes\": 1, \"warmup\": 1, \"samples\": 2, \"iterations\": 1, \"timeout_s\": 120, \"batch\": 2},
  \"experiments\": [{\"knob\": \"numa_bind\", \"model\": \"gpt\", \"preset\": \"tiny\", \"mode\": \"infer\"}]
}
")
run_tb(0 out run --suite ${WORK}/numa.json --db ${WORK}/numa.sqlite -q)
expect_sql(${WORK}/numa.sqlite
  "SELECT COUNT(DISTINCT arm), COUNT(DISTINCT json_extract(evidence, '$.launched_as')), SUM(json_extract(evidence, '$.launched_as') LIKE '%/tunebench-exe-%/000000'), SUM(json_extract(evidence, '$.executable') LIKE '%tunebench-exe-%') FROM trials WHERE status = 'ok'"
  "2|1|2|0" "numa_bind: both arms' workers should start by the one launch link, their evidence naming the build (arms|launch paths|through the link|evidence naming the link)")
