// A model as the registry knows it: its name, presets, options with their types and its size
// arithmetic. Torch-free: each model's configuration file (models/<model>_config.cpp) ends with
// the function that returns its descriptor, its torch file (models/<model>.cpp) with the function
// that builds it (models/build.h); models/registry.def names both, one line per model.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/model_spec.h"

namespace tunebench::models {

// Size of a model as configured, counted layer by layer from its configuration (tests check the
// parameter count against the built module); FLOP convention in models/common.h.
struct ModelStats {
  int64_t parameters = 0;
  double forward_flops = 0;  // per sample; convention in models/common.h
  // Elements of the main layers' outputs per sample in a forward pass (conv/linear/attention
  // outputs): the basis of the memory estimate that refuses trials that cannot fit.
  double activation_elements = 0;
  std::string input_shape;  // per sample, e.g. "3x224x224" or "1024 tokens"
};

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
  // A model read from a file (models/torchscript_config.h) rather than built from this project's
  // code: what it offers the knobs is read from the file (ModelOffer), not known from its name.
  bool from_file = false;
  // Built by the Python worker (models/python/worker.py) rather than by this C++ worker: the
  // orchestrator starts that worker for its trials, and its inspect reads what it offers.
  bool python = false;
};

}  // namespace tunebench::models
