// Runs, their host and software fingerprints, and finding a run by uuid or prefix.
#include <algorithm>

#include "core/liveness.h"
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

void bind_json_or_null(SQLite::Statement& st, int index, const json& j) {
  if (j.is_null()) {
    st.bind(index);
  } else {
    st.bind(index, dump(j));
  }
}

}  // namespace

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

    SQLite::Statement insert(*db_,
                             "INSERT INTO runs (uuid, suite_name, suite_hash, suite_json, label, "
                             "git_revision, command_line, started_at, status, host_id, "
                             "software_id, host_state, host_quiet, orchestrator) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)");
    insert.bind(1, run.uuid);
    insert.bind(2, run.suite_name);
    insert.bind(3, run.suite_hash);
    insert.bind(4, dump(run.suite));
    insert.bind(5, run.label);
    insert.bind(6, run.git_revision);
    insert.bind(7, run.command_line);
    insert.bind(8, run.started_at);
    insert.bind(9, host_id);
    insert.bind(10, software_id);
    insert.bind(11, dump(run.host_state));
    insert.bind(12, run.host_quiet ? 1 : 0);
    bind_json_or_null(insert, 13, orchestrator);
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
                             "?, host_state = ?, host_quiet = ? WHERE uuid = ?");
    bind_json_or_null(update, 1, orchestrator);
    update.bind(2, host_state.dump());
    update.bind(3, was_quiet && quiet ? 1 : 0);
    update.bind(4, run_uuid);
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
    SQLite::Statement query(
        *db_,
        "SELECT r.uuid, r.suite_name, r.suite_hash, r.suite_json, r.label, r.git_revision, "
        "r.command_line, r.started_at, h.json, sw.json, r.host_state, r.host_quiet, r.status, "
        "r.ended_at, r.orchestrator FROM runs r JOIN hosts h ON h.id = r.host_id "
        "JOIN software sw ON sw.id = r.software_id WHERE r.uuid = ?");
    query.bind(1, uuid);
    if (!query.executeStep()) throw unknown_run(path_, uuid);
    StoredRun stored;
    RunRecord& r = stored.record;
    try {
      r.uuid = query.getColumn(0).getString();
      r.suite_name = query.getColumn(1).getString();
      r.suite_hash = query.getColumn(2).getString();
      r.suite = parse_column(query.getColumn(3), "suite (runs.suite_json)");
      r.label = query.getColumn(4).getString();
      r.git_revision = query.getColumn(5).getString();
      r.command_line = query.getColumn(6).getString();
      r.started_at = query.getColumn(7).getString();
      r.host = parse_column(query.getColumn(8), "host fingerprint (hosts.json)");
      r.software = parse_column(query.getColumn(9), "software fingerprint (software.json)");
      r.host_state = parse_column(query.getColumn(10), "host state (runs.host_state)");
      r.host_quiet = query.getColumn(11).getInt() != 0;
      stored.status = query.getColumn(12).getString();
      stored.ended_at = query.getColumn(13).getString();  // NULL reads as ""
      if (!query.getColumn(14).isNull())
        stored.orchestrator = parse_column(query.getColumn(14), "orchestrator (runs.orchestrator)");
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
