// A resident pair (paired processes). For knobs that act when a process starts (its
// environment, preloads, launcher) or on the whole process (a global flag, a thread pool), the
// two arms of a paired worker cannot share one process. Each runs in a process of its own, with
// its own start-time setup; both are started and warmed, then kept alive and asked for ABBA blocks
// of samples in turn, the idle one blocked on its pipe with its threads stopped. The host's drift,
// which here lasts seconds to minutes, then slows both arms of a pair alike, as it does inside one
// process, while each process keeps its own environment. Separate processes a few seconds apart
// did not cancel it: adjacent OFF/ON processes gave A/A half-widths of 6–13 % over 10 pairs here
// (docs/user-guide.md, "Paired measurement"). The protocol is core/records.h's (kResidentRequest);
// the worker's side is worker/paired.h run_resident; analysis/paired.h estimates the effect from
// the samples exactly as for a pair inside one process.
#pragma once

#include <csignal>
#include <vector>

#include "core/records.h"
#include "run/orchestrator.h"

namespace tunebench::orchestrator {

// Runs one resident pair. `off_command` and `on_command` start the arms' workers, each with its
// own process setup; their input is the resident request (the first line each worker reads).
// `off` gives the pairing (blocks, block_samples, which arm starts). Returns both arms' results,
// OFF then ON, each with its samples' blocks; both failed alike, with the reason and each
// worker's stderr, when either worker fails, answers out of turn, or the pair outlasts both arms'
// timeouts together. Empty when `*interrupt` became non-zero: nothing is a result then. The
// workers' process groups are killed on every way out.
std::vector<TrialResult> run_resident_pair(const TrialSpec& off, const TrialSpec& on,
                                           const Command& off_command, const Command& on_command,
                                           const volatile sig_atomic_t* interrupt);

// The first line a resident worker reads: {"resident": true, "on": on, "trial": spec}.
std::string resident_request(const TrialSpec& spec, bool on);

}  // namespace tunebench::orchestrator
