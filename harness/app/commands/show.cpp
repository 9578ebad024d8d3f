// `tunebench show`: one stored run, analysed; and open_existing, which every reading command uses.
#include <unistd.h>

#include <cstdlib>
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
  // Colour on a terminal, never in a pipe or a file, and not where NO_COLOR is set (no-color.org).
  const bool colour = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
  const auto& reporter = options.json      ? reporters::reporter("json", reporters::Output::run)
                         : options.verbose ? reporters::reporter("table", reporters::Output::run)
                                           : reporters::glance_reporter(colour);
  const auto db = open_existing(options.db);
  std::cout << reporter.run(analysis::analyze(db, storage::resolve_run(db, options.run)));
  return 0;
}

}  // namespace tunebench::cli
