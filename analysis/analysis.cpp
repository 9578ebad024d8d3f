#include "analysis/analysis.h"

#include <fmt/format.h>

#include <map>

#include "knobs/knobs.h"

namespace tunebench::analysis {

using nlohmann::json;

namespace {

const std::string kTensorPeakNote =
    "peak CPU tensor memory of one step, from the allocator's reports; peak RSS below";

std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1 << 20)); }

std::string ms(double seconds) {
  if (seconds < 1e-3) return fmt::format("{:.1f} us", seconds * 1e6);
  return fmt::format("{:.3g} ms", seconds * 1e3);
}

// The evidence a reader checks first, in one line.
std::string evidence_line(const json& e) {
  if (!e.is_object() || e.empty()) return "none";
  std::vector<std::string> parts;
  if (e.contains("torch_threads"))
    parts.push_back(fmt::format("threads={}", e["torch_threads"].dump()));
  if (e.contains("env") && e["env"].contains("OMP_NUM_THREADS")) {
    parts.push_back("OMP_NUM_THREADS=" + e["env"]["OMP_NUM_THREADS"].get<std::string>());
  }
  if (e.contains("allocator")) parts.push_back("allocator=" + e["allocator"].get<std::string>());
  if (e.contains("grad_mode_in_step"))
    parts.push_back("grad_mode=" + std::string(e["grad_mode_in_step"] == true ? "on" : "off"));
  if (e.contains("grads_defined_after_zero")) {
    parts.push_back("grads_after_zero=" +
                    std::string(e["grads_defined_after_zero"] == true ? "defined" : "none"));
  }
  if (e.contains("input_channels_last")) {
    parts.push_back("channels_last=" +
                    std::string(e["input_channels_last"] == true ? "yes" : "no"));
  }
  if (e.contains("inference_mode_in_step") && e["inference_mode_in_step"] == true) {
    parts.push_back("inference_mode=on");
  }
  if (e.contains("anomaly_mode_in_step")) {
    parts.push_back("anomaly_detection=" +
                    std::string(e["anomaly_mode_in_step"] == true ? "on" : "off"));
  }
  if (e.contains("mapped_libraries")) {
    for (const auto& lib : e["mapped_libraries"]) {
      if (lib.get<std::string>().rfind("libomp", 0) == 0)
        parts.push_back("openmp=" + lib.get<std::string>());
    }
  }
  if (e.contains("model") && e["model"].is_object()) {
    for (const auto& [k, v] : e["model"].items()) {
      if (k == "conv_bias_parameters" || k == "stored_mask_buffers" || k == "vocab_rows" ||
          k == "builtin_ops" || k == "fused_attention" || k == "inplace_act") {
        parts.push_back(k + "=" + v.dump());
      }
    }
  }
  if (e.contains("cpu_affinity")) parts.push_back("cpus=" + e["cpu_affinity"].get<std::string>());
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : " ") + p;
  return out;
}

// "channels_last=on,no_grad=off" → {{"channels_last", true}, {"no_grad", false}}.
std::vector<std::pair<std::string, bool>> factors_of(const std::string& arm) {
  std::vector<std::pair<std::string, bool>> out;
  size_t start = 0;
  while (start < arm.size()) {
    size_t comma = arm.find(',', start);
    if (comma == std::string::npos) comma = arm.size();
    const std::string part = arm.substr(start, comma - start);
    const size_t eq = part.find('=');
    if (eq != std::string::npos) out.emplace_back(part.substr(0, eq), part.substr(eq + 1) == "on");
    start = comma + 1;
  }
  return out;
}

