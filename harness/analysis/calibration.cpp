#include "analysis/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "analysis/detect.h"
#include "analysis/run_groups.h"
#include "analysis/run_selection.h"

namespace tunebench::check {

namespace {

// Each benchmark's run medians over the runs, absolute and relative to the reference kernel.
struct RunMedians {
  std::map<Key, std::vector<double>> absolute, relative;
};

// The runs' medians, after checking that they are finished A/A runs of one suite, host and
// software.
RunMedians medians_of(const storage::Database& db, const std::vector<std::string>& run_uuids) {
  const auto first = db.run(run_uuids.front());
  RunMedians out;
  for (const auto& uuid : run_uuids) {
    const auto r = db.run(uuid);
    if (!finished(r)) {
      throw std::invalid_argument(fmt::format("run {} is {}, not finished", uuid, r.status));
    }
    if (r.record.suite_name != first.record.suite_name ||
        !same_host(r.record.host, first.record.host) ||
        !same_stack(r.record.software, first.record.software)) {
      throw std::invalid_argument(fmt::format(
          "run {} differs from run {} in suite, host or software (LibTorch, its build, the "
          "compiler): a noise floor is measured on one suite, host and software",
          uuid, run_uuids.front()));
    }
    const auto run = groups_of(db, uuid);
    for (const auto& [key, groups] : run.absolute) {
      const double m = median_of(groups);
      if (std::isfinite(m) && m > 0) out.absolute[key].push_back(m);
    }
    for (const auto& [key, groups] : run.relative) {
      const double m = median_of(groups);
      if (std::isfinite(m) && m > 0) out.relative[key].push_back(m);
    }
  }
  return out;
}

}  // namespace

std::vector<storage::Database::NoiseFloor> calibrate(const storage::Database& db,
                                                     const std::vector<std::string>& run_uuids,
                                                     const FloorSettings& settings,
                                                     const std::string& calibrated_at) {
  if (run_uuids.size() < 3) {
    throw std::invalid_argument(fmt::format(
        "calibration needs at least 3 finished A/A runs of the suite, got {}", run_uuids.size()));
  }
  const RunMedians medians = medians_of(db, run_uuids);
  std::vector<storage::Database::NoiseFloor> floors;
  // The false-alarm rate is per run, split over the benchmarks as check splits it.
  const double per_benchmark =
      settings.false_alarm / double(std::max<size_t>(medians.absolute.size(), 1));
  for (const auto& [key, values] : medians.absolute) {
    if (values.size() < 3) continue;  // a benchmark that failed in most runs has no floor
    storage::Database::NoiseFloor f;
    f.experiment = key.first;
    f.arm = key.second;
    f.run_uuids = run_uuids;
    f.sigma_log = detect::sigma_of_runs(values);
    // Relative noise where every run that has the benchmark has its reference times too.
    if (const auto rel = medians.relative.find(key);
        rel != medians.relative.end() && rel->second.size() == values.size()) {
      f.sigma_log_relative = detect::sigma_of_runs(rel->second);
    }
    f.false_alarm = settings.false_alarm;
    f.power = settings.power;
    f.baseline_runs = settings.baseline_runs;
    // check uses the quieter of the two histories: so does what it can detect.
    const double sigma = std::isfinite(f.sigma_log_relative)
                             ? std::min(f.sigma_log, f.sigma_log_relative)
                             : f.sigma_log;
    f.min_detectable = detect::min_detectable({sigma, int(values.size())}, settings.baseline_runs,
                                              per_benchmark, settings.power);
    f.calibrated_at = calibrated_at;
    floors.push_back(std::move(f));
  }
  return floors;
}

}  // namespace tunebench::check
