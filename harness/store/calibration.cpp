// What `tunebench calibrate` and `tunebench check` store: noise floors and findings, each by its
// column list (columns.h).
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "store/columns.h"
#include "store/internal.h"

namespace tunebench::storage {

using internal::guarded;
using internal::unknown_run;
using nlohmann::json;

namespace {

using internal::bind_number_or_null;
using internal::dump;
using internal::number_or_nan;
using St = SQLite::Statement;
using Col = SQLite::Column;
using Floor = Database::NoiseFloor;
using Finding = Database::Finding;

// The list itself, one entry per column in table order: long because it is the whole table.
std::vector<FloorColumn> make_floor_columns() {
  // clang-format off
  return {
    {"host_id", "TEXT NOT NULL REFERENCES hosts (id)", 2,
     [](St& st, const char* p, const FloorRow& r) { st.bind(p, r.host_id); }, nullptr},
    {"software_id", "TEXT NOT NULL REFERENCES software (id)", 2,
     [](St& st, const char* p, const FloorRow& r) { st.bind(p, r.software_id); }, nullptr},
    {"suite_name", "TEXT NOT NULL", 2,
     [](St& st, const char* p, const FloorRow& r) { st.bind(p, r.suite_name); }, nullptr},
    {"experiment", "TEXT NOT NULL", 2,
     [](St& st, const char* p, const FloorRow& r) { st.bind(p, r.floor.experiment); },
     [](const Col& c, Floor& f) { f.experiment = c.getString(); }},
    {"arm", "TEXT NOT NULL", 2,
     [](St& st, const char* p, const FloorRow& r) { st.bind(p, r.floor.arm); },
     [](const Col& c, Floor& f) { f.arm = c.getString(); }},
    // A/A runs measured
    {"runs", "INTEGER NOT NULL", 2,
     [](St& st, const char* p, const FloorRow& r) {
       st.bind(p, static_cast<int64_t>(r.floor.run_uuids.size()));
     }, nullptr},
    // JSON array of those runs
    {"run_uuids", "TEXT NOT NULL", 2,
     [](St& st, const char* p, const FloorRow& r) { st.bind(p, dump(r.floor.run_uuids)); },
     [](const Col& c, Floor& f) {
       f.run_uuids = internal::parse_column(c, "noise floor's runs (noise_floors.run_uuids)")
                         .get<std::vector<std::string>>();
     }},
    // standard deviation of ln(run median) across the runs
    {"sigma_log", "REAL NOT NULL", 2,
     [](St& st, const char* p, const FloorRow& r) { st.bind(p, r.floor.sigma_log); },
     [](const Col& c, Floor& f) { f.sigma_log = c.getDouble(); }},
    // one-sided false-alarm rate the floor is set for
    {"false_alarm", "REAL NOT NULL", 2,
     [](St& st, const char* p, const FloorRow& r) { st.bind(p, r.floor.false_alarm); },
     [](const Col& c, Floor& f) { f.false_alarm = c.getDouble(); }},
    // detection probability min_detectable is computed for
    {"power", "REAL NOT NULL", 2,
     [](St& st, const char* p, const FloorRow& r) { st.bind(p, r.floor.power); },
     [](const Col& c, Floor& f) { f.power = c.getDouble(); }},
    // baseline window assumed by min_detectable
    {"baseline_runs", "INTEGER NOT NULL", 2,
     [](St& st, const char* p, const FloorRow& r) { st.bind(p, r.floor.baseline_runs); },
     [](const Col& c, Floor& f) { f.baseline_runs = c.getInt(); }},
    // smallest slowdown detectable, as a fraction (0.05 = 5 %)
    {"min_detectable", "REAL NOT NULL", 2,
     [](St& st, const char* p, const FloorRow& r) { st.bind(p, r.floor.min_detectable); },
     [](const Col& c, Floor& f) { f.min_detectable = c.getDouble(); }},
    {"calibrated_at", "TEXT NOT NULL", 2,
     [](St& st, const char* p, const FloorRow& r) { st.bind(p, r.floor.calibrated_at); },
     [](const Col& c, Floor& f) { f.calibrated_at = c.getString(); }},
    // σ of ln(run median / reference): the noise relative to the reference kernel
    {"sigma_log_relative", "REAL", 6,
     [](St& st, const char* p, const FloorRow& r) {
       bind_number_or_null(st, p, r.floor.sigma_log_relative);
     },
     [](const Col& c, Floor& f) { f.sigma_log_relative = number_or_nan(c); }},
  };
  // clang-format on
}

// What `tunebench check` may store as a finding's kind: the table's CHECK and store_findings'
// own test, from this one list.
const std::vector<std::string> kFindingKinds{"regression", "step change", "stopped helping",
                                             "unconfirmed"};

// The list itself, one entry per column in table order: long because it is the whole table.
std::vector<FindingColumn> make_finding_columns() {
  // clang-format off
  return {
    {"run_uuid", "TEXT NOT NULL REFERENCES runs (uuid) ON DELETE CASCADE", 2,
     [](St& st, const char* p, const FindingRow& r) { st.bind(p, r.run_uuid); }, nullptr},
    {"experiment", "TEXT NOT NULL", 2,
     [](St& st, const char* p, const FindingRow& r) { st.bind(p, r.finding.experiment); },
     [](const Col& c, Finding& f) { f.experiment = c.getString(); }},
    {"arm", "TEXT NOT NULL", 2,
     [](St& st, const char* p, const FindingRow& r) { st.bind(p, r.finding.arm); },
     [](const Col& c, Finding& f) { f.arm = c.getString(); }},
    // 'unconfirmed' since version 10 (schema.cpp rebuilds the table of an older file)
    {"kind", fmt::format("TEXT NOT NULL CHECK (kind IN ('{}'))", fmt::join(kFindingKinds, "', '")), 2,
     [](St& st, const char* p, const FindingRow& r) { st.bind(p, r.finding.kind); },
     [](const Col& c, Finding& f) { f.kind = c.getString(); }},
    // run / baseline (regression), after / before (step change), with its interval
    {"ratio", "REAL", 2,
     [](St& st, const char* p, const FindingRow& r) { bind_number_or_null(st, p, r.finding.ratio); },
     [](const Col& c, Finding& f) { f.ratio = number_or_nan(c); }},
    {"lo", "REAL", 2,
     [](St& st, const char* p, const FindingRow& r) { bind_number_or_null(st, p, r.finding.lo); },
     [](const Col& c, Finding& f) { f.lo = number_or_nan(c); }},
    {"hi", "REAL", 2,
     [](St& st, const char* p, const FindingRow& r) { bind_number_or_null(st, p, r.finding.hi); },
     [](const Col& c, Finding& f) { f.hi = number_or_nan(c); }},
    // the finding in words, with its interval
    {"detail", "TEXT NOT NULL", 2,
     [](St& st, const char* p, const FindingRow& r) { st.bind(p, r.finding.detail); },
     [](const Col& c, Finding& f) { f.detail = c.getString(); }},
    // JSON array of the baseline runs
    {"baseline", "TEXT NOT NULL", 2,
     [](St& st, const char* p, const FindingRow& r) { st.bind(p, r.baseline); }, nullptr},
    {"threshold", "REAL NOT NULL", 2,
     [](St& st, const char* p, const FindingRow& r) { st.bind(p, r.threshold); }, nullptr},
    {"checked_at", "TEXT NOT NULL", 2,
     [](St& st, const char* p, const FindingRow& r) { st.bind(p, r.checked_at); }, nullptr},
  };
  // clang-format on
}

}  // namespace

const std::vector<FloorColumn>& floor_columns() {
  static const std::vector<FloorColumn> columns = make_floor_columns();
  return columns;
}

const std::vector<FindingColumn>& finding_columns() {
  static const std::vector<FindingColumn> columns = make_finding_columns();
  return columns;
}

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
    SQLite::Statement insert(*db_, insert_sql("noise_floors", floor_columns()));
    for (const auto& f : floors) {
      if (!std::isfinite(f.sigma_log) || !std::isfinite(f.min_detectable)) {
        throw StorageError(
            fmt::format("{}: noise floor of {} {} is not a number", path_, f.experiment, f.arm));
      }
      bind_row(insert, floor_columns(), FloorRow{host, software, suite, f});
      insert.exec();
      insert.reset();
    }
    transaction.commit();
  });
}

