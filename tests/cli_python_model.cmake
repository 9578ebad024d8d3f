# A model from a Python file (models/python/user_model.py) through `run --model` and `tune`, run
# by the Python worker: the plan asked of the model (what the Python worker runs on it, and why
# not the rest), a short run whose paired and resident trials pass their evidence checks, a tune
# end to end, and each bad input with its one message, exit 2 and nothing written. On a build
# without a Python torch (debian) the one message that says so.
# Two parts, so that ctest runs them side by side: PART "run" (plan, runs, bad input) and "tune".
# cmake -DTUNEBENCH=<binary> -DSOURCE=<source dir> -DWORK=<scratch dir> -DPART=run|tune
#       -DTORCH_PYTHON=<the build's Python torch, or empty> -P cli_python_model.cmake
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(TB_CWD ${SOURCE})
set(db ${WORK}/py.sqlite)
file(WRITE ${WORK}/tiny.py "import torch

class TinyConv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean((2, 3)))

    def get_example_inputs(self):
        return (torch.randn(2, 3, 8, 8),)

class Frozen(TinyConv):
    def __init__(self):
        super().__init__()
        for p in self.parameters():
            p.requires_grad_(False)

class WrongInputs(TinyConv):
    def get_example_inputs(self):
        return (torch.randn(2, 5),)

def make_dict_model():
    class D(torch.nn.Module):
        def forward(self, x):
            return {'y': x}
        def get_example_inputs(self):
            return torch.randn(2, 3)
    return D()
")

if(TORCH_PYTHON STREQUAL "" AND PART STREQUAL "tune")
  message("SKIPPED: no Python torch beside this build's LibTorch (the part \"run\" says so)")
  return()
elseif(TORCH_PYTHON STREQUAL "")
  # The debian build: no Python torch beside its LibTorch.
  run_tb(2 out run --model ${WORK}/tiny.py --dry-run --db ${db})
  expect("needs the Python torch this build's LibTorch comes from" "${out}" "the debian build")
  expect("the pypi build has" "${out}" "what to use instead")
  if(EXISTS ${db})
    message(FATAL_ERROR "a refused Python model wrote the database")
  endif()
  return()
endif()

