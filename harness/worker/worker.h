// `tunebench worker`: one trial in a fresh process. Reads a TrialSpec as JSON on stdin, prepares
// its arm (the model, the knobs' actions: worker/knob_action.h), checks the function it computes
// (the correctness guard), warms up, takes samples with Google Benchmark (one sample per
// repetition, manual time with device synchronisation), reads back the evidence that its
// settings took effect, and prints one TrialResult as JSON on stdout. Anything else the process
// prints goes to stderr. The phases are worker/trial.h.
#pragma once

#include "core/records.h"

namespace tunebench::worker {

// The whole worker; returns the process exit code (0 when a result was produced).
int main_worker();

// The measurement itself, in this process (for tests and the worker): worker/trial.h's phases.
TrialResult run_trial(const TrialSpec& spec);

// Seconds taken by a short fixed single-threaded CPU workload (~10 ms on this machine): stored
// with every trial, so trials taken in a slow phase of a shared host are visible.
double cpu_probe_seconds();

}  // namespace tunebench::worker
