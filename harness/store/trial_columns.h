// The trials table as one list of columns (columns.h): each with its name, its SQL type, how a
// trial binds it and how a stored trial reads it back. The list drives CREATE TABLE (schema.cpp),
// INSERT with named binds (:name) and SELECT; merge copies the columns both files have. No torch.
#pragma once

#include <string>
#include <vector>

#include "store/columns.h"

namespace tunebench::storage {

// What one trial row is made of when it is written.
struct TrialRow {
  const std::string& run_uuid;
  const TrialSpec& spec;
  const TrialResult& result;
};

using TrialColumn = Column<TrialRow, Database::StoredTrial>;

// tunebench's trial columns, in table order (the integer primary key `id` is not among them).
const std::vector<TrialColumn>& trial_columns();

// CREATE TABLE trials with the columns of schema version `version` (since <= version).
std::string trials_create_sql(const std::vector<TrialColumn>& columns, int version);
// ALTER TABLE statements that add the columns of schema version `version` (since == version).
std::string trials_add_columns_sql(const std::vector<TrialColumn>& columns, int version);
// INSERT INTO trials (a, b, …) VALUES (:a, :b, …).
std::string trials_insert_sql(const std::vector<TrialColumn>& columns);
// SELECT id, a, b, … FROM trials WHERE run_uuid = :run_uuid ORDER BY sequence; with
// `one_experiment`, also AND experiment = :experiment.
std::string trials_select_sql(const std::vector<TrialColumn>& columns, bool one_experiment = false);

// Binds every column of `row` to an INSERT made by trials_insert_sql(columns).
void bind_trial(SQLite::Statement& insert, const std::vector<TrialColumn>& columns,
                const TrialRow& row);
// Reads the current row of a SELECT made by trials_select_sql(columns); samples not filled in.
Database::StoredTrial read_trial(const SQLite::Statement& select,
                                 const std::vector<TrialColumn>& columns);

}  // namespace tunebench::storage
