#pragma once
// What a run whose orchestrator died without a word (kill -9, the OOM killer, a lost session)
// leaves behind on this host, cleared before the next run or resume measures anything:
//   - worker processes still running (core/liveness.h, worker tags): each would share the CPUs
//     with the new run's workers and skew both arms it overlaps; they are stopped (SIGKILL to
//     their process group) and waited for, and said;
//   - its temporary folders in TMPDIR: the launch links (tunebench-exe-PID-XXXXXX,
//     run/launch_paths.h) and trial rendezvous folders (tunebench-trial-PID-XXXXXX,
//     core/multiproc.h), the PID in each name its orchestrator's, and workers' compile requests
//     (tunebench-aoti-PID-XXXXXX, the PID the worker's): removed once that PID is gone.
#include <filesystem>
#include <string>
#include <vector>

namespace tunebench::orchestrator {

// Stops every worker whose orchestrator is gone and removes dead runs' folders from `tmp`;
// returns one line per thing done, for the user ("stopped worker pid 4242, left running by a
// dead orchestrator (pid 4200) …").
std::vector<std::string> clear_leftovers(const std::filesystem::path& tmp);

// Its two halves: the workers (every orphan on this host, whatever its TMPDIR) ...
std::vector<std::string> stop_orphaned_workers();
// ... and the folders in `tmp` whose run's orchestrator is gone.
std::vector<std::string> remove_dead_runs_folders(const std::filesystem::path& tmp);

// Why TMPDIR cannot hold this run's folders ("TMPDIR=/nowhere does not exist: …"), or "" when
// it can. Checked before a run is written, so that no run is left "running" by it.
std::string temp_directory_problem();

}  // namespace tunebench::orchestrator
