#include "store/storage.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <utility>

namespace tunebench::storage {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Schema version 1. Units: seconds are seconds per iteration, memory in bytes; JSON columns
// hold nlohmann dump() text. Documented column by column in results/README.md.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE hosts (
  id           TEXT PRIMARY KEY,  -- sha256 of json
  json         TEXT NOT NULL,     -- the host fingerprint
  hostname     TEXT,
  cpu_model    TEXT,
  cores        INTEGER,
  sockets      INTEGER,
  numa_nodes   INTEGER,
  memory_bytes INTEGER,
  gpu          TEXT
);

CREATE TABLE software (
  id               TEXT PRIMARY KEY,  -- sha256 of json
  json             TEXT NOT NULL,     -- the software fingerprint
  libtorch_version TEXT,
  cuda             TEXT,
  git_revision     TEXT
);

CREATE TABLE runs (
  uuid         TEXT PRIMARY KEY,
  suite_name   TEXT NOT NULL,
  suite_hash   TEXT NOT NULL,
  suite_json   TEXT NOT NULL,
  label        TEXT NOT NULL,
  git_revision TEXT NOT NULL,
  command_line TEXT NOT NULL,
  started_at   TEXT NOT NULL,
  ended_at     TEXT,
  status       TEXT NOT NULL DEFAULT 'running' CHECK (status IN
                 ('running', 'completed', 'completed with failures', 'interrupted', 'failed')),
  host_id      TEXT NOT NULL REFERENCES hosts (id),
  software_id  TEXT NOT NULL REFERENCES software (id),
  host_state   TEXT NOT NULL,
  host_quiet   INTEGER NOT NULL CHECK (host_quiet IN (0, 1))
);
CREATE INDEX runs_started_at ON runs (started_at);

CREATE TABLE trials (
  id                        INTEGER PRIMARY KEY,
  run_uuid                  TEXT NOT NULL REFERENCES runs (uuid) ON DELETE CASCADE,
  experiment                TEXT NOT NULL,
  knob                      TEXT NOT NULL,
  arm                       TEXT NOT NULL,
  settings                  TEXT NOT NULL,
  model                     TEXT NOT NULL,
  preset                    TEXT NOT NULL,
  model_options             TEXT NOT NULL,
  mode                      TEXT NOT NULL CHECK (mode IN ('infer', 'train')),
  batch                     INTEGER NOT NULL,
  warmup                    INTEGER NOT NULL,
  samples                   INTEGER NOT NULL,
  iterations                INTEGER NOT NULL,
  timeout_s                 REAL NOT NULL,
  process_index             INTEGER NOT NULL,
  sequence                  INTEGER NOT NULL,
  seed                      INTEGER NOT NULL,
  status                    TEXT NOT NULL CHECK (status IN ('ok', 'invalid', 'failed')),
  error                     TEXT NOT NULL,
  probe_seconds             REAL,
  peak_rss_bytes            INTEGER,
  page_faults_per_iteration REAL,
  device_peak_bytes         INTEGER,  -- NULL without a device
  items_per_second          REAL,
  check_value               REAL,
  evidence                  TEXT NOT NULL,
  worker_stderr             TEXT NOT NULL,
  UNIQUE (run_uuid, sequence)
);
CREATE INDEX trials_run_uuid ON trials (run_uuid);

CREATE TABLE samples (
  trial_id INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  idx      INTEGER NOT NULL,
  seconds  REAL NOT NULL,  -- seconds per iteration
  PRIMARY KEY (trial_id, idx)
);

CREATE VIEW v_samples AS
SELECT r.uuid AS run_uuid, r.label, r.started_at, h.hostname AS host, h.cpu_model,
       t.id AS trial_id, t.experiment, t.knob, t.arm, t.process_index, t.sequence,
       s.idx AS sample_index, s.seconds, t.model, t.preset, t.mode, t.batch,
       t.status AS trial_status
FROM samples s
JOIN trials t ON t.id = s.trial_id
JOIN runs r ON r.uuid = t.run_uuid
JOIN hosts h ON h.id = r.host_id;

