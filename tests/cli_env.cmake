# tunebench env on this machine: the identity from the hardware (the CPU's family, model and
# stepping, its kernel flags, the class and machine ids) and LibTorch's configuration one value
# per key, in the text and in --json.
# Run by ctest: cmake -DTUNEBENCH=<binary> -P cli_env.cmake
execute_process(COMMAND ${TUNEBENCH} env OUTPUT_VARIABLE out RESULT_VARIABLE rc)
file(READ /proc/cpuinfo cpuinfo)
string(REGEX MATCH "\ncpu family[\t ]*: ([0-9]+)" _ "${cpuinfo}")
set(family ${CMAKE_MATCH_1})
foreach(pattern "^identity:\n  hardware +[^\n]+ family ${family} model [0-9]+ stepping [0-9]+\\), [0-9]+ cores"
        "\n  hardware_class +[0-9a-f]+\n" "\n  machine +[0-9a-f]+\n" "\n    cpu:\n"
        "\n      family +${family}\n" "\n      flags +[^\n]*avx" "\n  kernel +[^\n]+\n"
        "\n  libtorch_config:\n" "\n    BLAS_INFO +[a-z]+\n" "\n    USE_OPENMP +ON\n")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "${pattern}")
    message(FATAL_ERROR "env: exit ${rc} or /${pattern}/ missing\n${out}")
  endif()
endforeach()
execute_process(COMMAND ${TUNEBENCH} env --json OUTPUT_VARIABLE json RESULT_VARIABLE rc)
string(JSON config GET "${json}" software libtorch_config)
string(JSON keys LENGTH "${config}")
math(EXPR last "${keys} - 1")
foreach(i RANGE ${last})
  string(JSON key MEMBER "${config}" ${i})
  string(JSON value GET "${config}" "${key}")
  # One value per key: none holds the settings line's other entries.
  if(value MATCHES "USE_[A-Z]+=")
    message(FATAL_ERROR "env --json: libtorch_config.${key} holds other keys: ${value}")
  endif()
endforeach()
string(JSON class GET "${json}" identity hardware_class)
string(LENGTH "${class}" length)
if(NOT length EQUAL 64)
  message(FATAL_ERROR "env --json: identity.hardware_class is not a SHA-256: '${class}'")
endif()
