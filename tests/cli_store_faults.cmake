# Storage faults as a user meets them, with the real binary (PART picks one):
#   disk_full  the device fills mid-run: one message with the resume command, then the database
#              opens again and `run --resume` completes the run (tests/store_disk_full.sh; root)
#   read_only  a published file (mode 444 in a 555 folder) read by another user: show, export,
#              compare, an older schema and merge-from work and leave nothing beside it; `run`
#              refuses before starting (runs as nobody; root)
#   damaged    flipped bytes in a b-tree page: refused for writing, file unchanged; a row's bad
#              JSON: named with file, run and trial, merge imports the other run; merge completes
#              a run it held interrupted; a merge that stores nothing leaves no new file
# Run by ctest: cmake -DTUNEBENCH=<binary> -DSOURCE=<source dir> -DWORK=<scratch> -DPART=… -P …
set(TB_CWD ${WORK})
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)
set(suite ${SOURCE}/tests/suites/mini.json)

# A small database of `runs` runs of mini.json's no_grad experiment (4 trials each).
function(make_db db runs)
  foreach(i RANGE 1 ${runs})
    run_tb(0 out run --suite ${suite} --filter no_grad --db ${db} --quiet)
  endforeach()
endfunction()

function(only_file dir name what)
  file(GLOB found RELATIVE ${dir} ${dir}/*)
  if(NOT "${found}" STREQUAL "${name}")
    message(FATAL_ERROR "${what}: ${dir} holds '${found}', expected only '${name}'")
  endif()
endfunction()

if(PART STREQUAL "disk_full")
  file(MAKE_DIRECTORY ${WORK})
  run_cmd(0 out ${WORK} sh ${SOURCE}/tests/store_disk_full.sh ${TUNEBENCH} ${suite} ${WORK}/full)
  if(out MATCHES "SKIPPED:")
    message("${out}")
    return()
  endif()
  expect("run exit 2" "${out}" "the run stops")
  expect("no space left on the device holding ${WORK}/full/mnt/results.sqlite" "${out}"
         "the run says the device is full")
  expect("free space, then resume with: tunebench run --resume " "${out}" "the resume command")
  string(REGEX MATCHALL "cannot store trial [0-9]+" named "${out}")
  list(LENGTH named named_count)
  if(NOT named_count EQUAL 1 OR out MATCHES "storing trial")
    message(FATAL_ERROR "the trial should be named once:\n${out}")
  endif()
  expect("show exit 0" "${out}" "the database opens again once space is freed")
  expect("resume exit 0" "${out}" "--resume completes the run")
  expect("stored: completed with 8" "${out}" "every trial stored")
elseif(PART STREQUAL "read_only")
  execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT uid STREQUAL "0")
    message("SKIPPED: reading as another user needs root (runuser)")
    return()
  endif()
  file(REMOVE_RECURSE ${WORK})
  file(MAKE_DIRECTORY ${WORK}/make)
  make_db(${WORK}/make/results.sqlite 2)
  # What nobody reads lies in a folder of its own that user can reach (the checkout may lie in
  # a folder only root can enter, as a CI clone in a 0700 temporary folder does), with a copy
  # of the binary and of the suite.
  execute_process(COMMAND mktemp -d /tmp/tunebench-read-only-XXXXXX OUTPUT_VARIABLE ro
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND chmod 755 ${ro})
  file(MAKE_DIRECTORY ${ro}/pub ${ro}/old ${ro}/out)
  file(COPY ${TUNEBENCH} ${suite} DESTINATION ${ro})
  get_filename_component(binary_name ${TUNEBENCH} NAME)
  get_filename_component(suite_name ${suite} NAME)
  set(TUNEBENCH ${ro}/${binary_name})
  set(suite ${ro}/${suite_name})
  sql(${WORK}/make/results.sqlite "SELECT group_concat(uuid, ' ') FROM (SELECT uuid FROM runs ORDER BY started_at, rowid)" uuids)
  separate_arguments(uuids)
  list(GET uuids 0 first)
  list(GET uuids 1 second)
  file(COPY ${WORK}/make/results.sqlite DESTINATION ${ro}/pub)
  # The same file at schema version 6 (before runs recorded their orchestrator, tunings, and
  # their certification and sampling).
  file(COPY ${WORK}/make/results.sqlite DESTINATION ${ro}/old)
  sql(${ro}/old/results.sqlite
      "DROP TABLE tunings; ALTER TABLE runs DROP COLUMN orchestrator; ALTER TABLE runs DROP COLUMN certification; ALTER TABLE runs DROP COLUMN sampling; PRAGMA user_version = 6; PRAGMA user_version" v)
  foreach(dir pub old)
    execute_process(COMMAND chmod 444 ${ro}/${dir}/results.sqlite)
    execute_process(COMMAND chmod 555 ${ro}/${dir})
  endforeach()
  execute_process(COMMAND chown nobody ${ro}/out)
  file(SHA256 ${ro}/pub/results.sqlite pub_before)
  file(SHA256 ${ro}/old/results.sqlite old_before)
  # A build linked against the Python environment's LibTorch finds it through the checkout's
  # .venv link (its RUNPATH), which that user may not reach either: the real folder is given.
  set(nobody runuser -u nobody --)
  file(REAL_PATH ${SOURCE}/.venv venv)
  file(GLOB torch_lib ${venv}/lib/python3*/site-packages/torch/lib)
  if(torch_lib)
    set(nobody runuser -u nobody -- env LD_LIBRARY_PATH=${torch_lib})
  endif()
  set(pub ${ro}/pub/results.sqlite)
  run_cmd(0 out ${ro} ${nobody} ${TUNEBENCH} show latest --verbose --db ${pub})
  expect("run ${second}" "${out}" "show as nobody")
  run_cmd(0 out ${ro} ${nobody} ${TUNEBENCH} export ${first} --format csv --db ${pub})
  expect("${first},no_grad" "${out}" "export as nobody")
  run_cmd(0 out ${ro} ${nobody} ${TUNEBENCH} compare ${first} ${second} --db ${pub})
  run_cmd(0 out ${ro} ${nobody} ${TUNEBENCH} merge ${pub} --db ${ro}/out/merged.sqlite)
  expect("imported 2 run(s)" "${out}" "merge from a read-only file")
  run_cmd(0 out ${ro} ${nobody} ${TUNEBENCH} show ${first} --verbose --db ${ro}/old/results.sqlite)
  expect("run ${first}" "${out}" "show of an older schema version")
  run_cmd(2 out ${ro} ${nobody} ${TUNEBENCH} run --suite ${suite} --db ${pub} --quiet)
  expect("${pub} can only be read (Permission denied): tunebench writes to it" "${out}"
         "run on a read-only file")
  if(out MATCHES "trial")
    message(FATAL_ERROR "run started before it refused:\n${out}")
  endif()
  only_file(${ro}/pub results.sqlite "after reading the published file")
  only_file(${ro}/old results.sqlite "after reading the older file")
  file(SHA256 ${pub} pub_after)
  file(SHA256 ${ro}/old/results.sqlite old_after)
  if(NOT pub_before STREQUAL pub_after OR NOT old_before STREQUAL old_after)
    message(FATAL_ERROR "reading changed a file")
  endif()
  execute_process(COMMAND chmod 755 ${ro}/pub ${ro}/old)
  file(REMOVE_RECURSE ${ro})
