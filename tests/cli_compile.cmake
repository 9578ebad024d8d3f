# The compile knob from the command line: `list` says where it applies (the pypi build)
# and why not elsewhere (Debian's LibTorch 1.13 has no AOTInductor); on the pypi build a tiny GPT
# runs as an AOTInductor package against the eager model, paired in one process, both arms pass
# the guard, and `show` prints the effect with its interval and the compilation's break-even. The
# Python worker (models/python/worker.py, worker_build "python") trains the same tiny GPT eager
# and under torch.compile, and against the C++ worker: every arm passes the guard (the Python
# frontend computes the C++ model's loss from the C++ model's weights), evidence names the
# frontend and the compiled graphs.
# Packages are cached in CACHE (the build folder's, shared with tests/test_compile_knob.cpp).
# cmake -DTUNEBENCH=<binary> -DSOURCE=<src> -DWORK=<dir> -DCACHE=<dir> -P …
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(db ${WORK}/compile.sqlite)
set(TB_CWD ${SOURCE})
set(ENV{TUNEBENCH_COMPILE_CACHE} ${CACHE})
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)

run_tb(0 out list)
string(REGEX MATCH "\n *compile [^\n]*" row "${out}")
if(row STREQUAL "")
  message(FATAL_ERROR "list has no compile row:\n${out}")
endif()
string(FIND "${row}" "no AOTInductor" na)
file(WRITE ${WORK}/compile.json "{
  \"name\": \"compile-test\",
  \"defaults\": {\"warmup\": 2, \"samples\": 3, \"iterations\": 5, \"batch\": 2, \"timeout_s\": 600,
               \"settings\": {\"omp_threads\": 2}},
  \"experiments\": [
    {\"knob\": \"compile\", \"model\": \"gpt\", \"preset\": \"tiny\", \"mode\": \"infer\",
     \"design\": \"auto\", \"workers\": 3, \"blocks\": 4, \"block_samples\": 2, \"budget_s\": 0}
  ]
}
")
run_tb(0 out run --suite ${WORK}/compile.json --db ${db} -q)
run_tb(0 out show --verbose --db ${db})
if(NOT na EQUAL -1)
  # The build without AOTInductor: the experiment is recorded as not applicable, with the reason.
  expect("not applicable" "${out}" "show on a build without AOTInductor")
  expect("no AOTInductor" "${out}" "the reason in show")
  message("SKIPPED: compile not applicable on this build:${row}")
  return()
endif()
expect("effect on time: " "${out}" "the compiled model's effect with its interval")
expect("compiled in " "${out}" "the compilation's cost beside the effect")
expect("compile=default" "${out}" "the ON arm's evidence line")
execute_process(COMMAND sqlite3 ${db}
  "SELECT COUNT(*) FROM trials WHERE status = 'ok' AND json_extract(evidence, '$.compile.forward') = 'aoti' AND json_extract(evidence, '$.compile.package_calls') > 0"
  OUTPUT_VARIABLE ok OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT ok EQUAL 3)
  message(FATAL_ERROR "expected 3 ok ON trials that called the package, got ${ok}")
endif()

# A package in use is never pruned: made to look a month old, ci/prune-cache.sh would remove it;
# a run that loads it marks it used again.
execute_process(COMMAND sqlite3 ${db}
  "SELECT DISTINCT json_extract(evidence, '$.compile.code') FROM trials WHERE arm = 'on'"
  OUTPUT_VARIABLE code OUTPUT_STRIP_TRAILING_WHITESPACE)
get_filename_component(package ${code} DIRECTORY)
if(NOT IS_DIRECTORY ${package} OR NOT package MATCHES "^${CACHE}/gpt-default-")
  message(FATAL_ERROR "the ON arm's package should be a folder in ${CACHE}: '${package}'")
endif()
set(ENV{TUNEBENCH_CACHE} ${WORK}/no-cache)
execute_process(COMMAND touch -d "30 days ago" ${package})
run_cmd(0 log ${SOURCE} bash ci/prune-cache.sh --dry-run)
expect("would remove ${package} (a compiled package last used 30 days ago" "${log}"
       "prune of a package made to look unused")
run_tb(0 out run --suite ${WORK}/compile.json --db ${WORK}/again.sqlite -q)
run_cmd(0 log ${SOURCE} bash ci/prune-cache.sh --dry-run)
string(FIND "${log}" "${package}" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "a run loaded ${package}, yet prune would remove it (the worker should "
                      "mark it used):\n${log}")
