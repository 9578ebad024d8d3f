// libFuzzer target: arbitrary bytes as a suite file, through everything `tunebench run` does with a
// suite before it starts a worker (parse and validate, expand into trials, the memory estimate, the
// workers' environment), and what `run --resume` does with the stored copy.
//
// Expected: the parser's SuiteError (one clear message). A finding: a crash, a sanitizer report,
// any other exception escaping, a hang, or a broken invariant:
//   - every trial of a suite that parses names its experiment, knob and arm, and each of its
//     settings validates again against the catalog (or is the test-only fault setting);
//   - the trial survives the JSON round trip to the worker unchanged;
//   - its model, preset and options (with the build-time switches its settings imply) are a
//     valid model, and its memory estimate is a finite positive number;
//   - the process-start setup (environment, preloads, launcher) is built without error and only
//     from absolute paths;
//   - a paired trial's two arms come together, differ only in knobs that switch inside a process,
//     and make a paired spec the worker accepts;
//   - the suite as stored (its JSON dumped) parses again into the same trials (--resume).
//
// `fuzz_suite -dict_out=FILE` writes a libFuzzer dictionary (JSON tokens, field names, every
// catalog id, model, preset and option name) and exits.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <typeinfo>

#include "core/records.h"
#include "knobs/knobs.h"
#include "models/registry.h"
#include "plan/plan.h"
#include "plan/suite.h"

