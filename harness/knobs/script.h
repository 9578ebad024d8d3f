// The script family: TorchScript and quantization of parts of the model (jit_fusion,
// quantize_linear, freeze_script). The worker side is worker/actions/script.cpp.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "knobs/knob.h"
namespace tunebench::knobs::script {

// Each knob's evidence is an object under its own id (evidence["jit_fusion"], ...):
//   jit_fusion       kChain ("eager"|"torchscript"), kChainCalls (calls in the measured steps),
//                    kFusionGroups (fusion groups in the optimised graph that ran)
//   quantize_linear  kInt8LinearLayers, kFp32LinearLayers, kWeightDtype ("QInt8"), kInt8Calls
//   freeze_script    kModule ("eager"|"scripted"|"frozen"), kBatchNormNodesScripted,
//                    kBatchNormNodesFrozen, kParametersFrozen (parameters left after freezing)
inline constexpr const char* kJitFusion = "jit_fusion";
inline constexpr const char* kQuantizeLinear = "quantize_linear";
inline constexpr const char* kFreezeScript = "freeze_script";

inline constexpr const char* kChain = "chain";
inline constexpr const char* kChainCalls = "chain_calls";
inline constexpr const char* kFusionGroups = "fusion_groups";
inline constexpr const char* kInt8LinearLayers = "int8_linear_layers";
inline constexpr const char* kFp32LinearLayers = "fp32_linear_layers";
inline constexpr const char* kWeightDtype = "weight_dtype";
inline constexpr const char* kInt8Calls = "int8_calls";
inline constexpr const char* kModule = "module";
inline constexpr const char* kBatchNormNodesScripted = "batch_norm_nodes_scripted";
inline constexpr const char* kBatchNormNodesFrozen = "batch_norm_nodes_frozen";
inline constexpr const char* kParametersFrozen = "parameters_frozen";

// The rules of this family (knobs/knob.h's KnobRules).
const KnobRules& rules();

// Empty when `evidence` shows that `knob_id` = `on` took effect; otherwise what contradicts it.
std::string check_evidence(const std::string& knob_id, bool on, const nlohmann::json& evidence);

}  // namespace tunebench::knobs::script
