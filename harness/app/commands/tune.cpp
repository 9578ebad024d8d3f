// `tunebench tune`: the configuration to set for one model on this host (run/tune.h).
#include <filesystem>
#include <iostream>

#include "app/commands.h"
#include "models/registry.h"

namespace tunebench::cli {

int tune_command(orchestrator::TuneOptions options) {
  plan::ModelRequest& model = options.run.model;
  // --model names a file where one exists; otherwise a built-in model by its name (a name that
  // is neither gets model_suite's message, which lists the built-in ones).
  std::error_code ec;
  const bool builtin = !std::filesystem::exists(model.path, ec) &&
                       model.path.find('/') == std::string::npos &&
                       model.path.find('.') == std::string::npos;
  if (builtin) {
    model.builtin = model.path;
    model.path.clear();
    if (!model.inputs.empty()) {
      std::cerr << "tunebench: error: --input is for a model from a file; built-in model "
                << model.builtin << " makes its own inputs\n";
      return kExitBadInput;
    }
  }
  return orchestrator::tune(options);
}

}  // namespace tunebench::cli
