#!/usr/bin/env python3
"""Generate a synthetic tunebench results database: a nightly history for reports and tests.

    generate_history.py --out PATH [--runs 365] [--trials 100] [--samples 20] [--hosts 1] [--seed 1]

Writes a new SQLite file with tunebench's schema version 2 (the SQL below is store/storage.cpp's
kSchemaV1 and kSchemaV2, verbatim; test_render.py checks it against a database tunebench made) and `--runs`
nights of a nightly suite per host: `--trials` trials per run, `--samples` samples per trial.

What the history holds, so that a report has something true to show:
- knob effects of known size (no_grad, channels_last, allocator, omp_threads, zero_grad_none),
  an A/A control, a 2x2 factorial (channels_last x no_grad) with a small interaction;
- noise at three levels (night, process, sample) and rare outlier samples;
- step changes: GPT slows down 12 % at 30 % of the year (a code change: new git revision),
  LibTorch goes from 1.13.0 to 2.1.0 mid-year (ResNet-50 10 % faster, channels_last helps more),
  DLRM slows 8 % at 75 % of the year;
- the git revision changes every 30 nights and at each step change;
- rare failed trials (no samples) and rare runs whose host was not quiet;
- with --hosts 2, a second host (fewer, slower cores) runs the same suite every night;
- what `tunebench calibrate` and `tunebench check` store (schema version 2): noise floors of the
  main host's nightly suite on its latest software (its last 5 completed runs taken as A/A runs),
  and check's findings at the slowdowns (a 'regression' on the night of the GPT and DLRM steps, a
  'step change' on the 3 nights after when check's step search sees it), on every host.
  --schema-version 1 writes a database from before those tables existed.
Deterministic for a given --seed. The file must not exist yet (nothing is overwritten).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import sqlite3
import sys
from pathlib import Path

import numpy as np

# store/storage.cpp kSchemaV1, verbatim (sqlite_master keeps each statement's text, comments
# included, so a copy that differs by a space is a different schema to the schema test).
SCHEMA_V1 = """
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

