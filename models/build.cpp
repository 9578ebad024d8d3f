#include "models/build.h"

#include "models/common.h"
#include "models/registry.h"

namespace tunebench::models {

// Each model's descriptor (its configuration file) and builder (its torch file), declared from
// the one list.
#define TUNEBENCH_MODEL(model)                 \
  const ModelDescriptor& model##_descriptor(); \
  std::unique_ptr<BenchModel> model##_build(const ModelSpec& spec);
#include "models/registry.def"
#undef TUNEBENCH_MODEL

namespace {
struct Builder {
  const ModelDescriptor& descriptor;
  std::unique_ptr<BenchModel> (*build)(const ModelSpec&);
};

const std::vector<Builder>& builders() {
  static const std::vector<Builder> all{
#define TUNEBENCH_MODEL(model) {model##_descriptor(), &model##_build},
#include "models/registry.def"
#undef TUNEBENCH_MODEL
  };
  return all;
}
}  // namespace

std::unique_ptr<BenchModel> build_model(const ModelSpec& spec, uint64_t seed) {
  const ModelDescriptor& wanted = descriptor(spec.model);  // an unknown model throws before seeding
  for (const Builder& b : builders()) {
    if (&b.descriptor != &wanted) continue;
    torch::manual_seed(seed);
    return b.build(spec);
  }
  throw InvalidSpec("model '" + spec.model + "' is in the registry but has no builder");
}

}  // namespace tunebench::models
