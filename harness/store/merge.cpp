// Importing the runs of another tunebench database.
#include <filesystem>
#include <istream>

#include "core/liveness.h"
#include "store/internal.h"
#include "store/trial_columns.h"

namespace tunebench::storage {

using internal::guarded;
using internal::unknown_run;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;
using internal::bind_column;
using internal::check_header;
using internal::copy_rows;
using internal::kBusyTimeoutMs;
using internal::kFindingColumnCount;
using internal::kFindingColumns;
using internal::kFloorColumnCount;
using internal::kFloorColumns;
using internal::placeholders;
using internal::query_int;
using internal::read_user_version;

// The columns copied by merge_from, per table (trials without its id, which is renumbered).
constexpr const char* kHostColumns =
    "id, json, hostname, cpu_model, cores, sockets, numa_nodes, memory_bytes, gpu";
constexpr int kHostColumnCount = 9;
constexpr const char* kSoftwareColumns = "id, json, libtorch_version, cuda, git_revision";
constexpr int kSoftwareColumnCount = 5;
constexpr const char* kRunColumns =
    "uuid, suite_name, suite_hash, suite_json, label, git_revision, command_line, started_at, "
    "ended_at, status, host_id, software_id, host_state, host_quiet";
constexpr int kRunColumnCount = 14;
// From schema version 7 on, a run also records its orchestrator.
constexpr const char* kRunColumnsV7 =
    "uuid, suite_name, suite_hash, suite_json, label, git_revision, command_line, started_at, "
    "ended_at, status, host_id, software_id, host_state, host_quiet, orchestrator";
constexpr int kRunColumnCountV7 = 15;

}  // namespace

