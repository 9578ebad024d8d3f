// `tunebench compare RUN_A RUN_B`: two runs side by side (B / A per benchmark, with the bootstrap
// interval). Benchmarks only one run has are listed as such. Machines for procurement are
// compared by analysis/hosts.h.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "analysis/stats.h"
#include "store/storage.h"

namespace tunebench::check {

struct Comparison {
  std::string run_a, run_b, host_a, host_b;
  struct Row {
    std::string experiment, arm;
    double median_a = NAN, median_b = NAN;  // seconds per iteration
    stats::Effect effect;                   // B / A
  };
  std::vector<Row> rows;
};
Comparison compare(const storage::Database& db, const std::string& run_a, const std::string& run_b);

}  // namespace tunebench::check
