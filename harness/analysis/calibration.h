// `tunebench calibrate`: noise floors from repeated A/A runs — each benchmark's night-to-night
// spread and the smallest slowdown the check can detect against it. `tunebench check`
// (analysis/check.h) tests a run against these floors where the suite has them.
#pragma once

#include <string>
#include <vector>

#include "store/storage.h"

namespace tunebench::check {

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

}  // namespace tunebench::check
