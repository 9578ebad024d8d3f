// Runs, their host and software fingerprints, and finding a run by uuid or prefix.
#include <algorithm>

#include "core/liveness.h"
#include "store/columns.h"
#include "store/internal.h"

namespace tunebench::storage {

using internal::dump;
using internal::guarded;
using internal::parse_column;
using internal::unknown_run;
using nlohmann::json;

namespace {

constexpr const char* kRunStatuses[] = {"completed", "completed with failures", "interrupted",
                                        "failed"};

// Binds one fingerprint field as a typed column value; NULL when absent.
void bind_field(SQLite::Statement& st, int index, const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || object.at(key).is_null()) {
    st.bind(index);
    return;
  }
  const json& v = object.at(key);
  if (v.is_string()) {
    st.bind(index, v.get<std::string>());
  } else if (v.is_boolean()) {
    st.bind(index, v.get<bool>() ? 1 : 0);
  } else if (v.is_number_integer()) {
    st.bind(index, v.get<int64_t>());
  } else if (v.is_number()) {
    st.bind(index, v.get<double>());
  } else {
    st.bind(index, dump(v));
  }
}

void bind_json_or_null(SQLite::Statement& st, const char* parameter, const json& j) {
  if (j.is_null()) {
    st.bind(parameter);
  } else {
    st.bind(parameter, dump(j));
  }
}

using St = SQLite::Statement;
using Col = SQLite::Column;
using StoredRunRow = Database::StoredRun;

// The list itself, one entry per column in table order: long because it is the whole table.
std::vector<RunColumn> make_run_columns() {
  // clang-format off
  return {
    {"uuid", "TEXT PRIMARY KEY", 1,
     [](St& st, const char* p, const RunRow& r) { st.bind(p, r.run.uuid); },
     [](const Col& c, StoredRunRow& s) { s.record.uuid = c.getString(); }},
    {"suite_name", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const RunRow& r) { st.bind(p, r.run.suite_name); },
     [](const Col& c, StoredRunRow& s) { s.record.suite_name = c.getString(); }},
    {"suite_hash", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const RunRow& r) { st.bind(p, r.run.suite_hash); },
     [](const Col& c, StoredRunRow& s) { s.record.suite_hash = c.getString(); }},
    {"suite_json", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const RunRow& r) { st.bind(p, dump(r.run.suite)); },
     [](const Col& c, StoredRunRow& s) { s.record.suite = parse_column(c, "suite (runs.suite_json)"); }},
    {"label", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const RunRow& r) { st.bind(p, r.run.label); },
     [](const Col& c, StoredRunRow& s) { s.record.label = c.getString(); }},
    {"git_revision", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const RunRow& r) { st.bind(p, r.run.git_revision); },
     [](const Col& c, StoredRunRow& s) { s.record.git_revision = c.getString(); }},
    {"command_line", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const RunRow& r) { st.bind(p, r.run.command_line); },
     [](const Col& c, StoredRunRow& s) { s.record.command_line = c.getString(); }},
    {"started_at", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const RunRow& r) { st.bind(p, r.run.started_at); },
     [](const Col& c, StoredRunRow& s) { s.record.started_at = c.getString(); }},
    // NULL while the run is running (read as "")
    {"ended_at", "TEXT", 1,
     [](St& st, const char* p, const RunRow&) { st.bind(p); },
     [](const Col& c, StoredRunRow& s) { s.ended_at = c.getString(); }},
    {"status", "TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', "
               "'completed with failures', 'interrupted', 'failed'))", 1,
     [](St& st, const char* p, const RunRow&) { st.bind(p, "running"); },
     [](const Col& c, StoredRunRow& s) { s.status = c.getString(); }},
    {"host_id", "TEXT NOT NULL REFERENCES hosts (id)", 1,
     [](St& st, const char* p, const RunRow& r) { st.bind(p, r.host_id); }, nullptr},
    {"software_id", "TEXT NOT NULL REFERENCES software (id)", 1,
     [](St& st, const char* p, const RunRow& r) { st.bind(p, r.software_id); }, nullptr},
    {"host_state", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const RunRow& r) { st.bind(p, dump(r.run.host_state)); },
     [](const Col& c, StoredRunRow& s) {
       s.record.host_state = parse_column(c, "host state (runs.host_state)");
     }},
    {"host_quiet", "INTEGER NOT NULL CHECK (host_quiet IN (0, 1))", 1,
     [](St& st, const char* p, const RunRow& r) { st.bind(p, r.run.host_quiet ? 1 : 0); },
     [](const Col& c, StoredRunRow& s) { s.record.host_quiet = c.getInt() != 0; }},
    // JSON: who runs the run (core/liveness.h); NULL where not recorded
    {"orchestrator", "TEXT", 7,
     [](St& st, const char* p, const RunRow& r) { bind_json_or_null(st, p, r.orchestrator); },
     [](const Col& c, StoredRunRow& s) {
       if (!c.isNull()) s.orchestrator = parse_column(c, "orchestrator (runs.orchestrator)");
     }},
    // "certified: …" or "not certified: …" when its effects are stored; NULL without controls
    {"certification", "TEXT", 9,
     [](St& st, const char* p, const RunRow&) { st.bind(p); },
     [](const Col& c, StoredRunRow& s) { s.certification = c.isNull() ? "" : c.getString(); }},
    // JSON: how the run's budget was spent (run/allocator.h); NULL without a run budget
    {"sampling", "TEXT", 9,
     [](St& st, const char* p, const RunRow&) { st.bind(p); },
     [](const Col& c, StoredRunRow& s) {
       if (!c.isNull()) s.sampling = parse_column(c, "sampling (runs.sampling)");
     }},
  };
  // clang-format on
}

}  // namespace

