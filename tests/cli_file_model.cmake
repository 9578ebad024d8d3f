# A model from a file (models/torchscript.h) through `run --model`: the plan asked of the model
# (a 2-D convolution found, built-in-only knobs not applicable with the reason), a short run of
# two knobs end to end, the example models of the quick start, and each bad input with its one message, exit 2 and nothing written.
# cmake -DTUNEBENCH=<binary> -DSOURCE=<source dir> -DWORK=<scratch dir> -P cli_file_model.cmake
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(TB_CWD ${SOURCE})
run_cmd(0 made ${SOURCE} ${SOURCE}/.venv/bin/python ${SOURCE}/tests/models/make_tiny.py ${WORK})
set(db ${WORK}/model.sqlite)

run_tb(0 out run --model ${WORK}/conv.pt --input 3x8x8:float32 --batch 4 --dry-run --db ${db})
expect("parameters (trainable), output a tensor" "${out}" "the model's offer")
expect("2-D convolution: yes" "${out}" "the model's offer")
expect("run             channels_last.torchscript-file-infer" "${out}" "the plan")
expect("not applicable  vocab_pad.torchscript-file-infer: vocab_pad: switches the built-in"
       "${out}" "the plan")
expect("run             aa.no_grad.torchscript-file-infer" "${out}" "the controls")
expect("run             slow3.no_grad.torchscript-file-infer" "${out}" "the controls")
# In the order the run takes them: the controls before every experiment, said to be controls.
expect("aa.no_grad.torchscript-file-infer (paired): a control: runs first, sampling on within its own budget_s"
       "${out}" "the controls' place")
string(FIND "${out}" "run             slow3.no_grad" at_control)
string(FIND "${out}" "run             channels_last." at_experiment)
if(NOT at_control LESS at_experiment)
  message(FATAL_ERROR "--dry-run lists an experiment before the controls the run takes first:\n${out}")
endif()
if(EXISTS ${db})
  message(FATAL_ERROR "--dry-run wrote the database")
endif()

# onednn too: a traced graph calls aten::_convolution directly, which its evidence must count
# (counting aten::convolution alone made every onednn trial invalid on LibTorch 1.13).
run_tb(0 out run --model ${WORK}/conv.pt --input 3x8x8:float32 --batch 4 --db ${db}
       --filter "^(no_grad|channels_last|onednn)[.]")
expect("completed: 24 trials, 0 failed, 0 invalid" "${out}" "the run")
expect_sql(${db} "SELECT COUNT(*) FROM trials WHERE experiment LIKE 'onednn.%' AND arm = 'on' AND json_extract(evidence, '$.conv_calls') >= json_extract(evidence, '$.onednn_conv_calls') AND json_extract(evidence, '$.onednn_conv_calls') > 0"
           "4" "every onednn ON trial counted its convolutions and ran some in oneDNN")
expect_model_hash(${db} ${WORK}/conv.pt)

# Bad input: one message each, exit 2, nothing written.
file(WRITE ${WORK}/not_a_model.pt "hello")
# A torch.export archive by a name that is not .pt2 (which the Python worker runs, tests/
# cli_export_model.cmake) is named as what it is, with what to give instead.
run_cmd(0 made ${SOURCE} ${SOURCE}/.venv/bin/python -c "
import sys, torch
class M(torch.nn.Module):
    def forward(self, x):
        return x.relu()
torch.export.save(torch.export.export(M(), (torch.ones(2, 3),)), sys.argv[1])
" ${WORK}/exported.pt)
run_tb(2 out run --model ${WORK}/exported.pt --input 3:float32 --db ${WORK}/bad.sqlite)
expect("${WORK}/exported.pt is a torch.export archive (torch.export.save or an AOTInductor package), not TorchScript"
       "${out}" "a torch.export archive named .pt given as --model")
expect("by a name ending in .pt2 (the pypi build's Python worker runs it)" "${out}" "what to give instead")
foreach(case
    "does not exist or is not a file|${WORK}/missing.pt|3x8x8:float32|infer"
    "is not a TorchScript archive that LibTorch|${WORK}/not_a_model.pt|3x8x8:float32|infer"
    "its forward rejected inputs of shapes [4, 5] float (batch 4|${WORK}/conv.pt|5:float32|infer"
    "its forward returned a GenericDict|${WORK}/dict.pt|3:float32|infer"
    "has no parameter that requires a gradient|${WORK}/frozen.pt|3x8x8:float32|train"
    "is not a size|${WORK}/conv.pt|3xx8:float32|infer"
    "it needs \"high\"|${WORK}/conv.pt|8:int64|infer")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 message)
  list(GET parts 1 path)
  list(GET parts 2 input)
  list(GET parts 3 mode)
  run_tb(2 out run --model ${path} --input ${input} --mode ${mode} --batch 4
         --db ${WORK}/bad.sqlite)
  expect("${message}" "${out}" "bad input ${path} ${input}")
  expect("Nothing was run or written." "${out}" "bad input ${path} ${input}")
endforeach()
if(EXISTS ${WORK}/bad.sqlite)
  message(FATAL_ERROR "a bad model input wrote a database")
endif()

# The quick start's example models (made by ci/setup.sh): each loads in this build and runs.
foreach(example "convnet.pt|3x64x64:float32|no_grad|channels_last"
                "transformer.pt|64:int64:1000|no_grad|amp")
  string(REPLACE "|" ";" parts "${example}")
  list(GET parts 0 file)
  list(GET parts 1 input)
  list(GET parts 2 first)
  list(GET parts 3 second)
  set(path ${SOURCE}/build/examples/${file})
  if(NOT EXISTS ${path})
    message(FATAL_ERROR "${path} is missing: ci/setup.sh makes the example models")
  endif()
  run_tb(0 out run --model ${path} --input ${input} --batch 2 --db ${WORK}/examples.sqlite
         --filter "^(${first}|${second})[.]")
  expect("completed: 16 trials, 0 failed, 0 invalid" "${out}" "the example ${file}")
endforeach()
file(REMOVE_RECURSE ${WORK})
