// `tunebench export`: a run's trials and samples as JSON, CSV (one row per sample), or Google
// Benchmark's JSON output format, so that its tools/compare.py can compare two exports.
#pragma once

#include <string>

#include "store/storage.h"

namespace tunebench::exporter {

// format: "json", "csv" or "gbench"; throws std::invalid_argument for another.
std::string export_run(const storage::Database& db, const std::string& run_uuid,
                       const std::string& format);

}  // namespace tunebench::exporter
