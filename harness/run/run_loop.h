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

#include "analysis/paired.h"
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
  bool control = false;            // an A/A or positive control: the run's budget never stops it
  double worker_s = 0;  // > 0: workers after the first sized to the step (suite.h, run/sizing.h)
};
using SamplingMap = std::map<std::string, Sampling>;

// Each paired experiment's sampling rules (the experiments of design "processes" have none).
SamplingMap sampling_of(const plan::Plan& plan);

// The run loop: runs the run's missing trials into `db`, checks (evidence, guard) and stores
// each, samples every paired experiment on until it is settled or out of budget, reports
// progress, and stops cleanly on an interrupt or a storage error without losing what was stored.
// Without a run budget each paired experiment samples on right after its planned workers, within
// its own budget_s and max_workers. With one (--budget), the controls still do (their budget_s
// is theirs, whatever the run's), and decide_pct experiments too (their looks are fixed); every
// other paired experiment waits until all planned trials have run, and the time left of the
// run's budget then goes where it settles most (run/allocator.h), without budget_s.
class RunLoop {
 public:
  // `failed`, `invalid` count trials stored before (a resumed run); `guard_reference` the
  // experiments' first ok check values; `gpus` the CUDA devices here.
  RunLoop(storage::Database& db, std::string run_uuid, const RunOptions& options, int gpus,
          std::map<std::string, double> guard_reference, int failed, int invalid,
          SamplingMap sampling);

  int execute(const std::vector<TrialSpec>& trials);
  // A resumed run whose experiments' planned trials are all stored: the last planned worker of
  // each (its arms), so that the budget left samples their open verdicts on and a long run's
  // controls run again at its end, as if the run had not stopped. Before execute().
  void carry_on(const std::vector<std::pair<TrialSpec, TrialSpec>>& finished);

 private:
  void say(const std::string& line) const {
    if (!options_.quiet) std::cerr << (tty_ ? "\r\033[K" : "") << line << "\n";
  }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  void guard(const TrialSpec& t, TrialResult& r);
  void report(const TrialSpec& t, const TrialResult& r, const std::string& position) const;
  bool run_unit(const std::vector<TrialSpec>& unit, const std::vector<std::string>& positions);
  bool sample_on(const TrialSpec& off, const TrialSpec& on);
  bool add_two_workers(const TrialSpec& off, const TrialSpec& on, int workers);
  bool spend_budget();
  // The seconds kept for the controls' second turn at the end, where the run's budget reaches it
  // (what they took at the start): spend_budget and fit_plan leave them out of what is left.
  double controls_reserve() const;
  // A paired unit of an experiment with worker_s, from its second worker on: its shape sized from
  // the first worker's step (run/sizing.h), said once per experiment and kept in sized_.
  void size_unit(std::vector<TrialSpec>& unit);
  // A long run's end (RunOptions::controls_again_after_s): each control once more, from a new
  // worker on, as at the start: its planned workers, then sampling on until settled within its
  // own budget_s and max_workers, counted from the end's first worker; the interval of those end
  // workers alone, judged as the start's, said and kept in controls_at_end_. False when the run
  // must stop (as run_unit).
  bool controls_at_end();
  // Where a paired experiment stands: its effect now, its workers and the time they took.
  struct Now {
    stats::paired::Effect effect;
    int workers = 0;
    double seconds = 0;
    bool has_interval = false;
    std::string width;  // "±1.8%", "no interval"
  };
  Now now(const TrialSpec& off, const stats::paired::Options& target);
  // Records how a paired experiment's sampling ended (stored with the run: runs.sampling).
  void note_stop(const std::string& experiment, const Now& at, const std::string& stop);
  // What the run has spent, stored with it (runs.sampling): its budget, the time it has taken,
  // each experiment's worker seconds, what sampling added and sized, how each experiment's
  // sampling ended. Stored when the run starts and after every unit, so that a resumed run goes
  // on with the same budget and clock (restore()); `final` also prints the summary.
  nlohmann::json sampling_record() const;
  void store_sampling(bool final);
  // A resumed run: the budget, clock and spending its earlier part stored (sampling_record), or,
  // for a run stored before that, its workers' own seconds.
  void restore();

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
  // With a run budget: the paired experiments waiting for it (their last planned worker's arms).
  std::vector<std::pair<TrialSpec, TrialSpec>> waiting_;
  nlohmann::json stops_ = nlohmann::json::array();  // note_stop's, in order
  // size_unit's: by experiment, the first worker's step, the given and the sized shape.
  nlohmann::json sized_ = nlohmann::json::object();
  // The controls' last planned worker (their arms), for controls_at_end; and what it found.
  std::vector<std::pair<TrialSpec, TrialSpec>> controls_;
  nlohmann::json controls_at_end_ = nlohmann::json::array();
  double planned_done_at_ = -1;  // elapsed() when every planned trial had run
  bool failed_to_store_ = false;
  Clock::time_point start_ = Clock::now();
  double spent_before_ = 0;  // seconds the run had taken before this process resumed it
  // With a run budget: once a tenth of the planned trials after the controls has run, what the
  // rest will take at that pace, said once where it goes beyond the budget (foresee_plan).
  // With fit_plan, the planned trials after `done` are cut to what fits (fit_plan()).
  void foresee_plan(size_t done, std::vector<TrialSpec>& trials);
  void fit_plan(size_t done, std::vector<TrialSpec>& trials, double expected);
  nlohmann::json plan_fit_ = nlohmann::json::object();  // by experiment: the workers it keeps
  struct Mark {
    double trial = -1, at = 0;  // the first planned trial after the controls, and when it began
  };
  Mark first_planned_;
  bool foreseen_ = false;
  double planned_expected_s_ = 0;  // the expected end of the planned trials, elapsed seconds
};

// The loop, with a fault it did not expect (an exception: the environment, the file system)
// named and the run stored as interrupted with the command that resumes it, never left running.
int execute_or_interrupt(RunLoop& loop, storage::Database& db, const std::string& uuid,
                         const std::vector<TrialSpec>& trials, const RunOptions& options);

}  // namespace tunebench::orchestrator
