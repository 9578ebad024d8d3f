// Importing the runs of another tunebench database.
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>

#include "core/liveness.h"
#include "store/columns.h"
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
using internal::parse_column;
using internal::query_int;
using internal::read_user_version;

bool finished(const std::string& status) {
  return status == "completed" || status == "completed with failures";
}

// The columns of `table` in `db`, in table order; none where the file has no such table.
std::vector<std::string> table_columns(SQLite::Database& db, const std::string& table) {
  SQLite::Statement info(db, "SELECT name FROM pragma_table_info(?) ORDER BY cid");
  info.bind(1, table);
  std::vector<std::string> out;
  while (info.executeStep()) out.push_back(info.getColumn(0).getString());
  return out;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The columns of `table` that both files have, in this file's order, but `left_out` (a key this
// file numbers anew): what merge copies, whichever schema version wrote the other file. A column
// only this file has takes its DEFAULT (NULL where it has none).
std::vector<std::string> shared_columns(SQLite::Database& here, SQLite::Database& other,
                                        const std::string& table,
                                        const std::string& left_out = "") {
  const auto theirs = table_columns(other, table);
  std::vector<std::string> out;
  for (const auto& name : table_columns(here, table)) {
    if (name != left_out && has(theirs, name)) out.push_back(name);
  }
  return out;
}

std::string joined(const std::vector<std::string>& names, const std::string& prefix = "") {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + prefix + n;
  return out;
}

// Inserts every row `select` yields through `insert`, each column bound to the parameter of its
// name (":name"); returns the rows inserted (0 for a row INSERT OR IGNORE skipped).
int copy_by_name(SQLite::Statement& select, SQLite::Statement& insert) {
  int inserted = 0;
  while (select.executeStep()) {
    for (int i = 0; i < select.getColumnCount(); ++i) {
      bind_column(insert, insert.getIndex((std::string(":") + select.getColumnName(i)).c_str()),
                  select.getColumn(i));
    }
    inserted += insert.exec();
    insert.reset();
  }
  return inserted;
}

}  // namespace

namespace internal {

// SELECT cols FROM table WHERE `where` on the other file, and INSERT [OR IGNORE] of the same
// columns here: one table's copy.
struct TableCopy {
  TableCopy(SQLite::Database& here, SQLite::Database& other, const std::string& table,
            const std::vector<std::string>& columns, const std::string& where,
            const std::string& insert_verb = "INSERT")
      : select(other, fmt::format("SELECT {} FROM {} {}", joined(columns), table, where)),
        insert(here, fmt::format("{} INTO {} ({}) VALUES ({})", insert_verb, table, joined(columns),
                                 joined(columns, ":"))) {}
  SQLite::Statement select, insert;
};

}  // namespace internal

// The other file and the statements of one merge, on both files: hosts, software, runs, trials
// (read through the trials' column list, so that a row whose JSON does not parse is known) and
// samples, each with the columns both files have.
struct internal::MergeSource {
  MergeSource(SQLite::Database& here, std::string other_path, std::unique_ptr<SQLite::Database> db)
      : path(std::move(other_path)),
        other(std::move(db)),
        orchestrator(has(table_columns(*other, "runs"), "orchestrator")),
        columns(trial_columns_of(*other)),
        runs(*other, fmt::format("SELECT uuid, status, {} FROM runs ORDER BY started_at, rowid",
                                 orchestrator ? "orchestrator" : "NULL")),
        run_json(*other, fmt::format("SELECT r.suite_json, r.host_state, h.json, sw.json, {} FROM "
                                     "runs r LEFT JOIN hosts h ON h.id = r.host_id LEFT JOIN "
                                     "software sw ON sw.id = r.software_id WHERE r.uuid = ?",
                                     orchestrator ? "r.orchestrator" : "NULL")),
        here_status(here, "SELECT status FROM runs WHERE uuid = ?"),
        hosts(here, *other, "hosts", shared_columns(here, *other, "hosts"),
              "WHERE id = (SELECT host_id FROM runs WHERE uuid = :uuid)", "INSERT OR IGNORE"),
        software(here, *other, "software", shared_columns(here, *other, "software"),
                 "WHERE id = (SELECT software_id FROM runs WHERE uuid = :uuid)",
                 "INSERT OR IGNORE"),
        run(here, *other, "runs", shared_columns(here, *other, "runs"), "WHERE uuid = :uuid"),
        mark_interrupted(here,
                         "UPDATE runs SET status = 'interrupted', orchestrator = ? WHERE uuid = ?"),
        finish(here, fmt::format("UPDATE runs SET status = :status, ended_at = :ended_at{} WHERE "
                                 "uuid = :uuid",
                                 orchestrator ? ", orchestrator = :orchestrator" : "")),
        trial_rows(*other, trials_select_sql(columns)),
        trial_here(here, "SELECT 1 FROM trials WHERE run_uuid = ? AND sequence = ?"),
        trial_insert(here, trials_insert_sql(columns)),
        sample_columns(shared_columns(here, *other, "samples", "trial_id")),
        sample_rows(*other, fmt::format("SELECT {} FROM samples WHERE trial_id = ? ORDER BY idx",
                                        joined(sample_columns))),
        // Each sample names its trial as this file numbers it.
        sample_insert(here,
                      fmt::format("INSERT INTO samples (trial_id, {}) VALUES (:new_trial_id, {})",
                                  joined(sample_columns), joined(sample_columns, ":"))) {}

