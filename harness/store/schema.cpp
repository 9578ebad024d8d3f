// The one definition of the results schema, every version of it: the SQL of each migration step
// and the trials table from its column list (trial_columns.h). results/README.md documents it.
#include "store/schema.h"

#include "store/trial_columns.h"

namespace tunebench::storage::schema {

namespace {

// Schema version 1. Units: seconds are seconds per iteration, memory in bytes; JSON columns
// hold nlohmann dump() text. Documented column by column in results/README.md. The trials table
// between these two parts comes from the column list.
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

CREATE TABLE runs (
  uuid         TEXT PRIMARY KEY,
  suite_name   TEXT NOT NULL,
  suite_hash   TEXT NOT NULL,
  suite_json   TEXT NOT NULL,
  label        TEXT NOT NULL,
  git_revision TEXT NOT NULL,
  command_line TEXT NOT NULL,
  started_at   TEXT NOT NULL,
  ended_at     TEXT,
  status       TEXT NOT NULL DEFAULT 'running' CHECK (status IN
                 ('running', 'completed', 'completed with failures', 'interrupted', 'failed')),
  host_id      TEXT NOT NULL REFERENCES hosts (id),
  software_id  TEXT NOT NULL REFERENCES software (id),
  host_state   TEXT NOT NULL,
  host_quiet   INTEGER NOT NULL CHECK (host_quiet IN (0, 1))
);
CREATE INDEX runs_started_at ON runs (started_at);

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
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE noise_floors (
  host_id        TEXT NOT NULL REFERENCES hosts (id),
  software_id    TEXT NOT NULL REFERENCES software (id),
  suite_name     TEXT NOT NULL,
  experiment     TEXT NOT NULL,
  arm            TEXT NOT NULL,
  runs           INTEGER NOT NULL,  -- A/A runs measured
  run_uuids      TEXT NOT NULL,     -- JSON array of those runs
  sigma_log      REAL NOT NULL,     -- standard deviation of ln(run median) across the runs
  false_alarm    REAL NOT NULL,     -- one-sided false-alarm rate the floor is set for
  power          REAL NOT NULL,     -- detection probability min_detectable is computed for
  baseline_runs  INTEGER NOT NULL,  -- baseline window assumed by min_detectable
  min_detectable REAL NOT NULL,     -- smallest slowdown detectable, as a fraction (0.05 = 5 %)
  calibrated_at  TEXT NOT NULL,
  PRIMARY KEY (host_id, software_id, suite_name, experiment, arm)
);

CREATE TABLE regressions (
  id         INTEGER PRIMARY KEY,
  run_uuid   TEXT NOT NULL REFERENCES runs (uuid) ON DELETE CASCADE,
  experiment TEXT NOT NULL,
  arm        TEXT NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('regression', 'step change', 'stopped helping')),
  ratio      REAL,           -- run / baseline (regression), after / before (step change)
  lo         REAL,
  hi         REAL,
  detail     TEXT NOT NULL,  -- the finding in words, with its interval
  baseline   TEXT NOT NULL,  -- JSON array of the baseline runs
  threshold  REAL NOT NULL,
  checked_at TEXT NOT NULL
);
CREATE INDEX regressions_run_uuid ON regressions (run_uuid);
)sql";

// Schema version 3 stores what analysis computes from a run's trials, once, when the run
// finishes (and for older runs when a file is migrated, and for merged runs): the effects with
// their intervals and verdicts, and each arm's summary. Two tables because they have two grains:
// an effect compares arms (run × experiment × comparison), a summary describes one arm (run ×
// experiment × arm). The per-arm summary carries what the report draws besides effects (trends:
// the median and range of the trial medians; hosts: the median throughput; thread sweeps: the
// median of trial medians per thread count), so that no reader recomputes a median.
constexpr const char* kSchemaV3 = R"sql(
CREATE TABLE arm_summaries (
  run_uuid                  TEXT NOT NULL REFERENCES runs (uuid) ON DELETE CASCADE,
  position                  INTEGER NOT NULL,  -- order of the arm's first trial in the run
  experiment                TEXT NOT NULL,
  arm                       TEXT NOT NULL,
  trials_ok                 INTEGER NOT NULL,
  trials_failed             INTEGER NOT NULL,
  trials_invalid            INTEGER NOT NULL,
  samples                   INTEGER NOT NULL,  -- samples of the ok trials, pooled
  median_seconds            REAL,  -- of the pooled samples; NULL without an ok trial
  mad_seconds               REAL,  -- median absolute deviation of the pooled samples, unscaled
  cv                        REAL,  -- stddev / mean of the pooled samples
  trial_median_seconds      REAL,  -- median of the ok trials' medians
  trial_median_low_seconds  REAL,  -- lowest ok trial median
  trial_median_high_seconds REAL,  -- highest ok trial median
  peak_rss_bytes            REAL,  -- median over the ok trials
  probe_seconds             REAL,  -- median over the ok trials
  page_faults_per_iteration REAL,  -- median over the ok trials
  items_per_second          REAL,  -- median over the ok trials
  PRIMARY KEY (run_uuid, experiment, arm)
);

