// The one definition of the results schema, every version of it: the SQL of each migration step,
// with the tables that have a column list (columns.h: runs, trials, noise floors, findings, arm
// summaries, effects) made from it. results/README.md documents it.
#include "store/schema.h"

#include "store/columns.h"
#include "store/trial_columns.h"

namespace tunebench::storage::schema {

namespace {

// Schema version 1. Units: seconds are seconds per iteration, memory in bytes; JSON columns
// hold nlohmann dump() text. Documented column by column in results/README.md. The runs and
// trials tables between these parts come from their column lists.
constexpr const char* kSchemaV1Before = R"sql(
CREATE TABLE hosts (
  id           TEXT PRIMARY KEY,  -- sha256 of json
  json         TEXT NOT NULL,     -- the host fingerprint
  hostname     TEXT,
  cpu_model    TEXT,
  cores        INTEGER,
  sockets      INTEGER,
  numa_nodes   INTEGER,
  memory_bytes INTEGER,
  gpu          TEXT
);

CREATE TABLE software (
  id               TEXT PRIMARY KEY,  -- sha256 of json
  json             TEXT NOT NULL,     -- the software fingerprint
  libtorch_version TEXT,
  cuda             TEXT,
  git_revision     TEXT
);

)sql";
constexpr const char* kSchemaV1Runs = R"sql(CREATE INDEX runs_started_at ON runs (started_at);

)sql";

constexpr const char* kSchemaV1After = R"sql(
CREATE INDEX trials_run_uuid ON trials (run_uuid);

CREATE TABLE samples (
  trial_id INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  idx      INTEGER NOT NULL,
  seconds  REAL NOT NULL,  -- seconds per iteration
  PRIMARY KEY (trial_id, idx)
);

CREATE VIEW v_samples AS
SELECT r.uuid AS run_uuid, r.label, r.started_at, h.hostname AS host, h.cpu_model,
       t.id AS trial_id, t.experiment, t.knob, t.arm, t.process_index, t.sequence,
       s.idx AS sample_index, s.seconds, t.model, t.preset, t.mode, t.batch,
       t.status AS trial_status
FROM samples s
JOIN trials t ON t.id = s.trial_id
JOIN runs r ON r.uuid = t.run_uuid
JOIN hosts h ON h.id = r.host_id;

CREATE VIEW v_trial_medians AS
WITH ranked AS (
  SELECT trial_id, seconds,
         ROW_NUMBER() OVER (PARTITION BY trial_id ORDER BY seconds) AS rank,
         COUNT(*) OVER (PARTITION BY trial_id) AS n
  FROM samples
),
medians AS (
  SELECT trial_id, MAX(n) AS n_samples, AVG(seconds) AS median_seconds
  FROM ranked
  WHERE rank IN ((n + 1) / 2, (n + 2) / 2)
  GROUP BY trial_id
)
SELECT t.id AS trial_id, t.run_uuid, r.label, r.started_at, h.hostname AS host,
       t.experiment, t.knob, t.arm, t.process_index, t.sequence, t.model, t.preset, t.mode,
       t.batch, t.status, COALESCE(m.n_samples, 0) AS n_samples, m.median_seconds,
       t.items_per_second, t.peak_rss_bytes, t.device_peak_bytes
FROM trials t
JOIN runs r ON r.uuid = t.run_uuid
JOIN hosts h ON h.id = r.host_id
LEFT JOIN medians m ON m.trial_id = t.id;

CREATE VIEW v_runs AS
SELECT r.uuid, r.started_at, r.ended_at, r.status, r.suite_name, r.label, r.git_revision,
       h.hostname AS host, h.cpu_model, sw.libtorch_version, r.host_quiet,
       COALESCE(c.trials_ok, 0) AS trials_ok,
       COALESCE(c.trials_invalid, 0) AS trials_invalid,
       COALESCE(c.trials_failed, 0) AS trials_failed
FROM runs r
JOIN hosts h ON h.id = r.host_id
JOIN software sw ON sw.id = r.software_id
LEFT JOIN (
  SELECT run_uuid, SUM(status = 'ok') AS trials_ok, SUM(status = 'invalid') AS trials_invalid,
         SUM(status = 'failed') AS trials_failed
  FROM trials GROUP BY run_uuid
) c ON c.run_uuid = r.uuid;
)sql";

// Schema version 2 adds what `tunebench calibrate` and `tunebench check` learn: each benchmark's
// noise floor on a host and software, and the findings of each check. Version-1 tables are
// unchanged, so a version-1 file migrates by adding these.
// (noise_floors and regressions come from their column lists.)
constexpr const char* kSchemaV2 = R"sql(
CREATE INDEX regressions_run_uuid ON regressions (run_uuid);
)sql";

// Schema version 3 stores what analysis computes from a run's trials, once, when the run
// finishes (and for older runs when a file is migrated, and for merged runs): the effects with
// their intervals and verdicts, and each arm's summary. Two tables because they have two grains:
// an effect compares arms (run × experiment × comparison), a summary describes one arm (run ×
// experiment × arm). The per-arm summary carries what the report draws besides effects (trends:
// the median and range of the trial medians; hosts: the median throughput; thread sweeps: the
// median of trial medians per thread count), so that no reader recomputes a median.
// (arm_summaries and effects come from their column lists.)
constexpr const char* kSchemaV3 = R"sql(
CREATE INDEX effects_experiment ON effects (experiment);
)sql";

