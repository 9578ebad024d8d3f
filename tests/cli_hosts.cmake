# tunebench compare --hosts end to end (the procurement comparison, harness/analysis/hosts.h):
# synthetic hosts stored with the hidden `tunebench import`: two boxes of three runs each (box-b
# 20 % slower) ranked apart with prices and in JSON; two instances of one VM type whose runs
# overlap, and two hosts of one run each, not told apart; one hostname on two hardware classes
# named by class; fewer than two hosts, an unknown host, an unknown suite and bad prices files
# are one message each and exit 2.
# cmake -DTUNEBENCH=<binary> -DWORK=<dir> [-DKEEP=ON] -P cli_hosts.cmake (KEEP: leave WORK, its
# records and hosts.sqlite, for docs/procurement.md's worked example)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(db ${WORK}/hosts.sqlite)
set(TB_CWD ${WORK})
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)

# One run record: the default-settings arm of GPT tiny inference, 3 processes of 4 samples: BASE
# (three samples) and PREFIX followed by the process index. N (two digits) numbers the run and
# its day, HOST is the host fingerprint's JSON.
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
  string(CONCAT record "{\"run\": {\"uuid\": \"000000${n}-0000-4000-8000-000000000000\", "
      "\"suite_name\": \"smoke\", \"suite_hash\": \"h\", \"suite\": {}, "
      "\"started_at\": \"2026-03-${n}T00:00:00Z\", \"host\": ${host}, \"software\": {}, "
      "\"host_state\": {}, \"host_quiet\": true}, "
      "\"status\": \"completed\", \"ended_at\": \"2026-03-${n}T00:10:00Z\", "
      "\"trials\": [${trials}]}")
  set(${out_var} "${record}" PARENT_SCOPE)
endfunction()
function(plain_host out_var name)
  set(${out_var} "{\"hostname\": \"${name}\", \"cores\": 4}" PARENT_SCOPE)
endfunction()
plain_host(box_a box-a)
plain_host(box_b box-b)
plain_host(vm_a vm-a)
plain_host(vm_b vm-b)
plain_host(solo_1 solo-1)
plain_host(solo_2 solo-2)
# Three runs on each box, box-b 20 % slower, each run a little off the others.
host_record(a1 01 "${box_a}" "0.01000, 0.01010, 0.00995" "0.0100")
host_record(a2 02 "${box_a}" "0.01020, 0.01030, 0.01015" "0.0102")
host_record(a3 03 "${box_a}" "0.00980, 0.00990, 0.00975" "0.0098")
host_record(b1 04 "${box_b}" "0.01200, 0.01212, 0.01194" "0.0120")
host_record(b2 05 "${box_b}" "0.01224, 0.01236, 0.01218" "0.0122")
host_record(b3 06 "${box_b}" "0.01176, 0.01188, 0.01170" "0.0118")
# Two instances of one VM type, two runs each on different days: the runs overlap.
host_record(va1 07 "${vm_a}" "0.01000, 0.01004, 0.00998" "0.0100")
host_record(va2 08 "${vm_a}" "0.01120, 0.01124, 0.01118" "0.0112")
host_record(vb1 09 "${vm_b}" "0.01060, 0.01064, 0.01058" "0.0106")
host_record(vb2 10 "${vm_b}" "0.01130, 0.01134, 0.01128" "0.0113")
# One run each: their spread from run to run is unknown.
host_record(s1 11 "${solo_1}" "0.01000, 0.01010, 0.00995" "0.0100")
host_record(s2 12 "${solo_2}" "0.00900, 0.00909, 0.00896" "0.0090")
# One hostname on two hardware classes (the class id: sha256 of the hardware facts' JSON).
set(small_hw "{\"cpu\":{\"model\":\"Type S\"}}")
set(large_hw "{\"cpu\":{\"model\":\"Type L\"}}")
string(SHA256 small_class "${small_hw}")
string(SHA256 large_class "${large_hw}")
string(SUBSTRING "${small_class}" 0 8 small8)
string(SUBSTRING "${large_class}" 0 8 large8)
host_record(n1 13 "{\"hostname\": \"node\", \"cores\": 4, \"hardware\": ${small_hw}}"
            "0.01200, 0.01210, 0.01195" "0.0120")
