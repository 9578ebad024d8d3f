#include "knobs/script_knobs.h"

#include <fmt/format.h>

namespace tunebench::script_knobs {

using nlohmann::json;

namespace {

json fact(const json& record, const char* key) {
  return record.is_object() && record.contains(key) ? record[key] : json();
}

bool positive(const json& value) { return value.is_number() && value.get<double>() > 0; }

std::string jit_fusion(bool on, const json& e) {
  const json groups = fact(e, "fusion_groups");
  if (!positive(fact(e, "chain_calls"))) {
    return "jit_fusion: the bias-GELU chain was not called in the measured steps";
  }
  if (on && (fact(e, "chain") != "torchscript" || !positive(groups))) {
    return fmt::format(
        "jit_fusion=true but the optimised graph that ran held {} fusion groups (chain {})",
        groups.dump(), fact(e, "chain").dump());
  }
  if (!on && fact(e, "chain") != "eager") {
    return "jit_fusion=false but the chain ran as " + fact(e, "chain").dump();
  }
  return "";
}

std::string quantize_linear(bool on, const json& e) {
  const json int8 = fact(e, "int8_linear_layers"), fp32 = fact(e, "fp32_linear_layers");
  if (!on) {
    if (int8 != 0 || !positive(fp32)) {
      return fmt::format(
          "quantize_linear=false but the model had {} int8 and {} fp32 Linear layers", int8.dump(),
          fp32.dump());
    }
    return "";
  }
  if (!positive(int8) || fp32 != 0 || fact(e, "weight_dtype") != "QInt8") {
    return fmt::format(
        "quantize_linear=true but the model had {} int8 and {} fp32 Linear layers, weights {}",
        int8.dump(), fp32.dump(), fact(e, "weight_dtype").dump());
  }
  if (!positive(fact(e, "int8_calls"))) {
    return "quantize_linear=true but no int8 Linear ran in the measured steps";
  }
  return "";
}

std::string freeze_script(bool on, const json& e) {
  if (!on) {
    return fact(e, "module") == "eager"
               ? ""
               : "freeze_script=false but the module was " + fact(e, "module").dump();
  }
  const json before = fact(e, "batch_norm_nodes_scripted"),
             after = fact(e, "batch_norm_nodes_frozen");
  if (fact(e, "module") != "frozen" || !positive(before) || after != 0 ||
      fact(e, "parameters_frozen") != 0) {
    return fmt::format(
        "freeze_script=true but the module was {} with {} batch_norm nodes before freezing, {} "
        "after, and {} parameters left",
        fact(e, "module").dump(), before.dump(), after.dump(), fact(e, "parameters_frozen").dump());
  }
  return "";
}

}  // namespace

bool handles(const std::string& knob_id) {
  return knob_id == "jit_fusion" || knob_id == "quantize_linear" || knob_id == "freeze_script";
}

std::string check_evidence(const std::string& knob_id, bool on, const json& evidence) {
  const json e = fact(evidence, knob_id.c_str());
  if (!e.is_object()) return knob_id + ": the worker read back nothing about it";
  if (knob_id == "jit_fusion") return jit_fusion(on, e);
  if (knob_id == "quantize_linear") return quantize_linear(on, e);
  if (knob_id == "freeze_script") return freeze_script(on, e);
  return "";
}

}  // namespace tunebench::script_knobs