CREATE TABLE trials (
  id                        INTEGER PRIMARY KEY,
  run_uuid                  TEXT NOT NULL REFERENCES runs (uuid) ON DELETE CASCADE,
  experiment                TEXT NOT NULL,
  knob                      TEXT NOT NULL,
  arm                       TEXT NOT NULL,
  settings                  TEXT NOT NULL,
  model                     TEXT NOT NULL,
  preset                    TEXT NOT NULL,
  model_options             TEXT NOT NULL,
  mode                      TEXT NOT NULL CHECK (mode IN ('infer', 'train')),
  batch                     INTEGER NOT NULL,
  warmup                    INTEGER NOT NULL,
  samples                   INTEGER NOT NULL,
  iterations                INTEGER NOT NULL,
  timeout_s                 REAL NOT NULL,
  process_index             INTEGER NOT NULL,
  sequence                  INTEGER NOT NULL,
  seed                      INTEGER NOT NULL,
  status                    TEXT NOT NULL CHECK (status IN ('ok', 'invalid', 'failed')),
  error                     TEXT NOT NULL,
  probe_seconds             REAL,
  peak_rss_bytes            INTEGER,
  page_faults_per_iteration REAL,
  device_peak_bytes         INTEGER,  -- NULL without a device
  items_per_second          REAL,
  check_value               REAL,
  evidence                  TEXT NOT NULL,
  worker_stderr             TEXT NOT NULL,
  UNIQUE (run_uuid, sequence)
);
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
"""
# store/storage.cpp kSchemaV2, verbatim: what calibrate and check store (noise floors, findings).
SCHEMA_V2 = """
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
"""
SCHEMA_VERSION = 2

GiB = 1 << 30
MiB = 1 << 20

# speed: seconds per iteration relative to the first host, all cores; scaling: the exponent of
# the 1-thread to all-cores speed-up (cores ** scaling).
HOSTS = [
    {"hostname": "nightly-epyc", "cpu_model": "AMD EPYC 7763 64-Core Processor", "cores": 64,
     "sockets": 1, "numa_nodes": 1, "memory_bytes": 256 * GiB, "speed": 1.0, "scaling": 0.72},
    {"hostname": "nightly-xeon", "cpu_model": "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
     "cores": 32, "sockets": 1, "numa_nodes": 1, "memory_bytes": 128 * GiB, "speed": 1.45,
     "scaling": 0.78},
]

# The catalog's claims for the knobs used (as tunebench stores them in runs.suite_json).
CLAIMS = {
    "allocator": {"change": "glibc malloc → jemalloc (or tcmalloc, jemalloc without decay)",
                  "claim": "reuses memory, fewer system calls (000)", "false_claim": "",
                  "memory_effect": True, "where": "cpu"},
    "channels_last": {"change": "NCHW → NHWC model and input",
                      "claim": "faster, with AMP on tensor cores (000)", "false_claim": "",
                      "memory_effect": False, "where": "both"},
    "no_grad": {"change": "grad-enabled forward → forward under no-grad",
                "claim": "faster and less memory (000)", "false_claim": "",
                "memory_effect": True, "where": "both"},
    "omp_threads": {"change": "OMP_NUM_THREADS and intra-op threads: 1 → all cores",
                    "claim": "the easiest switch (000)", "false_claim": "",
                    "memory_effect": False, "where": "cpu"},
    "zero_grad_none": {"change": "zero gradients in place → set them to none",
                       "claim": "fewer memory operations (000)", "false_claim": "",
                       "memory_effect": False, "where": "both"},
}

# One nightly suite. time: seconds per iteration of the off arm on the first host with all
# cores; ratio: time on/off; memory: peak RSS of the off arm and its ratio on/off. Experiments
# come in order of priority: a small --trials keeps a prefix of them.
EXPERIMENTS = [
    {"name": "no_grad.resnet50-full-infer", "knob": "no_grad", "model": "resnet50",
     "preset": "full", "mode": "infer", "batch": 32, "time": 0.42, "ratio": 0.86,
     "rss": 900 * MiB, "rss_ratio": 0.78},
    {"name": "channels_last.resnet50-full-infer", "knob": "channels_last", "model": "resnet50",
     "preset": "full", "mode": "infer", "batch": 32, "time": 0.42, "ratio": 0.74,
     "ratio_libtorch2": 0.62, "rss": 900 * MiB, "rss_ratio": 1.0},
    {"name": "allocator.dlrm-kaggle-train", "knob": "allocator", "model": "dlrm",
     "preset": "kaggle", "mode": "train", "batch": 2048, "time": 0.061, "ratio": 0.91,
     "rss": 6200 * MiB, "rss_ratio": 1.04},
    {"name": "channels_last+no_grad.resnet50-full-infer", "knob": "factorial",
     "factors": ["channels_last", "no_grad"], "model": "resnet50", "preset": "full",
     "mode": "infer", "batch": 32, "time": 0.42, "ratio": None, "rss": 900 * MiB,
     "rss_ratio": 1.0},
    {"name": "omp_threads.gpt-small-infer", "knob": "omp_threads", "model": "gpt",
     "preset": "small", "mode": "infer", "batch": 8, "time": 0.185, "ratio": None,
     "rss": 1400 * MiB, "rss_ratio": 1.0},
    {"name": "aa.no_grad.resnet50-full-infer", "knob": "aa", "model": "resnet50",
     "preset": "full", "mode": "infer", "batch": 32, "time": 0.36, "ratio": 1.0,
     "rss": 700 * MiB, "rss_ratio": 1.0},
    {"name": "zero_grad_none.gpt-small-train", "knob": "zero_grad_none", "model": "gpt",
     "preset": "small", "mode": "train", "batch": 8, "time": 0.61, "ratio": 0.996,
     "rss": 2600 * MiB, "rss_ratio": 0.97},
    {"name": "no_grad.gpt-small-infer", "knob": "no_grad", "model": "gpt", "preset": "small",
     "mode": "infer", "batch": 8, "time": 0.185, "ratio": 0.93, "rss": 1400 * MiB,
     "rss_ratio": 0.72},
    {"name": "no_grad.dlrm-kaggle-infer", "knob": "no_grad", "model": "dlrm", "preset": "kaggle",
     "mode": "infer", "batch": 2048, "time": 0.019, "ratio": 1.0, "rss": 2300 * MiB,
     "rss_ratio": 0.91},
    {"name": "zero_grad_none.resnet50-full-train", "knob": "zero_grad_none",
     "model": "resnet50", "preset": "full", "mode": "train", "batch": 32, "time": 1.35,
     "ratio": 0.985, "rss": 3100 * MiB, "rss_ratio": 1.0},
]
# Factorial cells and their time ratios to the all-off cell: channels_last 0.74, no_grad 0.86,
# both 0.74 * 0.86 * 1.04 (they interact a little: together they do slightly worse).
FACTORIAL_CELLS = [
    ("channels_last=off,no_grad=off", {"channels_last": False, "no_grad": False}, 1.0),
    ("channels_last=off,no_grad=on", {"channels_last": False, "no_grad": True}, 0.86),
    ("channels_last=on,no_grad=off", {"channels_last": True, "no_grad": False}, 0.74),
    ("channels_last=on,no_grad=on", {"channels_last": True, "no_grad": True}, 0.74 * 0.86 * 1.04),
]

NOT_APPLICABLE = [
    {"experiment": "amp.resnet50-full-infer", "reason": "needs a CUDA device: no NVIDIA driver"},
]


def dump(value) -> str:
    """JSON as nlohmann dump() writes it: keys sorted, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def arms_of(experiment: dict, host: dict) -> list[tuple[str, dict, float]]:
    """(arm name, settings, time factor) of one experiment on one host: the factor multiplies
    the experiment's time (its off arm with all cores)."""
    base = {"allocator": "glibc", "omp_threads": host["cores"]}
    knob = experiment["knob"]
    if knob == "factorial":
        return [(name, {**base, **cell}, ratio) for name, cell, ratio in FACTORIAL_CELLS]
    if knob == "omp_threads":
        speedup = host["cores"] ** host["scaling"]
        return [("off", {"allocator": "glibc", "omp_threads": 1}, speedup),
                ("on", {"allocator": "glibc", "omp_threads": host["cores"]}, 1.0)]
    if knob == "aa":
        return [("off", {**base, "no_grad": True}, 1.0), ("on", {**base, "no_grad": True}, 1.0)]
    if knob == "allocator":
        return [("off", base, 1.0), ("on", {**base, "allocator": "jemalloc"}, experiment["ratio"])]
    return [("off", {**base, knob: False}, 1.0), ("on", {**base, knob: True}, experiment["ratio"])]


