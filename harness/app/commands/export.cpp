// `tunebench export`: a run's samples as JSON, CSV or Google Benchmark's JSON, or runs as run
// records for `import` (store/records.cpp); never over the database itself.
#include "analysis/export.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/commands.h"

namespace tunebench::cli {

int export_command(const ExportOptions& options) {
  const auto db = open_existing(options.db);
  std::error_code same_error;
  if (!options.output.empty() &&
      std::filesystem::equivalent(options.output, options.db, same_error)) {
    std::cerr << "tunebench: error: --output " << options.output << " is the results database "
              << options.db << ": exporting would overwrite it; give another file\n";
    return kExitBadInput;
  }
  std::string text;
  if (options.format == "records") {
    const auto uuids = options.run == "all"
                           ? db.run_uuids()
                           : std::vector<std::string>{storage::resolve_run(db, options.run)};
    std::ostringstream records;
    const int written = storage::write_records(db, uuids, records);
    if (written < static_cast<int>(uuids.size())) {
      std::cerr << "left out " << uuids.size() - written << " run(s) still running\n";
    }
    text = records.str();
  } else if (options.run == "all") {
    std::cerr << "tunebench: error: 'all' exports with --format records only; give one run for "
              << options.format << "\n";
    return kExitBadInput;
  } else {
    text = exporter::export_run(db, storage::resolve_run(db, options.run), options.format);
  }
  if (options.output.empty()) {
    std::cout << text;
    return 0;
  }
  // Written beside the target and renamed over it: a full disk leaves the old file, not half a
  // new one.
  const std::string partial = options.output + ".partial";
  {
    std::ofstream out(partial, std::ios::binary);
    out << text;
    out.close();
    if (!out) {
      std::cerr << "tunebench: error: cannot write " << options.output << ": "
                << std::strerror(errno) << "\n";
      std::filesystem::remove(partial, same_error);
      return kExitBadInput;
    }
  }
  std::filesystem::rename(partial, options.output, same_error);
  if (same_error) {
    std::cerr << "tunebench: error: cannot write " << options.output << ": " << same_error.message()
              << "\n";
    std::filesystem::remove(partial, same_error);
    return kExitBadInput;
  }
  std::cerr << "wrote " << options.output << "\n";
  return 0;
}

}  // namespace tunebench::cli
