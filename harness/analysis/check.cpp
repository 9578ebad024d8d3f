#include "analysis/check.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "analysis/analysis.h"
#include "core/hardware.h"

namespace tunebench::check {

using nlohmann::json;

namespace {

std::string fingerprint(const json& j) { return sha256_hex(j.dump()); }

// The software a run measured — LibTorch, its build, the compiler — without the harness's git
// revision: a nightly's history spans tunebench's own commits (a change there is what the check
// is looking for, and stage 2 compares the builds), while another LibTorch starts a new history
// unless --across-software. The noise floors are found the same way (store/calibration.cpp).
std::string stack_fingerprint(json software) {
  software.erase("git_revision");
  return fingerprint(software);
}

}  // namespace

bool same_stack(const json& a, const json& b) {
  return stack_fingerprint(a) == stack_fingerprint(b);
}

std::string resolve_checked_run(const storage::Database& db, const std::string& what) {
  if (what != "latest") return storage::resolve_run(db, what);
  const auto uuids = db.run_uuids();
  for (auto it = uuids.rbegin(); it != uuids.rend(); ++it) {
    if (db.run(*it).record.suite_name != kConfirmSuite) return *it;
  }
  throw storage::StorageError(fmt::format("{} has no runs yet (besides stage-2 A/Bs)", db.path()));
}

namespace {

bool finished(const storage::Database::StoredRun& run) {
  return run.status == "completed" || run.status == "completed with failures";
}

// Finished runs before `run` of the same suite on the same machine (hostname and hardware class,
// core/hardware.h) and software stack, oldest first.
std::vector<std::string> comparable_runs(const storage::Database& db,
                                         const storage::Database::StoredRun& run,
                                         bool across_software) {
  std::vector<std::string> out;
  for (const auto& uuid : db.run_uuids()) {
    if (uuid == run.record.uuid) break;  // only runs before this one
    const auto other = db.run(uuid);
    if (other.record.suite_name != run.record.suite_name || !finished(other)) continue;
    if (hardware::machine_id(other.record.host) != hardware::machine_id(run.record.host)) continue;
    if (!across_software &&
        stack_fingerprint(other.record.software) != stack_fingerprint(run.record.software)) {
      continue;
    }
    out.push_back(uuid);
  }
  return out;
}

// When `run` has no earlier run of its suite on its machine but its hostname had some on other
// hardware (or before the hardware was recorded): what the newest of those ran on. Empty when the
// hostname is new to the suite.
std::optional<MachineChange> machine_change(const storage::Database& db,
                                            const storage::Database::StoredRun& run) {
  std::optional<MachineChange> change;
  const std::string name = run.record.host.value("hostname", "");
  for (const auto& uuid : db.run_uuids()) {
    if (uuid == run.record.uuid) break;
    const auto other = db.run(uuid);
    if (other.record.suite_name != run.record.suite_name || !finished(other) ||
        other.record.host.value("hostname", "") != name ||
        hardware::machine_id(other.record.host) == hardware::machine_id(run.record.host)) {
      continue;
    }
    change = MachineChange{uuid, hardware::describe(other.record.host),
                           hardware::describe(run.record.host)};
  }
  return change;
}

// The baseline window: earlier runs of the same suite on the same host (and software), newest
// last, that finished.
std::vector<std::string> baseline_runs(const storage::Database& db,
                                       const storage::Database::StoredRun& run,
                                       const Options& options) {
  const std::string& spec = options.baseline;
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon),
                    value = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (colon == std::string::npos || value.empty() ||
      (kind != "last" && kind != "run" && kind != "label")) {
    throw std::invalid_argument("--baseline must be last:N, run:ID or label:X, got '" + spec + "'");
  }
  if (kind == "run") return {storage::resolve_run(db, value)};
  size_t wanted = 0;
  if (kind == "last") {
    try {
      wanted = std::stoul(value);
    } catch (const std::exception&) {
      throw std::invalid_argument("--baseline last:N needs a number, got '" + value + "'");
    }
    if (wanted == 0) throw std::invalid_argument("--baseline last:N needs N of at least 1");
  }
  std::vector<std::string> out;
  for (const auto& uuid : comparable_runs(db, run, options.across_software)) {
    if (kind == "label" && db.run(uuid).record.label != value) continue;
    out.push_back(uuid);
  }
  if (kind == "last" && out.size() > wanted) out.erase(out.begin(), out.end() - long(wanted));
  return out;
}

using Key = std::pair<std::string, std::string>;  // experiment, arm

// Each benchmark's samples of one run, both ways, from one read of its trials: absolute (seconds
// per iteration) and relative to the reference kernel timed in the same process
// (core/reference.h: a trial's samples divided by the median of its reference times). A benchmark
// is in `relative` only when every ok trial of it has reference times (runs stored before schema
// version 6 have none).
struct RunGroups {
  std::map<Key, stats::Groups> absolute, relative;
};

RunGroups groups_of(const storage::Database& db, const std::string& uuid) {
  RunGroups out;
  std::set<Key> without;
  for (const auto& t : db.trials(uuid)) {
    if (t.result.status != "ok") continue;
    const Key key{t.spec.experiment, t.spec.arm};
    out.absolute[key].push_back(t.result.sample_seconds);
    const double reference =
        t.result.reference_seconds.empty() ? NAN : stats::median(t.result.reference_seconds);
    if (!(reference > 0)) {
      without.insert(key);
      continue;
    }
    std::vector<double> relative;
    for (double seconds : t.result.sample_seconds) relative.push_back(seconds / reference);
    out.relative[key].push_back(std::move(relative));
  }
  for (const auto& key : without) out.relative.erase(key);
  return out;
}

double median_of(const stats::Groups& groups) {
  std::vector<double> all;
  for (const auto& g : groups) all.insert(all.end(), g.begin(), g.end());
  return all.empty() ? NAN : stats::median(all);
}

std::string hostname_of(const storage::Database::StoredRun& run) {
  return run.record.host.value("hostname", std::string("?"));
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|' || c == '<' || c == '>' || c == '*' || c == '_' || c == '`') out += '\\';
    out += c;
  }
  return out;
}

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
  report.baseline_uuids = baseline_runs(db, run, options);
  if (report.baseline_uuids.empty() && options.baseline.rfind("run:", 0) != 0) {
    // Not a regression and not bad input: the history of this machine starts here.
    report.machine_changed = machine_change(db, run);
    if (report.machine_changed) return report;
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
  const auto [current, current_relative] = groups_of(db, report.run_uuid);
  // Both histories of the baseline window: every run's groups pooled, and each run's median.
  std::map<Key, stats::Groups> baseline, baseline_relative;
  std::map<Key, int> baseline_runs_with, relative_runs_with;
  std::map<Key, std::vector<double>> run_medians, run_medians_relative;
  for (const auto& uuid : report.baseline_uuids) {
    auto run = groups_of(db, uuid);
    for (auto& [key, groups] : run.absolute) {
      run_medians[key].push_back(median_of(groups));
      auto& all = baseline[key];
      all.insert(all.end(), groups.begin(), groups.end());
      ++baseline_runs_with[key];
    }
    for (auto& [key, groups] : run.relative) {
      run_medians_relative[key].push_back(median_of(groups));
      auto& all = baseline_relative[key];
      all.insert(all.end(), groups.begin(), groups.end());
      ++relative_runs_with[key];
    }
  }
  std::map<Key, storage::Database::NoiseFloor> floors;
  for (const auto& f : db.noise_floors(report.run_uuid)) floors[{f.experiment, f.arm}] = f;
  report.calibrated = !floors.empty();
  // --false-alarm is the chance that a night without any change raises an alarm somewhere in
  // the suite: split evenly over the benchmarks compared (Bonferroni), or a suite of 50
  // benchmarks at 1 % each would cry wolf on 40 % of quiet nights.
  size_t compared = 0;
  for (const auto& entry : current) compared += baseline.count(entry.first);
  detect::Options detect_options;
  detect_options.threshold = options.threshold;
  detect_options.false_alarm = options.false_alarm / double(std::max<size_t>(compared, 1));
  report.per_benchmark_false_alarm = detect_options.false_alarm;
  for (const auto& [key, groups] : current) {
    BenchmarkCheck b;
    b.experiment = key.first;
    b.arm = key.second;
    auto it = baseline.find(key);
    if (it == baseline.end()) {
      b.judgement.status = "no baseline";
      b.judgement.critical = NAN;
      b.judgement.effect = stats::Effect{NAN, NAN, NAN, 0.95, 0, stats::Verdict::insufficient, ""};
      b.status = b.judgement.status;
      report.benchmarks.push_back(b);
      continue;
    }
    b.baseline_runs = baseline_runs_with[key];
    // Relative is possible when this run and every baseline run with the benchmark have it.
    const bool relative_possible =
        current_relative.count(key) && relative_runs_with[key] == b.baseline_runs;
    std::optional<detect::Floor> floor;
    if (auto f = floors.find(key); f != floors.end()) {
      const auto& nf = f->second;
      const bool relative = relative_possible && std::isfinite(nf.sigma_log_relative) &&
                            nf.sigma_log_relative < nf.sigma_log;
      b.basis = {relative ? "relative" : "absolute",
                 relative ? nf.sigma_log_relative : nf.sigma_log,
                 relative ? nf.sigma_log : nf.sigma_log_relative, "calibration"};
      floor = detect::Floor{b.basis.sigma_log, int(nf.run_uuids.size())};
    } else if (run_medians[key].size() >= 3) {
      // Not calibrated: the baseline window's own spread says which history is quieter. It
      // chooses the basis and sets stage 1's flag; the strict test stays the calibrated one.
      const double absolute = detect::sigma_of_runs(run_medians[key]);
      const double relative =
          relative_possible ? detect::sigma_of_runs(run_medians_relative[key]) : NAN;
      const bool use_relative = std::isfinite(relative) && relative < absolute;
      b.basis = {use_relative ? "relative" : "absolute", use_relative ? relative : absolute,
                 use_relative ? absolute : relative, "baseline window"};
    }
    const bool relative = b.basis.name == "relative";
    const stats::Groups& base = relative ? baseline_relative[key] : it->second;
    const stats::Groups& now = relative ? current_relative.at(key) : groups;
    b.judgement = detect::judge(base, now, b.baseline_runs, floor, detect_options);
    if (floor) {
      b.min_detectable =
          detect::min_detectable(*floor, b.baseline_runs, detect_options.false_alarm, 0.8);
    }
    // Stage 1's flag: the calibrated floor, else the window's spread, else the threshold alone.
    std::optional<detect::Floor> flag_floor = floor;
    if (!flag_floor && std::isfinite(b.basis.sigma_log)) {
      flag_floor = detect::Floor{b.basis.sigma_log, int(run_medians[key].size())};
    }
    b.flag_ratio =
        detect::flag_ratio(flag_floor, b.baseline_runs, options.flag_level, options.threshold);
    b.stage1_flagged = b.judgement.status == "regression" ||
                       detect::flag(b.judgement.effect.ratio, flag_floor, b.baseline_runs,
                                    options.flag_level, options.threshold);
    b.flagged = options.flag_all || b.stage1_flagged;
    b.status = b.judgement.status;
    report.benchmarks.push_back(b);
  }

  report.steps = step_changes(db, run, options, current);
  report.stopped_helping = stopped_helping(db, report);
  return report;
}

std::vector<storage::Database::Finding> Report::findings() const {
  std::vector<storage::Database::Finding> out;
  for (const auto& b : benchmarks) {
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

// Long (~110 lines) because it holds the four formats (json, md, junit, table) side by side, so
// that a field added to the report is added to each where the others are; each branch reads top
// to bottom.
std::string format(const Report& r, const std::string& format) {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(); };
  if (format == "json") {
    json benchmarks = json::array();
    for (const auto& b : r.benchmarks) {
      const auto& e = b.judgement.effect;
      json confirmation = nullptr;
      if (b.confirmation) {
        const auto& c = *b.confirmation;
        confirmation = {{"run", c.run_uuid},
                        {"last_good", c.last_good},
                        {"ratio", num(c.ratio)},
                        {"lo", num(c.lo)},
                        {"hi", num(c.hi)},
                        {"half_width", num(c.half_width)},
                        {"workers", c.workers},
                        {"pairs", c.pairs},
                        {"dropped", c.dropped},
                        {"confidence", c.confidence},
                        {"ab_count", c.ab_count},
                        {"looks", c.looks},
                        {"status", c.decision.status},
                        {"why", c.decision.why}};
      }
      benchmarks.push_back({{"experiment", b.experiment},
                            {"arm", b.arm},
                            {"status", b.status},
                            {"history_status", b.judgement.status},
                            {"ratio", num(e.ratio)},
                            {"lo", num(e.lo)},
                            {"hi", num(e.hi)},
                            {"basis", b.basis.name},
                            {"basis_sigma_log", num(b.basis.sigma_log)},
                            {"other_sigma_log", num(b.basis.other_sigma_log)},
                            {"basis_source", b.basis.source},
                            {"flagged", b.flagged},
                            {"stage1_flagged", b.stage1_flagged},
                            {"flag_ratio", num(b.flag_ratio)},
                            {"noise_floor_ratio", num(b.judgement.critical)},
                            {"min_detectable", num(b.min_detectable)},
                            {"baseline_runs", b.baseline_runs},
                            {"why", b.judgement.why},
                            {"note", e.note},
                            {"confirmation", confirmation}});
    }
    json steps = json::array();
    for (const auto& s : r.steps) {
      steps.push_back({{"experiment", s.experiment},
                       {"arm", s.arm},
                       {"first_run", s.first_run},
                       {"first_started_at", s.first_started_at},
                       {"ratio", s.step.ratio},
                       {"lo", s.step.lo},
                       {"hi", s.step.hi},
                       {"p_value", s.step.p_value}});
    }
    return json{{"run", r.run_uuid},
                {"baseline", r.baseline_uuids},
                {"threshold", r.threshold},
                {"false_alarm", r.false_alarm},
                {"calibrated", r.calibrated},
                {"flag_level", r.flag_level},
                {"confirmed", r.confirmed},
                {"regressed", r.regressed()},
                {"unknown", r.unknown()},
                {"benchmarks", benchmarks},
                {"step_changes", steps},
                {"stopped_helping", r.stopped_helping},
                {"machine_changed", r.machine_changed
                                        ? json{{"last_run", r.machine_changed->last_run},
                                               {"was", r.machine_changed->was},
                                               {"now", r.machine_changed->now}}
                                        : json()}}
               .dump(2) +
           "\n";
  }
  if (format == "junit") {
    int failures = 0, errors = 0;
    for (const auto& b : r.benchmarks) {
      failures += b.status == "regression";
      errors += b.status == "unknown";
    }
    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += fmt::format(
        "<testsuite name=\"tunebench check {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n",
        xml_escape(r.run_uuid), r.benchmarks.size(), failures, errors);
    if (r.machine_changed) {
      out += fmt::format(
          "  <testcase classname=\"machine\" name=\"history\"><skipped message=\"{}\"/>"
          "</testcase>\n",
          xml_escape(r.machine_changed->text()));
    }
    for (const auto& b : r.benchmarks) {
      out += fmt::format("  <testcase classname=\"{}\" name=\"{}\">", xml_escape(b.experiment),
                         xml_escape(b.arm));
      if (b.status == "regression") {
        out +=
            fmt::format("<failure message=\"{}\"/>",
                        xml_escape(b.confirmation ? "confirmed against the last-good build: " +
                                                        b.confirmation->decision.why
                                                  : "slower than the baseline: " +
                                                        stats::format_effect(b.judgement.effect)));
      } else if (b.status == "unknown") {
        out += fmt::format("<error message=\"{}\"/>",
                           xml_escape("flagged, and the A/B against the last-good build could not "
                                      "decide: " +
                                      b.confirmation->decision.why));
      } else if (b.judgement.status == "no baseline") {
        out += "<skipped message=\"no baseline\"/>";
      }
      out += "</testcase>\n";
    }
    return out + "</testsuite>\n";
  }
  if (format != "table" && format != "md") {
    throw std::invalid_argument("--format must be table, md, json or junit, got '" + format + "'");
  }
  const bool md = format == "md";
  if (r.machine_changed) {
    return fmt::format("{}run {}: {}\n", md ? "**tunebench check** " : "", r.run_uuid,
                       r.machine_changed->text());
  }
  std::string out = fmt::format(
      "{}run {} against {} baseline run(s); threshold {:.0f} %; false-alarm rate {:.1f} % per run "
      "({:.2f} % per benchmark); ratio = run / baseline of the median time per iteration "
      "[95 % interval], on the basis's history (absolute: seconds; relative: seconds / the "
      "reference kernel timed beside them); σ = night-to-night sd of ln(run median) on that "
      "basis; flag = stage 1 flags beyond this ratio ({:.0f} % one-sided); floor = the noise "
      "floor's critical ratio; detectable = smallest slowdown found 80 % of the time\n",
      md ? "**tunebench check** " : "", r.run_uuid, r.baseline_uuids.size(), 100 * r.threshold,
      100 * r.false_alarm, 100 * r.per_benchmark_false_alarm, 100 * r.flag_level);
  out += r.calibrated
             ? "noise floors: calibrated (tunebench calibrate)\n"
             : "noise floors: not calibrated on this host and software — only each "
               "run's own noise and the baseline window's spread are known; run `tunebench "
               "calibrate` for quieter alerts\n";
  out += r.confirmed ? "stage 2: every flagged benchmark confirmed by a paired A/B against the "
                       "last-good build, this night\n\n"
                     : "stage 2: not run (give --confirm-with LAST_GOOD_BUILD); the status is "
                       "stage 1's\n\n";
  if (md) {
    out +=
        "| benchmark | arm | ratio [95 % interval] | basis (σ) | flag | floor | detectable | "
        "status |\n"
        "|---|---|---|---|---|---|---|---|\n";
  } else {
    out +=
        fmt::format("{:<44} {:<10} {:<34} {:<17} {:>8} {:>8} {:>10}  {}\n", "benchmark", "arm",
                    "ratio [95 % interval]", "basis (σ)", "flag", "floor", "detectable", "status");
  }
  for (const auto& b : r.benchmarks) {
    const std::string effect =
        b.judgement.status == "no baseline" ? "-" : stats::format_effect(b.judgement.effect);
    const std::string floor =
        std::isfinite(b.judgement.critical) ? fmt::format("{:.3f}x", b.judgement.critical) : "-";
    const std::string basis =
        std::isfinite(b.basis.sigma_log)
            ? fmt::format("{} ({:.1f} %)", b.basis.name, 100 * b.basis.sigma_log)
            : b.basis.name;
    const std::string flag = std::isfinite(b.flag_ratio)
                                 ? fmt::format("{}{:.3f}x", b.flagged ? "*" : "", b.flag_ratio)
                                 : "-";
    std::string status = b.status;
    if (status == "unchanged" && !b.judgement.why.empty() && b.judgement.effect.ratio > 1) {
      status += " (" + b.judgement.why.front() + ")";
    }
    if (b.confirmation) status += ": " + b.confirmation->decision.why;
    out += md ? fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", md_escape(b.experiment),
                            md_escape(b.arm), effect, basis, flag, floor,
                            analysis::format_percent(b.min_detectable), md_escape(status))
              : fmt::format("{:<44} {:<10} {:<34} {:<17} {:>8} {:>8} {:>10}  {}\n", b.experiment,
                            b.arm, effect, basis, flag, floor,
                            analysis::format_percent(b.min_detectable), status);
  }
  for (const auto& b : r.benchmarks) {
    if (!b.confirmation) continue;
    const auto& c = *b.confirmation;
    out += fmt::format(
        "{}A/B {} {}: this build / last-good {} = {} after {} workers ({} pairs kept, {} dropped), "
        "run {}\n",
        md ? "\n- " : "", md ? md_escape(b.experiment) : b.experiment, b.arm, c.last_good,
        std::isfinite(c.lo)
            ? fmt::format("{:.4f}x [{:.4f}, {:.4f}] ({:g} % interval: {:g} % false alarms per "
                          "run over {} A/B{} and {} look{})",
                          c.ratio, c.lo, c.hi, 100 * c.confidence, 100 * r.false_alarm, c.ab_count,
                          c.ab_count == 1 ? "" : "s", c.looks, c.looks == 1 ? "" : "s")
            : "no interval",
        c.workers, c.pairs, c.dropped, c.run_uuid);
  }
  for (const auto& s : r.steps) {
    out += fmt::format(
        "{}step change: {} {}: {:.3f}x [{:.3f}, {:.3f}] from run {} ({}), p = {:.3f}\n",
        md ? "\n- " : "", md ? md_escape(s.experiment) : s.experiment, s.arm, s.step.ratio,
        s.step.lo, s.step.hi, s.first_run, s.first_started_at, s.step.p_value);
  }
  for (const auto& s : r.stopped_helping)
    out += (md ? "\n- stopped helping: " : "stopped helping: ") + s + "\n";
  if (r.regressed()) {
    out += r.confirmed ? "\nREGRESSION: confirmed by a paired A/B against the last-good build\n"
                       : "\nREGRESSION: at least one benchmark is slower than its baseline "
                         "beyond its noise and the threshold\n";
  } else if (r.unknown()) {
    out +=
        "\nUNKNOWN: a flagged benchmark's A/B could not decide within its budget; run the "
        "check again (it adds a new A/B) or raise --confirm-budget\n";
  } else {
    out += "\nno regression\n";
  }
  return out;
}