// Schema version 4 stores paired measurement: a paired trial's two arms are two
// trials rows with the same process_index and paired_* columns (the trial columns' list), and
// each of their samples keeps its place in the worker's ABBA sequence and what says whether
// another process interfered, so that anyone can pair the blocks again and recompute the effect.
// The columns are NULL for the samples of a trial alone in its process, except cpu_seconds, which
// every trial measures from this version on.
constexpr const char* kSchemaV4 = R"sql(
ALTER TABLE samples ADD COLUMN block INTEGER;                -- the block's index in its worker
ALTER TABLE samples ADD COLUMN position INTEGER;             -- the sample's index in its block
ALTER TABLE samples ADD COLUMN cpu_seconds REAL;             -- process CPU time per iteration
ALTER TABLE samples ADD COLUMN wait_seconds REAL;            -- run-queue wait per iteration
ALTER TABLE samples ADD COLUMN involuntary_switches INTEGER; -- over the sample
ALTER TABLE samples ADD COLUMN start_ns INTEGER;             -- CLOCK_MONOTONIC at its start
)sql";

// Schema version 5 adds each paired sample's host CPU pressure (contamination and
// confounders): the fraction of its wall time in which some task on the host waited for a CPU.
// NULL for samples stored before, and for samples of a trial alone in its process.
constexpr const char* kSchemaV5 = R"sql(
ALTER TABLE samples ADD COLUMN cpu_pressure REAL;            -- /proc/pressure/cpu "some" share
)sql";

// Schema version 6 (reference-relative history): each trial's reference-kernel times and beside
// each noise floor the night-to-night noise of the benchmark's time relative to that kernel, so
// that `check` can use the quieter of the two; both columns come from their lists.

// Schema version 7 (a run whose orchestrator died without a word): who runs each run, so that a
// "running" run whose orchestrator is gone is known as interrupted (core/liveness.h); the runs
// list's orchestrator column, NULL for runs stored before and for runs imported from records.

// Schema version 8: what `tunebench tune` recommends for a model on a host, with the ladder
// and the runs behind it (their trials and effects are the runs' own rows).
constexpr const char* kSchemaV8 = R"sql(
CREATE TABLE tunings (
  uuid           TEXT PRIMARY KEY,
  created_at     TEXT NOT NULL,
  model          TEXT NOT NULL,  -- the model as the command named it
  recommendation TEXT NOT NULL   -- JSON: settings, effects with intervals, ladder, runs, how to apply
);
)sql";

// Schema version 10: a check's finding may be "unconfirmed" (a slowdown that neither a calibrated
// noise floor nor stage 2 confirms). SQLite cannot change a column's CHECK, so the findings table
// is made again with the column list's and its rows copied across, in the migration's
// transaction; no other table refers to it.
std::string findings_v10() {
  std::string names = "id";
  for (const auto& c : finding_columns())
    if (c.since <= 9) names += ", " + c.name;
  return create_table_sql("regressions_v10", finding_columns(), 10, "id INTEGER PRIMARY KEY", "") +
         "INSERT INTO regressions_v10 (" + names + ") SELECT " + names +
         " FROM regressions;\n"
         "DROP TABLE regressions;\n"
         "ALTER TABLE regressions_v10 RENAME TO regressions;\n" +
         kSchemaV2;
}

// CREATE TABLE, or the ALTER TABLEs of `version`, of every table made from a column list, in
// the order their tables were added.
std::string tables_of(int version) {
  std::string out;
  auto table = [&](const std::string& name, const auto& columns, int created, const char* head,
                   const char* tail) {
    if (version == created) out += create_table_sql(name, columns, version, head, tail);
    if (version > created) out += add_columns_sql(name, columns, version);
  };
  table("runs", run_columns(), 1, "", "");
  table("trials", trial_columns(), 1, "id INTEGER PRIMARY KEY", "UNIQUE (run_uuid, sequence)");
  table("noise_floors", floor_columns(), 2, "",
        "PRIMARY KEY (host_id, software_id, suite_name, experiment, arm)");
  table("regressions", finding_columns(), 2, "id INTEGER PRIMARY KEY", "");
  table("arm_summaries", arm_columns(), 3, "", "PRIMARY KEY (run_uuid, experiment, arm)");
  table("effects", effect_columns(), 3, "", "PRIMARY KEY (run_uuid, position)");
  return out;
}

}  // namespace

std::string migration(int from) {
  switch (from) {
    case 0:
      return std::string(kSchemaV1Before) + tables_of(1) + kSchemaV1Runs + kSchemaV1After;
    case 1:
      return tables_of(2) + kSchemaV2;
    case 2:
      return tables_of(3) + kSchemaV3;
    case 3:
      return std::string(kSchemaV4) + tables_of(4);
    case 4:
      return std::string(kSchemaV5) + tables_of(5);
    case 5:
      return tables_of(6);
    case 6:
      return tables_of(7);
    case 7:
      return std::string(kSchemaV8) + tables_of(8);
    case 9:
      return findings_v10() + tables_of(10);
    default:
      // A version that only adds columns to listed tables needs no step of its own here: the
      // columns whose `since` is the new version are its migration.
      if (from >= 8 && from < kSchemaVersion) return tables_of(from + 1);
      throw StorageError("no migration from schema version " + std::to_string(from));
  }
}

}  // namespace tunebench::storage::schema
