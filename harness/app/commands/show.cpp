// `tunebench show`: one stored run, analysed; and open_existing, which every reading command uses.
#include <filesystem>
#include <iostream>

#include "analysis/analysis.h"
#include "analysis/reporter.h"
#include "app/commands.h"

namespace tunebench::cli {

storage::Database open_existing(const std::string& path, storage::Database::Access access) {
  if (!std::filesystem::exists(path)) {
    throw storage::StorageError(
        path + " does not exist; run a suite first (tunebench run --suite suites/smoke.json)");
  }
  return storage::Database(path, access);
}

int show_command(const ShowOptions& options) {
  const auto& reporter =
      reporters::reporter(options.json ? "json" : "table", reporters::Output::run);
  const auto db = open_existing(options.db);
  std::cout << reporter.run(analysis::analyze(db, storage::resolve_run(db, options.run)));
  return 0;
}

}  // namespace tunebench::cli