const std::vector<RunColumn>& run_columns() {
  static const std::vector<RunColumn> columns = make_run_columns();
  return columns;
}

void Database::begin_run(const RunRecord& run, const json& orchestrator) {
  guarded(path_, "cannot store run " + run.uuid, [&] {
    SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);

    const std::string host_json = dump(run.host);
    const std::string host_id = sha256_hex(host_json);
    SQLite::Statement host(
        *db_,
        "INSERT OR IGNORE INTO hosts (id, json, hostname, cpu_model, cores, "
        "sockets, numa_nodes, memory_bytes, gpu) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    host.bind(1, host_id);
    host.bind(2, host_json);
    int index = 3;
    for (const char* key :
         {"hostname", "cpu_model", "cores", "sockets", "numa_nodes", "memory_bytes", "gpu"}) {
      bind_field(host, index++, run.host, key);
    }
    host.exec();

    const std::string software_json = dump(run.software);
    const std::string software_id = sha256_hex(software_json);
    SQLite::Statement software(*db_,
                               "INSERT OR IGNORE INTO software (id, json, libtorch_version, cuda, "
                               "git_revision) VALUES (?, ?, ?, ?, ?)");
    software.bind(1, software_id);
    software.bind(2, software_json);
    index = 3;
    for (const char* key : {"libtorch_version", "cuda", "git_revision"}) {
      bind_field(software, index++, run.software, key);
    }
    software.exec();

    SQLite::Statement insert(*db_, insert_sql("runs", run_columns()));
    bind_row(insert, run_columns(), RunRow{run, host_id, software_id, orchestrator});
    insert.exec();

    transaction.commit();
  });
}

void Database::finish_run(const std::string& run_uuid, const std::string& status,
                          const std::string& ended_at) {
  if (std::find(std::begin(kRunStatuses), std::end(kRunStatuses), status) ==
      std::end(kRunStatuses)) {
    throw StorageError(fmt::format(
        "{}: cannot finish run {}: status must be \"completed\", \"completed with failures\", "
        "\"interrupted\" or \"failed\", got \"{}\"",
        path_, run_uuid, status));
  }
  const int changed = guarded(path_, "cannot finish run " + run_uuid, [&] {
    SQLite::Statement update(*db_, "UPDATE runs SET status = ?, ended_at = ? WHERE uuid = ?");
    update.bind(1, status);
    update.bind(2, ended_at);
    update.bind(3, run_uuid);
    return update.exec();
  });
  if (changed == 0) throw unknown_run(path_, run_uuid);
  write_effects(run_uuid);
}

