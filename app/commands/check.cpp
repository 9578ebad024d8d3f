// `tunebench check`: a run against its baseline window; the findings are stored unless
// --no-store.
#include <iostream>

#include "app/commands.h"

namespace tunebench::cli {

int check_command(CheckOptions options) {
  options.check.threshold = options.threshold_pct / 100.0;
  options.check.false_alarm = options.false_alarm_pct / 100.0;
  auto db = open_existing(options.db);
  try {
    const auto report = check::check(db, options.check);
    std::cout << check::format(report, options.format);
    if (!options.no_store) {
      db.store_findings(report.run_uuid, report.baseline_uuids, report.threshold, now_iso8601(),
                        report.findings());
    }
    return report.regressed() ? 1 : 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace tunebench::cli
