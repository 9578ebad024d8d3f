// The JSON reporter: every record whole, for scripts and for reports/ (the report reads the hosts
// comparison as `compare --hosts --format json` prints it). Numbers that are not finite are null.
#include <cmath>

#include "analysis/reporter.h"

namespace tunebench::reporters {

using nlohmann::json;

namespace {

json num(double v) { return std::isfinite(v) ? json(v) : json(); }

// ---- show

json arm_json(const analysis::ArmReport& a) {
  return {{"arm", a.arm},
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
          {"problems", a.problems}};
}

json experiment_json(const analysis::ExperimentReport& x) {
  json arms = json::array(), effects = json::array();
  for (const auto& a : x.arms) arms.push_back(arm_json(a));
  for (const auto& e : x.effects) {
    effects.push_back({{"metric", e.metric},
                       {"compared", e.compared},
                       {"ratio", num(e.effect.ratio)},
                       {"lo", num(e.effect.lo)},
                       {"hi", num(e.effect.hi)},
                       {"confidence", e.effect.confidence},
                       {"verdict", stats::to_string(e.effect.verdict)},
                       {"text", analysis::effect_text(x, e)},
                       {"note", e.effect.note}});
  }
  return {
      {"name", x.name}, {"knob", x.knob},     {"model", x.model},    {"preset", x.preset},
      {"mode", x.mode}, {"batch", x.batch},   {"claim", x.claim},    {"false_claim", x.false_claim},
      {"arms", arms},   {"effects", effects}, {"problem", x.problem}};
}

json floor_json(const storage::Database::NoiseFloor& f) {
  return {{"experiment", f.experiment},
          {"arm", f.arm},
          {"runs", f.run_uuids.size()},
          {"sigma_log", f.sigma_log},
          {"min_detectable", f.min_detectable},
          {"false_alarm", f.false_alarm},
          {"power", f.power},
          {"baseline_runs", f.baseline_runs},
          {"calibrated_at", f.calibrated_at}};
}

json finding_json(const storage::Database::Finding& f) {
  return {{"experiment", f.experiment}, {"arm", f.arm},    {"kind", f.kind},
          {"ratio", num(f.ratio)},      {"lo", num(f.lo)}, {"hi", num(f.hi)},
          {"detail", f.detail}};
}

json run_json(const analysis::RunReport& report) {
  json experiments = json::array(), floors = json::array(), findings = json::array();
  for (const auto& x : report.experiments) experiments.push_back(experiment_json(x));
  for (const auto& f : report.floors) floors.push_back(floor_json(f));
  for (const auto& f : report.findings) findings.push_back(finding_json(f));
  const auto& r = report.run.record;
  const analysis::RunState& state = report.state;
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
          {"certification", text_or_null(report.certification)},
          {"sampling", report.run.sampling},
          {"experiments", experiments},
          {"not_applicable", report.not_applicable},
          {"noise_floors", floors},
          {"findings", findings}};
}

// ---- check

json confirmation_json(const check::Confirmation& c) {
  return {{"run", c.run_uuid},
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

json benchmark_json(const check::BenchmarkCheck& b) {
  const auto& e = b.judgement.effect;
  return {{"experiment", b.experiment},
          {"arm", b.arm},
          {"status", b.status},
          {"unconfirmed", b.unconfirmed},
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
          {"confirmation", b.confirmation ? confirmation_json(*b.confirmation) : json()}};
}

json step_json(const check::StepChange& s) {
  return {{"experiment", s.experiment},
          {"arm", s.arm},
          {"first_run", s.first_run},
          {"first_started_at", s.first_started_at},
          {"ratio", s.step.ratio},
          {"lo", s.step.lo},
          {"hi", s.step.hi},
          {"p_value", s.step.p_value}};
}

json check_json(const check::Report& r) {
  json benchmarks = json::array(), steps = json::array();
  for (const auto& b : r.benchmarks) benchmarks.push_back(benchmark_json(b));
  for (const auto& s : r.steps) steps.push_back(step_json(s));
  return {{"run", r.run_uuid},
          {"baseline", r.baseline_uuids},
          {"threshold", r.threshold},
          {"false_alarm", r.false_alarm},
          {"calibrated", r.calibrated},
          {"certification", r.certification.empty() ? json() : json(r.certification)},
          {"flag_level", r.flag_level},
          {"confirmed", r.confirmed},
          {"regressed", r.regressed()},
          {"unknown", r.unknown()},
          {"unconfirmed", r.unconfirmed()},
          {"benchmarks", benchmarks},
          {"step_changes", steps},
          {"stopped_helping", r.stopped_helping},
          {"machine_changed", r.machine_changed ? json{{"last_run", r.machine_changed->last_run},
                                                       {"was", r.machine_changed->was},
                                                       {"now", r.machine_changed->now}}
                                                : json()}};
}

// ---- compare

json comparison_json(const check::Comparison& c) {
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
  return {{"run_a", c.run_a},
          {"host_a", c.host_a},
          {"run_b", c.run_b},
          {"host_b", c.host_b},
          {"rows", rows}};
}

// ---- compare --hosts

json figure_json(const hosts::Figure& f) {
  return {{"value", num(f.value)}, {"lo", num(f.lo)}, {"hi", num(f.hi)}, {"text", f.text}};
}

json ranks_json(const std::vector<hosts::Rank>& ranks, const std::vector<hosts::Host>& hosts) {
  json out = json::array();
  for (const auto& r : ranks) {
    json names = json::array();
    for (size_t h : r.hosts) names.push_back(hosts[h].name);
    out.push_back({{"rank", r.rank}, {"hosts", names}, {"text", r.text}});
  }
  return out;
}

json host_json(const hosts::Host& h) {
  return {{"given", h.given},
          {"hostname", h.hostname},
          {"name", h.name},
          {"runs", h.runs},
          {"host_id", h.host_id},
          {"run", h.run_uuid},
          {"started_at", h.started_at},
          {"cpu_model", h.cpu_model},
          {"hardware", h.hardware},
          {"hardware_class", h.hardware_class.empty() ? json() : json(h.hardware_class)},
          {"cores", h.cores},
          {"price_per_hour", num(h.price_per_hour)}};
}

json workload_json(const hosts::Comparison& c, const hosts::Workload& w) {
  json per_host = json::array(), pairs = json::array();
  for (const auto& f : w.hosts) {
    per_host.push_back({{"hostname", c.hosts[f.host].hostname},
                        {"name", c.hosts[f.host].name},
                        {"runs", f.runs},
                        {"spread", f.spread},
                        {"sd_log_run_median", num(f.sd_log)},
                        {"degrees_of_freedom", num(f.df)},
                        {"processes", f.processes},
                        {"samples", f.samples},
                        {"seconds_per_iteration", figure_json(f.seconds)},
                        {"items_per_second", figure_json(f.items_per_second)},
                        {"items_per_second_per_core", figure_json(f.per_core)},
                        {"items_per_currency_unit", figure_json(f.items_per_unit)},
                        {"cost_per_million_items", figure_json(f.cost_per_million)},
                        {"energy_joules_per_item", figure_json(f.energy_per_item)}});
  }
  for (const auto& p : w.pairs) {
    pairs.push_back({{"faster", c.hosts[p.faster].name},
                     {"slower", c.hosts[p.slower].name},
                     {"spread", p.spread},
                     {"degrees_of_freedom", num(p.df)},
                     {"runs_per_host_now", p.runs_now},
                     {"runs_per_host_to_separate", num(p.runs_to_separate)},
                     {"runs_per_host_for_target", num(p.runs_for_target)},
                     {"ratio", num(p.ratio.ratio)},
                     {"lo", num(p.ratio.lo)},
                     {"hi", num(p.ratio.hi)},
                     {"text", p.text},
                     {"distinguishable", p.distinguishable},
                     {"note", p.ratio.note},
                     {"samples_per_host_now", p.samples_now},
                     {"samples_per_host_to_separate", num(p.samples_to_separate)},
                     {"samples_per_host_for_target", num(p.samples_for_target)},
                     {"line", p.line}});
  }
  return {{"model", w.model},
          {"preset", w.preset},
          {"mode", w.mode},
          {"batch", w.batch},
          {"device", w.device},
          {"label", w.label()},
          {"experiment", w.experiment},
          {"arm", w.arm},
          {"hosts", per_host},
          {"pairs", pairs},
          {"ranking", ranks_json(w.ranking, c.hosts)},
          {"price_ranking", ranks_json(w.price_ranking, c.hosts)}};
}

json hosts_json(const hosts::Comparison& c) {
  json hosts = json::array(), workloads = json::array();
  for (const auto& h : c.hosts) hosts.push_back(host_json(h));
  for (const auto& w : c.workloads) workloads.push_back(workload_json(c, w));
  return {
      {"suite", c.suite}, {"confidence", c.confidence}, {"target_half_width", c.target_half_width},
      {"hosts", hosts},   {"workloads", workloads},     {"notes", c.notes}};
}

std::string text(const json& j) { return j.dump(2) + "\n"; }

class JsonReporter : public Reporter {
 public:
  std::string run(const analysis::RunReport& r) const override { return text(run_json(r)); }
  std::string check(const check::Report& r) const override { return text(check_json(r)); }
  std::string comparison(const check::Comparison& c) const override {
    return text(comparison_json(c));
  }
  std::string hosts(const hosts::Comparison& c) const override { return text(hosts_json(c)); }
};

}  // namespace

const Reporter& json_reporter() {
  static const JsonReporter reporter;
  return reporter;
}

}  // namespace tunebench::reporters
