// The autograd family's action (worker/knob_action.h): no_grad, inference_mode, zero_grad_none
// and anomaly_off inside each step, and what the step really ran under, read back.
//   no_grad         inference forward with grad mode on (OFF) or under no-grad (ON)
//   inference_mode  no-grad (OFF: the catalog's "no-grad → inference mode") or inference mode
//   zero_grad_none  gradients zeroed in place (OFF) or reset to none (ON) before each step
//   anomaly_off     training steps with anomaly detection on (OFF) or off (ON)
#include "knobs/autograd.h"

#include <torch/csrc/autograd/anomaly_mode.h>
#include <torch/torch.h>

#include <optional>

#include "worker/arm.h"
#include "worker/knob_action.h"

namespace tunebench::worker {
namespace {

using nlohmann::json;

bool on(const json& settings, const char* knob) {
  return settings.contains(knob) && settings[knob] == true;
}

// Anomaly detection set for one step and restored after it, so that two arms in one process do
// not see each other's setting.
struct AnomalyScope {
  explicit AnomalyScope(bool enabled) : previous(torch::autograd::AnomalyMode::is_enabled()) {
    torch::autograd::AnomalyMode::set_enabled(enabled);
  }
  ~AnomalyScope() { torch::autograd::AnomalyMode::set_enabled(previous); }
  bool previous;
};

// The grad-mode guards of an inference step; members released in reverse order.
struct InferenceScope {
  std::optional<torch::NoGradGuard> no_grad;
  std::optional<c10::InferenceMode> inference;
};

class AutogradHooks : public ArmHooks {
 public:
  explicit AutogradHooks(const json& s)
      : no_grad_(on(s, "no_grad") || (s.contains("inference_mode") && !on(s, "inference_mode"))),
        inference_mode_(on(s, "inference_mode")),
        anomaly_(s.contains("anomaly_off") && !on(s, "anomaly_off")),
        set_to_none_(on(s, "zero_grad_none")) {}

  Scope around_step(Arm& arm) override {
    if (!arm.train) {
      auto scope = std::make_shared<InferenceScope>();
      if (no_grad_) scope->no_grad.emplace();
      if (inference_mode_) scope->inference.emplace();
      grad_mode_in_step_ = torch::GradMode::is_enabled();
      inference_mode_in_step_ = c10::InferenceMode::is_enabled();
      return scope;
    }
    auto scope = std::make_shared<AnomalyScope>(anomaly_);
    grad_mode_in_step_ = torch::GradMode::is_enabled();
    anomaly_mode_in_step_ = torch::autograd::AnomalyMode::is_enabled();
    return scope;
  }

  // Training: zero the gradients the last step left. The arm's second step (the first after the
  // guard's) is the one read back.
  void before_forward(Arm& arm) override {
    if (!arm.train) return;
    for (auto& p : arm.module().parameters()) {
      if (!p.grad().defined()) continue;
      if (set_to_none_) {
        p.mutable_grad().reset();
      } else {
        p.mutable_grad().detach_();
        p.mutable_grad().zero_();
      }
    }
    if (++steps_ == 2) {
      bool any_defined = false;
      for (const auto& p : arm.module().parameters()) any_defined |= p.grad().defined();
      grads_defined_after_zero_ = any_defined;
    }
  }

  void read_back(Arm& arm, json& evidence) override {
    evidence[knobs::autograd::kGradModeInStep] = grad_mode_in_step_;
    if (!arm.train) evidence[knobs::autograd::kInferenceModeInStep] = inference_mode_in_step_;
    if (arm.train) evidence[knobs::autograd::kAnomalyModeInStep] = anomaly_mode_in_step_;
    if (arm.train) evidence[knobs::autograd::kGradsDefinedAfterZero] = grads_defined_after_zero_;
  }

 private:
  const bool no_grad_, inference_mode_, anomaly_, set_to_none_;
  bool grad_mode_in_step_ = false, inference_mode_in_step_ = false;
  bool anomaly_mode_in_step_ = false, grads_defined_after_zero_ = false;
  int64_t steps_ = 0;
};

class AutogradAction : public KnobAction {
 public:
  const char* family() const override { return "autograd"; }
  std::unique_ptr<ArmHooks> prepare(Arm& arm) const override {
    return std::make_unique<AutogradHooks>(arm.spec.settings);
  }
};

}  // namespace

const KnobAction& autograd_action() {
  static const AutogradAction action;
  return action;
}

}  // namespace tunebench::worker
