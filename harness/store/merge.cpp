// Importing the runs of another tunebench database.
#include <algorithm>
#include <filesystem>

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
using internal::parse_column;
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

bool finished(const std::string& status) {
  return status == "completed" || status == "completed with failures";
}

}  // namespace

// The other file and the statements of one merge, on both files: hosts, software, runs, trials by
// the column list (the columns the other file's schema version has; the others take their
// DEFAULT here), samples with what versions 4 and 5 added.
struct internal::MergeSource {
  MergeSource(SQLite::Database& here, std::string other_path, std::unique_ptr<SQLite::Database> db,
              int version)
      : path(std::move(other_path)),
        other(std::move(db)),
        version(version),
        run_columns(version >= 7 ? kRunColumnsV7 : kRunColumns),
        columns(columns_of(version)),
        runs(*other, fmt::format("SELECT uuid, status, {} FROM runs ORDER BY started_at, rowid",
                                 version >= 7 ? "orchestrator" : "NULL")),
        run_json(*other, fmt::format("SELECT r.suite_json, r.host_state, h.json, sw.json, {} FROM "
                                     "runs r LEFT JOIN hosts h ON h.id = r.host_id LEFT JOIN "
                                     "software sw ON sw.id = r.software_id WHERE r.uuid = ?",
                                     version >= 7 ? "r.orchestrator" : "NULL")),
        here_status(here, "SELECT status FROM runs WHERE uuid = ?"),
        host_row(*other, fmt::format("SELECT {} FROM hosts WHERE id = (SELECT host_id FROM runs "
                                     "WHERE uuid = ?)",
                                     kHostColumns)),
        host_insert(here, fmt::format("INSERT OR IGNORE INTO hosts ({}) VALUES ({})", kHostColumns,
                                      placeholders(kHostColumnCount))),
        software_row(*other, fmt::format("SELECT {} FROM software WHERE id = (SELECT software_id "
                                         "FROM runs WHERE uuid = ?)",
                                         kSoftwareColumns)),
        software_insert(here, fmt::format("INSERT OR IGNORE INTO software ({}) VALUES ({})",
                                          kSoftwareColumns, placeholders(kSoftwareColumnCount))),
        run_row(*other, fmt::format("SELECT {} FROM runs WHERE uuid = ?", run_columns)),
        run_insert(here,
                   fmt::format("INSERT INTO runs ({}) VALUES ({})", run_columns,
                               placeholders(version >= 7 ? kRunColumnCountV7 : kRunColumnCount))),
        mark_interrupted(here,
                         "UPDATE runs SET status = 'interrupted', orchestrator = ? WHERE uuid = ?"),
        finish(here, fmt::format("UPDATE runs SET status = ?, ended_at = ?{} WHERE uuid = ?",
                                 version >= 7 ? ", orchestrator = ?" : "")),
        trial_rows(*other, trials_select_sql(columns)),
        trial_here(here, "SELECT 1 FROM trials WHERE run_uuid = ? AND sequence = ?"),
        trial_insert(here, trials_insert_sql(columns)),
        sample_columns(std::string(version >= 4 ? "idx, seconds, block, position, cpu_seconds, "
                                                  "wait_seconds, involuntary_switches, start_ns"
                                                : "idx, seconds") +
                       (version >= 5 ? ", cpu_pressure" : "")),
        sample_column_count(version >= 5   ? 9
                            : version >= 4 ? 8
                                           : 2),
        sample_rows(*other, fmt::format("SELECT {} FROM samples WHERE trial_id = ? ORDER BY idx",
                                        sample_columns)),
        sample_insert(here, fmt::format("INSERT INTO samples (trial_id, {}) VALUES (?, {})",
                                        sample_columns, placeholders(sample_column_count))) {}

  static std::vector<TrialColumn> columns_of(int version) {
    std::vector<TrialColumn> out;
    for (const auto& c : trial_columns()) {
      if (c.since <= version) out.push_back(c);
    }
    return out;
  }

  std::string path;
  std::unique_ptr<SQLite::Database> other;
  int version;
  const char* run_columns;
  std::vector<TrialColumn> columns;
  SQLite::Statement runs, run_json, here_status, host_row, host_insert, software_row,
      software_insert, run_row, run_insert, mark_interrupted, finish, trial_rows, trial_here,
      trial_insert;
  std::string sample_columns;
  int sample_column_count;
  SQLite::Statement sample_rows, sample_insert;
  liveness::Here this_machine = liveness::this_machine();
};

