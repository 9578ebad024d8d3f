// `tunebench merge`: other machines' databases imported into this one.
#include <fmt/format.h>

#include "app/commands.h"

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
  }
  return 0;
}

}  // namespace tunebench::cli