std::vector<Database::NoiseFloor> Database::noise_floors(const std::string& run_uuid) const {
  return guarded(path_, "cannot read the noise floors for run " + run_uuid, [&] {
    // The floors of the run's suite and host, calibrated on the same software stack: the
    // software without the harness's git revision (analysis/check.cpp, stack_fingerprint), so
    // tunebench's own commits keep their calibration; the newest calibration first.
    const std::string columns = qualified_names(floor_columns(), "f");
    SQLite::Statement query(
        *db_, fmt::format("SELECT {} FROM noise_floors f JOIN runs r ON r.host_id = f.host_id "
                          "AND r.suite_name = f.suite_name JOIN software rs ON rs.id = "
                          "r.software_id JOIN software fs ON fs.id = f.software_id WHERE r.uuid "
                          "= ? AND json_remove(rs.json, '$.git_revision') = json_remove(fs.json, "
                          "'$.git_revision') ORDER BY f.calibrated_at DESC, f.rowid DESC",
                          columns));
    query.bind(1, run_uuid);
    std::vector<NoiseFloor> out;
    std::set<std::pair<std::string, std::string>> seen;
    while (query.executeStep()) {
      NoiseFloor f;
      try {
        read_row(query, floor_columns(), f);
      } catch (const nlohmann::json::exception& e) {
        throw internal::damaged_row(path_, run_uuid, internal::BadRow(e.what()));
      } catch (const internal::BadRow& bad) {
        throw internal::damaged_row(path_, run_uuid, bad);
      }
      // An older calibration of the same benchmark is passed over.
      if (seen.emplace(f.experiment, f.arm).second) out.push_back(std::move(f));
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
  for (const auto& f : findings) {
    if (std::find(kFindingKinds.begin(), kFindingKinds.end(), f.kind) == kFindingKinds.end()) {
      throw StorageError(fmt::format("{}: finding kind must be one of {}, got \"{}\"", path_,
                                     fmt::join(kFindingKinds, ", "), f.kind));
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
    SQLite::Statement insert(*db_, insert_sql("regressions", finding_columns()));
    const std::string baseline_json = dump(baseline);
    for (const auto& f : findings) {
      bind_row(insert, finding_columns(),
               FindingRow{run_uuid, baseline_json, threshold, checked_at, f});
      insert.exec();
      insert.reset();
    }
    transaction.commit();
  });
}

std::vector<Database::Finding> Database::findings(const std::string& run_uuid) const {
  return guarded(path_, "cannot read the check of run " + run_uuid, [&] {
    SQLite::Statement query(*db_, fmt::format("SELECT {} FROM regressions WHERE run_uuid = ? "
                                              "ORDER BY id",
                                              column_names(finding_columns())));
    query.bind(1, run_uuid);
    std::vector<Finding> out;
    while (query.executeStep()) {
      Finding f;
      read_row(query, finding_columns(), f);
      out.push_back(std::move(f));
    }
    return out;
  });
}

}  // namespace tunebench::storage