// Long because it is one transaction over one set of prepared statements (hosts, software, runs,
// trials by the column list, samples, floors, findings), read top to bottom in import order.
Database::MergeResult Database::merge_from(const std::string& other_path) {
  std::error_code ec;
  if (!fs::is_regular_file(other_path, ec)) {
    throw StorageError(other_path +
                       ": no such database file; give the path of another "
                       "machine's tunebench SQLite file");
  }
  if (fs::equivalent(other_path, path_, ec)) {
    throw StorageError(other_path + " is this database itself; give another machine's file");
  }
  check_header(other_path);
  std::unique_ptr<SQLite::Database> other;
  guarded(other_path, "cannot open it read-only", [&] {
    other = std::make_unique<SQLite::Database>(other_path, SQLite::OPEN_READONLY, kBusyTimeoutMs);
  });
  const int version = guarded(other_path, "cannot read the schema version",
                              [&] { return read_user_version(*other); });
  if (version > kSchemaVersion) {
    throw StorageError(fmt::format(
        "{} has schema version {}; this tunebench reads up to {}: merge with a newer tunebench "
        "(nothing was imported)",
        other_path, version, kSchemaVersion));
  }
  if (version == 0) {
    throw StorageError(other_path +
                       " has no tunebench schema (schema version 0): nothing to import");
  }

  MergeResult result;
  guarded(path_, "cannot merge " + other_path, [&] {
    SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const int hosts_before = static_cast<int>(query_int(*db_, "SELECT COUNT(*) FROM hosts"));
    SQLite::Statement runs(*other, version >= 7 ? "SELECT uuid, status, orchestrator FROM runs "
                                                  "ORDER BY started_at, rowid"
                                                : "SELECT uuid, status, NULL FROM runs ORDER BY "
                                                  "started_at, rowid");
    SQLite::Statement here(*db_, "SELECT 1 FROM runs WHERE uuid = ?");
    SQLite::Statement host_row(
        *other, fmt::format("SELECT {} FROM hosts WHERE id = (SELECT host_id FROM runs WHERE "
                            "uuid = ?)",
                            kHostColumns));
    SQLite::Statement host_insert(*db_, fmt::format("INSERT OR IGNORE INTO hosts ({}) VALUES ({})",
                                                    kHostColumns, placeholders(kHostColumnCount)));
    SQLite::Statement software_row(
        *other, fmt::format("SELECT {} FROM software WHERE id = (SELECT software_id FROM runs "
                            "WHERE uuid = ?)",
                            kSoftwareColumns));
    SQLite::Statement software_insert(
        *db_, fmt::format("INSERT OR IGNORE INTO software ({}) VALUES ({})", kSoftwareColumns,
                          placeholders(kSoftwareColumnCount)));
    const char* run_columns = version >= 7 ? kRunColumnsV7 : kRunColumns;
    SQLite::Statement run_row(*other,
                              fmt::format("SELECT {} FROM runs WHERE uuid = ?", run_columns));
    SQLite::Statement run_insert(
        *db_, fmt::format("INSERT INTO runs ({}) VALUES ({})", run_columns,
                          placeholders(version >= 7 ? kRunColumnCountV7 : kRunColumnCount)));
    SQLite::Statement mark_interrupted(
        *db_, "UPDATE runs SET status = 'interrupted', orchestrator = ? WHERE uuid = ?");
    const liveness::Here this_machine = liveness::this_machine();
    // Trials column by column, by name, from the column list: the columns the other file's
    // schema version has (the others take their DEFAULT here).
    std::vector<TrialColumn> columns;
    for (const auto& c : trial_columns()) {
      if (c.since <= version) columns.push_back(c);
    }
    SQLite::Statement trial_rows(*other, trials_select_sql(columns));
    SQLite::Statement trial_insert(*db_, trials_insert_sql(columns));
    // Samples with what versions 4 and 5 added (a paired trial's blocks and contamination
    // figures; the host's CPU pressure).
    const std::string sample_columns =
        std::string(version >= 4 ? "idx, seconds, block, position, cpu_seconds, wait_seconds, "
                                   "involuntary_switches, start_ns"
                                 : "idx, seconds") +
        (version >= 5 ? ", cpu_pressure" : "");
    const int sample_column_count = version >= 5 ? 9 : version >= 4 ? 8 : 2;
    SQLite::Statement sample_rows(
        *other,
        fmt::format("SELECT {} FROM samples WHERE trial_id = ? ORDER BY idx", sample_columns));
    SQLite::Statement sample_insert(
        *db_, fmt::format("INSERT INTO samples (trial_id, {}) VALUES (?, {})", sample_columns,
                          placeholders(sample_column_count)));
    while (runs.executeStep()) {
      const std::string uuid = runs.getColumn(0).getString();
      here.bind(1, uuid);
      const bool exists = here.executeStep();
      here.reset();
      if (exists) {
        result.already_here.push_back(uuid);
        continue;
      }
      // A run "running" there is imported only when its orchestrator is known gone: as
      // interrupted, so that it can be resumed here.
      json gone;
      if (runs.getColumn(1).getString() == "running") {
        json record = internal::parse(runs.getColumn(2).getString());
        const auto verdict =
            liveness::judge(liveness::orchestrator_from_json(record), this_machine);
        if (verdict.state != liveness::State::kGone) {
          result.still_running.push_back(uuid);
          continue;
        }
        record["gone"] = {{"found_at", now_iso8601()}, {"why", verdict.why}};
        gone = std::move(record);
      }
      for (auto* pair : {&host_row, &software_row}) pair->bind(1, uuid);
      copy_rows(host_row, host_insert);
      copy_rows(software_row, software_insert);
      host_row.reset();
      software_row.reset();
      run_row.bind(1, uuid);
      copy_rows(run_row, run_insert);
      run_row.reset();
      if (!gone.is_null()) {
        mark_interrupted.bind(1, internal::dump(gone));
        mark_interrupted.bind(2, uuid);
        mark_interrupted.exec();
        mark_interrupted.reset();
        result.interrupted.push_back(uuid);
      }
      trial_rows.bind(":run_uuid", uuid);
      while (trial_rows.executeStep()) {
        for (const auto& c : columns) {
          bind_column(trial_insert, trial_insert.getIndex((":" + c.name).c_str()),
                      trial_rows.getColumn(c.name.c_str()));
        }
        trial_insert.exec();
        trial_insert.reset();
        const int64_t new_id = db_->getLastInsertRowid();
        sample_rows.bind(1, trial_rows.getColumn("id").getInt64());
        while (sample_rows.executeStep()) {
          sample_insert.bind(1, new_id);
          for (int c = 0; c < sample_column_count; ++c) {
            bind_column(sample_insert, c + 2, sample_rows.getColumn(c));
          }
          sample_insert.exec();
          sample_insert.reset();
        }
        sample_rows.reset();
      }
      trial_rows.reset();
      result.imported.push_back(uuid);
    }
    if (version >= 2) {
      // Floors whose host and software came along and that this database lacks.
      // A file before version 6 has no relative noise: its floors come without (NULL).
      const char* floor_columns = version >= 6 ? internal::kFloorColumnsV6 : kFloorColumns;
      const int floor_count = version >= 6 ? internal::kFloorColumnCountV6 : kFloorColumnCount;
      SQLite::Statement floors(
          *other, fmt::format("SELECT {} FROM noise_floors ORDER BY rowid", floor_columns));
      SQLite::Statement floor_insert(
          *db_, fmt::format("INSERT OR IGNORE INTO noise_floors ({}) SELECT {} WHERE EXISTS "
                            "(SELECT 1 FROM hosts WHERE id = ?1) AND EXISTS (SELECT 1 FROM "
                            "software WHERE id = ?2)",
                            floor_columns, [floor_count] {
                              std::string p;
                              for (int i = 1; i <= floor_count; ++i) {
                                p += fmt::format("{}?{}", i == 1 ? "" : ", ", i);
                              }
                              return p;
                            }()));
      copy_rows(floors, floor_insert);
      SQLite::Statement findings_rows(
          *other, fmt::format("SELECT {} FROM regressions WHERE run_uuid = ? ORDER BY id",
                              kFindingColumns));
      SQLite::Statement finding_insert(
          *db_, fmt::format("INSERT INTO regressions ({}) VALUES ({})", kFindingColumns,
                            placeholders(kFindingColumnCount)));
      for (const auto& uuid : result.imported) {
        findings_rows.bind(1, uuid);
        copy_rows(findings_rows, finding_insert);
        findings_rows.reset();
      }
    }
    // Imported runs get their effects (computed again: the computation is deterministic, so
    // they equal the other file's stored ones, and an older file has none).
    for (const auto& uuid : result.imported) write_effects(uuid);
    result.hosts_added =
        static_cast<int>(query_int(*db_, "SELECT COUNT(*) FROM hosts")) - hosts_before;
    transaction.commit();
  });
  return result;
}

