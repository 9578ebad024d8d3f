// The results database: one SQLite file (results/tunebench.sqlite by default) holding every run,
// its host and software fingerprints, every trial's settings and every sample, and what analysis
// computed from them (effects, arm summaries), check found and calibrate measured. The schema and
// its views are documented in results/README.md; PRAGMA user_version is the schema version.
// Split by concern: database.cpp (open, refuse, back up, migrate), schema.cpp (the DDL of every
// version), runs.cpp, trials.cpp (the column list, trial_columns.h), calibration.cpp (noise
// floors, findings), merge.cpp, effects.cpp. No torch.
#pragma once

#include <cmath>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/records.h"

namespace SQLite {
class Database;
}

namespace tunebench::storage {

namespace internal {
struct MergeSource;  // merge.cpp
}

// The schema this build writes and the newest it reads. Bump it together with a new step in
// schema.cpp's migration() and a note in results/README.md.
constexpr int kSchemaVersion = 10;

// Anything the database refused. sqlite_code() is SQLite's primary result code (e.g. 19,
// SQLITE_CONSTRAINT) where the error came from SQLite, 0 where it did not.
class StorageError : public std::runtime_error {
 public:
  StorageError(const std::string& what, int sqlite_code = 0);
  int sqlite_code() const { return sqlite_code_; }
  // The device holding the file is full (SQLITE_FULL; an I/O error from ENOSPC reads the same):
  // the message says so and what to do.
  bool no_space() const { return sqlite_code_ == 13; }

 private:
  int sqlite_code_;
};

class Database {
 public:
  // Opens or creates the file (creating its parent folder). Sets journal_mode=WAL,
  // foreign_keys=ON, busy_timeout=10000 ms. A new file gets the schema; a file with an older
  // user_version is migrated in one transaction, after a backup copy of the file is written
  // beside it (backup_path()). A newer schema, a file that is not an SQLite
  // database, or an SQLite database that is not tunebench's (tables but no schema version) is
  // refused with a StorageError naming the path and what is wrong, and the file is left
  // unmodified.
  //
  // Access::kRead (show, export, compare, report, check --no-store, merge's sources) opens an
  // existing file only to read it: never written, never migrated, no -wal or -shm file left
  // beside it (internal::open_for_reading); an older schema version is read through a migrated
  // copy in the temporary folder, removed on close. Access::kWrite also refuses, before it
  // creates anything, a file or folder it cannot write, and a damaged file (PRAGMA quick_check).
  enum class Access { kWrite, kRead };
  explicit Database(const std::string& path, Access access = Access::kWrite);
  ~Database();
  Database(Database&&) noexcept;
  Database& operator=(Database&&) noexcept;

  int schema_version() const;
  const std::string& path() const { return path_; }
  // When this open migrated an older file: the version it had (0 otherwise) and the backup copy
  // written beside it before the migration ("<path>.schema-v1.bak").
  int migrated_from() const { return migrated_from_; }
  const std::string& backup_path() const { return backup_path_; }

  // Inserts the run with status "running" and its host and software fingerprints, each stored
  // once in its own table keyed by sha256_hex of its canonical JSON dump, and who runs it
  // (core/liveness.h's to_json; null: not recorded). One transaction.
  void begin_run(const RunRecord& run, const nlohmann::json& orchestrator = nlohmann::json());
  // Stores one trial and its samples in one transaction; returns the trial id. Unknown run,
  // a sequence number already stored for the run, or a NaN sample → StorageError, nothing stored.
  int64_t store_trial(const std::string& run_uuid, const TrialSpec& spec,
                      const TrialResult& result);
  // Stores several trials in one transaction, all or none (the two arms of a paired trial, whose
  // samples keep their blocks, positions and contamination figures); returns their ids.
  std::vector<int64_t> store_trials(const std::string& run_uuid,
                                    const std::vector<std::pair<TrialSpec, TrialResult>>& trials);
  // status: "completed", "completed with failures", "interrupted", "failed"; ended_at ISO 8601 UTC.
  // Then stores the run's effects and arm summaries (through the effects writer, below).
  void finish_run(const std::string& run_uuid, const std::string& status,
                  const std::string& ended_at);
  // Marks a run "running" again (ended_at cleared, stored effects removed until it finishes) for
  // `tunebench run --resume`, with `orchestrator` (core/liveness.h) as who runs it now. A run
  // still "running" whose orchestrator is alive on this machine is refused (StorageError, nothing
  // changed): two orchestrators would write one run. Checked inside the write transaction.
  // `resumed_state`, the host's state as the resume found it (run/host.h), is added to the run's
  // host_state under "resumed" (one entry per resume), and a resume on a host that was not quiet
  // makes the run's host_quiet false: a run is quiet only if every part of it was.
  void reopen_run(const std::string& run_uuid,
                  const nlohmann::json& orchestrator = nlohmann::json(),
                  const nlohmann::json& resumed_state = nlohmann::json(), bool quiet = true);
  // Marks "interrupted" every run stored as "running" whose orchestrator this machine can tell is
  // gone (core/liveness.h: dead here, or this host rebooted since), and stores their effects as
  // for a run interrupted by a signal; its orchestrator record gains {"gone": {found_at, why}}.
  // Runs of other hosts and runs without a record are left as they are. Writers call it (`run`,
  // `run --resume`); readers only judge (show). Returns the runs marked, in start order.
  std::vector<std::string> interrupt_gone_runs();

