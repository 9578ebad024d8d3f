#include "analysis/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>

#include "analysis/analysis.h"
#include "analysis/run_groups.h"
#include "core/hardware.h"

namespace tunebench::check {

bool Report::regressed() const {
  for (const auto& b : benchmarks) {
    if (b.status == "regression") return true;
  }
  return false;
}

bool Report::unknown() const {
  if (regressed()) return false;
  for (const auto& b : benchmarks) {
    if (b.status == "unknown") return true;
  }
  return false;
}

bool Report::unconfirmed() const {
  if (regressed()) return false;
  for (const auto& b : benchmarks) {
    if (b.status == "unknown" && b.unconfirmed) return true;
  }
  return false;
}

namespace {

// Step changes in each benchmark's history of run medians (this run included) that start within
// the last `options.recent` runs.
std::vector<StepChange> step_changes(const storage::Database& db,
                                     const storage::Database::StoredRun& run,
                                     const Options& options,
                                     const std::map<Key, stats::Groups>& current) {
  std::vector<StepChange> out;
  auto history = comparable_runs(db, run, options.across_software);
  if (history.size() + 1 > size_t(std::max(options.history, 6))) {
    history.erase(history.begin(), history.end() - (std::max(options.history, 6) - 1));
  }
  history.push_back(run.record.uuid);
  std::map<Key, std::vector<std::pair<std::string, double>>> series;
  for (const auto& uuid : history) {
    for (const auto& [key, groups] : groups_of(db, uuid).absolute) {
      const double m = median_of(groups);
      if (std::isfinite(m) && m > 0) series[key].emplace_back(uuid, m);
    }
  }
  for (const auto& [key, points] : series) {
    if (!current.count(key)) continue;
    std::vector<double> values;
    for (const auto& p : points) values.push_back(p.second);
    const auto step = detect::find_step(values, options.false_alarm, options.threshold);
    if (!step.found || step.index + size_t(options.recent) < values.size()) continue;
    StepChange change;
    change.experiment = key.first;
    change.arm = key.second;
    change.first_run = points[step.index].first;
    change.first_started_at = db.run(change.first_run).record.started_at;
    change.step = step;
    out.push_back(change);
  }

  return out;
}

// A knob whose effect helped in the newest baseline run and no longer does.
std::vector<std::string> stopped_helping(const storage::Database& db, const Report& report) {
  std::vector<std::string> out;
  const auto before = analysis::analyze(db, report.baseline_uuids.back());
  const auto now = analysis::analyze(db, report.run_uuid);
  for (const auto& x : now.experiments) {
    for (const auto& old : before.experiments) {
      if (old.name != x.name) continue;
      for (const auto& e : x.effects) {
        for (const auto& o : old.effects) {
          if (o.metric == e.metric && o.compared == e.compared &&
              o.effect.verdict == stats::Verdict::helps &&
              e.effect.verdict != stats::Verdict::helps) {
            out.push_back(fmt::format("{} ({} {}): {} → {}", x.name, e.metric, e.compared,
                                      stats::format_effect(o.effect),
                                      stats::format_effect(e.effect)));
          }
        }
      }
    }
  }
  return out;
}

// Both histories of the baseline window: every run's groups pooled, each run's median, and how
// many of its runs have the benchmark.
struct Baseline {
  std::map<Key, stats::Groups> absolute, relative;
  std::map<Key, int> runs_with, relative_runs_with;
  std::map<Key, std::vector<double>> run_medians, run_medians_relative;
};

Baseline pool(const storage::Database& db, const std::vector<std::string>& uuids) {
  Baseline out;
  for (const auto& uuid : uuids) {
    auto run = groups_of(db, uuid);
    for (auto& [key, groups] : run.absolute) {
      out.run_medians[key].push_back(median_of(groups));
      auto& all = out.absolute[key];
      all.insert(all.end(), groups.begin(), groups.end());
      ++out.runs_with[key];
    }
    for (auto& [key, groups] : run.relative) {
      out.run_medians_relative[key].push_back(median_of(groups));
      auto& all = out.relative[key];
      all.insert(all.end(), groups.begin(), groups.end());
      ++out.relative_runs_with[key];
    }
  }
  return out;
}

// The history a benchmark is judged on and its noise: from the calibrated floor where there is
// one, else from the baseline window's spread of run medians (at least 3 runs); the floor the
// judgement's test 2 uses is returned (basis.source says which), none with neither. The window's
// spread is the drift this host showed between the runs compared with, so an uncalibrated check
// still sets a slowdown against it, not against each run's own noise alone.
std::optional<detect::Floor> choose_basis(
    BenchmarkCheck& b, const Key& key, Baseline& baseline, bool relative_possible,
    const std::map<Key, storage::Database::NoiseFloor>& floors) {
  if (auto f = floors.find(key); f != floors.end()) {
    const auto& nf = f->second;
    const bool relative = relative_possible && std::isfinite(nf.sigma_log_relative) &&
                          nf.sigma_log_relative < nf.sigma_log;
    b.basis = {relative ? "relative" : "absolute", relative ? nf.sigma_log_relative : nf.sigma_log,
               relative ? nf.sigma_log : nf.sigma_log_relative, "calibration"};
    return detect::Floor{b.basis.sigma_log, int(nf.run_uuids.size())};
  }
  if (baseline.run_medians[key].size() >= 3) {
    // Not calibrated: the baseline window's own spread says which history is quieter. It
    // chooses the basis and sets stage 1's flag; the strict test stays the calibrated one.
    const double absolute = detect::sigma_of_runs(baseline.run_medians[key]);
    const double relative =
        relative_possible ? detect::sigma_of_runs(baseline.run_medians_relative[key]) : NAN;
    const bool use_relative = std::isfinite(relative) && relative < absolute;
    b.basis = {use_relative ? "relative" : "absolute", use_relative ? relative : absolute,
               use_relative ? absolute : relative, "baseline window"};
    if (std::isfinite(b.basis.sigma_log)) {
      return detect::Floor{b.basis.sigma_log, int(baseline.run_medians[key].size())};
    }
  }
  return std::nullopt;
}

// One benchmark of the run against its pooled baseline: the judgement, what it could detect and
// stage 1's flag.
BenchmarkCheck judge_benchmark(const Key& key, const RunGroups& current, Baseline& baseline,
                               const std::map<Key, storage::Database::NoiseFloor>& floors,
                               const detect::Options& detect_options, const Options& options) {
  BenchmarkCheck b;
  b.experiment = key.first;
  b.arm = key.second;
  auto it = baseline.absolute.find(key);
  if (it == baseline.absolute.end()) {
    b.judgement.status = "no baseline";
    b.judgement.critical = NAN;
    b.judgement.effect = stats::Effect{NAN, NAN, NAN, 0.95, 0, stats::Verdict::insufficient, ""};
    b.status = b.judgement.status;
    return b;
  }
  b.baseline_runs = baseline.runs_with[key];
  // Relative is possible when this run and every baseline run with the benchmark have it.
  const bool relative_possible =
      current.relative.count(key) && baseline.relative_runs_with[key] == b.baseline_runs;
  const std::optional<detect::Floor> floor =
      choose_basis(b, key, baseline, relative_possible, floors);
  const bool relative = b.basis.name == "relative";
  const stats::Groups& base = relative ? baseline.relative[key] : it->second;
  const stats::Groups& now = relative ? current.relative.at(key) : current.absolute.at(key);
  const bool calibrated = b.basis.source == "calibration";
  b.judgement = detect::judge(base, now, b.baseline_runs, floor, detect_options);
  if (floor && !calibrated) {
    b.judgement.why.push_back(
        fmt::format("floor from the spread of the {} baseline runs", floor->runs));
  }
  if (calibrated) {
    b.min_detectable =
        detect::min_detectable(*floor, b.baseline_runs, detect_options.false_alarm, 0.8);
  }
  // Stage 1's flag: the calibrated floor, else the window's spread, else the threshold alone.
  b.flag_ratio = detect::flag_ratio(floor, b.baseline_runs, options.flag_level, options.threshold);
  b.stage1_flagged = b.judgement.status == "regression" ||
                     detect::flag(b.judgement.effect.ratio, floor, b.baseline_runs,
                                  options.flag_level, options.threshold);
  b.flagged = options.flag_all || b.stage1_flagged;
  b.status = b.judgement.status;
  if (b.status == "regression" && !calibrated) {
    // Until stage 2 confirms it (app/confirm.h replaces the status), a slowdown judged without a
    // calibrated floor is one an alert cannot act on: exit 3, not 1.
    b.status = "unknown";
    b.unconfirmed = true;
  }
  return b;
}

}  // namespace

Report check(const storage::Database& db, const Options& options) {
  if (!(options.threshold >= 0 && options.threshold < 1)) {
    throw std::invalid_argument("--threshold must be a percentage from 0 to 99");
  }
  if (!(options.false_alarm > 0 && options.false_alarm < 0.5)) {
    throw std::invalid_argument("--false-alarm must be a percentage above 0 and below 50");
  }
  Report report;
  report.run_uuid = resolve_checked_run(db, options.run);
  report.threshold = options.threshold;
  report.false_alarm = options.false_alarm;
  const auto run = db.run(report.run_uuid);
  report.certification = run.certification;
  report.suite_name = run.record.suite_name;
  report.baseline_uuids = baseline_runs(db, run, options.baseline, options.across_software);
  if (report.baseline_uuids.empty() && options.baseline.rfind("run:", 0) != 0) {
    // Not a regression and not bad input: the history of this machine starts here.
    if (const auto previous = previous_machine_run(db, run)) {
      report.machine_changed =
          MachineChange{previous->record.uuid, hardware::describe(previous->record.host),
                        hardware::describe(run.record.host)};
      return report;
    }
  }
  if (report.baseline_uuids.empty()) {
    throw std::invalid_argument(fmt::format(
        "no baseline for run {}: no earlier finished run of suite '{}' on this host{} matches "
        "--baseline {}",
        report.run_uuid, run.record.suite_name, options.across_software ? "" : " and software",
        options.baseline));
  }
  if (!(options.flag_level > 0 && options.flag_level < 0.5)) {
    throw std::invalid_argument("--flag-level must be a percentage above 0 and below 50");
  }
  report.flag_level = options.flag_level;
  const RunGroups current = groups_of(db, report.run_uuid);
  Baseline baseline = pool(db, report.baseline_uuids);
  std::map<Key, storage::Database::NoiseFloor> floors;
  for (const auto& f : db.noise_floors(report.run_uuid)) floors[{f.experiment, f.arm}] = f;
  report.calibrated = !floors.empty();
  // --false-alarm is the chance that a night without any change raises an alarm somewhere in
  // the suite: split evenly over the benchmarks compared (Bonferroni), or a suite of 50
  // benchmarks at 1 % each would cry wolf on 40 % of quiet nights.
  size_t compared = 0;
  for (const auto& entry : current.absolute) compared += baseline.absolute.count(entry.first);
  detect::Options detect_options;
  detect_options.threshold = options.threshold;
  detect_options.false_alarm = options.false_alarm / double(std::max<size_t>(compared, 1));
  report.per_benchmark_false_alarm = detect_options.false_alarm;
  for (const auto& [key, groups] : current.absolute) {
    report.benchmarks.push_back(
        judge_benchmark(key, current, baseline, floors, detect_options, options));
  }
  report.steps = step_changes(db, run, options, current.absolute);
  report.stopped_helping = stopped_helping(db, report);
  return report;
}

std::vector<storage::Database::Finding> Report::findings() const {
  std::vector<storage::Database::Finding> out;
  for (const auto& b : benchmarks) {
    if (b.unconfirmed) {
      // Not an alert (exit 3), but kept with the run so that show and the report list it.
      const auto& e = b.judgement.effect;
      out.push_back({b.experiment, b.arm, "unconfirmed", e.ratio, e.lo, e.hi,
                     std::string(BenchmarkCheck::kUnconfirmed) + ": " + stats::format_effect(e)});
      continue;
    }
    if (b.status != "regression") continue;
    if (b.confirmation) {
      const auto& c = *b.confirmation;
      out.push_back({b.experiment, b.arm, "regression", c.ratio, c.lo, c.hi,
                     fmt::format("confirmed by a paired A/B against the last-good build {} (run "
                                 "{}): {}; against history ({}): {}",
                                 c.last_good, c.run_uuid, c.decision.why, b.basis.name,
                                 stats::format_effect(b.judgement.effect))});
      continue;
    }
    const auto& e = b.judgement.effect;
    out.push_back({b.experiment, b.arm, "regression", e.ratio, e.lo, e.hi,
                   "slower than the baseline: " + stats::format_effect(e)});
  }
  for (const auto& s : steps) {
    out.push_back(
        {s.experiment, s.arm, "step change", s.step.ratio, s.step.lo, s.step.hi,
         fmt::format("step of {:.3f}x [{:.3f}, {:.3f}] (p = {:.3f}) from run {} ({})", s.step.ratio,
                     s.step.lo, s.step.hi, s.step.p_value, s.first_run, s.first_started_at)});
  }
  for (const auto& text : stopped_helping) {
    out.push_back({text.substr(0, text.find(' ')), "", "stopped helping", NAN, NAN, NAN, text});
  }
  return out;
}

}  // namespace tunebench::check
