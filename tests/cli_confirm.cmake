# The two-stage check end to end, with the real binary: nights of a tiny suite; a
# night whose build is made 30 % slower on one benchmark (the study hook TUNEBENCH_TEST_SLOWDOWN,
# which the orchestrator passes to this build's workers and never to another build's) is flagged
# by stage 1 and confirmed by stage 2, a paired A/B against a copy of the binary kept as the
# last-good build: exit 1, the A/B stored as a run of its own and the finding stored. An A/A
# night's flags are cleared by stage 2 (exit 0). Bad --confirm-with is refused (exit 2).
# cmake -DTUNEBENCH=<binary> -DSOURCE=<src> -DWORK=<dir> -P cli_confirm.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(db ${WORK}/nightly.sqlite)
set(TB_CWD ${SOURCE})
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)

# The last-good build: a copy of this binary, as ci/nightly.sh keeps one.
file(COPY_FILE ${TUNEBENCH} ${WORK}/last-good)

foreach(i RANGE 1 3)
  run_tb(0 out run --suite tests/suites/confirm.json --db ${db} --label nightly -q)
endforeach()
execute_process(COMMAND sqlite3 ${db} "SELECT COUNT(*) FROM trials WHERE reference_seconds IS NULL"
                OUTPUT_VARIABLE missing OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT missing STREQUAL "0")
  message(FATAL_ERROR "trials without reference-kernel times: ${missing}")
endif()

# A 30 % slower build on one benchmark (its ON arm): stage 2 confirms it. Stage 1 is asked to
# flag everything (--confirm-all): whether it would flag this night on its own depends on the
# host's phase in each night, which is the studies' to measure (bench/regression_study.py), not a
# test's.
set(ENV{TUNEBENCH_TEST_SLOWDOWN} "no_grad.gpt-tiny-infer/on=30")
run_tb(0 out run --suite tests/suites/confirm.json --db ${db} --label nightly -q)
run_tb(2 out check --db ${db} --baseline last:3 --confirm-with ${WORK}/no-such-build)
run_tb(1 out check --db ${db} --baseline last:3 --confirm-all --confirm-with ${WORK}/last-good
       --confirm-budget 40 --confirm-workers 3 -q --verbose)
expect("stage 2: every flagged benchmark confirmed" "${out}" "two-stage check")
expect("REGRESSION: confirmed by a paired A/B against the last-good build" "${out}" "confirmed")
expect("A/B no_grad.gpt-tiny-infer on: this build / last-good" "${out}" "the A/B line")
# Stage 2 decides at the run's false-alarm rate split over its A/Bs (1 % over the 2 benchmarks:
# 99 %) and each A/B's share over its 7 looks (16, 32, … 512 workers and the last: 99.857 %
# intervals), which hold the A/B run's stored 95 % interval.
expect("(99.8571 % interval: 1 % false alarms per run over 2 A/Bs and 7 looks)" "${out}" "stage 2's level")
expect_sql(${db}
  "SELECT r.lo < e.lo AND r.hi > e.hi FROM regressions r, effects e, runs c WHERE r.kind = 'regression' AND c.suite_name = 'confirm' AND e.run_uuid = c.uuid AND e.experiment = r.experiment || '/' || r.arm AND e.metric = 'time' AND e.kind = 'effect' AND e.confidence = 0.95"
  "1" "the finding's interval (99 %) should hold the A/B's stored 95 % interval")
run_tb(0 out show --verbose --db ${db} latest)
expect("suite confirm" "${out}" "the A/B run is stored")
# Stage 2 samples on until its target or its budget, not until a count of workers: the suite's
# default of 32 worker pairs stopped every A/B of the regression study at ~60 s of its 240.
expect_sql(${db}
  "SELECT DISTINCT json_extract(value, '$.max_workers') FROM runs, json_each(json_extract(suite_json, '$.suite.experiments')) WHERE suite_name = 'confirm'"
  "1000" "stage 2's A/B should be stopped by its budget or target, not by max_workers")
execute_process(COMMAND sqlite3 ${db}
                "SELECT uuid FROM runs WHERE label = 'nightly' ORDER BY started_at DESC, rowid DESC LIMIT 1"
                OUTPUT_VARIABLE night OUTPUT_STRIP_TRAILING_WHITESPACE)
run_tb(0 out show --verbose --db ${db} ${night})
expect("confirmed by a paired A/B against the last-good build" "${out}" "the stored finding")
# The newest run now is that A/B: calibrate and check pass over it to the suite's own runs, of
# this build or another commit of it (the stored A/B runs are taken as the other commit's nights).
execute_process(COMMAND sqlite3 ${db} "UPDATE runs SET git_revision = 'another-commit' WHERE label = 'nightly' AND rowid = (SELECT MIN(rowid) FROM runs)")
execute_process(COMMAND sqlite3 ${db} "INSERT INTO software (id, json, libtorch_version, cuda, git_revision) SELECT 'other-' || id, json_set(json, '$.git_revision', 'another-commit'), libtorch_version, cuda, 'another-commit' FROM software")
execute_process(COMMAND sqlite3 ${db} "UPDATE runs SET software_id = 'other-' || software_id WHERE rowid = (SELECT MIN(rowid) FROM runs)")
run_tb(0 out calibrate --db ${db} --from label:nightly)
expect_sql(${db} "SELECT DISTINCT runs FROM noise_floors" "4"
  "calibrate --from label:nightly after a check: the 4 nightly runs, one of another commit")
execute_process(COMMAND ${TUNEBENCH} check --db ${db} --baseline last:3 --format json
                WORKING_DIRECTORY ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
string(JSON checked ERROR_VARIABLE bad GET "${out}" run)
if(NOT (rc EQUAL 0 OR rc EQUAL 1) OR NOT checked STREQUAL night)
  message(FATAL_ERROR "check without --run after a two-stage check should check the night ${night}, not its A/B: exit ${rc}, checked '${checked}'\n${out}")
endif()

# An unchanged build: stage 2 clears every benchmark: no regression beyond a 50 % threshold.
unset(ENV{TUNEBENCH_TEST_SLOWDOWN})
run_tb(0 out run --suite tests/suites/confirm.json --db ${db} --label nightly -q)
execute_process(COMMAND sqlite3 ${db}
                "SELECT uuid FROM runs WHERE label = 'nightly' ORDER BY started_at DESC, rowid DESC LIMIT 1"
                OUTPUT_VARIABLE night OUTPUT_STRIP_TRAILING_WHITESPACE)
run_tb(0 out check --db ${db} --run ${night} --baseline last:3 --threshold 50 --confirm-all
       --confirm-with ${WORK}/last-good --confirm-budget 30 --confirm-workers 3 -q)
# At a glance: each benchmark under "no regression", stage 1's ratio with its interval beside
# stage 2's answer with its own.
if(NOT out MATCHES "\nno regression \\([0-9]+\\):\n(  [^\n]+\n)*  no_grad\\.gpt-tiny-infer/on +[0-9.]+x \\[[0-9.]+, [0-9.]+\\] [^\n]+  A/B this build / last-good: [0-9.]+x \\[[0-9.]+, [0-9.]+\\] \\([0-9.]+ % interval\\): ")
  message(FATAL_ERROR "check at a glance: no line with the A/A's A/B under 'no regression'\n${out}")
endif()
expect("\nno regression\n" "${out}" "an unchanged build")
