# `tunebench tune` end to end on a tiny TorchScript model (tests/models/make_tiny.py), with a
# short budget: the three stages run and are stored as runs, the recommendation (or "keep the
# defaults") is printed with its intervals and stored once; bad input gets one message, exit 2
# and no database.
# cmake -DTUNEBENCH=<binary> -DSOURCE=<source dir> -DWORK=<scratch dir> -P cli_tune.cmake
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(TB_CWD ${SOURCE})
run_cmd(0 made ${SOURCE} ${SOURCE}/.venv/bin/python ${SOURCE}/tests/models/make_tiny.py ${WORK})
set(db ${WORK}/tune.sqlite)

run_tb(0 out tune --model ${WORK}/conv.pt --input 3x8x8:float32 --batch 4 --budget 30 --db ${db})
expect("tune: 1/3 screening every knob on ${WORK}/conv.pt" "${out}" "the first stage's line")
expect("ladder (each step against the configuration before it" "${out}" "the ladder")
expect("stored as tuning " "${out}" "the recommendation is stored")
if(out MATCHES "recommended: keep the defaults")
  message("no knob helped alone here: the recommendation is the defaults")
else()
  # A configuration: measured against the defaults, with its interval.
  if(NOT out MATCHES "time against the defaults: [0-9.]+x \\[[0-9.]+, [0-9.]+\\]")
    message(FATAL_ERROR "the configuration's effect lacks its interval:\n${out}")
  endif()
  expect("how to apply it:" "${out}" "the recommendation")
  # The ladder's product is checked against the final measurement, both with their intervals.
  if(NOT out MATCHES "the ladder's product [0-9.]+x \\[[0-9.]+, [0-9.]+\\][^\n]* (agrees with|DISAGREES with) the final measurement [0-9.]+x \\[")
    message(FATAL_ERROR "the ladder's product is not checked against the final measurement:\n${out}")
  endif()
  # A launch line for process-start knobs (threads, allocator), code lines for the others.
  if(NOT out MATCHES "\n  (launch|Python): ")
    message(FATAL_ERROR "the recommendation says nothing of how to apply it:\n${out}")
  endif()
  sql(${db} "SELECT COUNT(*) FROM runs WHERE label LIKE 'tune % final'" finals)
  if(NOT finals EQUAL 1)
    message(FATAL_ERROR "the final stage's run is not stored once: ${finals}")
  endif()
endif()
# Whether the screen's controls certify what the recommendation rests on, said and stored.
if(NOT out MATCHES "\n  screen stage: (certified by its controls|NOT CERTIFIED by its controls)")
  message(FATAL_ERROR "the recommendation does not say whether its controls certify it:\n${out}")
endif()
if(out MATCHES "screen stage: NOT CERTIFIED")
  expect("the recommendation is NOT CERTIFIED: the controls of its screen stage" "${out}"
         "what an uncertified recommendation says")
endif()
sql(${db} "SELECT json_extract(recommendation, '$.certified') IS NOT NULL FROM tunings" stored_certified)
if(NOT stored_certified EQUAL 1)
  message(FATAL_ERROR "the stored recommendation does not say whether it is certified")
endif()
# `show TUNING` prints the stored recommendation again, as tune printed it.
string(REGEX MATCH "stored as tuning ([0-9a-f-]+)" stored_line "${out}")
set(tuning ${CMAKE_MATCH_1})
run_tb(0 again show ${tuning} --db ${db})
string(REGEX MATCH "ladder \\(each step[^\n]*\n(  [0-9]+\\. [^\n]*\n)*recommended: [^\n]*" first "${out}")
string(REGEX MATCH "ladder \\(each step[^\n]*\n(  [0-9]+\\. [^\n]*\n)*recommended: [^\n]*" second "${again}")
if(first STREQUAL "" OR NOT first STREQUAL second)
  message(FATAL_ERROR "show ${tuning} does not print the recommendation tune printed:\n${again}\n--- tune printed:\n${out}")
endif()
# Every ladder line shows its step's effect with its interval, and whether it was kept.
string(REGEX MATCHALL "\n  [0-9]+\\. [a-z_]+ +[^\n]*" steps "${out}")
foreach(step IN LISTS steps)
  if(NOT step MATCHES "x \\[[0-9.]+, [0-9.]+\\] [^\n]*(kept  cumulative [0-9.]+x \\[|dropped: )")
    message(FATAL_ERROR "a ladder step without its interval or fate: ${step}")
  endif()
endforeach()
sql(${db} "SELECT COUNT(*) FROM tunings" tunings)
sql(${db} "SELECT COUNT(*) FROM runs WHERE label LIKE 'tune % screen'" screens)
if(NOT tunings EQUAL 1 OR NOT screens EQUAL 1)
  message(FATAL_ERROR "tunings ${tunings}, screening runs ${screens}: each should be 1")
endif()
# The stored recommendation names each of its runs, and they are this database's.
sql(${db} "SELECT COUNT(*) FROM tunings t, json_each(json_extract(t.recommendation, '$.runs')) r
     WHERE json_extract(r.value, '$.run') IN (SELECT uuid FROM runs)" known)
sql(${db} "SELECT json_array_length(json_extract(recommendation, '$.runs')) FROM tunings" listed)
if(NOT known EQUAL listed OR listed LESS 1)
  message(FATAL_ERROR "the recommendation lists ${listed} runs, ${known} of them stored")
endif()

# Bad input: one message each, exit 2, nothing written.
foreach(case
    "does not exist or is not a file|${WORK}/missing.pt|--input;3x8x8:float32"
    "give the inputs its forward takes|${WORK}/conv.pt|--batch;4"
    "not a built-in model (resnet50, gpt, dlrm)|resnet|--batch;4"
    "--input is for a model from a file|resnet50|--input;3:float32"
    "--knobs: 'warp_speed' is not a knob tune screens on ${WORK}/conv.pt in infer|${WORK}/conv.pt|--input;3x8x8:float32;--knobs;no_grad,warp_speed")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 message)
  list(GET parts 1 model)
  list(SUBLIST parts 2 -1 extra)
  run_tb(2 out tune --model ${model} ${extra} --db ${WORK}/bad.sqlite)
  expect("${message}" "${out}" "bad input ${model}")
endforeach()
if(EXISTS ${WORK}/bad.sqlite)
  message(FATAL_ERROR "a bad tune input wrote a database")
endif()
file(REMOVE_RECURSE ${WORK})
