// Which stored runs `tunebench calibrate --from` measures the noise floors from.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "store/storage.h"

namespace tunebench::cli {

// `from` is label:X (every completed run labelled X) or last:N (the newest N completed runs),
// counting only runs of the latest run's suite (stage-2 A/Bs passed over) on its host and
// software stack (tunebench's own commits apart, as check's history). Oldest first. Throws
// std::invalid_argument saying what a valid `from` is; StorageError when the database has no run.
std::vector<std::string> calibration_runs(const storage::Database& db, const std::string& from);

}  // namespace tunebench::cli
