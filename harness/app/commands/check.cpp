// `tunebench check`: a run against its baseline window (stage 1), then, with --confirm-with, a
// same-night paired A/B of every flagged benchmark against the last-good build (stage 2,
// app/confirm.h); the findings are stored unless --no-store.
#include <iostream>

#include "analysis/reporter.h"
#include "app/commands.h"
#include "app/confirm.h"

namespace tunebench::cli {

int check_command(CheckOptions options) {
  options.check.threshold = options.threshold_pct / 100.0;
  options.check.false_alarm = options.false_alarm_pct / 100.0;
  options.check.flag_level = options.flag_level_pct / 100.0;
  auto db = open_existing(options.db, options.no_store ? storage::Database::Access::kRead
                                                       : storage::Database::Access::kWrite);
  try {
    const auto& reporter = text_reporter(options.format, options.verbose, reporters::Output::check);
    auto report = check::check(db, options.check);
    if (!options.confirm_with.empty()) {
      ConfirmOptions confirm_options;
      confirm_options.db = options.db;
      confirm_options.last_good = options.confirm_with;
      confirm_options.budget_s = options.confirm_budget_s;
      confirm_options.workers = options.confirm_workers;
      confirm_options.quiet = options.quiet;
      confirm_options.command_line = options.command_line;
      confirm(report, confirm_options);
    }
    std::cout << reporter.check(report);
    if (!options.no_store) {
      db.store_findings(report.run_uuid, report.baseline_uuids, report.threshold, now_iso8601(),
                        report.findings());
    }
    return report.regressed() ? 1 : report.unknown() ? kExitUnknown : 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace tunebench::cli
