// The TorchScript and quantization knobs, inside the worker: each arm of jit_fusion,
// quantize_linear and freeze_script replaces the model's inference forward and reads back what
// it built.
//
//   jit_fusion       GPT: the MLP's bias add + erf-GELU chain, eager → TorchScript with the CPU
//                    (legacy) fuser, or on CUDA with NNC; evidence: fusion groups in the
//                    optimised graph that ran
//   quantize_linear  DLRM: fp32 Linear layers → dynamically quantized int8 Linear (prepacked
//                    weights, quantized::linear_dynamic); evidence: layers, weight dtype, engine,
//                    calls in the measured steps, accuracy delta against fp32
//   freeze_script    ResNet-50: eager module → the same function as a TorchScript module,
//                    frozen and optimised for inference; evidence: batch_norm nodes and
//                    parameters before and after freezing
//
// Both arms run the forward under no-grad, as deployed inference does, so that the comparison is
// the knob alone (quantized ops have no autograd; frozen constants carry no gradients).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "models/common.h"

namespace tunebench::script_forward {

// The knobs of this file that this LibTorch cannot run here, each with the reason. Probes what
// the build offers (a fusion group for a pointwise chain, a quantized engine); cached.
std::map<std::string, std::string> unsupported();

struct ArmForward {
  std::function<torch::Tensor(const models::Batch&)> forward;  // empty: none of these knobs is set
  nlohmann::json evidence = nlohmann::json::object();          // what was built, at once
  std::function<void(nlohmann::json&)> read_back;              // adds what the measured steps ran
};

// The forward of the arm that `settings` select for `model`; throws std::runtime_error when the
// knob cannot run on this model or build.
ArmForward prepare(const nlohmann::json& settings, models::BenchModel& model,
                   const models::Batch& batch);

}  // namespace tunebench::script_forward
