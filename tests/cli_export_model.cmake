# A torch.export archive (.pt2, torch.export.save) through `run --model` and `tune`, run by the
# Python worker (models/python/export_archive.py), the archives made at test time with the build's
# torch (tests/models/make_exported.py): the plan asked of the model (its graph's convolution
# found, the knobs the Python worker runs, why not the rest), a short paired run whose knobs' evidence
# shows what they changed, a tune end to end, and each bad input with its one message, exit 2 and
# nothing written. On a build without a Python torch (debian) the one message that says so.
# Two parts, so that ctest runs them side by side: PART "run" (plan, run, bad input) and "tune".
# cmake -DTUNEBENCH=<binary> -DSOURCE=<source dir> -DWORK=<scratch dir> -DPART=run|tune
#       -DTORCH_PYTHON=<the build's Python torch, or empty> -P cli_export_model.cmake
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(TB_CWD ${SOURCE})
set(db ${WORK}/export.sqlite)

if(TORCH_PYTHON STREQUAL "" AND PART STREQUAL "tune")
  message("SKIPPED: no Python torch beside this build's LibTorch (the part \"run\" says so)")
  return()
elseif(TORCH_PYTHON STREQUAL "")
  file(WRITE ${WORK}/model.pt2 "not read: this build has no Python worker")
  run_tb(2 out run --model ${WORK}/model.pt2 --dry-run --db ${db})
  expect("a torch.export archive runs in the Python worker, which needs the Python torch" "${out}"
         "the debian build")
  expect("the pypi build has" "${out}" "what to use instead")
  expect_absent(${db} "a refused torch.export archive")
  return()
endif()
run_cmd(0 made ${SOURCE} ${TORCH_PYTHON} ${SOURCE}/tests/models/make_exported.py ${WORK})

if(PART STREQUAL "tune")
  # tune end to end in training (in inference its screen would compile the graph cold in four
  # workers, minutes here), in a short budget: every stage's run stored, the recommendation
  # printed and stored once, every trial the Python worker's and ok: the exported graph trains.
  # Three knobs (--knobs), whose evidence is checked below: each Python worker pays its start-up,
  # and the whole screen of every knob took 9 minutes of CI.
  run_tb(0 out tune --model ${WORK}/tiny.pt2 --mode train --batch 4 --budget 20
         --knobs channels_last,zero_grad_none,fused_adamw --db ${db})
  expect("tune: 1/3 screening the knobs asked for (channels_last, zero_grad_none, fused_adamw) on ${WORK}/tiny.pt2"
         "${out}" "the first stage")
  expect("screened only the knobs asked for (--knobs channels_last,zero_grad_none,fused_adamw)"
         "${out}" "the recommendation says what it chose among")
  expect("recommended: " "${out}" "the recommendation")
  expect("stored as tuning " "${out}" "the recommendation is stored")
  expect_sql(${db} "SELECT COUNT(*) FROM tunings" 1 "the recommendation is stored once")
  sql(${db} "SELECT COUNT(*) FROM trials t JOIN runs r ON r.uuid = t.run_uuid
             WHERE r.label LIKE 'tune % screen'" screened)
  expect_sql(${db} "SELECT COUNT(*) FROM trials t JOIN runs r ON r.uuid = t.run_uuid
                    WHERE r.label LIKE 'tune % screen' AND t.status = 'ok'
                    AND json_extract(t.evidence, '$.frontend') = 'python'"
             ${screened} "every screened trial ok, from the Python worker")
  # The knobs asked for and the two controls, nothing else.
  expect_sql(${db} "SELECT group_concat(knob, ',') FROM (SELECT DISTINCT substr(t.experiment, 1,
                    instr(t.experiment, '.') - 1) AS knob FROM trials t JOIN runs r
                    ON r.uuid = t.run_uuid WHERE r.label LIKE 'tune % screen' ORDER BY knob)"
             "aa,channels_last,fused_adamw,slow3,zero_grad_none" "the screen's experiments")
  # What a knob claims, seen in its arms' evidence: channels_last made the input and the graph's
  # convolution weight (found in the graph: an exported module has no Conv2d) channels-last.
  expect_arms(${db} channels_last "json_extract(evidence, '$.input_channels_last') ||
                                   json_extract(evidence, '$.weight_channels_last')"
              "off=00,on=11" "channels_last's arms' input and convolution weight layout")
  expect_arms(${db} zero_grad_none "json_extract(evidence, '$.grads_defined_after_zero')"
              "off=1,on=0" "zero_grad_none's arms' gradients after zeroing")
  expect_model_hash(${db} ${WORK}/tiny.pt2)
  file(REMOVE_RECURSE ${WORK})
  return()
