// The trials table: its column list, and storing and reading a run's trials and samples.
#include <sqlite3.h>

#include <cstdio>
#include <mutex>
#include <set>

#include "core/liveness.h"
#include "store/internal.h"
#include "store/trial_columns.h"

namespace tunebench::storage {

using internal::dump;
using internal::parse;

namespace {

using St = SQLite::Statement;
using Col = SQLite::Column;
using Stored = Database::StoredTrial;

// Helpers that keep each entry of the list on a few lines.
template <class T>
void bind_value(St& st, const char* p, const T& value) {
  st.bind(p, value);
}
std::string text(const Col& c) { return c.getString(); }  // NULL reads as ""

// The list itself, one entry per column in table order: long because it is the whole table.
std::vector<TrialColumn> make_trial_columns() {
  // clang-format off
  return {
    {"run_uuid", "TEXT NOT NULL REFERENCES runs (uuid) ON DELETE CASCADE", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.run_uuid); },
     [](const Col& c, Stored& t) { t.spec.run_uuid = text(c); }},
    {"experiment", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.spec.experiment); },
     [](const Col& c, Stored& t) { t.spec.experiment = text(c); }},
    {"knob", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.spec.knob); },
     [](const Col& c, Stored& t) { t.spec.knob = text(c); }},
    {"arm", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.spec.arm); },
     [](const Col& c, Stored& t) { t.spec.arm = text(c); }},
    {"settings", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, dump(r.spec.settings)); },
     [](const Col& c, Stored& t) { t.spec.settings = parse(text(c)); }},
    {"model", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.spec.model.model); },
     [](const Col& c, Stored& t) { t.spec.model.model = text(c); }},
    {"preset", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.spec.model.preset); },
     [](const Col& c, Stored& t) { t.spec.model.preset = text(c); }},
    {"model_options", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, dump(r.spec.model.options)); },
     [](const Col& c, Stored& t) { t.spec.model.options = parse(text(c)); }},
    {"mode", "TEXT NOT NULL CHECK (mode IN ('infer', 'train'))", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, to_string(r.spec.mode)); },
     [](const Col& c, Stored& t) { t.spec.mode = mode_from_string(text(c)); }},
    {"batch", "INTEGER NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { bind_value<int64_t>(st, p, r.spec.batch); },
     [](const Col& c, Stored& t) { t.spec.batch = c.getInt64(); }},
    {"warmup", "INTEGER NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.spec.warmup); },
     [](const Col& c, Stored& t) { t.spec.warmup = c.getInt(); }},
    {"samples", "INTEGER NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.spec.samples); },
     [](const Col& c, Stored& t) { t.spec.samples = c.getInt(); }},
    {"iterations", "INTEGER NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.spec.iterations); },
     [](const Col& c, Stored& t) { t.spec.iterations = c.getInt(); }},
    {"timeout_s", "REAL NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.spec.timeout_s); },
     [](const Col& c, Stored& t) { t.spec.timeout_s = c.getDouble(); }},
    {"process_index", "INTEGER NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.spec.process_index); },
     [](const Col& c, Stored& t) { t.spec.process_index = c.getInt(); }},
    {"sequence", "INTEGER NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.spec.sequence); },
     [](const Col& c, Stored& t) { t.spec.sequence = c.getInt(); }},
    // SQLite integers are signed 64-bit: seeds of 2^63 and above read as negative in SQL and
    // come back unchanged through trials().
    {"seed", "INTEGER NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, static_cast<int64_t>(r.spec.seed)); },
     [](const Col& c, Stored& t) { t.spec.seed = static_cast<uint64_t>(c.getInt64()); }},
    {"status", "TEXT NOT NULL CHECK (status IN ('ok', 'invalid', 'failed'))", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.result.status); },
     [](const Col& c, Stored& t) { t.result.status = text(c); }},
    {"error", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.result.error); },
     [](const Col& c, Stored& t) { t.result.error = text(c); }},
    {"probe_seconds", "REAL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.result.probe_seconds); },
     [](const Col& c, Stored& t) { t.result.probe_seconds = c.getDouble(); }},
    {"peak_rss_bytes", "INTEGER", 1,
     [](St& st, const char* p, const TrialRow& r) { bind_value<int64_t>(st, p, r.result.peak_rss_bytes); },
     [](const Col& c, Stored& t) { t.result.peak_rss_bytes = c.getInt64(); }},
    {"page_faults_per_iteration", "REAL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.result.page_faults_per_iteration); },
     [](const Col& c, Stored& t) { t.result.page_faults_per_iteration = c.getDouble(); }},
    {"device_peak_bytes", "INTEGER", 1,  // NULL without a device
     [](St& st, const char* p, const TrialRow& r) {
       if (r.result.device_peak_bytes < 0) {
         st.bind(p);
       } else {
         bind_value<int64_t>(st, p, r.result.device_peak_bytes);
       }
     },
     [](const Col& c, Stored& t) { t.result.device_peak_bytes = c.isNull() ? -1 : c.getInt64(); }},
    {"items_per_second", "REAL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.result.items_per_second); },
     [](const Col& c, Stored& t) { t.result.items_per_second = c.getDouble(); }},
    {"check_value", "REAL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.result.check_value); },
     [](const Col& c, Stored& t) { t.result.check_value = c.getDouble(); }},
    {"evidence", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, dump(r.result.evidence)); },
     [](const Col& c, Stored& t) { t.result.evidence = parse(text(c)); }},
    {"worker_stderr", "TEXT NOT NULL", 1,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.result.worker_stderr); },
     [](const Col& c, Stored& t) { t.result.worker_stderr = text(c); }},
    // A paired trial's shape (core/records.h Pairing); 0 for a trial alone in its process.
    {"paired_blocks", "INTEGER NOT NULL DEFAULT 0", 4,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.spec.pairing.blocks); },
     [](const Col& c, Stored& t) { t.spec.pairing.blocks = c.getInt(); }},
    {"paired_block_samples", "INTEGER NOT NULL DEFAULT 0", 4,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, r.spec.pairing.block_samples); },
     [](const Col& c, Stored& t) { t.spec.pairing.block_samples = c.getInt(); }},
    {"paired_on_first", "INTEGER NOT NULL DEFAULT 0 CHECK (paired_on_first IN (0, 1))", 4,
     [](St& st, const char* p, const TrialRow& r) { st.bind(p, int(r.spec.pairing.on_first)); },
     [](const Col& c, Stored& t) { t.spec.pairing.on_first = c.getInt() != 0; }},
    // The reference kernel's times beside the samples (core/reference.h), a JSON array of
    // seconds; NULL for trials stored before version 6.
    {"reference_seconds", "TEXT", 6,
     [](St& st, const char* p, const TrialRow& r) {
       if (r.result.reference_seconds.empty()) {
         st.bind(p);
       } else {
         st.bind(p, dump(r.result.reference_seconds));
       }
     },
     [](const Col& c, Stored& t) {
       if (!c.isNull()) t.result.reference_seconds = parse(text(c)).get<std::vector<double>>();
     }},
  };
  // clang-format on
}

}  // namespace

