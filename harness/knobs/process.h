// The process family: knobs that act when the worker process starts, through its environment,
// its preloaded libraries or a launcher (omp_threads, omp_affinity, omp_runtime, numa_bind,
// allocator, malloc_tunables). Their evidence is common to every trial (knobs/evidence.h: env,
// torch_threads, mapped_libraries, allocator, numa_policy).
#pragma once

#include "knobs/evidence.h"
#include "knobs/knob.h"

namespace tunebench::knobs::process {

// The rules of this family (knobs/knob.h's KnobRules).
const KnobRules& rules();

}  // namespace tunebench::knobs::process