  // The trials' list less the columns the other file does not have.
  static std::vector<TrialColumn> trial_columns_of(SQLite::Database& other) {
    const auto theirs = table_columns(other, "trials");
    std::vector<TrialColumn> out;
    for (const auto& c : trial_columns()) {
      if (has(theirs, c.name)) out.push_back(c);
    }
    return out;
  }

  std::string path;
  std::unique_ptr<SQLite::Database> other;
  bool orchestrator;  // the other file's runs record their orchestrator
  std::vector<TrialColumn> columns;
  SQLite::Statement runs, run_json, here_status;
  TableCopy hosts, software, run;
  SQLite::Statement mark_interrupted, finish, trial_rows, trial_here, trial_insert;
  std::vector<std::string> sample_columns;
  SQLite::Statement sample_rows, sample_insert;
  liveness::Here this_machine = liveness::this_machine();
};

namespace {

using internal::MergeSource;
using internal::TableCopy;

// A run not held here: its host, software and run rows, as interrupted where its orchestrator is
// gone (`gone`: its record with why).
void copy_run(MergeSource& from, const std::string& uuid, const json& gone,
              Database::MergeResult& result) {
  for (auto* table : {&from.hosts, &from.software, &from.run}) {
    table->select.bind(":uuid", uuid);
    copy_by_name(table->select, table->insert);
    table->select.reset();
  }
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
    from.sample_insert.bind(":new_trial_id", new_id);
    copy_by_name(from.sample_rows, from.sample_insert);
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
    from.run.select.bind(":uuid", uuid);
    from.run.select.executeStep();
    from.finish.bind(":status", status);
    bind_column(from.finish, from.finish.getIndex(":ended_at"),
                from.run.select.getColumn("ended_at"));
    if (from.orchestrator) {
      bind_column(from.finish, from.finish.getIndex(":orchestrator"),
                  from.run.select.getColumn("orchestrator"));
    }
    from.finish.bind(":uuid", uuid);
    from.finish.exec();
    from.finish.reset();
    from.run.select.reset();
    result.completed.push_back(uuid);
  } else if (added > 0) {
    result.updated.push_back(uuid);
  } else {
    result.already_here.push_back(uuid);
  }
}

// Floors whose host and software came along and that this database lacks, recommendations
// absent here (their runs come as runs do), and the findings of the imported runs: each with the
// columns both files have (none where the other file predates the table).
void copy_floors_findings_tunings(SQLite::Database& here, SQLite::Database& other,
                                  const std::vector<std::string>& imported) {
  const auto floors = shared_columns(here, other, "noise_floors");
  if (!floors.empty()) {
    SQLite::Statement rows(
        other, fmt::format("SELECT {} FROM noise_floors ORDER BY rowid", joined(floors)));
    SQLite::Statement insert(
        here, fmt::format("INSERT OR IGNORE INTO noise_floors ({}) SELECT {} WHERE EXISTS "
                          "(SELECT 1 FROM hosts WHERE id = :host_id) AND EXISTS (SELECT 1 FROM "
                          "software WHERE id = :software_id)",
                          joined(floors), joined(floors, ":")));
    copy_by_name(rows, insert);
  }
  const auto tunings = shared_columns(here, other, "tunings");
  if (!tunings.empty()) {
    TableCopy copy(here, other, "tunings", tunings, "ORDER BY rowid", "INSERT OR IGNORE");
    copy_by_name(copy.select, copy.insert);
  }
  const auto findings = shared_columns(here, other, "regressions", "id");
  if (findings.empty()) return;
  TableCopy copy(here, other, "regressions", findings, "WHERE run_uuid = :uuid ORDER BY id");
  for (const auto& uuid : imported) {
    copy.select.bind(":uuid", uuid);
    copy_by_name(copy.select, copy.insert);
    copy.select.reset();
  }
}

// Undoes what the savepoint of run `uuid` holds and names the run as not imported, with why.
void undo_run(SQLite::Database& here, MergeSource& from, const std::string& uuid,
              const std::string& why, Database::MergeResult& result) {
  for (SQLite::Statement* st :
       {&from.run_json, &from.trial_rows, &from.trial_here, &from.trial_insert, &from.sample_rows,
        &from.sample_insert, &from.here_status, &from.finish, &from.mark_interrupted}) {
    (void)st->tryReset();
  }
  for (TableCopy* copy : {&from.hosts, &from.software, &from.run}) {
    (void)copy->select.tryReset();
    (void)copy->insert.tryReset();
  }
  here.exec("ROLLBACK TO merge_run");
  here.exec("RELEASE merge_run");
  auto& interrupted = result.interrupted;  // undone with the rest of it
  interrupted.erase(std::remove(interrupted.begin(), interrupted.end(), uuid), interrupted.end());
  result.damaged.emplace_back(uuid, why);
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
      internal::MergeSource from(*db_, other_path, std::move(other));
      while (from.runs.executeStep()) merge_run(from, result);
      copy_floors_findings_tunings(*db_, *from.other, result.imported);
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
    undo_run(*db_, from, uuid, bad.what(), result);
  } catch (const SQLite::Exception& e) {
    // A page of the other file that SQLite cannot read (the target was checked before the merge
    // began): this run is not imported, the runs whose pages it can read still are.
    const int code = e.getErrorCode();
    if (code != SQLITE_CORRUPT && code != SQLITE_NOTADB) throw;
    undo_run(*db_, from, uuid, fmt::format("its rows cannot be read (SQLite: {})", e.what()),
             result);
  }
}

}  // namespace tunebench::storage
