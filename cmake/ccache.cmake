# Compiles through ccache when it is installed, with its cache outside the build tree, so that a
# fresh clone (CI checks out a new one every time) reuses what an earlier clone compiled: each
# LibTorch build costs ~5 minutes of compiling on 2 cores, nearly all of it the same translation
# units as last time. ccache keys every object by the compiler, its flags and the preprocessed
# source, so a changed file, flag or header (the precompiled ones included) compiles afresh.
#
#   -DTUNEBENCH_CCACHE=OFF        compile without it
#   -DTUNEBENCH_CCACHE_DIR=DIR    where the cache lives (default $TUNEBENCH_CACHE/ccache, i.e.
#                                 /var/cache/tunebench/ccache, beside ci/setup.sh's Python
#                                 environment), used only if it can be written
#
# The settings travel in the launcher, not the environment, so a later `cmake --build` by hand
# uses the same cache: base_dir makes paths inside the source tree relative (clones live in
# different directories); the sloppiness is what ccache needs to cache precompiled headers (the
# build uses them) and to accept headers a fresh checkout has just written.
option(TUNEBENCH_CCACHE "Compile through ccache when it is installed" ON)
if(DEFINED ENV{TUNEBENCH_CACHE})
  set(_tunebench_cache_root "$ENV{TUNEBENCH_CACHE}")
else()
  set(_tunebench_cache_root "/var/cache/tunebench")
endif()
set(TUNEBENCH_CCACHE_DIR "${_tunebench_cache_root}/ccache" CACHE PATH "ccache's cache directory")

function(tunebench_use_ccache source_root)
  if(NOT TUNEBENCH_CCACHE)
    message(STATUS "tunebench: ccache off (TUNEBENCH_CCACHE=OFF)")
    return()
  endif()
  find_program(TUNEBENCH_CCACHE_PROGRAM ccache)
  if(NOT TUNEBENCH_CCACHE_PROGRAM)
    message(STATUS "tunebench: ccache not found; compiling without a cache (ci/setup.sh installs it)")
    return()
  endif()
  file(MAKE_DIRECTORY "${TUNEBENCH_CCACHE_DIR}")
  set(probe "${TUNEBENCH_CCACHE_DIR}/.tunebench-write-probe")
  file(WRITE "${probe}" "")
  if(NOT EXISTS "${probe}")
    message(STATUS "tunebench: ${TUNEBENCH_CCACHE_DIR} is not writable; compiling without ccache")
    return()
  endif()
  file(REMOVE "${probe}")
  set(launcher
      "${CMAKE_COMMAND}" -E env
      "CCACHE_DIR=${TUNEBENCH_CCACHE_DIR}"
      "CCACHE_BASEDIR=${source_root}"
      "CCACHE_NOHASHDIR=1"
      "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
      "CCACHE_MAXSIZE=5G"
      "${TUNEBENCH_CCACHE_PROGRAM}")
  set(CMAKE_CXX_COMPILER_LAUNCHER "${launcher}" PARENT_SCOPE)
  set(CMAKE_CUDA_COMPILER_LAUNCHER "${launcher}" PARENT_SCOPE)
  message(STATUS "tunebench: compiling through ccache, cache in ${TUNEBENCH_CCACHE_DIR}")
endfunction()
