// The one list of knob families, the defaults of KnobRules, and the public questions of
// knobs/knobs.h, each a short loop: a setting's catalog row names its family, and the family's
// rules answer. No knob id is tested here.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "knobs/autograd.h"
#include "knobs/build.h"
#include "knobs/compile.h"
#include "knobs/cuda.h"
#include "knobs/distributed.h"
#include "knobs/execution.h"
#include "knobs/input.h"
#include "knobs/knobs.h"
#include "knobs/precision.h"
#include "knobs/process.h"
#include "knobs/script.h"

namespace tunebench::knobs {

using nlohmann::json;

// --- the registry -------------------------------------------------------------------------

namespace {

struct FamilyEntry {
  Family family;
  const char* name;
  const KnobRules& (*rules)();
};

// One line per family, in the order of the enum.
const FamilyEntry kFamilies[] = {
    {Family::process, "process", process::rules},
    {Family::autograd, "autograd", autograd::rules},
    {Family::build, "build", build::rules},
    {Family::execution, "execution", execution::rules},
    {Family::precision, "precision", precision::rules},
    {Family::script, "script", script::rules},
    {Family::input, "input", input::rules},
    {Family::cuda, "cuda", cuda::rules},
    {Family::distributed, "distributed", distributed::rules},
    {Family::compile, "compile", compile::rules},
};

const FamilyEntry& entry_of(Family family) {
  for (const auto& e : kFamilies) {
    if (e.family == family) return e;
  }
  throw std::logic_error("knob family without an entry in knobs/families.cpp");
}

}  // namespace

const char* to_string(Family family) { return entry_of(family).name; }

const KnobRules& rules_of(Family family) { return entry_of(family).rules(); }

const std::vector<Family>& families() {
  static const std::vector<Family> all = [] {
    std::vector<Family> out;
    for (const auto& e : kFamilies) out.push_back(e.family);
    return out;
  }();
  return all;
}

// --- KnobRules' defaults and the shared helpers --------------------------------------------

void KnobRules::validate_value(const Knob&, const json& value) const {
  if (!value.is_boolean()) throw std::invalid_argument("must be true or false");
}

json KnobRules::resolve(const Knob&, const json& value, const HostCaps&) const { return value; }

std::string KnobRules::not_applicable_reason(const Knob&, const std::string&, Mode, const HostCaps&,
                                             const std::string&) const {
  return "";
}

void KnobRules::process_setup(const json&, ProcessSetup&) const {}

std::string KnobRules::arm_error(const json&, Mode, int64_t) const { return ""; }

std::string KnobRules::arm_not_applicable(const json&, int64_t, const HostCaps&) const {
  return "";
}

void KnobRules::check_evidence(const Knob&, const json&, const json&, Mode, const json&,
                               std::vector<std::string>&) const {}

void KnobRules::summarise_evidence(const json&, const json&, std::vector<std::string>&) const {}

json fact(const json& evidence, const char* key) {
  return evidence.is_object() && evidence.contains(key) ? evidence[key] : json();
}

json setting(const json& settings, const char* key, const json& fallback) {
  return settings.is_object() && settings.contains(key) ? settings[key] : fallback;
}

void expect_integer(const json& value, int64_t low, int64_t high, const char* must) {
  if (!value.is_number_integer() || value.get<int64_t>() < low || value.get<int64_t>() > high) {
    throw std::invalid_argument(must);
  }
}

// --- the public questions -----------------------------------------------------------------

HostCaps probe_host() {
  HostCaps caps;
  caps.cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  caps.numa_nodes = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = e.path().filename();
    if (name.rfind("node", 0) == 0 && name.size() > 4 && isdigit(name[4])) ++caps.numa_nodes;
  }
  caps.numa_nodes = std::max(1, caps.numa_nodes);
  return caps;
}

