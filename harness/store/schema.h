// The results schema, in one place: the SQL that takes a file from one version to the next.
// Version 1: hosts, software, runs, trials, samples and their views; 2: noise floors and check
// findings; 3: effects and arm summaries. No torch.
#pragma once

#include <string>

#include "store/storage.h"

namespace tunebench::storage::schema {

// The SQL that takes a file from schema version `from` to `from + 1` (0: a new, empty file), for
// from in [0, kSchemaVersion).
std::string migration(int from);

}  // namespace tunebench::storage::schema
