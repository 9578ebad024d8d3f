// `tunebench export`: a run's samples as JSON, CSV or Google Benchmark's JSON, never over the
// database itself.
#include "analysis/export.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

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
  const std::string text =
      exporter::export_run(db, storage::resolve_run(db, options.run), options.format);
  if (options.output.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream out(options.output, std::ios::binary);
  out << text;
  if (!out) {
    std::cerr << "tunebench: error: cannot write " << options.output << ": " << std::strerror(errno)
              << "\n";
    return kExitBadInput;
  }
  std::cerr << "wrote " << options.output << "\n";
  return 0;
}

}  // namespace tunebench::cli
