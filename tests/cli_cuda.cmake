# The CUDA suites on a host without a usable GPU: every experiment is listed as not applicable
# with the reason, and the run still completes (exit 0) and is stored with those reasons.
# Run by ctest: cmake -DTUNEBENCH=<binary> -DSOURCE=<source dir> -DWORK=<scratch dir> -P cli_cuda.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(db ${WORK}/results.sqlite)

execute_process(COMMAND ${TUNEBENCH} env OUTPUT_VARIABLE env RESULT_VARIABLE rc)
string(REGEX MATCH "\n  gpu +none" no_gpu "${env}")
if(NOT no_gpu)
  message(STATUS "this host has a GPU: the GPU-less behaviour is not what runs here")
  return()
endif()

# list: the missing GPU is said once; CUDA-only knobs have no CPU column, and no CUDA row repeats it.
execute_process(COMMAND ${TUNEBENCH} list --suites ${SOURCE}/suites OUTPUT_VARIABLE out RESULT_VARIABLE rc)
foreach(pattern "No CUDA experiment can run here: [^\n]+[.]\n" "\ntf32 +cuda +- +no +fp32 matmul"
        "\nno_grad +both +yes +no +grad-enabled")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "${pattern}")
    message(FATAL_ERROR "list: exit ${rc} or /${pattern}/ missing\n${out}")
  endif()
endforeach()
string(FIND "${out}" "\nSuites in" table_end)
string(SUBSTRING "${out}" 0 ${table_end} table)
string(FIND "${table}" "needs a CUDA device" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "list repeats the missing GPU on a knob's row\n${out}")
endif()

foreach(suite cuda-smoke cuda-nightly)
  execute_process(COMMAND ${TUNEBENCH} run --suite suites/${suite}.json --db ${db} --label ${suite}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err WORKING_DIRECTORY ${SOURCE})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${suite}: exit ${rc}, expected 0\n${out}\n${err}")
  endif()
  foreach(text "(0 trials, " "completed: 0 trials, 0 failed, 0 invalid"
          "not applicable: tf32.gpt-" "tf32: needs a CUDA device: ")
    string(FIND "${err}" "${text}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${suite}: output lacks '${text}'\n${err}")
    endif()
  endforeach()
endforeach()
# The stored run keeps the reasons: `show` lists them from the database.
execute_process(COMMAND ${TUNEBENCH} show latest --verbose --db ${db} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
string(FIND "${out}" "cuda_graphs.gpt-small-infer: cuda_graphs: needs a CUDA device" at)
if(NOT rc EQUAL 0 OR at EQUAL -1)
  message(FATAL_ERROR "show: exit ${rc} or the reason is missing\n${out}")
endif()

# ci/gpu-check.sh's canary is a request the worker reads: here it gets as far as the device.
execute_process(COMMAND ${TUNEBENCH} worker INPUT_FILE ${SOURCE}/ci/gpu-canary.json
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
string(FIND "${out}" "\"error\":\"worker: device cuda: " at)
if(at EQUAL -1 OR NOT out MATCHES "\"status\":\"failed\"")
  message(FATAL_ERROR "worker < ci/gpu-canary.json: exit ${rc}; expected a failure at the device\n${out}\n${err}")
endif()
