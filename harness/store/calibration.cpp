// What `tunebench calibrate` and `tunebench check` store: noise floors and findings.
#include <algorithm>
#include <set>
#include <tuple>

#include "store/internal.h"

namespace tunebench::storage {

using internal::guarded;
using internal::unknown_run;
using nlohmann::json;

namespace {

using internal::bind_number_or_null;
using internal::dump;
using internal::kFindingColumnCount;
using internal::kFindingColumns;
using internal::kFloorColumnCountV6;
using internal::kFloorColumnsV6;
using internal::placeholders;

}  // namespace

void Database::store_noise_floors(const std::string& reference_run,
                                  const std::vector<NoiseFloor>& floors) {
  guarded(path_, "cannot store the noise floors of run " + reference_run, [&] {
    SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement ids(*db_, "SELECT host_id, software_id, suite_name FROM runs WHERE uuid = ?");
    ids.bind(1, reference_run);
    if (!ids.executeStep()) throw unknown_run(path_, reference_run);
    const std::string host = ids.getColumn(0).getString(), software = ids.getColumn(1).getString(),
                      suite = ids.getColumn(2).getString();
    SQLite::Statement clear(
        *db_, "DELETE FROM noise_floors WHERE host_id = ? AND software_id = ? AND suite_name = ?");
    clear.bind(1, host);
    clear.bind(2, software);
    clear.bind(3, suite);
    clear.exec();
    SQLite::Statement insert(*db_, fmt::format("INSERT INTO noise_floors ({}) VALUES ({})",
                                               kFloorColumnsV6, placeholders(kFloorColumnCountV6)));
    for (const auto& f : floors) {
      if (!std::isfinite(f.sigma_log) || !std::isfinite(f.min_detectable)) {
        throw StorageError(
            fmt::format("{}: noise floor of {} {} is not a number", path_, f.experiment, f.arm));
      }
      insert.bind(1, host);
      insert.bind(2, software);
      insert.bind(3, suite);
      insert.bind(4, f.experiment);
      insert.bind(5, f.arm);
      insert.bind(6, static_cast<int64_t>(f.run_uuids.size()));
      insert.bind(7, dump(f.run_uuids));
      insert.bind(8, f.sigma_log);
      insert.bind(9, f.false_alarm);
      insert.bind(10, f.power);
      insert.bind(11, f.baseline_runs);
      insert.bind(12, f.min_detectable);
      insert.bind(13, f.calibrated_at);
      bind_number_or_null(insert, 14, f.sigma_log_relative);
      insert.exec();
      insert.reset();
    }
    transaction.commit();
  });
}

std::vector<Database::NoiseFloor> Database::noise_floors(const std::string& run_uuid) const {
  return guarded(path_, "cannot read the noise floors for run " + run_uuid, [&] {
    SQLite::Statement query(
        *db_,
        // The floors of the run's suite and host, calibrated on the same software stack: the
        // software without the harness's git revision (analysis/check.cpp, stack_fingerprint),
        // so tunebench's own commits keep their calibration; the newest calibration first.
        "SELECT f.experiment, f.arm, f.run_uuids, f.sigma_log, f.false_alarm, f.power, "
        "f.baseline_runs, f.min_detectable, f.calibrated_at, f.sigma_log_relative FROM "
        "noise_floors f JOIN runs r ON r.host_id = f.host_id AND r.suite_name = f.suite_name "
        "JOIN software rs ON rs.id = r.software_id JOIN software fs ON fs.id = f.software_id "
        "WHERE r.uuid = ? AND json_remove(rs.json, '$.git_revision') = "
        "json_remove(fs.json, '$.git_revision') "
        "ORDER BY f.calibrated_at DESC, f.rowid DESC");
    query.bind(1, run_uuid);
    std::vector<NoiseFloor> out;
    std::set<std::pair<std::string, std::string>> seen;
    while (query.executeStep()) {
      if (!seen.emplace(query.getColumn(0).getString(), query.getColumn(1).getString()).second) {
        continue;  // an older calibration of the same benchmark
      }
      NoiseFloor f;
      f.experiment = query.getColumn(0).getString();
      f.arm = query.getColumn(1).getString();
      try {
        f.run_uuids = internal::parse_column(query.getColumn(2),
                                             "noise floor's runs "
                                             "(noise_floors.run_uuids)")
                          .get<std::vector<std::string>>();
      } catch (const nlohmann::json::exception& e) {
        throw internal::damaged_row(path_, run_uuid, internal::BadRow(e.what()));
      } catch (const internal::BadRow& bad) {
        throw internal::damaged_row(path_, run_uuid, bad);
      }
      f.sigma_log = query.getColumn(3).getDouble();
      f.false_alarm = query.getColumn(4).getDouble();
      f.power = query.getColumn(5).getDouble();
      f.baseline_runs = query.getColumn(6).getInt();
      f.min_detectable = query.getColumn(7).getDouble();
      f.calibrated_at = query.getColumn(8).getString();
      const auto relative = query.getColumn(9);
      f.sigma_log_relative = relative.isNull() ? NAN : relative.getDouble();
      out.push_back(std::move(f));
    }
    std::sort(out.begin(), out.end(), [](const NoiseFloor& a, const NoiseFloor& b) {
      return std::tie(a.experiment, a.arm) < std::tie(b.experiment, b.arm);
    });
    return out;
  });
}

void Database::store_findings(const std::string& run_uuid, const std::vector<std::string>& baseline,
                              double threshold, const std::string& checked_at,
                              const std::vector<Finding>& findings) {
  static const std::vector<std::string> kKinds{"regression", "step change", "stopped helping"};
  for (const auto& f : findings) {
    if (std::find(kKinds.begin(), kKinds.end(), f.kind) == kKinds.end()) {
      throw StorageError(
          fmt::format("{}: finding kind must be regression, step change or stopped "
                      "helping, got \"{}\"",
                      path_, f.kind));
    }
  }
  guarded(path_, "cannot store the check of run " + run_uuid, [&] {
    SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement exists(*db_, "SELECT 1 FROM runs WHERE uuid = ?");
    exists.bind(1, run_uuid);
    if (!exists.executeStep()) throw unknown_run(path_, run_uuid);
    SQLite::Statement clear(*db_, "DELETE FROM regressions WHERE run_uuid = ?");
    clear.bind(1, run_uuid);
    clear.exec();
    SQLite::Statement insert(*db_, fmt::format("INSERT INTO regressions ({}) VALUES ({})",
                                               kFindingColumns, placeholders(kFindingColumnCount)));
    for (const auto& f : findings) {
      insert.bind(1, run_uuid);
      insert.bind(2, f.experiment);
      insert.bind(3, f.arm);
      insert.bind(4, f.kind);
      bind_number_or_null(insert, 5, f.ratio);
      bind_number_or_null(insert, 6, f.lo);
      bind_number_or_null(insert, 7, f.hi);
      insert.bind(8, f.detail);
      insert.bind(9, dump(baseline));
      insert.bind(10, threshold);
      insert.bind(11, checked_at);
      insert.exec();
      insert.reset();
    }
    transaction.commit();
  });
}

std::vector<Database::Finding> Database::findings(const std::string& run_uuid) const {
  return guarded(path_, "cannot read the check of run " + run_uuid, [&] {
    SQLite::Statement query(*db_,
                            "SELECT experiment, arm, kind, ratio, lo, hi, detail FROM regressions "
                            "WHERE run_uuid = ? ORDER BY id");
    query.bind(1, run_uuid);
    std::vector<Finding> out;
    auto number = [](const SQLite::Column& c) { return c.isNull() ? NAN : c.getDouble(); };
    while (query.executeStep()) {
      Finding f;
      f.experiment = query.getColumn(0).getString();
      f.arm = query.getColumn(1).getString();
      f.kind = query.getColumn(2).getString();
      f.ratio = number(query.getColumn(3));
      f.lo = number(query.getColumn(4));
      f.hi = number(query.getColumn(5));
      f.detail = query.getColumn(6).getString();
      out.push_back(std::move(f));
    }
    return out;
  });
}

}  // namespace tunebench::storage