void Database::store_sampling(const std::string& run_uuid, const json& sampling) {
  const int changed = guarded(path_, "cannot store how run " + run_uuid + " spent its budget", [&] {
    SQLite::Statement update(*db_, "UPDATE runs SET sampling = ? WHERE uuid = ?");
    update.bind(1, dump(sampling));
    update.bind(2, run_uuid);
    return update.exec();
  });
  if (changed == 0) throw unknown_run(path_, run_uuid);
}

void Database::reopen_run(const std::string& run_uuid, const json& orchestrator,
                          const json& resumed_state, bool quiet) {
  const int changed = guarded(path_, "cannot reopen run " + run_uuid, [&] {
    SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    // Checked inside the write transaction: of two resumes at once, the second sees the first.
    SQLite::Statement current(
        *db_, "SELECT status, orchestrator, host_state, host_quiet FROM runs WHERE uuid = ?");
    current.bind(1, run_uuid);
    if (!current.executeStep()) return 0;
    json host_state;
    try {
      host_state = parse_column(current.getColumn(2), "host state (runs.host_state)");
    } catch (const internal::BadRow& bad) {
      throw internal::damaged_row(path_, run_uuid, bad);
    }
    if (!host_state.is_object()) host_state = json::object();
    const bool was_quiet = current.getColumn(3).getInt() != 0;
    if (current.getColumn(0).getString() == "running") {
      json record;
      try {
        record = parse_column(current.getColumn(1), "orchestrator (runs.orchestrator)");
      } catch (const internal::BadRow& bad) {
        throw internal::damaged_row(path_, run_uuid, bad);
      }
      const auto verdict =
          liveness::judge(liveness::orchestrator_from_json(record), liveness::this_machine());
      if (verdict.state == liveness::State::kAlive) {
        throw StorageError(fmt::format(
            "{}: run {} is still running here ({}); resuming it would make two orchestrators "
            "write one run: wait for it to end, or stop it and resume then",
            path_, run_uuid, verdict.why));
      }
    }
    current.reset();
    if (!resumed_state.is_null()) host_state["resumed"].push_back(resumed_state);
    SQLite::Statement update(*db_,
                             "UPDATE runs SET status = 'running', ended_at = NULL, orchestrator = "
                             ":orchestrator, host_state = :host_state, host_quiet = :host_quiet "
                             "WHERE uuid = :uuid");
    bind_json_or_null(update, ":orchestrator", orchestrator);
    update.bind(":host_state", host_state.dump());
    update.bind(":host_quiet", was_quiet && quiet ? 1 : 0);
    update.bind(":uuid", run_uuid);
    const int changed = update.exec();
    // Its effects are computed again when it finishes.
    for (const char* table : {"arm_summaries", "effects"}) {
      SQLite::Statement clear(*db_, fmt::format("DELETE FROM {} WHERE run_uuid = ?", table));
      clear.bind(1, run_uuid);
      clear.exec();
    }
    transaction.commit();
    return changed;
  });
  if (changed == 0) throw unknown_run(path_, run_uuid);
}

