// The process family: knobs that act when the worker process starts, through its environment,
// its preloaded libraries or a launcher (omp_threads, omp_affinity, omp_runtime, numa_bind,
// allocator, malloc_tunables). Their evidence is common to every trial (knobs/evidence.h: env,
// torch_threads, mapped_libraries, allocator, numa_policy).
#pragma once

#include "knobs/evidence.h"

namespace tunebench::knobs::process {}  // namespace tunebench::knobs::process
