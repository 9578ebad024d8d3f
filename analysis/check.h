// `tunebench check`, `tunebench calibrate` and `tunebench compare`: a run against a baseline
// window of earlier runs of the same suite on the same host fingerprint and software, with the
// detector of analysis/detect.h (the run's own bootstrap interval, the calibrated night-to-night
// noise floor, and a minimum effect); step changes in the history of each benchmark; knobs that
// stopped helping; noise floors from repeated A/A runs; two runs or two hosts side by side.
#pragma once

#include <string>
#include <vector>

#include "analysis/detect.h"
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
};

struct BenchmarkCheck {
  std::string experiment, arm;
  detect::Judgement judgement;  // ratio run / baseline, interval, status, why
  int baseline_runs = 0;
  double min_detectable = NAN;  // from the calibration, NaN when not calibrated
};

struct StepChange {
  std::string experiment, arm;
  std::string first_run, first_started_at;  // the first run after the step
  detect::Step step;
};

struct Report {
  std::string run_uuid;
  std::vector<std::string> baseline_uuids;
  double threshold = 0, false_alarm = 0;
  double per_benchmark_false_alarm = 0;  // false_alarm / benchmarks compared (Bonferroni)
  bool calibrated = false;               // the suite has noise floors on this host and software
  std::vector<BenchmarkCheck> benchmarks;
  std::vector<StepChange> steps;
  std::vector<std::string> stopped_helping;  // "knob experiment: helps → no measurable effect"
  bool regressed() const;
  // What `regressions` stores: regressions, step changes and knobs that stopped helping.
  std::vector<storage::Database::Finding> findings() const;
};

// Throws std::invalid_argument for a bad --baseline and storage::StorageError for a bad run; a
// run without any baseline run is an error too (nothing to compare with).
Report check(const storage::Database& db, const Options& options);

// format: table, md, json or junit.
std::string format(const Report& report, const std::string& format);

// Noise floors from finished A/A runs of one suite on one host and software (at least 3): per
// benchmark, the spread of its run medians and the smallest slowdown detectable with `power` at
// `false_alarm` against `baseline_runs` runs. Throws std::invalid_argument when the runs differ in
// suite, host or software, or are too few.
struct FloorSettings {
  double false_alarm = 0.01, power = 0.8;
  int baseline_runs = 5;
};
std::vector<storage::Database::NoiseFloor> calibrate(const storage::Database& db,
                                                     const std::vector<std::string>& run_uuids,
                                                     const FloorSettings& settings,
                                                     const std::string& calibrated_at);

// Two runs side by side (B / A per benchmark, with the bootstrap interval), e.g. the same suite
// on two machines for procurement. Benchmarks only one run has are listed as such.
struct Comparison {
  std::string run_a, run_b, host_a, host_b;
  struct Row {
    std::string experiment, arm;
    double median_a = NAN, median_b = NAN;  // seconds per iteration
    stats::Effect effect;                   // B / A
  };
  std::vector<Row> rows;
};
Comparison compare(const storage::Database& db, const std::string& run_a, const std::string& run_b);
// The latest finished runs of one suite on two hosts (hostname or host id prefix); the suite is
// `suite` or, when empty, the newest suite both hosts ran. Throws std::invalid_argument otherwise.
std::pair<std::string, std::string> latest_runs_of_hosts(const storage::Database& db,
                                                         const std::string& host_a,
                                                         const std::string& host_b,
                                                         const std::string& suite);
std::string format_comparison(const Comparison& c, const std::string& format);

}  // namespace tunebench::check
