# Run records: export every run of a database, import it into another and export it again (the
# same runs, whole); a second import adds nothing; runs of a known hostname on other hardware are
# said to be another machine; a file from a newer tunebench, a malformed one and 'all' in another
# format are refused with nothing stored.
# Run by ctest: cmake -DTUNEBENCH=<binary> -DSOURCE=<source dir> -DWORK=<scratch dir> -P cli_records.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

function(run_cmd expected_rc out_var)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL expected_rc)
    message(FATAL_ERROR "${ARGN}: exit ${rc}, expected ${expected_rc}\n${out}\n${err}")
  endif()
  set(${out_var} "${out}${err}" PARENT_SCOPE)
endfunction()

function(expect text pattern what)
  if(NOT text MATCHES "${pattern}")
    message(FATAL_ERROR "${what}: /${pattern}/ missing\n${text}")
  endif()
endfunction()

run_cmd(0 made ${CMAKE_COMMAND} -E env TUNEBENCH_BINARY=${TUNEBENCH} ${SOURCE}/.venv/bin/python
        ${SOURCE}/bench/generate_history.py --out ${WORK}/a.sqlite --runs 3 --trials 8
        --samples 5 --hosts 1 --no-check)
run_cmd(0 out ${TUNEBENCH} export all --format records --db ${WORK}/a.sqlite -o ${WORK}/a.jsonl)
# Lines hold ';', which CMake lists split on: read them as text.
file(READ ${WORK}/a.jsonl a_text)
string(REGEX MATCHALL "\n" newlines "${a_text}")
list(LENGTH newlines n)
if(NOT n EQUAL 4)
  message(FATAL_ERROR "export all: ${n} lines, expected a header and 3 runs")
endif()
expect("${a_text}" "^\\{\"tunebench_records\":\\{[^\n]*\"runs\":3" "the records' header")

run_cmd(0 out ${TUNEBENCH} import ${WORK}/a.jsonl --db ${WORK}/b.sqlite)
expect("${out}" "3 run record\\(s\\): imported 3, 0 already here" "import")
run_cmd(0 out ${TUNEBENCH} export all --format records --db ${WORK}/b.sqlite -o ${WORK}/b.jsonl)
file(READ ${WORK}/b.jsonl b_text)
string(FIND "${a_text}" "\n" a_end)
string(FIND "${b_text}" "\n" b_end)
string(SUBSTRING "${a_text}" ${a_end} -1 a_runs)
string(SUBSTRING "${b_text}" ${b_end} -1 b_runs)
if(NOT a_runs STREQUAL b_runs)
  message(FATAL_ERROR "export → import → export changed the runs")
endif()
run_cmd(0 out ${TUNEBENCH} import ${WORK}/a.jsonl --db ${WORK}/b.sqlite)
expect("${out}" "imported 0, 3 already here" "a second import")