endif()
unset(ENV{TUNEBENCH_CACHE})

# Training: torch.compile in the Python worker, and the Python frontend against the C++ one.
file(WRITE ${WORK}/train.json "{
  \"name\": \"compile-train-test\",
  \"defaults\": {\"warmup\": 2, \"samples\": 3, \"iterations\": 3, \"batch\": 2, \"timeout_s\": 600,
               \"processes\": 1, \"design\": \"processes\", \"settings\": {\"omp_threads\": 2}},
  \"experiments\": [
    {\"knob\": \"compile\", \"model\": \"gpt\", \"preset\": \"tiny\", \"mode\": \"train\",
     \"settings\": {\"worker_build\": \"python\"}},
    {\"name\": \"frontend.gpt-tiny-train\", \"knob\": \"worker_build\", \"model\": \"gpt\",
     \"preset\": \"tiny\", \"mode\": \"train\",
     \"arms\": {\"off\": {\"worker_build\": \"self\"}, \"on\": {\"worker_build\": \"python\"}}}
  ]
}
")
run_tb(0 out run --suite ${WORK}/train.json --db ${WORK}/train.sqlite -q)
run_tb(0 out show --verbose --db ${WORK}/train.sqlite)
expect("(torch.compile) graphs=" "${out}" "the Python worker's compiled arm")
execute_process(COMMAND sqlite3 ${WORK}/train.sqlite
  "SELECT experiment || ':' || arm || ':' || status || ':' || IFNULL(json_extract(evidence, '$.frontend'), 'cpp') FROM trials ORDER BY experiment, arm"
  OUTPUT_VARIABLE arms OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REPLACE "\n" ";" arms "${arms}")
set(want "compile.gpt-tiny-train:off:ok:python;compile.gpt-tiny-train:on:ok:python;frontend.gpt-tiny-train:off:ok:cpp;frontend.gpt-tiny-train:on:ok:python")
if(NOT arms STREQUAL want)
  message(FATAL_ERROR "expected every arm ok on its frontend:\n  ${want}\ngot\n  ${arms}\n${out}")
endif()

# A compile that outlasts its trial: the worker's deadline (what is left of timeout_s) kills the
# compile's process group and the trial fails with one message that names the step; no half
# package is cached and no request folder is left in TMPDIR. (Batch 3: a package no other test
# compiled, so the compile really starts.)
file(WRITE ${WORK}/deadline.json "{
  \"name\": \"compile-deadline-test\",
  \"defaults\": {\"warmup\": 1, \"samples\": 2, \"iterations\": 1, \"batch\": 3, \"timeout_s\": 12,
               \"settings\": {\"omp_threads\": 2}},
  \"experiments\": [
    {\"knob\": \"compile\", \"model\": \"gpt\", \"preset\": \"tiny\", \"mode\": \"infer\",
     \"design\": \"processes\", \"processes\": 1}
  ]
}
")
file(MAKE_DIRECTORY ${WORK}/tmp)
set(ENV{TMPDIR} ${WORK}/tmp)
run_tb(1 out run --suite ${WORK}/deadline.json --db ${WORK}/deadline.sqlite)
unset(ENV{TMPDIR})
execute_process(COMMAND sqlite3 ${WORK}/deadline.sqlite
  "SELECT error FROM trials WHERE arm = 'on'" OUTPUT_VARIABLE error OUTPUT_STRIP_TRAILING_WHITESPACE)
expect("compile: AOTInductor's compile of gpt default (models/python/aoti_compile.py) did not return within" "${error}"
       "a compile past its deadline")
file(GLOB left ${WORK}/tmp/tunebench-aoti-*)
if(left)
  message(FATAL_ERROR "a compile killed at its deadline left ${left}")
endif()
file(GLOB work ${CACHE}/.aoti-*)
if(work)
  message(FATAL_ERROR "a compile killed at its deadline left its work folder: ${work}")
endif()
file(GLOB half ${CACHE}/gpt-default-*)
foreach(p IN LISTS half)
  if(p MATCHES "[.]lock$")
    continue()  # the package's lock file (worker/actions/compile.cpp), kept beside it
  endif()
  if(NOT EXISTS ${p}/model.pt2 OR NOT EXISTS ${p}/meta.json)
    message(FATAL_ERROR "half a package left in the cache: ${p}")
  endif()
endforeach()
