// The run loop and sampling on: a run's trials in order, each unit run in its worker process(es)
// (run/trial_unit.h), guarded, stored and reported; every paired experiment sampled on beyond its
// planned workers until it is settled, decided or out of budget; SIGINT and SIGTERM stop it
// cleanly, keeping what was stored. Private to the orchestrator's files in harness/run/.
#pragma once

#include <chrono>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "core/records.h"
#include "plan/plan.h"
#include "run/orchestrator.h"
#include "run/worker_launch.h"
#include "store/storage.h"

namespace tunebench::orchestrator {

using Clock = std::chrono::steady_clock;

// How far a paired experiment may sample beyond its planned workers (suite.h: budget_s,
// max_workers), and whether its resident pairs share a heap offset, by experiment name.
struct Sampling {
  double budget_s = 0;
  int max_workers = 0;
  double target = 0.02;            // the half-width to reach
  double confidence = 0.95;        // of the interval whose half-width it is
  double decide = 0;               // > 0: stop at the first look that decides (suite.h, decide_pct)
  bool shared_heap_offset = true;  // suite.h, heap_offset
};
using SamplingMap = std::map<std::string, Sampling>;

// Each paired experiment's sampling rules (the experiments of design "processes" have none).
SamplingMap sampling_of(const plan::Plan& plan);

// The run loop: runs the run's missing trials into `db`, checks (evidence, guard) and stores
// each, samples every paired experiment on until it is settled or out of budget, reports
// progress, and stops cleanly on an interrupt or a storage error without losing what was stored.
class RunLoop {
 public:
  // `failed`, `invalid` count trials stored before (a resumed run); `guard_reference` the
  // experiments' first ok check values; `gpus` the CUDA devices here.
  RunLoop(storage::Database& db, std::string run_uuid, const RunOptions& options, int gpus,
          std::map<std::string, double> guard_reference, int failed, int invalid,
          SamplingMap sampling);

  int execute(const std::vector<TrialSpec>& trials);

 private:
  void say(const std::string& line) const {
    if (!options_.quiet) std::cerr << (tty_ ? "\r\033[K" : "") << line << "\n";
  }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  void guard(const TrialSpec& t, TrialResult& r);
  void report(const TrialSpec& t, const TrialResult& r, const std::string& position) const;
  bool run_unit(const std::vector<TrialSpec>& unit, const std::vector<std::string>& positions);
  bool sample_on(const TrialSpec& off, const TrialSpec& on);

  storage::Database& db_;
  const std::string run_uuid_;
  const RunOptions& options_;
  const bool tty_;
  Launch launch_;
  std::map<std::string, double> guard_reference_;
  int failed_, invalid_;
  const SamplingMap sampling_;
  std::map<std::string, double> experiment_seconds_;  // worker time spent, by experiment
  int next_sequence_ = 0;  // for the workers sampling adds beyond the plan
  int added_ = 0;          // workers sampling added
  bool failed_to_store_ = false;
  Clock::time_point start_ = Clock::now();
};

// The loop, with a fault it did not expect (an exception: the environment, the file system)
// named and the run stored as interrupted with the command that resumes it, never left running.
int execute_or_interrupt(RunLoop& loop, storage::Database& db, const std::string& uuid,
                         const std::vector<TrialSpec>& trials, const RunOptions& options);

}  // namespace tunebench::orchestrator
