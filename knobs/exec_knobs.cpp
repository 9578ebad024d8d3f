#include "knobs/exec_knobs.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tunebench::exec_knobs {

using nlohmann::json;

namespace {

json fact(const json& object, const char* key) {
  return object.is_object() && object.contains(key) ? object[key] : json();
}

bool multiple_of_8(const json& size) {
  return size.is_number_integer() && size.get<int64_t>() % 8 == 0;
}

void check_checkpoint(bool on, Mode mode, const json& evidence, std::vector<std::string>& wrong) {
  const json model = fact(evidence, "model");
  if (fact(model, "checkpoint") != on) {
    wrong.push_back(fmt::format("checkpoint={} but the built model has checkpoint {}", on,
                                fact(model, "checkpoint").dump()));
  }
  if (mode != Mode::train) return;  // nothing is recomputed without a backward pass
  const json blocks = fact(model, "blocks"), ran = fact(evidence, "block_forwards_per_step");
  if (!blocks.is_number() || !ran.is_number() ||
      ran.get<double>() != (on ? 2.0 : 1.0) * blocks.get<double>()) {
    wrong.push_back(fmt::format(
        "checkpoint={} but the model's {} blocks ran {} forwards per training step (expected {})",
        on, blocks.dump(), ran.dump(), on ? "2 × blocks: recomputed in backward" : "1 × blocks"));
  }
}

void check_grad_accum(const json& value, const json& evidence, std::vector<std::string>& wrong) {
  const int64_t k = value.get<int64_t>();
  const json ran = fact(evidence, "micro_batches_per_step");
  if (ran != k) {
    wrong.push_back(fmt::format("grad_accum={} but each step ran {} micro-batches", k, ran.dump()));
    return;
  }
  if (k == 1 || fact(evidence, "batch_norm") == true) return;  // batch norm: other statistics
  const json diff = fact(evidence, "accumulated_gradient_rel_diff");
  if (!diff.is_number() || diff.get<double>() > kAccumulatedGradientTolerance) {
    wrong.push_back(fmt::format(
        "grad_accum={} but the accumulated gradient differs from the full batch's by {} "
        "(relative; at most {} expected)",
        k, diff.dump(), kAccumulatedGradientTolerance));
  }
}

void check_preallocate(bool on, const json& evidence, std::vector<std::string>& wrong) {
  const json first = fact(evidence, "first_step_tokens"), max = fact(evidence, "max_tokens"),
             pre = fact(evidence, "preallocated_tokens");
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
  const json distinct = fact(evidence, "distinct_step_lengths");
  if (!distinct.is_number_integer() || distinct.get<int64_t>() < 2) {
    wrong.push_back(fmt::format("preallocate={} but the steps ran {} distinct sequence lengths", on,
                                distinct.dump()));
  }
}

void check_dims_mult8(bool on, const json& evidence, std::vector<std::string>& wrong) {
  const json model = fact(evidence, "model");
  const json vocab = fact(model, "vocab_rows"), hidden = fact(model, "mlp_hidden");
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

}  // namespace

bool validate_value(const std::string& id, const json& value) {
  if (id == "grad_accum") {
    if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 1024) {
      throw std::invalid_argument(
          "must be the number of micro-batches per step, an integer from 1 (no accumulation) to "
          "1024");
    }
    return true;
  }
  if (id == "profiler_off" || id == "checkpoint" || id == "preallocate" || id == "dims_mult8") {
    if (!value.is_boolean()) throw std::invalid_argument("must be true or false");
    return true;
  }
  return false;
}

std::string batch_error(const json& settings, int64_t batch) {
  const json k = fact(settings, "grad_accum");
  if (k.is_number_integer() && k.get<int64_t>() > 0 && batch % k.get<int64_t>() != 0) {
    return fmt::format(
        "grad_accum={} splits each batch into {} equal micro-batches, but the batch is {} "
        "samples; use a batch divisible by {} (e.g. {})",
        k.get<int64_t>(), k.get<int64_t>(), batch, k.get<int64_t>(),
        (batch / k.get<int64_t>() + 1) * k.get<int64_t>());
  }
  return "";
}

bool check_evidence(const std::string& id, const json& value, Mode mode, const json& evidence,
                    std::vector<std::string>& wrong) {
  if (id == "profiler_off") {
    // The OFF arm profiles every step; ON runs without the profiler.
    const bool on = value.get<bool>();
    const json enabled = fact(evidence, "profiler_enabled_in_step");
    const json events = fact(evidence, "profiler_events_per_step");
    if (enabled != !on || (!on && !(events.is_number() && events.get<double>() > 0))) {
      wrong.push_back(fmt::format(
          "profiler_off={} but the profiler was {} in the measured step ({} events recorded)", on,
          enabled == true ? "on" : "off", events.dump()));
    }
  } else if (id == "checkpoint") {
    check_checkpoint(value.get<bool>(), mode, evidence, wrong);
  } else if (id == "grad_accum") {
    if (mode == Mode::train) check_grad_accum(value, evidence, wrong);
  } else if (id == "preallocate") {
    if (mode == Mode::train) check_preallocate(value.get<bool>(), evidence, wrong);
  } else if (id == "dims_mult8") {
    check_dims_mult8(value.get<bool>(), evidence, wrong);
  } else {
    return false;
  }
  return true;
}

}  // namespace tunebench::exec_knobs
