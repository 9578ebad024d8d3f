#include "analysis/effects.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "analysis/paired.h"
#include "knobs/knobs.h"

namespace tunebench::analysis {

using nlohmann::json;
using Stored = storage::Database;

namespace {

const std::string kTensorPeakNote =
    "peak CPU tensor memory of one step, from the allocator's reports; peak RSS below";
const std::string kDevicePeakNote =
    "peak of the CUDA caching allocator's allocated bytes over the measured region";
const std::string kDeviceReservedNote =
    "peak of the bytes the CUDA caching allocator reserved from the driver over the measured "
    "region (emptyCache() returns reserved memory; allocated bytes never show it)";

// Whether the knob's memory effect on a device is the reserved peak (Knob::reserved_device_memory).
bool reserved_memory(const std::string& knob) {
  const knobs::Knob* k = knobs::find(knob);
  return k != nullptr && k->reserved_device_memory;
}

// The device memory a CUDA trial's memory effect compares: the reserved peak for a knob whose row
// says so (empty_cache), the allocated peak otherwise; nullopt for a trial without a device.
std::optional<double> device_memory(const std::string& knob, const TrialResult& r) {
  if (r.device_peak_bytes < 0) return std::nullopt;
  if (reserved_memory(knob)) {
    const auto reserved = r.evidence.find("device_reserved_peak_bytes");
    if (reserved == r.evidence.end() || !reserved->is_number()) return std::nullopt;
    return reserved->get<double>();
  }
  return double(r.device_peak_bytes);
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

// One experiment's ok samples, by arm, grouped by process; a paired experiment's also by worker
// (process_index), with the arms of each worker that were ok.
struct Samples {
  std::map<std::string, stats::Groups> time, memory, tensor, device;
  std::map<std::string, std::vector<double>> rss, probes, faults, ips, trial_medians;
  std::map<int, std::vector<PairedSample>> paired;
  std::map<int, int> paired_ok_arms;
  bool is_paired = false;
  bool resident = false;  // the pairs' arms ran in two resident processes (run/resident.h)
};

// An ok arm of a paired worker: its samples join the worker's (process_index).
void add_paired_arm(std::map<int, std::vector<PairedSample>>& paired, std::map<int, int>& ok_arms,
                    const storage::Database::StoredTrial& t) {
  auto& worker = paired[t.spec.process_index];
  worker.insert(worker.end(), t.result.paired_samples.begin(), t.result.paired_samples.end());
  ++ok_arms[t.spec.process_index];
}

void add_trial(ExperimentReport& x, std::map<std::string, size_t>& arm_index, Samples& s,
               const storage::Database::StoredTrial& t) {
  const std::string& arm = t.spec.arm;
  if (!arm_index.count(arm)) {
    arm_index[arm] = x.arms.size();
    x.arms.push_back({});
    x.arms.back().arm = arm;
  }
  ArmReport& a = x.arms[arm_index[arm]];
  const auto& r = t.result;
  if (r.status != "ok") {
    (r.status == "failed" ? a.failed : a.invalid)++;
    a.problems.push_back(
        fmt::format("process {}: {}: {}", t.spec.process_index, r.status, r.error));
    return;
  }
  ++a.ok;
  if (a.evidence.is_null()) a.evidence = r.evidence;
  if (t.spec.pairing.paired()) {
    s.is_paired = true;
    const auto& paired = r.evidence.contains("paired") ? r.evidence["paired"] : nlohmann::json{};
    s.resident = s.resident || (paired.is_object() && paired.value("processes", 1) == 2);
    add_paired_arm(s.paired, s.paired_ok_arms, t);
  }
  s.time[arm].push_back(r.sample_seconds);
  s.memory[arm].push_back({double(r.peak_rss_bytes)});
  // The peak of CPU tensor memory in one step (worker/actions/execution.h): exact where RSS is
  // blurred by LibTorch itself and the allocator's caches.
  if (r.evidence.contains("tensor_peak_bytes"))
    s.tensor[arm].push_back({r.evidence["tensor_peak_bytes"].get<double>()});
  if (const auto bytes = device_memory(x.knob, r)) s.device[arm].push_back({*bytes});
  s.rss[arm].push_back(double(r.peak_rss_bytes));
  s.probes[arm].push_back(r.probe_seconds);
  s.faults[arm].push_back(r.page_faults_per_iteration);
  s.ips[arm].push_back(r.items_per_second);
  if (!r.sample_seconds.empty()) s.trial_medians[arm].push_back(stats::median(r.sample_seconds));
}

void summarise_arms(ExperimentReport& x, Samples& s) {
  for (ArmReport& a : x.arms) {
    if (a.ok == 0) continue;
    std::vector<double> all;
    for (const auto& g : s.time[a.arm]) all.insert(all.end(), g.begin(), g.end());
    if (!all.empty()) a.time = stats::summarize(all);
    a.peak_rss_bytes = stats::median(s.rss[a.arm]);
    a.probe_seconds = stats::median(s.probes[a.arm]);
    a.page_faults_per_iteration = stats::median(s.faults[a.arm]);
    a.items_per_second = stats::median(s.ips[a.arm]);
    const auto& medians = s.trial_medians[a.arm];
    if (!medians.empty()) {
      a.trial_median_seconds = stats::median(medians);
      a.trial_median_low_seconds = *std::min_element(medians.begin(), medians.end());
      a.trial_median_high_seconds = *std::max_element(medians.begin(), medians.end());
    }
  }
}

const ArmReport* find_arm(const ExperimentReport& x, const std::string& arm) {
  for (const auto& a : x.arms) {
    if (a.arm == arm) return &a;
  }
  return nullptr;
}

// The workers of a paired experiment whose two arms were both ok, each worker's samples back in
// the order taken (OFF's samples, then ON's, sorted by block and position).
std::vector<std::vector<PairedSample>> paired_workers(
    const std::map<int, std::vector<PairedSample>>& paired, const std::map<int, int>& ok_arms) {
  std::vector<std::vector<PairedSample>> workers;
  for (const auto& [worker, samples] : paired) {
    if (ok_arms.at(worker) != 2) continue;
    workers.push_back(samples);
    std::sort(workers.back().begin(), workers.back().end(),
              [](const PairedSample& a, const PairedSample& b) {
                return std::tie(a.block, a.position) < std::tie(b.block, b.position);
              });
  }
  return workers;
}

// The host's CPU pressure while each arm sampled (the mean of its samples' shares of wall time in
// which some task waited for a CPU), as a confounder beside the effect: "; host CPU pressure
// while sampling: off 0.4%, on 12.0% of the time". Empty where the samples have none (a kernel
// without pressure accounting, samples stored before schema version 5).
std::string pressure_note(const std::map<int, std::vector<PairedSample>>& paired) {
  std::vector<double> arms[2];
  for (const auto& [worker, samples] : paired) {
    for (const PairedSample& sample : samples) {
      if (sample.cpu_pressure >= 0) arms[sample.on ? 1 : 0].push_back(sample.cpu_pressure);
    }
  }
  if (arms[0].empty() || arms[1].empty()) return "";
  return fmt::format("; host CPU pressure while sampling: off {:.1f}%, on {:.1f}% of the time",
                     100 * stats::summarize(arms[0]).mean, 100 * stats::summarize(arms[1]).mean);
}

// A paired experiment's time effect (analysis/paired.h): within each worker whose two arms were
// both ok, the log ratios of its adjacent OFF/ON blocks; across workers, a t interval.
stats::Effect paired_time_effect(const Samples& s) {
  const stats::paired::Options options;
  const auto workers = paired_workers(s.paired, s.paired_ok_arms);
  const stats::paired::CarryOver carry = stats::paired::carry_over(workers, options.confidence);
  const stats::paired::Effect p = stats::paired::estimate_guarded(workers, carry, options);
  stats::Effect e{p.ratio, p.lo, p.hi, options.confidence, 0, p.verdict, "", options.equivalence};
  e.note = fmt::format(
      "paired: {} {}, {} pairs of blocks kept, {} dropped as contaminated; {} differ by {:.1f}% "
      "(sd), pairs within one by {:.1f}%",
      p.workers, s.resident ? "resident process pairs" : "workers", p.pairs, p.dropped,
      s.resident ? "process pairs" : "workers", 100 * p.between_worker_sd,
      100 * p.within_worker_sd);
  e.note += "; " + carry.text +
            (p.discard > 0 ? ": the first sample of every block dropped"
             : carry.shows ? ": blocks of one sample, nothing to drop (the estimate may carry it)"
                           : ": every sample kept");
  e.note += pressure_note(s.paired);
  if (std::isfinite(p.half_width) && p.half_width > options.target &&
      p.verdict != stats::Verdict::not_precise) {
    e.note += fmt::format("; ±{:.1f}%, wider than the ±{:g}% target", 100 * p.half_width,
                          100 * options.target);
  }
  return e;
}

// A bootstrap interval of arms measured in processes of their own that is wider than the paired
// design's ±2 % target says why it is.
stats::Effect explained_width(stats::Effect e) {
  const stats::paired::Options paired;
  if (!std::isfinite(e.lo) || !std::isfinite(e.hi) || e.lo <= 0) return e;
  const double half_width = std::sqrt(e.hi / e.lo) - 1;
  if (half_width > paired.target) {
    e.note += fmt::format(
        "{}±{:.1f}%, wider than the ±{:g}% target: the arms ran in separate processes, whose "
        "differences this interval includes (paired measurement alternates arms inside each "
        "worker only for two arms whose knobs switch inside a process)",
        e.note.empty() ? "" : "; ", 100 * half_width, 100 * paired.target);
  }
  return e;
}

stats::Effect separate_time_effect(Samples& s, const std::string& off, const std::string& on) {
  return explained_width(stats::effect(s.time[off], s.time[on]));
}

// A confounder beside a time effect: when the arms' page faults per step differ by
// more than 2× (and the larger is at least kFaultsWorthNaming), part of the effect is the
// allocator's work — glibc returning freed memory to the system and faulting it in again —
// rather than the knob's own. The note says so and how to separate the two.
constexpr double kFaultsWorthNaming = 1000;

void note_allocator_confounder(const ArmReport& off, const ArmReport& on, stats::Effect& e) {
  const double f_off = off.page_faults_per_iteration, f_on = on.page_faults_per_iteration;
  const double larger = std::max(f_off, f_on), smaller = std::min(f_off, f_on);
  if (!(larger >= kFaultsWorthNaming) || larger <= 2 * smaller) return;
  e.note += fmt::format(
      "{}page faults per step differ {}: off {:.0f}, on {:.0f}; the effect runs partly through "
      "the allocator (freed memory returned and faulted in again): malloc_tunables or one "
      "allocator in both arms' settings separates it",
      e.note.empty() ? "" : "; ",
      smaller > 0 ? fmt::format("{:.1f}x", larger / smaller) : std::string("by more than 2x"),
      f_off, f_on);
}

// An arm that was compiled before it ran (the compile knob's evidence: compile_seconds) pays the
// compilation once: the note says after how many steps the time saved per step has paid it back,
// with the range the time effect's interval gives (the OFF arm's median step times 1 − ratio).
void note_break_even(const ArmReport& off, const ArmReport& on, stats::Effect& e) {
  const nlohmann::json* compiled = nullptr;
  for (const auto& [key, value] : on.evidence.items()) {
    if (value.is_object() && value.contains("compile_seconds")) compiled = &value;
  }
  if (!compiled || !(*compiled)["compile_seconds"].is_number()) return;
  const double seconds = (*compiled)["compile_seconds"].get<double>();
  const double step = off.time.median;
  if (!(seconds > 0) || !(step > 0) || !std::isfinite(e.ratio)) return;
  auto steps = [&](double ratio) {
    return ratio < 1 ? fmt::format("{:.0f}", std::ceil(seconds / (step * (1 - ratio))))
                     : std::string("never");
  };
  std::string said = fmt::format("compiled in {:.1f} s", seconds);
  if (compiled->contains("package_bytes") && compiled->contains("kernels")) {
    said += fmt::format(" (package {:.1f} MB, {} kernels)",
                        (*compiled)["package_bytes"].get<double>() / 1e6,
                        (*compiled)["kernels"].dump());
  }
  if (e.ratio >= 1) {
    said += ": it never pays for itself here, the compiled model is not faster";
  } else if (std::isfinite(e.lo) && std::isfinite(e.hi)) {
    said += fmt::format(": it pays for itself after {} steps [{}, {}]", steps(e.ratio), steps(e.lo),
                        steps(e.hi));
  } else {
    said += fmt::format(": it pays for itself after {} steps (no interval)", steps(e.ratio));
  }
  e.note = said + (e.note.empty() ? "" : "; " + e.note);
}

// The effects of switching from arm `off` to arm `on`: time, and peak memory for memory knobs.
void add_effects(ExperimentReport& x, Samples& s, const std::string& off, const std::string& on,
                 const std::string& compared) {
  const ArmReport& a_off = *find_arm(x, off);
  const ArmReport& a_on = *find_arm(x, on);
  if (a_off.ok == 0 || a_on.ok == 0) {
    x.problem = "no valid trial in arm " + (a_off.ok == 0 ? off : on) + ": no effect computed";
    return;
  }
  x.effects.push_back(
      {"time", compared, s.is_paired ? paired_time_effect(s) : separate_time_effect(s, off, on)});
  note_allocator_confounder(a_off, a_on, x.effects.back().effect);
  note_break_even(a_off, a_on, x.effects.back().effect);
  const knobs::Knob* knob = knobs::find(x.knob);
  if (!knob || !knob->memory_effect) return;
  // On a GPU, peak memory is the device's (the host's tensor peak and RSS say nothing about it).
  // Both arms of a paired worker share one process and so one device peak: no effect there.
  if (s.device[off].size() == size_t(a_off.ok) && s.device[on].size() == size_t(a_on.ok)) {
    if (s.is_paired) return;
    stats::Effect device = stats::effect(s.device[off], s.device[on]);
    const std::string& what = reserved_memory(x.knob) ? kDeviceReservedNote : kDevicePeakNote;
    device.note = what + (device.note.empty() ? "" : "; " + device.note);
    x.effects.push_back({"peak memory", compared, device});
    return;
  }
  // Peak memory is the tensor peak where every trial measured it, with peak RSS beside it; RSS
  // alone otherwise.
  if (s.tensor[off].size() == size_t(a_off.ok) && s.tensor[on].size() == size_t(a_on.ok)) {
    stats::Effect tensor = stats::effect(s.tensor[off], s.tensor[on]);
    tensor.note = kTensorPeakNote + (tensor.note.empty() ? "" : "; " + tensor.note);
    x.effects.push_back({"peak memory", compared, tensor});
    // Both arms of a paired worker share one process and so one peak RSS: no effect there.
    if (!s.is_paired)
      x.effects.push_back({"peak RSS", compared, stats::effect(s.memory[off], s.memory[on])});
  } else if (!s.is_paired) {
    x.effects.push_back({"peak memory", compared, stats::effect(s.memory[off], s.memory[on])});
  }
}

// A positive control's time effect says whether it found the slowdown built into its ON arm:
// whether its interval covers the truth, and whether it excludes 1 (detected).
void check_positive_control(ExperimentReport& x) {
  if (x.slowdown <= 0) return;
  for (NamedEffect& e : x.effects) {
    if (e.metric != "time" || !std::isfinite(e.effect.lo) || !std::isfinite(e.effect.hi)) continue;
    const double truth = 1 + x.slowdown;
    const bool covered = e.effect.lo <= truth && truth <= e.effect.hi;
    const bool detected = e.effect.lo > 1;
    const std::string said = fmt::format(
        "positive control: the ON arm is {:g}% slower by construction ({:.2f}x); the interval {} "
        "it and {}",
        100 * x.slowdown, truth, covered ? "covers" : "MISSES",
        detected ? "excludes 1 (detected)" : "includes 1 (missed)");
    e.effect.note = said + (e.effect.note.empty() ? "" : "; " + e.effect.note);
  }
}

void compute_effects(ExperimentReport& x, Samples& s) {
  if (x.knob == "factorial") {
    const std::string base = x.arms.front().arm;  // the all-off cell comes first
    std::vector<std::string> cells;
    std::vector<stats::Groups> groups;
    for (const auto& a : x.arms) {
      if (a.arm != base) add_effects(x, s, base, a.arm, a.arm + " vs " + base);
      cells.push_back(a.arm);
      groups.push_back(s.time[a.arm]);
    }
    for (auto& e : factorial_effects(cells, groups)) {
      e.effect = explained_width(e.effect);
      x.effects.push_back(std::move(e));
    }
  } else if (find_arm(x, "off") && find_arm(x, "on")) {
    add_effects(x, s, "off", "on", "on vs off");
  } else {
    x.problem = "an arm has no trials";
  }
}

// The run's experiments and arms from its trials (first-seen order), with counts, evidence and
// problems; with `numbers`, also each arm's summary and the effects.
RunReport collect(const storage::Database& db, const std::string& run_uuid, bool numbers) {
  RunReport report;
  report.run = db.run(run_uuid);
  report.not_applicable = report.run.record.suite.value("not_applicable", json::array());
  report.floors = db.noise_floors(run_uuid);
  report.findings = db.findings(run_uuid);
  std::map<std::string, size_t> experiment_index;
  std::vector<std::map<std::string, size_t>> arm_index;
  std::vector<Samples> samples;
  for (const auto& t : db.measured_trials(run_uuid)) {
    if (!experiment_index.count(t.spec.experiment)) {
      experiment_index[t.spec.experiment] = report.experiments.size();
      ExperimentReport x;
      x.name = t.spec.experiment;
      x.knob = t.spec.knob;
      x.model = t.spec.model.model;
      x.preset = t.spec.model.preset;
      x.mode = to_string(t.spec.mode);
      x.batch = t.spec.batch;
      if (const knobs::Knob* k = knobs::find(t.spec.knob)) {
        x.claim = k->claim;
        x.false_claim = k->false_claim;
      }
      report.experiments.push_back(std::move(x));
      arm_index.emplace_back();
      samples.emplace_back();
    }
    const size_t i = experiment_index[t.spec.experiment];
    if (t.spec.knob == knobs::kPositiveControl && t.spec.arm == "on")
      report.experiments[i].slowdown = knobs::slowdown_fraction(t.spec.settings);
    add_trial(report.experiments[i], arm_index[i], samples[i], t);
  }
  if (numbers) {
    for (size_t i = 0; i < report.experiments.size(); ++i) {
      summarise_arms(report.experiments[i], samples[i]);
      compute_effects(report.experiments[i], samples[i]);
      check_positive_control(report.experiments[i]);
    }
  }
  return report;
}

std::string kind_of(const std::string& compared) {
  if (compared.rfind("main effect of ", 0) == 0) return "main effect";
  if (compared.rfind("interaction ", 0) == 0) return "interaction";
  return "effect";
}

double nan_unless(bool ok, double value) { return ok ? value : NAN; }

// Samples the statistics refuse (an off arm whose median is not positive) must not stop a run
// from finishing or a file from opening: such a run keeps no stored numbers, and show computes
// them on the fly and says what is wrong, as it did before numbers were stored.
void store_writer(storage::Database& db, const std::string& run_uuid) {
  try {
    store_effects(db, run_uuid);
  } catch (const std::invalid_argument&) {
  }
}

// The database computes effects through this writer wherever a run becomes final.
[[maybe_unused]] const bool kRegistered = [] {
  storage::Database::set_effects_writer(&store_writer);
  return true;
}();

}  // namespace

namespace {

// The workers of paired experiment `experiment` whose two arms are both ok, from stored trials.
std::vector<std::vector<PairedSample>> experiment_workers(
    const std::vector<Stored::StoredTrial>& trials, const std::string& experiment) {
  std::map<int, std::vector<PairedSample>> paired;
  std::map<int, int> ok_arms;
  for (const auto& t : trials) {
    if (t.spec.experiment == experiment && t.spec.pairing.paired() && t.result.status == "ok")
      add_paired_arm(paired, ok_arms, t);
  }
  return paired_workers(paired, ok_arms);
}

}  // namespace

stats::paired::Effect paired_time_estimate(const std::vector<Stored::StoredTrial>& trials,
                                           const std::string& experiment,
                                           const stats::paired::Options& options) {
  const auto workers = experiment_workers(trials, experiment);
  return stats::paired::estimate_guarded(
      workers, stats::paired::carry_over(workers, options.confidence), options);
}

stats::paired::CarryOver paired_carry_over(const std::vector<Stored::StoredTrial>& trials,
                                           const std::string& experiment) {
  return stats::paired::carry_over(experiment_workers(trials, experiment));
}

std::vector<NamedEffect> factorial_effects(const std::vector<std::string>& cells,
                                           const std::vector<stats::Groups>& groups) {
  std::vector<NamedEffect> out;
  if (cells.empty() || cells.size() != groups.size()) return out;
  const auto first = factors_of(cells.front());
  const size_t k = first.size();
  if (k < 2 || cells.size() != (size_t{1} << k)) return out;
  std::vector<std::vector<double>> signs;  // per cell, per factor
  for (size_t c = 0; c < cells.size(); ++c) {
    if (groups[c].empty()) return {};  // a cell without valid trials: no contrast
    std::vector<double> s;
    for (const auto& [name, on] : factors_of(cells[c])) s.push_back(on ? 1.0 : -1.0);
    if (s.size() != k) return {};
    signs.push_back(s);
  }
  const double main_scale = 1.0 / double(size_t{1} << (k - 1));
  const double pair_scale = 1.0 / double(size_t{1} << (k - 2));
  for (size_t i = 0; i < k; ++i) {
    std::vector<double> w;
    for (const auto& s : signs) w.push_back(s[i] * main_scale);
    out.push_back({"time", "main effect of " + first[i].first, stats::contrast(groups, w)});
  }
  for (size_t i = 0; i < k; ++i) {
    for (size_t j = i + 1; j < k; ++j) {
      std::vector<double> w;
      for (const auto& s : signs) w.push_back(s[i] * s[j] * pair_scale);
      out.push_back({"time", "interaction " + first[i].first + " x " + first[j].first,
                     stats::contrast(groups, w)});
    }
  }
  return out;
}

std::string certify(const RunReport& report) {
  std::vector<std::string> held, failed;
  for (const auto& x : report.experiments) {
    if (!is_control(x)) continue;
    const bool aa = x.knob == "aa";
    const std::string what =
        aa ? "A/A " + x.name : fmt::format("+{:g}% control {}", 100 * x.slowdown, x.name);
    const NamedEffect* time = nullptr;
    for (const auto& e : x.effects)
      if (e.metric == "time") time = &e;
    const bool interval = time && std::isfinite(time->effect.lo) &&
                          std::isfinite(time->effect.hi) && time->effect.lo > 0;
    if (!interval) {
      failed.push_back(what + " has no interval");
      continue;
    }
    const stats::Effect& e = time->effect;
    const double width = half_width(e);
    const std::string shown =
        fmt::format("{:.3f}x [{:.3f}, {:.3f}] ±{:.1f}%", e.ratio, e.lo, e.hi, 100 * width);
    if (aa && !(e.lo <= 1 && 1 <= e.hi)) {
      failed.push_back(fmt::format("{} {} shows an effect: the host was noisy", what, shown));
    } else if (aa && width > kCertifiedWidth) {
      failed.push_back(
          fmt::format("{} {} is wider than ±{:g}%", what, shown, 100 * kCertifiedWidth));
    } else if (!aa && !(e.lo > 1)) {
      failed.push_back(fmt::format("{} {} missed", what, shown));
    } else {
      held.push_back(fmt::format("{} {}", what, shown));
    }
  }
  // A long run's controls once more at the end (run/run_loop.h, stored with its sampling): an
  // end whose A/A shows an effect or whose positive control missed fails the night too.
  const nlohmann::json& sampling = report.run.sampling;
  if (sampling.is_object() && sampling.contains("controls_at_end")) {
    for (const auto& c : sampling["controls_at_end"]) {
      if (c.value("holds", false)) continue;
      const std::string at = c.value("experiment", std::string()) + " at the end";
      if (c["lo"].is_number() && c["hi"].is_number()) {
        failed.push_back(fmt::format("{} {:.3f}x [{:.3f}, {:.3f}] {}", at, c["ratio"].get<double>(),
                                     c["lo"].get<double>(), c["hi"].get<double>(),
                                     c.value("verdict", std::string())));
      } else {
        failed.push_back(at + " has no interval");
      }
    }
  }
  if (held.empty() && failed.empty()) return "";
  auto listed = [](const std::vector<std::string>& items) {
    std::string out;
    for (size_t i = 0; i < items.size() && i < 3; ++i) out += (i ? "; " : "") + items[i];
    if (items.size() > 3) out += fmt::format("; and {} more", items.size() - 3);
    return out;
  };
  return failed.empty() ? "certified: " + listed(held) : "not certified: " + listed(failed);
}

RunReport compute_report(const storage::Database& db, const std::string& run_uuid) {
  RunReport report = collect(db, run_uuid, true);
  report.certification = certify(report);
  return report;
}

storage::Database::RunEffects to_stored(const RunReport& report) {
  Stored::RunEffects out;
  out.certification = report.certification;
  for (const auto& x : report.experiments) {
    for (const auto& a : x.arms) {
      Stored::ArmSummary s;
      s.experiment = x.name;
      s.arm = a.arm;
      s.ok = a.ok;
      s.failed = a.failed;
      s.invalid = a.invalid;
      const bool ok = a.ok > 0;
      s.samples = ok ? int64_t(a.time.n) : 0;
      s.median_seconds = nan_unless(ok, a.time.median);
      s.mad_seconds = nan_unless(ok, a.time.mad);
      s.cv = nan_unless(ok, a.time.cv);
      s.trial_median_seconds = a.trial_median_seconds;
      s.trial_median_low_seconds = a.trial_median_low_seconds;
      s.trial_median_high_seconds = a.trial_median_high_seconds;
      s.peak_rss_bytes = nan_unless(ok, a.peak_rss_bytes);
      s.probe_seconds = nan_unless(ok, a.probe_seconds);
      s.page_faults_per_iteration = nan_unless(ok, a.page_faults_per_iteration);
      s.items_per_second = a.items_per_second;
      out.arms.push_back(std::move(s));
    }
    for (const auto& e : x.effects) {
      out.effects.push_back({x.name, kind_of(e.compared), e.metric, e.compared, e.effect.ratio,
                             e.effect.lo, e.effect.hi, e.effect.confidence, e.effect.resamples,
                             stats::to_string(e.effect.verdict), e.effect.note, effect_text(x, e)});
    }
    if (!x.problem.empty()) {
      out.effects.push_back({x.name, "none", "time", "", NAN, NAN, NAN, 0, 0, "", x.problem, ""});
    }
  }
  return out;
}

void apply_stored(RunReport& report, const storage::Database::RunEffects& stored) {
  report.certification = stored.certification;
  for (auto& x : report.experiments) {
    for (auto& a : x.arms) {
      for (const auto& s : stored.arms) {
        if (s.experiment != x.name || s.arm != a.arm || a.ok == 0) continue;
        a.time.n = size_t(s.samples);
        a.time.median = s.median_seconds;
        a.time.mad = s.mad_seconds;
        a.time.cv = s.cv;
        a.peak_rss_bytes = s.peak_rss_bytes;
        a.probe_seconds = s.probe_seconds;
        a.page_faults_per_iteration = s.page_faults_per_iteration;
        a.trial_median_seconds = s.trial_median_seconds;
        a.trial_median_low_seconds = s.trial_median_low_seconds;
        a.trial_median_high_seconds = s.trial_median_high_seconds;
        a.items_per_second = s.items_per_second;
      }
    }
    for (const auto& e : stored.effects) {
      if (e.experiment != x.name) continue;
      if (e.kind == "none") {
        x.problem = e.note;
        continue;
      }
      x.effects.push_back({e.metric, e.compared,
                           stats::Effect{e.ratio, e.lo, e.hi, e.confidence, e.resamples,
                                         stats::verdict_from_string(e.verdict), e.note}});
    }
  }
}

void store_effects(storage::Database& db, const std::string& run_uuid) {
  db.store_effects(run_uuid, to_stored(compute_report(db, run_uuid)));
}

RunReport analyze(const storage::Database& db, const std::string& run_uuid) {
  const auto stored = db.effects(run_uuid);
  RunReport report;
  if (stored.empty()) {
    report = compute_report(db, run_uuid);
  } else {
    report = collect(db, run_uuid, false);
    apply_stored(report, stored);
  }
  report.state = run_state(report.run, liveness::this_machine(), db.path());
  return report;
}

}  // namespace tunebench::analysis
