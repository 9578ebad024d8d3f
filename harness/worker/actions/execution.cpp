#include "worker/actions/execution.h"

#include <fmt/format.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <cmath>
#include <optional>
#include <stdexcept>

#include "knobs/execution.h"
#include "platform/compat.h"
#include "worker/arm.h"

namespace tunebench::exec_steps {

using nlohmann::json;

namespace {

// Steps cycle through this many seeded sequence lengths under preallocate.
constexpr int64_t kLengths = 64;

int64_t block_forwards(models::BenchModel& model) {
  return model.describe().value("block_forwards", int64_t{0});
}

models::Batch slice(const models::Batch& batch, int64_t dim, int64_t start, int64_t length) {
  models::Batch out;
  for (const auto& input : batch.inputs) out.inputs.push_back(input.narrow(dim, start, length));
  out.target = batch.target.narrow(dim, start, length);
  out.size = dim == 0 ? length : batch.size;
  return out;
}

void drop_gradients(torch::nn::Module& module) {
  for (auto& p : module.parameters()) p.mutable_grad().reset();
}

}  // namespace

StepPlan::StepPlan(const TrialSpec& spec, models::BenchModel& model, const models::Batch& batch)
    : model_(model), batch_(batch), train_(spec.mode == Mode::train) {
  const json& s = spec.settings;
  profile_ = s.contains("profiler_off") && s["profiler_off"] == false;
  if (s.contains("grad_accum")) {
    k_ = s["grad_accum"].get<int64_t>();
    if (auto why = knobs::execution::batch_error(s, batch.size); !why.empty()) {
      throw std::invalid_argument(why);
    }
  }
  if (s.contains("preallocate") && train_) {
    // Both arms see the same seeded lengths from a quarter of the sequence to all of it; the
    // first is never the longest, so only the ON arm starts at the max length.
    if (batch.inputs.at(0).dim() != 2 || batch.target.dim() != 2) {
      throw std::invalid_argument("preallocate needs a model with token sequences (gpt)");
    }
    preallocate_ = s["preallocate"] == true;
    max_tokens_ = batch.inputs[0].size(1);
    const int64_t shortest = std::max<int64_t>(1, max_tokens_ / 4);
    if (shortest == max_tokens_)
      throw std::invalid_argument("preallocate needs seq_len of 2 or more");
    auto gen = models::seeded_generator(spec.seed * 7919 + 13);
    const auto drawn = torch::randint(shortest, max_tokens_ + 1, {kLengths}, gen, torch::kLong);
    for (int64_t i = 0; i < kLengths; ++i) lengths_.push_back(drawn[i].item<int64_t>());
    for (auto& length : lengths_) {
      if (length != max_tokens_) {
        std::swap(length, lengths_.front());
        break;
      }
    }
    if (lengths_.front() == max_tokens_) lengths_.front() = shortest;
  }
}

std::shared_ptr<void> StepPlan::profile_step() {
  namespace prof = torch::autograd::profiler;
  if (!profile_) {
    profiler_enabled_in_step_ = torch::profiler::impl::profilerEnabled();
    return nullptr;
  }
  auto guard = std::make_shared<prof::TLSLegacyProfilerGuard>(
      torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU),
      [this](const prof::thread_event_lists& lists) {
        int64_t events = 0;
        for (const auto& list : lists) events += static_cast<int64_t>(list.size());
        profiler_events_ = events;
      });
  profiler_enabled_in_step_ = torch::profiler::impl::profilerEnabled();
  return guard;
}

void StepPlan::before_first_step(const LossFn& loss) {
  if (!preallocate_) return;
  loss(batch_).backward();
  drop_gradients(model_.module());
  preallocated_tokens_ = max_tokens_;
  if (first_step_tokens_ < 0) first_step_tokens_ = max_tokens_;
}

models::Batch StepPlan::step_batch() {
  if (lengths_.empty()) return batch_;
  const int64_t length = lengths_[step_index_++ % lengths_.size()];
  return slice(batch_, 1, 0, length);
}

torch::Tensor StepPlan::accumulate(const models::Batch& batch, const LossFn& loss,
                                   const BackwardFn& backward) {
  auto run_backward = [&](const torch::Tensor& l) {
    if (backward) {
      backward(l);
    } else {
      l.backward();
    }
  };
  if (k_ == 1) {
    auto l = loss(batch);
    run_backward(l);
    return l;
  }
  const int64_t micro = batch.size / k_;
  torch::Tensor total;
  for (int64_t i = 0; i < k_; ++i) {
    auto l = loss(slice(batch, 0, i * micro, micro)) / double(k_);
    run_backward(l);
    total = total.defined() ? total + l.detach() : l.detach();
  }
  return total;
}

