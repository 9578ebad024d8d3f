// The results database: one SQLite file (results/tunebench.sqlite by default) holding every run,
// its host and software fingerprints, every trial's settings and every sample. The schema and
// its views are documented in results/README.md; PRAGMA user_version is the schema version.
// No torch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/records.h"

namespace SQLite {
class Database;
}

namespace tunebench::storage {

// The schema this build writes and the newest it reads. Bump it together with a new entry in
// the migration list in storage.cpp and a note in results/README.md.
constexpr int kSchemaVersion = 1;

// Anything the database refused. sqlite_code() is SQLite's primary result code (e.g. 19,
// SQLITE_CONSTRAINT) where the error came from SQLite, 0 where it did not.
class StorageError : public std::runtime_error {
 public:
  StorageError(const std::string& what, int sqlite_code = 0);
  int sqlite_code() const { return sqlite_code_; }

 private:
  int sqlite_code_;
};

class Database {
 public:
  // Opens or creates the file (creating its parent folder). Sets journal_mode=WAL,
  // foreign_keys=ON, busy_timeout=10000 ms. A new file gets the schema; a file with an older
  // user_version is migrated in one transaction. A newer schema, a file that is not an SQLite
  // database, or an SQLite database that is not tunebench's (tables but no schema version) is
  // refused with a StorageError naming the path and what is wrong, and the file is left
  // unmodified.
  explicit Database(const std::string& path);
  ~Database();
  Database(Database&&) noexcept;
  Database& operator=(Database&&) noexcept;

  int schema_version() const;
  const std::string& path() const { return path_; }

  // Inserts the run with status "running" and its host and software fingerprints, each stored
  // once in its own table keyed by sha256_hex of its canonical JSON dump. One transaction.
  void begin_run(const RunRecord& run);
  // Stores one trial and its samples in one transaction; returns the trial id. Unknown run,
  // a sequence number already stored for the run, or a NaN sample → StorageError, nothing stored.
  int64_t store_trial(const std::string& run_uuid, const TrialSpec& spec,
                      const TrialResult& result);
  // status: "completed", "completed with failures", "interrupted", "failed"; ended_at ISO 8601 UTC.
  void finish_run(const std::string& run_uuid, const std::string& status,
                  const std::string& ended_at);
  // Marks a run "running" again (ended_at cleared) for `tunebench run --resume`.
  void reopen_run(const std::string& run_uuid);

  std::optional<std::string> latest_run_uuid() const;  // by started_at then insertion order
  std::vector<std::string> run_uuids() const;          // oldest first

  struct StoredRun {
    RunRecord record;
    std::string status, ended_at;  // ended_at is empty while the run is "running"
  };
  StoredRun run(const std::string& uuid) const;  // StorageError if unknown

  struct StoredTrial {
    int64_t id;
    TrialSpec spec;
    TrialResult result;
  };
  // In sequence order, samples filled in.
  std::vector<StoredTrial> trials(const std::string& run_uuid) const;

  // The open connection, for read-only queries of the views (reports, exports, tests). A
  // statement still holding a row makes this object's next write fail: finish or destroy it.
  const SQLite::Database& connection() const { return *db_; }

 private:
  std::string path_;
  std::unique_ptr<SQLite::Database> db_;
};

// Resolves "latest" or a uuid prefix (at least 4 characters, unique) to a full run uuid;
// StorageError listing the candidates otherwise.
std::string resolve_run(const Database& db, const std::string& what);

}  // namespace tunebench::storage