namespace {

using internal::MergeSource;

// A run not held here: its host, software and run rows, as interrupted where its orchestrator is
// gone (`gone`: its record with why).
void copy_run(MergeSource& from, const std::string& uuid, const json& gone,
              Database::MergeResult& result) {
  for (auto* pair : {&from.host_row, &from.software_row, &from.run_row}) pair->bind(1, uuid);
  copy_rows(from.host_row, from.host_insert);
  copy_rows(from.software_row, from.software_insert);
  copy_rows(from.run_row, from.run_insert);
  for (auto* pair : {&from.host_row, &from.software_row, &from.run_row}) pair->reset();
  if (!gone.is_null()) {
    from.mark_interrupted.bind(1, internal::dump(gone));
    from.mark_interrupted.bind(2, uuid);
    from.mark_interrupted.exec();
    from.mark_interrupted.reset();
    result.interrupted.push_back(uuid);
  }
}

// The trials of the run that this file lacks (by sequence), with their samples; each row read
// through the column list first, so that one whose JSON does not parse throws BadRow.
int copy_trials(SQLite::Database& here, MergeSource& from, const std::string& uuid) {
  int added = 0;
  from.trial_rows.bind(":run_uuid", uuid);
  while (from.trial_rows.executeStep()) {
    const auto trial = read_trial(from.trial_rows, from.columns);
    from.trial_here.bind(1, uuid);
    from.trial_here.bind(2, trial.spec.sequence);
    const bool held = from.trial_here.executeStep();
    from.trial_here.reset();
    if (held) continue;
    for (const auto& c : from.columns) {
      bind_column(from.trial_insert, from.trial_insert.getIndex((":" + c.name).c_str()),
                  from.trial_rows.getColumn(c.name.c_str()));
    }
    from.trial_insert.exec();
    from.trial_insert.reset();
    const int64_t new_id = here.getLastInsertRowid();
    from.sample_rows.bind(1, trial.id);
    while (from.sample_rows.executeStep()) {
      from.sample_insert.bind(1, new_id);
      for (int c = 0; c < from.sample_column_count; ++c) {
        bind_column(from.sample_insert, c + 2, from.sample_rows.getColumn(c));
      }
      from.sample_insert.exec();
      from.sample_insert.reset();
    }
    from.sample_rows.reset();
    ++added;
  }
  from.trial_rows.reset();
  return added;
}

// A run held here unfinished: the other copy's status, end time and orchestrator where that copy
// finished; said as completed, or as updated where it only gained trials.
void bring_up_to_date(MergeSource& from, const std::string& uuid, const std::string& status,
                      int added, Database::MergeResult& result) {
  if (finished(status)) {
    from.run_row.bind(1, uuid);
    from.run_row.executeStep();
    from.finish.bind(1, status);
    bind_column(from.finish, 2, from.run_row.getColumn("ended_at"));
    if (from.version >= 7) {
      bind_column(from.finish, 3, from.run_row.getColumn("orchestrator"));
      from.finish.bind(4, uuid);
    } else {
      from.finish.bind(3, uuid);
    }
    from.finish.exec();
    from.finish.reset();
    from.run_row.reset();
    result.completed.push_back(uuid);
  } else if (added > 0) {
    result.updated.push_back(uuid);
  } else {
    result.already_here.push_back(uuid);
  }
}

// Floors whose host and software came along and that this database lacks, and the findings of
// the imported runs. A file before version 6 has no relative noise: its floors come without.
void copy_floors_and_findings(SQLite::Database& here, SQLite::Database& other, int version,
                              const std::vector<std::string>& imported) {
  const char* floor_columns = version >= 6 ? internal::kFloorColumnsV6 : kFloorColumns;
  const int floor_count = version >= 6 ? internal::kFloorColumnCountV6 : kFloorColumnCount;
  SQLite::Statement floors(
      other, fmt::format("SELECT {} FROM noise_floors ORDER BY rowid", floor_columns));
  std::string numbered;
  for (int i = 1; i <= floor_count; ++i) numbered += fmt::format("{}?{}", i == 1 ? "" : ", ", i);
  SQLite::Statement floor_insert(
      here, fmt::format("INSERT OR IGNORE INTO noise_floors ({}) SELECT {} WHERE EXISTS "
                        "(SELECT 1 FROM hosts WHERE id = ?1) AND EXISTS (SELECT 1 FROM "
                        "software WHERE id = ?2)",
                        floor_columns, numbered));
  copy_rows(floors, floor_insert);
  SQLite::Statement findings_rows(
      other,
      fmt::format("SELECT {} FROM regressions WHERE run_uuid = ? ORDER BY id", kFindingColumns));
  SQLite::Statement finding_insert(
      here, fmt::format("INSERT INTO regressions ({}) VALUES ({})", kFindingColumns,
                        placeholders(kFindingColumnCount)));
  for (const auto& uuid : imported) {
    findings_rows.bind(1, uuid);
    copy_rows(findings_rows, finding_insert);
    findings_rows.reset();
  }
}

}  // namespace

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
  guarded(other_path, "cannot open it to read",
          [&] { other = internal::open_for_reading(other_path); });
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
    {
      internal::MergeSource from(*db_, other_path, std::move(other), version);
      while (from.runs.executeStep()) merge_run(from, result);
      if (version >= 2) copy_floors_and_findings(*db_, *from.other, version, result.imported);
      if (version >= 8) {
        // Recommendations absent here (their runs come as runs do).
        SQLite::Statement rows(*from.other,
                               "SELECT uuid, created_at, model, recommendation FROM tunings "
                               "ORDER BY rowid");
        SQLite::Statement insert(*db_,
                                 "INSERT OR IGNORE INTO tunings (uuid, created_at, model, "
                                 "recommendation) VALUES (?, ?, ?, ?)");
        copy_rows(rows, insert);
      }
    }
    result.hosts_added =
        static_cast<int>(query_int(*db_, "SELECT COUNT(*) FROM hosts")) - hosts_before;
    transaction.commit();
  });
  return result;
}

