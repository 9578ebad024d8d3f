// The table reporter (a terminal's text) and the Markdown reporter (a CI comment or job summary).
// One implementation with a flag: the two say the same sentences in the same order and differ
// only in the table rows, the list bullets, a bold title and escaping, so two copies would have to
// be kept in step sentence by sentence. show and calibrate have the table only.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analysis/reporter.h"
#include "core/hardware.h"
#include "knobs/knobs.h"

namespace tunebench::reporters {

using nlohmann::json;

namespace {

// Text for a Markdown table cell or list item: |, <, >, *, _ and ` escaped with a backslash.
std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|' || c == '<' || c == '>' || c == '*' || c == '_' || c == '`') out += '\\';
    out += c;
  }
  return out;
}

// "4.2 %" for 0.042; "-" for NaN.
std::string format_percent(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:.1f} %", 100 * fraction) : "-";
}

std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1 << 20)); }

// show's durations: "412.0 us", "12.3 ms".
std::string duration(double seconds) {
  if (seconds < 1e-3) return fmt::format("{:.1f} us", seconds * 1e6);
  return fmt::format("{:.3g} ms", seconds * 1e3);
}

class TextReporter : public Reporter {
 public:
  explicit TextReporter(bool markdown) : md_(markdown) {}
  std::string check(const check::Report& r) const override;
  std::string comparison(const check::Comparison& c) const override;
  std::string hosts(const hosts::Comparison& c) const override;

 private:
  std::string escaped(const std::string& s) const { return md_ ? md_escape(s) : s; }
  std::string check_header(const check::Report& r) const;
  std::string check_rows(const check::Report& r) const;
  std::string check_details(const check::Report& r) const;
  std::string hosts_header(const hosts::Comparison& c, bool priced) const;
  std::string hosts_table(const std::vector<std::vector<std::string>>& rows) const;
  std::string workload(const hosts::Comparison& c, const hosts::Workload& w, bool priced) const;

  bool md_;
};

// show's text and calibrate's floors as well.
class TableReporter : public TextReporter {
 public:
  TableReporter() : TextReporter(false) {}
  std::string run(const analysis::RunReport& report) const override;
  std::string floors(const std::vector<storage::Database::NoiseFloor>& floors) const override;
};

// ---- check

std::string TextReporter::check_header(const check::Report& r) const {
  std::string out = fmt::format(
      "{}run {} against {} baseline run(s); threshold {:.0f} %; false-alarm rate {:.1f} % per run "
      "({:.2f} % per benchmark); ratio = run / baseline of the median time per iteration "
      "[95 % interval], on the basis's history (absolute: seconds; relative: seconds / the "
      "reference kernel timed beside them); σ = night-to-night sd of ln(run median) on that "
      "basis; flag = stage 1 flags beyond this ratio ({:.0f} % one-sided); floor = the noise "
      "floor's critical ratio; detectable = smallest slowdown found 80 % of the time\n",
      md_ ? "**tunebench check** " : "", r.run_uuid, r.baseline_uuids.size(), 100 * r.threshold,
      100 * r.false_alarm, 100 * r.per_benchmark_false_alarm, 100 * r.flag_level);
  if (!r.certification.empty()) out += analysis::certification_line(r.certification) + "\n";
  out += r.calibrated
             ? "noise floors: calibrated (tunebench calibrate)\n"
             : "noise floors: not calibrated on this host and software — only each "
               "run's own noise and the baseline window's spread are known; run `tunebench "
               "calibrate` for quieter alerts\n";
  out += r.confirmed ? "stage 2: every flagged benchmark confirmed by a paired A/B against the "
                       "last-good build, this night\n\n"
                     : "stage 2: not run (give --confirm-with LAST_GOOD_BUILD); the status is "
                       "stage 1's\n\n";
  return out;
}

// The table of benchmarks: ratio, basis, flag, floor, what is detectable and the status.
std::string TextReporter::check_rows(const check::Report& r) const {
  std::string out =
      md_ ? "| benchmark | arm | ratio [95 % interval] | basis (σ) | flag | floor | detectable | "
            "status |\n"
            "|---|---|---|---|---|---|---|---|\n"
          : fmt::format("{:<44} {:<10} {:<34} {:<17} {:>8} {:>8} {:>10}  {}\n", "benchmark", "arm",
                        "ratio [95 % interval]", "basis (σ)", "flag", "floor", "detectable",
                        "status");
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
    if (b.unconfirmed) status += std::string(" (") + check::BenchmarkCheck::kUnconfirmed + ")";
    out += md_ ? fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", md_escape(b.experiment),
                             md_escape(b.arm), effect, basis, flag, floor,
                             format_percent(b.min_detectable), md_escape(status))
               : fmt::format("{:<44} {:<10} {:<34} {:<17} {:>8} {:>8} {:>10}  {}\n", b.experiment,
                             b.arm, effect, basis, flag, floor, format_percent(b.min_detectable),
                             status);
  }
  return out;
}