CREATE VIEW v_trial_medians AS
WITH ranked AS (
  SELECT trial_id, seconds,
         ROW_NUMBER() OVER (PARTITION BY trial_id ORDER BY seconds) AS rank,
         COUNT(*) OVER (PARTITION BY trial_id) AS n
  FROM samples
),
medians AS (
  SELECT trial_id, MAX(n) AS n_samples, AVG(seconds) AS median_seconds
  FROM ranked
  WHERE rank IN ((n + 1) / 2, (n + 2) / 2)
  GROUP BY trial_id
)
SELECT t.id AS trial_id, t.run_uuid, r.label, r.started_at, h.hostname AS host,
       t.experiment, t.knob, t.arm, t.process_index, t.sequence, t.model, t.preset, t.mode,
       t.batch, t.status, COALESCE(m.n_samples, 0) AS n_samples, m.median_seconds,
       t.items_per_second, t.peak_rss_bytes, t.device_peak_bytes
FROM trials t
JOIN runs r ON r.uuid = t.run_uuid
JOIN hosts h ON h.id = r.host_id
LEFT JOIN medians m ON m.trial_id = t.id;

CREATE VIEW v_runs AS
SELECT r.uuid, r.started_at, r.ended_at, r.status, r.suite_name, r.label, r.git_revision,
       h.hostname AS host, h.cpu_model, sw.libtorch_version, r.host_quiet,
       COALESCE(c.trials_ok, 0) AS trials_ok,
       COALESCE(c.trials_invalid, 0) AS trials_invalid,
       COALESCE(c.trials_failed, 0) AS trials_failed
FROM runs r
JOIN hosts h ON h.id = r.host_id
JOIN software sw ON sw.id = r.software_id
LEFT JOIN (
  SELECT run_uuid, SUM(status = 'ok') AS trials_ok, SUM(status = 'invalid') AS trials_invalid,
         SUM(status = 'failed') AS trials_failed
  FROM trials GROUP BY run_uuid
) c ON c.run_uuid = r.uuid;
)sql";

// Schema version 2 adds what `tunebench calibrate` and `tunebench check` learn: each benchmark's
// noise floor on a host and software, and the findings of each check. Version-1 tables are
// unchanged, so a version-1 file migrates by adding these.
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE noise_floors (
  host_id        TEXT NOT NULL REFERENCES hosts (id),
  software_id    TEXT NOT NULL REFERENCES software (id),
  suite_name     TEXT NOT NULL,
  experiment     TEXT NOT NULL,
  arm            TEXT NOT NULL,
  runs           INTEGER NOT NULL,  -- A/A runs measured
  run_uuids      TEXT NOT NULL,     -- JSON array of those runs
  sigma_log      REAL NOT NULL,     -- standard deviation of ln(run median) across the runs
  false_alarm    REAL NOT NULL,     -- one-sided false-alarm rate the floor is set for
  power          REAL NOT NULL,     -- detection probability min_detectable is computed for
  baseline_runs  INTEGER NOT NULL,  -- baseline window assumed by min_detectable
  min_detectable REAL NOT NULL,     -- smallest slowdown detectable, as a fraction (0.05 = 5 %)
  calibrated_at  TEXT NOT NULL,
  PRIMARY KEY (host_id, software_id, suite_name, experiment, arm)
);

CREATE TABLE regressions (
  id         INTEGER PRIMARY KEY,
  run_uuid   TEXT NOT NULL REFERENCES runs (uuid) ON DELETE CASCADE,
  experiment TEXT NOT NULL,
  arm        TEXT NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('regression', 'step change', 'stopped helping')),
  ratio      REAL,           -- run / baseline (regression), after / before (step change)
  lo         REAL,
  hi         REAL,
  detail     TEXT NOT NULL,  -- the finding in words, with its interval
  baseline   TEXT NOT NULL,  -- JSON array of the baseline runs
  threshold  REAL NOT NULL,
  checked_at TEXT NOT NULL
);
CREATE INDEX regressions_run_uuid ON regressions (run_uuid);
)sql";

// migrations[i] takes a file from schema version i to i + 1; version 0 is a new, empty file.
constexpr std::array<const char*, kSchemaVersion> kMigrations = {kSchemaV1, kSchemaV2};

constexpr const char* kRunStatuses[] = {"completed", "completed with failures", "interrupted",
                                        "failed"};

constexpr int kBusyTimeoutMs = 10000;

// Calls f; an SQLite exception becomes a StorageError that names the file and what was being
// done, and keeps SQLite's result code.
template <class F>
auto guarded(const std::string& path, const std::string& doing, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const SQLite::Exception& e) {
    throw StorageError(fmt::format("{}: {}: {}", path, doing, e.what()), e.getErrorCode());
  }
}

