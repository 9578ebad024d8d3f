// The precision family: amp (autocast), channels_last (memory format), onednn (which library's
// CPU convolution kernels) and fused_adamw (the optimizer's kernel). They share a home because
// each changes how the same arithmetic is laid out, rounded or computed on the device's kernels,
// without changing the model's build or the step's structure; each acts in the worker where the
// step is made (autocast guard, model/input format, optimizer).
#pragma once

#include "knobs/knob.h"
namespace tunebench::knobs::precision {

// Evidence keys:
//   amp            kAutocastInStep (bool), kAutocastDtype ("bf16"|"fp16"), kLossScaling (bool,
//                  training with fp16)
//   channels_last  kInputChannelsLast, kWeightChannelsLast (first conv's weight), booleans
//   onednn         kOneDnnInStep (bool: LibTorch's oneDNN switch inside the measured step),
//                  kConvCalls and kOneDnnConvCalls (the convolutions of the arm's first step, and
//                  how many of them ran oneDNN's kernel, from the autograd profiler)
//   fused_adamw    kOptimizer ("adamw" | "adamw_fused")
inline constexpr const char* kAutocastInStep = "autocast_in_step";
inline constexpr const char* kAutocastDtype = "autocast_dtype";
inline constexpr const char* kLossScaling = "loss_scaling";
inline constexpr const char* kInputChannelsLast = "input_channels_last";
inline constexpr const char* kWeightChannelsLast = "weight_channels_last";
inline constexpr const char* kOptimizer = "optimizer";
inline constexpr const char* kOneDnnInStep = "onednn_in_step";
inline constexpr const char* kConvCalls = "conv_calls";
inline constexpr const char* kOneDnnConvCalls = "onednn_conv_calls";

// The rules of this family (knobs/knob.h's KnobRules).
const KnobRules& rules();

}  // namespace tunebench::knobs::precision
