// The models and presets tunebench knows, by name: what a suite, the command line and the
// reports refer to. The registry is one list (models/registry.def, one line per model); each
// model's configuration file ends with its descriptor (models/descriptor.h). Torch-free, as is
// the library behind it (tunebench_model_specs): planning and fuzzing a suite need no LibTorch.
// Building a model is the torch side's (models/build.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "models/descriptor.h"

namespace tunebench::models {

// Every model's descriptor, in the registry's order.
const std::vector<const ModelDescriptor*>& descriptors();
// The descriptor of `model`; throws InvalidSpec listing the valid models.
const ModelDescriptor& descriptor(const std::string& model);

// 25557032 → "25,557,032".
std::string with_commas(int64_t n);

std::vector<std::string> model_names();
std::vector<std::string> preset_names(const std::string& model);  // throws InvalidSpec

PresetSummary summarize(const ModelSpec& spec);  // throws InvalidSpec
std::vector<PresetSummary> summarize_all();      // every model and preset, no options
nlohmann::json to_json(const PresetSummary& summary);

// A rough upper estimate of a trial's resident memory in bytes: LibTorch itself, the weights
// (×4 when training: gradients and optimizer state), and the activations of the batch (×3 when
// training: autograd keeps the inputs of most layers). Used to refuse trials that cannot fit.
double estimate_trial_bytes(const ModelSpec& spec, int64_t batch, bool train);

}  // namespace tunebench::models
