// The precision family's action (worker/knob_action.h): the number formats and memory layout a
// step computes in.
//   amp            autocast around every forward and loss: bf16 on the CPU, fp16 (with loss
//                  scaling, worker/device_trial.h) or bf16 on CUDA
//   channels_last  the model's 4-D parameters and the input in NHWC (channels-last) layout
//   fused_adamw    training with per-parameter AdamW (OFF) or one fused AdamW kernel (ON), the
//                  same hyper-parameters; every other arm trains with the default SGD
#include "knobs/precision.h"

#include <torch/torch.h>

#include "platform/compat.h"
#include "worker/arm.h"
#include "worker/knob_action.h"

namespace tunebench::worker {
namespace {

using nlohmann::json;

bool channels_last(const json& settings) { return settings.value("channels_last", false) == true; }

// Puts every 4-D parameter of the module in channels-last layout.
void to_channels_last(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
}

class PrecisionHooks : public ArmHooks {
 public:
  void on_device(Arm& arm) override {
    const json& s = arm.spec.settings;
    amp_ = s.contains("amp") && s["amp"] != false;
    dtype_ = arm.device->amp_dtype(s.value("amp", json(true)));
    device_ = arm.device->device().type();
    if (channels_last(s)) {
      to_channels_last(arm.module());
      arm.batch.inputs[0] = arm.batch.inputs[0].contiguous(at::MemoryFormat::ChannelsLast);
    }
    // A model with convolutions says where its layout stands, whatever the arm.
    if (const auto weight = arm.model->first_conv_weight(); weight.defined()) {
      arm.evidence[knobs::precision::kInputChannelsLast] =
          arm.batch.inputs[0].is_contiguous(at::MemoryFormat::ChannelsLast);
      arm.evidence[knobs::precision::kWeightChannelsLast] =
          weight.is_contiguous(at::MemoryFormat::ChannelsLast);
    }
    choose_optimizer(arm);  // over the parameters in their final layout
  }

  Scope around_forward(Arm&) override {
    Scope cast;
    if (amp_) cast = std::make_shared<compat::AutocastGuard>(device_, dtype_);
    autocast_in_step_ = compat::autocast_enabled(device_);
    return cast;
  }

  void read_back(Arm& arm, json& evidence) override {
    evidence[knobs::precision::kAutocastInStep] = autocast_in_step_;
    evidence[knobs::precision::kAutocastDtype] = !amp_                    ? "none"
                                                 : dtype_ == torch::kHalf ? "fp16"
                                                                          : "bf16";
    if (arm.train) evidence[knobs::precision::kOptimizer] = arm.optimizer_name;
  }

 private:
  // fused_adamw; any other arm keeps the default SGD (worker/trial.cpp).
  static void choose_optimizer(Arm& arm) {
    const json& s = arm.spec.settings;
    if (!s.contains("fused_adamw") || !arm.train) return;
    if (s["fused_adamw"] == true) {
      auto fused = std::make_shared<compat::FusedAdamW>(arm.module().parameters(), 1e-3, 0.9, 0.999,
                                                        1e-8, 1e-2);
      arm.optimizer_step = [fused] { fused->step(); };
      arm.optimizer_name = "adamw_fused";
    } else {
      auto adamw = std::make_shared<torch::optim::AdamW>(
          arm.module().parameters(),
          torch::optim::AdamWOptions(1e-3).betas({0.9, 0.999}).eps(1e-8).weight_decay(1e-2));
      arm.optimizer_step = [adamw] { adamw->step(); };
      arm.optimizer_name = "adamw";
    }
  }

  bool amp_ = false, autocast_in_step_ = false;
  c10::ScalarType dtype_ = torch::kBFloat16;
  c10::DeviceType device_ = c10::DeviceType::CPU;
};

class PrecisionAction : public KnobAction {
 public:
  const char* family() const override { return "precision"; }
  std::map<std::string, std::string> unsupported(c10::DeviceType device) const override {
    if (auto why = compat::fused_adamw_unavailable_reason(device); !why.empty()) {
      return {{"fused_adamw", why}};
    }
    return {};
  }
  bool changes_model(const json& settings) const override { return channels_last(settings); }
  std::unique_ptr<ArmHooks> prepare(Arm&) const override {
    return std::make_unique<PrecisionHooks>();
  }
};

}  // namespace

const KnobAction& precision_action() {
  static const PrecisionAction action;
  return action;
}

}  // namespace tunebench::worker
