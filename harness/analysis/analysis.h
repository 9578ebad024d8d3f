// From stored trials to what `tunebench show` prints: per experiment, each arm's spread and
// evidence, and the knob's effect on time (and on peak memory for memory knobs) as a ratio with
// its interval and verdict, beside the catalog's claim. Computed here; printed by the reporters
// (analysis/reporter.h).
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/stats.h"
#include "core/liveness.h"
#include "store/storage.h"

namespace tunebench::analysis {

struct ArmReport {
  std::string arm;
  int ok = 0, failed = 0, invalid = 0;
  stats::Summary time{};      // seconds per iteration over all ok samples (valid when ok > 0)
  double peak_rss_bytes = 0;  // median over ok trials
  double probe_seconds = 0;   // median CPU probe before its trials
  double page_faults_per_iteration = 0;
  // Of the ok trials: the median, lowest and highest trial median (seconds per iteration) and the
  // median throughput; NaN without an ok trial. Stored for the report, not printed by show.
  double trial_median_seconds = NAN, trial_median_low_seconds = NAN,
         trial_median_high_seconds = NAN, items_per_second = NAN;
  nlohmann::json evidence;            // of the first ok trial
  std::vector<std::string> problems;  // errors of failed/invalid trials
};

struct NamedEffect {
  std::string metric;    // "time", "peak memory"
  std::string compared;  // "on vs off", or a factorial cell vs the all-off cell
  stats::Effect effect;
};

struct ExperimentReport {
  std::string name, knob, model, preset, mode;
  int64_t batch = 0;
  std::string claim, false_claim;
  std::vector<ArmReport> arms;
  std::vector<NamedEffect> effects;
  std::string problem;  // why no effect could be computed
  // A positive control's known slowdown of its ON arm as a fraction (0.03); 0 for any other.
  double slowdown = 0;
};

// A control: an A/A experiment (both arms identical) or a positive control (its ON arm slower by
// a known amount).
inline bool is_control(const ExperimentReport& x) { return x.knob == "aa" || x.slowdown > 0; }

// An interval's half-width as a fraction of its middle on the log scale: sqrt(hi / lo) - 1.
inline double half_width(const stats::Effect& e) { return std::sqrt(e.hi / e.lo) - 1; }

// What a control's time effect says, in the words a reader needs in place of the estimator's
// verdict (which speaks of a knob helping or hurting): an A/A "holds 1 (±1.0%)" where its
// interval holds 1 (with the interval's half-width, as certify measures it) or "shows an effect:
// the host was noisy"; a positive control "detected" where its interval lies above 1, else
// "missed". Empty for any other effect and for a control's effect without an interval (its
// verdict, "insufficient data", says why).
std::string control_words(const ExperimentReport& x, const NamedEffect& e);

// An effect as show, the report and export print it: stats::format_effect, with a control's
// words in place of its verdict ("0.99x [0.97, 1.01] holds 1 (±2.0%)").
std::string effect_text(const ExperimentReport& x, const NamedEffect& e);

// A run's state as a reader says it: for a run stored as "running", judged from this machine by
// its orchestrator's record (core/liveness.h); for an interrupted one, with what resumes it.
struct RunState {
  // The stored status, but "interrupted" where its orchestrator is gone.
  std::string status;
  // For show's first line: "interrupted (orchestrator gone)", "running on node7 (cannot check
  // from here)", or the status.
  std::string shown;
  // For a run stored as "running": alive, gone, elsewhere or unrecorded (core/liveness.h).
  std::string liveness;
  // Why, in words: "its orchestrator, pid 4242 on node7, is no longer running"; "" where there
  // is nothing to say.
  std::string detail;
  // "tunebench run --resume UUID --db PATH" for an interrupted run.
  std::string resume;
};
RunState run_state(const storage::Database::StoredRun& run, const liveness::Here& here,
                   const std::string& db_path);

struct RunReport {
  storage::Database::StoredRun run;
  RunState state;  // analyze() judges it from this machine
  std::vector<ExperimentReport> experiments;
  nlohmann::json not_applicable;  // [{experiment, reason}]
  // The noise floors calibrated for this run's suite, host and software (tunebench calibrate).
  std::vector<storage::Database::NoiseFloor> floors;
  std::vector<storage::Database::Finding> findings;  // what tunebench check stored for it
  // Whether its controls certify the run (analysis/effects.h, certify); empty without controls.
  std::string certification;
};

// A run whose controls do not certify it: its every verdict is marked so.
inline bool not_certified(const std::string& certification) {
  return certification.rfind("not certified", 0) == 0;
}
inline bool not_certified(const RunReport& report) { return not_certified(report.certification); }
// The line that heads show and check: "certified by its controls: …" or "NOT CERTIFIED by its
// controls, nor any verdict of this run: …"; empty without controls.
std::string certification_line(const std::string& certification);

// The run's report: its trials' structure (arms, counts, evidence, problems) with the numbers
// stored for it (analysis/effects.h); a run without stored numbers (still running) is computed
// on the fly. Its state is judged from this machine (run_state); nothing is written.
RunReport analyze(const storage::Database& db, const std::string& run_uuid);

}  // namespace tunebench::analysis