// One run of the other file (the current row of from.runs), in a savepoint of the merge's
// transaction: a row of it whose JSON does not parse undoes this run alone.
void Database::merge_run(internal::MergeSource& from, MergeResult& result) {
  const std::string uuid = from.runs.getColumn(0).getString();
  const std::string status = from.runs.getColumn(1).getString();
  from.here_status.bind(1, uuid);
  const std::string here =
      from.here_status.executeStep() ? from.here_status.getColumn(0).getString() : "";
  from.here_status.reset();
  // Held here and finished (never replaced by another copy), or running here: left as it is.
  if (!here.empty() && (finished(here) || here == "running")) {
    result.already_here.push_back(uuid);
    return;
  }
  db_->exec("SAVEPOINT merge_run");
  try {
    // Every JSON value of the run's rows parses, or the run is not imported.
    from.run_json.bind(1, uuid);
    from.run_json.executeStep();
    const char* names[] = {"suite (runs.suite_json)", "host state (runs.host_state)",
                           "host fingerprint (hosts.json)", "software fingerprint (software.json)",
                           "orchestrator (runs.orchestrator)"};
    std::vector<json> values;
    for (int c = 0; c < 5; ++c)
      values.push_back(parse_column(from.run_json.getColumn(c), names[c]));
    from.run_json.reset();
    json gone;
    if (here.empty() && status == "running") {
      // Imported only when its orchestrator is known gone: as interrupted, to be resumed here.
      const auto verdict =
          liveness::judge(liveness::orchestrator_from_json(values[4]), from.this_machine);
      if (verdict.state != liveness::State::kGone) {
        db_->exec("RELEASE merge_run");
        result.still_running.push_back(uuid);
        return;
      }
      gone = values[4];
      gone["gone"] = {{"found_at", now_iso8601()}, {"why", verdict.why}};
    }
    if (here.empty()) copy_run(from, uuid, gone, result);
    const int added = copy_trials(*db_, from, uuid);
    if (here.empty()) {
      result.imported.push_back(uuid);
    } else {
      bring_up_to_date(from, uuid, status, added, result);
    }
    // Imported and updated runs get their effects (computed again: the computation is
    // deterministic, so a copied run's equal the other file's stored ones).
    if (here.empty() || added > 0 || finished(status)) write_effects(uuid);
    db_->exec("RELEASE merge_run");
  } catch (const internal::BadRow& bad) {
    from.run_json.reset();
    from.trial_rows.reset();
    db_->exec("ROLLBACK TO merge_run");
    db_->exec("RELEASE merge_run");
    auto& interrupted = result.interrupted;  // undone with the rest of it
    interrupted.erase(std::remove(interrupted.begin(), interrupted.end(), uuid), interrupted.end());
    result.damaged.emplace_back(uuid, bad.what());
  }
}

}  // namespace tunebench::storage