const std::vector<TrialColumn>& trial_columns() {
  static const std::vector<TrialColumn> columns = make_trial_columns();
  return columns;
}

std::string trials_create_sql(const std::vector<TrialColumn>& columns, int version) {
  return create_table_sql("trials", columns, version, "id INTEGER PRIMARY KEY",
                          "UNIQUE (run_uuid, sequence)");
}

std::string trials_add_columns_sql(const std::vector<TrialColumn>& columns, int version) {
  return add_columns_sql("trials", columns, version);
}

std::string trials_insert_sql(const std::vector<TrialColumn>& columns) {
  return insert_sql("trials", columns);
}

std::string trials_select_sql(const std::vector<TrialColumn>& columns, bool one_experiment) {
  return fmt::format("SELECT id, {} FROM trials WHERE run_uuid = :run_uuid{} ORDER BY sequence",
                     column_names(columns), one_experiment ? " AND experiment = :experiment" : "");
}

void bind_trial(SQLite::Statement& insert, const std::vector<TrialColumn>& columns,
                const TrialRow& row) {
  bind_row(insert, columns, row);
}

Database::StoredTrial read_trial(const SQLite::Statement& select,
                                 const std::vector<TrialColumn>& columns) {
  Database::StoredTrial t;
  t.id = select.getColumn("id").getInt64();
  for (const auto& c : columns) {
    try {
      c.read(select.getColumn(c.name.c_str()), t);
    } catch (const nlohmann::json::exception& e) {
      throw internal::BadRow(
          fmt::format("trial {} (trials row id {}): its {} is not valid JSON ({})",
                      select.getColumn("sequence").getInt() + 1, t.id, c.name, e.what()));
    }
  }
  return t;
}

