// `tunebench import`: the runs of a run-records file (store/records.cpp) stored in a database,
// each once, with their effects computed again; nothing stored from a malformed or newer file.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "app/commands.h"

namespace tunebench::cli {

int import_command(const ImportOptions& options) {
  std::ifstream in(options.file);
  if (!in) {
    std::cerr << "tunebench: error: cannot read " << options.file << "\n";
    return kExitBadInput;
  }
  std::error_code ec;
  const bool created = !std::filesystem::exists(options.db, ec);
  try {
    storage::Database db(options.db);
    const auto before = machines_by_hostname(db);
    const auto result = storage::import_records(db, in, options.file);
    const auto& m = result.merged;
    fmt::print(
        "{}: {} run record(s): imported {}, {} already here, {} still running (skipped), "
        "{} new host(s)\n",
        options.file, result.records, m.imported.size(), m.already_here.size(),
        m.still_running.size(), m.hosts_added);
    say_other_hardware(db, options.file, m.imported, before);
    for (const auto& [uuid, why] : m.damaged) {
      fmt::print(stderr, "tunebench: error: {}: run {} not imported: {}\n", options.file, uuid,
                 why);
    }
    return m.damaged.empty() ? 0 : kExitBadInput;
  } catch (const storage::StorageError& e) {
    std::cerr << "tunebench: error: " << e.what() << "; nothing was stored\n";
    if (created) {
      for (const char* suffix : {"", "-wal", "-shm"})
        std::filesystem::remove(options.db + suffix, ec);
    }
    return kExitBadInput;
  }
}

}  // namespace tunebench::cli
