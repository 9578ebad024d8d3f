// `tunebench merge`: other machines' databases imported into this one.
#include <fmt/format.h>

#include "app/commands.h"
#include "core/liveness.h"

namespace tunebench::cli {

int merge_command(const MergeOptions& options) {
  storage::Database db(options.db);
  for (const auto& file : options.files) {
    const auto result = db.merge_from(file);
    fmt::print(
        "{}: imported {} run(s), {} already here, {} still running there (skipped), {} new "
        "host(s)\n",
        file, result.imported.size(), result.already_here.size(), result.still_running.size(),
        result.hosts_added);
    // Stored "running" there, but their orchestrator is gone: imported as interrupted.
    for (const auto& uuid : result.interrupted) {
      fmt::print(
          "{}: run {} was running there, its orchestrator is gone: imported as interrupted; "
          "resume with: {}\n",
          file, uuid, liveness::resume_command(uuid, options.db));
    }
  }
  return 0;
}

}  // namespace tunebench::cli
