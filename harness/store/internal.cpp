#include "store/internal.h"

#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace tunebench::storage::internal {

using nlohmann::json;
namespace fs = std::filesystem;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json parse(const std::string& text) { return text.empty() ? json::object() : json::parse(text); }

// The first column of the first row of a query that has one (PRAGMA user_version, COUNT(*)).
int64_t query_int(const SQLite::Database& db, const char* sql) {
  SQLite::Statement query(db, sql);
  if (!query.executeStep()) throw SQLite::Exception(std::string("no result from ") + sql);
  return query.getColumn(0).getInt64();
}

int read_user_version(const SQLite::Database& db) {
  return static_cast<int>(query_int(db, "PRAGMA user_version"));
}

bool no_space(const SQLite::Exception& e, sqlite3* handle) {
  if (e.getErrorCode() == SQLITE_FULL) return true;
  if (e.getErrorCode() != SQLITE_IOERR) return false;
  if (e.getExtendedErrorCode() == SQLITE_IOERR_SHMSIZE) return true;
  return handle != nullptr && sqlite3_system_errno(handle) == ENOSPC;
}

std::string no_space_words(const std::string& path, const SQLite::Exception& e) {
  return fmt::format("no space left on the device holding {} (SQLite: {})", path, e.what());
}

json parse_column(const SQLite::Column& column, const std::string& what) {
  try {
    return parse(column.getString());
  } catch (const json::exception& e) {
    throw BadRow(fmt::format("its {} is not valid JSON ({})", what, e.what()));
  }
}

std::string backups_said(const std::string& path) {
  std::string list;
  for (const auto& b : backups_beside(path)) list += (list.empty() ? "" : ", ") + b;
  return list.empty() ? " (none is beside it)" : " (beside it: " + list + ")";
}

StorageError damaged_row(const std::string& path, const std::string& run_uuid, const BadRow& bad) {
  return StorageError(fmt::format(
      "{}: run {}, {}: the file is damaged: restore it from a backup{}, or copy its other runs "
      "into a new file with `tunebench merge {} --db NEW.sqlite`",
      path, run_uuid, bad.what(), backups_said(path), path));
}

std::vector<std::string> quick_check(SQLite::Database& db, int lines) {
  SQLite::Statement check(db, fmt::format("PRAGMA quick_check({})", lines));
  std::vector<std::string> problems;
  while (check.executeStep()) {
    const std::string line = check.getColumn(0).getString();
    if (line != "ok") problems.push_back(line);
  }
  return problems;
}

std::vector<std::string> backups_beside(const std::string& path) {
  const fs::path file(path);
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  const std::string name = file.filename().string();
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string other = entry.path().filename().string();
    if (other.size() > name.size() + 4 && other.compare(0, name.size(), name) == 0 &&
        other.compare(other.size() - 4, 4, ".bak") == 0) {
      found.push_back((file.parent_path() / other).string());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

namespace {

uint32_t be32(const unsigned char* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

}  // namespace

// The WAL format (sqlite.org/fileformat2.html#walformat): a 32-byte header (magic, version, page
// size, checkpoint sequence, two salts, two checksums), then frames of a 24-byte header (page
// number, the database's size in pages after a commit or 0, the salts) and one page. Frames whose
// salts differ from the header's belong to an earlier generation and end the log. Checksums are
// not verified: this only tells whether pages past the file's end are in the log.
uint32_t wal_pages(const std::string& path) {
  std::ifstream in(path + "-wal", std::ios::binary);
  unsigned char header[32] = {};
  if (!in.read(reinterpret_cast<char*>(header), sizeof header)) return 0;
  if ((be32(header) & ~1u) != 0x377f0682u) return 0;
  const uint32_t page_size = be32(header + 8);
  if (page_size < 512 || page_size > 65536) return 0;
  std::vector<unsigned char> frame(24 + page_size);
  uint32_t pages = 0;
  while (in.read(reinterpret_cast<char*>(frame.data()), std::streamsize(frame.size()))) {
    if (!std::equal(frame.begin() + 8, frame.begin() + 16, header + 16)) break;
    if (const uint32_t after_commit = be32(frame.data() + 4); after_commit > 0) {
      pages = after_commit;
    }
  }
  return pages;
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
  // Pages past the file's end may be in the -wal file still: a checkpoint that ran out of space
  // leaves the header of the new size with the file short of it; the log holds those pages.
  if (pages > 0 && be32(92) == be32(24) && uint64_t(pages) * page_size > size &&
      wal_pages(path) < pages) {
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

void bind_number_or_null(SQLite::Statement& st, int index, double value) {
  if (std::isfinite(value)) {
    st.bind(index, value);
  } else {
    st.bind(index);
  }
}

void bind_number_or_null(SQLite::Statement& st, const char* parameter, double value) {
  if (std::isfinite(value)) {
    st.bind(parameter, value);
  } else {
    st.bind(parameter);
  }
}

void in_transaction(SQLite::Database& db, const std::function<void()>& f) {
  if (sqlite3_get_autocommit(db.getHandle()) == 0) {
    f();
    return;
  }
  SQLite::Transaction transaction(db, SQLite::TransactionBehavior::IMMEDIATE);
  f();
  transaction.commit();
}

}  // namespace tunebench::storage::internal
