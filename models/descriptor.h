// A model as the registry knows it: its name, presets, options with their types, its size
// arithmetic and how to build it. Each model file (models/resnet.cpp, gpt.cpp, dlrm.cpp) ends
// with the function that returns its descriptor; models/registry.def lists those functions, one
// line per model. Torch-free: building hands back the torch side (models/common.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/model_spec.h"

namespace tunebench::models {

class BenchModel;

// What `tunebench models` shows for one preset.
struct PresetSummary {
  std::string model, preset, description;
  int64_t parameters = 0;            // as built (with any row cap)
  int64_t parameters_published = 0;  // the model's published size (differs only under a cap)
  double forward_flops = 0;          // per sample; convention in models/common.h
  std::string input_shape;           // per sample
  int64_t weight_bytes = 0;          // fp32 parameters
  double activation_bytes = 0;       // fp32 main-layer outputs of one forward, per sample
  std::string note;                  // e.g. the row cap that applies
  nlohmann::json config;             // the full configuration, options applied
};

// A model, preset or option that does not exist, or an option of the wrong type: what() says
// which, where, and lists the valid ones.
class InvalidSpec : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct PresetInfo {
  std::string name;         // "tiny"
  std::string description;  // one line for `tunebench models`
};

// One configuration field a suite's "options" (or `models -o key=value`) may set.
struct OptionInfo {
  std::string name;  // "seq_len"
  std::string type;  // "integer from 1 to 16777216", "true or false"
};

struct ModelDescriptor {
  std::string name;                 // what suites and --model say: "resnet50"
  std::vector<PresetInfo> presets;  // in the order `tunebench models` lists them
  std::vector<OptionInfo> options;  // in the order errors list them
  // The size arithmetic of `spec` (its preset with its options applied): parameters, FLOPs,
  // memory, the configuration as JSON. Throws InvalidSpec for an unknown preset or option, an
  // option of the wrong type or range, or options that do not fit together.
  std::function<PresetSummary(const ModelSpec& spec)> summarize;
  // The model `spec` configures, with its weights drawn from torch's global generator (seeded by
  // the caller). Throws InvalidSpec as summarize does.
  std::function<std::unique_ptr<BenchModel>(const ModelSpec& spec)> build;
};

}  // namespace tunebench::models
