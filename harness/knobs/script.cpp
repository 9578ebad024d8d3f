#include "knobs/script.h"

#include <fmt/format.h>

namespace tunebench::knobs::script {

using nlohmann::json;

namespace {

bool positive(const json& value) { return value.is_number() && value.get<double>() > 0; }

std::string jit_fusion(bool on, const json& e) {
  const json groups = fact(e, kFusionGroups);
  if (!positive(fact(e, kChainCalls))) {
    return "jit_fusion: the bias-GELU chain was not called in the measured steps";
  }
  if (on && (fact(e, kChain) != "torchscript" || !positive(groups))) {
    return fmt::format(
        "jit_fusion=true but the optimised graph that ran held {} fusion groups (chain {})",
        groups.dump(), fact(e, kChain).dump());
  }
  if (!on && fact(e, kChain) != "eager") {
    return "jit_fusion=false but the chain ran as " + fact(e, kChain).dump();
  }
  return "";
}

std::string quantize_linear(bool on, const json& e) {
  const json int8 = fact(e, kInt8LinearLayers), fp32 = fact(e, kFp32LinearLayers);
  if (!on) {
    if (int8 != 0 || !positive(fp32)) {
      return fmt::format(
          "quantize_linear=false but the model had {} int8 and {} fp32 Linear layers", int8.dump(),
          fp32.dump());
    }
    return "";
  }
  if (!positive(int8) || fp32 != 0 || fact(e, kWeightDtype) != "QInt8") {
    return fmt::format(
        "quantize_linear=true but the model had {} int8 and {} fp32 Linear layers, weights {}",
        int8.dump(), fp32.dump(), fact(e, kWeightDtype).dump());
  }
  if (!positive(fact(e, kInt8Calls))) {
    return "quantize_linear=true but no int8 Linear ran in the measured steps";
  }
  return "";
}

std::string freeze_script(bool on, const json& e) {
  if (!on) {
    return fact(e, kModule) == "eager"
               ? ""
               : "freeze_script=false but the module was " + fact(e, kModule).dump();
  }
  const json before = fact(e, kBatchNormNodesScripted), after = fact(e, kBatchNormNodesFrozen);
  if (fact(e, kModule) != "frozen" || !positive(before) || after != 0 ||
      fact(e, kParametersFrozen) != 0) {
    return fmt::format(
        "freeze_script=true but the module was {} with {} batch_norm nodes before freezing, {} "
        "after, and {} parameters left",
        fact(e, kModule).dump(), before.dump(), after.dump(), fact(e, kParametersFrozen).dump());
  }
  return "";
}

class Rules final : public KnobRules {
 public:
  std::vector<std::string> ids() const override {
    return {kJitFusion, kQuantizeLinear, kFreezeScript};
  }

  void check_evidence(const Knob& knob, const json& value, const json&, Mode, const json& evidence,
                      std::vector<std::string>& wrong) const override {
    if (auto why = script::check_evidence(knob.id, value == true, evidence); !why.empty()) {
      wrong.push_back(why);
    }
  }
};

}  // namespace

const KnobRules& rules() {
  static const Rules r;
  return r;
}

std::string check_evidence(const std::string& knob_id, bool on, const json& evidence) {
  const json e = fact(evidence, knob_id.c_str());
  if (!e.is_object()) return knob_id + ": the worker read back nothing about it";
  if (knob_id == kJitFusion) return jit_fusion(on, e);
  if (knob_id == kQuantizeLinear) return quantize_linear(on, e);
  if (knob_id == kFreezeScript) return freeze_script(on, e);
  return "";
}

}  // namespace tunebench::knobs::script
