// Activation checkpointing for LibTorch, which has no C++ checkpoint API (the `checkpoint`
// experiment): a segment of a model runs under no-grad in the forward pass, so autograd keeps
// only the segment's input, and runs again with grad enabled when backward reaches it.
#pragma once

#include <functional>

#include "models/common.h"

namespace tunebench::models {

// A model segment, [input] → [output]. The model that checkpoints a segment owns its function
// and keeps it alive as long as any graph built through it (the model's own lifetime).
using Segment = std::function<torch::Tensor(const torch::Tensor&)>;

// `segment(x)`, without storing the segment's activations when grad mode is on and `x` requires
// grad; its backward re-runs the segment on the saved input with grad enabled and back-propagates
// through that (parameters' gradients accumulate as usual). Otherwise it simply calls the
// segment. The recompute runs under the autocast state of the forward pass (amp combines).
torch::Tensor checkpoint(const Segment& segment, const torch::Tensor& x);

}  // namespace tunebench::models
