// Opening the results database: refusing files it must not touch, the connection settings, the
// backup copy before a migration, and the migration itself (schema.h holds its SQL).
#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include "store/internal.h"
#include "store/schema.h"

namespace tunebench::storage {

using internal::guarded;
using internal::unknown_run;
using nlohmann::json;

namespace fs = std::filesystem;
using internal::check_header;
using internal::kBusyTimeoutMs;
using internal::query_int;
using internal::read_user_version;

namespace {

Database::EffectsWriter g_effects_writer = nullptr;

// The files this process has connections to, by device and inode, and how many. Closing any
// descriptor of a file drops every POSIX lock the process holds on it, SQLite's included (SQLite's
// "How To Corrupt" names this): another process would then take the file as unused when it
// closes, checkpoint and delete the WAL under this process's connections, and the next one opened
// here would read frames that are gone (SQLITE_IOERR_SHORT_READ). So check_header, which opens
// and closes the file itself, runs only where no connection of this process has it open.
std::mutex g_open_mutex;
std::map<std::pair<dev_t, ino_t>, int> g_open_files;

std::optional<std::pair<dev_t, ino_t>> file_id(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::make_pair(st.st_dev, st.st_ino);
}

bool open_in_this_process(const std::string& path) {
  const auto id = file_id(path);
  const std::lock_guard<std::mutex> lock(g_open_mutex);
  return id && g_open_files.count(*id) > 0;
}

// Counts a connection to `path` (once it is open) until the returned handle is released.
std::shared_ptr<void> count_open(const std::string& path) {
  const auto id = file_id(path);
  if (!id) return nullptr;
  {
    const std::lock_guard<std::mutex> lock(g_open_mutex);
    ++g_open_files[*id];
  }
  return std::shared_ptr<void>(nullptr, [id = *id](void*) {
    const std::lock_guard<std::mutex> lock(g_open_mutex);
    if (--g_open_files[id] <= 0) g_open_files.erase(id);
  });
}

}  // namespace

StorageError::StorageError(const std::string& what, int sqlite_code)
    : std::runtime_error(what), sqlite_code_(sqlite_code) {}

void Database::set_effects_writer(EffectsWriter writer) { g_effects_writer = writer; }

void Database::write_effects(const std::string& run_uuid) {
  if (g_effects_writer) g_effects_writer(*this, run_uuid);
}

// Long because its steps must run in this order, each before anything is written: check the
// file, open it, read its version (refuse what this build cannot handle), set up the connection,
// back up, migrate.
Database::Database(const std::string& path) : path_(path) {
  if (path.empty()) throw StorageError("the database path is empty");
  if (!open_in_this_process(path)) check_header(path);  // else checked when first opened here
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
  open_here_ = count_open(path_);

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
      const int from = read_user_version(*db_);
      for (int v = from; v < kSchemaVersion; ++v) db_->exec(schema::migration(v));
      // PRAGMA takes no bound parameters; the value is this build's constant.
      db_->exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
      // Version 3 stores effects: the finished runs of an older file get theirs now, in the
      // migration's transaction (a failure leaves the file as it was, the backup beside it).
      if (from > 0 && from < 3) {
        for (const auto& uuid : run_uuids()) {
          if (run(uuid).status != "running") write_effects(uuid);
        }
      }
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

}  // namespace tunebench::storage
