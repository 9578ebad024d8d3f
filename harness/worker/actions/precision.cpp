// The precision family's action (worker/knob_action.h): the number formats and memory layout a
// step computes in.
//   amp            autocast around every forward and loss: bf16 on the CPU, fp16 (with loss
//                  scaling, worker/device_trial.h) or bf16 on CUDA
//   channels_last  the model's 4-D parameters and the input in NHWC (channels-last) layout
//   onednn         LibTorch's oneDNN switch (ATen's own CPU convolutions when OFF) set for each
//                  step and restored after it; the arm's first step runs under the autograd
//                  profiler, which counts its convolutions and those that ran oneDNN's kernel
//   fused_adamw    training with per-parameter AdamW (OFF) or one fused AdamW kernel (ON), the
//                  same hyper-parameters; every other arm trains with the default SGD
#include "knobs/precision.h"

#include <ATen/Context.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <cstring>

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

// LibTorch's oneDNN switch for one step, restored after it (two arms may share the process).
struct OneDnnScope {
  explicit OneDnnScope(bool enabled) : previous(at::globalContext().userEnabledMkldnn()) {
    at::globalContext().setUserEnabledMkldnn(enabled);
  }
  ~OneDnnScope() { at::globalContext().setUserEnabledMkldnn(previous); }
  bool previous;
};

// The first step's convolutions, as the autograd profiler records them: every aten::convolution
// and the oneDNN kernels among them. Members release in reverse: the profiler before the switch.
struct ProfiledOneDnnStep {
  using Events = torch::autograd::profiler::thread_event_lists;
  ProfiledOneDnnStep(bool enabled, std::function<void(const Events&)> done)
      : onednn(enabled),
        profiler(torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU),
                 std::move(done)) {}
  OneDnnScope onednn;
  torch::autograd::profiler::TLSLegacyProfilerGuard profiler;
};

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

  Scope around_step(Arm& arm) override {
    const json& s = arm.spec.settings;
    if (!s.contains("onednn")) {
      // What a program that sets nothing runs: read back, so that which arm that is is measured.
      onednn_in_step_ = at::globalContext().userEnabledMkldnn();
      return {};
    }
    const bool enabled = s["onednn"] == true;
    onednn_in_step_ = enabled;
    if (steps_++ > 0) return std::make_shared<OneDnnScope>(enabled);
    return std::make_shared<ProfiledOneDnnStep>(
        enabled, [this](const ProfiledOneDnnStep::Events& lists) { count_convolutions(lists); });
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
    if (arm.spec.settings.contains("onednn")) {
      evidence[knobs::precision::kOneDnnInStep] = onednn_in_step_;
      evidence[knobs::precision::kConvCalls] = conv_calls_;
      evidence[knobs::precision::kOneDnnConvCalls] = onednn_conv_calls_;
    } else if (arm.model->first_conv_weight().defined()) {
      evidence[knobs::precision::kOneDnnInStep] = onednn_in_step_;  // the unset state's switch
    }
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

  void count_convolutions(const torch::autograd::profiler::thread_event_lists& lists) {
    for (const auto& list : lists) {
      for (const auto& event : list) {
        if (event.kindStr() != "push") continue;  // each op is a push and a pop
        // Every convolution passes through aten::_convolution, which picks the backend; an eager
        // module enters it from aten::convolution, a traced TorchScript graph calls it directly
        // (LibTorch 1.13 records no aten::convolution there, only _convolution and the backend's
        // op). Counting _convolution counts both.
        if (std::strcmp(event.name(), "aten::_convolution") == 0) ++conv_calls_;
        if (std::strcmp(event.name(), "aten::mkldnn_convolution") == 0) ++onednn_conv_calls_;
      }
    }
  }

  bool amp_ = false, autocast_in_step_ = false;
  bool onednn_in_step_ = false;
  int64_t steps_ = 0, conv_calls_ = 0, onednn_conv_calls_ = 0;
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
