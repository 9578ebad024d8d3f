// The stored rows the report reads, as one JSON document (`export --format tables`, storage.h):
// every column of every row by its SQLite name, so a column added to a table reaches the report
// with no edit here.
#include <SQLiteCpp/SQLiteCpp.h>

#include <filesystem>
#include <ostream>

#include "store/storage.h"

namespace tunebench::storage {

using nlohmann::json;

namespace {

// The tables the report reads, each whole. Samples are not among them: the report draws the
// stored summaries (arm_summaries), never raw samples.
constexpr const char* kReportTables[] = {"hosts",        "software",    "runs",
                                         "trials",       "effects",     "arm_summaries",
                                         "noise_floors", "regressions", "tunings"};

// A value with its SQLite storage class: integer, real, text or null. A BLOB (no tunebench
// column holds one) is written as null rather than as bytes JSON cannot carry.
json value_of(const SQLite::Column& column) {
  if (column.isInteger()) return column.getInt64();
  if (column.isFloat()) return column.getDouble();
  if (column.isText()) return column.getString();
  return nullptr;
}

bool has_table(const SQLite::Database& con, const std::string& table) {
  SQLite::Statement query(con, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name");
  query.bind(":name", table);
  return query.executeStep();
}

// Streams the rows one at a time (a year of history has tens of thousands of trials), each an
// object whose keys are the column names in table order.
void write_rows(const SQLite::Database& con, const std::string& table, std::ostream& out) {
  SQLite::Statement select(con, "SELECT * FROM \"" + table + "\" ORDER BY rowid");
  const int columns = select.getColumnCount();
  std::vector<std::string> keys;
  for (int i = 0; i < columns; ++i) keys.push_back(json(select.getColumnName(i)).dump());
  out << "[";
  const char* separator = "\n";
  while (select.executeStep()) {
    out << separator << "{";
    for (int i = 0; i < columns; ++i) {
      out << (i ? ", " : "") << keys[i] << ": " << value_of(select.getColumn(i)).dump();
    }
    out << "}";
    separator = ",\n";
  }
  out << "]";
}

}  // namespace

void write_tables(const std::string& path, std::ostream& out) {
  const json header = {{"version", kTablesVersion}, {"database", path}};
  out << "{\"tunebench_tables\": " << header.dump();
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec) && std::filesystem::file_size(path, ec) == 0) {
    out << "}\n";  // an empty file holds no tables yet
    return;
  }
  const Database db(path, Database::Access::kRead);
  for (const std::string table : kReportTables) {
    if (!has_table(db.connection(), table)) continue;
    out << ",\n" << json(table).dump() << ": ";
    write_rows(db.connection(), table, out);
  }
  out << "}\n";
}

}  // namespace tunebench::storage
