// Opening the results database: refusing files it must not touch, the connection settings, the
// backup copy before a migration, and the migration itself (schema.h holds its SQL).
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
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

namespace {

// Before anything is opened or created for writing: a file, or a folder (SQLite keeps the -wal
// and -shm files beside the database), that this process cannot write is said so, so that
// nothing is left beside it (SQLite would create them before it finds out).
void refuse_unwritable(const std::string& path) {
  std::error_code ec;
  if (fs::exists(path, ec) && access(path.c_str(), W_OK) != 0) {
    throw StorageError(fmt::format(
        "{} can only be read ({}): tunebench writes to it; check its permissions, or give "
        "another --db (show, export and compare read it as it is)",
        path, std::strerror(errno)));
  }
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (fs::exists(dir, ec) && access(dir.c_str(), W_OK) != 0) {
    throw StorageError(fmt::format(
        "{}: its folder {} cannot be written ({}), and SQLite keeps the database's -wal and "
        "-shm files beside it: check the folder's permissions, or give another --db",
        path, dir.string(), std::strerror(errno)));
  }
}

// "file:" URI of a path: every byte but unreserved ones and '/' percent-encoded (a name may
// hold '?', '#' or '%').
std::string file_uri(const std::string& path) {
  std::string out = path.size() > 0 && path[0] == '/' ? "file://" : "file:";
  for (const unsigned char c : path) {
    if (std::isalnum(c) || std::strchr("-._~/", c) != nullptr) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace

// Three ways, by what this process may do there. File and folder writable, with room: a read-write
// connection set query_only, because only a connection that may write removes the -wal and -shm
// files when it closes (a read-only one leaves them), and it reads beside running writers as any
// connection does. Otherwise, with committed pages in a -wal file: read-only, which reads them
// (SQLite keeps the -shm index in memory where it cannot write it). Otherwise immutable=1:
// nothing is created or locked, which is right where nobody can write (a read-only folder or
// mount, a published file, a full device) and the file is read as it is.
std::unique_ptr<SQLite::Database> internal::open_for_reading(const std::string& path) {
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  // SQLite's -shm index takes 32 KiB: on a device with less left it could not be made.
  struct statvfs room {};
  const bool has_room =
      statvfs(dir.c_str(), &room) != 0 || uint64_t(room.f_bavail) * room.f_frsize >= 64 * 1024;
  std::unique_ptr<SQLite::Database> db;
  if (access(path.c_str(), W_OK) == 0 && access(dir.c_str(), W_OK) == 0 && has_room) {
    db = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READWRITE, kBusyTimeoutMs);
    db->exec("PRAGMA query_only = ON");
  } else if (wal_pages(path) > 0) {
    db = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READONLY, kBusyTimeoutMs);
  } else {
    db = std::make_unique<SQLite::Database>(
        file_uri(path) + "?immutable=1", SQLite::OPEN_READONLY | SQLite::OPEN_URI, kBusyTimeoutMs);
  }
  return db;
}

Database::Database(const std::string& path, Access access) : path_(path) {
  if (path.empty()) throw StorageError("the database path is empty");
  if (!open_in_this_process(path)) check_header(path);  // else checked when first opened here
  if (access == Access::kRead) {
    open_to_read();
  } else {
    open_to_write();
  }
}

// Its steps run in this order, each before anything is written: check the file can be written,
// open it, read its version (refuse what this build cannot handle), check it is sound, set up the
// connection, back up, migrate.
void Database::open_to_write() {
  std::error_code ec;
  const bool created = !fs::exists(path_, ec);
  try {
    create_or_open();
  } catch (...) {
    // A file this call created and could not set up (a full disk, a failed start) is removed:
    // no empty database is left behind.
    if (created) {
      db_.reset();
      open_here_.reset();
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path_ + suffix, ec);
    }
    throw;
  }
}