def plan_suite(trials: int) -> list[dict]:
    """The prefix of EXPERIMENTS that gives every arm at least 2 processes within `trials`."""
    chosen, arms = [], 0
    for experiment in EXPERIMENTS:
        n = 4 if experiment["knob"] == "factorial" else 2
        if chosen and 2 * (arms + n) > trials:
            break
        chosen.append(experiment)
        arms += n
    return chosen


def suite_json(experiments: list[dict], samples: int) -> dict:
    entries = []
    for x in experiments:
        entry = {"model": x["model"], "preset": x["preset"], "mode": x["mode"], "batch": x["batch"]}
        if x["knob"] == "factorial":
            entry["factorial"] = x["factors"]
        elif x["knob"] == "aa":
            entry.update({"aa": True, "knob": "no_grad"})
        else:
            entry["knob"] = x["knob"]
        entries.append(entry)
    used = {f for x in experiments for f in x.get("factors", [])}
    used |= {x["knob"] for x in experiments if x["knob"] in CLAIMS}
    used |= {"no_grad"} if any(x["knob"] == "aa" for x in experiments) else set()
    return {
        "claims": {k: CLAIMS[k] for k in sorted(used)},
        "filter": "",
        "not_applicable": NOT_APPLICABLE,
        "path": "suites/nightly.json",
        "suite": {"name": "nightly", "description": "Synthetic nightly history (generate_history.py)",
                  "defaults": {"processes": 5, "warmup": 5, "samples": samples, "iterations": 10,
                               "timeout_s": 600},
                  "experiments": entries},
    }


def software_row(version: str, revision: str) -> tuple[str, str, str, str, str]:
    fingerprint = {"compiler": "12.2.0", "cuda": "none", "cudnn": "none",
                   "git_revision": revision, "libtorch_build": f"LibTorch {version} (CPU only)",
                   "libtorch_version": version, "tunebench": "0.1.0"}
    text = dump(fingerprint)
    return (sha256(text), text, version, "none", revision)


def host_row(host: dict) -> tuple:
    fingerprint = {"cores": host["cores"], "cpu_model": host["cpu_model"], "gpu": "none",
                   "gpu_driver": "none", "gpu_memory_bytes": 0, "hostname": host["hostname"],
                   "memory_bytes": host["memory_bytes"], "numa_nodes": host["numa_nodes"],
                   "sockets": host["sockets"]}
    text = dump(fingerprint)
    return (sha256(text), text, host["hostname"], host["cpu_model"], host["cores"],
            host["sockets"], host["numa_nodes"], host["memory_bytes"], "none")


