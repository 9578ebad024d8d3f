# tunebench compare --hosts end to end (the procurement comparison, harness/analysis/hosts.h): two
# synthetic hosts stored with the hidden `tunebench import` (box-b 20 % slower), ranked apart with
# prices and in JSON; fewer than two hosts, an unknown host, an unknown suite and bad prices files
# are one message each and exit 2.
# cmake -DTUNEBENCH=<binary> -DWORK=<dir> -P cli_hosts.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(db ${WORK}/hosts.sqlite)
set(TB_CWD ${WORK})
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)

# One run record per host: the default-settings arm of GPT tiny inference, 3 processes of 4
# samples: BASE (three samples) and PREFIX followed by the process index.
function(host_record out_var n host base prefix)
  set(trials "")
  set(sep "")
  foreach(p RANGE 2)
    string(APPEND trials "${sep}{\"spec\": {\"experiment\": \"no_grad.gpt\", \"knob\": \"no_grad\", "
           "\"arm\": \"off\", \"settings\": {\"omp_threads\": 4, \"allocator\": \"glibc\", "
           "\"no_grad\": false}, \"model\": {\"name\": \"gpt\", \"preset\": \"tiny\"}, "
           "\"mode\": \"infer\", \"batch\": 8, \"warmup\": 1, \"samples\": 4, \"iterations\": 1, "
           "\"timeout_s\": 60, \"process_index\": ${p}, \"sequence\": ${p}}, "
           "\"result\": {\"status\": \"ok\", \"sample_seconds\": [${base}, ${prefix}${p}]}}")
    set(sep ", ")
  endforeach()
  string(CONCAT record "{\"run\": {\"uuid\": \"0000000${n}-0000-4000-8000-000000000000\", "
      "\"suite_name\": \"smoke\", \"suite_hash\": \"h\", \"suite\": {}, "
      "\"started_at\": \"2026-03-0${n}T00:00:00Z\", \"host\": {\"hostname\": \"${host}\", "
      "\"cores\": 4}, \"software\": {}, \"host_state\": {}, \"host_quiet\": true}, "
      "\"status\": \"completed\", \"ended_at\": \"2026-03-0${n}T00:10:00Z\", "
      "\"trials\": [${trials}]}")
  set(${out_var} "${record}" PARENT_SCOPE)
endfunction()
host_record(a 1 box-a "0.01000, 0.01010, 0.00995" "0.0100")
host_record(b 2 box-b "0.01200, 0.01212, 0.01194" "0.0120")  # 20 % slower
file(WRITE ${WORK}/records.jsonl "${a}\n${b}\n")
run_tb(0 out import ${WORK}/records.jsonl --db ${db})

file(WRITE ${WORK}/prices.json "{\"box-a\": 3.0, \"box-b\": 1.0}")
run_tb(0 out compare --hosts box-a box-b --prices ${WORK}/prices.json --db ${db})
expect("ranking by items/s: 1 box-a; 2 box-b" "${out}" "ranked apart")
expect("ranking by items per currency unit: 1 box-b; 2 box-a" "${out}" "ranked by price")
expect("box-a / box-b 1.2" "${out}" "the ratio")
expect("not measured" "${out}" "energy")
run_tb(0 out compare --hosts box-a box-b --db ${db} --format json)
string(JSON faster GET "${out}" workloads 0 pairs 0 faster)
if(NOT faster STREQUAL "box-a")
  message(FATAL_ERROR "json: the faster host is ${faster}\n${out}")
endif()
run_tb(0 out compare --hosts box-a box-b --db ${db} --format md)
expect("| host | items/s |" "${out}" "md")

run_tb(2 out compare --hosts box-a --db ${db})
expect("--hosts needs at least 2 hosts to compare, got 1; hosts with runs: box-a, box-b" "${out}" "one host")
run_tb(2 out compare --hosts box-a nosuch --db ${db})
expect("no finished run on host 'nosuch'; hosts with runs: box-a, box-b" "${out}" "unknown host")
run_tb(2 out compare --hosts box-a box-b --suite cpu-full --db ${db})
expect("host 'box-a' has no finished run of suite 'cpu-full'" "${out}" "unknown suite")
file(WRITE ${WORK}/bad.json "{\"box-a\": 0}")
run_tb(2 out compare --hosts box-a box-b --prices ${WORK}/bad.json --db ${db})
expect("the price of 'box-a' is 0; prices are positive numbers" "${out}" "bad price")
run_tb(2 out compare --hosts box-a box-b --prices ${WORK}/missing.json --db ${db})
expect("cannot read it" "${out}" "missing prices file")
file(REMOVE_RECURSE ${WORK})