# The same hostname on recorded hardware, under new run ids: another machine, said.
run_cmd(0 out python3 -c "
import json, sys
lines = open(sys.argv[1]).read().splitlines()
with open(sys.argv[2], 'w') as out:
    for line in lines:
        j = json.loads(line)
        if 'run' in j:
            j['run']['uuid'] = 'f' + j['run']['uuid'][1:]
            for t in j['trials']:
                t['spec']['run_uuid'] = j['run']['uuid']
            j['run']['host']['hardware'] = {'cpu': {'vendor': 'AuthenticAMD', 'family': 25, 'model': 17,
                'stepping': 1, 'model_name': 'AMD EPYC', 'flags': ['avx2']}, 'cores': 2}
        out.write(json.dumps(j) + '\\n')
" ${WORK}/a.jsonl ${WORK}/moved.jsonl)
run_cmd(0 out ${TUNEBENCH} import ${WORK}/moved.jsonl --db ${WORK}/b.sqlite)
expect("${out}" "imported 3, 0 already here" "import of the moved host")
expect("${out}" "host 'nightly-epyc' has other hardware there than the runs of that name here \\(here: hardware not recorded; there: AMD EPYC \\(AuthenticAMD family 25 model 17 stepping 1\\), 2 cores, avx2\\): its runs are another machine" "the moved host")

# A fleet node built against another LibTorch: merging the nodes' files says so, naming both.
run_cmd(0 out python3 -c "
import json, sys
lines = open(sys.argv[1]).read().splitlines()
with open(sys.argv[2], 'w') as out:
    for line in lines:
        j = json.loads(line)
        if 'run' in j:
            j['run']['uuid'] = 'e' + j['run']['uuid'][1:]
            for t in j['trials']:
                t['spec']['run_uuid'] = j['run']['uuid']
            j['run']['host']['hostname'] = 'node-b'
            j['run']['software']['libtorch_build'] = 'LibTorch 2.5.1 (CPU only)'
        out.write(json.dumps(j) + '\\n')
" ${WORK}/a.jsonl ${WORK}/node-b.jsonl)
run_cmd(0 out ${TUNEBENCH} import ${WORK}/a.jsonl --db ${WORK}/node-a.sqlite)
run_cmd(0 out ${TUNEBENCH} import ${WORK}/node-b.jsonl --db ${WORK}/node-b.sqlite)
run_cmd(0 out ${TUNEBENCH} merge ${WORK}/node-a.sqlite ${WORK}/node-b.sqlite --db ${WORK}/fleet.sqlite)
expect("${out}" "warning: suite 'nightly': the hosts' latest runs merged here ran on 2 LibTorch builds \\(LibTorch 2.1.0 \\(CPU only\\) on nightly-epyc; LibTorch 2.5.1 \\(CPU only\\) on node-b\\)" "merge of nodes on two LibTorch builds")
# One host whose history spans a LibTorch upgrade (the synthetic history's software A/B): no warning.
run_cmd(0 out ${TUNEBENCH} merge ${WORK}/node-a.sqlite --db ${WORK}/fleet-a.sqlite)
if(out MATCHES "LibTorch builds")
  message(FATAL_ERROR "one LibTorch build warned about: ${out}")
endif()

# Refused, nothing stored: a newer tunebench's file, a malformed line, 'all' as json.
run_cmd(0 out python3 -c "
import json, sys
lines = open(sys.argv[1]).read().splitlines()
head = json.loads(lines[0])
head['tunebench_records']['schema_version'] = 99
open(sys.argv[2], 'w').write('\\n'.join([json.dumps(head)] + lines[1:]) + '\\n')
open(sys.argv[3], 'w').write('\\n'.join(lines[:2] + ['{\"run\": {}}']) + '\\n')
" ${WORK}/a.jsonl ${WORK}/newer.jsonl ${WORK}/bad.jsonl)
run_cmd(2 out ${TUNEBENCH} import ${WORK}/newer.jsonl --db ${WORK}/c.sqlite)
expect("${out}" "newer.jsonl: written by a newer tunebench \\(0.1.0 with records version 1, schema 99\\); this build reads records version 1 and schema [0-9]+ at most.*nothing was stored" "a newer file")
run_cmd(2 out ${TUNEBENCH} import ${WORK}/bad.jsonl --db ${WORK}/c.sqlite)
expect("${out}" "bad.jsonl: line 3: not a run record" "a malformed file")
if(EXISTS ${WORK}/c.sqlite)
  message(FATAL_ERROR "a refused import left ${WORK}/c.sqlite behind")
endif()
# Samples no worker measures: refused with the file, line, run and trial, nothing stored.
run_cmd(0 out python3 -c "
import json, sys
lines = open(sys.argv[1]).read().splitlines()
for path, samples in ((sys.argv[2], lambda n: [1e308] * n),
                      (sys.argv[3], lambda n: [1e300, -1.0, 0.0] + [0.01] * (n - 3))):
    run = json.loads(lines[1])
    trial = next(t for t in run['trials'] if t['result']['status'] == 'ok')
    trial['result']['sample_seconds'] = samples(len(trial['result']['sample_seconds']))
    trial['result']['sample_cpu_seconds'] = []
    open(path, 'w').write('\\n'.join([lines[0], json.dumps(run)]) + '\\n')
    print(run['run']['uuid'], trial['spec']['sequence'] + 1, trial['spec']['experiment'],
          trial['spec']['arm'])
" ${WORK}/a.jsonl ${WORK}/huge.jsonl ${WORK}/negative.jsonl)
string(REGEX MATCHALL "[^\n]+" named "${out}")
list(GET named 0 huge_trial)
string(REPLACE " " ";" huge_trial "${huge_trial}")
list(GET huge_trial 0 uuid)
list(GET huge_trial 1 sequence)
list(GET huge_trial 2 experiment)
list(GET huge_trial 3 arm)
run_cmd(2 out ${TUNEBENCH} import ${WORK}/huge.jsonl --db ${WORK}/c.sqlite)
expect("${out}" "huge.jsonl: line 2: run ${uuid}, trial ${sequence} \\(${experiment} \\[${arm}\\]\\): stored as ok, but its sample 1 is 1e\\+308 s per iteration: a sample takes a finite time above 0 and at most 60 s \\(its timeout_s 600 over 10 iteration\\(s\\)\\).*nothing was stored" "samples of 1e308 s")
run_cmd(2 out ${TUNEBENCH} import ${WORK}/negative.jsonl --db ${WORK}/c.sqlite)
expect("${out}" "negative.jsonl: line 2: run ${uuid}, trial ${sequence} .*its sample 1 is 1e\\+300 s per iteration" "samples of 1e300 s, -1 s and 0 s")
run_cmd(2 out ${TUNEBENCH} export all --db ${WORK}/a.sqlite)
expect("${out}" "'all' exports with --format records only" "export all as json")

# The published dataset (results/published/): every file imports whole into one database, with
# its hardware recorded, shown by `show`.
file(GLOB published ${SOURCE}/results/published/*.jsonl)
list(LENGTH published n_published)
if(n_published EQUAL 0)
  message(FATAL_ERROR "results/published/ holds no run records")
endif()
foreach(f ${published})
  run_cmd(0 out ${TUNEBENCH} import ${f} --db ${WORK}/published.sqlite)
  expect("${out}" "run record\\(s\\): imported [1-9]" "import ${f}")
  run_cmd(0 out ${TUNEBENCH} show latest --verbose --db ${WORK}/published.sqlite)
  expect("${out}" "\nhardware [^\n]+ family [0-9]+ model [0-9]+ stepping [0-9]+" "show of ${f}")
endforeach()
# A fresh VM of a published file's type, whose MemTotal is 12 KiB less (kernel reservations move
# between boots): the same hardware class and machine, so importing its run says nothing of
# other hardware.
list(GET published 0 first_published)
run_cmd(0 out python3 -c "
import json, sys
with open(sys.argv[2], 'w') as out:
    for line in open(sys.argv[1]):
        j = json.loads(line)
        if 'run' in j:
            j['run']['uuid'] = 'feedf00d' + j['run']['uuid'][8:]
            for t in j['trials']:
                t['spec']['run_uuid'] = j['run']['uuid']
            for h in (j['run']['host'], j['run']['host']['hardware']):
                h['memory_bytes'] -= 12 * 1024
        out.write(json.dumps(j) + '\\n')
" ${first_published} ${WORK}/fresh-vm.jsonl)
run_cmd(0 out ${TUNEBENCH} import ${WORK}/fresh-vm.jsonl --db ${WORK}/published.sqlite)
expect("${out}" "imported 1, 0 already here" "the fresh VM's run")
if(out MATCHES "other hardware")
  message(FATAL_ERROR "12 KiB less memory called other hardware: ${out}")
endif()