host_record(n2 14 "{\"hostname\": \"node\", \"cores\": 4, \"hardware\": ${large_hw}}"
            "0.01000, 0.01010, 0.00995" "0.0100")
file(WRITE ${WORK}/records.jsonl
     "${a1}\n${a2}\n${a3}\n${b1}\n${b2}\n${b3}\n${va1}\n${va2}\n${vb1}\n${vb2}\n${s1}\n${s2}\n${n1}\n${n2}\n")
run_tb(0 out import ${WORK}/records.jsonl --db ${db})

file(WRITE ${WORK}/prices.json "{\"box-a\": 3.0, \"box-b\": 1.0}")
run_tb(0 out compare --hosts box-a box-b --prices ${WORK}/prices.json --db ${db})
expect("ranking by items/s: 1 box-a" "${out}" "ranked apart")
expect("2 box-b" "${out}" "ranked apart")
expect("ranking by items per currency unit: 1 box-b" "${out}" "ranked by price")
expect("box-a / box-b 1.2" "${out}" "the ratio")
expect("distinguishable" "${out}" "told apart")
expect("3 runs, latest" "${out}" "every run of each box")
expect("not measured" "${out}" "energy")
run_tb(0 out compare --hosts box-a box-b --db ${db} --format json)
string(JSON faster GET "${out}" workloads 0 pairs 0 faster)
if(NOT faster STREQUAL "box-a")
  message(FATAL_ERROR "json: the faster host is ${faster}\n${out}")
endif()
string(JSON spread GET "${out}" workloads 0 pairs 0 spread)
string(JSON run_count GET "${out}" workloads 0 hosts 0 runs)
if(NOT spread STREQUAL "runs" OR NOT run_count EQUAL 3)
  message(FATAL_ERROR "json: spread ${spread} from ${run_count} runs\n${out}")
endif()
run_tb(0 out compare --hosts box-a box-b --db ${db} --format md)
expect("| host | items/s |" "${out}" "md")

# Two instances of one type are not a difference.
run_tb(0 out compare --hosts vm-a vm-b --db ${db})
expect("not distinguishable" "${out}" "one VM type")
expect("ranking by items/s: 1= " "${out}" "one VM type shares a rank")
# One run each: the spread from run to run is unknown, never distinguishable.
run_tb(0 out compare --hosts solo-1 solo-2 --db ${db})
expect("not distinguishable: run-to-run spread unknown (one run: run it again on another day or instance, or calibrate)" "${out}" "one run each")
expect("ranking by items/s: 1= solo-2, solo-1" "${out}" "one run each shares a rank")
run_tb(0 out compare --hosts solo-1 solo-2 --db ${db} --format json)
string(JSON spread GET "${out}" workloads 0 pairs 0 spread)
if(NOT spread STREQUAL "unknown")
  message(FATAL_ERROR "json: one run each, spread ${spread}\n${out}")
endif()
# One hostname on two classes: named by class, picked by HOSTNAME@PREFIX.
run_tb(0 out compare --hosts node@${small8} node@${large8} --db ${db})
expect("node (${large8}) / node (${small8}) 1.2" "${out}" "one hostname on two classes")
run_tb(0 out compare --hosts node box-a --db ${db})
expect("name another as node@${small8}" "${out}" "a bare hostname on two classes")

run_tb(2 out compare --hosts box-a --db ${db})
expect("--hosts needs at least 2 hosts to compare, got 1" "${out}" "one host")
run_tb(2 out compare --hosts box-a nosuch --db ${db})
expect("no finished run on host 'nosuch'" "${out}" "unknown host")
expect("hosts with runs: box-a, box-b, node, solo-1" "${out}" "unknown host")
run_tb(2 out compare --hosts box-a box-b --suite cpu-full --db ${db})
expect("host 'box-a' has no finished run of suite 'cpu-full'" "${out}" "unknown suite")
file(WRITE ${WORK}/bad.json "{\"box-a\": 0}")
run_tb(2 out compare --hosts box-a box-b --prices ${WORK}/bad.json --db ${db})
expect("the price of 'box-a' is 0" "${out}" "bad price")
expect("prices are positive numbers" "${out}" "bad price")
run_tb(2 out compare --hosts box-a box-b --prices ${WORK}/missing.json --db ${db})
expect("cannot read it" "${out}" "missing prices file")
if(NOT KEEP)
  file(REMOVE_RECURSE ${WORK})
endif()