// Stage 2's A/Bs, the step changes and the knobs that stopped helping, one line each.
std::string TextReporter::check_details(const check::Report& r) const {
  const std::string item = md_ ? "\n- " : "";
  std::string out;
  for (const auto& b : r.benchmarks) {
    if (!b.confirmation) continue;
    const auto& c = *b.confirmation;
    out += fmt::format(
        "{}A/B {} {}: this build / last-good {} = {} after {} workers ({} pairs kept, {} dropped), "
        "run {}\n",
        item, escaped(b.experiment), b.arm, c.last_good,
        std::isfinite(c.lo)
            ? fmt::format("{:.4f}x [{:.4f}, {:.4f}] ({:g} % interval: {:g} % false alarms per "
                          "run over {} A/B{} and {} look{})",
                          c.ratio, c.lo, c.hi, 100 * c.confidence, 100 * r.false_alarm, c.ab_count,
                          c.ab_count == 1 ? "" : "s", c.looks, c.looks == 1 ? "" : "s")
            : "no interval",
        c.workers, c.pairs, c.dropped, c.run_uuid);
  }
  for (const auto& s : r.steps) {
    out +=
        fmt::format("{}step change: {} {}: {:.3f}x [{:.3f}, {:.3f}] from run {} ({}), p = {:.3f}\n",
                    item, escaped(s.experiment), s.arm, s.step.ratio, s.step.lo, s.step.hi,
                    s.first_run, s.first_started_at, s.step.p_value);
  }
  for (const auto& s : r.stopped_helping)
    out += (md_ ? "\n- stopped helping: " : "stopped helping: ") + s + "\n";
  return out;
}

std::string TextReporter::check(const check::Report& r) const {
  if (r.machine_changed) {
    return fmt::format("{}run {}: {}\n", md_ ? "**tunebench check** " : "", r.run_uuid,
                       r.machine_changed->text());
  }
  return check_header(r) + check_rows(r) + check_details(r) + check_verdict(r);
}

}  // namespace

std::string check_verdict(const check::Report& r) {
  if (r.regressed()) {
    return r.confirmed ? "\nREGRESSION: confirmed by a paired A/B against the last-good build\n"
                       : "\nREGRESSION: at least one benchmark is slower than its baseline "
                         "beyond its noise and the threshold\n";
  }
  if (r.unconfirmed()) {
    return fmt::format(
        "\nUNKNOWN: slower than the baseline beyond each run's own noise and the threshold, but "
        "unconfirmed: this host and software have no calibrated noise floor and stage 2 did not "
        "run, so a slow night cannot be told from a slow build. Settle it with the same --db: "
        "`tunebench calibrate --suite SUITE_FILE --runs 5` (A/A runs of suite '{}' on this host, "
        "once per host and software; later checks then decide alone), or `tunebench check "
        "--confirm-with LAST_GOOD_BUILD` (a paired A/B against the last build that was good)\n",
        r.suite_name);
  }
  if (r.unknown()) {
    return "\nUNKNOWN: a flagged benchmark's A/B could not decide within its budget; run the "
           "check again (it adds a new A/B) or raise --confirm-budget\n";
  }
  return "\nno regression\n";
}

