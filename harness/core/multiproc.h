// Trials that take several worker processes at once: multi_instance (one inference instance per
// core group, throughput summed) and the distributed knobs (ddp_scaling, ddp_no_sync: the worker
// processes are the ranks of one c10d process group). No torch here.
//
// The orchestrator splits such a trial into one TrialSpec per process (split, laid out by
// knobs::distributed::layout, which knows the knobs), starts them all
// together (orchestrator::spawn_all), checks each one's evidence against its own settings, and
// stores one trial whose samples are the combined figures (combine):
//   instances: each runs the whole batch; a combined sample is the time per batch at the summed
//              throughput, 1 / Σ 1/tᵢ;
//   ranks:     each runs its shard of the batch (data parallel); a combined sample is the time of
//              the slowest rank for the step, max tᵢ.
// Each process's affinity, threads, measured window and (ranks) all-reduce counts and parameter
// checksum stay in the stored trial's evidence under "processes".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/records.h"

namespace tunebench::multiproc {

// The setting the orchestrator adds to each process's spec: {"role": "instance"|"rank",
// "index": i, "count": n, "cpus": [..], "dir": rendezvous directory, and for a CUDA rank
// "gpu": its device index}. Ranks started by srun across a Slurm allocation (run/slurm.h) have
// "node" and "store": {"host", "port"} (their TCPStore) instead of "cpus". Not a knob: a suite
// cannot set it (the suite parser accepts catalog ids only).
inline constexpr const char* kProcessSetting = "process";

// Micro-batches per step of a ddp_no_sync experiment (gradient accumulation).
inline constexpr int kNoSyncMicroBatches = 4;

// How a trial is laid out on processes: role "" for an ordinary one-process trial. Which
// settings ask for which layout is the distributed knobs' rule (knobs::distributed::layout).
struct Layout {
  std::string role;       // "", "instance" or "rank"
  int count = 1;          // processes
  int threads = 1;        // intra-op threads per process
  bool gpu_each = false;  // ranks on CUDA: process i runs on GPU i
};

// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cpus();

// A private directory for one trial's rendezvous (barrier files, the c10d FileStore), removed
// with everything in it when this goes out of scope.
class Rendezvous {
 public:
  Rendezvous();
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

// One spec per process of `layout`: `trial` itself for an ordinary trial (role ""); otherwise
// copies with the process setting (consecutive groups of `layout.threads` of `cpus`; with
// gpu_each, process i also gets "gpu": i). The caller sets each part's threads
// (knobs::distributed::split). Throws std::invalid_argument when the host has too few CPUs or
// GPUs for the processes.
std::vector<TrialSpec> split(const TrialSpec& trial, const Layout& layout,
                             const std::vector<int>& cpus, const std::string& rendezvous_dir,
                             size_t gpus = 0);

// The stored trial from the processes' results (each already checked against its own spec): the
// single result for an ordinary trial; otherwise the combination described above, failed or
// invalid when any process was, and invalid when the processes disagree (instances computing
// different outputs, ranks ending with different parameters, instances that did not overlap).
TrialResult combine(const TrialSpec& trial, const std::vector<TrialSpec>& parts,
                    std::vector<TrialResult> results);

// --- inside a worker -----------------------------------------------------------------------
// Pins this process to its CPUs (a no-op for an ordinary trial and for a rank Slurm placed).
// Throws std::runtime_error.
void enter(const TrialSpec& spec);
// Waits until every process of the trial has arrived (files in the rendezvous directory), so
// that all measure at the same time; returns at once for an ordinary trial and for ranks with a
// TCPStore (they meet in their process group's barrier instead). Throws
// std::runtime_error after `timeout_s`.
void wait_for_all(const TrialSpec& spec, double timeout_s);
// Nanoseconds on the system-wide monotonic clock: comparable between processes.
int64_t monotonic_ns();

}  // namespace tunebench::multiproc
