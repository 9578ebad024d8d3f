#include "knobs/compile.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tunebench::knobs::compile {

using nlohmann::json;

// torch.compile's third mode, reduce-overhead, records CUDA graphs around a Python callable; an
// AOTInductor package has no such mode, so it is not a value here (docs/user-guide.md, the compile
// knob).
const std::vector<std::string>& modes() {
  static const std::vector<std::string> all = {"default", "max-autotune"};
  return all;
}

namespace {

bool positive(const json& value) { return value.is_number() && value.get<double>() > 0; }

class Rules final : public KnobRules {
 public:
  std::vector<std::string> ids() const override { return {kCompile}; }

  void validate_value(const Knob&, const json& value) const override {
    if (value == false) return;
    if (value.is_string()) {
      for (const auto& m : modes()) {
        if (value == m) return;
      }
    }
    std::string list;
    for (const auto& m : modes()) list += ", \"" + m + "\"";
    throw std::invalid_argument("must be false (eager) or an Inductor mode:" + list.substr(1));
  }

  // AOTInductor compiles inference graphs; torch.compile in training runs in the Python worker.
  std::string arm_error(const json& settings, Mode mode, int64_t) const override {
    const json value = setting(settings, kCompile, false);
    if (mode != Mode::train || value == false || setting(settings, "worker_build") == "python") {
      return "";
    }
    return "compile=" + value.dump() +
           " in training runs in the Python worker (AOTInductor compiles inference graphs "
           "only): give both arms \"worker_build\": \"python\" and the experiment \"design\": "
           "\"processes\"";
  }

  void check_evidence(const Knob&, const json& value, const json&, Mode, const json& evidence,
                      std::vector<std::string>& wrong) const override {
    if (auto why = compile::check_evidence(value, evidence); !why.empty()) wrong.push_back(why);
  }

  void summarise_evidence(const json&, const json& evidence,
                          std::vector<std::string>& parts) const override {
    const json e = fact(evidence, kCompile);
    if (!e.is_object()) return;
    if (fact(e, kForward) == "torch.compile") {
      parts.push_back(fmt::format("compile={} (torch.compile) graphs={} breaks={} first_step={}s",
                                  fact(e, kMode).get<std::string>(), fact(e, "graphs").dump(),
                                  fact(e, "graph_breaks").dump(), fact(e, kCompileSeconds).dump()));
      return;
    }
    if (fact(e, kForward) != "aoti") {
      parts.push_back("compile=eager");
      return;
    }
    parts.push_back(fmt::format("compile={} kernels={} calls={} compiled_in={}s",
                                fact(e, kMode).get<std::string>(), fact(e, kKernels).dump(),
                                fact(e, kPackageCalls).dump(), fact(e, kCompileSeconds).dump()));
  }
};

}  // namespace

const KnobRules& rules() {
  static const Rules r;
  return r;
}

std::string check_evidence(const json& value, const json& evidence) {
  const json e = fact(evidence, kCompile);
  if (!e.is_object()) return "compile: the worker read back nothing about it";
  if (value == false) {
    return fact(e, kForward) == "eager"
               ? ""
               : "compile=false but the forward ran as " + fact(e, kForward).dump();
  }
  if (fact(e, kForward) == "torch.compile") {  // the Python worker (models/python/worker.py)
    if (fact(e, kMode) != value || !positive(fact(e, "graphs")) ||
        !positive(fact(e, kPackageCalls))) {
      return fmt::format(
          "compile={} but torch.compile ran in mode {} with {} graphs and {} calls measured",
          value.dump(), fact(e, kMode).dump(), fact(e, "graphs").dump(),
          fact(e, kPackageCalls).dump());
    }
    return "";
  }
  if (fact(e, kForward) != "aoti" || fact(e, kMode) != value) {
    return fmt::format("compile={} but the forward ran as {} (mode {})", value.dump(),
                       fact(e, kForward).dump(), fact(e, kMode).dump());
  }
  if (!positive(fact(e, kPackageCalls))) {
    return "compile=" + value.dump() + " but the package was not called in the measured steps";
  }
  const json loaded = fact(e, kConstantsLoaded), all = fact(e, kConstants);
  const json derived =
      fact(e, kConstantsDerived).is_number() ? fact(e, kConstantsDerived) : json(0);
  if (!positive(loaded) || !all.is_number() ||
      loaded.get<int64_t>() + derived.get<int64_t>() != all.get<int64_t>() ||
      (value == "default" && derived != 0)) {
    return fmt::format(
        "compile={}: {} of the package's {} constants were fed from the C++ model ({} derived)",
        value.dump(), loaded.dump(), all.dump(), derived.dump());
  }
  return "";
}

}  // namespace tunebench::knobs::compile