namespace {

// ---- compare

std::string TextReporter::comparison(const check::Comparison& c) const {
  auto ms = [](double s) { return std::isfinite(s) ? fmt::format("{:.3f} ms", 1e3 * s) : "-"; };
  std::string out = fmt::format(
      "A = run {} on {}\nB = run {} on {}\nratio = B / A of the median time per iteration "
      "[95 % interval]; below 1: B is faster\n\n",
      c.run_a, c.host_a, c.run_b, c.host_b);
  out += md_ ? "| benchmark | arm | A | B | B / A [95 % interval] |\n|---|---|---|---|---|\n"
             : fmt::format("{:<44} {:<10} {:>12} {:>12}  {}\n", "benchmark", "arm", "A", "B",
                           "B / A [95 % interval]");
  for (const auto& r : c.rows) {
    const std::string effect = !std::isfinite(r.median_a)   ? "only in B"
                               : !std::isfinite(r.median_b) ? "only in A"
                                                            : stats::format_effect(r.effect);
    out += md_ ? fmt::format("| {} | {} | {} | {} | {} |\n", md_escape(r.experiment),
                             md_escape(r.arm), ms(r.median_a), ms(r.median_b), effect)
               : fmt::format("{:<44} {:<10} {:>12} {:>12}  {}\n", r.experiment, r.arm,
                             ms(r.median_a), ms(r.median_b), effect);
  }
  return out;
}

// ---- compare --hosts

// The hosts, each with its run and machine, and the legend.
std::string TextReporter::hosts_header(const hosts::Comparison& c, bool priced) const {
  std::string out =
      fmt::format("{}hosts compared on suite '{}', each host's finished runs of it:\n",
                  md_ ? "**tunebench compare --hosts** " : "", c.suite);
  for (const auto& h : c.hosts) {
    out +=
        fmt::format("{}{} ({}): {} run{}, latest {} ({}), {}, {}\n", md_ ? "- " : "  ", h.name,
                    h.host_id.substr(0, 8), h.runs.size(), h.runs.size() == 1 ? "" : "s",
                    h.run_uuid, h.started_at,
                    h.hardware_class.empty()
                        ? fmt::format("{} cores, {} ({})", h.cores, h.cpu_model, h.hardware)
                        : h.hardware,
                    std::isfinite(h.price_per_hour) ? fmt::format("{:g} per hour", h.price_per_hour)
                                                    : std::string("no price"));
  }
  out += fmt::format(
      "{}items/s = batch / the geometric mean of the host's run medians (each run's median time "
      "per iteration of the benchmark's pooled samples), [{:g} % interval]: Student's t on the "
      "log run medians, whose spread from run to run is what separates machines (a host with one "
      "run takes the noise floor `calibrate` stored for it, or has none). Ratios between hosts: "
      "Welch's t on the log run medians. Hosts share a rank when their ratio's interval contains "
      "1 or a spread is unknown.{}\n",
      md_ ? "\n" : "", 100 * c.confidence,
      priced ? " Per price: items per currency unit at the price per hour, and the cost of a "
               "million items."
             : "");
  return out;
}

// Rows of cells, the first the heads: a Markdown table, or columns as wide as their widest cell.
std::string TextReporter::hosts_table(const std::vector<std::vector<std::string>>& rows) const {
  std::string out;
  if (md_) {
    for (size_t r = 0; r < rows.size(); ++r) {
      out += "|";
      for (const auto& cell : rows[r]) out += " " + md_escape(cell) + " |";
      out += "\n";
      if (r == 0) {
        out += "|";
        for (size_t k = 0; k < rows[r].size(); ++k) out += "---|";
        out += "\n";
      }
    }
    return out + "\n";
  }
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t k = 0; k < row.size(); ++k) width[k] = std::max(width[k], row[k].size());
  }
  for (const auto& row : rows) {
    std::string line = " ";
    for (size_t k = 0; k < row.size(); ++k) line += fmt::format(" {:<{}}", row[k], width[k]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

// One workload: each host's figures, best first, then the rankings and every pair.
std::string TextReporter::workload(const hosts::Comparison& c, const hosts::Workload& w,
                                   bool priced) const {
  std::vector<std::string> heads{"host", "items/s", "per core"};
  if (priced) heads.insert(heads.end(), {"items per currency unit", "cost per 1M items"});
  heads.insert(heads.end(), {"energy per item (J)", "runs (samples)", "run-to-run spread"});
  std::vector<std::vector<std::string>> rows{heads};
  for (const auto& r : w.ranking) {
    for (size_t h : r.hosts) {
      const auto& f = w.hosts[h];
      std::vector<std::string> row{c.hosts[h].name, f.items_per_second.text,
                                   f.per_core.text.empty() ? "-" : f.per_core.text};
      if (priced) {
        row.push_back(f.items_per_unit.text.empty() ? "no price" : f.items_per_unit.text);
        row.push_back(f.cost_per_million.text.empty() ? "no price" : f.cost_per_million.text);
      }
      row.push_back(f.energy_per_item.text);
      row.push_back(fmt::format("{} ({} samples, {} processes)", f.runs, f.samples, f.processes));
      row.push_back(f.spread == hosts::kSpreadUnknown ? "unknown (one run)" : f.spread);
      rows.push_back(row);
    }
  }
  std::string out = fmt::format("\n{}{} (benchmark {} / {})\n", md_ ? "### " : "", w.label(),
                                w.experiment, w.arm) +
                    hosts_table(rows);
  const std::string bullet = md_ ? "- " : "  ";
  std::string ranking;
  for (const auto& r : w.ranking) ranking += (ranking.empty() ? "" : "; ") + r.text;
  out += fmt::format("{}ranking by items/s: {}\n", bullet, escaped(ranking));
  if (!w.price_ranking.empty()) {
    std::string by_price;
    for (const auto& r : w.price_ranking) by_price += (by_price.empty() ? "" : "; ") + r.text;
    out += fmt::format("{}ranking by items per currency unit: {}\n", bullet, escaped(by_price));
  }
  for (const auto& p : w.pairs) out += bullet + escaped(p.line) + "\n";
  return out;
}

std::string TextReporter::hosts(const hosts::Comparison& c) const {
  bool priced = false;
  for (const auto& h : c.hosts) priced = priced || std::isfinite(h.price_per_hour);
  std::string out = hosts_header(c, priced);
  for (const auto& w : c.workloads) out += workload(c, w, priced);
  for (const auto& n : c.notes) out += (md_ ? "\n- note: " : "\nnote: ") + n + "\n";
  return out;
}

// ---- show

// The run: its state, dates, host, hardware, how quiet the host was, and the legend.
std::string run_header(const analysis::RunReport& report) {
  const auto& r = report.run.record;
  const analysis::RunState& state = report.state;
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
    // A resumed run's host state as each resume found it (run/resume.cpp).
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
  return out;
}

// One experiment: what it is, each arm's spread and evidence, its effects.
std::string experiment_text(const analysis::ExperimentReport& x) {
  std::string out =
      fmt::format("\n{}  ({} {} {}, batch {})\n", x.name, x.model, x.preset, x.mode, x.batch);
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
          a.arm, duration(a.time.median), duration(a.time.mad), 100 * a.time.cv, a.time.n,
          mib(a.peak_rss_bytes), a.page_faults_per_iteration, duration(a.probe_seconds));
    } else {
      out += fmt::format("  {:<10} no valid trial\n", a.arm);
    }
    if (a.failed || a.invalid) {
      out += fmt::format("  {:<10} {} ok, {} failed, {} invalid\n", "", a.ok, a.failed, a.invalid);
      for (const auto& p : a.problems) out += "             " + p + "\n";
    }
    out += fmt::format("  {:<10} evidence: {}\n", "",
                       knobs::summarise_evidence(json::object(), a.evidence));
  }
  for (const auto& e : x.effects) {
    out += fmt::format("  effect on {}: {}  {}\n", e.metric, analysis::effect_text(x, e),
                       x.knob == "factorial" ? "(" + e.compared + ")" : "");
    if (!e.effect.note.empty()) out += "    note: " + e.effect.note + "\n";
  }
  if (!x.problem.empty()) out += "  " + x.problem + "\n";
  return out;
}

