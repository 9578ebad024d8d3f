// `tunebench export`: a run's samples as JSON, CSV or Google Benchmark's JSON, runs as run
// records for `import` (store/records.cpp), or the stored rows the report reads
// (store/tables.cpp); never over the database itself.
#include "analysis/export.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/commands.h"

namespace tunebench::cli {

namespace {

// Written beside the target and renamed over it: a full disk leaves the old file, not half a
// new one. Without an output file, to stdout.
int write_output(const std::string& text, const std::string& output) {
  if (output.empty()) {
    std::cout << text;
    return 0;
  }
  std::error_code error;
  const std::string partial = output + ".partial";
  {
    std::ofstream out(partial, std::ios::binary);
    out << text;
    out.close();
    if (!out) {
      std::cerr << "tunebench: error: cannot write " << output << ": " << std::strerror(errno)
                << "\n";
      std::filesystem::remove(partial, error);
      return kExitBadInput;
    }
  }
  std::filesystem::rename(partial, output, error);
  if (error) {
    std::cerr << "tunebench: error: cannot write " << output << ": " << error.message() << "\n";
    std::filesystem::remove(partial, error);
    return kExitBadInput;
  }
  std::cerr << "wrote " << output << "\n";
  return 0;
}

}  // namespace

int export_command(const ExportOptions& options) {
  std::error_code same_error;
  if (!options.output.empty() &&
      std::filesystem::equivalent(options.output, options.db, same_error)) {
    std::cerr << "tunebench: error: --output " << options.output << " is the results database "
              << options.db << ": exporting would overwrite it; give another file\n";
    return kExitBadInput;
  }
  if (options.format == "tables") {  // every run: the run argument does not apply
    std::ostringstream tables;
    storage::write_tables(options.db, tables);
    return write_output(tables.str(), options.output);
  }
  const auto db = open_existing(options.db);
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
  return write_output(text, options.output);
}

}  // namespace tunebench::cli
