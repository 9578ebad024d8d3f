// `tunebench show`: one stored run, analysed; and open_existing and text_reporter, which every
// reading command uses.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "analysis/analysis.h"
#include "analysis/reporter.h"
#include "app/commands.h"
#include "run/tune.h"

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
  std::string uuid;
  try {
    uuid = storage::resolve_run(db, options.run);
  } catch (const storage::StorageError&) {
    // Not a run: a stored recommendation (`tunebench tune`) of that id, printed again.
    std::vector<storage::Database::Tuning> found;
    for (auto& t : db.tunings())
      if (!options.run.empty() && t.uuid.rfind(options.run, 0) == 0) found.push_back(std::move(t));
    if (found.size() != 1) throw;
    if (options.json) {
      std::cout << found.front().recommendation.dump(2) << "\n";
    } else {
      orchestrator::print_recommendation(std::cout, found.front().uuid,
                                         found.front().recommendation);
    }
    return 0;
  }
  std::cout << reporter.run(analysis::analyze(db, uuid));
  return 0;
}

}  // namespace tunebench::cli