namespace {

std::string model_list(const Knob& knob) {
  std::string list;
  for (const auto& m : knob.models) list += (list.empty() ? "" : ", ") + m;
  return list;
}

// What the row's modes, where and the host's build say, then the knob's family.
std::string mode_host_or_family_reason(const Knob& knob, const std::string& model, Mode mode,
                                       const HostCaps& host, const std::string& device) {
  if (!knob.modes.empty() &&
      std::find(knob.modes.begin(), knob.modes.end(), mode) == knob.modes.end()) {
    return fmt::format("applies to {} only, not {}", to_string(knob.modes.front()),
                       to_string(mode));
  }
  if (knob.where == "cuda" && !host.cuda) return "needs a CUDA device: " + host.cuda_reason;
  const auto& on_device = device == "cuda" ? host.unsupported_on_cuda : host.unsupported_on_cpu;
  if (auto it = on_device.find(knob.id); it != on_device.end()) return it->second;
  return rules_of(knob.family).not_applicable_reason(knob, model, mode, host, device);
}

// Why a model from a file does not offer what `knob` needs, or "".
std::string file_model_reason(const Knob& knob, const models::ModelOffer* offer) {
  if (!knob.model_option.empty()) {
    return fmt::format(
        "switches the built-in models' option {} when they are built; a model "
        "from a file comes built",
        knob.model_option);
  }
  // A Python model's offer lists the knobs the Python worker runs on it (models/python/worker.py).
  if (offer && !offer->knobs.empty()) {
    if (std::find(offer->knobs.begin(), offer->knobs.end(), knob.id) == offer->knobs.end()) {
      return "the Python worker (models/python/worker.py) does not run it on a model from a "
             "Python file or a torch.export archive";
    }
    if (knob.needs == Needs::twin) return "";  // compile: torch.compile of the user's module
  }
  if (knob.needs == Needs::twin) {
    return "compiles the Python twin of a built-in model (models/python/twins.py); a model from a "
           "file has none";
  }
  if (knob.needs == Needs::conv2d) {
    if (!offer) return "needs a 2-D convolution, which is looked for when the file is read";
    if (!offer->conv2d) {
      return "needs a 2-D convolution fed a 4-D floating input: the model has none";
    }
    return "";
  }
  if (!knob.models.empty()) {
    return fmt::format(
        "works through what the built-in models' code offers ({}); a model from "
        "a file does not offer it",
        model_list(knob));
  }
  return "";
}

}  // namespace

std::string not_applicable_reason(const Knob& knob, const std::string& model, Mode mode,
                                  const HostCaps& host, const std::string& device) {
  if (!knob.implemented) return "not implemented yet";
  if (!knob.models.empty() &&
      std::find(knob.models.begin(), knob.models.end(), model) == knob.models.end()) {
    return fmt::format("applies to {} only, not {}", model_list(knob), model);
  }
  return mode_host_or_family_reason(knob, model, mode, host, device);
}

std::string not_applicable_to_file_model(const Knob& knob, const std::string& model,
                                         const models::ModelOffer* offer, Mode mode,
                                         const HostCaps& host, const std::string& device) {
  if (!knob.implemented) return "not implemented yet";
  if (const std::string why = file_model_reason(knob, offer); !why.empty()) return why;
  return mode_host_or_family_reason(knob, model, mode, host, device);
}

void validate_value(const Knob& knob, const json& value) {
  rules_of(knob.family).validate_value(knob, value);
}

json resolve(const Knob& knob, const json& value, const HostCaps& host) {
  return rules_of(knob.family).resolve(knob, value, host);
}

json settings_for_worker(const json& settings) {
  json sent = settings;
  // worker_build's values (knobs/process.cpp): a path, "self", or "python" (which the Python
  // worker reads, so it stays).
  if (sent.is_object() && sent.contains("worker_build") && sent["worker_build"] != "python") {
    sent["worker_build"] = "self";
  }
  return sent;
}

ProcessSetup process_setup(const json& settings) {
  ProcessSetup setup;
  for (Family f : families()) rules_of(f).process_setup(settings, setup);
  return setup;
}

std::string arm_error(const json& settings, Mode mode, int64_t batch) {
  for (Family f : families()) {
    if (auto why = rules_of(f).arm_error(settings, mode, batch); !why.empty()) return why;
  }
  return "";
}

std::string arm_not_applicable(const json& settings, int64_t batch, const HostCaps& host) {
  for (Family f : families()) {
    if (auto why = rules_of(f).arm_not_applicable(settings, batch, host); !why.empty()) return why;
  }
  return "";
}

