// The device side of one trial, behind one interface so that the worker stays device-neutral:
// where the model and batch live, each step's input pipeline (host-to-device copies, pinned
// memory, a copy stream, inputs made on the device), the step's replay from a captured CUDA graph,
// backward with fp16 loss scaling, the iteration timer (CUDA events on a GPU, the steady clock
// after a synchronisation elsewhere), and what it reads back: host-device synchronisations per
// step, the caching allocator's peak, GPU energy and clocks. The CPU implementation is here; the
// CUDA one, the cuda family's in-process part, is worker/actions/cuda.cpp, compiled only with
// TUNEBENCH_CUDA.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/records.h"
#include "models/common.h"

namespace tunebench::device_trial {

using Step = std::function<torch::Tensor()>;

class DeviceTrial {
 public:
  virtual ~DeviceTrial() = default;
  virtual torch::Device device() const { return torch::kCPU; }
  // Moves the model and batch where they run and sets the process-wide switches (TF32, cuDNN).
  virtual void prepare(torch::nn::Module& module, models::Batch& batch) {}
  // The measured iteration around the model's step: input pipeline, graph replay, per-step
  // synchronisations or cache emptying, as the trial's knobs say.
  virtual Step wrap(Step step, models::Batch& batch) { return step; }
  // The autocast dtype of the amp setting on this device: true means bf16 on the CPU.
  virtual c10::ScalarType amp_dtype(const nlohmann::json& value) const;
  // Backward of one loss (of a step or of one of its micro-batches): scaled by the loss scaler
  // for fp16 training on CUDA, plain otherwise.
  virtual void backward(const torch::Tensor& loss) { loss.backward(); }
  // The step's `optimizer_step` after its backwards: on CUDA with fp16, the gradients unscaled
  // and the step skipped on inf/NaN; plain otherwise.
  virtual void step(const std::vector<torch::Tensor>& params,
                    const std::function<void()>& optimizer_step) {
    optimizer_step();
  }
  // Seconds of `n` iterations run back to back (one sample), the device's queue drained once at
  // the end: on a GPU a loop that never reads back to the host keeps the GPU fed, and a
  // per-iteration drain would hide what avoid_sync is about.
  virtual double time_iterations(const Step& iteration, int n);
  // Around the measured region: peak memory reset, energy and clocks at start and end.
  virtual void begin_measurement() {}
  virtual void end_measurement(int64_t iterations, int64_t items_per_iteration) {}
  // The caching allocator's peak over the measured region; −1 without a device.
  virtual int64_t peak_memory_bytes() const { return -1; }
  virtual nlohmann::json evidence() const { return nlohmann::json::object(); }
};

// The trial's device (settings "device"); throws std::runtime_error for "cuda" in a build or on a
// host without CUDA, with the reason.
std::unique_ptr<DeviceTrial> make(const TrialSpec& spec);

}  // namespace tunebench::device_trial