// Replaces invalid UTF-8 instead of throwing: a worker's evidence must not stop a run's storage.
// Same text as dump() for valid input, so fingerprint hashes are those of json::dump().
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json parse(const std::string& text) { return text.empty() ? json::object() : json::parse(text); }

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

// The first column of the first row of a query that has one (PRAGMA user_version, COUNT(*)).
int64_t query_int(const SQLite::Database& db, const char* sql) {
  SQLite::Statement query(db, sql);
  if (!query.executeStep()) throw SQLite::Exception(std::string("no result from ") + sql);
  return query.getColumn(0).getInt64();
}

int read_user_version(const SQLite::Database& db) {
  return static_cast<int>(query_int(db, "PRAGMA user_version"));
}

// An existing, non-empty file must start with SQLite's magic before SQLite opens it read-write.
void check_header(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) return;
  if (fs::is_directory(status)) {
    throw StorageError(path + " is a folder, not a database file: give the path of a file");
  }
  if (fs::file_size(path, ec) == 0 || ec) return;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw StorageError("cannot read " + path + ": check its permissions");
  static constexpr char kMagic[16] = "SQLite format 3";  // with its terminating NUL: 16 bytes
  char header[16] = {};
  in.read(header, sizeof header);
  if (in.gcount() != sizeof header || !std::equal(header, header + 16, kMagic)) {
    throw StorageError(path +
                       " is not an SQLite database (it does not start with \"SQLite format 3\"): "
                       "give another path, or move the file away");
  }
  // The rest of the 100-byte header: page size (offset 16, 2 bytes; 1 means 65536), the change
  // counter (24) and, valid when "version-valid-for" (92) equals it, the page count (28). A file
  // shorter than its page count says has lost its end.
  unsigned char rest[100 - 16] = {};
  in.read(reinterpret_cast<char*>(rest), sizeof rest);
  const auto size = fs::file_size(path, ec);
  if (in.gcount() != sizeof rest || ec) {
    throw StorageError(fmt::format(
        "{} is truncated: {} bytes, shorter than SQLite's 100-byte header; restore it from a "
        "backup or give another path",
        path, ec ? 0 : size));
  }
  auto be32 = [&](size_t offset) {
    offset -= 16;
    return (uint32_t(rest[offset]) << 24) | (uint32_t(rest[offset + 1]) << 16) |
           (uint32_t(rest[offset + 2]) << 8) | uint32_t(rest[offset + 3]);
  };
  const uint32_t raw_page = (uint32_t(rest[0]) << 8) | rest[1];
  const uint64_t page_size = raw_page == 1 ? 65536 : raw_page;
  const uint32_t pages = be32(28);
  if (pages > 0 && be32(92) == be32(24) && uint64_t(pages) * page_size > size) {
    throw StorageError(fmt::format(
        "{} is truncated: its header says {} pages of {} bytes ({} bytes) but the file has {} "
        "bytes; restore it from a backup (a migration leaves one beside it) or give another path",
        path, pages, page_size, uint64_t(pages) * page_size, size));
  }
}

StorageError unknown_run(const std::string& path, const std::string& uuid) {
  return StorageError(fmt::format("{}: no run {}", path, uuid));
}

// Binds a column read from one database as a parameter of a statement of another, keeping its
// type (integers stay integers, NULL stays NULL).
void bind_column(SQLite::Statement& st, int index, const SQLite::Column& column) {
  switch (column.getType()) {
    case SQLITE_INTEGER:
      st.bind(index, column.getInt64());
      break;
    case SQLITE_FLOAT:
      st.bind(index, column.getDouble());
      break;
    case SQLITE_TEXT:
      st.bind(index, column.getString());
      break;
    case SQLITE_BLOB:
      st.bind(index, column.getBlob(), column.getBytes());
      break;
    default:
      st.bind(index);
  }
}

// Inserts every row `select` yields through `insert`, column i as parameter i + 1; returns the
// rows inserted (0 for a row INSERT OR IGNORE skipped).
int copy_rows(SQLite::Statement& select, SQLite::Statement& insert) {
  int inserted = 0;
  while (select.executeStep()) {
    for (int i = 0; i < select.getColumnCount(); ++i)
      bind_column(insert, i + 1, select.getColumn(i));
    inserted += insert.exec();
    insert.reset();
  }
  return inserted;
}

