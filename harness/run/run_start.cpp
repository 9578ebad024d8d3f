// Before a run or a resume measures anything (run/run_start.h).
#include "run/run_start.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <map>

#include "core/liveness.h"
#include "models/registry.h"
#include "models/torchscript.h"
#include "run/leftovers.h"
#include "run/python_model.h"

namespace tunebench::orchestrator {

void interrupt_gone_runs(storage::Database& db, const RunOptions& options,
                         const std::string& resuming) {
  for (const auto& uuid : db.interrupt_gone_runs()) {
    if (options.quiet || uuid == resuming) continue;
    std::cerr << fmt::format(
        "run {} was left running by an orchestrator that is gone: marked interrupted; resume "
        "with: {}\n",
        uuid, liveness::resume_command(uuid, options.db_path));
  }
}

plan::ModelOffers read_file_models(const suite::Suite& suite) {
  plan::ModelOffers offers;
  std::map<std::string, bool> trained;  // by path: some experiment trains it
  for (const auto& x : suite.experiments) {
    if (!models::descriptor(x.model.model).from_file) continue;
    trained[x.model.options.value("path", std::string())] |= x.mode == Mode::train;
  }
  if (trained.empty()) return offers;
  torch::set_num_threads(1);  // this process only reads; the workers measure
  for (const auto& x : suite.experiments) {
    if (!models::descriptor(x.model.model).from_file) continue;
    const std::string path = x.model.options.value("path", std::string());
    if (offers.count(path)) continue;
    offers[path] = models::descriptor(x.model.model).python
                       ? python_model::inspect(x.model, x.batch, trained[path], x.timeout_s)
                       : models::inspect_file_model(x.model, x.batch, trained[path]);
  }
  return offers;
}

bool ready_to_run(const RunOptions& options) {
  if (const std::string problem = temp_directory_problem(); !problem.empty()) {
    std::cerr << "tunebench: error: " << problem << ".\nNothing was run or written.\n";
    return false;
  }
  for (const auto& line : clear_leftovers(std::filesystem::temp_directory_path())) {
    if (!options.quiet) std::cerr << "tunebench: " << line << "\n";
  }
  return true;
}

}  // namespace tunebench::orchestrator
