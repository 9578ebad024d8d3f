#include "plan/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <regex>

#include "knobs/cuda.h"
#include "knobs/knobs.h"
#include "models/registry.h"

namespace tunebench::plan {

using nlohmann::json;

namespace {

// Settings as this host runs them: "all" threads become its cores.
json resolved_settings(const json& settings, const knobs::HostCaps& host) {
  json out = json::object();
  for (const auto& [id, value] : settings.items()) {
    const knobs::Knob* k = knobs::find(id);  // reserved settings are not knobs
    out[id] = k ? knobs::resolve(*k, value, host) : value;
  }
  return out;
}

suite::Experiment resolved(suite::Experiment x, const knobs::HostCaps& host) {
  x.settings = resolved_settings(x.settings, host);
  for (suite::Arm& arm : x.arms) arm.settings = resolved_settings(arm.settings, host);
  return x;
}

// Why the experiment's knobs or device cannot run here, or "".
std::string knob_or_device_reason(const suite::Experiment& x, const knobs::HostCaps& host,
                                  const ModelOffers& offers) {
  // A model from a file answers with what reading it found (parse checked its options).
  const bool from_file = models::descriptor(x.model.model).from_file;
  const models::ModelOffer* offer = nullptr;
  if (from_file) {
    const auto it = offers.find(x.model.options.value("path", std::string()));
    if (it != offers.end()) offer = &it->second;
  }
  // The knobs it varies; for a model from a file also every knob its settings and arms set (the
  // suite's check of those against the catalog's model names is the built-in models' only).
  std::vector<std::string> asked = x.varied;
  if (from_file) {
    auto add = [&](const nlohmann::json& settings) {
      for (const auto& [id, value] : settings.items()) {
        if (knobs::find(id) != nullptr &&
            std::find(asked.begin(), asked.end(), id) == asked.end()) {
          asked.push_back(id);
        }
      }
    };
    add(x.settings);
    for (const auto& arm : x.arms) add(arm.settings);
  }
  for (const auto& id : asked) {
    const knobs::Knob* k = knobs::find(id);  // parse checked every id
    const std::string why =
        from_file
            ? knobs::not_applicable_to_file_model(*k, x.model.model, offer, x.mode, host, x.device)
            : knobs::not_applicable_reason(*k, x.model.model, x.mode, host, x.device);
    if (!why.empty()) return k->id + ": " + why;
  }
  if (auto why = knobs::cuda::device_unavailable(x.device, host); !why.empty()) {
    return "device cuda: " + why;
  }
  return "";
}

// An arm may fit the suite and not this host (a distributed batch that does not split into this
// host's ranks): the knob families say.
std::string distributed_batch_reason(const suite::Experiment& x, const knobs::HostCaps& host) {
  for (const suite::Arm& arm : x.arms) {
    json settings = x.settings;
    settings.update(arm.settings);
    settings[knobs::cuda::kDevice] = x.device;
    if (auto why = knobs::arm_not_applicable(settings, x.batch, host); !why.empty()) return why;
  }
  return "";
}

// Arms that differ only in a host-dependent value (omp_threads 1 against "all" on one core)
// compare nothing here.
std::string same_arms_reason(const suite::Experiment& x, const knobs::HostCaps& host) {
  if (x.aa || x.arms.size() != 2 || x.arms[0].settings != x.arms[1].settings) return "";
  return fmt::format(
      "{}: the off and on arms set the same values on this host ({} cores): nothing would be "
      "compared",
      x.knob, host.cores);
}

std::string not_applicable(const suite::Experiment& x, const knobs::HostCaps& host,
                           const ModelOffers& offers) {
  if (std::string why = knob_or_device_reason(x, host, offers); !why.empty()) return why;
  for (auto reason : {distributed_batch_reason, same_arms_reason}) {
    if (std::string why = reason(x, host); !why.empty()) return why;
  }
  return "";
}

}  // namespace

Plan make(const suite::Suite& suite, const knobs::HostCaps& host, const ModelOffers& offers) {
  Plan plan;
  plan.suite_path = suite.path;
  plan.base_settings = knobs::base_settings(host);
  for (const suite::Experiment& x : suite.experiments) {
    PlannedExperiment p{resolved(x, host), ""};
    p.not_applicable = not_applicable(p.experiment, host, offers);
    plan.experiments.push_back(std::move(p));
  }
  return plan;
}

std::vector<TrialSpec> trials(const Plan& plan, const std::string& filter) {
  std::regex pattern;
  try {
    pattern = std::regex(filter.empty() ? ".*" : filter);
  } catch (const std::regex_error& e) {
    throw suite::SuiteError(
        fmt::format("--filter '{}' is not a valid regular expression: {}", filter, e.what()));
  }
  std::vector<TrialSpec> trials;
  bool matched = false;
  // The controls (A/A, positive) first, so that no budget spent before them can starve them;
  // each experiment keeps the seed of its place in the suite.
  std::vector<size_t> order(plan.experiments.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_partition(order.begin(), order.end(),
                        [&](size_t i) { return plan.experiments[i].experiment.is_control(); });
  for (size_t index : order) {
    const auto& [x, not_applicable] = plan.experiments[index];
    const uint64_t experiment_seed = index + 2;
    if (!filter.empty() && !std::regex_search(x.name, pattern)) continue;
    matched = true;
    if (!not_applicable.empty()) continue;
    const bool paired = x.design != "processes";
    for (int p = 0; p < (paired ? x.workers : x.processes); ++p) {
      // ABBA: even rounds run the arms forward, odd rounds backward, so drift hits all alike. A
      // paired worker holds both arms (OFF then ON here; the orchestrator runs them as one
      // process): odd workers build, warm and time the ON arm first.
      for (size_t i = 0; i < x.arms.size(); ++i) {
        const suite::Arm& arm = x.arms[p % 2 == 0 || paired ? i : x.arms.size() - 1 - i];
        TrialSpec t;
        t.experiment = x.name;
        t.knob = x.knob;
        t.arm = arm.name;
        t.settings = plan.base_settings;
        for (const auto& [k, v] : x.settings.items()) t.settings[k] = v;
        for (const auto& [k, v] : arm.settings.items()) t.settings[k] = v;
        t.model = x.model;
        t.mode = x.mode;
        t.batch = x.batch;
        t.warmup = x.warmup;
        t.samples = x.samples;
        t.iterations = x.iterations;
        t.timeout_s = x.timeout_s;
        t.process_index = p;
        t.sequence = static_cast<int>(trials.size());
        t.seed = experiment_seed;  // same weights and batch in every arm: the guard compares them
        if (paired) {
          t.pairing = {x.blocks, x.block_samples, p % 2 == 1, x.design == "paired_processes"};
          t.samples = x.blocks / 2 * x.block_samples;
        }
        trials.push_back(std::move(t));
      }
    }
  }
  // Experiments that match but cannot run here (a CUDA suite on a host without a GPU) give no
  // trials: the run completes and records why each is not applicable.
  if (!matched) {
    throw suite::SuiteError(
        fmt::format("{}: no experiment matches --filter '{}'", plan.suite_path, filter));
  }
  return trials;
}

}  // namespace tunebench::plan