std::string placeholders(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += i == 0 ? "?" : ", ?";
  return out;
}

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
constexpr const char* kTrialColumns =
    "run_uuid, experiment, knob, arm, settings, model, preset, model_options, mode, batch, "
    "warmup, samples, iterations, timeout_s, process_index, sequence, seed, status, error, "
    "probe_seconds, peak_rss_bytes, page_faults_per_iteration, device_peak_bytes, "
    "items_per_second, check_value, evidence, worker_stderr";
constexpr int kTrialColumnCount = 27;
constexpr const char* kFloorColumns =
    "host_id, software_id, suite_name, experiment, arm, runs, run_uuids, sigma_log, "
    "false_alarm, power, baseline_runs, min_detectable, calibrated_at";
constexpr int kFloorColumnCount = 13;
constexpr const char* kFindingColumns =
    "run_uuid, experiment, arm, kind, ratio, lo, hi, detail, baseline, threshold, checked_at";
constexpr int kFindingColumnCount = 11;

void bind_number_or_null(SQLite::Statement& st, int index, double value) {
  if (std::isfinite(value)) {
    st.bind(index, value);
  } else {
    st.bind(index);
  }
}

}  // namespace

StorageError::StorageError(const std::string& what, int sqlite_code)
    : std::runtime_error(what), sqlite_code_(sqlite_code) {}

Database::Database(const std::string& path) : path_(path) {
  if (path.empty()) throw StorageError("the database path is empty");
  check_header(path);
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) {
      throw StorageError(fmt::format("cannot create the folder {} for {}: {}", parent.string(),
                                     path, ec.message()));
    }
  }
  guarded(path_, "cannot open", [&] {
    db_ = std::make_unique<SQLite::Database>(path_, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE,
                                             kBusyTimeoutMs);
  });

  // Read before any write, so that a file this build cannot handle is left as it was.
  const int version =
      guarded(path_, "cannot read the schema version", [&] { return read_user_version(*db_); });
  if (version > kSchemaVersion) {
    throw StorageError(
        fmt::format("{} has schema version {}; this tunebench reads up to {}: upgrade tunebench",
                    path_, version, kSchemaVersion));
  }
  if (version == 0) {
    const int tables = guarded(path_, "cannot read the schema", [&] {
      return query_int(*db_, "SELECT COUNT(*) FROM sqlite_master");
    });
    if (tables > 0) {
      throw StorageError(fmt::format(
          "{} is an SQLite database but not a tunebench one (it has tables and no schema "
          "version): give another path",
          path_));
    }
  }

  if (sqlite3_db_readonly(db_->getHandle(), "main") == 1) {
    throw StorageError(path_ + " can only be read: tunebench writes to it; check its permissions");
  }
  guarded(path_, "cannot set up the connection", [&] {
    const std::string mode = db_->execAndGet("PRAGMA journal_mode = WAL").getString();
    if (mode != "wal") {
      throw StorageError(
          fmt::format("{}: cannot switch to WAL mode (journal mode is {})", path_, mode));
    }
    db_->exec("PRAGMA foreign_keys = ON");
  });

  if (version > 0 && version < kSchemaVersion) {
    // A copy of the file as it was, beside it, before anything changes: a consistent snapshot
    // (VACUUM INTO reads through SQLite, WAL included), never over an earlier backup.
    std::string backup = fmt::format("{}.schema-v{}.bak", path_, version);
    for (int n = 1; fs::exists(backup); ++n) {
      backup = fmt::format("{}.schema-v{}.{}.bak", path_, version, n);
    }
    guarded(path_, "cannot write the backup " + backup + " before migrating the schema", [&] {
      SQLite::Statement vacuum(*db_, "VACUUM INTO ?");
      vacuum.bind(1, backup);
      vacuum.exec();
    });
    migrated_from_ = version;
    backup_path_ = backup;
  }
  if (version < kSchemaVersion) {
    guarded(path_, "cannot migrate the schema", [&] {
      SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);
      // Another process may have migrated the file while this one waited for the lock.
      for (int v = read_user_version(*db_); v < kSchemaVersion; ++v) {
        db_->exec(kMigrations[v]);
      }
      // PRAGMA takes no bound parameters; the value is this build's constant.
      db_->exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
      transaction.commit();
    });
  }
}