  std::optional<std::string> latest_run_uuid() const;  // by started_at then insertion order
  std::vector<std::string> run_uuids() const;          // oldest first

  struct StoredRun {
    RunRecord record;
    std::string status, ended_at;  // ended_at is empty while the run is "running"
    // Who runs (or ran) it, core/liveness.h's to_json, with {"gone": {found_at, why}} once a
    // writer found it gone; null where not recorded (before schema version 7, imported records).
    nlohmann::json orchestrator;
    // Schema version 9. Whether the run's controls certify it (analysis/effects.h, certify):
    // "certified: …" or "not certified: …"; empty for a run without controls or numbers.
    std::string certification;
    // How the run's budget was spent (run/allocator.h): its plan and, per experiment, the
    // workers, seconds and width it ended with and why it stopped; null without a run budget.
    nlohmann::json sampling;
  };
  StoredRun run(const std::string& uuid) const;  // StorageError if unknown

  struct StoredTrial {
    int64_t id;
    TrialSpec spec;
    TrialResult result;
  };
  // In sequence order, samples filled in; only `experiment`'s where it is given.
  std::vector<StoredTrial> trials(const std::string& run_uuid,
                                  const std::string& experiment = "") const;
  // The trials as the readers (show, compare, check, calibrate, the report) take them: `trials`
  // less each "ok" trial whose samples no worker measures (impossible_samples, core/records.h:
  // written by an older version or by hand), named once per process on stderr — the file, run,
  // experiment, arm, trial number (from 1) and trials row id — so that one such trial neither
  // stops nor skews the figures of the others.
  std::vector<StoredTrial> measured_trials(const std::string& run_uuid,
                                           const std::string& experiment = "") const;

  // A benchmark's noise floor on one host and software for one suite, from repeated A/A runs
  // (`tunebench calibrate`).
  struct NoiseFloor {
    std::string experiment, arm;
    std::vector<std::string> run_uuids;  // the A/A runs it was measured on
    double sigma_log = 0;                // standard deviation of ln(run median) across them
    // The same of ln(run median / the run's reference-kernel time) (core/reference.h); NaN where
    // the runs have no reference times (stored as NULL).
    double sigma_log_relative = NAN;
    double false_alarm = 0, power = 0;  // what min_detectable is computed for
    int baseline_runs = 0;              // baseline window min_detectable assumes
    double min_detectable = 0;          // smallest detectable slowdown, fraction
    std::string calibrated_at;
  };
  // Replaces the floors of the host, software and suite of `reference_run` (one transaction).
  void store_noise_floors(const std::string& reference_run, const std::vector<NoiseFloor>& floors);
  // The floors that apply to `run_uuid`: same host and software fingerprints and suite.
  std::vector<NoiseFloor> noise_floors(const std::string& run_uuid) const;

  // What `tunebench check` found for a run. kind: "regression", "step change", "stopped
  // helping", or "unconfirmed" (slower than its baseline, with neither a calibrated noise floor
  // nor stage 2 to tell a slow night from a slow build).
  struct Finding {
    std::string experiment, arm, kind;
    double ratio = NAN, lo = NAN, hi = NAN;  // NaN stored as NULL
    std::string detail;
  };
  // Replaces the run's stored findings with these (one transaction; none = the run is clean).
  void store_findings(const std::string& run_uuid, const std::vector<std::string>& baseline,
                      double threshold, const std::string& checked_at,
                      const std::vector<Finding>& findings);
  std::vector<Finding> findings(const std::string& run_uuid) const;

