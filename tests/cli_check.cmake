# tunebench check, calibrate, merge and compare end to end: no baseline is an error (2); clean
# runs pass (0) before and after calibration; a run whose every step is 10x slower (the test-only
# "slow:900" fault) is a regression (1) in every format, at a glance and in the --verbose table,
# and its finding is stored; merge imports runs once; compare puts two runs side by side, at a
# glance and in the table.
# cmake -DTUNEBENCH=<binary> -DSOURCE=<src> -DWORK=<dir> -P cli_check.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(db ${WORK}/nightly.sqlite)

# The test-only faults ("slow:900") are enabled for every tunebench this script starts.
set(ENV{TUNEBENCH_TEST_FAULTS} 1)
set(TB_CWD ${SOURCE})
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)

# expect_match(TEXT PATTERN WHAT): fails unless the regular expression matches TEXT.
function(expect_match text pattern what)
  if(NOT text MATCHES "${pattern}")
    message(FATAL_ERROR "${what}: expected /${pattern}/ in:\n${text}")
  endif()
endfunction()

# expect_glance(TEXT WHAT TITLE LINE HEAD): a glance's group TITLE followed by four lines each
# matching LINE (the four benchmarks of tests/suites/check.json); no table head HEAD, no colour
# codes in a pipe, no line over 160 characters, and --verbose named for the rest.
function(expect_glance text what title line head)
  string(REPEAT "  ${line}\n" 4 lines)
  expect_match("${text}" "\n${title}\n${lines}" "${what} at a glance: the four benchmarks under '${title}', each with its interval")
  string(ASCII 27 escape)
  if(text MATCHES "${head}" OR text MATCHES "${escape}")
    message(FATAL_ERROR "${what} at a glance printed the table's head or colour codes:\n${text}")
  endif()
  string(REPLACE "\n" ";" rows "${text}")
  foreach(row IN LISTS rows)
    string(LENGTH "${row}" n)
    if(n GREATER 160)
      message(FATAL_ERROR "${what} at a glance has a line of ${n} characters:\n${row}")
    endif()
  endforeach()
  expect_match("${text}" "--verbose" "${what} at a glance names --verbose")
endfunction()

run_tb(0 out run --suite tests/suites/check.json --db ${db} --label nightly -q)
run_tb(2 out check --db ${db})
expect_match("${out}" "no baseline for run" "check without a baseline")
foreach(i RANGE 2 4)
  run_tb(0 out run --suite tests/suites/check.json --db ${db} --label nightly -q)
endforeach()
# Before calibration: only each run's own noise is known, and the output says so. A generous
# threshold (99 %, the most it takes, against the 10x injected below): this test must not be the
# noisy alert it guards against. Uncalibrated, a run's own interval says nothing of night-to-night
# drift, and on the CI VM a 1-ms workload drifted 1.6x between two A/A runs.
run_tb(0 out check --db ${db} --baseline last:3 --threshold 99)
expect_match("${out}" "no regression" "clean run")
expect_match("${out}" "not calibrated" "uncalibrated check")

# Calibrate from the 4 stored A/A runs; show prints the floors.
run_tb(2 out calibrate --db ${db})
expect_match("${out}" "needs --suite FILE" "calibrate without a source")
run_tb(2 out calibrate --db ${db} --from last:2)
expect_match("${out}" "at least 3 finished A/A runs" "calibrate from too few runs")
run_tb(0 out calibrate --db ${db} --from last:4)
expect_match("${out}" "noise floors from 4 A/A runs" "calibrate")
run_tb(0 out show --verbose --db ${db})
expect_match("${out}" "noise floors from 4 A/A runs" "show after calibrate")

# A fifth A/A run passes the calibrated check. Floors from 4 runs of a 3-second suite on a shared
# machine still let a busy moment through now and then (it failed once here, run right after a
# build), so the threshold is generous as above; the floors' false-alarm and detection rates are
# Detect.* and CheckTest.*'s to test.
run_tb(0 out run --suite tests/suites/check.json --db ${db} --label nightly -q)
run_tb(0 out check --db ${db} --baseline last:4 --threshold 99)
expect_match("${out}" "noise floors: calibrated" "calibrated check")
expect_match("${out}" "no regression" "calibrated A/A run")

