# Helpers shared by the command-line tests (cmake -P scripts).
# run_tb(RC OUT args…): runs tunebench with args in ${TB_CWD}, fails unless it exits RC, and puts
# stdout and stderr together into OUT. expect(TEXT HAYSTACK WHAT): fails unless TEXT is in it.
# expect_sql(DB QUERY WANTED WHY): fails with WHY unless sqlite3 prints WANTED for QUERY on DB.
# run_cmd(RC OUT DIR command…): the same for any command, run in DIR.
# expect_absent(FILE WHY): fails with WHY unless FILE does not exist (nothing was written).
# expect_arms(DB KNOB EXPR WANTED WHY): fails with WHY unless EXPR (SQL of a trial's evidence) is,
# for one trial of each arm of experiment KNOB.*, WANTED as "off=…,on=…".
function(run_cmd expected_rc out_var dir)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${dir}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL expected_rc)
    string(JOIN " " command ${ARGN})
    message(FATAL_ERROR "${command}: exit ${rc}, expected ${expected_rc}\n${out}\n${err}")
  endif()
  set(${out_var} "${out}${err}" PARENT_SCOPE)
endfunction()

function(run_tb expected_rc out_var)
  run_cmd(${expected_rc} out ${TB_CWD} ${TUNEBENCH} ${ARGN})
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(expect text haystack what)
  string(FIND "${haystack}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: output lacks '${text}'\n${haystack}")
  endif()
endfunction()

function(expect_sql db query wanted why)
  execute_process(COMMAND sqlite3 ${db} "${query}" OUTPUT_VARIABLE got OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT got STREQUAL "${wanted}")
    message(FATAL_ERROR "${why}: expected ${wanted}, got '${got}'")
  endif()
endfunction()

function(expect_absent file why)
  if(EXISTS ${file})
    message(FATAL_ERROR "${why}: ${file} was written")
  endif()
endfunction()

function(expect_arms db knob expr wanted why)
  expect_sql(${db} "SELECT group_concat(arm || '=' || (${expr}), ',') FROM (SELECT arm, evidence
                    FROM trials WHERE experiment LIKE '${knob}.%' GROUP BY arm ORDER BY arm)"
             "${wanted}" "${why}")
endfunction()

# One sqlite3 query of `db`, its output in out_var; a failed query stops the test.
function(sql db query out_var)
  execute_process(COMMAND sqlite3 ${db} "${query}" OUTPUT_VARIABLE got
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sqlite3 ${db} '${query}': exit ${rc}")
  endif()
  set(${out_var} "${got}" PARENT_SCOPE)
endfunction()

# The latest run of `db` holds the SHA-256 of model file `path` in its software fingerprint (a
# changed file is different software).
function(expect_model_hash db path)
  run_tb(0 shown show latest --db ${db} --json)
  string(JSON sha GET "${shown}" software model_files "${path}")
  string(LENGTH "${sha}" n)
  if(NOT n EQUAL 64)
    message(FATAL_ERROR "the hash of ${path} is not in the run's software: ${shown}")
  endif()
endfunction()
