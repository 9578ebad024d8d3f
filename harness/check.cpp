#include "harness/check.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <stdexcept>

#include "harness/analysis.h"

namespace tunebench::check {

using nlohmann::json;

namespace {

std::string fingerprint(const json& j) { return sha256_hex(j.dump()); }

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
  for (const auto& uuid : db.run_uuids()) {
    if (uuid == run.record.uuid) break;  // only runs before this one
    const auto other = db.run(uuid);
    if (other.record.suite_name != run.record.suite_name) continue;
    if (other.status != "completed" && other.status != "completed with failures") continue;
    if (fingerprint(other.record.host) != fingerprint(run.record.host)) continue;
    if (!options.across_software &&
        fingerprint(other.record.software) != fingerprint(run.record.software)) {
      continue;
    }
    if (kind == "label" && other.record.label != value) continue;
    out.push_back(uuid);
  }
  if (kind == "last" && out.size() > wanted) out.erase(out.begin(), out.end() - long(wanted));
  return out;
}

using Key = std::pair<std::string, std::string>;  // experiment, arm

std::map<Key, stats::Groups> groups_of(const storage::Database& db, const std::string& uuid) {
  std::map<Key, stats::Groups> out;
  for (const auto& t : db.trials(uuid)) {
    if (t.result.status != "ok") continue;
    out[{t.spec.experiment, t.spec.arm}].push_back(t.result.sample_seconds);
  }
  return out;
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

std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|' || c == '<' || c == '>' || c == '*' || c == '_' || c == '`') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

bool Report::regressed() const {
  for (const auto& b : benchmarks) {
    if (b.status == "regression") return true;
  }
  return false;
}

Report check(const storage::Database& db, const Options& options) {
  if (!(options.threshold >= 0 && options.threshold < 1)) {
    throw std::invalid_argument("--threshold must be a percentage from 0 to 99");
  }
  Report report;
  report.run_uuid = storage::resolve_run(db, options.run);
  report.threshold = options.threshold;
  const auto run = db.run(report.run_uuid);
  report.baseline_uuids = baseline_runs(db, run, options);
  if (report.baseline_uuids.empty()) {
    throw std::invalid_argument(fmt::format(
        "no baseline for run {}: no earlier finished run of suite '{}' on this host{} matches "
        "--baseline {}",
        report.run_uuid, run.record.suite_name, options.across_software ? "" : " and software",
        options.baseline));
  }
  const auto current = groups_of(db, report.run_uuid);
  std::map<Key, stats::Groups> baseline;
  std::map<Key, int> baseline_runs_with;
  for (const auto& uuid : report.baseline_uuids) {
    for (auto& [key, groups] : groups_of(db, uuid)) {
      auto& all = baseline[key];
      all.insert(all.end(), groups.begin(), groups.end());
      ++baseline_runs_with[key];
    }
  }
  stats::EffectOptions eo;
  eo.min_effect = options.threshold;
  for (const auto& [key, groups] : current) {
    BenchmarkCheck b;
    b.experiment = key.first;
    b.arm = key.second;
    auto it = baseline.find(key);
    if (it == baseline.end()) {
      b.status = "no baseline";
      b.effect = stats::Effect{NAN, NAN, NAN, eo.confidence, 0, stats::Verdict::insufficient, ""};
    } else {
      b.baseline_runs = baseline_runs_with[key];
      b.effect = stats::effect(it->second, groups, eo);
      b.status = b.effect.verdict == stats::Verdict::hurts   ? "regression"
                 : b.effect.verdict == stats::Verdict::helps ? "improvement"
                                                             : "unchanged";
    }
    report.benchmarks.push_back(b);
  }
  // A knob whose effect helped in the newest baseline run and no longer does.
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
            report.stopped_helping.push_back(fmt::format("{} ({} {}): {} → {}", x.name, e.metric,
                                                         e.compared, stats::format_effect(o.effect),
                                                         stats::format_effect(e.effect)));
          }
        }
      }
    }
  }
  return report;
}

std::string format(const Report& r, const std::string& format) {
  if (format == "json") {
    json benchmarks = json::array();
    auto num = [](double v) { return std::isfinite(v) ? json(v) : json(); };
    for (const auto& b : r.benchmarks) {
      benchmarks.push_back({{"experiment", b.experiment},
                            {"arm", b.arm},
                            {"status", b.status},
                            {"ratio", num(b.effect.ratio)},
                            {"lo", num(b.effect.lo)},
                            {"hi", num(b.effect.hi)},
                            {"baseline_runs", b.baseline_runs},
                            {"note", b.effect.note}});
    }
    return json{{"run", r.run_uuid},        {"baseline", r.baseline_uuids},
                {"threshold", r.threshold}, {"regressed", r.regressed()},
                {"benchmarks", benchmarks}, {"stopped_helping", r.stopped_helping}}
               .dump(2) +
           "\n";
  }
  if (format == "junit") {
    int failures = 0;
    for (const auto& b : r.benchmarks) failures += b.status == "regression";
    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += fmt::format("<testsuite name=\"tunebench check {}\" tests=\"{}\" failures=\"{}\">\n",
                       xml_escape(r.run_uuid), r.benchmarks.size(), failures);
    for (const auto& b : r.benchmarks) {
      out += fmt::format("  <testcase classname=\"{}\" name=\"{}\">", xml_escape(b.experiment),
                         xml_escape(b.arm));
      if (b.status == "regression") {
        out += fmt::format("<failure message=\"{}\"/>", xml_escape("slower than the baseline: " +
                                                                   stats::format_effect(b.effect)));
      } else if (b.status == "no baseline") {
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
  std::string out = fmt::format(
      "{}run {} against {} baseline run(s); threshold {:.0f} %; ratio = run / baseline "
      "of the median time per iteration [95 % interval]\n\n",
      md ? "**tunebench check** " : "", r.run_uuid, r.baseline_uuids.size(), 100 * r.threshold);
  if (md) out += "| benchmark | arm | ratio [95 % interval] | status |\n|---|---|---|---|\n";
  for (const auto& b : r.benchmarks) {
    const std::string effect = b.status == "no baseline" ? "-" : stats::format_effect(b.effect);
    out += md ? fmt::format("| {} | {} | {} | {} |\n", md_escape(b.experiment), md_escape(b.arm),
                            effect, b.status)
              : fmt::format("{:<44} {:<12} {:<36} {}\n", b.experiment, b.arm, effect, b.status);
  }
  for (const auto& s : r.stopped_helping)
    out += (md ? "\n- stopped helping: " : "stopped helping: ") + s + "\n";
  out += r.regressed() ? "\nREGRESSION: at least one benchmark is slower than its baseline beyond "
                         "the threshold\n"
                       : "\nno regression\n";
  return out;
}

}  // namespace tunebench::check