namespace {

RunRecord run_record_from_json(const json& j) {
  RunRecord r;
  r.uuid = j.at("uuid").get<std::string>();
  r.suite_name = j.at("suite_name").get<std::string>();
  r.suite_hash = j.at("suite_hash").get<std::string>();
  r.suite = j.at("suite");
  r.label = j.value("label", "");
  r.git_revision = j.value("git_revision", "");
  r.command_line = j.value("command_line", "");
  r.started_at = j.at("started_at").get<std::string>();
  r.host = j.at("host");
  r.software = j.at("software");
  r.host_state = j.value("host_state", json::object());
  r.host_quiet = j.value("host_quiet", true);
  return r;
}

}  // namespace

int import_records(Database& db, std::istream& lines) {
  int stored = 0, number = 0;
  std::string line;
  while (std::getline(lines, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    RunRecord run;
    std::vector<std::pair<TrialSpec, TrialResult>> trials;
    std::string status, ended_at;
    try {
      const json j = json::parse(line);
      run = run_record_from_json(j.at("run"));
      status = j.at("status").get<std::string>();
      ended_at = j.at("ended_at").get<std::string>();
      for (const auto& t : j.at("trials")) {
        trials.emplace_back(trial_spec_from_json(t.at("spec")),
                            trial_result_from_json(t.at("result")));
      }
    } catch (const std::exception& e) {
      throw StorageError(fmt::format("line {}: not a run record: {}", number, e.what()));
    }
    db.begin_run(run);
    for (const auto& [spec, result] : trials) db.store_trial(run.uuid, spec, result);
    db.finish_run(run.uuid, status, ended_at);
    ++stored;
  }
  return stored;
}

}  // namespace tunebench::storage
