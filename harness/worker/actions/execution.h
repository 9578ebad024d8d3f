// The execution family's action (worker/knob_action.h; knobs/execution.h has the checks): what
// each arm of profiler_off, grad_accum and preallocate does inside a step, and the evidence read
// back for them and for checkpoint (the blocks' forward count). checkpoint and dims_mult8
// themselves are model options (models/checkpoint.h, models/gpt.h). The StepPlan is public for
// its tests.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "core/records.h"
#include "models/common.h"

namespace tunebench::exec_steps {

// The loss of a batch, with whatever the worker wraps around it (autocast).
using LossFn = std::function<torch::Tensor(const models::Batch&)>;
// Backward of one (micro-batch) loss: plain, or through fp16 loss scaling on CUDA.
using BackwardFn = std::function<void(const torch::Tensor&)>;

class StepPlan {
 public:
  // Throws std::invalid_argument when the settings do not fit the batch (grad_accum=k needs a
  // batch divisible by k) or the model (preallocate needs sequences). `batch` is the arm's own and
  // must outlive the plan: every step reads it as it is then, because the input family's loader
  // and the CUDA input pipeline put each step's inputs into it (a copy would keep the first).
  StepPlan(const TrialSpec& spec, models::BenchModel& model, const models::Batch& batch);

  // Hold the result for one step: in profiler_off's OFF arm the autograd profiler records the
  // step (and hands its events over when released); otherwise nothing happens.
  std::shared_ptr<void> profile_step();

  // Training, once before any step (the correctness guard's included): preallocate's ON arm runs
  // one forward and backward at the max sequence length, then drops the gradients, so the
  // weights and the function are unchanged.
  void before_first_step(const LossFn& loss);

  // Training: forward and backward of one step on this step's batch (under preallocate, the
  // batch cut to this step's seeded sequence length), in k micro-batches of B/k samples each
  // under grad_accum=k, each loss divided by k so the gradients sum to the batch's.
  // Each backward goes through `backward` (plain when empty). Returns the step's loss. The sum of
  // the first input the step saw is added up (on the input's device, no sync) for the evidence.
  torch::Tensor forward_backward(const LossFn& loss, const BackwardFn& backward = {});

  // Just before the measured region: the per-step counts start here.
  void begin_measurement();

  // After the measured region: runs `step` once more and records the peak of the CPU tensor
  // memory it allocated (compat::CpuTensorPeak), the memory knobs' exact measure; not in
  // profiler_off's OFF arm, whose profiler takes the same hook.
  void measure_tensor_peak(const std::function<void()>& step);

  // After the measured region: what the steps did (knobs/execution.h lists the keys). For
  // grad_accum this also compares the accumulated gradient with the full batch's at the same
  // weights.
  void add_evidence(nlohmann::json& evidence, const LossFn& loss);

 private:
  models::Batch step_batch();
  torch::Tensor accumulate(const models::Batch& batch, const LossFn& loss,
                           const BackwardFn& backward);

  models::BenchModel& model_;
  const models::Batch& batch_;
  bool train_ = false;
  bool profile_ = false;  // profiler_off's OFF arm
  int64_t k_ = 1;         // micro-batches per step
  bool preallocate_ = false;
  std::vector<int64_t> lengths_;  // per step, cycled; empty: the batch's own length
  int64_t max_tokens_ = 0;
  size_t step_index_ = 0;

  int64_t preallocated_tokens_ = 0, first_step_tokens_ = -1;
  std::set<int64_t> lengths_run_;
  bool profiler_enabled_in_step_ = false;
  int64_t profiler_events_ = 0;
  int64_t tensor_peak_bytes_ = -1, tensor_memory_reports_ = 0;
  int64_t steps_ = 0, micro_batches_ = 0, block_forwards_at_start_ = 0;
  torch::Tensor input_sum_;  // over every step since the plan was made (float64)
  int64_t input_steps_ = 0;
};

}  // namespace tunebench::exec_steps
