#include "app/calibration_runs.h"

#include "analysis/check.h"

namespace tunebench::cli {

std::vector<std::string> calibration_runs(const storage::Database& db, const std::string& from) {
  const auto colon = from.find(':');
  const std::string kind = from.substr(0, colon),
                    value = colon == std::string::npos ? "" : from.substr(colon + 1);
  if ((kind != "label" && kind != "last") || value.empty()) {
    throw std::invalid_argument("--from must be label:X or last:N, got '" + from + "'");
  }
  // The runs are those of the newest run's suite, host and software stack (tunebench's own
  // commits apart, as check's history: analysis/check.h same_stack); stage 2's A/Bs, which check
  // stores after the night it checked, are not a suite to calibrate.
  const auto latest = db.run(check::resolve_checked_run(db, "latest"));
  std::vector<std::string> uuids;
  for (const auto& uuid : db.run_uuids()) {
    const auto r = db.run(uuid);
    if (r.record.suite_name != latest.record.suite_name || r.status != "completed") continue;
    if (r.record.host.dump() != latest.record.host.dump() ||
        !check::same_stack(r.record.software, latest.record.software)) {
      continue;
    }
    if (kind == "label" && r.record.label != value) continue;
    uuids.push_back(uuid);
  }
  if (kind == "last") {
    size_t n = 0;
    try {
      n = std::stoul(value);
    } catch (const std::exception&) {
      throw std::invalid_argument("--from last:N needs a number, got '" + value + "'");
    }
    if (uuids.size() > n) uuids.erase(uuids.begin(), uuids.end() - long(n));
  }
  return uuids;
}

}  // namespace tunebench::cli