std::vector<storage::Database::NoiseFloor> calibrate(const storage::Database& db,
                                                     const std::vector<std::string>& run_uuids,
                                                     const FloorSettings& settings,
                                                     const std::string& calibrated_at) {
  if (run_uuids.size() < 3) {
    throw std::invalid_argument(fmt::format(
        "calibration needs at least 3 finished A/A runs of the suite, got {}", run_uuids.size()));
  }
  const auto first = db.run(run_uuids.front());
  // Each benchmark's run medians, absolute and relative to the reference kernel.
  std::map<Key, std::vector<double>> medians, relative_medians;
  for (const auto& uuid : run_uuids) {
    const auto r = db.run(uuid);
    if (!finished(r)) {
      throw std::invalid_argument(fmt::format("run {} is {}, not finished", uuid, r.status));
    }
    if (r.record.suite_name != first.record.suite_name ||
        fingerprint(r.record.host) != fingerprint(first.record.host) ||
        stack_fingerprint(r.record.software) != stack_fingerprint(first.record.software)) {
      throw std::invalid_argument(fmt::format(
          "run {} differs from run {} in suite, host or software (LibTorch, its build, the "
          "compiler): a noise floor is measured on one suite, host and software",
          uuid, run_uuids.front()));
    }
    const auto run = groups_of(db, uuid);
    for (const auto& [key, groups] : run.absolute) {
      const double m = median_of(groups);
      if (std::isfinite(m) && m > 0) medians[key].push_back(m);
    }
    for (const auto& [key, groups] : run.relative) {
      const double m = median_of(groups);
      if (std::isfinite(m) && m > 0) relative_medians[key].push_back(m);
    }
  }
  std::vector<storage::Database::NoiseFloor> floors;
  // The false-alarm rate is per run, split over the benchmarks as check splits it.
  const double per_benchmark = settings.false_alarm / double(std::max<size_t>(medians.size(), 1));
  for (const auto& [key, values] : medians) {
    if (values.size() < 3) continue;  // a benchmark that failed in most runs has no floor
    storage::Database::NoiseFloor f;
    f.experiment = key.first;
    f.arm = key.second;
    f.run_uuids = run_uuids;
    f.sigma_log = detect::sigma_of_runs(values);
    // Relative noise where every run that has the benchmark has its reference times too.
    if (const auto rel = relative_medians.find(key);
        rel != relative_medians.end() && rel->second.size() == values.size()) {
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

Comparison compare(const storage::Database& db, const std::string& run_a,
                   const std::string& run_b) {
  Comparison c;
  c.run_a = storage::resolve_run(db, run_a);
  c.run_b = storage::resolve_run(db, run_b);
  c.host_a = hostname_of(db.run(c.run_a));
  c.host_b = hostname_of(db.run(c.run_b));
  const auto a = groups_of(db, c.run_a).absolute, b = groups_of(db, c.run_b).absolute;
  std::set<Key> keys;
  for (const auto& [k, g] : a) keys.insert(k);
  for (const auto& [k, g] : b) keys.insert(k);
  for (const auto& key : keys) {
    Comparison::Row row;
    row.experiment = key.first;
    row.arm = key.second;
    row.effect = stats::Effect{NAN, NAN, NAN, 0.95, 0, stats::Verdict::insufficient, ""};
    const auto ia = a.find(key), ib = b.find(key);
    if (ia != a.end()) row.median_a = median_of(ia->second);
    if (ib != b.end()) row.median_b = median_of(ib->second);
    if (ia != a.end() && ib != b.end()) row.effect = stats::effect(ia->second, ib->second);
    c.rows.push_back(row);
  }
  return c;
}

std::vector<std::string> latest_runs_of_hosts(const storage::Database& db,
                                              const std::vector<std::string>& hosts,
                                              const std::string& suite) {
  // Newest first: each host's finished runs, by suite.
  std::map<std::string, std::map<std::string, std::string>> latest;  // host → suite → run
  std::map<std::string, std::vector<std::string>> suite_order;       // host → suites newest first
  std::set<std::string> hostnames;
  const auto uuids = db.run_uuids();
  for (auto it = uuids.rbegin(); it != uuids.rend(); ++it) {
    const auto r = db.run(*it);
    if (!finished(r)) continue;
    const std::string name = hostname_of(r), id = fingerprint(r.record.host);
    hostnames.insert(name);
    for (const auto& wanted : hosts) {
      const bool match = name == wanted || (wanted.size() >= 4 && id.rfind(wanted, 0) == 0);
      if (!match) continue;
      auto& by_suite = latest[wanted];
      if (!by_suite.count(r.record.suite_name)) {
        by_suite[r.record.suite_name] = *it;
        suite_order[wanted].push_back(r.record.suite_name);
      }
    }
  }
  std::string known;
  for (const auto& h : hostnames) known += (known.empty() ? "" : ", ") + h;
  std::string listed;
  for (const auto& h : hosts) listed += (listed.empty() ? "'" : ", '") + h + "'";
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (!latest.count(hosts[i])) {
      throw std::invalid_argument(
          fmt::format("no finished run on host '{}'; hosts with runs: {} (give a hostname or 4+ "
                      "characters of a host id)",
                      hosts[i], known.empty() ? "none" : known));
    }
    for (size_t j = 0; j < i; ++j) {
      if (hosts[j] == hosts[i]) {
        throw std::invalid_argument(
            fmt::format("host '{}' is named twice in {}; name each host once", hosts[i], listed));
      }
    }
  }
  std::string chosen = suite;
  if (chosen.empty()) {
    for (const auto& s : suite_order[hosts.front()]) {
      bool everywhere = true;
      for (const auto& h : hosts) everywhere = everywhere && latest[h].count(s);
      if (everywhere) {
        chosen = s;
        break;
      }
    }
    if (chosen.empty()) {
      std::string ran;
      for (const auto& h : hosts) {
        std::string suites;
        for (const auto& s : suite_order[h]) suites += (suites.empty() ? "" : ", ") + s;
        ran += fmt::format("{}'{}' ran {}", ran.empty() ? "" : "; ", h, suites);
      }
      throw std::invalid_argument(fmt::format(
          "hosts {} have no suite in common ({}); run one suite on every host", listed, ran));
    }
  }
  std::vector<std::string> runs;
  for (const auto& h : hosts) {
    if (!latest[h].count(chosen)) {
      throw std::invalid_argument(
          fmt::format("host '{}' has no finished run of suite '{}'", h, chosen));
    }
    const std::string& run = latest[h][chosen];
    for (size_t j = 0; j < runs.size(); ++j) {
      if (runs[j] == run) {
        throw std::invalid_argument(fmt::format(
            "'{}' and '{}' name the same host (run {}); name each host once", hosts[j], h, run));
      }
    }
    runs.push_back(run);
  }
  return runs;
}

std::string format_comparison(const Comparison& c, const std::string& format) {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(); };
  if (format == "json") {
    json rows = json::array();
    for (const auto& r : c.rows) {
      rows.push_back({{"experiment", r.experiment},
                      {"arm", r.arm},
                      {"median_seconds_a", num(r.median_a)},
                      {"median_seconds_b", num(r.median_b)},
                      {"ratio_b_over_a", num(r.effect.ratio)},
                      {"lo", num(r.effect.lo)},
                      {"hi", num(r.effect.hi)},
                      {"verdict", stats::to_string(r.effect.verdict)}});
    }
    return json{{"run_a", c.run_a},
                {"host_a", c.host_a},
                {"run_b", c.run_b},
                {"host_b", c.host_b},
                {"rows", rows}}
               .dump(2) +
           "\n";
  }
  if (format != "table" && format != "md") {
    throw std::invalid_argument("--format must be table, md or json, got '" + format + "'");
  }
  const bool md = format == "md";
  auto ms = [](double s) { return std::isfinite(s) ? fmt::format("{:.3f} ms", 1e3 * s) : "-"; };
  std::string out = fmt::format(
      "A = run {} on {}\nB = run {} on {}\nratio = B / A of the median time per iteration "
      "[95 % interval]; below 1: B is faster\n\n",
      c.run_a, c.host_a, c.run_b, c.host_b);
  out += md ? "| benchmark | arm | A | B | B / A [95 % interval] |\n|---|---|---|---|---|\n"
            : fmt::format("{:<44} {:<10} {:>12} {:>12}  {}\n", "benchmark", "arm", "A", "B",
                          "B / A [95 % interval]");
  for (const auto& r : c.rows) {
    const std::string effect = !std::isfinite(r.median_a)   ? "only in B"
                               : !std::isfinite(r.median_b) ? "only in A"
                                                            : stats::format_effect(r.effect);
    out += md ? fmt::format("| {} | {} | {} | {} | {} |\n", md_escape(r.experiment),
                            md_escape(r.arm), ms(r.median_a), ms(r.median_b), effect)
              : fmt::format("{:<44} {:<10} {:>12} {:>12}  {}\n", r.experiment, r.arm,
                            ms(r.median_a), ms(r.median_b), effect);
  }
  return out;
}

}  // namespace tunebench::check
