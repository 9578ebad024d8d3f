// The knobs that change how a step executes rather than the process or the model's build:
// profiler_off, checkpoint, grad_accum, preallocate, dims_mult8 (CATALOG.md, "Execution mode and
// autograd" and "Kernels"). This half has no torch: value checks, the batch check of a suite, and
// the evidence checks that knobs::check_evidence delegates to. The worker's half (what each arm
// does inside a step, and what it reads back) is worker/exec_steps.h.
//
// Evidence the worker reads back, by knob:
//   profiler_off  profiler_enabled_in_step, profiler_events_per_step
//   checkpoint    model.checkpoint, model.blocks, block_forwards_per_step (2 × blocks when the
//                 blocks are recomputed in backward, 1 × otherwise)
//   grad_accum    micro_batches_per_step, micro_batch_size, batch_norm (the model normalises over
//                 the batch, so B/k samples give other statistics than B),
//                 accumulated_gradient_rel_diff (‖Σ micro-batch gradients − full-batch gradient‖
//                 / ‖full-batch gradient‖ at the same weights)
//   preallocate   preallocated_tokens (the length of the max-length step run first; 0: none),
//                 first_step_tokens, max_tokens, distinct_step_lengths
//   dims_mult8    model.vocab_rows, model.mlp_hidden
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/records.h"

namespace tunebench::exec_knobs {

// The gradient of k accumulated micro-batches must match the full batch's within this (relative
// L2 norm) when no layer normalises over the batch: the same sum in another order.
inline constexpr double kAccumulatedGradientTolerance = 1e-4;

// True when `id` is one of these knobs and `value` was checked; throws std::invalid_argument
// ("must be …") when the value is not valid for it.
bool validate_value(const std::string& id, const nlohmann::json& value);

// Empty when the settings fit a batch of `batch` samples; otherwise why not (grad_accum=k needs
// a batch divisible by k).
std::string batch_error(const nlohmann::json& settings, int64_t batch);

// Appends to `wrong` what contradicts setting `id`=`value` in the evidence. Returns false when
// `id` is not one of these knobs (nothing checked).
bool check_evidence(const std::string& id, const nlohmann::json& value, Mode mode,
                    const nlohmann::json& evidence, std::vector<std::string>& wrong);

}  // namespace tunebench::exec_knobs
