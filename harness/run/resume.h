// Resuming a run: what `tunebench run --resume RUN` does once run() (run/orchestrator.h) has
// handed it over. Private to the orchestrator's files in harness/run/.
#pragma once

#include "run/orchestrator.h"

namespace tunebench::orchestrator {

// `tunebench run --resume RUN`: the stored suite is expanded again (same order, same seeds) and
// only the trials the database does not hold yet are run.
int resume(const RunOptions& options);

}  // namespace tunebench::orchestrator
