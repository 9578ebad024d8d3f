# ci/nightly.sh end to end: the first night keeps its build as the last-good one, a
# slowed build is confirmed by stage 2 against it (exit 1) and not kept, an unchanged one passes
# both stages (exit 0) and replaces it; check.md and the step summary carry the verdict.
# cmake -DTUNEBENCH=<binary> -DSOURCE=<src> -DWORK=<dir> -P cli_nightly.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)
set(db ${WORK}/nightly.sqlite)
set(out ${WORK}/out)
set(kept ${WORK}/last-good)
set(ENV{GITHUB_STEP_SUMMARY} ${WORK}/summary.md)

# night(RC LOG args…): one ci/nightly.sh night on the tiny suite into this test's files; fails
# unless it exits RC; LOG gets its output.
function(night expected_rc log_var)
  run_cmd(${expected_rc} o ${SOURCE} bash ci/nightly.sh --skip-setup --tunebench ${TUNEBENCH}
          --suite tests/suites/confirm.json --db ${db} --out ${out} --last-good ${kept}
          --baseline last:1 --confirm-budget 40 ${ARGN})
  set(${log_var} "${o}" PARENT_SCOPE)
endfunction()

function(expect_kept_is what)
  file(SHA256 ${TUNEBENCH} want)
  file(SHA256 ${kept}/tunebench got)
  if(NOT want STREQUAL got)
    message(FATAL_ERROR "${what}: ${kept}/tunebench is not this build")
  endif()
endfunction()

# Bad input: one message, exit 2, nothing run.
night(2 log --tunebench ${WORK}/no-such-build)
expect("no tunebench executable at ${WORK}/no-such-build" "${log}" "a missing build")
night(2 log --confirm-al)
expect("unknown argument '--confirm-al'" "${log}" "a misspelt option")
if(EXISTS ${db})
  message(FATAL_ERROR "bad input should run nothing, yet ${db} exists")
endif()

# Night 1: no last-good build yet, so stage 1 alone (--confirm-all says it cannot apply); no
# baseline either, so it passes as the first night and keeps its build.
night(0 log --confirm-all)
expect("no last-good build in ${kept} yet: stage 1 only" "${log}" "the first night")
expect("--confirm-all needs a last-good build" "${log}" "--confirm-all without a last-good build")
file(READ ${out}/check.md md)
expect("first night of this suite" "${md}" "the first night's check.md")
expect_kept_is("the first night")
if(NOT EXISTS ${out}/report.html)
  message(FATAL_ERROR "the nightly job wrote no report in ${out}")
endif()

# Night 2: this build made 30 % slower on one benchmark, every benchmark sent to stage 2: the A/B
# against the kept build confirms it, the job fails, and the slowed build is not kept.
file(WRITE ${kept}/KEPT "marker: the build of night 1\n")
set(ENV{TUNEBENCH_TEST_SLOWDOWN} "no_grad.gpt-tiny-infer/on=30")
night(1 log --confirm-all)
unset(ENV{TUNEBENCH_TEST_SLOWDOWN})
expect("every benchmark confirmed against the last-good build in ${kept}" "${log}" "stage 2 on")
file(READ ${out}/check.md md)
expect("confirmed by a paired A/B against the last-good build" "${md}" "the slowed night's check.md")
file(READ ${kept}/KEPT marker)
if(NOT marker STREQUAL "marker: the build of night 1\n")
  message(FATAL_ERROR "a night that regressed replaced the last-good build: KEPT says '${marker}'")
endif()
file(READ ${WORK}/summary.md summary)
expect("confirmed by a paired A/B against the last-good build" "${summary}" "the step summary")

# Night 3: unchanged, every benchmark through stage 2 at a 50 % threshold (an A/A cannot reach it):
# no regression, exit 0, and this build replaces the last-good one.
night(0 log --confirm-all --threshold 50)
expect("this build is now the last-good one" "${log}" "a passing night")
file(READ ${out}/check.md md)
expect("gpt-tiny-infer on: this build / last-good" "${md}" "the unchanged night's A/B in check.md")
expect("\nno regression\n" "${md}" "the unchanged night's verdict")
file(READ ${kept}/KEPT marker)
if(marker MATCHES "^marker")
  message(FATAL_ERROR "a passing night did not replace the last-good build: KEPT says '${marker}'")
endif()
expect_kept_is("the third night")
expect_sql(${db} "SELECT COUNT(*) FROM runs WHERE suite_name = 'confirm'" "2"
  "two nights with --confirm-all and a last-good build should store two stage-2 A/B runs")
