// The autograd family: no_grad, inference_mode, zero_grad_none, anomaly_off. Each changes the
// autograd state around the measured step; the worker reads the state back inside the step.
#pragma once

#include "knobs/knob.h"
namespace tunebench::knobs::autograd {

// Evidence keys (booleans, read inside the measured step).
inline constexpr const char* kGradModeInStep = "grad_mode_in_step";
inline constexpr const char* kInferenceModeInStep = "inference_mode_in_step";
inline constexpr const char* kAnomalyModeInStep = "anomaly_mode_in_step";
// After the optimizer's zero_grad: true when the parameters' gradients are still defined tensors.
inline constexpr const char* kGradsDefinedAfterZero = "grads_defined_after_zero";

// The rules of this family (knobs/knob.h's KnobRules).
const KnobRules& rules();

}  // namespace tunebench::knobs::autograd
