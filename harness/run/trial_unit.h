// One unit of the run loop in its worker process(es), started and its results read back: a trial
// alone (one worker, or several at once), a paired trial (both arms in one worker) or a resident
// pair (each arm in a worker of its own, both kept alive); each arm's result checked against the
// arm's own settings. Each stops its workers once `*interrupt` becomes non-zero, and then sets
// `interrupted` and returns no result. Private to the orchestrator's files in harness/run/.
#pragma once

#include <csignal>
#include <vector>

#include "core/records.h"
#include "run/worker_launch.h"

namespace tunebench::orchestrator {

// A trial alone: one worker process, or several at once for multi_instance and the distributed
// knobs (multiproc.h), each checked against its own settings, then combined.
TrialResult run_alone(const TrialSpec& t, const Launch& launch,
                      const volatile sig_atomic_t* interrupt, bool& interrupted);

// A paired trial: one worker process holds both arms and alternates them (worker/paired.h). Its
// environment is the OFF arm's: the arms differ only in knobs that act inside the process
// (knobs::pairable, checked when the suite was parsed). It has both arms' time.
std::vector<TrialResult> run_pair(const TrialSpec& off, const TrialSpec& on, const Launch& launch,
                                  const volatile sig_atomic_t* interrupt, bool& interrupted);

// A resident pair: each arm in a worker process of its own, with its own process setup, both kept
// alive and alternating blocks (run/resident.h). Each arm is checked against its own settings.
// Both processes start their heaps at one offset drawn for this pair where `shared_heap_offset`
// (suite.h, heap_offset), else each at its own (worker/heap_offset.h); sent in the environment,
// at one length whatever the draw.
// Where the arms run two executables (a software A/B), each worker starts from a fresh copy of
// its build (run/launch_paths.h: a file's own offset would otherwise stay with its arm), removed
// once the pair is over.
std::vector<TrialResult> run_resident(const TrialSpec& off, const TrialSpec& on,
                                      const Launch& launch, bool shared_heap_offset,
                                      const volatile sig_atomic_t* interrupt, bool& interrupted);

}  // namespace tunebench::orchestrator
