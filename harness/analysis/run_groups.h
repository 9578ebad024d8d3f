// Each benchmark's samples of one stored run, as the check, its calibration and the two-run
// comparison read them: the samples of each ok trial (one group per process), keyed by
// experiment and arm.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "analysis/stats.h"
#include "store/storage.h"

namespace tunebench::check {

using Key = std::pair<std::string, std::string>;  // experiment, arm

// Both ways, from one read of the run's trials: absolute (seconds per iteration) and relative to
// the reference kernel timed in the same process (core/reference.h: a trial's samples divided by
// the median of its reference times). A benchmark is in `relative` only when every ok trial of
// it has reference times (runs stored before schema version 6 have none).
struct RunGroups {
  std::map<Key, stats::Groups> absolute, relative;
};
RunGroups groups_of(const storage::Database& db, const std::string& uuid);

// The median of every sample of the groups pooled; NaN without any.
double median_of(const stats::Groups& groups);

}  // namespace tunebench::check