endif()

run_tb(0 out run --model ${WORK}/tiny.pt2 --batch 4 --dry-run --db ${db})
expect("model ${WORK}/tiny.pt2 (torch.export archive, in the Python worker): 260 parameters (trainable), output a tensor"
       "${out}" "the model's offer")
# The convolution is found in the graph (aten.conv2d): an exported module has no Conv2d.
expect("2-D convolution: yes; its graph keeps the mode it was exported in" "${out}"
       "the graph's convolution and what the plan says of an exported module")
expect("run             channels_last.python-export-infer (paired)" "${out}" "the plan")
expect("run             compile.python-export-infer" "${out}" "compile on the exported module")
expect("run             omp_threads.python-export-infer (paired_processes)" "${out}" "a resident pair")
expect("not applicable  onednn.python-export-infer: onednn: the Python worker (models/python/worker.py) does not run it on a model from a Python file or a torch.export archive"
       "${out}" "what the Python worker does not run, with why")
# An archive without example inputs takes them from --input (drawn as a TorchScript archive's);
# in training its graph's backward runs (inspect's training step), so its training knobs run.
run_tb(0 out run --model ${WORK}/noinputs.pt2 --input 3x8x8:float32 --mode train --batch 4
       --dry-run --db ${db})
expect("run             zero_grad_none.python-export-train (paired)" "${out}" "training")
expect("run             channels_last.python-export-train (paired)" "${out}" "--input for a .pt2")
expect_absent(${db} "--dry-run")

# Bad input: one message each, exit 2, nothing written.
foreach(case
    "is not a torch.export archive: it is not a zip file|random.pt2|-"
    "is a zip file but not a torch.export archive: it lacks archive_format and models/model.json (it holds weights/readme.txt)|plain.pt2|-"
    "is an AOTInductor package (aoti_compile_and_package: compiled code, no graph), not a torch.export archive|aoti.pt2|-"
    "is a TorchScript archive (torch.jit.save), not a torch.export archive: name it .pt|script.pt2|-"
    "was saved by torch 9.0.0 in a newer format than this build's torch|newer.pt2|-"
    "was exported with its batch fixed at 2 (x [2, 3, 8, 8]), not 4: give --batch 2, or export it with the batch dimension dynamic (batch = torch.export.Dim(\"batch\"); torch.export.export(model, inputs, dynamic_shapes=({0: batch},)))|static.pt2|-"
    "holds no example inputs (its ExportedProgram was saved without them): give its forward's inputs with --input|noinputs.pt2|-"
    "its forward rejected inputs of shapes [4, 5] float32 (batch 4: as --input gives them; its graph takes x [s|tiny.pt2|--input;5:float32"
    "the backward of its loss failed (through the exported graph, as it was exported): RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation|bn.pt2|--mode;train"
    "does not exist or is not a file|missing.pt2|-"
    "--class names the class in a Python file (.py); a torch.export archive is one module|tiny.pt2|--class;Tiny")
  # MESSAGE|FILE|ARGUMENTS (";" between them, "-" for none): the message may hold ";" and "[".
  string(REGEX MATCH "^(.*)\\|([^|]*)\\|([^|]*)$" matched "${case}")
  set(message "${CMAKE_MATCH_1}")
  set(file ${CMAKE_MATCH_2})
  set(extra ${CMAKE_MATCH_3})
  list(REMOVE_ITEM extra "-")
  run_tb(2 out run --model ${WORK}/${file} ${extra} --batch 4 --db ${WORK}/bad.sqlite)
  expect("${message}" "${out}" "bad input ${file} ${extra}")
  expect("Nothing was run or written." "${out}" "bad input ${file} ${extra}")
endforeach()
expect_absent(${WORK}/bad.sqlite "a bad torch.export archive")
file(REMOVE_RECURSE ${WORK})