def step_factor(experiment: dict, night: int, nights: int) -> float:
    """The history's step changes, as a factor on time."""
    factor = 1.0
    if experiment["model"] == "gpt" and night >= int(0.30 * nights):
        factor *= 1.12
    if experiment["model"] == "resnet50" and night >= nights // 2:
        factor *= 0.90
    if experiment["model"] == "dlrm" and night >= int(0.75 * nights):
        factor *= 1.08
    return factor


def revision_of(night: int, nights: int) -> str:
    """A new git revision every 30 nights and at each step change."""
    steps = [int(0.30 * nights), nights // 2, int(0.75 * nights)]
    epoch = night // 30 * 1000 + sum(night >= s for s in steps)
    return hashlib.sha1(f"tunebench-revision-{epoch}".encode()).hexdigest()


def t_cdf(t: float, df: int) -> float:
    """Student's t distribution function for a whole number of degrees of freedom (closed form)."""
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        return 0.5 + 0.5 * s * total
    term, total = 1.0, 1.0 if df > 1 else 0.0
    for k in range(1, (df - 1) // 2):
        term *= c2 * 2 * k / (2 * k + 1)
        total += term
    return 0.5 + (theta + s * math.cos(theta) * total) / math.pi


def t_quantile(p: float, df: int) -> float:
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


def iso(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_noise_floors(con: sqlite3.Connection, host_id: str, runs: list[dict],
                       false_alarm: float = 0.01, power: float = 0.8, baseline_runs: int = 5) -> int:
    """What `tunebench calibrate --from last:5` stores for the main host: the last (up to) 5
    completed runs on the latest software serve as the A/A runs (nothing changed between them).
    sigma_log and min_detectable are computed from the generated data as check.cpp computes them
    (the false-alarm rate split over the benchmarks). None with fewer than 3 such runs."""
    latest = runs[-1]["software_id"]
    chosen = [r for r in runs if r["software_id"] == latest and r["status"] == "completed"][-5:]
    if len(chosen) < 3:
        return 0
    keys = sorted({key for r in chosen for key in r["medians"]})
    per_benchmark = false_alarm / max(len(keys), 1)
    calibrated_at = iso(chosen[-1]["ended"] + datetime.timedelta(minutes=5))
    uuids = dump([r["uuid"] for r in chosen])
    rows = []
    for experiment, arm in keys:
        values = [r["medians"][(experiment, arm)] for r in chosen if (experiment, arm) in r["medians"]]
        if len(values) < 3:
            continue
        sigma = float(np.std(np.log(values), ddof=1))
        t = t_quantile(1 - per_benchmark, len(values) - 1) + t_quantile(power, len(values) - 1)
        detectable = math.expm1(t * sigma * math.sqrt(1 + 1 / baseline_runs))
        rows.append((host_id, latest, "nightly", experiment, arm, len(chosen), uuids, sigma,
                     false_alarm, power, baseline_runs, detectable, calibrated_at))
    con.executemany(f"INSERT INTO noise_floors VALUES ({', '.join('?' * 13)})", rows)
    return len(rows)


def write_findings(con: sqlite3.Connection, experiments: list[dict], runs: list[dict], nights: int,
                   threshold: float = 0.05) -> int:
    """What a nightly `tunebench check --across-software --baseline last:5` would have stored
    (a step comes with a new git revision, so only --across-software has a baseline that night):
    a 'regression' of every arm of the experiments that slow down (GPT at 30 %, DLRM at 75 % of
    the history) on the night of the step, when the run median is more than `threshold` above the
    median of the 5 earlier runs' medians; and a 'step change' on the 3 nights when check's step
    search sees it (3+ runs before and after it, begun within the last 5 runs). Ratios come from
    the generated medians; intervals are illustrative (±1.5 % for a regression, ±2 % for a step)."""
    rows = []
    for index, run in enumerate(runs):
        night = run["night"]
        checked_at = iso(run["ended"] + datetime.timedelta(minutes=1))
        baseline = runs[max(0, index - 5):index]
        if not baseline:
            continue
        for x in experiments:
            # a step that began `age` nights ago (0: tonight) and slowed x down
            for age in range(0, 5):
                first = night - age
                if first < 1 or step_factor(x, first, nights) <= step_factor(x, first - 1, nights):
                    continue
                for arm in sorted(a for name, a in run["medians"] if name == x["name"]):
                    key = (x["name"], arm)
                    if age == 0:
                        before = [b["medians"][key] for b in baseline if key in b["medians"]]
                        if not before or key not in run["medians"]:
                            continue
                        ratio = run["medians"][key] / float(np.median(before))
                        lo, hi = ratio / 1.015, ratio * 1.015
                        if ratio <= 1 + threshold or lo <= 1:
                            continue
                        rows.append((run["uuid"], x["name"], arm, "regression", ratio, lo, hi,
                                     f"slower than the baseline: {ratio:.2f}x [{lo:.2f}, {hi:.2f}] hurts",
                                     dump([b["uuid"] for b in baseline]), threshold, checked_at))
                    elif age >= 2 and index - age >= 3:
                        window = runs[max(0, index - 29):index + 1]
                        after = [r["medians"][key] for r in window if r["night"] >= first and key in r["medians"]]
                        prior = [r["medians"][key] for r in window if r["night"] < first and key in r["medians"]]
                        if len(after) < 3 or len(prior) < 3:
                            continue
                        ratio = float(np.median(after) / np.median(prior))
                        lo, hi = ratio / 1.02, ratio * 1.02
                        start = runs[index - age]
                        rows.append((run["uuid"], x["name"], arm, "step change", ratio, lo, hi,
                                     f"step of {ratio:.3f}x [{lo:.3f}, {hi:.3f}] (p = 0.001) from run "
                                     f"{start['uuid']} ({iso(start['started'])})",
                                     dump([b["uuid"] for b in baseline]), threshold, checked_at))
    con.executemany("INSERT INTO regressions (run_uuid, experiment, arm, kind, ratio, lo, hi, detail, "
                    "baseline, threshold, checked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return len(rows)


def generate(path: Path, runs: int, trials: int, samples: int, hosts: int, seed: int,
             schema_version: int = SCHEMA_VERSION) -> dict:
    """Write the history to a new file. schema_version 1 writes a database as tunebench wrote it
    before calibrate and check (kSchemaV1 only, no noise floors or findings)."""
    if schema_version not in (1, SCHEMA_VERSION):
        raise ValueError(f"schema_version must be 1 or {SCHEMA_VERSION}")
    rng = np.random.default_rng(seed)
    experiments = plan_suite(trials)
    suite = suite_json(experiments, samples)
    suite_text = dump(suite)
    suite_hash = sha256(dump(suite["suite"]))
    chosen_hosts = HOSTS[:hosts]
    start = datetime.datetime(2025, 1, 1, 2, 0, tzinfo=datetime.timezone.utc)

    con = sqlite3.connect(path)
    con.executescript(SCHEMA_V1)
    if schema_version >= 2:
        con.executescript(SCHEMA_V2)
    con.execute(f"PRAGMA user_version = {schema_version}")
    con.execute("BEGIN")
    host_ids = []
    for host in chosen_hosts:
        row = host_row(host)
        con.execute("INSERT INTO hosts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
        host_ids.append(row[0])
    software_ids: dict[tuple[str, str], str] = {}
    trial_id = 0
    totals = {"runs": 0, "trials": 0, "samples": 0, "noise_floors": 0, "findings": 0}
    history: list[list[dict]] = [[] for _ in chosen_hosts]  # per host, oldest first
    for night in range(runs):
        version = "1.13.0" if night < runs // 2 else "2.1.0"
        revision = revision_of(night, runs)
        if (version, revision) not in software_ids:
            row = software_row(version, revision)
            con.execute("INSERT OR IGNORE INTO software VALUES (?, ?, ?, ?, ?)", row)
            software_ids[(version, revision)] = row[0]
        for host_index, host in enumerate(chosen_hosts):
            started = start + datetime.timedelta(days=night, minutes=47 * host_index)
            duration = datetime.timedelta(seconds=int(trials * samples * 0.9) + 60)
            run_uuid = f"{seed:04x}{night:04x}-{host_index:04x}-4000-8000-{rng.integers(1 << 47):012x}"
            quiet = bool(rng.random() > 0.03)
            state = {"cpu_governor": "performance", "load_average": [0.05, 0.1, 0.1],
                     "other_running_processes": 0, "quiet": quiet, "turbo": "off",
                     "warnings": [] if quiet else ["load average 3.20 over the last minute"]}
            night_factor = float(rng.lognormal(0.0, 0.012))
            rows, sample_rows, failures = [], [], 0
            pooled: dict[tuple[str, str], list] = {}  # (experiment, arm) -> sample arrays
            sequence = 0
            # Trials round-robin over the arms, arm order reversed on odd passes (ABBA).
            slots = [(x, arm) for x in experiments for arm in arms_of(x, host)]
            per_arm = [trials // len(slots) + (i < trials % len(slots)) for i in range(len(slots))]
            for process in range(max(per_arm)):
                order = range(len(slots)) if process % 2 == 0 else reversed(range(len(slots)))
                for i in order:
                    if process >= per_arm[i]:
                        continue
                    x, (arm, settings, ratio) = slots[i]
                    if x["knob"] == "channels_last" and version != "1.13.0":
                        ratio = 1.0 if arm == "off" else x["ratio_libtorch2"]
                    trial_id += 1
                    base = x["time"] * host["speed"] * step_factor(x, night, runs) * ratio
                    process_factor = float(rng.lognormal(0.0, 0.015))
                    failed = rng.random() < 0.002
                    rss_ratio = x["rss_ratio"] if arm != "off" else 1.0
                    rss = int(x["rss"] * rss_ratio * rng.normal(1.0, 0.002))
                    if failed:
                        failures += 1
                        status, error, values, ips = "failed", "worker timed out after 600 s", [], None
                    else:
                        values = base * night_factor * process_factor * rng.lognormal(0.0, 0.01, samples)
                        outliers = rng.random(samples) < 0.01
                        values[outliers] *= 1.3
                        status, error = "ok", ""
                        ips = x["batch"] / float(np.median(values))
                        pooled.setdefault((x["name"], arm), []).append(values)
                    rows.append((trial_id, run_uuid, x["name"], x["knob"], arm, dump(settings),
                                 x["model"], x["preset"], "{}", x["mode"], x["batch"], 5, samples,
                                 10, 600.0, process, sequence, int(rng.integers(1 << 62)), status,
                                 error, 0.0101 * float(rng.lognormal(0, 0.01)),
                                 None if failed else rss, 12.0, None, ips, 0.5, "{}", ""))
                    sample_rows.extend((trial_id, k, float(v)) for k, v in enumerate(values))
                    sequence += 1
            status = "completed with failures" if failures else "completed"
            con.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_uuid, "nightly", suite_hash, suite_text, "nightly", revision,
                 "tunebench run --suite suites/nightly.json --label nightly",
                 started.strftime("%Y-%m-%dT%H:%M:%SZ"),
                 (started + duration).strftime("%Y-%m-%dT%H:%M:%SZ"), status,
                 host_ids[host_index], software_ids[(version, revision)], dump(state), int(quiet)))
            con.executemany(f"INSERT INTO trials VALUES ({', '.join('?' * 28)})", rows)
            con.executemany("INSERT INTO samples VALUES (?, ?, ?)", sample_rows)
            history[host_index].append({
                "night": night, "uuid": run_uuid, "started": started, "ended": started + duration,
                "software_id": software_ids[(version, revision)], "status": status,
                "medians": {key: float(np.median(np.concatenate(v))) for key, v in pooled.items()}})
            totals["runs"] += 1
            totals["trials"] += len(rows)
            totals["samples"] += len(sample_rows)
    if schema_version >= 2:
        totals["noise_floors"] = write_noise_floors(con, host_ids[0], history[0])
        totals["findings"] = sum(write_findings(con, experiments, h, runs) for h in history)
    con.commit()
    con.close()
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="the database to create")
    parser.add_argument("--runs", type=int, default=365, help="nights (runs per host)")
    parser.add_argument("--trials", type=int, default=100, help="trials per run")
    parser.add_argument("--samples", type=int, default=20, help="samples per trial")
    parser.add_argument("--hosts", type=int, default=1, choices=range(1, len(HOSTS) + 1),
                        help="hosts that run the suite each night")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--schema-version", type=int, default=SCHEMA_VERSION, choices=(1, SCHEMA_VERSION),
                        help="1: a database from before calibrate and check (no noise floors, no findings)")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.trials < 4 or args.samples < 1:
        parser.error("--runs must be >= 1, --trials >= 4 and --samples >= 1")
    if args.out.exists():
        print(f"generate_history.py: error: {args.out} exists; choose a new path", file=sys.stderr)
        return 2
    totals = generate(args.out, args.runs, args.trials, args.samples, args.hosts, args.seed,
                      args.schema_version)
    print(f"wrote {args.out}: {totals['runs']} runs, {totals['trials']} trials, "
          f"{totals['samples']} samples, {totals['noise_floors']} noise floors, "
          f"{totals['findings']} findings of check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
