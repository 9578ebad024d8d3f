// `tunebench show`: one stored run, analysed; and open_existing and text_reporter, which every
// reading command uses.
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

const reporters::Reporter& text_reporter(const std::string& format, bool verbose,
                                         reporters::Output what) {
  if (!format.empty()) return reporters::reporter(format, what);
  if (verbose) return reporters::reporter("table", what);
  return reporters::glance_reporter(isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr);
}

int show_command(const ShowOptions& options) {
  const auto& reporter =
      text_reporter(options.json ? "json" : "", options.verbose, reporters::Output::run);
  const auto db = open_existing(options.db);
  std::cout << reporter.run(analysis::analyze(db, storage::resolve_run(db, options.run)));
  return 0;
}

}  // namespace tunebench::cli
