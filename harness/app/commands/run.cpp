// `tunebench run`: a suite (or the rest of an interrupted run) through the orchestrator.
#include <iostream>

#include "app/commands.h"

namespace tunebench::cli {

int run_command(const orchestrator::RunOptions& options) {
  if (options.suite_path.empty() && options.resume.empty() && options.model.path.empty()) {
    std::cerr << "tunebench: error: run needs --suite FILE (a new run), --model FILE --input "
                 "SHAPE:DTYPE (a new run of every knob on your model) or --resume RUN\n";
    return kExitBadInput;
  }
  return orchestrator::run(options);
}

}  // namespace tunebench::cli
