// One arm of an experiment as a value: its settings, model, batch, optimizer, step, correctness
// guard value and evidence. An arm is prepared from its TrialSpec (and so from the spec's seed)
// by worker/trial.h; two arms of one experiment can live side by side in one process, each with
// its own device side, hooks and step, and share one model where neither arm changes it.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/records.h"
#include "models/common.h"
#include "worker/device_trial.h"
#include "worker/knob_action.h"

namespace tunebench::worker {

// Scopes entered in order and released in reverse, as nested guards must be.
class Scopes {
 public:
  Scopes() = default;
  Scopes(Scopes&&) = default;
  ~Scopes() {
    while (!held_.empty()) held_.pop_back();
  }
  void push(Scope scope) { held_.push_back(std::move(scope)); }

 private:
  std::vector<Scope> held_;
};

struct Arm {
  TrialSpec spec;  // the arm's settings, model, mode, batch size and seed
  bool train = false;
  std::unique_ptr<device_trial::DeviceTrial> device;
  std::shared_ptr<models::BenchModel> model;  // shared with the other arm where neither changes it
  models::Batch batch;                        // the arm's own inputs (their tensors may be shared)

  // The stages an action may replace in prepare() (one owner each); trial.cpp sets the defaults:
  // the model's own forward, loss + the device's backward, SGD with momentum.
  std::function<torch::Tensor(const models::Batch&)> forward;  // inference
  std::function<torch::Tensor()> forward_backward;             // training: returns the loss
  std::function<void()> optimizer_step;
  std::string optimizer_name;

  std::vector<std::unique_ptr<ArmHooks>> hooks;  // the families' per-arm parts, registry order
  device_trial::Step step;       // one iteration as the model sees it, built from the hooks
  device_trial::Step iteration;  // `step` inside the device's pipeline: what is timed

  double check_value = 0;  // the correctness guard (trial.h)
  nlohmann::json evidence = nlohmann::json::object();

  torch::nn::Module& module() { return model->module(); }
  // The model's loss on `b` inside every hook's around_forward (autocast).
  torch::Tensor loss(const models::Batch& b);
  // Backward of one (micro-batch) loss through the device (fp16 loss scaling on CUDA).
  void backward(const torch::Tensor& loss) { device->backward(loss); }
  // Every hook's around_forward, entered in order; released with the result.
  Scopes enter_forward();
};

// The step of `arm` built from its hooks: around_step scopes, before_forward, then the inference
// forward inside around_forward, or forward-backward and the optimizer step through the device,
// then after_step. `before_each` runs first in every step (the test-only "slow" fault).
device_trial::Step build_step(Arm& arm, std::function<void()> before_each = {});

}  // namespace tunebench::worker
