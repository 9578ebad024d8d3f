# Hostile names and output paths, end to end: a suite whose names are SQL, HTML, shell and path
# traversal runs, is stored and exported verbatim, and nothing is written anywhere but the paths
# the user gave; `export -o` refuses to overwrite the results database and reports a path it
# cannot write with exit 2.
# Run by ctest: cmake -DTUNEBENCH=<binary> -DSOURCE=<source dir> -DWORK=<scratch dir> -P cli_paths.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/cwd/a/b)
set(db ${WORK}/cwd/a/b/results.sqlite)
set(name "../../escaped'; DROP TABLE runs; -- <script>alert(1)</script> $(touch pwned) `touch pwned2` | rm -rf x")

set(TB_CWD ${WORK}/cwd/a/b)
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)

function(only_files what)
  file(GLOB_RECURSE found LIST_DIRECTORIES false RELATIVE ${WORK} ${WORK}/*)
  list(FILTER found EXCLUDE REGEX "results\\.sqlite(-wal|-shm|-journal)?$")
  list(SORT found)
  set(expected ${ARGN})
  list(SORT expected)
  if(NOT "${found}" STREQUAL "${expected}")
    message(FATAL_ERROR "${what}: files under ${WORK} are '${found}', expected '${expected}'")
  endif()
endfunction()

run_tb(0 out run --suite ${SOURCE}/tests/suites/hostile_names.json --db ${db} --quiet)
only_files("run")  # nothing but the database: no 'pwned', nothing 'escaped' two folders up

# The names come back verbatim from the database.
run_tb(0 out export latest --db ${db} --format json -o export.json)
only_files("export" cwd/a/b/export.json)
file(READ ${WORK}/cwd/a/b/export.json exported)
string(JSON stored_name GET "${exported}" trials 0 spec experiment)
if(NOT stored_name STREQUAL name)
  message(FATAL_ERROR "export: experiment name '${stored_name}', expected '${name}'")
endif()
run_tb(0 out show latest --verbose --db ${db})
expect("${name}" "${out}" "show")

# An output path that leads out of the folder is the user's choice and is written where it
# points, and only there.
run_tb(0 out export latest --db ${db} --format csv -o ../../out.csv)
only_files("export ../../" cwd/a/b/export.json cwd/out.csv)

# export -o onto the database itself would destroy every result: refused, database unchanged.
file(SHA256 ${db} before)
run_tb(2 out export latest --db ${db} -o ${db})
expect("is the results database" "${out}" "export onto the database")
run_tb(2 out export latest --db ${db} -o ../b/./results.sqlite)
file(SHA256 ${db} after)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "export -o onto the database changed it")
endif()

# A path that cannot be written: one message, exit 2.
run_tb(2 out export latest --db ${db} -o missing/folder/x.json)
expect("cannot write missing/folder/x.json: No such file or directory" "${out}" "missing folder")
only_files("after the refusals" cwd/a/b/export.json cwd/out.csv)
file(REMOVE_RECURSE ${WORK})