// Main effects and two-factor interactions of a 2^k factorial experiment, as contrasts of the
// cells' medians (stats::contrast): main effect of i, weights s_i / 2^(k−1); interaction of i and
// j, weights s_i·s_j / 2^(k−2), with s = +1 where the factor is on and −1 where it is off.
void add_factorial_effects(ExperimentReport& x, const std::vector<std::string>& cells,
                           std::map<std::string, stats::Groups>& groups) {
  const auto first = factors_of(cells.front());
  const size_t k = first.size();
  if (k < 2 || cells.size() != (size_t{1} << k)) return;
  std::vector<stats::Groups> arms;
  std::vector<std::vector<double>> signs;  // per cell, per factor
  for (const auto& cell : cells) {
    if (groups[cell].empty()) return;  // a cell without valid trials: no contrast
    arms.push_back(groups[cell]);
    std::vector<double> s;
    for (const auto& [name, on] : factors_of(cell)) s.push_back(on ? 1.0 : -1.0);
    signs.push_back(s);
  }
  const double main_scale = 1.0 / double(size_t{1} << (k - 1));
  const double pair_scale = 1.0 / double(size_t{1} << (k - 2));
  for (size_t i = 0; i < k; ++i) {
    std::vector<double> w;
    for (const auto& s : signs) w.push_back(s[i] * main_scale);
    x.effects.push_back({"time", "main effect of " + first[i].first, stats::contrast(arms, w)});
  }
  for (size_t i = 0; i < k; ++i) {
    for (size_t j = i + 1; j < k; ++j) {
      std::vector<double> w;
      for (const auto& s : signs) w.push_back(s[i] * s[j] * pair_scale);
      x.effects.push_back({"time", "interaction " + first[i].first + " x " + first[j].first,
                           stats::contrast(arms, w)});
    }
  }
}

}  // namespace

RunReport analyze(const storage::Database& db, const std::string& run_uuid) {
  RunReport report;
  report.run = db.run(run_uuid);
  report.not_applicable = report.run.record.suite.value("not_applicable", json::array());
  report.floors = db.noise_floors(run_uuid);
  report.findings = db.findings(run_uuid);
  const auto trials = db.trials(run_uuid);

  std::vector<std::string> order;
  std::map<std::string, std::vector<const storage::Database::StoredTrial*>> by_experiment;
  for (const auto& t : trials) {
    if (!by_experiment.count(t.spec.experiment)) order.push_back(t.spec.experiment);
    by_experiment[t.spec.experiment].push_back(&t);
  }
  for (const auto& name : order) {
    const auto& ts = by_experiment[name];
    const TrialSpec& first = ts.front()->spec;
    ExperimentReport x;
    x.name = name;
    x.knob = first.knob;
    x.model = first.model.model;
    x.preset = first.model.preset;
    x.mode = to_string(first.mode);
    x.batch = first.batch;
    if (const knobs::Knob* k = knobs::find(first.knob)) {
      x.claim = k->claim;
      x.false_claim = k->false_claim;
    }
    // Arms in first-seen order; samples grouped by process.
    std::vector<std::string> arm_order;
    std::map<std::string, stats::Groups> time_groups, memory_groups, tensor_groups;
    std::map<std::string, ArmReport> arms;
    std::map<std::string, std::vector<double>> rss, probes, faults;
    for (const auto* t : ts) {
      const std::string& arm = t->spec.arm;
      if (!arms.count(arm)) {
        arm_order.push_back(arm);
        arms[arm].arm = arm;
      }
      ArmReport& a = arms[arm];
      const auto& r = t->result;
      if (r.status == "ok") {
        ++a.ok;
        if (a.evidence.is_null()) a.evidence = r.evidence;
        time_groups[arm].push_back(r.sample_seconds);
        memory_groups[arm].push_back({double(r.peak_rss_bytes)});
        // The peak of CPU tensor memory in one step (exec_steps.h): exact where RSS is blurred by
        // LibTorch itself and the allocator's caches.
        if (r.evidence.contains("tensor_peak_bytes"))
          tensor_groups[arm].push_back({r.evidence["tensor_peak_bytes"].get<double>()});
        rss[arm].push_back(double(r.peak_rss_bytes));
        probes[arm].push_back(r.probe_seconds);
        faults[arm].push_back(r.page_faults_per_iteration);
      } else {
        (r.status == "failed" ? a.failed : a.invalid)++;
        a.problems.push_back(
            fmt::format("process {}: {}: {}", t->spec.process_index, r.status, r.error));
      }
    }
    for (const auto& arm : arm_order) {
      ArmReport& a = arms[arm];
      if (a.ok > 0) {
        std::vector<double> all;
        for (const auto& g : time_groups[arm]) all.insert(all.end(), g.begin(), g.end());
        if (!all.empty()) a.time = stats::summarize(all);
        a.peak_rss_bytes = stats::median(rss[arm]);
        a.probe_seconds = stats::median(probes[arm]);
        a.page_faults_per_iteration = stats::median(faults[arm]);
      }
      x.arms.push_back(a);
    }
    const knobs::Knob* knob = knobs::find(x.knob);
    auto add_effects = [&](const std::string& off, const std::string& on,
                           const std::string& compared) {
      if (arms[off].ok == 0 || arms[on].ok == 0) {
        x.problem =
            "no valid trial in arm " + (arms[off].ok == 0 ? off : on) + ": no effect computed";
        return;
      }
      x.effects.push_back({"time", compared, stats::effect(time_groups[off], time_groups[on])});
      if (knob && knob->memory_effect) {
        // Peak memory is the tensor peak where every trial measured it (as reports/render.py
        // does), with peak RSS beside it; RSS alone otherwise.
        if (tensor_groups[off].size() == size_t(arms[off].ok) &&
            tensor_groups[on].size() == size_t(arms[on].ok)) {
          stats::Effect tensor = stats::effect(tensor_groups[off], tensor_groups[on]);
          tensor.note = kTensorPeakNote + (tensor.note.empty() ? "" : "; " + tensor.note);
          x.effects.push_back({"peak memory", compared, tensor});
          x.effects.push_back(
              {"peak RSS", compared, stats::effect(memory_groups[off], memory_groups[on])});
        } else {
          x.effects.push_back(
              {"peak memory", compared, stats::effect(memory_groups[off], memory_groups[on])});
        }
      }
    };
    if (x.knob == "factorial") {
      const std::string base = arm_order.front();  // the all-off cell comes first
      for (size_t i = 1; i < arm_order.size(); ++i)
        add_effects(base, arm_order[i], arm_order[i] + " vs " + base);
      add_factorial_effects(x, arm_order, time_groups);
    } else if (arms.count("off") && arms.count("on")) {
      add_effects("off", "on", "on vs off");
    } else {
      x.problem = "an arm has no trials";
    }
    report.experiments.push_back(std::move(x));
  }
  return report;
}

