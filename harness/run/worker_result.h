// What a worker's outcome means, as the run stores it: a trial's result, or a failure with why (it
// timed out, a signal killed it, it printed no result or a malformed one, it exited non-zero); a
// paired worker's result for both arms; and the evidence each arm's worker gives checked against
// the arm's settings (knobs::check_evidence). Private to the orchestrator's files in harness/run/.
#pragma once

#include <string>
#include <vector>

#include "core/records.h"
#include "run/launch_paths.h"
#include "run/orchestrator.h"

namespace tunebench::orchestrator {

// A failed trial: `why` is its error, with the worker's stderr tail.
TrialResult failed_result(const WorkerOutcome& w, const std::string& why);

// The result a trial's worker gave; failed (with why) when it gave none or exited non-zero.
TrialResult interpret(const WorkerOutcome& w, const TrialSpec& spec);

// A paired trial's one worker gives both arms' results (OFF, ON): each as a trial alone would
// give it, its samples with their blocks; when the worker failed, both fail alike.
std::vector<TrialResult> interpret_paired(const WorkerOutcome& w, const TrialSpec& off);

// Its evidence contradicts its settings: the result is invalid, with every contradiction. A
// worker started through a launch link (run/launch_paths.h) names the build the link stands for.
void check_evidence(const TrialSpec& spec, Mode mode, TrialResult& r, const LaunchPaths& links);

}  // namespace tunebench::orchestrator
