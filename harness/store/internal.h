// Helpers shared by the store's files (database, runs, trials, calibration, merge, effects): not
// part of the store's interface. No torch.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include <cmath>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/storage.h"

namespace tunebench::storage::internal {

constexpr int kBusyTimeoutMs = 10000;

// Whether SQLite failed for want of space: SQLITE_FULL ("database or disk is full": the device,
// or max_page_count), or an I/O error the kernel's ENOSPC caused (growing the -shm file of a
// full device is SQLITE_IOERR_SHMSIZE; `handle`, where given, tells the errno of the others).
bool no_space(const SQLite::Exception& e, sqlite3* handle = nullptr);
// "no space left on the device holding PATH (SQLite: …)": what a no_space failure says.
std::string no_space_words(const std::string& path, const SQLite::Exception& e);

// Calls f; an SQLite exception becomes a StorageError that names the file and what was being
// done, and keeps SQLite's result code. SQLite's extended code is said when it tells more than its
// text (every kind of I/O error reads "disk I/O error": 522 is a short read, 4618 a WAL index
// that could not be opened, 5130 a lock on it that failed; sqlite.org/rescode.html). Want of
// space is said in words, with what to do, and keeps the code SQLITE_FULL (StorageError::no_space).
template <class F>
auto guarded(const std::string& path, const std::string& doing, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const SQLite::Exception& e) {
    if (no_space(e)) {
      throw StorageError(fmt::format("{}: {}: {}: free space, then try again", path, doing,
                                     no_space_words(path, e)),
                         SQLITE_FULL);
    }
    const int extended = e.getExtendedErrorCode();
    const std::string code = extended != e.getErrorCode() && extended > 0
                                 ? fmt::format(" (SQLite extended result code {})", extended)
                                 : "";
    throw StorageError(fmt::format("{}: {}: {}{}", path, doing, e.what(), code), e.getErrorCode());
  }
}

// A row whose stored JSON does not parse (a damaged file): what names the row, e.g. "trial 3
// (row id 12): its evidence is not valid JSON (…)". Readers turn it into a StorageError that
// names the file and the run (damaged_row).
class BadRow : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// Parses a column that holds JSON ("" or NULL reads as {}); BadRow naming `what` otherwise.
nlohmann::json parse_column(const SQLite::Column& column, const std::string& what);
// "PATH: run RUN, ROW; the file is damaged: …what to do".
StorageError damaged_row(const std::string& path, const std::string& run_uuid, const BadRow& bad);

// Replaces invalid UTF-8 instead of throwing: a worker's evidence must not stop a run's storage.
// Same text as dump() for valid input, so fingerprint hashes are those of json::dump().
std::string dump(const nlohmann::json& j);
nlohmann::json parse(const std::string& text);

// The first column of the first row of a query that has one (PRAGMA user_version, COUNT(*)).
int64_t query_int(const SQLite::Database& db, const char* sql);
int read_user_version(const SQLite::Database& db);

// An existing, non-empty file must start with SQLite's magic before SQLite opens it read-write,
// and be as long as its header says, counting the pages its -wal file holds (wal_pages).
void check_header(const std::string& path);
// The database's size in pages after the last commit its -wal file holds (0: no -wal file, or
// none in it): pages a checkpoint has not copied into the file yet (a full disk stops one).
uint32_t wal_pages(const std::string& path);

// Opens an existing file to read it and never write it, leaving no file behind (database.cpp).
std::unique_ptr<SQLite::Database> open_for_reading(const std::string& path);

// The first `lines` problems SQLite's PRAGMA quick_check finds in the file (none: it is sound).
std::vector<std::string> quick_check(SQLite::Database& db, int lines);
// The backup copies beside `path` ("<file>….bak"), for the advice of a refusal; sorted.
std::vector<std::string> backups_beside(const std::string& path);
// " (beside it: A, B)" or " (none is beside it)": said after "restore it from a backup".
std::string backups_said(const std::string& path);

StorageError unknown_run(const std::string& path, const std::string& uuid);

// Binds a column read from one database as a parameter of a statement of another, keeping its
// type (integers stay integers, NULL stays NULL).
void bind_column(SQLite::Statement& st, int index, const SQLite::Column& column);

void bind_number_or_null(SQLite::Statement& st, int index, double value);
void bind_number_or_null(SQLite::Statement& st, const char* parameter, double value);
inline double number_or_nan(const SQLite::Column& c) { return c.isNull() ? NAN : c.getDouble(); }

// Runs f inside a transaction unless the connection is already in one (a migration or a merge
// computing effects inside its own transaction).
void in_transaction(SQLite::Database& db, const std::function<void()>& f);

}  // namespace tunebench::storage::internal