std::string format_run(const RunReport& report) {
  const auto& r = report.run.record;
  std::string out;
  out += fmt::format("run {}  suite {}  label '{}'  {}\n", r.uuid, r.suite_name, r.label,
                     report.run.status);
  out += fmt::format("started {}  ended {}  git {}\n", r.started_at,
                     report.run.ended_at.empty() ? "-" : report.run.ended_at,
                     r.git_revision.substr(0, 12));
  out += fmt::format("host {} ({}, {} cores, {} NUMA node(s))  software {}\n",
                     r.host.value("hostname", "?"), r.host.value("cpu_model", "?"),
                     r.host.value("cores", 0), r.host.value("numa_nodes", 0),
                     r.software.value("libtorch_build", "?"));
  if (!r.host_quiet) {
    out += "host was not quiet at the start:";
    for (const auto& w : r.host_state.value("warnings", json::array()))
      out += " " + w.get<std::string>() + ";";
    out += "\n";
  }
  out +=
      "effects are ratios on/off of the median (time per iteration, peak RSS): < 1 means the knob "
      "reduces it; [95% hierarchical bootstrap interval]\n";
  for (const auto& x : report.experiments) {
    out += fmt::format("\n{}  ({} {} {}, batch {})\n", x.name, x.model, x.preset, x.mode, x.batch);
    if (x.knob == "aa") out += "  A/A control: both arms identical; expect no measurable effect\n";
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
      out += fmt::format("  {:<10} evidence: {}\n", "", evidence_line(a.evidence));
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
      "run against {} baseline runs\n",
      f0.run_uuids.size(), f0.calibrated_at, 100 * f0.power, 100 * f0.false_alarm,
      f0.baseline_runs);
  out += fmt::format("  {:<44} {:<10} {:>10} {:>12}\n", "benchmark", "arm", "spread", "detectable");
  for (const auto& f : floors) {
    out += fmt::format("  {:<44} {:<10} {:>10} {:>12}\n", f.experiment, f.arm,
                       format_percent(std::expm1(f.sigma_log)), format_percent(f.min_detectable));
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
  return {{"run", r.uuid},
          {"suite", r.suite_name},
          {"label", r.label},
          {"status", report.run.status},
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