elseif(PART STREQUAL "damaged")
  file(REMOVE_RECURSE ${WORK})
  file(MAKE_DIRECTORY ${WORK})
  set(db ${WORK}/results.sqlite)
  make_db(${db} 2)
  sql(${db} "SELECT group_concat(uuid, ' ') FROM (SELECT uuid FROM runs ORDER BY started_at, rowid)" uuids)
  separate_arguments(uuids)
  list(GET uuids 0 first)
  list(GET uuids 1 second)
  sql(${db} "SELECT COUNT(*) FROM trials WHERE run_uuid = '${first}'" first_trials)

  # 16 bytes flipped at the start of a b-tree page: writing refused, the file unchanged.
  file(COPY_FILE ${db} ${WORK}/btree.sqlite)
  sql(${WORK}/btree.sqlite "SELECT (MAX(pageno) - 1) * 4096 FROM dbstat WHERE name = 'samples'"
      offset)
  run_cmd(0 out ${WORK} sh -c
          "printf '\\245\\245\\245\\245\\245\\245\\245\\245\\245\\245\\245\\245\\245\\245\\245\\245' | dd of=btree.sqlite bs=1 seek=${offset} conv=notrunc 2>/dev/null")
  file(SHA256 ${WORK}/btree.sqlite before)
  run_tb(2 out run --suite ${suite} --filter no_grad --db ${WORK}/btree.sqlite --quiet)
  expect("${WORK}/btree.sqlite is damaged: SQLite's quick_check says: " "${out}" "run refuses")
  expect("restore it from a backup (none is beside it)" "${out}" "what to do")
  run_tb(2 out merge ${db} --db ${WORK}/btree.sqlite)
  expect("is damaged" "${out}" "merge into a damaged file")
  file(SHA256 ${WORK}/btree.sqlite after)
  if(NOT before STREQUAL after)
    message(FATAL_ERROR "a damaged file was written to")
  endif()
  # The salvage the refusal recommends, on a copy whose last page of trials (the second run's) is
  # overwritten whole: every run whose pages can be read is copied whole, the run on the damaged
  # page is named; the damaged file stays unchanged.
  file(COPY_FILE ${db} ${WORK}/page.sqlite)
  sql(${WORK}/page.sqlite "SELECT (MAX(pageno) - 1) * 4096 FROM dbstat WHERE name = 'trials'"
      offset)
  run_cmd(0 out ${WORK} sh -c
          "head -c 4096 /dev/zero | tr '\\000' '\\245' | dd of=page.sqlite bs=1 seek=${offset} conv=notrunc 2>/dev/null")
  file(SHA256 ${WORK}/page.sqlite before)
  run_tb(2 out run --suite ${suite} --filter no_grad --db ${WORK}/page.sqlite --quiet)
  expect("copy its readable runs into a new file with `tunebench merge ${WORK}/page.sqlite --db NEW.sqlite`"
         "${out}" "the refusal's salvage command")
  run_tb(1 out merge ${WORK}/page.sqlite --db ${WORK}/salvage.sqlite)
  expect("imported 1 run(s)" "${out}" "the salvage imports the readable run")
  expect("run ${second} not imported: its rows cannot be read (SQLite: database disk image is malformed)"
         "${out}" "the salvage names the run it could not read")
  expect_sql(${WORK}/salvage.sqlite "SELECT group_concat(uuid) FROM runs" "${first}" "salvaged runs")
  expect_sql(${WORK}/salvage.sqlite "SELECT COUNT(*) FROM trials WHERE run_uuid = '${first}'"
             "${first_trials}" "the salvaged run whole")
  run_tb(0 out show ${first} --db ${WORK}/salvage.sqlite)
  file(SHA256 ${WORK}/page.sqlite after)
  if(NOT before STREQUAL after)
    message(FATAL_ERROR "the salvage wrote to the damaged file")
  endif()

  # Bytes of one row's JSON made ill-formed UTF-8: named; merge imports the other run.
  file(COPY_FILE ${db} ${WORK}/json.sqlite)
  sql(${WORK}/json.sqlite "UPDATE trials SET evidence = CAST(X'7B226E6F7465223A22FF227D' AS TEXT) WHERE run_uuid = '${second}' AND sequence = 1; SELECT changes()" changed)
  run_tb(2 out show ${second} --db ${WORK}/json.sqlite)
  expect("${WORK}/json.sqlite: run ${second}, trial 1 (trials row id " "${out}" "show names it")
  expect("its evidence is not valid JSON" "${out}" "show says what is wrong")
  run_tb(2 out export ${second} --db ${WORK}/json.sqlite)
  expect("run ${second}, trial 1" "${out}" "export names it")
  run_tb(1 out merge ${WORK}/json.sqlite --db ${WORK}/merged.sqlite)
  expect("imported 1 run(s)" "${out}" "merge imports the good run")
  expect("run ${second} not imported: trial 1" "${out}" "merge names the bad run")
  expect_sql(${WORK}/merged.sqlite "SELECT group_concat(uuid) FROM runs" "${first}" "merged runs")
  # A merge that stores nothing leaves no new file behind.
  sql(${WORK}/json.sqlite "PRAGMA foreign_keys = ON; DELETE FROM runs WHERE uuid = '${first}'" x)
  run_tb(1 out merge ${WORK}/json.sqlite --db ${WORK}/nothing.sqlite)
  expect("nothing was imported: ${WORK}/nothing.sqlite was not created" "${out}" "empty merge")
  if(EXISTS ${WORK}/nothing.sqlite)
    message(FATAL_ERROR "merge left an empty database behind")
  endif()

  # An interrupted copy merged, then the finished one: the run is completed in the target.
  file(COPY_FILE ${db} ${WORK}/part.sqlite)
  sql(${WORK}/part.sqlite "PRAGMA foreign_keys = ON; DELETE FROM trials WHERE run_uuid = '${first}' AND sequence >= 2; UPDATE runs SET status = 'interrupted', ended_at = NULL WHERE uuid = '${first}'" x)
  run_tb(0 out merge ${WORK}/part.sqlite --db ${WORK}/target.sqlite)
  expect_sql(${WORK}/target.sqlite "SELECT status || ' ' || (SELECT COUNT(*) FROM trials WHERE run_uuid = '${first}') FROM runs WHERE uuid = '${first}'" "interrupted 2" "the interrupted copy")
  run_tb(0 out merge ${db} --db ${WORK}/target.sqlite)
  expect("run ${first} was unfinished here: completed from this copy" "${out}" "merge says it")
  expect_sql(${WORK}/target.sqlite "SELECT status || ' ' || (SELECT COUNT(*) FROM trials WHERE run_uuid = '${first}') FROM runs WHERE uuid = '${first}'" "completed ${first_trials}" "the run completed in the target")
  run_tb(0 out merge ${WORK}/part.sqlite --db ${WORK}/target.sqlite)
  expect_sql(${WORK}/target.sqlite "SELECT status || ' ' || (SELECT COUNT(*) FROM trials WHERE run_uuid = '${first}') FROM runs WHERE uuid = '${first}'" "completed ${first_trials}" "a less complete copy changes nothing")
else()
  message(FATAL_ERROR "PART must be disk_full, read_only or damaged, not '${PART}'")
endif()
file(REMOVE_RECURSE ${WORK})
