#include "knobs/build.h"

#include <fmt/format.h>

namespace tunebench::knobs::build {

using nlohmann::json;
namespace m = evidence::model;

namespace {

// What the built model must show for a build-time switch: whether it took effect, and what the
// model says instead.
struct Seen {
  bool ok;
  std::string what;
};

Seen seen_in(const std::string& id, bool on, const json& model) {
  auto f = [&](const char* key) { return fact(model, key); };
  if (id == "conv_bias_off") {
    return {(f(m::kConvBiasParameters) == 0) == on,
            f(m::kConvBiasParameters).dump() + " conv bias parameters"};
  }
  if (id == "inplace_act") {
    return {f(m::kInplaceAct) == on, "in-place activations " + f(m::kInplaceAct).dump()};
  }
  if (id == "causal_mask_fly") {
    return {(f(m::kStoredMaskBuffers) == 0) == on,
            f(m::kStoredMaskBuffers).dump() + " stored mask buffers"};
  }
  if (id == "vocab_pad") {
    return {(f(m::kVocabRows) != f(m::kVocabSize)) == on,
            f(m::kVocabRows).dump() + " embedding rows for vocab " + f(m::kVocabSize).dump()};
  }
  if (id == "builtin_ops") {
    return {f(m::kBuiltinOps) == on, "built-in ops " + f(m::kBuiltinOps).dump()};
  }
  if (id == "flash_attention") {
    return {f(m::kFusedAttention) == on, "fused attention " + f(m::kFusedAttention).dump()};
  }
  return {true, ""};
}

class Rules final : public KnobRules {
 public:
  std::vector<std::string> ids() const override {
    return {"conv_bias_off", "inplace_act", "causal_mask_fly",
            "vocab_pad",     "builtin_ops", "flash_attention"};
  }

  void check_evidence(const Knob& knob, const json& value, const json&, Mode, const json& evidence,
                      std::vector<std::string>& wrong) const override {
    const json model = fact(evidence, evidence::kModel);
    if (!model.is_object()) {
      wrong.push_back(knob.id + ": the worker read back no model structure");
      return;
    }
    const bool on = value.get<bool>();
    if (const Seen s = seen_in(knob.id, on, model); !s.ok) {
      wrong.push_back(
          fmt::format("{}={} but the built model has {}", knob.id, on ? "true" : "false", s.what));
    }
  }

  void summarise_evidence(const json&, const json& e,
                          std::vector<std::string>& parts) const override {
    const json model = fact(e, evidence::kModel);
    if (!model.is_object()) return;
    for (const auto& [k, v] : model.items()) {
      if (k == m::kConvBiasParameters || k == m::kStoredMaskBuffers || k == m::kVocabRows ||
          k == m::kBuiltinOps || k == m::kFusedAttention || k == m::kInplaceAct) {
        parts.push_back(k + "=" + v.dump());
      }
    }
  }
};

}  // namespace

const KnobRules& rules() {
  static const Rules r;
  return r;
}

}  // namespace tunebench::knobs::build
