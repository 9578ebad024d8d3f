#include "analysis/analysis.h"

#include <fmt/format.h>

#include "core/hardware.h"
#include "knobs/knobs.h"

namespace tunebench::analysis {

using nlohmann::json;

namespace {

std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1 << 20)); }

std::string ms(double seconds) {
  if (seconds < 1e-3) return fmt::format("{:.1f} us", seconds * 1e6);
  return fmt::format("{:.3g} ms", seconds * 1e3);
}

}  // namespace

RunState run_state(const storage::Database::StoredRun& run, const liveness::Here& here,
                   const std::string& db_path) {
  RunState state{run.status, run.status, "", "", ""};
  const json& record = run.orchestrator;
  if (run.status == "running") {
    const auto verdict = liveness::judge(liveness::orchestrator_from_json(record), here);
    state.detail = verdict.why;
    switch (verdict.state) {
      case liveness::State::kAlive:
        state.liveness = "alive";
        break;
      case liveness::State::kGone:
        state.liveness = "gone";
        state.status = "interrupted";
        state.shown = "interrupted (orchestrator gone)";
        break;
      case liveness::State::kElsewhere:
        state.liveness = "elsewhere";
        state.shown = verdict.why;
        state.detail.clear();
        break;
      case liveness::State::kUnrecorded:
        state.liveness = "unrecorded";
        break;
    }
  } else if (run.status == "interrupted" && record.is_object() && record.contains("gone")) {
    // Marked by a writer that found its orchestrator gone (Database::interrupt_gone_runs).
    const json& gone = record.at("gone");
    state.shown = "interrupted (orchestrator gone)";
    state.detail = fmt::format("{} (found {})", gone.value("why", "its orchestrator is gone"),
                               gone.value("found_at", "?"));
  }
  if (state.status == "interrupted")
    state.resume = liveness::resume_command(run.record.uuid, db_path);
  return state;
}

