// `tunebench check`: every benchmark (experiment × arm) of a run against a baseline window of
// earlier runs of the same suite on the same host fingerprint and software, with a test that
// knows each benchmark's own noise: the ratio of medians run/baseline with the hierarchical
// bootstrap interval (baseline trials and the run's processes as groups), and a minimum effect.
// A benchmark regressed when the whole interval lies above 1 + threshold. It also flags a knob
// whose effect helped in the latest baseline run and no longer does.
#pragma once

#include <string>
#include <vector>

#include "harness/stats.h"
#include "harness/storage.h"

namespace tunebench::check {

struct Options {
  std::string run = "latest";
  std::string baseline = "last:5";  // last:N | run:ID | label:X
  double threshold = 0.05;          // minimum slowdown that counts, as a fraction
  bool across_software = false;     // compare with other LibTorch/tunebench versions too
};

struct BenchmarkCheck {
  std::string experiment, arm;
  stats::Effect effect;  // ratio run / baseline of seconds per iteration
  std::string status;    // "regression", "improvement", "unchanged", "no baseline"
  int baseline_runs = 0;
};

struct Report {
  std::string run_uuid;
  std::vector<std::string> baseline_uuids;
  double threshold = 0;
  std::vector<BenchmarkCheck> benchmarks;
  std::vector<std::string> stopped_helping;  // "knob experiment: helps → no measurable effect"
  bool regressed() const;
};

// Throws std::invalid_argument for a bad --baseline and storage::StorageError for a bad run; a
// run without any baseline run is an error too (nothing to compare with).
Report check(const storage::Database& db, const Options& options);

// format: table, md, json or junit.
std::string format(const Report& report, const std::string& format);

}  // namespace tunebench::check