void Database::create_or_open() {
  refuse_unwritable(path_);
  const fs::path parent = fs::path(path_).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) {
      throw StorageError(fmt::format("cannot create the folder {} for {}: {}", parent.string(),
                                     path_, ec.message()));
    }
  }
  guarded(path_, "cannot open", [&] {
    db_ = std::make_unique<SQLite::Database>(path_, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE,
                                             kBusyTimeoutMs);
  });
  open_here_ = count_open(path_);
  // Read before any write, so that a file this build cannot handle is left as it was.
  const int version = checked_version();
  if (version > 0) refuse_damaged();
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
  if (version > 0 && version < kSchemaVersion) back_up(version);
  if (version < kSchemaVersion) migrate();
}

void Database::open_to_read() {
  std::error_code ec;
  if (!fs::exists(path_, ec)) {
    throw StorageError(path_ + " does not exist: give the path of a tunebench database");
  }
  guarded(path_, "cannot open it to read", [&] { db_ = internal::open_for_reading(path_); });
  open_here_ = count_open(path_);
  const int version = checked_version();
  if (version == 0) {
    throw StorageError(path_ +
                       " holds no tunebench schema yet (it is empty): run a suite into "
                       "it first (tunebench run --suite FILE --db " +
                       path_ + ")");
  }
  if (version < kSchemaVersion) read_migrated_copy(version);
}

int Database::checked_version() const {
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
  return version;
}

// A file SQLite finds damaged is not written to: what it found, and what to do.
void Database::refuse_damaged() {
  std::vector<std::string> problems;
  try {
    problems = internal::quick_check(*db_, 5);
  } catch (const SQLite::Exception& e) {
    if (e.getErrorCode() != SQLITE_CORRUPT && e.getErrorCode() != SQLITE_NOTADB) {
      guarded(path_, "cannot check the file", [&] { throw; });
    }
    problems.push_back(e.what());
  }
  if (problems.empty()) return;
  std::string said;
  for (const auto& p : problems) said += (said.empty() ? "" : "; ") + p;
  throw StorageError(fmt::format(
      "{} is damaged: SQLite's quick_check says: {}. Nothing was written to it: restore it from "
      "a backup{}, or copy its readable runs into a new file with `tunebench merge {} --db "
      "NEW.sqlite`",
      path_, said, internal::backups_said(path_), path_));
}

// A copy of the file as it was, beside it, before anything changes: a consistent snapshot
// (VACUUM INTO reads through SQLite, WAL included), never over an earlier backup.
void Database::back_up(int version) {
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

void Database::migrate() {
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

// An older file is read through a migrated copy in the temporary folder (removed on close):
// reading must not change the file, which may be read-only or another tunebench's, and this
// build's queries need its schema. VACUUM INTO makes the copy through SQLite, WAL included.
void Database::read_migrated_copy(int version) {
  std::string copy = (fs::temp_directory_path() / "tunebench-read-XXXXXX").string();
  const int fd = mkstemp(copy.data());
  if (fd < 0) {
    throw StorageError(
        fmt::format("{}: cannot make a temporary copy to read its schema version "
                    "{} ({}): set TMPDIR to a writable folder",
                    path_, version, std::strerror(errno)));
  }
  close(fd);
  temp_copy_ = std::shared_ptr<void>(nullptr, [copy](void*) {
    std::error_code ec;
    fs::remove(copy, ec);
    fs::remove(copy + "-journal", ec);
  });
  guarded(path_, fmt::format("cannot copy it to {} to read its schema version {}", copy, version),
          [&] {
            // VACUUM INTO writes the other file only; query_only would refuse it.
            db_->exec("PRAGMA query_only = OFF");
            {
              SQLite::Statement vacuum(*db_, "VACUUM INTO ?");
              vacuum.bind(1, copy);
              vacuum.exec();
            }  // finalized before its connection closes
            db_ = std::make_unique<SQLite::Database>(copy, SQLite::OPEN_READWRITE, kBusyTimeoutMs);
          });
  migrate();
  db_->exec("PRAGMA query_only = ON");
}

Database::~Database() = default;
Database::Database(Database&&) noexcept = default;
Database& Database::operator=(Database&&) noexcept = default;

int Database::schema_version() const {
  return guarded(path_, "cannot read the schema version", [&] { return read_user_version(*db_); });
}

}  // namespace tunebench::storage
