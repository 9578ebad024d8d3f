// Ranks across the nodes of a Slurm allocation (`tunebench run --ranks srun`): each rank of a
// ddp_scaling / ddp_no_sync trial is started as a one-task job step of its own (`srun --nodes=1
// --ntasks=1 --nodelist=NODE`), whose stdin and stdout srun forwards as a local worker's are, so
// the orchestrator starts, times out, kills and reads the ranks exactly as it does local ones
// (orchestrator::spawn_all). The ranks meet in a c10d TCPStore served by rank 0 on the first
// node (worker/ddp.cpp), and Slurm, not tunebench, binds their CPUs: the process setting has no
// "cpus" then. No torch here.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/records.h"

namespace tunebench::slurm {

// The allocation this process runs in, from the environment Slurm gives a batch script or an
// `salloc` shell.
struct Allocation {
  std::string job_id;
  std::vector<std::string> nodes;  // the job's nodes, in Slurm's order (`scontrol show hostnames`)
  int tasks = 1;                   // SLURM_NTASKS: ranks for "ddp_scaling": true
  int cpus_per_task = 1;           // SLURM_CPUS_PER_TASK (1 when unset): threads per rank
  std::string srun;                // absolute path
  // SLURM_* and SLURM_CONF of this process: what srun needs to find the job (its id, its
  // nodes, the configuration), added to each rank's environment.
  std::map<std::string, std::string> env;
};

// Throws std::invalid_argument, saying what is missing and what to do, when this process is
// not inside a Slurm allocation or srun / scontrol cannot be found.
Allocation current_allocation();

// The node of rank `index` of `count` over `nodes` nodes: consecutive ranks fill a node
// (ranks 0..k-1 on the first, …), as Slurm's block distribution does.
size_t node_of(int index, int count, size_t nodes);

// Lays the parts of a rank trial (knobs::distributed::split over `allocation.tasks` slots) out on
// the allocation: each part's process setting loses "cpus" and gains "node" (its node's name),
// "store" {"host": the first rank's node, "port": `port`}, and on CUDA "gpu" = its index among
// the ranks on its node; omp_threads is `trial`'s, else cpus_per_task.
void place_ranks(const TrialSpec& trial, std::vector<TrialSpec>& parts,
                 const Allocation& allocation, int port);

// The command line that starts `argv` as part `part` (placed by place_ranks) in a job step of
// its own: srun with one task on its node, `threads` CPUs, killed with the step when it fails.
std::vector<std::string> srun_argv(const Allocation& allocation, const TrialSpec& part,
                                   const std::vector<std::string>& argv);

// A TCP port that was free on this host a moment ago (bound to port 0 and released), for the
// rank-0 store when the orchestrator runs on the first node, as a batch script does.
int free_port();

// `name` found in PATH as an absolute path, or "" when it is not there.
std::string find_program(const std::string& name);

}  // namespace tunebench::slurm
