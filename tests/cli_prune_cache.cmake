# ci/prune-cache.sh on a made-up cache: Python environments and compiled packages unused for more
# than --days go, the one setup keeps and those used lately stay, a package whose lock another
# process holds stays (and --dry-run says so), --dry-run removes nothing, bad input exits 2.
# cmake -DSOURCE=<src> -DWORK=<dir> -P cli_prune_cache.cmake
file(REMOVE_RECURSE ${WORK})
set(cache ${WORK}/cache)
set(aoti ${cache}/aoti)
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)

# made(PATH DAYS_AGO): a folder with a file in it, last modified DAYS_AGO days ago.
function(made path days)
  file(MAKE_DIRECTORY ${path})
  file(WRITE ${path}/content "x")
  execute_process(COMMAND touch -d "${days} days ago" ${path} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "touch ${path} failed")
  endif()
endfunction()

made(${cache}/venv-current 40)
made(${cache}/venv-old 3)
file(WRITE ${cache}/venv-old/.last-used "")
execute_process(COMMAND touch -d "20 days ago" ${cache}/venv-old/.last-used)  # the stamp decides
made(${cache}/venv-recent 30)
file(WRITE ${cache}/venv-recent/.last-used "")  # used today
made(${cache}/venv-unstamped 15)
made(${cache}/studies 100)
made(${aoti}/gpt-default-old 30)
made(${aoti}/gpt-default-locked 30)
made(${aoti}/gpt-default-new 1)

# prune(RC LOG command…): a command over this cache in the source tree; fails unless it exits RC.
set(ENV{TUNEBENCH_CACHE} ${cache})
unset(ENV{TUNEBENCH_COMPILE_CACHE})
unset(ENV{TUNEBENCH_CACHE_KEEP_DAYS})
macro(prune expected_rc log_var)
  run_cmd(${expected_rc} ${log_var} ${SOURCE} ${ARGN})
endmacro()

function(expect_there what)
  foreach(p ${ARGN})
    if(NOT EXISTS ${p})
      message(FATAL_ERROR "${what}: ${p} was removed")
    endif()
  endforeach()
endfunction()

# Bad input: one message, exit 2, nothing removed.
prune(2 log bash ci/prune-cache.sh --days two)
expect("--days must be a whole number of days, not 'two'" "${log}" "a bad --days")
prune(2 log bash ci/prune-cache.sh --keep)
expect("--keep needs a folder" "${log}" "--keep without a folder")
prune(2 log bash ci/prune-cache.sh --dry-rn)
expect("unknown argument '--dry-rn'" "${log}" "a misspelt option")
prune(0 log bash ci/prune-cache.sh --help)
expect("--keep DIR" "${log}" "--help")

set(all ${cache}/venv-current ${cache}/venv-old ${cache}/venv-recent ${cache}/venv-unstamped
        ${cache}/studies ${aoti}/gpt-default-old ${aoti}/gpt-default-locked ${aoti}/gpt-default-new)
expect_there("bad input" ${all})

prune(0 log bash ci/prune-cache.sh --keep ${cache}/venv-current --dry-run)
expect("would remove ${cache}/venv-old (a Python environment last used 20 days ago" "${log}" "dry run")
expect("would remove ${cache}/venv-unstamped (a Python environment last used 15 days ago" "${log}"
       "dry run: an environment without a stamp is as old as its folder")
expect("would remove ${aoti}/gpt-default-old (a compiled package last used 30 days ago" "${log}"
       "dry run: an old package")
expect("would free" "${log}" "dry run's total")
expect_there("--dry-run" ${all})

# A dry run while another process holds a package's lock says it would keep that package.
prune(0 log flock ${aoti}/gpt-default-locked.lock bash ci/prune-cache.sh --dry-run)
expect("would keep ${aoti}/gpt-default-locked (in use" "${log}" "dry run: a locked package")
if(log MATCHES "would remove ${aoti}/gpt-default-locked ")
  message(FATAL_ERROR "a dry run listed a locked package as removed:\n${log}")
endif()
expect_there("--dry-run with a lock held" ${all})

# The real thing, with one old package's lock held by another process (a worker loading it).
prune(0 log flock ${aoti}/gpt-default-locked.lock
      bash ci/prune-cache.sh --keep ${cache}/venv-current)
expect("removed ${cache}/venv-old " "${log}" "prune")
expect("kept ${aoti}/gpt-default-locked (in use" "${log}" "a locked package")
expect("freed " "${log}" "prune's total")
expect_there("prune" ${cache}/venv-current ${cache}/venv-recent ${cache}/studies
             ${aoti}/gpt-default-locked ${aoti}/gpt-default-new)
foreach(gone ${cache}/venv-old ${cache}/venv-unstamped ${aoti}/gpt-default-old)
  if(EXISTS ${gone})
    message(FATAL_ERROR "prune left ${gone}, unused for more than 14 days\n${log}")
  endif()
endforeach()

# Again: the locked package goes once its lock is free; --days 45 spares the rest.
prune(0 log bash ci/prune-cache.sh --keep ${cache}/venv-current --days 45)
expect("nothing unused for more than 45 days in ${cache}" "${log}" "a longer --days")
prune(0 log bash ci/prune-cache.sh --keep ${cache}/venv-current)
expect("removed ${aoti}/gpt-default-locked " "${log}" "the package, its lock free")
expect_there("second prune" ${cache}/venv-current ${cache}/venv-recent ${aoti}/gpt-default-new)
