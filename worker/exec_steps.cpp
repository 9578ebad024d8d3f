#include "worker/exec_steps.h"

#include <fmt/format.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <cmath>
#include <stdexcept>

#include "knobs/execution.h"
#include "platform/compat.h"

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
    if (auto why = exec_knobs::batch_error(s, batch.size); !why.empty()) {
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
  evidence["profiler_enabled_in_step"] = profiler_enabled_in_step_;
  evidence["profiler_events_per_step"] = profiler_events_;
  if (tensor_memory_reports_ > 0) evidence["tensor_peak_bytes"] = tensor_peak_bytes_;
  if (!train_ || steps_ == 0) return;
  evidence["block_forwards_per_step"] =
      double(block_forwards(model_) - block_forwards_at_start_) / double(steps_);
  evidence["micro_batches_per_step"] = micro_batches_ / steps_;
  evidence["micro_batch_size"] = batch_.size / k_;
  if (!lengths_.empty()) {
    evidence["preallocated_tokens"] = preallocated_tokens_;
    evidence["first_step_tokens"] = first_step_tokens_;
    evidence["max_tokens"] = max_tokens_;
    evidence["distinct_step_lengths"] = lengths_run_.size();
  }
  if (k_ == 1) return;
  bool batch_norm = false;
  for (const auto& m : model_.module().modules(/*include_self=*/false)) {
    batch_norm |= m->as<torch::nn::BatchNorm1d>() || m->as<torch::nn::BatchNorm2d>();
  }
  evidence["batch_norm"] = batch_norm;
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
  evidence["accumulated_gradient_rel_diff"] =
      ((accumulated - full).norm() / full.norm()).item<double>();
  drop_gradients(model_.module());
}

}  // namespace tunebench::exec_steps
