// What jit_fusion, quantize_linear and freeze_script must show in a worker's read-back evidence
// (the worker side is worker/script_forward.h). No torch: the orchestrator checks this.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tunebench::script_knobs {

// True for the knobs this file checks.
bool handles(const std::string& knob_id);

// Empty when `evidence` shows that `knob_id` = `on` took effect; otherwise what contradicts it.
std::string check_evidence(const std::string& knob_id, bool on, const nlohmann::json& evidence);

}  // namespace tunebench::script_knobs