namespace {

using namespace tunebench;
using nlohmann::json;

knobs::HostCaps host() {
  knobs::HostCaps h;
  h.cores = 2;
  h.cuda_reason = "no CUDA device (fuzzing)";
  h.unsupported_on_cpu["fused_adamw"] = "not in this LibTorch (fuzzing)";
  return h;
}

[[noreturn]] void finding(const std::string& what, const std::string& input) {
  std::fprintf(stderr, "\nFINDING: %s\ninput (%zu bytes): %.2000s\n", what.c_str(), input.size(),
               input.c_str());
  std::abort();
}

void check_trial(const TrialSpec& t, const std::string& input) {
  if (t.experiment.empty() || t.arm.empty() || t.knob.empty()) {
    finding("a trial without an experiment, knob or arm name: " + to_json(t).dump(), input);
  }
  if (t.knob != "factorial" && t.knob != "aa" && t.knob != knobs::kPositiveControl &&
      !knobs::find(t.knob)) {
    finding("trial knob \"" + t.knob + "\" is not a catalog id", input);
  }
  if (!t.settings.is_object()) finding("trial settings are not an object", input);
  for (const auto& [id, value] : t.settings.items()) {
    if (knobs::is_harness_setting(id)) {
      if (const std::string why = knobs::harness_setting_error(id, value); !why.empty())
        finding("trial setting " + id + " does not validate again: " + why, input);
      continue;
    }
    const knobs::Knob* k = knobs::find(id);
    if (!k) finding("trial setting \"" + id + "\" is not a catalog id", input);
    try {
      knobs::validate_value(*k, value);
    } catch (const std::invalid_argument& e) {
      finding("trial setting " + id + "=" + value.dump() + " does not validate again: " + e.what(),
              input);
    }
  }
  if (t.batch < 1 || t.samples < 1 || t.iterations < 1 || t.warmup < 0 ||
      !std::isfinite(t.timeout_s) || t.timeout_s <= 0) {
    finding("trial counts out of range: " + to_json(t).dump(), input);
  }
  // The worker's copy.
  const json sent = to_json(t);
  TrialSpec back;
  try {
    back = trial_spec_from_json(json::parse(sent.dump()));
  } catch (const std::exception& e) {
    finding(std::string("trial does not survive the trip to the worker: ") + e.what(), input);
  }
  if (to_json(back) != sent) finding("trial changed on the way to the worker", input);
  // What the worker builds, and what the orchestrator estimates before it starts.
  try {
    models::summarize(
        {t.model.model, t.model.preset, knobs::model_options(t.settings, t.model.options)});
    const double bytes = models::estimate_trial_bytes(t.model, t.batch, t.mode == Mode::train);
    if (!std::isfinite(bytes) || bytes <= 0) {
      finding("memory estimate is " + std::to_string(bytes), input);
    }
  } catch (const models::InvalidSpec& e) {
    finding(std::string("a trial that passed validation has an invalid model: ") + e.what(), input);
  }
  const knobs::ProcessSetup setup = knobs::process_setup(t.settings);
  for (const auto& path : setup.preload) {
    if (path.empty() || path[0] != '/') finding("preload is not an absolute path: " + path, input);
  }
  for (size_t i = 0; i < setup.launcher.size(); ++i) {
    if (i == 0 && (setup.launcher[0].empty() || setup.launcher[0][0] != '/')) {
      finding("launcher is not an absolute path: " + setup.launcher[0], input);
    }
  }
}

// A paired trial's OFF arm is followed by its ON arm (same worker and pairing), the two make a
// paired spec the worker accepts, and either they differ only in knobs that switch inside a process
// or they are a resident pair (a process each), whose arms are one process each.
void check_pair(const std::vector<TrialSpec>& trials, size_t i, const std::string& input) {
  const TrialSpec& t = trials[i];
  if (!t.pairing.paired() || t.arm != "off") return;
  if (i + 1 >= trials.size() || trials[i + 1].arm != "on" ||
      trials[i + 1].process_index != t.process_index || !(trials[i + 1].pairing == t.pairing)) {
    finding("a paired OFF trial is not followed by its ON arm: " + to_json(t).dump(), input);
  }
  const TrialSpec& on = trials[i + 1];
  if (!t.pairing.resident && !knobs::pairable(t.settings, on.settings)) {
    finding("arms paired in one process differ in a process-start knob: " + to_json(on).dump(),
            input);
  }
  if (t.pairing.resident && (!knobs::several_processes(t.settings).empty() ||
                             !knobs::several_processes(on.settings).empty())) {
    finding("a resident pair's arm runs as several processes: " + to_json(on).dump(), input);
  }
  try {
    paired_spec_from_json(json::parse(
        to_json(PairedSpec{t, on, t.pairing.blocks, t.pairing.block_samples, t.pairing.on_first})
            .dump()));
  } catch (const std::invalid_argument& e) {
    finding(std::string("the worker refuses a planned paired trial: ") + e.what(), input);
  }
}

void one_input(const std::string& input) {
  const knobs::HostCaps h = host();
  suite::Suite s;
  try {
    s = suite::parse(input, "fuzz.json");
  } catch (const suite::SuiteError& e) {
    if (std::strlen(e.what()) == 0) finding("SuiteError without a message", input);
    return;
  }
  if (s.name.empty() || s.experiments.empty())
    finding("a suite without name or experiments", input);
  const plan::Plan p = plan::make(s, h);
  std::vector<TrialSpec> trials;
  try {
    trials = plan::trials(p, "");
  } catch (const suite::SuiteError& e) {
    for (const auto& x : p.experiments) {
      if (x.not_applicable.empty()) {
        finding(std::string("expand refused a suite with an applicable experiment: ") + e.what(),
                input);
      }
    }
    return;
  }
  std::set<std::string> names;
  for (const auto& x : s.experiments) {
    if (x.name.empty()) finding("an experiment without a name", input);
    if (!names.insert(x.name).second) finding("experiment name used twice: " + x.name, input);
  }
  for (size_t i = 0; i < trials.size(); ++i) {
    if (trials[i].sequence != int(i)) finding("trial sequence is not its position", input);
    check_trial(trials[i], input);
    check_pair(trials, i, input);
  }
  // --resume parses the stored suite again and must get the same trials.
  std::vector<TrialSpec> again;
  try {
    again = plan::trials(plan::make(suite::parse(s.json.dump(), "stored suite"), h), "");
  } catch (const suite::SuiteError& e) {
    finding(std::string("the stored suite does not parse again: ") + e.what(), input);
  }
  if (again.size() != trials.size()) finding("the stored suite expands differently", input);
  for (size_t i = 0; i < trials.size(); ++i) {
    if (to_json(again[i]) != to_json(trials[i])) {
      finding("the stored suite expands differently at trial " + std::to_string(i), input);
    }
  }
}

void write_dictionary(const char* path) {
  std::ofstream out(path);
  auto token = [&](const std::string& t) { out << json(t).dump() << "\n"; };
  for (const char* t : {"{",
                        "}",
                        "[",
                        "]",
                        ":",
                        ",",
                        "\"",
                        "true",
                        "false",
                        "null",
                        "-1",
                        "0",
                        "1",
                        "2",
                        "1e309",
                        "-0",
                        "0.5",
                        "9223372036854775807",
                        "18446744073709551616",
                        "\\u0000",
                        "\\\"",
                        "'",
                        ";",
                        "$(",
                        "`",
                        "<",
                        "../",
                        "all"}) {
    token(t);
  }
  for (const char* field :
       {"name",     "description",   "defaults",  "experiments", "processes", "warmup",
        "samples",  "iterations",    "timeout_s", "batch",       "mode",      "model",
        "preset",   "options",       "settings",  "knob",        "factorial", "arms",
        "aa",       "off",           "on",        "infer",       "train",     "design",
        "blocks",   "block_samples", "paired",    "auto",        "device",    "workers",
        "budget_s", "max_workers",   "slowdown"}) {
    token(std::string("\"") + field + "\"");
  }
  token("\"paired_processes\"");
  for (const auto& k : knobs::catalog()) {
    token("\"" + k.id + "\"");
    if (!k.off.is_boolean()) token(k.off.dump());
    if (!k.on.is_boolean()) token(k.on.dump());
  }
  for (const char* v : {"glibc", "jemalloc", "jemalloc_nodecay", "tcmalloc", "segfault", "hang",
                        "slow", "slow:50"}) {
    token(std::string("\"") + v + "\"");
  }
  for (const auto& model : models::model_names()) {
    token("\"" + model + "\"");
    for (const auto& preset : models::preset_names(model)) {
      token("\"" + preset + "\"");
      if (models::descriptor(model).from_file) {
        // A model from a file has no configuration without its options: their names instead.
        for (const char* option : {"path", "inputs", "shape", "dtype", "low", "high"}) {
          token(std::string("\"") + option + "\"");
        }
        continue;
      }
      const json config = models::summarize({model, preset}).config;
      for (const auto& [option, value] : config.items()) {
        token("\"" + option + "\"");
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  for (int i = 1; i < *argc; ++i) {
    if (std::strncmp((*argv)[i], "-dict_out=", 10) == 0) {
      write_dictionary((*argv)[i] + 10);
      std::exit(0);
    }
  }
  setenv("TUNEBENCH_TEST_FAULTS", "1", 1);  // the test-only fault setting is validated too
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  try {
    one_input(input);
  } catch (const std::exception& e) {
    finding(std::string("uncaught ") + typeid(e).name() + ": " + e.what(), input);
  }
  return 0;
}