Database::~Database() = default;
Database::Database(Database&&) noexcept = default;
Database& Database::operator=(Database&&) noexcept = default;

int Database::schema_version() const {
  return guarded(path_, "cannot read the schema version", [&] { return read_user_version(*db_); });
}

void Database::begin_run(const RunRecord& run) {
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
                             "software_id, host_state, host_quiet) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)");
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
    insert.exec();

    transaction.commit();
  });
}

int64_t Database::store_trial(const std::string& run_uuid, const TrialSpec& spec,
                              const TrialResult& result) {
  const std::string doing = fmt::format("cannot store trial {} of run {}", spec.sequence, run_uuid);
  try {
    SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement insert(
        *db_,
        "INSERT INTO trials (run_uuid, experiment, knob, arm, settings, model, preset, "
        "model_options, mode, batch, warmup, samples, iterations, timeout_s, process_index, "
        "sequence, seed, status, error, probe_seconds, peak_rss_bytes, page_faults_per_iteration, "
        "device_peak_bytes, items_per_second, check_value, evidence, worker_stderr) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bind(1, run_uuid);
    insert.bind(2, spec.experiment);
    insert.bind(3, spec.knob);
    insert.bind(4, spec.arm);
    insert.bind(5, dump(spec.settings));
    insert.bind(6, spec.model.model);
    insert.bind(7, spec.model.preset);
    insert.bind(8, dump(spec.model.options));
    insert.bind(9, to_string(spec.mode));
    insert.bind(10, spec.batch);
    insert.bind(11, spec.warmup);
    insert.bind(12, spec.samples);
    insert.bind(13, spec.iterations);
    insert.bind(14, spec.timeout_s);
    insert.bind(15, spec.process_index);
    insert.bind(16, spec.sequence);
    // SQLite integers are signed 64-bit: seeds of 2^63 and above read as negative in SQL and
    // come back unchanged through trials().
    insert.bind(17, static_cast<int64_t>(spec.seed));
    insert.bind(18, result.status);
    insert.bind(19, result.error);
    insert.bind(20, result.probe_seconds);
    insert.bind(21, result.peak_rss_bytes);
    insert.bind(22, result.page_faults_per_iteration);
    if (result.device_peak_bytes < 0) {
      insert.bind(23);
    } else {
      insert.bind(23, result.device_peak_bytes);
    }
    insert.bind(24, result.items_per_second);
    insert.bind(25, result.check_value);
    insert.bind(26, dump(result.evidence));
    insert.bind(27, result.worker_stderr);
    insert.exec();
    const int64_t trial_id = db_->getLastInsertRowid();

    // A NaN sample would be stored as NULL; refuse it here, with the trial row already
    // inserted: the transaction rolls both back.
    SQLite::Statement sample(*db_, "INSERT INTO samples (trial_id, idx, seconds) VALUES (?, ?, ?)");
    for (size_t i = 0; i < result.sample_seconds.size(); ++i) {
      if (std::isnan(result.sample_seconds[i])) {
        throw StorageError(fmt::format("{}: {}: sample {} is NaN", path_, doing, i));
      }
      sample.bind(1, trial_id);
      sample.bind(2, static_cast<int64_t>(i));
      sample.bind(3, result.sample_seconds[i]);
      sample.exec();
      sample.reset();
    }
    transaction.commit();
    return trial_id;
  } catch (const SQLite::Exception& e) {
    if (e.getExtendedErrorCode() == SQLITE_CONSTRAINT_FOREIGNKEY) {
      throw StorageError(fmt::format("{}: {}: the run is not in this database", path_, doing),
                         e.getErrorCode());
    }
    if (e.getExtendedErrorCode() == SQLITE_CONSTRAINT_UNIQUE) {
      throw StorageError(fmt::format("{}: {}: the run already has a trial with sequence {}", path_,
                                     doing, spec.sequence),
                         e.getErrorCode());
    }
    throw StorageError(fmt::format("{}: {}: {}", path_, doing, e.what()), e.getErrorCode());
  }
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
}

void Database::reopen_run(const std::string& run_uuid) {
  const int changed = guarded(path_, "cannot reopen run " + run_uuid, [&] {
    SQLite::Statement update(*db_,
                             "UPDATE runs SET status = 'running', ended_at = NULL WHERE uuid = ?");
    update.bind(1, run_uuid);
    return update.exec();
  });
  if (changed == 0) throw unknown_run(path_, run_uuid);
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
        "r.ended_at FROM runs r JOIN hosts h ON h.id = r.host_id "
        "JOIN software sw ON sw.id = r.software_id WHERE r.uuid = ?");
    query.bind(1, uuid);
    if (!query.executeStep()) throw unknown_run(path_, uuid);
    StoredRun stored;
    RunRecord& r = stored.record;
    r.uuid = query.getColumn(0).getString();
    r.suite_name = query.getColumn(1).getString();
    r.suite_hash = query.getColumn(2).getString();
    r.suite = parse(query.getColumn(3).getString());
    r.label = query.getColumn(4).getString();
    r.git_revision = query.getColumn(5).getString();
    r.command_line = query.getColumn(6).getString();
    r.started_at = query.getColumn(7).getString();
    r.host = parse(query.getColumn(8).getString());
    r.software = parse(query.getColumn(9).getString());
    r.host_state = parse(query.getColumn(10).getString());
    r.host_quiet = query.getColumn(11).getInt() != 0;
    stored.status = query.getColumn(12).getString();
    stored.ended_at = query.getColumn(13).getString();  // NULL reads as ""
    return stored;
  });
}

