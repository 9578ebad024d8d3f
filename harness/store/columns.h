// A table as one list of columns, each with its name, its SQL type, the schema version that added
// it, how a row binds it and how a stored row reads it back. The list drives CREATE TABLE and the
// ALTER TABLE of a migration (schema.cpp), INSERT with named binds (:name) and SELECT; merge
// copies the columns both files have, whatever their lists were (merge.cpp). A new column is one
// entry in its table's list (with `since` = the schema version that adds it, a DEFAULT when it is
// NOT NULL, and a line in results/README.md), the code that fills its value, and the readers
// that show it. The lists: trials (trial_columns.h), runs, arm summaries, effects, noise floors
// and findings (below). No torch.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "store/storage.h"

namespace tunebench::storage {

// One column of a table whose rows are written from a Row and read back into a Stored.
template <class Row, class Stored>
struct Column {
  std::string name;
  std::string sql_type;  // type and constraints as CREATE TABLE writes them
  int since = 1;         // the schema version that added the column
  // Binds the column's value to the named parameter (":name") of an INSERT.
  void (*bind)(SQLite::Statement& st, const char* parameter, const Row& row) = nullptr;
  // Reads the column's value into a stored row; nullptr: a column the reader does not need
  // (a key the caller already knows, such as the run's uuid).
  void (*read)(const SQLite::Column& column, Stored& stored) = nullptr;
};

// "a, b, …" (each name after `prefix`: "" for names, ":" for named parameters, "t." to qualify).
template <class C>
std::string column_names(const std::vector<C>& columns, const std::string& prefix = "") {
  std::string out;
  for (const auto& c : columns) out += (out.empty() ? "" : ", ") + prefix + c.name;
  return out;
}

// "t.a AS a, t.b AS b, …": the columns of table alias `alias` in a join, read back by their names.
template <class C>
std::string qualified_names(const std::vector<C>& columns, const std::string& alias) {
  std::string out;
  for (const auto& c : columns)
    out += (out.empty() ? "" : ", ") + alias + "." + c.name + " AS " + c.name;
  return out;
}

// CREATE TABLE `table` with the columns of schema version `version` (since <= version): `head`
// comes first (e.g. "id INTEGER PRIMARY KEY"), `tail` last (e.g. "PRIMARY KEY (a, b)").
template <class C>
std::string create_table_sql(const std::string& table, const std::vector<C>& columns, int version,
                             const std::string& head = "", const std::string& tail = "") {
  std::vector<std::string> lines;
  if (!head.empty()) lines.push_back(head);
  for (const auto& c : columns) {
    if (c.since <= version) lines.push_back(c.name + " " + c.sql_type);
  }
  if (!tail.empty()) lines.push_back(tail);
  std::string out = "CREATE TABLE " + table + " (\n";
  for (size_t i = 0; i < lines.size(); ++i)
    out += "  " + lines[i] + (i + 1 < lines.size() ? ",\n" : "\n");
  return out + ");\n";
}

// The ALTER TABLE statements that add the columns of schema version `version` (since == version).
template <class C>
std::string add_columns_sql(const std::string& table, const std::vector<C>& columns, int version) {
  std::string out;
  for (const auto& c : columns) {
    if (c.since == version)
      out += fmt::format("ALTER TABLE {} ADD COLUMN {} {};\n", table, c.name, c.sql_type);
  }
  return out;
}

// INSERT INTO table (a, b, …) VALUES (:a, :b, …).
template <class C>
std::string insert_sql(const std::string& table, const std::vector<C>& columns) {
  return fmt::format("INSERT INTO {} ({}) VALUES ({})", table, column_names(columns),
                     column_names(columns, ":"));
}

// Binds every column of `row` to an INSERT made by insert_sql(…, columns).
template <class Row, class Stored>
void bind_row(SQLite::Statement& insert, const std::vector<Column<Row, Stored>>& columns,
              const Row& row) {
  for (const auto& c : columns) c.bind(insert, (":" + c.name).c_str(), row);
}

// Reads the current row of a SELECT that names the list's columns (by name) into `stored`.
template <class Row, class Stored>
void read_row(const SQLite::Statement& select, const std::vector<Column<Row, Stored>>& columns,
              Stored& stored) {
  for (const auto& c : columns) {
    if (c.read != nullptr) c.read(select.getColumn(c.name.c_str()), stored);
  }
}

// --- The lists -----------------------------------------------------------------------------

// A run as begin_run writes it.
struct RunRow {
  const RunRecord& run;
  const std::string& host_id;
  const std::string& software_id;
  const nlohmann::json& orchestrator;  // null: not recorded
};
using RunColumn = Column<RunRow, Database::StoredRun>;
const std::vector<RunColumn>& run_columns();  // runs.cpp

// One arm's summary and one effect of a run, in the run's order (`position`).
struct ArmRow {
  const std::string& run_uuid;
  int position;
  const Database::ArmSummary& arm;
};
using ArmColumn = Column<ArmRow, Database::ArmSummary>;
const std::vector<ArmColumn>& arm_columns();  // effects.cpp

struct EffectRow {
  const std::string& run_uuid;
  int position;
  const Database::StoredEffect& effect;
};
using EffectColumn = Column<EffectRow, Database::StoredEffect>;
const std::vector<EffectColumn>& effect_columns();  // effects.cpp

// A noise floor of a host, software and suite; a finding of a check with what it was checked
// against.
struct FloorRow {
  const std::string& host_id;
  const std::string& software_id;
  const std::string& suite_name;
  const Database::NoiseFloor& floor;
};
using FloorColumn = Column<FloorRow, Database::NoiseFloor>;
const std::vector<FloorColumn>& floor_columns();  // calibration.cpp

struct FindingRow {
  const std::string& run_uuid;
  const std::string& baseline;  // JSON array of the baseline runs
  double threshold;
  const std::string& checked_at;
  const Database::Finding& finding;
};
using FindingColumn = Column<FindingRow, Database::Finding>;
const std::vector<FindingColumn>& finding_columns();  // calibration.cpp

}  // namespace tunebench::storage
