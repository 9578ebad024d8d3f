// The execution family: knobs that change how a step executes rather than the process or the
// model's build: profiler_off, checkpoint, grad_accum, preallocate, dims_mult8.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "knobs/evidence.h"
#include "knobs/knob.h"

namespace tunebench::knobs::execution {

// Evidence keys, by knob:
//   profiler_off  kProfilerEnabledInStep (bool), kProfilerEventsPerStep (number)
//   checkpoint    model.checkpoint, model.blocks (evidence.h), kBlockForwardsPerStep (2 × blocks
//                 when the blocks are recomputed in backward, 1 × otherwise)
//   grad_accum    kMicroBatchesPerStep, kMicroBatchSize, kBatchNorm (the model normalises over
//                 the batch, so B/k samples give other statistics than B),
//                 kAccumulatedGradientRelDiff (‖Σ micro-batch gradients − full-batch gradient‖
//                 / ‖full-batch gradient‖ at the same weights)
//   preallocate   kPreallocatedTokens (the length of the max-length step run first; 0: none),
//                 kFirstStepTokens, kMaxTokens, kDistinctStepLengths
//   dims_mult8    model.vocab_rows, model.mlp_hidden (evidence.h)
// Every training arm: kStepInput = {kStepInputSteps: steps run since the arm was built,
//                 kStepInputChecksum: the sum over those steps of the first input each step's
//                 forward saw}, to compare with what a loader or input pipeline fed the arm.
inline constexpr const char* kProfilerEnabledInStep = "profiler_enabled_in_step";
inline constexpr const char* kProfilerEventsPerStep = "profiler_events_per_step";
inline constexpr const char* kBlockForwardsPerStep = "block_forwards_per_step";
inline constexpr const char* kMicroBatchesPerStep = "micro_batches_per_step";
inline constexpr const char* kMicroBatchSize = "micro_batch_size";
inline constexpr const char* kBatchNorm = "batch_norm";
inline constexpr const char* kAccumulatedGradientRelDiff = "accumulated_gradient_rel_diff";
inline constexpr const char* kPreallocatedTokens = "preallocated_tokens";
inline constexpr const char* kFirstStepTokens = "first_step_tokens";
inline constexpr const char* kMaxTokens = "max_tokens";
inline constexpr const char* kDistinctStepLengths = "distinct_step_lengths";
inline constexpr const char* kStepInput = "step_input";
inline constexpr const char* kStepInputSteps = "steps";
inline constexpr const char* kStepInputChecksum = "checksum";

// The rules of this family (knobs/knob.h's KnobRules).
const KnobRules& rules();

// The gradient of k accumulated micro-batches must match the full batch's within this (relative
// L2 norm) when no layer normalises over the batch: the same sum in another order.
inline constexpr double kAccumulatedGradientTolerance = 1e-4;

// Empty when the settings fit a batch of `batch` samples; otherwise why not (grad_accum=k needs
// a batch divisible by k). The family's KnobRules::arm_error; the worker asks it too.
std::string batch_error(const nlohmann::json& settings, int64_t batch);

}  // namespace tunebench::knobs::execution