std::vector<std::string> Database::interrupt_gone_runs() {
  std::vector<std::string> interrupted;
  guarded(path_, "cannot mark runs whose orchestrator is gone", [&] {
    SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const liveness::Here here = liveness::this_machine();
    std::vector<std::pair<std::string, json>> gone;
    {
      SQLite::Statement running(*db_,
                                "SELECT uuid, orchestrator FROM runs WHERE status = 'running' "
                                "AND orchestrator IS NOT NULL ORDER BY started_at, rowid");
      while (running.executeStep()) {
        json record;
        try {
          record = parse_column(running.getColumn(1), "orchestrator (runs.orchestrator)");
        } catch (const internal::BadRow& bad) {
          throw internal::damaged_row(path_, running.getColumn(0).getString(), bad);
        }
        const auto verdict = liveness::judge(liveness::orchestrator_from_json(record), here);
        if (verdict.state != liveness::State::kGone) continue;
        record["gone"] = {{"found_at", now_iso8601()}, {"why", verdict.why}};
        gone.emplace_back(running.getColumn(0).getString(), std::move(record));
      }
    }
    SQLite::Statement mark(*db_,
                           "UPDATE runs SET status = 'interrupted', orchestrator = ? WHERE uuid = "
                           "?");
    for (const auto& [uuid, record] : gone) {
      mark.bind(1, dump(record));
      mark.bind(2, uuid);
      mark.exec();
      mark.reset();
      // As a run interrupted by a signal: its effects over the trials it finished.
      write_effects(uuid);
      interrupted.push_back(uuid);
    }
    transaction.commit();
  });
  return interrupted;
}

std::optional<std::string> Database::latest_run_uuid() const {
  return guarded(path_, "cannot list runs", [&]() -> std::optional<std::string> {
    SQLite::Statement query(*db_,
                            "SELECT uuid FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 1");
    if (!query.executeStep()) return std::nullopt;
    return query.getColumn(0).getString();
  });
}

std::vector<std::string> Database::run_uuids() const {
  return guarded(path_, "cannot list runs", [&] {
    SQLite::Statement query(*db_, "SELECT uuid FROM runs ORDER BY started_at, rowid");
    std::vector<std::string> uuids;
    while (query.executeStep()) uuids.push_back(query.getColumn(0).getString());
    return uuids;
  });
}

Database::StoredRun Database::run(const std::string& uuid) const {
  return guarded(path_, "cannot read run " + uuid, [&] {
    const std::string columns = qualified_names(run_columns(), "r");
    SQLite::Statement query(
        *db_, fmt::format("SELECT {}, h.json AS host_json, sw.json AS software_json FROM runs r "
                          "JOIN hosts h ON h.id = r.host_id JOIN software sw ON sw.id = "
                          "r.software_id WHERE r.uuid = ?",
                          columns));
    query.bind(1, uuid);
    if (!query.executeStep()) throw unknown_run(path_, uuid);
    StoredRun stored;
    try {
      read_row(query, run_columns(), stored);
      stored.record.host =
          parse_column(query.getColumn("host_json"), "host fingerprint (hosts.json)");
      stored.record.software =
          parse_column(query.getColumn("software_json"), "software fingerprint (software.json)");
    } catch (const internal::BadRow& bad) {
      throw internal::damaged_row(path_, uuid, bad);
    }
    return stored;
  });
}

std::string resolve_run(const Database& db, const std::string& what) {
  if (what == "latest") {
    if (auto uuid = db.latest_run_uuid()) return *uuid;
    throw StorageError(fmt::format("{} has no runs yet", db.path()));
  }
  const std::vector<std::string> uuids = db.run_uuids();
  if (std::find(uuids.begin(), uuids.end(), what) != uuids.end()) return what;
  if (what.size() < 4) {
    throw StorageError(fmt::format(
        "run \"{}\": give \"latest\" or at least the first 4 characters of a run uuid", what));
  }
  std::vector<std::string> matches;
  for (const auto& uuid : uuids) {
    if (uuid.compare(0, what.size(), what) == 0) matches.push_back(uuid);
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty()) {
    throw StorageError(fmt::format("{} has no run whose uuid starts with \"{}\"", db.path(), what));
  }
  constexpr size_t kShown = 10;
  std::string list;
  for (size_t i = 0; i < matches.size() && i < kShown; ++i) {
    list += (i == 0 ? "" : ", ") + matches[i];
  }
  if (matches.size() > kShown) list += fmt::format(" and {} more", matches.size() - kShown);
  throw StorageError(fmt::format("\"{}\" matches {} runs in {}: {}; give more characters", what,
                                 matches.size(), db.path(), list));
}

}  // namespace tunebench::storage
