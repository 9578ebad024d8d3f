// `tunebench import` (hidden): run records, one JSON object a line, stored as finished runs with
// their effects (storage::import_records); reports/generate_history.py makes its histories so.
#include <fmt/format.h>

#include <fstream>

#include "app/commands.h"

namespace tunebench::cli {

int import_command(const ImportOptions& options) {
  storage::Database db(options.db);
  std::ifstream in(options.file);
  if (!in) throw storage::StorageError("cannot read " + options.file);
  fmt::print("{}: stored {} run(s)\n", options.file, storage::import_records(db, in));
  return 0;
}

}  // namespace tunebench::cli
