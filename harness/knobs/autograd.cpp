#include "knobs/autograd.h"

#include <fmt/format.h>

namespace tunebench::knobs::autograd {

using nlohmann::json;

namespace {

class Rules final : public KnobRules {
 public:
  std::vector<std::string> ids() const override {
    return {"no_grad", "inference_mode", "zero_grad_none", "anomaly_off"};
  }

  // Each knob's state is read inside the measured step, and only in the mode it applies to.
  void check_evidence(const Knob& knob, const json& value, const json&, Mode mode,
                      const json& evidence, std::vector<std::string>& wrong) const override {
    const std::string& id = knob.id;
    if (id == "no_grad" && mode == Mode::infer) {
      if (fact(evidence, kGradModeInStep) != !value.get<bool>()) {
        wrong.push_back(fmt::format("no_grad={} but grad mode in the measured step was {}",
                                    value.dump(), fact(evidence, kGradModeInStep).dump()));
      }
    } else if (id == "zero_grad_none" && mode == Mode::train) {
      if (fact(evidence, kGradsDefinedAfterZero) != !value.get<bool>()) {
        wrong.push_back(
            fmt::format("zero_grad_none={} but gradients after zeroing were {}", value.dump(),
                        fact(evidence, kGradsDefinedAfterZero) == true ? "defined" : "undefined"));
      }
    } else if (id == "inference_mode" && mode == Mode::infer) {
      if (fact(evidence, kInferenceModeInStep) != value ||
          fact(evidence, kGradModeInStep) != false) {
        wrong.push_back(fmt::format(
            "inference_mode={} but the measured step ran with inference mode {} and grad mode {}",
            value.dump(), fact(evidence, kInferenceModeInStep).dump(),
            fact(evidence, kGradModeInStep).dump()));
      }
    } else if (id == "anomaly_off" && mode == Mode::train) {
      if (fact(evidence, kAnomalyModeInStep) != !value.get<bool>()) {
        wrong.push_back(
            fmt::format("anomaly_off={} but anomaly detection in the measured step was {}",
                        value.dump(), fact(evidence, kAnomalyModeInStep).dump()));
      }
    }
  }

  void summarise_evidence(const json&, const json& e,
                          std::vector<std::string>& parts) const override {
    if (e.contains(kGradModeInStep))
      parts.push_back("grad_mode=" + std::string(e[kGradModeInStep] == true ? "on" : "off"));
    if (e.contains(kGradsDefinedAfterZero)) {
      parts.push_back("grads_after_zero=" +
                      std::string(e[kGradsDefinedAfterZero] == true ? "defined" : "none"));
    }
    if (e.contains(kInferenceModeInStep) && e[kInferenceModeInStep] == true) {
      parts.push_back("inference_mode=on");
    }
    if (e.contains(kAnomalyModeInStep)) {
      parts.push_back("anomaly_detection=" +
                      std::string(e[kAnomalyModeInStep] == true ? "on" : "off"));
    }
  }
};

}  // namespace

const KnobRules& rules() {
  static const Rules r;
  return r;
}

}  // namespace tunebench::knobs::autograd