std::string format_run(const RunReport& report) {
  const auto& r = report.run.record;
  const RunState& state = report.state;
  std::string out;
  out += fmt::format("run {}  suite {}  label '{}'  {}\n", r.uuid, r.suite_name, r.label,
                     state.shown.empty() ? report.run.status : state.shown);
  if (!state.detail.empty()) out += state.detail + "\n";
  if (!state.resume.empty()) out += "resume with: " + state.resume + "\n";
  out += fmt::format("started {}  ended {}  git {}\n", r.started_at,
                     report.run.ended_at.empty() ? "-" : report.run.ended_at,
                     r.git_revision.substr(0, 12));
  out += fmt::format("host {} ({}, {} cores, {} NUMA node(s))  software {}\n",
                     r.host.value("hostname", "?"), r.host.value("cpu_model", "?"),
                     r.host.value("cores", 0), r.host.value("numa_nodes", 0),
                     r.software.value("libtorch_build", "?"));
  // A run stored before the hardware was recorded reads "hardware not recorded".
  out += hardware::recorded(r.host) ? "hardware " + hardware::describe(r.host) + "\n"
                                    : hardware::describe(r.host) + "\n";
  if (!r.host_quiet) {
    auto warnings = [](const json& state) {
      std::string said;
      for (const auto& w : state.value("warnings", json::array())) {
        if (w.is_string()) said += " " + w.get<std::string>() + ";";
      }
      return said;
    };
    const std::string at_start = warnings(r.host_state);
    if (!at_start.empty()) out += "host was not quiet at the start:" + at_start + "\n";
    // A resumed run's host state as each resume found it (run/orchestrator.cpp resume).
    for (const auto& resumed : r.host_state.value("resumed", json::array())) {
      const std::string then = warnings(resumed);
      if (!then.empty()) {
        out += fmt::format("host was not quiet when resumed at {}:{}\n", resumed.value("at", "?"),
                           then);
      }
    }
  }
  out +=
      "effects are ratios on/off of the median (time per iteration, peak RSS): < 1 means the knob "
      "reduces it; [95% interval: a hierarchical bootstrap, or for a paired experiment (both arms "
      "alternating in each worker) a t interval over its workers]\n";
  for (const auto& x : report.experiments) {
    out += fmt::format("\n{}  ({} {} {}, batch {})\n", x.name, x.model, x.preset, x.mode, x.batch);
    if (x.knob == "aa") out += "  A/A control: both arms identical; expect no effect\n";
    if (x.slowdown > 0) {
      out += fmt::format(
          "  positive control: both arms identical but for a busy-wait of {:g}% of every ON step; "
          "expect {:.2f}x inside the interval\n",
          100 * x.slowdown, 1 + x.slowdown);
    }
    if (!x.claim.empty()) out += "  claim: " + x.claim + "\n";
    if (!x.false_claim.empty()) out += "  false claim in the sources: " + x.false_claim + "\n";
    for (const auto& a : x.arms) {
      if (a.ok > 0) {
        out += fmt::format(
            "  {:<10} median {:>9} MAD {:>9} CV {:>5.1f}%  n={:<3} peak RSS {:>10}  faults/it "
            "{:>8.0f}  probe {}\n",
            a.arm, ms(a.time.median), ms(a.time.mad), 100 * a.time.cv, a.time.n,
            mib(a.peak_rss_bytes), a.page_faults_per_iteration, ms(a.probe_seconds));
      } else {
        out += fmt::format("  {:<10} no valid trial\n", a.arm);
      }
      if (a.failed || a.invalid) {
        out +=
            fmt::format("  {:<10} {} ok, {} failed, {} invalid\n", "", a.ok, a.failed, a.invalid);
        for (const auto& p : a.problems) out += "             " + p + "\n";
      }
      out += fmt::format("  {:<10} evidence: {}\n", "",
                         knobs::summarise_evidence(json::object(), a.evidence));
    }
    for (const auto& e : x.effects) {
      out += fmt::format("  effect on {}: {}  {}\n", e.metric, stats::format_effect(e.effect),
                         x.knob == "factorial" ? "(" + e.compared + ")" : "");
      if (!e.effect.note.empty()) out += "    note: " + e.effect.note + "\n";
    }
    if (!x.problem.empty()) out += "  " + x.problem + "\n";
  }
  if (!report.findings.empty()) {
    out += "\nfound by tunebench check:\n";
    for (const auto& f : report.findings) out += fmt::format("  {}: {}\n", f.kind, f.detail);
  }
  out += "\n" + (report.floors.empty() ? std::string("noise floors: not calibrated for this suite, "
                                                     "host and software (tunebench calibrate)\n")
                                       : format_floors(report.floors));
  if (!report.not_applicable.empty()) {
    out += "\nnot applicable here:\n";
    for (const auto& na : report.not_applicable) {
      out += fmt::format("  {}: {}\n", na["experiment"].get<std::string>(),
                         na["reason"].get<std::string>());
    }
  }
  return out;
}

std::string format_percent(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:.1f} %", 100 * fraction) : "-";
}

std::string format_floors(const std::vector<storage::Database::NoiseFloor>& floors) {
  if (floors.empty()) return "no noise floors\n";
  const auto& f0 = floors.front();
  std::string out = fmt::format(
      "noise floors from {} A/A runs (calibrated {}): run-to-run spread of the median, and the "
      "smallest slowdown detected with probability {:.0f} % at a {:.1f} % false-alarm rate per "
      "run against {} baseline runs, on the quieter history (absolute, or relative to the "
      "reference kernel timed beside the samples)\n",
      f0.run_uuids.size(), f0.calibrated_at, 100 * f0.power, 100 * f0.false_alarm,
      f0.baseline_runs);
  out += fmt::format("  {:<44} {:<10} {:>10} {:>10} {:>12}\n", "benchmark", "arm", "absolute",
                     "relative", "detectable");
  for (const auto& f : floors) {
    out += fmt::format("  {:<44} {:<10} {:>10} {:>10} {:>12}\n", f.experiment, f.arm,
                       format_percent(std::expm1(f.sigma_log)),
                       format_percent(std::expm1(f.sigma_log_relative)),
                       format_percent(f.min_detectable));
  }
  return out;
}

