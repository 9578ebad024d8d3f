// `tunebench calibrate`: A/A runs of a suite (or stored runs, app/calibration_runs.h), then their
// noise floors, stored and printed.
#include <fmt/format.h>

#include <iostream>

#include "analysis/calibration.h"
#include "analysis/reporter.h"
#include "app/calibration_runs.h"
#include "app/commands.h"

namespace tunebench::cli {

namespace {

// Makes `o.runs` A/A runs of `o.suite` and appends their uuids; 0, or the exit code when a run
// was refused or did not complete cleanly.
int make_aa_runs(const CalibrateOptions& o, std::vector<std::string>& uuids) {
  orchestrator::RunOptions run_options = o.run;
  run_options.suite_path = o.suite;
  run_options.db_path = o.db;
  run_options.label = o.label;
  for (int i = 0; i < o.runs; ++i) {
    if (!run_options.quiet) fmt::print(stderr, "[calibrate] A/A run {} of {}\n", i + 1, o.runs);
    const int rc = orchestrator::run(run_options);
    if (rc == kExitBadInput) return rc;
    const storage::Database db(o.db);
    const std::string uuid = *db.latest_run_uuid();
    const auto stored = db.run(uuid);
    if (stored.status != "completed") {
      std::cerr << "tunebench: error: calibration run " << uuid << " ended " << stored.status
                << ": a noise floor needs clean runs; fix the failures and calibrate again\n";
      return 1;
    }
    uuids.push_back(uuid);
  }
  return 0;
}

// The floors of `uuids`, stored with the newest of them and printed.
int store_floors(const CalibrateOptions& o, const std::vector<std::string>& uuids) {
  storage::Database db(o.db);
  try {
    const auto floors = check::calibrate(db, uuids, o.floors, now_iso8601());
    db.store_noise_floors(uuids.back(), floors);
    std::cout << reporters::reporter("table", reporters::Output::floors).floors(floors);
  } catch (const std::invalid_argument& e) {
    std::cerr << "tunebench: error: " << e.what() << "\n";
    return kExitBadInput;
  }
  return 0;
}

}  // namespace

int calibrate_command(CalibrateOptions o) {
  if (o.suite.empty() == o.from.empty()) {
    std::cerr << "tunebench: error: calibrate needs --suite FILE (make A/A runs) or --from "
                 "label:X|last:N (use stored runs)\n";
    return kExitBadInput;
  }
  o.floors.false_alarm = o.false_alarm_pct / 100.0;
  o.floors.power = o.power_pct / 100.0;
  if (!(o.floors.false_alarm > 0 && o.floors.false_alarm < 0.5) ||
      !(o.floors.power > 0 && o.floors.power < 1)) {
    std::cerr << "tunebench: error: --false-alarm must lie in (0, 50) and --power in (0, 100) "
                 "per cent\n";
    return kExitBadInput;
  }
  std::vector<std::string> uuids;
  if (!o.suite.empty()) {
    if (const int rc = make_aa_runs(o, uuids); rc != 0) return rc;
  } else {
    try {
      uuids = calibration_runs(open_existing(o.db), o.from);
    } catch (const std::invalid_argument& e) {
      std::cerr << "tunebench: error: " << e.what() << "\n";
      return kExitBadInput;
    }
  }
  return store_floors(o, uuids);
}

}  // namespace tunebench::cli