CREATE TABLE effects (
  run_uuid   TEXT NOT NULL REFERENCES runs (uuid) ON DELETE CASCADE,
  position   INTEGER NOT NULL,  -- order within the run: experiments, then their effects
  experiment TEXT NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('effect', 'main effect', 'interaction', 'none')),
  metric     TEXT NOT NULL,  -- time, peak memory, peak RSS
  compared   TEXT NOT NULL,  -- on vs off, CELL vs BASE, main effect of X, interaction X x Y
  ratio      REAL,           -- on / off of the medians, or the contrast; NULL when undefined
  lo         REAL,           -- bootstrap interval; NULL when insufficient
  hi         REAL,
  confidence REAL NOT NULL,
  resamples  INTEGER NOT NULL,
  verdict    TEXT NOT NULL,  -- helps, hurts, no measurable effect, insufficient data ('' for none)
  note       TEXT NOT NULL,  -- caveats; for kind 'none', why no effect was computed
  text       TEXT NOT NULL,  -- as tunebench show prints it: "0.62x [0.58, 0.66] helps"
  PRIMARY KEY (run_uuid, position)
);
CREATE INDEX effects_experiment ON effects (experiment);
)sql";

// Schema version 4 stores paired measurement (issue #14): a paired trial's two arms are two
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

// Schema version 5 adds each paired sample's host CPU pressure (issue #14, contamination and
// confounders): the fraction of its wall time in which some task on the host waited for a CPU.
// NULL for samples stored before, and for samples of a trial alone in its process.
constexpr const char* kSchemaV5 = R"sql(
ALTER TABLE samples ADD COLUMN cpu_pressure REAL;            -- /proc/pressure/cpu "some" share
)sql";

// Schema version 6 (issue #17, reference-relative history): each trial's reference-kernel times
// (the trial columns' list), and beside each noise floor the night-to-night noise of the
// benchmark's time relative to that kernel, so that `check` can use the quieter of the two.
constexpr const char* kSchemaV6 = R"sql(
ALTER TABLE noise_floors ADD COLUMN sigma_log_relative REAL; -- σ of ln(run median / reference)
)sql";

// Schema version 7 (issue #16, a run whose orchestrator died without a word): who runs each run,
// so that a "running" run whose orchestrator is gone is known as interrupted (core/liveness.h).
// NULL for runs stored before, and for runs imported from records.
constexpr const char* kSchemaV7 = R"sql(
ALTER TABLE runs ADD COLUMN orchestrator TEXT;  -- JSON: hostname, boot_id, pid_namespace, pid, start_ticks
)sql";

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

}  // namespace

std::string migration(int from) {
  const auto& columns = trial_columns();
  switch (from) {
    case 0:
      return std::string(kSchemaV1Before) + "\n" + trials_create_sql(columns, 1) + kSchemaV1After;
    case 1:
      return std::string(kSchemaV2) + trials_add_columns_sql(columns, 2);
    case 2:
      return std::string(kSchemaV3) + trials_add_columns_sql(columns, 3);
    case 3:
      return std::string(kSchemaV4) + trials_add_columns_sql(columns, 4);
    case 4:
      return std::string(kSchemaV5) + trials_add_columns_sql(columns, 5);
    case 5:
      return std::string(kSchemaV6) + trials_add_columns_sql(columns, 6);
    case 6:
      return std::string(kSchemaV7) + trials_add_columns_sql(columns, 7);
    case 7:
      return std::string(kSchemaV8) + trials_add_columns_sql(columns, 8);
    default:
      throw StorageError("no migration from schema version " + std::to_string(from));
  }
}

}  // namespace tunebench::storage::schema