  // What analysis computed for a finished run (schema version 3): per arm its summary, and the
  // effects with their intervals and verdicts, in the order `tunebench show` prints them.
  struct ArmSummary {
    std::string experiment, arm;
    int ok = 0, failed = 0, invalid = 0;
    int64_t samples = 0;  // pooled samples of the ok trials
    // Of the pooled samples, in seconds per iteration; NaN (NULL) without an ok trial.
    double median_seconds = NAN, mad_seconds = NAN, cv = NAN;
    // Median, lowest and highest of the ok trials' own medians (trends, thread sweeps).
    double trial_median_seconds = NAN, trial_median_low_seconds = NAN,
           trial_median_high_seconds = NAN;
    // Medians over the ok trials.
    double peak_rss_bytes = NAN, probe_seconds = NAN, page_faults_per_iteration = NAN,
           items_per_second = NAN;
  };
  struct StoredEffect {
    std::string experiment;
    std::string kind;      // "effect", "main effect", "interaction", "none" (none computed)
    std::string metric;    // "time", "peak memory", "peak RSS"
    std::string compared;  // "on vs off", "CELL vs BASE", "main effect of X", "interaction X x Y"
    double ratio = NAN, lo = NAN, hi = NAN;  // NaN stored as NULL
    double confidence = 0;
    int resamples = 0;
    std::string verdict;  // stats::to_string of the verdict; "" for kind "none"
    std::string note;     // caveats; for kind "none", why no effect was computed
    std::string text;     // stats::format_effect: "0.62x [0.58, 0.66] helps"; "" for "none"
  };
  struct RunEffects {
    std::vector<ArmSummary> arms;
    std::vector<StoredEffect> effects;
    std::string certification;  // stored with the run (StoredRun::certification)
    bool empty() const { return arms.empty() && effects.empty(); }
  };
  // Replaces the run's stored effects and summaries (one transaction, or the caller's).
  void store_effects(const std::string& run_uuid, const RunEffects& effects);
  RunEffects effects(const std::string& run_uuid) const;  // empty when none are stored
  // Stores how the run's budget was spent (StoredRun::sampling), replacing what was there.
  void store_sampling(const std::string& run_uuid, const nlohmann::json& sampling);

  // Computes and stores a run's effects: analysis registers it (analysis/effects.cpp), so that
  // the store, which must not depend on analysis, can have effects computed where runs become
  // final: finish_run, the migration to version 3 and merge_from. Without one nothing is stored.
  using EffectsWriter = void (*)(Database& db, const std::string& run_uuid);
  static void set_effects_writer(EffectsWriter writer);

  // What `tunebench tune` recommended (schema version 8): the configuration measured as a whole,
  // its ladder and the runs that measured it, as one JSON document (run/tune.h says its fields).
  struct Tuning {
    std::string uuid, created_at, model;
    nlohmann::json recommendation;
  };
  void store_tuning(const Tuning& tuning);
  std::vector<Tuning> tunings() const;  // oldest first

  // Imports the runs of another tunebench database (another machine's) into this one, in one
  // transaction: a run whose uuid is not here comes whole; a run here that did not finish
  // (interrupted or failed) gains the trials (and samples) it lacks, and the other file's status,
  // end time and orchestrator where that copy finished (completed, or completed with failures),
  // then its effects are computed again; a run here that finished, or is still running, is
  // never changed (importing twice stores once). Runs still "running" there are skipped unless
  // this machine can tell their orchestrator is gone (core/liveness.h; those are imported as
  // "interrupted" and listed in `interrupted` too), hosts and software keep their fingerprints
  // (so different machines stay distinct), noise floors and tunings absent here and the findings
  // of imported runs come along, and imported runs get their effects. A run of the other file with
  // a row whose JSON does not parse is not imported (listed in `damaged` with what is wrong); the
  // others are. The other file is opened to read only (internal::open_for_reading) and never
  // modified; a newer schema, a file that is not SQLite or not tunebench's, or this same file →
  // StorageError, nothing imported.
  struct MergeResult {
    std::vector<std::string> imported, already_here, still_running;
    std::vector<std::string> interrupted;  // imported as interrupted: their orchestrator is gone
    std::vector<std::string> completed;    // held here unfinished, finished from the other copy
    std::vector<std::string> updated;      // held here unfinished, gained trials, still unfinished
    std::vector<std::pair<std::string, std::string>> damaged;  // run, what is wrong: not imported
    int hosts_added = 0;
  };
  MergeResult merge_from(const std::string& other_path);