json to_json(const RunReport& report) {
  json experiments = json::array();
  for (const auto& x : report.experiments) {
    json arms = json::array(), effects = json::array();
    for (const auto& a : x.arms) {
      arms.push_back({{"arm", a.arm},
                      {"ok", a.ok},
                      {"failed", a.failed},
                      {"invalid", a.invalid},
                      {"median_seconds", a.ok ? json(a.time.median) : json()},
                      {"mad_seconds", a.ok ? json(a.time.mad) : json()},
                      {"cv", a.ok ? json(a.time.cv) : json()},
                      {"samples", a.ok ? a.time.n : 0},
                      {"peak_rss_bytes", a.peak_rss_bytes},
                      {"page_faults_per_iteration", a.page_faults_per_iteration},
                      {"probe_seconds", a.probe_seconds},
                      {"evidence", a.evidence},
                      {"problems", a.problems}});
    }
    for (const auto& e : x.effects) {
      auto num = [](double v) { return std::isfinite(v) ? json(v) : json(); };
      effects.push_back({{"metric", e.metric},
                         {"compared", e.compared},
                         {"ratio", num(e.effect.ratio)},
                         {"lo", num(e.effect.lo)},
                         {"hi", num(e.effect.hi)},
                         {"confidence", e.effect.confidence},
                         {"verdict", stats::to_string(e.effect.verdict)},
                         {"note", e.effect.note}});
    }
    experiments.push_back({{"name", x.name},
                           {"knob", x.knob},
                           {"model", x.model},
                           {"preset", x.preset},
                           {"mode", x.mode},
                           {"batch", x.batch},
                           {"claim", x.claim},
                           {"false_claim", x.false_claim},
                           {"arms", arms},
                           {"effects", effects},
                           {"problem", x.problem}});
  }
  json floors = json::array(), findings = json::array();
  for (const auto& f : report.floors) {
    floors.push_back({{"experiment", f.experiment},
                      {"arm", f.arm},
                      {"runs", f.run_uuids.size()},
                      {"sigma_log", f.sigma_log},
                      {"min_detectable", f.min_detectable},
                      {"false_alarm", f.false_alarm},
                      {"power", f.power},
                      {"baseline_runs", f.baseline_runs},
                      {"calibrated_at", f.calibrated_at}});
  }
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(); };
  for (const auto& f : report.findings) {
    findings.push_back({{"experiment", f.experiment},
                        {"arm", f.arm},
                        {"kind", f.kind},
                        {"ratio", num(f.ratio)},
                        {"lo", num(f.lo)},
                        {"hi", num(f.hi)},
                        {"detail", f.detail}});
  }
  const auto& r = report.run.record;
  const RunState& state = report.state;
  auto text_or_null = [](const std::string& s) { return s.empty() ? json() : json(s); };
  return {{"run", r.uuid},
          {"suite", r.suite_name},
          {"label", r.label},
          {"status", state.status.empty() ? report.run.status : state.status},
          {"stored_status", report.run.status},
          {"orchestrator", report.run.orchestrator},
          {"liveness", text_or_null(state.liveness)},
          {"state_detail", text_or_null(state.detail)},
          {"resume", text_or_null(state.resume)},
          {"started_at", r.started_at},
          {"ended_at", report.run.ended_at},
          {"host", r.host},
          {"software", r.software},
          {"host_state", r.host_state},
          {"experiments", experiments},
          {"not_applicable", report.not_applicable},
          {"noise_floors", floors},
          {"findings", findings}};
}

}  // namespace tunebench::analysis