std::vector<Database::StoredTrial> Database::trials(const std::string& run_uuid) const {
  return guarded(path_, "cannot read the trials of run " + run_uuid, [&] {
    SQLite::Statement query(
        *db_,
        "SELECT id, experiment, knob, arm, settings, model, preset, model_options, mode, batch, "
        "warmup, samples, iterations, timeout_s, process_index, sequence, seed, status, error, "
        "probe_seconds, peak_rss_bytes, page_faults_per_iteration, device_peak_bytes, "
        "items_per_second, check_value, evidence, worker_stderr "
        "FROM trials WHERE run_uuid = ? ORDER BY sequence");
    query.bind(1, run_uuid);
    SQLite::Statement samples(*db_, "SELECT seconds FROM samples WHERE trial_id = ? ORDER BY idx");
    std::vector<StoredTrial> out;
    while (query.executeStep()) {
      StoredTrial t;
      t.id = query.getColumn(0).getInt64();
      TrialSpec& s = t.spec;
      s.run_uuid = run_uuid;
      s.experiment = query.getColumn(1).getString();
      s.knob = query.getColumn(2).getString();
      s.arm = query.getColumn(3).getString();
      s.settings = parse(query.getColumn(4).getString());
      s.model.model = query.getColumn(5).getString();
      s.model.preset = query.getColumn(6).getString();
      s.model.options = parse(query.getColumn(7).getString());
      s.mode = mode_from_string(query.getColumn(8).getString());
      s.batch = query.getColumn(9).getInt64();
      s.warmup = query.getColumn(10).getInt();
      s.samples = query.getColumn(11).getInt();
      s.iterations = query.getColumn(12).getInt();
      s.timeout_s = query.getColumn(13).getDouble();
      s.process_index = query.getColumn(14).getInt();
      s.sequence = query.getColumn(15).getInt();
      s.seed = static_cast<uint64_t>(query.getColumn(16).getInt64());
      TrialResult& r = t.result;
      r.status = query.getColumn(17).getString();
      r.error = query.getColumn(18).getString();
      r.probe_seconds = query.getColumn(19).getDouble();
      r.peak_rss_bytes = query.getColumn(20).getInt64();
      r.page_faults_per_iteration = query.getColumn(21).getDouble();
      const SQLite::Column device_peak = query.getColumn(22);
      r.device_peak_bytes = device_peak.isNull() ? -1 : device_peak.getInt64();
      r.items_per_second = query.getColumn(23).getDouble();
      r.check_value = query.getColumn(24).getDouble();
      r.evidence = parse(query.getColumn(25).getString());
      r.worker_stderr = query.getColumn(26).getString();

      samples.bind(1, t.id);
      while (samples.executeStep()) r.sample_seconds.push_back(samples.getColumn(0).getDouble());
      samples.reset();
      out.push_back(std::move(t));
    }
    return out;
  });
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
    SQLite::Statement insert(*db_, fmt::format("INSERT INTO noise_floors ({}) VALUES ({})",
                                               kFloorColumns, placeholders(kFloorColumnCount)));
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
        "SELECT f.experiment, f.arm, f.run_uuids, f.sigma_log, f.false_alarm, f.power, "
        "f.baseline_runs, f.min_detectable, f.calibrated_at FROM noise_floors f JOIN runs r "
        "ON r.host_id = f.host_id AND r.software_id = f.software_id AND r.suite_name = "
        "f.suite_name WHERE r.uuid = ? ORDER BY f.experiment, f.arm");
    query.bind(1, run_uuid);
    std::vector<NoiseFloor> out;
    while (query.executeStep()) {
      NoiseFloor f;
      f.experiment = query.getColumn(0).getString();
      f.arm = query.getColumn(1).getString();
      f.run_uuids = parse(query.getColumn(2).getString()).get<std::vector<std::string>>();
      f.sigma_log = query.getColumn(3).getDouble();
      f.false_alarm = query.getColumn(4).getDouble();
      f.power = query.getColumn(5).getDouble();
      f.baseline_runs = query.getColumn(6).getInt();
      f.min_detectable = query.getColumn(7).getDouble();
      f.calibrated_at = query.getColumn(8).getString();
      out.push_back(std::move(f));
    }
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
    SQLite::Statement runs(*other, "SELECT uuid, status FROM runs ORDER BY started_at, rowid");
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
    SQLite::Statement run_row(*other,
                              fmt::format("SELECT {} FROM runs WHERE uuid = ?", kRunColumns));
    SQLite::Statement run_insert(*db_, fmt::format("INSERT INTO runs ({}) VALUES ({})", kRunColumns,
                                                   placeholders(kRunColumnCount)));
    SQLite::Statement trial_rows(
        *other, fmt::format("SELECT id, {} FROM trials WHERE run_uuid = ? ORDER BY sequence",
                            kTrialColumns));
    SQLite::Statement trial_insert(*db_,
                                   fmt::format("INSERT INTO trials ({}) VALUES ({})", kTrialColumns,
                                               placeholders(kTrialColumnCount)));
    SQLite::Statement sample_rows(*other,
                                  "SELECT idx, seconds FROM samples WHERE trial_id = ? ORDER BY "
                                  "idx");
    SQLite::Statement sample_insert(
        *db_, "INSERT INTO samples (trial_id, idx, seconds) VALUES (?, ?, ?)");
    while (runs.executeStep()) {
      const std::string uuid = runs.getColumn(0).getString();
      here.bind(1, uuid);
      const bool exists = here.executeStep();
      here.reset();
      if (exists) {
        result.already_here.push_back(uuid);
        continue;
      }
      if (runs.getColumn(1).getString() == "running") {
        result.still_running.push_back(uuid);
        continue;
      }
      for (auto* pair : {&host_row, &software_row}) pair->bind(1, uuid);
      copy_rows(host_row, host_insert);
      copy_rows(software_row, software_insert);
      host_row.reset();
      software_row.reset();
      run_row.bind(1, uuid);
      copy_rows(run_row, run_insert);
      run_row.reset();
      trial_rows.bind(1, uuid);
      while (trial_rows.executeStep()) {
        for (int i = 1; i < trial_rows.getColumnCount(); ++i) {
          bind_column(trial_insert, i, trial_rows.getColumn(i));
        }
        trial_insert.exec();
        trial_insert.reset();
        const int64_t new_id = db_->getLastInsertRowid();
        sample_rows.bind(1, trial_rows.getColumn(0).getInt64());
        while (sample_rows.executeStep()) {
          sample_insert.bind(1, new_id);
          sample_insert.bind(2, sample_rows.getColumn(0).getInt64());
          sample_insert.bind(3, sample_rows.getColumn(1).getDouble());
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
      SQLite::Statement floors(
          *other, fmt::format("SELECT {} FROM noise_floors ORDER BY rowid", kFloorColumns));
      SQLite::Statement floor_insert(
          *db_, fmt::format("INSERT OR IGNORE INTO noise_floors ({}) SELECT {} WHERE EXISTS "
                            "(SELECT 1 FROM hosts WHERE id = ?1) AND EXISTS (SELECT 1 FROM "
                            "software WHERE id = ?2)",
                            kFloorColumns, [] {
                              std::string p;
                              for (int i = 1; i <= kFloorColumnCount; ++i) {
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
    result.hosts_added =
        static_cast<int>(query_int(*db_, "SELECT COUNT(*) FROM hosts")) - hosts_before;
    transaction.commit();
  });
  return result;
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