# Every measured step 10x slower: a regression in every format, stored for show and the report.
run_tb(0 out run --suite tests/suites/check_slow.json --db ${db} --label nightly -q)
run_tb(1 out check --db ${db} --baseline last:4)
expect_match("${out}" "REGRESSION" "a 10x slower run")
# At a glance: every benchmark one line under "regression", its ratio with its interval and
# stage 1's flag, and none of the table's columns; --verbose and --format table are the table.
expect_glance("${out}" "check" "regression \\(4\\):"
              "no_grad\\.[a-z0-9-]+/(off|on) +[0-9.]+x \\[[0-9.]+, [0-9.]+\\] hurts +\\(flagged for stage 2 \\(beyond [0-9.]+x\\)\\)"
              "benchmark +arm +ratio")
run_tb(1 verbose check --db ${db} --baseline last:4 --verbose --no-store)
expect_match("${verbose}" "benchmark +arm +ratio \\[95 % interval\\] +basis \\(σ\\) +flag +floor +detectable +status"
             "check --verbose: the table")
run_tb(1 table check --db ${db} --baseline last:4 --format table --no-store)
if(NOT table STREQUAL verbose)
  message(FATAL_ERROR "check --format table is not the --verbose table:\n${table}")
endif()
run_tb(0 out show --verbose --db ${db})
expect_match("${out}" "found by tunebench check:\n  regression: slower than the baseline" "stored finding")
run_tb(1 out check --db ${db} --baseline label:nightly --format junit --no-store)
expect_match("${out}" "<failure message=\"slower than the baseline: " "junit")
run_tb(1 out check --db ${db} --baseline last:4 --format json --no-store)
expect_match("${out}" "\"regressed\": true" "json")
string(JSON slow_run GET "${out}" run)
string(JSON base_run GET "${out}" baseline 0)
run_tb(1 out check --db ${db} --baseline last:4 --format md --no-store)
expect_match("${out}" "\\| regression \\|" "md")
run_tb(2 out check --db ${db} --baseline yesterday)
run_tb(2 out check --db ${db} --baseline last:0)
run_tb(2 out check --db ${db} --false-alarm 60)

# compare: the slow run against a clean one, per benchmark with its interval: at a glance, the
# four benchmarks under "B slower than A"; --verbose the table with the medians.
run_tb(0 out compare ${base_run} ${slow_run} --db ${db})
expect_glance("${out}" "compare" "B slower than A \\(4\\):"
              "no_grad\\.[a-z0-9-]+/(off|on) +[0-9.]+x \\[[0-9.]+, [0-9.]+\\] hurts" "benchmark +arm +A +B")
run_tb(0 out compare ${base_run} ${slow_run} --db ${db} --verbose)
expect_match("${out}" "B / A \\[95 % interval\\]" "compare header")
expect_match("${out}" "x \\[[0-9.]+, [0-9.]+\\] hurts" "compare: the slow run is slower")
expect_match("${out}" "[0-9.]+ ms +[0-9.]+ ms" "compare --verbose: the medians")
run_tb(2 out compare ${base_run} --db ${db})
run_tb(2 out compare --hosts nosuchhost otherhost --db ${db})
expect_match("${out}" "no finished run on host 'nosuchhost'" "compare unknown host")

# merge: into an empty database, twice; the second import stores nothing again.
run_tb(0 out merge ${db} --db ${WORK}/merged.sqlite)
expect_match("${out}" "imported 6 run\\(s\\), 0 already here" "first merge")
run_tb(0 out merge ${db} --db ${WORK}/merged.sqlite)
expect_match("${out}" "imported 0 run\\(s\\), 6 already here" "second merge")
run_tb(0 out show ${slow_run} --verbose --db ${WORK}/merged.sqlite)
expect_match("${out}" "regression: slower than the baseline" "merged findings")
run_tb(2 out merge ${WORK}/missing.sqlite --db ${WORK}/merged.sqlite)
file(REMOVE_RECURSE ${WORK})