namespace {

// The samples of one trial: for a paired trial (result.paired_samples) each with its block,
// position and contamination figures, else the time alone.
void insert_samples(SQLite::Database& db, int64_t trial_id, const TrialResult& result,
                    const std::string& where) {
  const auto& paired = result.paired_samples;
  const auto& cpu = result.sample_cpu_seconds;
  if (!paired.empty() && paired.size() != result.sample_seconds.size()) {
    throw StorageError(fmt::format("{}: {} paired samples for {} sample times", where,
                                   paired.size(), result.sample_seconds.size()));
  }
  if (!cpu.empty() && cpu.size() != result.sample_seconds.size()) {
    throw StorageError(fmt::format("{}: {} sample CPU times for {} sample times", where, cpu.size(),
                                   result.sample_seconds.size()));
  }
  SQLite::Statement sample(db,
                           "INSERT INTO samples (trial_id, idx, seconds, block, position, "
                           "cpu_seconds, wait_seconds, involuntary_switches, start_ns, "
                           "cpu_pressure) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (size_t i = 0; i < result.sample_seconds.size(); ++i) {
    // A NaN sample would be stored as NULL; refuse it here, with the trial row already
    // inserted: the transaction rolls both back.
    if (std::isnan(result.sample_seconds[i])) {
      throw StorageError(fmt::format("{}: sample {} is NaN", where, i));
    }
    sample.bind(1, trial_id);
    sample.bind(2, static_cast<int64_t>(i));
    sample.bind(3, result.sample_seconds[i]);
    if (!cpu.empty()) {
      sample.bind(6, cpu[i]);
    } else if (!paired.empty()) {
      sample.bind(6, paired[i].cpu_seconds);
    }
    if (!paired.empty()) {
      const PairedSample& p = paired[i];
      sample.bind(4, p.block);
      sample.bind(5, p.position);
      sample.bind(7, p.wait_seconds);
      sample.bind(8, p.involuntary_switches);
      sample.bind(9, p.start_ns);
      if (p.cpu_pressure >= 0) sample.bind(10, p.cpu_pressure);
    }
    sample.exec();
    sample.reset();
    sample.clearBindings();
  }
}

}  // namespace

int64_t Database::store_trial(const std::string& run_uuid, const TrialSpec& spec,
                              const TrialResult& result) {
  return store_trials(run_uuid, {{spec, result}}).front();
}