json model_options(const json& settings, json options) {
  if (!options.is_object()) options = json::object();
  for (const auto& [id, value] : settings.items()) {
    const Knob* k = find(id);
    if (k && !k->model_option.empty() && value.is_boolean()) {
      options[k->model_option] = k->option_inverted ? !value.get<bool>() : value.get<bool>();
    }
  }
  return options;
}

std::vector<std::string> check_evidence(const json& settings, Mode mode, const json& evidence) {
  std::vector<std::string> wrong;
  for (const auto& [id, value] : settings.items()) {
    if (const Knob* k = find(id)) {
      rules_of(k->family).check_evidence(*k, value, settings, mode, evidence, wrong);
    } else if (cuda::is_reserved(id)) {
      cuda::check_reserved_evidence(id, value, evidence, wrong);
    } else if (id == multiproc::kProcessSetting) {
      distributed::check_process_evidence(value, evidence, wrong);
    } else if (id == kSlowdownSetting) {
      const double expected = slowdown_fraction(settings);
      const double got = evidence.value("slowdown_fraction", 0.0);
      if (std::abs(got - expected) > 1e-9) {
        wrong.push_back(fmt::format("slowdown {} but the worker stretched its steps by {:g}%",
                                    value.dump(), 100 * got));
      }
    }
  }
  return wrong;
}

std::string summarise_evidence(const json& settings, const json& evidence) {
  if (!evidence.is_object() || evidence.empty()) return "none";
  std::vector<std::string> parts;
  for (Family f : families()) rules_of(f).summarise_evidence(settings, evidence, parts);
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : " ") + p;
  return out;
}

std::string fault_setting_error(const json& value) {
  const char* allowed = std::getenv("TUNEBENCH_TEST_FAULTS");
  if (!allowed || std::string(allowed) != "1") {
    return "\"fault\" is a test-only setting (it needs TUNEBENCH_TEST_FAULTS=1)";
  }
  static const std::vector<std::string> kinds{"segfault", "abort", "killed", "garbage",
                                              "silent",   "hang",  "slow"};
  const std::string valid =
      "fault must be one of segfault, abort, killed, garbage, silent, hang, slow, or slow:PCT "
      "with PCT a whole percentage from 1 to 1000; got " +
      value.dump();
  if (!value.is_string()) return valid;
  const std::string fault = value.get<std::string>();
  if (fault.rfind("slow:", 0) == 0) {
    const std::string pct = fault.substr(5);
    if (pct.empty() || pct.size() > 4 ||
        !std::all_of(pct.begin(), pct.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(pct) < 1 || std::stoi(pct) > 1000) {
      return valid;
    }
    return "";
  }
  if (std::find(kinds.begin(), kinds.end(), fault) == kinds.end()) return valid;
  return "";
}

std::string slowdown_setting_error(const json& value) {
  if (value.is_number_integer() && value.get<int64_t>() >= 1 && value.get<int64_t>() <= 100)
    return "";
  return "slowdown must be a whole percentage from 1 to 100 (the ON arm's known slowdown), got " +
         value.dump();
}

double slowdown_fraction(const json& settings) {
  if (settings.contains(kSlowdownSetting)) return settings[kSlowdownSetting].get<double>() / 100;
  const std::string fault = settings.value(kFaultSetting, "");
  if (fault.rfind("slow:", 0) != 0) return 0;
  return std::stod(fault.substr(5)) / 100.0;  // validated by fault_setting_error
}

bool is_harness_setting(const std::string& id) {
  return id == kFaultSetting || id == kSlowdownSetting;
}

std::string harness_setting_error(const std::string& id, const json& value) {
  return id == kFaultSetting ? fault_setting_error(value) : slowdown_setting_error(value);
}

double guard_tolerance(const std::string& knob_id) {
  const Knob* k = find(knob_id);
  return k ? k->tolerance : Knob{}.tolerance;
}

double guard_tolerance(const std::string& knob_id, const json& settings) {
  double tolerance = guard_tolerance(knob_id);
  // A factorial cell (or any arm) that switches on a lower-precision knob computes within that
  // knob's tolerance, whatever the experiment's own knob is.
  if (settings.is_object()) {
    for (const auto& [key, value] : settings.items()) {
      if (find(key) && value != false && value != 0) {
        tolerance = std::max(tolerance, guard_tolerance(key));
      }
    }
  }
  return tolerance;
}

}  // namespace tunebench::knobs
