// False-alarm and detection rates of tunebench check on real runs of this machine.
//
//   tunebench_detect_rates DB [--calibration C] [--baseline B] [--threshold PCT]
//
// DB holds finished A/A runs of one suite on one host and software, oldest first (make them with
// bench/detect_rates.sh). Every run that has B runs before it is checked against those B runs
// (as `tunebench check --baseline last:B` does, Bonferroni over the run's benchmarks), with noise
// floors calibrated (as `tunebench calibrate` does) from all other runs — leave one out, at least
// C of them:
//   - false alarms: the share of these A/A runs in which any benchmark is called a regression;
//   - detection at 3, 5 and 10 %: the same runs with one benchmark's samples made that much
//     slower, for each benchmark in turn: the share called a regression. The real noise of this
//     machine, with a slowdown of exactly known size injected into the data.
// Runs made with the test-only slow:PCT fault are checked by `tunebench check` itself.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <optional>

#include "analysis/check.h"
#include "analysis/detect.h"
#include "store/storage.h"

using namespace tunebench;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: tunebench_detect_rates DB [--calibration C] [--baseline B] [--threshold "
                 "PCT]\n";
    return 2;
  }
  const std::string path = argv[1];
  int calibration = 5, window = 5;
  double threshold = 0;  // check's minimum effect; 0 gives the rates of the noise tests alone
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--calibration") {
      calibration = std::stoi(argv[i + 1]);
    } else if (flag == "--baseline") {
      window = std::stoi(argv[i + 1]);
    } else if (flag == "--threshold") {
      threshold = std::stod(argv[i + 1]) / 100;
    } else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  const storage::Database db(path);
  const auto uuids = db.run_uuids();
  if (int(uuids.size()) < calibration + window + 1) {
    std::cerr << fmt::format(
        "{} has {} runs; need at least {} (calibration {} + baseline {} + 1)\n", path, uuids.size(),
        calibration + window + 1, calibration, window);
    return 2;
  }
  using Key = std::pair<std::string, std::string>;
  auto groups = [&](const std::string& uuid) {
    std::map<Key, stats::Groups> out;
    for (const auto& t : db.trials(uuid)) {
      if (t.result.status == "ok") {
        out[{t.spec.experiment, t.spec.arm}].push_back(t.result.sample_seconds);
      }
    }
    return out;
  };
  std::vector<std::map<Key, stats::Groups>> runs;
  std::vector<std::map<Key, double>> medians;
  for (const auto& u : uuids) {
    runs.push_back(groups(u));
    auto& m = medians.emplace_back();
    for (const auto& [k, g] : runs.back()) {
      std::vector<double> all;
      for (const auto& p : g) all.insert(all.end(), p.begin(), p.end());
      m[k] = stats::median(all);
    }
  }
  // The floor for checking run `skip`: the spread of every other run's median (leave one out,
  // so the checked run's own deviation never widens its floor).
  auto floor_without = [&](size_t skip, const Key& k) -> std::optional<detect::Floor> {
    std::vector<double> values;
    for (size_t r = 0; r < medians.size(); ++r) {
      if (r != skip && medians[r].count(k)) values.push_back(medians[r].at(k));
    }
    if (int(values.size()) < calibration) return std::nullopt;
    return detect::Floor{detect::sigma_of_runs(values), int(values.size())};
  };
  std::vector<double> spreads;
  for (const auto& [k, m] : medians.back()) {
    if (auto f = floor_without(medians.size(), k)) spreads.push_back(f->sigma_log);
  }

  const std::vector<double> shifts{1.03, 1.05, 1.10};
  int checked = 0, alarmed_runs = 0, benchmark_checks = 0, benchmark_alarms = 0;
  std::vector<int> detected(shifts.size(), 0);
  int detection_trials = 0;
  for (size_t i = size_t(window); i < runs.size(); ++i) {
    std::map<Key, stats::Groups> baseline;
    for (size_t b = i - size_t(window); b < i; ++b) {
      for (const auto& [k, g] : runs[b]) baseline[k].insert(baseline[k].end(), g.begin(), g.end());
    }
    detect::Options options;
    options.threshold = threshold;
    options.false_alarm = 0.01 / double(runs[i].size());
    bool any = false;
    for (const auto& [k, g] : runs[i]) {
      const auto floor = floor_without(i, k);
      if (!baseline.count(k) || !floor) continue;
      const auto j = detect::judge(baseline[k], g, window, floor, options);
      ++benchmark_checks;
      benchmark_alarms += j.status == "regression";
      any |= j.status == "regression";
      for (size_t s = 0; s < shifts.size(); ++s) {
        stats::Groups slowed = g;
        for (auto& process : slowed) {
          for (auto& v : process) v *= shifts[s];
        }
        detected[s] +=
            detect::judge(baseline[k], slowed, window, floor, options).status == "regression";
      }
      ++detection_trials;
    }
    ++checked;
    alarmed_runs += any;
  }
  fmt::print(
      "{}: {} A/A runs; each run from the {}th on checked against the {} before it, with floors "
      "from all the other runs (leave one out); threshold {:.0f} %\n",
      path, uuids.size(), window + 1, window, 100 * threshold);
  if (!spreads.empty()) {
    fmt::print("  median run-to-run spread of a benchmark: {:.1f} %\n",
               100 * std::expm1(stats::median(spreads)));
  }
  fmt::print(
      "  false alarms (A/A, 1 % per run): {} of {} runs ({:.1f} %); {} of {} benchmark checks\n",
      alarmed_runs, checked, 100.0 * alarmed_runs / std::max(checked, 1), benchmark_alarms,
      benchmark_checks);
  for (size_t s = 0; s < shifts.size(); ++s) {
    fmt::print("  detected {:.0f} % slowdowns: {} of {} ({:.0f} %)\n", 100 * (shifts[s] - 1),
               detected[s], detection_trials, 100.0 * detected[s] / std::max(detection_trials, 1));
  }
  return 0;
}
