// The models and presets tunebench knows, by name: what a suite, the command line and the
// reports refer to. This header is free of torch so that the command line compiles quickly;
// build_model() hands back the torch side (models/common.h).
#pragma once

#include <cstdint>
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

// Builds the model with its weights drawn from `seed` (the same seed gives identical weights).
std::unique_ptr<BenchModel> build_model(const ModelSpec& spec, uint64_t seed);

}  // namespace tunebench::models