if(PART STREQUAL "tune")
  # tune end to end in training (cli.tune runs it in inference on a TorchScript file), in a short
  # budget: every stage's run stored, the recommendation stored once.
  # The two training knobs checked below (--knobs): each Python worker pays its start-up, and
  # the whole screen of every knob took 8 minutes of CI (cli.export_model_tune screens a third).
  run_tb(0 out tune --model ${WORK}/tiny.py --class TinyConv --mode train --batch 4 --budget 30
         --knobs zero_grad_none,fused_adamw --db ${db})
  expect("tune: 1/3 screening the knobs asked for (zero_grad_none, fused_adamw) on ${WORK}/tiny.py"
         "${out}" "the first stage")
  expect("stored as tuning " "${out}" "the recommendation is stored")
  sql(${db} "SELECT COUNT(*) FROM tunings WHERE json_extract(recommendation, '$.mode') = 'train'"
      tunings)
  sql(${db} "SELECT COUNT(*) FROM runs r WHERE r.label LIKE 'tune % screen' AND EXISTS
             (SELECT 1 FROM trials t WHERE t.run_uuid = r.uuid AND t.status = 'ok'
              AND t.experiment = 'zero_grad_none.python-file-train')" screens)
  if(NOT tunings EQUAL 1 OR NOT screens EQUAL 1)
    message(FATAL_ERROR "a training tune: tunings ${tunings}, screening runs ${screens}: each 1")
  endif()
  # The training knobs act on the user's module: every trial of theirs ok (its evidence checked
  # against its settings: gradients after zeroing, the optimizer), from the Python worker.
  sql(${db} "SELECT COUNT(*), SUM(status = 'ok' AND json_extract(evidence, '$.frontend') = 'python')
             FROM trials WHERE experiment IN ('zero_grad_none.python-file-train',
                                              'fused_adamw.python-file-train')" training)
  string(REPLACE "|" ";" counts "${training}")
  list(GET counts 0 all_training)
  list(GET counts 1 ok_training)
  if(all_training LESS 8 OR NOT ok_training EQUAL all_training)
    message(FATAL_ERROR "training knobs' trials (all|ok from the Python worker): ${training}")
  endif()
  file(REMOVE_RECURSE ${WORK})
  return()
endif()

run_tb(0 out run --model ${WORK}/tiny.py --class TinyConv --batch 4 --dry-run --db ${db})
expect("(class TinyConv, in the Python worker): 260 parameters (trainable), output a tensor"
       "${out}" "the model's offer")
expect("2-D convolution: yes" "${out}" "the model's offer")
expect("run             channels_last.python-file-infer (paired)" "${out}" "the plan")
expect("run             compile.python-file-infer" "${out}" "compile on a user's model")
expect("not applicable  onednn.python-file-infer: onednn: the Python worker (models/python/worker.py) does not run it"
       "${out}" "what the Python worker does not run, with why")
expect("run             omp_threads.python-file-infer (paired_processes)" "${out}" "a resident pair")

# Paired in one process (no_grad, channels_last) and resident pairs (omp_threads, numa_bind under
# numactl where it is installed: the policy read back in Python): every trial
# ok, the arms' evidence read back by the Python worker.
run_tb(0 out run --model ${WORK}/tiny.py --class TinyConv --batch 4 --db ${db}
       --filter "^(no_grad|channels_last|omp_threads|numa_bind)[.]")
expect("0 failed, 0 invalid" "${out}" "the run")
sql(${db} "SELECT COUNT(*) FROM trials WHERE status = 'ok' AND paired_blocks > 0
           AND json_extract(evidence, '$.frontend') = 'python'" paired_ok)
sql(${db} "SELECT COUNT(*) FROM trials" all)
if(NOT paired_ok EQUAL all OR all LESS 12)
  message(FATAL_ERROR "expected every trial paired, ok and the Python worker's: ${paired_ok} of ${all}")
endif()
sql(${db} "SELECT COUNT(DISTINCT json_extract(evidence, '$.paired.processes')) FROM trials" kinds)
if(NOT kinds EQUAL 2)
  message(FATAL_ERROR "expected pairs in one process and resident pairs, got ${kinds} kinds")
endif()
# no_grad's ON arm ran without grad mode, its OFF arm with it (the knob changed what it claims).
sql(${db} "SELECT group_concat(arm || '=' || json_extract(evidence, '$.grad_mode_in_step'), ',')
           FROM (SELECT arm, evidence FROM trials WHERE experiment LIKE 'no_grad.%'
                 GROUP BY arm ORDER BY arm)" grad)
if(NOT grad STREQUAL "off=1,on=0")
  message(FATAL_ERROR "no_grad's arms ran with grad mode ${grad}")
endif()
expect_model_hash(${db} ${WORK}/tiny.py)

# A model that never returns: the inspect has the experiment's deadline (timeout_s, 20 s here),
# then its process group is killed and the message names the file and the step; no temporary
# file is left in TMPDIR, neither then nor when tunebench itself is killed during the inspect.
# It never returns without spinning (a busy loop is the same to the deadline, but would hold a
# core for 20 s and leave a paired test running beside this one with every pair contaminated).
file(WRITE ${WORK}/hang.py "import os, time, torch\nclass Hang(torch.nn.Module):\n    def forward(self, x):\n        open('${WORK}/hang.pid', 'w').write(str(os.getpid()))\n        while True:\n            time.sleep(1)\n    def get_example_inputs(self):\n        return torch.ones(1, 3)\n")
file(WRITE ${WORK}/hang.json "{\"name\": \"hang\", \"experiments\": [{\"knob\": \"no_grad\", \"model\": \"python\", \"preset\": \"file\", \"mode\": \"infer\", \"batch\": 2, \"timeout_s\": 20, \"options\": {\"path\": \"${WORK}/hang.py\"}}]}")
file(MAKE_DIRECTORY ${WORK}/tmp)
file(REMOVE ${WORK}/hang.pid)
string(TIMESTAMP t0 "%s")
execute_process(COMMAND ${CMAKE_COMMAND} -E env TMPDIR=${WORK}/tmp
                        ${TUNEBENCH} run --suite ${WORK}/hang.json --dry-run --db ${WORK}/bad.sqlite
                WORKING_DIRECTORY ${SOURCE} TIMEOUT 120
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(TIMESTAMP t1 "%s")
math(EXPR took "${t1} - ${t0}")
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "a model whose forward never returns: exit '${rc}' after ${took} s, expected 2\n${out}${err}")
endif()
expect("${WORK}/hang.py: its forward on get_example_inputs()'s inputs did not return within 20 s"
       "${err}" "the inspect's deadline")
expect("process group was killed" "${err}" "the inspect's deadline")
file(GLOB left ${WORK}/tmp/tunebench-inspect-*)
if(left)
  message(FATAL_ERROR "the inspect left temporary files: ${left}")
endif()
# kill -9 of tunebench once the forward runs: its Python worker dies with it (parent-death
# signal), nothing is left in TMPDIR.
file(REMOVE ${WORK}/hang.pid)
execute_process(COMMAND bash -c "
  TMPDIR=${WORK}/tmp '${TUNEBENCH}' run --suite ${WORK}/hang.json --dry-run --db ${WORK}/bad.sqlite \
    >/dev/null 2>&1 & tb=$!
  for i in $(seq 600); do [ -s ${WORK}/hang.pid ] && break; sleep 0.1; done
  kill -9 $tb; wait $tb 2>/dev/null; sleep 1
  py=$(cat ${WORK}/hang.pid 2>/dev/null) || { echo 'the forward never started'; exit 1; }
  # Dead, or a zombie until whoever inherited it reaps it.
  state=$(cut -d' ' -f3 /proc/$py/stat 2>/dev/null)
  if [ -n \"$state\" ] && [ \"$state\" != Z ]; then kill -9 $py; echo \"its Python worker $py still runs ($state)\"; exit 1; fi
  left=$(ls ${WORK}/tmp | grep tunebench-inspect-) && { echo \"left in TMPDIR: $left\"; exit 1; }
  exit 0"
  WORKING_DIRECTORY ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tunebench killed during the inspect: ${out}${err}")
endif()

# Bad input: one message each, exit 2, nothing written.
file(WRITE ${WORK}/broken.py "import torch\nx = 1 +\n")
file(WRITE ${WORK}/raises.py "import torch\nraise RuntimeError('no GPU here')\n")
file(WRITE ${WORK}/two.py "import torch\nclass A(torch.nn.Module):\n    def get_example_inputs(self):\n        return torch.ones(1)\nclass B(A):\n    pass\n")
foreach(case
    "does not exist or is not a file|${WORK}/missing.py|-|infer"
    "failed to import (line 2): SyntaxError|${WORK}/broken.py|-|infer"
    "failed to import (line 2): RuntimeError: no GPU here|${WORK}/raises.py|-|infer"
    "has no class or function Nope|${WORK}/tiny.py|Nope|infer"
    "defines 2 torch.nn.Module classes with get_example_inputs() (A, B): name one with --class|${WORK}/two.py|-|infer"
    "its forward rejected inputs of shapes [4, 5] float32 (batch 4|${WORK}/tiny.py|WrongInputs|infer"
    "its forward returned dict: tunebench needs a tensor or a tuple of tensors|${WORK}/tiny.py|make_dict_model|infer"
    "Frozen has no parameter that requires a gradient|${WORK}/tiny.py|Frozen|train")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 message)
  list(GET parts 1 path)
  list(GET parts 2 class)
  list(GET parts 3 mode)
  set(class_args)
  if(NOT class STREQUAL "-")
    set(class_args --class ${class})
  endif()
  run_tb(2 out run --model ${path} ${class_args} --mode ${mode} --batch 4 --db ${WORK}/bad.sqlite)
  expect("${message}" "${out}" "bad input ${path} ${class}")
endforeach()
run_tb(2 out run --model ${WORK}/tiny.py --input 3:float32 --db ${WORK}/bad.sqlite)
expect("gives its own inputs (get_example_inputs())" "${out}" "--input with a Python model")
if(EXISTS ${WORK}/bad.sqlite)
  message(FATAL_ERROR "a bad Python model wrote a database")
endif()
file(REMOVE_RECURSE ${WORK})
