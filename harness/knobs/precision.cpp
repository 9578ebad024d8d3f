#include "knobs/precision.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tunebench::knobs::precision {

using nlohmann::json;

namespace {

// true: the device's default (bf16 on the CPU, fp16 with loss scaling on CUDA).
void check_amp(const json& value, Mode mode, const json& evidence,
               std::vector<std::string>& wrong) {
  if (fact(evidence, kAutocastInStep) != (value != false)) {
    wrong.push_back(fmt::format("amp={} but autocast in the measured step was {}", value.dump(),
                                fact(evidence, kAutocastInStep).dump()));
  }
  if (value.is_string() && fact(evidence, kAutocastDtype) != value) {
    wrong.push_back(fmt::format("amp={} but autocast's dtype was {}", value.dump(),
                                fact(evidence, kAutocastDtype).dump()));
  }
  if (mode == Mode::train && fact(evidence, kAutocastDtype) == "fp16" &&
      fact(evidence, kLossScaling) != true) {
    wrong.push_back(fmt::format("amp={} but loss scaling was {}", value.dump(),
                                fact(evidence, kLossScaling).dump()));
  }
}

// oneDNN's switch read back in the step, and its kernels seen by the profiler: ON runs some
// convolutions in oneDNN (ATen may still pick its own path for some shapes), OFF runs none.
void check_onednn(const json& value, const json& evidence, std::vector<std::string>& wrong) {
  const bool on = value.get<bool>();
  const json calls = fact(evidence, kConvCalls), onednn = fact(evidence, kOneDnnConvCalls);
  if (fact(evidence, kOneDnnInStep) != on || !calls.is_number() || calls.get<int64_t>() < 1 ||
      !onednn.is_number() || (onednn.get<int64_t>() > 0) != on) {
    wrong.push_back(fmt::format(
        "onednn={} but the step ran with oneDNN {} and {} of its {} convolutions in oneDNN",
        value.dump(), fact(evidence, kOneDnnInStep).dump(), onednn.dump(), calls.dump()));
  }
}

class Rules final : public KnobRules {
 public:
  std::vector<std::string> ids() const override {
    return {"channels_last", "amp", "onednn", "fused_adamw"};
  }

  void validate_value(const Knob& knob, const json& value) const override {
    if (knob.id == "amp") {
      if (value.is_boolean() || value == "bf16" || value == "fp16") return;
      throw std::invalid_argument(
          "must be true (the device's default), false, \"bf16\" or \"fp16\"");
    }
    KnobRules::validate_value(knob, value);
  }

  void check_evidence(const Knob& knob, const json& value, const json&, Mode mode,
                      const json& evidence, std::vector<std::string>& wrong) const override {
    if (knob.id == "amp") {
      check_amp(value, mode, evidence, wrong);
    } else if (knob.id == "channels_last") {
      if (fact(evidence, kInputChannelsLast) != value ||
          fact(evidence, kWeightChannelsLast) != value) {
        wrong.push_back(fmt::format(
            "channels_last={} but input/first conv weight channels-last were {}/{}", value.dump(),
            fact(evidence, kInputChannelsLast).dump(), fact(evidence, kWeightChannelsLast).dump()));
      }
    } else if (knob.id == "onednn") {
      check_onednn(value, evidence, wrong);
    } else if (knob.id == "fused_adamw" && mode == Mode::train) {
      const std::string expected = value == true ? "adamw_fused" : "adamw";
      if (fact(evidence, kOptimizer) != expected) {
        wrong.push_back(fmt::format("fused_adamw={} but the optimizer was {}", value.dump(),
                                    fact(evidence, kOptimizer).dump()));
      }
    }
  }

  // onednn counts the first step's kernels with the autograd profiler, which the OFF arm of
  // profiler_off holds around every step: one profiler per thread at a time.
  std::string arm_error(const json& settings, Mode, int64_t) const override {
    if (settings.contains("onednn") && settings.value("profiler_off", true) == false) {
      return "onednn reads its convolution kernels with the autograd profiler, which "
             "profiler_off=false already holds around every step: measure them in separate "
             "experiments";
    }
    return "";
  }

  void summarise_evidence(const json&, const json& e,
                          std::vector<std::string>& parts) const override {
    if (e.contains(kInputChannelsLast)) {
      parts.push_back("channels_last=" + std::string(e[kInputChannelsLast] == true ? "yes" : "no"));
    }
    if (e.contains(kOneDnnConvCalls)) {
      parts.push_back(fmt::format("onednn_convs={}/{}", e[kOneDnnConvCalls].dump(),
                                  fact(e, kConvCalls).dump()));
    }
  }
};

}  // namespace

const KnobRules& rules() {
  static const Rules r;
  return r;
}

}  // namespace tunebench::knobs::precision
