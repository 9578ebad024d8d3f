#include "analysis/run_groups.h"

#include <cmath>
#include <set>

namespace tunebench::check {

RunGroups groups_of(const storage::Database& db, const std::string& uuid) {
  RunGroups out;
  std::set<Key> without;
  for (const auto& t : db.measured_trials(uuid)) {
    if (t.result.status != "ok") continue;
    const Key key{t.spec.experiment, t.spec.arm};
    out.absolute[key].push_back(t.result.sample_seconds);
    const double reference =
        t.result.reference_seconds.empty() ? NAN : stats::median(t.result.reference_seconds);
    if (!(reference > 0)) {
      without.insert(key);
      continue;
    }
    std::vector<double> relative;
    for (double seconds : t.result.sample_seconds) relative.push_back(seconds / reference);
    out.relative[key].push_back(std::move(relative));
  }
  for (const auto& key : without) out.relative.erase(key);
  return out;
}

double median_of(const stats::Groups& groups) {
  std::vector<double> all;
  for (const auto& g : groups) all.insert(all.end(), g.begin(), g.end());
  return all.empty() ? NAN : stats::median(all);
}

}  // namespace tunebench::check