torch::Tensor StepPlan::forward_backward(const LossFn& loss, const BackwardFn& backward) {
  const models::Batch batch = step_batch();
  const int64_t tokens = batch.inputs.at(0).dim() >= 2 ? batch.inputs[0].size(1) : 0;
  if (first_step_tokens_ < 0) first_step_tokens_ = tokens;
  lengths_run_.insert(tokens);
  const auto sum = batch.inputs[0].sum(torch::kDouble);
  // One accumulator, made at the first (eager) step and added to in place: a CUDA graph captured
  // later records the add into it, so every replay counts, and no captured kernel reads a tensor
  // that the capture itself freed (reassigning a new sum did: replays read a freed block).
  if (!input_sum_.defined()) input_sum_ = torch::zeros({}, sum.options());
  input_sum_.add_(sum);
  ++input_steps_;
  ++steps_;
  micro_batches_ += k_;
  return accumulate(batch, loss, backward);
}

void StepPlan::begin_measurement() {
  steps_ = 0;
  micro_batches_ = 0;
  block_forwards_at_start_ = block_forwards(model_);
}

void StepPlan::measure_tensor_peak(const std::function<void()>& step) {
  if (profile_) return;
  compat::CpuTensorPeak peak;
  step();
  tensor_peak_bytes_ = peak.peak_bytes();
  tensor_memory_reports_ = peak.reports();
}

void StepPlan::add_evidence(json& evidence, const LossFn& loss) {
  evidence[knobs::execution::kProfilerEnabledInStep] = profiler_enabled_in_step_;
  evidence[knobs::execution::kProfilerEventsPerStep] = profiler_events_;
  if (tensor_memory_reports_ > 0) evidence["tensor_peak_bytes"] = tensor_peak_bytes_;
  if (train_ && input_steps_ > 0) {
    evidence[knobs::execution::kStepInput] = {
        {knobs::execution::kStepInputSteps, input_steps_},
        {knobs::execution::kStepInputChecksum, input_sum_.item<double>()}};
  }
  if (!train_ || steps_ == 0) return;
  evidence[knobs::execution::kBlockForwardsPerStep] =
      double(block_forwards(model_) - block_forwards_at_start_) / double(steps_);
  evidence[knobs::execution::kMicroBatchesPerStep] = micro_batches_ / steps_;
  evidence[knobs::execution::kMicroBatchSize] = batch_.size / k_;
  if (!lengths_.empty()) {
    evidence[knobs::execution::kPreallocatedTokens] = preallocated_tokens_;
    evidence[knobs::execution::kFirstStepTokens] = first_step_tokens_;
    evidence[knobs::execution::kMaxTokens] = max_tokens_;
    evidence[knobs::execution::kDistinctStepLengths] = lengths_run_.size();
  }
  if (k_ == 1) return;
  bool batch_norm = false;
  for (const auto& m : model_.module().modules(/*include_self=*/false)) {
    batch_norm |= m->as<torch::nn::BatchNorm1d>() || m->as<torch::nn::BatchNorm2d>();
  }
  evidence[knobs::execution::kBatchNorm] = batch_norm;
  // The accumulated gradient against the full batch's, at the same weights.
  auto gradients = [&](bool micro) {
    drop_gradients(model_.module());
    if (micro) {
      accumulate(batch_, loss, {});  // unscaled, as the full batch's below
    } else {
      loss(batch_).backward();
    }
    std::vector<torch::Tensor> flat;
    for (const auto& p : model_.module().parameters()) {
      if (p.grad().defined()) flat.push_back(p.grad().flatten().to(torch::kDouble));
    }
    return torch::cat(flat);
  };
  const auto accumulated = gradients(true), full = gradients(false);
  evidence[knobs::execution::kAccumulatedGradientRelDiff] =
      ((accumulated - full).norm() / full.norm()).item<double>();
  drop_gradients(model_.module());
}

}  // namespace tunebench::exec_steps

namespace tunebench::worker {
namespace {

using nlohmann::json;

// One arm's step plan, wired to the arm's loss and backward.
class ExecutionHooks : public ArmHooks {
 public:
  explicit ExecutionHooks(Arm& arm)
      : loss_([&arm](const models::Batch& b) { return arm.loss(b); }) {}

  // The plan reads the arm's batch at every step: on the device, in its final layout, with the
  // inputs the loader or the input pipeline put there for this step.
  void on_device(Arm& arm) override {
    plan_.emplace(arm.spec, *arm.model, arm.batch);
    arm.forward_backward = [this, &arm] {
      return plan_->forward_backward(loss_, [&arm](const torch::Tensor& l) { arm.backward(l); });
    };
  }
  void begin(Arm& arm) override {
    if (arm.train) plan_->before_first_step(loss_);
  }
  Scope around_step(Arm&) override { return plan_->profile_step(); }
  void begin_measurement(Arm&) override { plan_->begin_measurement(); }
  void end_measurement(Arm& arm) override {
    plan_->measure_tensor_peak([&arm] { arm.step(); });
  }
  void read_back(Arm& arm, json& evidence) override { plan_->add_evidence(evidence, loss_); }

 private:
  std::optional<exec_steps::StepPlan> plan_;
  exec_steps::LossFn loss_;
};

class ExecutionAction : public KnobAction {
 public:
  const char* family() const override { return "execution"; }
  std::unique_ptr<ArmHooks> prepare(Arm& arm) const override {
    return std::make_unique<ExecutionHooks>(arm);
  }
};

}  // namespace

const KnobAction& execution_action() {
  static const ExecutionAction action;
  return action;
}

}  // namespace tunebench::worker