  // The open connection, for read-only queries of the views (reports, exports, tests). A
  // statement still holding a row makes this object's next write fail: finish or destroy it.
  const SQLite::Database& connection() const { return *db_; }

 private:
  void write_effects(const std::string& run_uuid);
  void open_to_write();
  void create_or_open();  // open_to_write's steps
  void open_to_read();
  int checked_version() const;  // refuses a newer schema or someone else's database
  void refuse_damaged();
  void back_up(int version);
  void migrate();  // to kSchemaVersion, in one transaction
  void read_migrated_copy(int version);
  // One run of merge_from (merge.cpp), in a savepoint: undone alone when a row is damaged.
  void merge_run(internal::MergeSource& from, MergeResult& result);

  std::string path_;
  // The migrated copy an older file is read through (Access::kRead), removed when the last
  // owner lets go; declared before db_ so that the connection to it closes first.
  std::shared_ptr<void> temp_copy_;
  std::unique_ptr<SQLite::Database> db_;
  // This connection counted among the process's open connections to its file (database.cpp):
  // released when the connection closes (empty once moved from).
  std::shared_ptr<void> open_here_;
  int migrated_from_ = 0;
  std::string backup_path_;
};

// Run records: the text form of runs, one JSON object a line (JSON Lines), that `tunebench export
// --format records` writes and `tunebench import` reads back whole (store/records.cpp):
//   {"tunebench_records": {"version": 1, "schema_version": 8, "tunebench": "0.1.0", "runs": N}}
//   {"run": {uuid, suite_name, suite_hash, suite, label, git_revision, command_line, started_at,
//            host, software, host_state, host_quiet},
//    "status": "completed", "ended_at": "…", "trials": [{"spec": {…}, "result": {…}}, …]}
// (specs and results as core/records.h writes them). The header line is optional on import
// (bench/generate_history.py writes none). Effects are not in the text: they are computed from
// the trials again on import, as for a merged run.
inline constexpr int kRecordsVersion = 1;
nlohmann::json run_record(const Database& db, const std::string& uuid);
// The header and one line per run; runs still "running" have no final state and are left out.
// Returns the runs written.
int write_records(const Database& db, const std::vector<std::string>& uuids, std::ostream& out);

struct ImportResult {
  Database::MergeResult merged;
  int records = 0;  // run records the file held
};
// Reads every line first: a malformed line (StorageError naming its number) or a file from a
// newer tunebench (naming its versions and this build's) stores nothing. Then stores the runs in
// a scratch database beside `db` as runs that ran there would be (begin_run, store_trial,
// finish_run: so they get their effects) and merges that into `db` (each run once, by uuid: an
// import of a file already imported adds nothing). `name` names the input in messages.
ImportResult import_records(Database& db, std::istream& lines, const std::string& name);

// The rows the report reads (`tunebench export --format tables`, store/tables.cpp), as one JSON
// document: {"tunebench_tables": {"version": 1, "database": PATH}, "runs": [{column: value, …}],
// …} with the tables hosts, software, runs, trials, effects, arm_summaries, noise_floors,
// regressions and tunings, each row read whole (SELECT *, in stored order) and each column a key
// by its SQLite name with its SQLite type (integer, real, text, null; JSON columns stay text). A
// table the file lacks is an absent key; an empty (zero-byte) file gives the header alone. Opens
// the file to read (Database::Access::kRead): StorageError as that constructor says.
inline constexpr int kTablesVersion = 1;
void write_tables(const std::string& path, std::ostream& out);

// Resolves "latest" or a uuid prefix (at least 4 characters, unique) to a full run uuid;
// StorageError listing the candidates otherwise.
std::string resolve_run(const Database& db, const std::string& what);

}  // namespace tunebench::storage
