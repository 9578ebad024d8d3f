// Building a model: the torch side of the registry (models/registry.h), in the tunebench_models
// library. The header itself is free of torch; models/common.h defines BenchModel.
#pragma once

#include <cstdint>
#include <memory>

#include "core/model_spec.h"

namespace tunebench::models {

class BenchModel;

// Builds the model `spec` configures, with its weights drawn from `seed` (the same seed gives
// identical weights). Throws InvalidSpec (models/descriptor.h) for an unknown model, preset or
// option, as the registry's summarize() does.
std::unique_ptr<BenchModel> build_model(const ModelSpec& spec, uint64_t seed);

}  // namespace tunebench::models