std::string TableReporter::run(const analysis::RunReport& report) const {
  std::string out = run_header(report);
  if (!report.certification.empty())
    out += analysis::certification_line(report.certification) + "\n";
  for (const auto& x : report.experiments) out += experiment_text(x);
  if (!report.findings.empty()) {
    out += "\nfound by tunebench check:\n";
    for (const auto& f : report.findings) out += fmt::format("  {}: {}\n", f.kind, f.detail);
  }
  out += "\n" + (report.floors.empty() ? std::string("noise floors: not calibrated for this suite, "
                                                     "host and software (tunebench calibrate)\n")
                                       : floors(report.floors));
  if (!report.not_applicable.empty()) {
    out += "\nnot applicable here:\n";
    for (const auto& na : report.not_applicable) {
      out += fmt::format("  {}: {}\n", na["experiment"].get<std::string>(),
                         na["reason"].get<std::string>());
    }
  }
  return out;
}

// ---- calibrate

// Each benchmark's run-to-run spread and smallest detectable slowdown.
std::string TableReporter::floors(const std::vector<storage::Database::NoiseFloor>& floors) const {
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

}  // namespace

const Reporter& table_reporter() {
  static const TableReporter reporter;
  return reporter;
}

const Reporter& markdown_reporter() {
  static const TextReporter reporter(true);
  return reporter;
}

}  // namespace tunebench::reporters
