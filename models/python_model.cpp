// A model from a Python file has no C++ build: the orchestrator starts the Python worker for its
// trials (run/worker_launch.cpp, setup_of), which builds it (models/python/user_model.py).
#include <fmt/format.h>

#include "models/build.h"
#include "models/python_model_config.h"

namespace tunebench::models {

std::unique_ptr<BenchModel> python_build(const ModelSpec& spec) {
  throw InvalidSpec(fmt::format(
      "model python ({}) runs in the Python worker (models/python/worker.py), not in the C++ "
      "worker",
      spec.options.value("path", std::string("?"))));
}

}  // namespace tunebench::models
