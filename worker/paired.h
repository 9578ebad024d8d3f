// A paired trial (core/records.h PairedSpec): one worker process holds the OFF and the ON arm of
// an experiment, built from one seed (one model where neither arm changes it), warms both, and
// alternates them in ABBA blocks of samples, so that the host's drift, which here lasts seconds to
// minutes, slows both arms of every pair alike. Which arm is built, warmed and timed first is the
// spec's on_first (the orchestrator counterbalances it across workers). analysis/paired.h turns
// the samples into an effect.
//
// Each sample records, beside its wall time, what says whether another process interfered: the
// process's CPU time, its threads' run-queue wait (/proc/self/task/*/schedstat) and involuntary
// context switches. Only knobs that switch inside a process may be paired (knobs::pairable).
#pragma once

#include "core/records.h"

namespace tunebench::worker {

// Runs the paired trial; throws what preparing an arm throws (std::invalid_argument,
// std::runtime_error).
PairedResult run_paired(const PairedSpec& spec);

// Seconds the threads of this process have waited on a run queue so far (schedstat's second
// field, summed over /proc/self/task/*); 0 where the kernel does not report it.
double run_queue_wait_seconds();

}  // namespace tunebench::worker
