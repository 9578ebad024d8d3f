#include "knobs/execution.h"

#include <fmt/format.h>

namespace tunebench::knobs::execution {

using nlohmann::json;
namespace m = evidence::model;

namespace {

bool multiple_of_8(const json& size) {
  return size.is_number_integer() && size.get<int64_t>() % 8 == 0;
}

void check_profiler_off(bool on, const json& evidence, std::vector<std::string>& wrong) {
  // The OFF arm profiles every step; ON runs without the profiler.
  const json enabled = fact(evidence, kProfilerEnabledInStep);
  const json events = fact(evidence, kProfilerEventsPerStep);
  if (enabled != !on || (!on && !(events.is_number() && events.get<double>() > 0))) {
    wrong.push_back(fmt::format(
        "profiler_off={} but the profiler was {} in the measured step ({} events recorded)", on,
        enabled == true ? "on" : "off", events.dump()));
  }
}

void check_checkpoint(bool on, Mode mode, const json& evidence, std::vector<std::string>& wrong) {
  const json model = fact(evidence, evidence::kModel);
  if (fact(model, m::kCheckpoint) != on) {
    wrong.push_back(fmt::format("checkpoint={} but the built model has checkpoint {}", on,
                                fact(model, m::kCheckpoint).dump()));
  }
  if (mode != Mode::train) return;  // nothing is recomputed without a backward pass
  const json blocks = fact(model, m::kBlocks), ran = fact(evidence, kBlockForwardsPerStep);
  if (!blocks.is_number() || !ran.is_number() ||
      ran.get<double>() != (on ? 2.0 : 1.0) * blocks.get<double>()) {
    wrong.push_back(fmt::format(
        "checkpoint={} but the model's {} blocks ran {} forwards per training step (expected {})",
        on, blocks.dump(), ran.dump(), on ? "2 × blocks: recomputed in backward" : "1 × blocks"));
  }
}

void check_grad_accum(const json& value, const json& evidence, std::vector<std::string>& wrong) {
  const int64_t k = value.get<int64_t>();
  const json ran = fact(evidence, kMicroBatchesPerStep);
  if (ran != k) {
    wrong.push_back(fmt::format("grad_accum={} but each step ran {} micro-batches", k, ran.dump()));
    return;
  }
  if (k == 1 || fact(evidence, kBatchNorm) == true) return;  // batch norm: other statistics
  const json diff = fact(evidence, kAccumulatedGradientRelDiff);
  if (!diff.is_number() || diff.get<double>() > kAccumulatedGradientTolerance) {
    wrong.push_back(fmt::format(
        "grad_accum={} but the accumulated gradient differs from the full batch's by {} "
        "(relative; at most {} expected)",
        k, diff.dump(), kAccumulatedGradientTolerance));
  }
}

void check_preallocate(bool on, const json& evidence, std::vector<std::string>& wrong) {
  const json first = fact(evidence, kFirstStepTokens), max = fact(evidence, kMaxTokens),
             pre = fact(evidence, kPreallocatedTokens);
  if (on && (pre != max || first != max)) {
    wrong.push_back(fmt::format(
        "preallocate=true but the first step ran {} tokens and the preallocation {} (max {})",
        first.dump(), pre.dump(), max.dump()));
  }
  if (!on && (pre != 0 || first == max)) {
    wrong.push_back(fmt::format(
        "preallocate=false but the first step ran {} tokens of at most {} (preallocated {})",
        first.dump(), max.dump(), pre.dump()));
  }
  const json distinct = fact(evidence, kDistinctStepLengths);
  if (!distinct.is_number_integer() || distinct.get<int64_t>() < 2) {
    wrong.push_back(fmt::format("preallocate={} but the steps ran {} distinct sequence lengths", on,
                                distinct.dump()));
  }
}

void check_dims_mult8(bool on, const json& evidence, std::vector<std::string>& wrong) {
  const json model = fact(evidence, evidence::kModel);
  const json vocab = fact(model, m::kVocabRows), hidden = fact(model, m::kMlpHidden);
  const bool aligned = multiple_of_8(vocab) && multiple_of_8(hidden);
  if (on && !aligned) {
    wrong.push_back(
        fmt::format("dims_mult8=true but the built model has {} vocabulary rows and an MLP {} wide",
                    vocab.dump(), hidden.dump()));
  }
  if (!on && aligned) {
    wrong.push_back(fmt::format(
        "dims_mult8=false but the model's sizes are already multiples of 8 ({} vocabulary rows, "
        "MLP {} wide): nothing is compared; give odd sizes (model options vocab_size, "
        "mlp_hidden)",
        vocab.dump(), hidden.dump()));
  }
}

class Rules final : public KnobRules {
 public:
  std::vector<std::string> ids() const override {
    return {"profiler_off", "checkpoint", "grad_accum", "preallocate", "dims_mult8"};
  }

  void validate_value(const Knob& knob, const json& value) const override {
    if (knob.id != "grad_accum") return KnobRules::validate_value(knob, value);
    expect_integer(value, 1, 1024,
                   "must be the number of micro-batches per step, an integer from 1 (no "
                   "accumulation) to 1024");
  }

  std::string arm_error(const json& settings, Mode, int64_t batch) const override {
    return batch_error(settings, batch);
  }

  void check_evidence(const Knob& knob, const json& value, const json&, Mode mode,
                      const json& evidence, std::vector<std::string>& wrong) const override {
    const std::string& id = knob.id;
    if (id == "profiler_off") {
      check_profiler_off(value.get<bool>(), evidence, wrong);
    } else if (id == "checkpoint") {
      check_checkpoint(value.get<bool>(), mode, evidence, wrong);
    } else if (id == "grad_accum") {
      if (mode == Mode::train) check_grad_accum(value, evidence, wrong);
    } else if (id == "preallocate") {
      if (mode == Mode::train) check_preallocate(value.get<bool>(), evidence, wrong);
    } else if (id == "dims_mult8") {
      check_dims_mult8(value.get<bool>(), evidence, wrong);
    }
  }
};

}  // namespace

const KnobRules& rules() {
  static const Rules r;
  return r;
}

std::string batch_error(const json& settings, int64_t batch) {
  const json k = setting(settings, "grad_accum");
  if (k.is_number_integer() && k.get<int64_t>() > 0 && batch % k.get<int64_t>() != 0) {
    return fmt::format(
        "grad_accum={} splits each batch into {} equal micro-batches, but the batch is {} "
        "samples; use a batch divisible by {} (e.g. {})",
        k.get<int64_t>(), k.get<int64_t>(), batch, k.get<int64_t>(),
        (batch / k.get<int64_t>() + 1) * k.get<int64_t>());
  }
  return "";
}

}  // namespace tunebench::knobs::execution
