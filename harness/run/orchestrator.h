// `tunebench run`: expands a suite into trials, runs each in a fresh `tunebench worker` process
// (execve with an explicit argv and environment, never a shell), checks what comes back
// (evidence, correctness guard) and stores every trial in its own transaction.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "knobs/knob.h"
#include "plan/model_suite.h"
#include "plan/suite.h"
#include "run/slurm.h"

namespace tunebench::orchestrator {

// A suite that plans more trials than this is refused unless RunOptions::large: each trial
// starts a worker process, so such a run takes hours before its first measurement is worth much.
inline constexpr size_t kLargeRunTrials = 2000;

struct RunOptions {
  std::string suite_path;
  std::string db_path;  // the command line gives the default (app/commands.h: kDefaultDatabase)
  std::string label;
  std::string filter;
  bool quiet = false;
  std::string command_line;
  std::string resume;  // a run to finish: only its missing trials run (suite_path unused)
  // Seconds for the whole run (0: no run budget). The planned trials all run, controls first;
  // then the time left goes, two workers at a time, to the paired experiments where it settles
  // most (run/allocator.h), their own budget_s aside; the controls keep their budget_s whatever
  // is left (run/run_loop.h).
  double budget_s = 0;
  // With a run budget: when the planned trials, at the pace their first tenth shows, would end
  // beyond it, run fewer planned workers of each experiment (allocation::fitted_workers) so that
  // they fit; kept with the run for --resume. Off: every planned worker runs, and it is said.
  bool fit_plan = false;
  // A run that has taken at least this many seconds once its planned trials and sampling are
  // done runs its controls once more at the end, sampling on as at the start (run/run_loop.h),
  // so that their intervals, and the run's certification, cover its whole length and not only
  // its start.
  double controls_again_after_s = 1200;
  // Up to this many seconds before the run starts, wait until the host is quiet by CPU pressure
  // (host::wait_until_quiet): a run started right after a build would otherwise measure the
  // build's tail. The wait is said and stored with the host's state.
  double wait_quiet_s = 0;
  // The program that runs `worker`: this binary itself by default, started through a hard link
  // made when the run starts (run/launch_paths.h), which stays this very binary even if a
  // rebuild replaces the file during the run.
  std::string worker_executable = "/proc/self/exe";
  // Start the ranks of ddp_scaling / ddp_no_sync trials as job steps of the Slurm allocation this
  // runs in, across its nodes (run/slurm.h), instead of on this host's cores.
  bool ranks_over_srun = false;
  // Run a suite of more than kLargeRunTrials trials (refused without it, with its size said).
  bool large = false;
  // `run --model FILE`: the suite is made from the model (plan/model_suite.h), not read.
  plan::ModelRequest model;
  bool dry_run = false;  // print the plan and stop: nothing is run or written
  // A suite made by the caller (`tunebench tune`'s stages, run/tune.h), run instead of
  // suite_path's or the model's; and the uuid the run is stored under (empty: a new one).
  std::optional<suite::Suite> suite;
  std::string uuid;
  std::optional<slurm::Allocation> allocation;  // set by run() when ranks_over_srun
};

// A random (version 4) uuid, as runs are stored under.
std::string new_uuid();

// Exit codes: 0 every trial ok; 1 the run completed with failed or invalid trials, was
// interrupted, or could not write; 2 bad input (suite, filter, database refused, unknown run to
// resume, a run to resume whose orchestrator still runs on this machine) — then no run was
// started or resumed. Once the database is open, its runs whose orchestrator is gone are marked
// interrupted first (storage::Database::interrupt_gone_runs).
int run(const RunOptions& options);

// The environment a worker gets: a few variables a process needs (PATH, HOME, LANG, TMPDIR,
// LD_LIBRARY_PATH), the GPUs the run may use (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER), NCCL's
// settings (NCCL_*, TORCH_NCCL_*), the regression studies' TUNEBENCH_TEST_SLOWDOWN (to this
// build's own workers; another build's, named by worker_build, get slowdown_stand_in of it), and
// the knobs' own (knobs::process_setup), with their preloads as LD_PRELOAD.
std::map<std::string, std::string> worker_environment(const knobs::ProcessSetup& setup);
// TUNEBENCH_TEST_SLOWDOWN's value with the digits 1-9 of every entry's percentage made 0: as long
// as the value, slowing nothing ("a/on=5,b=12.5" → "a/on=0,b=00.0").
std::string slowdown_stand_in(const std::string& value);

// One worker process's outcome.
struct WorkerOutcome {
  std::string out;              // everything it wrote on stdout
  std::string err_tail;         // the last few KiB of stderr
  int exit_code = -1;           // when it exited
  int signal = 0;               // when a signal ended it
  bool timed_out = false;       // killed (whole process group) after the timeout
  bool interrupted = false;     // killed (whole process group) because *interrupt became non-zero
  bool sibling_failed = false;  // killed because another process of the same trial failed
  double seconds = 0;
};
// Starts `argv` (argv[0] an absolute path) with exactly `env`, writes `input` to its stdin, and
// collects its output until it exits, `timeout_s` passes, or `*interrupt` becomes non-zero.
WorkerOutcome spawn(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env, const std::string& input,
                    double timeout_s, const volatile sig_atomic_t* interrupt = nullptr);

// One process of a multi-process trial.
struct Command {
  std::vector<std::string> argv;  // argv[0] an absolute path
  std::map<std::string, std::string> env;
  std::string input;
};
// A started child: its pid (also its process group) and this side's ends of its stdin, stdout
// and stderr pipes (close-on-exec).
struct StartedChild {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
};
// Starts `command` with execve (argv[0] an absolute path, exactly its env) in a process group of
// its own; `command.input` is not written. Throws std::runtime_error when pipe or fork fails.
StartedChild start_child(const Command& command);

// A child's stderr as it arrives: appended to `kept`, of which only the tail is kept. While
// reading, `kept` may grow to 4 × kStderrTail before it is cut (cutting is a copy); stderr_tail
// gives the last kStderrTail bytes, what a failed trial stores.
inline constexpr size_t kStderrTail = 4096;
void append_stderr(std::string& kept, const char* data, size_t size);
std::string stderr_tail(const std::string& kept);

// Starts every command at once, each in its own process group, and collects them all. The
// timeout and the interrupt apply to all of them together. When one ends with a non-zero exit
// or a signal, the others are killed (their groups) at once: a rank waiting for a dead peer would
// otherwise wait out the whole timeout; those carry `sibling_failed`.
std::vector<WorkerOutcome> spawn_all(const std::vector<Command>& commands, double timeout_s,
                                     const volatile sig_atomic_t* interrupt = nullptr);

}  // namespace tunebench::orchestrator
