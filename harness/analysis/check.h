// `tunebench check`, stage 1: a run against a baseline window of earlier runs of the same suite
// on the same host fingerprint and software (analysis/run_selection.h), with the detector of
// analysis/detect.h (the run's own bootstrap interval, the calibrated night-to-night noise floor
// of analysis/calibration.h, and a minimum effect); step changes in the history of each
// benchmark; knobs that stopped helping. Stage 2, the same-night A/B of what stage 1 flags, is
// app/confirm.h; the report's formats are analysis/reporter.h. The commands reach the calibration
// and the run selection through this header too.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/calibration.h"
#include "analysis/detect.h"
#include "analysis/run_selection.h"
#include "analysis/stats.h"
#include "store/storage.h"

namespace tunebench::check {

struct Options {
  std::string run = "latest";
  std::string baseline = "last:5";  // last:N | run:ID | label:X
  double threshold = 0.05;          // minimum slowdown that counts, as a fraction
  double false_alarm = 0.01;     // chance that a run without change alarms anywhere (split evenly
                                 // over its benchmarks for the one-sided noise-floor tests)
  bool across_software = false;  // compare with other LibTorch/tunebench versions too
  int history = 30;              // runs searched for step changes (current one included)
  int recent = 5;                // a step is reported while it began in the last `recent` runs
  // Stage 1 of the two-stage check: the one-sided false-alarm level per benchmark at
  // which a benchmark is flagged for stage 2, a same-night paired A/B against the last-good
  // build (app/confirm.h). Lenient on purpose: stage 2 decides.
  double flag_level = 0.2;
  bool flag_all = false;  // flag every benchmark with a baseline (a release gate: A/B them all)
};

// Which history a benchmark is compared on: its time per iteration ("absolute"), or that time
// divided by the reference kernel timed beside it in the same processes ("relative",
// core/reference.h). The quieter night to night wins: by the calibration where there is one,
// else by the spread of the baseline window's runs (at least 3), else absolute.
struct Basis {
  std::string name = "absolute";  // "absolute" or "relative"
  double sigma_log = NAN;         // night-to-night sd of ln(run median) on this basis
  double other_sigma_log = NAN;   // the same on the other basis (NaN when unknown)
  std::string source;             // "calibration", "baseline window" or "" (unknown)
};

// Stage 2's answer for one flagged benchmark: a paired A/B (the last-good build OFF, this build
// ON), stored as a run of its own.
struct Confirmation {
  std::string run_uuid;                    // the A/B run
  std::string last_good;                   // the executable compared with
  double ratio = NAN, lo = NAN, hi = NAN;  // this build / last-good, interval at `confidence`
  double half_width = NAN;                 // of that interval
  // The level stage 2 decides at: the run's false-alarm rate over its A/Bs
  // (detect::confirm_confidence), and each A/B's share over its looks (detect::decision_looks).
  // The A/B run's stored effect is its 95 % interval.
  double confidence = 0.95;
  int ab_count = 1;  // the A/Bs of the stage-2 run it is split over
  int looks = 1;     // the looks of each A/B it is split over
  int workers = 0, pairs = 0, dropped = 0;
  detect::Decision decision;
};

struct BenchmarkCheck {
  std::string experiment, arm;
  detect::Judgement judgement;  // stage 1: ratio run / baseline, interval, status, why
  int baseline_runs = 0;
  double min_detectable = NAN;  // from the calibration, NaN when not calibrated
  Basis basis;
  bool flagged = false;                      // sent to stage 2 (stage 1's flag, or --confirm-all)
  bool stage1_flagged = false;               // stage 1's own flag, whatever --confirm-all says
  double flag_ratio = NAN;                   // the ratio beyond which stage 1 flags
  std::optional<Confirmation> confirmation;  // stage 2, when it ran
  // The verdict: stage 1's status without stage 2; with it, "unchanged" (not flagged),
  // "regression", "no regression" (beyond the threshold) or "unknown". Stage 1 alone calls a
  // regression only against a calibrated floor: without one, what its tests call slower is
  // "unknown" and `unconfirmed` (the night-to-night drift of this host and software was never
  // measured, so a slow night cannot be told from a slow build).
  std::string status;
  bool unconfirmed = false;
  // Why an unconfirmed benchmark is unknown, one clause for every format.
  static constexpr const char* kUnconfirmed =
      "slower than the baseline, unconfirmed: no calibrated noise floor for this host and "
      "software and no stage 2";
};

struct StepChange {
  std::string experiment, arm;
  std::string first_run, first_started_at;  // the first run after the step
  detect::Step step;
};

// The machine a run's hostname ran its suite on before was another (core/hardware.h): its
// history restarts with this run, which is neither a regression nor a pass.
struct MachineChange {
  std::string last_run;  // the newest earlier run of the suite under this hostname
  std::string was, now;  // hardware::describe of each
  std::string text() const {
    return "the machine changed (was " + was + ", now " + now +
           "): history restarts with this "
           "run; nothing to compare it with yet (the last run on the old hardware: " +
           last_run + ")";
  }
};

struct Report {
  std::string run_uuid;
  std::optional<MachineChange> machine_changed;  // set: nothing else is
  std::vector<std::string> baseline_uuids;
  double threshold = 0, false_alarm = 0;
  double per_benchmark_false_alarm = 0;  // false_alarm / benchmarks compared (Bonferroni)
  bool calibrated = false;               // the suite has noise floors on this host and software
  std::vector<BenchmarkCheck> benchmarks;
  std::vector<StepChange> steps;
  std::vector<std::string> stopped_helping;  // "knob experiment: helps → no measurable effect"
  double flag_level = 0;
  bool confirmed = false;  // stage 2 ran for the flagged benchmarks (--confirm-with)
  // Whether the run's own controls certify it (analysis/effects.h, certify); empty without
  // controls. The check's findings stand either way; a run not certified says so first.
  std::string certification;
  bool regressed() const;
  // Some benchmark's stage 2 could not decide, or stage 1 found it slower without a calibrated
  // floor and stage 2 did not run (unconfirmed); none regressed.
  bool unknown() const;
  bool unconfirmed() const;  // some benchmark is unknown because it is unconfirmed
  std::string suite_name;    // the checked run's suite, for the command that settles it
  // What `regressions` stores: regressions, unconfirmed slowdowns (kind "unconfirmed"), step
  // changes and knobs that stopped helping.
  std::vector<storage::Database::Finding> findings() const;
};

// Throws std::invalid_argument for a bad --baseline and storage::StorageError for a bad run; a
// run without any baseline run is an error too (nothing to compare with).
Report check(const storage::Database& db, const Options& options);

}  // namespace tunebench::check
