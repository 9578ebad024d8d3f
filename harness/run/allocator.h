// One run budget spent where it settles most. Once every experiment has its planned workers, the
// time left of the run's --budget goes, two workers at a time, to the paired experiment whose
// interval is expected to shrink most toward its target per second of machine time: its cost per
// worker and its between-worker spread measured from its own workers so far. An experiment that
// could not reach its target within the time left (its predicted workers times its cost per
// worker) stops early, with the workers and seconds it would need and the width it would reach.
// Pure functions of what each experiment has measured: the run loop (run/run_loop.h) runs what
// they choose, and a simulation (tests/test_allocator.cpp) compares them with fixed caps.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tunebench::orchestrator::allocation {

// Where one paired experiment stands, from its stored workers.
struct Standing {
  std::string experiment;
  int workers = 0;        // workers run so far
  int planned = 0;        // its planned workers
  int most_workers = 0;   // it may not go beyond (max_workers)
  int settles_from = 0;   // it may settle only from this many workers on (detect::settles_from)
  double seconds = 0;     // machine time its workers took, start-up included
  double half_width = 0;  // of its interval now, a fraction; NaN or ∞ without one
  double log_sd = 0;      // between-worker sd of the workers' log ratios; 0 without one
  double target = 0.02;   // the half-width to reach
  double confidence = 0.95;
  bool settled = false;  // at its target (and allowed to stop there)
};

// What a prediction says about one experiment.
struct Outlook {
  bool has_interval = false;
  double cost_per_worker = 0;  // seconds
  int workers_needed = 0;      // to reach its target (0: not within most_workers)
  double seconds_needed = 0;   // beyond what it has spent
  double reachable = 0;        // half-width expected with what is left (and most_workers)
  double gain_per_second = 0;  // toward its target, from two more workers
};

// The interval's relative half-width expected at `workers` workers when their log ratios spread
// by `log_sd` (the paired estimate's t interval: stats::paired::estimate).
double predicted_half_width(double log_sd, int workers, double confidence);

// What two more workers, and all that is left, would do for `s`.
Outlook outlook(const Standing& s, double seconds_left);

// The next step: the experiment to give two more workers, or why each is done.
struct Decision {
  std::optional<size_t> next;  // index into the standings
  // Experiments that stop now, with why in words ("stopped early: cannot reach ±2% within the
  // 310s left of the run's budget (it would need 24 workers, 410s more; with what is left it
  // would reach ±2.6%)"). Each stops once.
  std::vector<std::pair<size_t, std::string>> stopped;
};

// Chooses among the experiments not yet `done` (same indices as `standings`): stops the settled,
// those without an interval after twice their planned workers, those at most_workers and those
// that cannot reach their target within `seconds_left`; of the rest, the largest gain per second.
Decision decide(const std::vector<Standing>& standings, const std::vector<bool>& done,
                double seconds_left);

}  // namespace tunebench::orchestrator::allocation
