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

#include <istream>
#include <string>

#include "core/records.h"

namespace tunebench::worker {

// Runs the paired trial; throws what preparing an arm throws (std::invalid_argument,
// std::runtime_error).
PairedResult run_paired(const PairedSpec& spec);

// One arm of a resident pair (core/records.h, kResidentRequest; paired processes):
// prepares and warms `spec`'s arm, then takes a block of samples at each {"block": b} read from
// `in` and answers on `out_fd`, until {"end": true}, which it answers with the arm's result. `on`
// says which arm it is in the pair. Returns the process's exit code; throws what preparing the
// arm throws (the caller answers with a failed result).
int run_resident(const TrialSpec& spec, bool on, std::istream& in, int out_fd);

// Writes `line` and a newline to `fd` whole; false when the reader has gone.
bool write_line(int fd, const std::string& line);

// Sleeps until the threads of this process other than the caller have stopped running or waiting
// to run — OpenMP
// workers spin on after a parallel region (libgomp briefly, Intel's runtime KMP_BLOCKTIME, 200 ms
// by default), and a dataloader's threads prefetch — so that another process measures on a quiet
// host: until they ran and waited under 0.5 ms in a 10-ms window, or `limit_s` passed. Returns the
// seconds waited.
double wait_until_threads_idle(double limit_s = 0.5);

// Before the first block of a pair (contamination): sleeps until the host is quiet —
// some task waited for a CPU under 10 % of a 50-ms window (/proc/pressure/cpu) — or `limit_s`
// has passed. Both arms are idle then (between blocks, or the other process of a resident pair
// blocked on its pipe), so what it sees is other processes: a compile, another benchmark.
// Where the kernel has no pressure accounting it returns at once, quiet.
struct QuietWait {
  double seconds = 0;  // waited
  bool quiet = true;   // false: the limit passed with the host still busy
};
QuietWait wait_for_quiet_host(double limit_s = 1.0);

// Seconds the threads of this process have waited on a run queue so far (schedstat's second
// field, summed over /proc/self/task/*); 0 where the kernel does not report it.
double run_queue_wait_seconds();

}  // namespace tunebench::worker