std::vector<int64_t> Database::store_trials(
    const std::string& run_uuid, const std::vector<std::pair<TrialSpec, TrialResult>>& trials) {
  // A trial is named as the run's progress line counts it: its place in the run's order, from 1.
  std::string doing = fmt::format("cannot store trial {} of run {}",
                                  trials.empty() ? 0 : trials.front().first.sequence + 1, run_uuid);
  try {
    SQLite::Transaction transaction(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    std::vector<int64_t> ids;
    for (const auto& [spec, result] : trials) {
      doing = fmt::format("cannot store trial {} of run {}", spec.sequence + 1, run_uuid);
      SQLite::Statement insert(*db_, trials_insert_sql(trial_columns()));
      bind_trial(insert, trial_columns(), {run_uuid, spec, result});
      insert.exec();
      ids.push_back(db_->getLastInsertRowid());
      insert_samples(*db_, ids.back(), result, path_ + ": " + doing);
    }
    transaction.commit();
    return ids;
  } catch (const SQLite::Exception& e) {
    if (e.getExtendedErrorCode() == SQLITE_CONSTRAINT_FOREIGNKEY) {
      throw StorageError(fmt::format("{}: {}: the run is not in this database", path_, doing),
                         e.getErrorCode());
    }
    if (e.getExtendedErrorCode() == SQLITE_CONSTRAINT_UNIQUE) {
      throw StorageError(
          fmt::format("{}: {}: the run already has a trial with that sequence", path_, doing),
          e.getErrorCode());
    }
    if (internal::no_space(e, db_->getHandle())) {
      throw StorageError(
          fmt::format("{}: {}: {}; nothing of it was stored: free space, then resume with: {}",
                      path_, doing, internal::no_space_words(path_, e),
                      liveness::resume_command(run_uuid, path_)),
          SQLITE_FULL);
    }
    throw StorageError(fmt::format("{}: {}: {}", path_, doing, e.what()), e.getErrorCode());
  }
}

std::vector<Database::StoredTrial> Database::trials(const std::string& run_uuid,
                                                    const std::string& experiment) const {
  return internal::guarded(path_, "cannot read the trials of run " + run_uuid, [&] {
    SQLite::Statement query(*db_, trials_select_sql(trial_columns(), !experiment.empty()));
    query.bind(":run_uuid", run_uuid);
    if (!experiment.empty()) query.bind(":experiment", experiment);
    SQLite::Statement samples(*db_,
                              "SELECT seconds, block, position, cpu_seconds, wait_seconds, "
                              "involuntary_switches, start_ns, cpu_pressure FROM samples "
                              "WHERE trial_id = ? ORDER BY idx");
    std::vector<StoredTrial> out;
    while (query.executeStep()) {
      StoredTrial t;
      try {
        t = read_trial(query, trial_columns());
      } catch (const internal::BadRow& bad) {
        throw internal::damaged_row(path_, run_uuid, bad);
      }
      t.spec.run_uuid = run_uuid;
      samples.bind(1, t.id);
      while (samples.executeStep()) {
        t.result.sample_seconds.push_back(samples.getColumn(0).getDouble());
        if (!samples.getColumn(3).isNull())
          t.result.sample_cpu_seconds.push_back(samples.getColumn(3).getDouble());
        if (samples.getColumn(1).isNull()) continue;  // a trial alone: no block
        PairedSample p;
        p.on = t.spec.arm == "on";
        p.seconds = t.result.sample_seconds.back();
        p.block = samples.getColumn(1).getInt();
        p.position = samples.getColumn(2).getInt();
        p.cpu_seconds = samples.getColumn(3).getDouble();
        p.wait_seconds = samples.getColumn(4).getDouble();
        p.involuntary_switches = samples.getColumn(5).getInt64();
        p.start_ns = samples.getColumn(6).getInt64();
        if (!samples.getColumn(7).isNull()) p.cpu_pressure = samples.getColumn(7).getDouble();
        t.result.paired_samples.push_back(p);
      }
      samples.reset();
      out.push_back(std::move(t));
    }
    return out;
  });
}

std::vector<Database::StoredTrial> Database::measured_trials(const std::string& run_uuid,
                                                             const std::string& experiment) const {
  // Named once per process: show and report read a run more than once.
  static std::mutex mutex;
  static std::set<std::pair<std::string, int64_t>> named;
  std::vector<StoredTrial> out;
  for (auto& t : trials(run_uuid, experiment)) {
    const std::string why = impossible_samples(t.spec, t.result);
    if (why.empty()) {
      out.push_back(std::move(t));
      continue;
    }
    const std::lock_guard<std::mutex> lock(mutex);
    if (named.insert({path_, t.id}).second) {
      fmt::print(stderr,
                 "warning: {}: run {}, trial {} ({} [{}], trials row id {}) is stored as ok, but "
                 "{}; no worker measures that: left out of every figure (correct or remove the "
                 "trial, or the run)\n",
                 path_, run_uuid, t.spec.sequence + 1, t.spec.experiment, t.spec.arm, t.id, why);
    }
  }
  return out;
}

}  // namespace tunebench::storage
