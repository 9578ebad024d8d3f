#!/usr/bin/env python3
"""Render tunebench's results database as a report: HTML page, Markdown summary and PNG figures.

    render.py --db PATH --out DIR [--run RUN|latest] [--hosts H ...] [--hosts-json FILE]

Writes DIR/report.html (self-contained: figures embedded as base64 data URIs, no network),
DIR/summary.md (fit for a CI job summary) and DIR/*.png, and prints the HTML path on its last
line. Exit 0 on success; exit 2 with one message for a missing or unreadable database, a --run
that matches no run, an unknown --hosts name or a hosts file that cannot be read.

Sections: (1) claims vs measured effects of one run (forest plot + table, time and peak memory
side by side); (2) factorial experiments (main effects, interaction); (3) trends over the
nightly history with software changes and the regressions `tunebench check` stored; (4) hosts side
by side (throughput per host, per core, per price, energy, rankings: the comparison `tunebench
compare --hosts … --format json` computed, which `tunebench report` hands over as
--hosts-json), thread-sweep curves; (5) the run's
regression check: findings of `tunebench check` and the noise floors of `tunebench calibrate`
(a schema-version-1 database, without those tables, is read too and the page says what is missing).

Layout of this file: read first (plain data, no plotting), then present (matplotlib figures,
HTML, Markdown), then the command line. Every number shown is one tunebench computed and stored
(schema version 3: the `effects` and `arm_summaries` tables, written by harness/analysis/effects.cpp when
a run finishes, when an older file is migrated and when runs are merged; `noise_floors` and
`regressions` from calibrate and check) or handed over (the hosts side by side, --hosts-json,
harness/analysis/hosts.cpp): this file computes no statistic, so an interval here is
the one `tunebench show` prints. A database older than version 3 is shown without effects, with
a note saying how to migrate it.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import html
import io
import json
import math
import sqlite3
import sys
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.lines  # noqa: E402
import matplotlib.patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

# Names from suites and hosts are drawn as plain text: '$' must never start mathtext.
matplotlib.rcParams["text.parse_math"] = False
matplotlib.rcParams["font.size"] = 10
matplotlib.rcParams["axes.titlesize"] = 11

# The results schema this script reads (results/README.md): up to version 8's tunings. What
# versions 6 and 7 added (reference times, a run's orchestrator) is not drawn; a newer file is
# drawn from what it shares with this one, with a warning.
SCHEMA_VERSION = 8
TUNEBENCH_TABLES = ("hosts", "software", "runs", "trials", "samples")


class ReportError(Exception):
    """A problem the user fixes (path, --run, --hosts, --hosts-json): one message, exit 2."""


# ============================================================================================
# Verdicts as tunebench stores them (harness/analysis/stats.cpp computes every number this page shows)
# ============================================================================================

HELPS, HURTS, NO_EFFECT, INSUFFICIENT = "helps", "hurts", "no measurable effect", "insufficient data"
# The paired estimator's verdicts (harness/analysis/paired.h). Stored verdicts carry their numbers ("no
# effect beyond ±2%", "not precise enough (±3.4%)"); verdict_kind() drops them.
EQUIVALENT, INCONCLUSIVE = "no effect beyond the margin", "inconclusive"
NOT_PRECISE, HOST_BUSY = "not precise enough", "host too busy"


def verdict_kind(verdict: str) -> str:
    """A stored verdict without its numbers: "no effect beyond ±2%" is EQUIVALENT."""
    if verdict.startswith("no effect beyond"):
        return EQUIVALENT
    if verdict.startswith("not precise enough"):
        return NOT_PRECISE
    return verdict

# ============================================================================================
# Compute: reading the database
# ============================================================================================


def open_database(path: str) -> tuple[sqlite3.Connection, list[str], int]:
    """Open `path` read-only. Returns the connection, the tunebench tables it lacks (all of them
    for an empty file) and its schema version. Raises ReportError when it cannot be read."""
    file = Path(path)
    if not file.exists():
        raise ReportError(
            f"{path}: no such database. Make one with "
            f"`tunebench run --suite suites/smoke.json --db {path}`, or pass --db PATH."
        )
    if not file.is_file():
        raise ReportError(f"{path}: not a file; --db takes an SQLite database made by tunebench")
    uri = "file:" + urllib.parse.quote(str(file.resolve())) + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
        tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        version = con.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.Error as error:
        raise ReportError(f"{path}: cannot read it as an SQLite database ({error})") from None
    missing = [t for t in TUNEBENCH_TABLES if t not in tables]
    if missing and len(missing) < len(TUNEBENCH_TABLES):
        raise ReportError(
            f"{path}: an SQLite database, but not tunebench's: it lacks the tables "
            f"{', '.join(missing)} (results/README.md describes the schema)"
        )
    return con, missing, version


@dataclass
class RunInfo:
    uuid: str
    started_at: str
    ended_at: str | None
    status: str
    suite_name: str
    label: str
    hostname: str
    cpu_model: str
    cores: int | None
    libtorch_version: str
    git_revision: str  # the software fingerprint's, falling back to the run's
    host_quiet: bool

    @property
    def when(self) -> datetime.datetime:
        return parse_time(self.started_at)


def parse_time(text: str) -> datetime.datetime:
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        return datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def load_runs(con: sqlite3.Connection) -> list[RunInfo]:
    """Every run, oldest first (the order storage::resolve_run uses)."""
    rows = con.execute(
        """SELECT r.uuid, r.started_at, r.ended_at, r.status, r.suite_name, r.label,
                  COALESCE(h.hostname, '?'), COALESCE(h.cpu_model, '?'), h.cores,
                  COALESCE(sw.libtorch_version, '?'), COALESCE(sw.git_revision, r.git_revision),
                  r.host_quiet
           FROM runs r LEFT JOIN hosts h ON h.id = r.host_id
           LEFT JOIN software sw ON sw.id = r.software_id
           ORDER BY r.started_at, r.rowid"""
    ).fetchall()
    return [
        RunInfo(u, s, e, st, sn, lb or "", hn, cm, c, lv, gr or "", bool(q))
        for u, s, e, st, sn, lb, hn, cm, c, lv, gr, q in rows
    ]


def select_run(runs: list[RunInfo], spec: str) -> RunInfo | None:
    """`latest`, a full uuid or a unique prefix of 4+ characters (as storage::resolve_run).
    None for `latest` without runs; ReportError when `spec` matches no run or several."""
    if spec == "latest":
        return runs[-1] if runs else None
    exact = [r for r in runs if r.uuid == spec]
    if exact:
        return exact[0]
    known = f"the database has {len(runs)} run(s)" + (f"; the latest is {runs[-1].uuid}" if runs else "")
    if len(spec) < 4:
        raise ReportError(f"--run {spec!r}: give 'latest', a run uuid or 4+ of its first characters ({known})")
    matches = [r for r in runs if r.uuid.startswith(spec)]
    if not matches:
        raise ReportError(f"--run {spec!r}: no run has this id ({known})")
    if len(matches) > 1:
        raise ReportError(f"--run {spec!r}: {len(matches)} runs start with it; give more characters")
    return matches[0]


@dataclass
class RunDetails:
    """The selected run's stored context."""

    claims: dict  # knob id -> {"change", "claim", "false_claim", "where", "memory_effect"}
    not_applicable: list  # [{"experiment", "reason"}]
    host_warnings: list
    software_build: str
    command_line: str


def load_run_details(con: sqlite3.Connection, run_uuid: str) -> RunDetails:
    suite_text, state_text, software_text, command = con.execute(
        """SELECT r.suite_json, r.host_state, sw.json, r.command_line FROM runs r
           LEFT JOIN software sw ON sw.id = r.software_id WHERE r.uuid = ?""",
        (run_uuid,),
    ).fetchone()
    suite, state, software = (_json_object(t) for t in (suite_text, state_text, software_text))
    claims = suite.get("claims") if isinstance(suite.get("claims"), dict) else {}
    claims = {k: v for k, v in claims.items() if isinstance(v, dict)}
    not_applicable = [
        na for na in suite.get("not_applicable") or [] if isinstance(na, dict)
    ]
    warnings = state.get("warnings") if isinstance(state.get("warnings"), list) else []
    return RunDetails(claims, not_applicable, [str(w) for w in warnings],
                      str(software.get("libtorch_build", "")), command or "")


def _json_object(text) -> dict:
    try:
        value = json.loads(text) if text else {}
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


# ============================================================================================
# Read: the selected run's stored effects and arm summaries (harness/analysis/effects.cpp wrote them)
# ============================================================================================


@dataclass
class Effect:
    """One stored effect: a ratio with its interval and verdict, as tunebench computed it."""

    metric: str  # "time", "peak memory" or "peak RSS"
    compared: str  # "on vs off", "<cell> vs <all-off cell>", "main effect of X", "interaction X x Y"
    ratio: float  # NaN (NULL) when undefined
    lo: float  # NaN when insufficient
    hi: float
    verdict: str
    note: str = ""
    confidence: float = 0.95
    text: str = ""  # as `tunebench show` prints it, verdict included
    kind: str = "effect"  # "effect", "main effect", "interaction"


@dataclass
class Arm:
    name: str
    ok: int = 0
    failed: int = 0
    invalid: int = 0
    median_seconds: float = float("nan")  # stored: median of the pooled samples of ok trials
    problems: list = field(default_factory=list)


@dataclass
class Experiment:
    name: str
    knob: str
    model: str
    preset: str
    mode: str
    batch: int
    arms: list  # of Arm, in first-seen order
    effects: list = field(default_factory=list)  # of Effect: the pairwise comparisons
    contrasts: list = field(default_factory=list)  # of Effect: factorial main effects, interactions
    claim: dict = field(default_factory=dict)  # the catalog's entry for the knob; {} if none
    factors: list = field(default_factory=list)  # factorial: the knobs varied
    problem: str = ""
    slowdown: float = 0.0  # a positive control's known slowdown of its ON arm (0.03); else 0

    @property
    def is_aa(self) -> bool:
        return self.knob == "aa"

    @property
    def is_positive_control(self) -> bool:
        return self.knob == POSITIVE_CONTROL

    @property
    def workload(self) -> str:
        return f"{self.model} {self.preset} {self.mode}, batch {self.batch}"


def parse_cell(arm: str) -> dict | None:
    """'channels_last=on,no_grad=off' -> {'channels_last': True, 'no_grad': False}; None if the
    arm is not a factorial cell."""
    levels = {}
    for part in arm.split(","):
        name, sep, level = part.partition("=")
        if not sep or level not in ("on", "off") or not name or name in levels:
            return None
        levels[name] = level == "on"
    return levels


POSITIVE_CONTROL = "positive_control"  # the knob of a positive control's trials (harness/knobs/knobs.h)


def known_slowdown(settings_json) -> float:
    """A positive control's ON arm settings -> its known slowdown as a fraction ("slowdown": 3 -> 0.03)."""
    return float(_json_object(settings_json).get("slowdown", 0)) / 100


def number(value) -> float:
    return float("nan") if value is None else float(value)


def has_stored_effects(con: sqlite3.Connection) -> bool:
    """Schema version 3 or newer: tunebench stored every run's effects and arm summaries."""
    return con.execute("PRAGMA user_version").fetchone()[0] >= 3 and \
        {"run_uuid", "experiment", "kind", "text"} <= table_columns(con, "effects") and \
        {"run_uuid", "experiment", "arm", "trial_median_seconds"} <= table_columns(con, "arm_summaries")


def load_experiments(con: sqlite3.Connection, run_uuid: str, claims: dict) -> list[Experiment]:
    """The run's experiments (first-seen order of their trials) with the arm summaries and
    effects tunebench stored for it, and the problems of trials that failed."""
    experiments: dict[str, Experiment] = {}
    for name, knob, arm, model, preset, mode, batch, process, status, error, settings in con.execute(
            "SELECT experiment, knob, arm, model, preset, mode, batch, process_index, status, error, settings"
            " FROM trials WHERE run_uuid = ? ORDER BY sequence", (run_uuid,)):
        x = experiments.get(name)
        if x is None:
            x = experiments[name] = Experiment(name, knob, model, preset, mode, batch, [])
            x.claim = (claims.get(knob) or {}) if knob not in ("aa", "factorial", POSITIVE_CONTROL) else {}
        if knob == POSITIVE_CONTROL and arm == "on":
            x.slowdown = known_slowdown(settings)
        a = next((a for a in x.arms if a.name == arm), None)
        if a is None:
            a = Arm(arm)
            x.arms.append(a)
        if status != "ok":
            a.problems.append(f"process {process}: {status}: {error}")
    if not has_stored_effects(con):
        return list(experiments.values())
    for name, arm, ok, failed, invalid, median_seconds in con.execute(
            "SELECT experiment, arm, trials_ok, trials_failed, trials_invalid, median_seconds"
            " FROM arm_summaries WHERE run_uuid = ? ORDER BY position", (run_uuid,)):
        x = experiments.get(name)
        a = next((a for a in x.arms if a.name == arm), None) if x else None
        if a is not None:
            a.ok, a.failed, a.invalid, a.median_seconds = ok, failed, invalid, number(median_seconds)
    for name, kind, metric, compared, ratio, lo, hi, confidence, verdict, note, text in con.execute(
            "SELECT experiment, kind, metric, compared, ratio, lo, hi, confidence, verdict, note, text"
            " FROM effects WHERE run_uuid = ? ORDER BY position", (run_uuid,)):
        x = experiments.get(name)
        if x is None:
            continue
        if kind == "none":
            x.problem = note
            continue
        e = Effect(metric, compared, number(ratio), number(lo), number(hi), verdict, note,
                   confidence, text, kind)
        (x.effects if kind == "effect" else x.contrasts).append(e)
    for x in experiments.values():
        if x.knob == "factorial":
            base = parse_cell(x.arms[0].name) if x.arms else None
            x.factors = list(base) if base else []
    return list(experiments.values())


@dataclass
class Estimate:
    """A stored factorial contrast: a ratio of cell medians with its interval."""

    label: str
    ratio: float
    lo: float
    hi: float
    verdict: str
    text: str = ""


@dataclass
class Factorial:
    experiment: str
    workload: str
    factors: list
    cells: list  # (arm name, {factor: on?}, median seconds, ok processes)
    main_effects: list  # of Estimate
    interactions: list  # of Estimate
    note: str = ""


def factorial_of(x: Experiment) -> Factorial:
    """The main effects and interactions tunebench stored for a factorial experiment."""
    result = Factorial(x.name, x.workload, list(x.factors), [], [], [])
    for arm in x.arms:
        result.cells.append((arm.name, parse_cell(arm.name) or {}, arm.median_seconds, arm.ok))
    notes = []
    for e in x.contrasts:
        if e.kind == "main effect":
            label = e.compared.removeprefix("main effect of ")
            result.main_effects.append(Estimate(label, e.ratio, e.lo, e.hi, e.verdict, e.text))
        else:
            label = e.compared.removeprefix("interaction ").replace(" x ", " × ")
            verdict = "no measurable interaction" if e.verdict in (NO_EFFECT, INSUFFICIENT) else "interact"
            result.interactions.append(Estimate(label, e.ratio, e.lo, e.hi, verdict, e.text))
        if e.note and e.note not in notes:
            notes.append(e.note)
    if not x.contrasts:
        notes.append(f"tunebench stored no contrasts (it needs all 2^k cells of {len(x.factors)} factors, "
                     "each with a valid trial)")
    result.note = "; ".join(notes)
    return result

# ============================================================================================
# Read: trends over the nightly history (stored arm summaries of every run)
# ============================================================================================


@dataclass
class TrendSeries:
    experiment: str
    arm: str
    host: str
    when: list = field(default_factory=list)  # datetimes
    run_uuids: list = field(default_factory=list)
    medians: list = field(default_factory=list)  # the run's median of its trial medians, seconds
    lows: list = field(default_factory=list)  # lowest trial median
    highs: list = field(default_factory=list)  # highest trial median


@dataclass
class SoftwareChange:
    host: str
    when: datetime.datetime
    kind: str  # "LibTorch" or "git"
    text: str


@dataclass
class Trends:
    series: dict  # experiment -> [TrendSeries]
    changes: list  # of SoftwareChange
    regressions: set  # {(run_uuid, experiment, arm)} marked by `tunebench check`
    regression_note: str
    runs_per_host: dict

    @property
    def draws_git_changes(self) -> bool:
        """Monthly revisions are drawn; a revision a night would hide the data."""
        git = sum(c.kind == "git" for c in self.changes)
        return git <= 30 * max(1, len(self.runs_per_host))


def table_columns(con: sqlite3.Connection, table: str) -> set:
    return {row[1] for row in con.execute(f"PRAGMA table_info({table})")}


MARKED_KINDS = ("regression", "step change")  # not 'stopped helping': no slowdown to mark
OLD_SCHEMA_NOTE = ("this database has a schema version older than 3, from before tunebench stored effects: "
                   "open it once with this tunebench (e.g. `tunebench show latest --db FILE`) to migrate it, "
                   "which computes and stores the effects of every run (a backup is kept beside it)")
SCHEMA_V1_NOTE = ("this database has schema version 1, from before calibrate and check: open it once "
                  "with this tunebench (e.g. `tunebench show latest --db FILE`) to migrate it "
                  "(a backup is kept beside it)")


def regression_marks(con: sqlite3.Connection) -> tuple[set, str]:
    """The slowdowns `tunebench check` stored in the `regressions` table (kinds 'regression' and
    'step change'), as {(run_uuid, experiment, arm)}. Nothing is guessed: without the table (a
    version-1 database) or rows, nothing is marked and the note says why."""
    if not {"run_uuid", "experiment", "arm", "kind"} <= table_columns(con, "regressions"):
        return set(), ("Regressions are not marked: there is no `regressions` table, because "
                       + SCHEMA_V1_NOTE + "; then run `tunebench check` after each run to mark regressions. "
                       "Nothing here is flagged by eye.")
    marks = set(con.execute(
        f"SELECT run_uuid, experiment, arm FROM regressions WHERE kind IN ({','.join('?' * len(MARKED_KINDS))})",
        MARKED_KINDS).fetchall())
    if not marks:
        return marks, ("No regression is marked: `tunebench check` has stored no regression or step change "
                       "for these runs (run it after each run, as ci/nightly.sh does). Nothing here is flagged by eye.")
    return marks, f"{len(marks)} regression(s) and step change(s) found by `tunebench check` are marked ▼."

@dataclass
class NoiseFloor:
    experiment: str
    arm: str
    runs: int  # A/A runs measured
    sigma_log: float  # standard deviation of ln(run median) across them
    false_alarm: float  # per run
    power: float
    baseline_runs: int
    min_detectable: float  # smallest slowdown detected, as a fraction
    calibrated_at: str

    @property
    def spread(self) -> float:
        """Run-to-run spread of the median as a fraction: expm1(sigma_log)."""
        return math.expm1(self.sigma_log)


@dataclass
class Finding:
    experiment: str
    arm: str
    kind: str  # regression | step change | stopped helping
    ratio: float | None
    lo: float | None
    hi: float | None
    detail: str
    checked_at: str


@dataclass
class Check:
    """What calibrate and check stored for the selected run. floors / findings are None when the
    database has no such table (schema version 1); `note` says what is missing and what to do."""

    floors: list | None = None
    floors_note: str = ""
    findings: list | None = None
    findings_note: str = ""


FLOOR_COLUMNS = ("experiment", "arm", "runs", "sigma_log", "false_alarm", "power", "baseline_runs",
                 "min_detectable", "calibrated_at")
FINDING_COLUMNS = ("experiment", "arm", "kind", "ratio", "lo", "hi", "detail", "checked_at")


def load_check(con: sqlite3.Connection, run: RunInfo) -> Check:
    """Noise floors for the run's host, software and suite (as harness/store/calibration.cpp's noise_floors()),
    and the findings `tunebench check` stored for the run."""
    check = Check()
    if set(FLOOR_COLUMNS) <= table_columns(con, "noise_floors"):
        rows = con.execute(
            f"""SELECT {', '.join('f.' + c for c in FLOOR_COLUMNS)} FROM noise_floors f JOIN runs r
                ON r.host_id = f.host_id AND r.software_id = f.software_id AND r.suite_name = f.suite_name
                WHERE r.uuid = ? ORDER BY f.experiment, f.arm""", (run.uuid,)).fetchall()
        check.floors = [NoiseFloor(*row) for row in rows]
        if not rows:
            check.floors_note = (f"Suite '{run.suite_name}' is not calibrated on this host and software "
                                 f"(host {run.hostname}, LibTorch {run.libtorch_version}, git {run.git_revision[:7]}): "
                                 "`tunebench calibrate --suite FILE` measures its noise floors with A/A runs.")
    else:
        check.floors_note = ("Noise floors are not shown: there is no `noise_floors` table, because "
                             + SCHEMA_V1_NOTE + "; then `tunebench calibrate --suite FILE`.")
    if set(FINDING_COLUMNS) | {"run_uuid"} <= table_columns(con, "regressions"):
        order = "id" if "id" in table_columns(con, "regressions") else "rowid"
        rows = con.execute(f"SELECT {', '.join(FINDING_COLUMNS)} FROM regressions WHERE run_uuid = ? ORDER BY {order}",
                           (run.uuid,)).fetchall()
        check.findings = [Finding(*row) for row in rows]
        if not rows:
            check.findings_note = ("No findings stored for this run: either `tunebench check` did not check it, "
                                   "or it checked it and found nothing (the database does not record which). "
                                   "`tunebench check --run RUN` checks it and stores what it finds.")
    else:
        check.findings_note = "Findings of `tunebench check` are not shown: there is no `regressions` table, because " \
            + SCHEMA_V1_NOTE + "; then run `tunebench check` to find and store regressions."
    return check


def compute_trends(con: sqlite3.Connection, runs: list[RunInfo], hosts: list[str]) -> Trends:
    """Per experiment, arm and host: each run's stored median of its trial medians and their
    range (arm_summaries), oldest run first."""
    series: dict[tuple, TrendSeries] = {}
    if has_stored_effects(con) and hosts:
        placeholders = ",".join("?" * len(hosts))
        rows = con.execute(
            f"""SELECT a.run_uuid, r.started_at, h.hostname, a.experiment, a.arm, a.trial_median_seconds,
                       a.trial_median_low_seconds, a.trial_median_high_seconds
                FROM arm_summaries a JOIN runs r ON r.uuid = a.run_uuid JOIN hosts h ON h.id = r.host_id
                WHERE a.trial_median_seconds IS NOT NULL AND h.hostname IN ({placeholders})
                ORDER BY r.started_at, r.rowid, a.position""", hosts).fetchall()
        for run_uuid, started, host, experiment, arm, value, low, high in rows:
            s = series.setdefault((experiment, arm, host), TrendSeries(experiment, arm, host))
            s.when.append(parse_time(started))
            s.run_uuids.append(run_uuid)
            s.medians.append(value)
            s.lows.append(low)
            s.highs.append(high)
    by_experiment: dict[str, list] = {}
    for s in series.values():
        by_experiment.setdefault(s.experiment, []).append(s)
    changes = []
    per_host: dict[str, int] = {}
    previous: dict[str, RunInfo] = {}
    for run in runs:
        if run.hostname not in hosts:
            continue
        per_host[run.hostname] = per_host.get(run.hostname, 0) + 1
        before = previous.get(run.hostname)
        if before is not None:
            if run.libtorch_version != before.libtorch_version:
                changes.append(SoftwareChange(run.hostname, run.when, "LibTorch",
                                              f"LibTorch {before.libtorch_version} → {run.libtorch_version}"))
            if run.git_revision != before.git_revision:
                changes.append(SoftwareChange(run.hostname, run.when, "git", f"git {run.git_revision[:7]}"))
        previous[run.hostname] = run
    marks, note = regression_marks(con)
    return Trends(by_experiment, changes, marks, note, per_host)


@dataclass
class ControlResult:
    """One control's time effect in one run: an A/A control (truth 1) or a positive control (truth
    1 + its known slowdown)."""
    when: datetime.datetime
    run_uuid: str
    host: str
    experiment: str
    truth: float
    ratio: float
    lo: float
    hi: float
    verdict: str
    text: str

    @property
    def kind(self) -> str:
        return "A/A" if self.truth == 1 else f"+{100 * (self.truth - 1):g}%"

    @property
    def covered(self) -> bool:
        return finite(self.lo, self.hi) and self.lo <= self.truth <= self.hi

    @property
    def detected(self) -> bool:  # a positive control's interval excludes 1
        return finite(self.lo) and self.lo > 1


def finite(*values) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def compute_controls(con: sqlite3.Connection, suite_name: str, hosts: list[str]) -> list[ControlResult]:
    """Every stored time effect of an A/A or positive control in the runs of `suite_name` on `hosts`,
    oldest run first."""
    if not has_stored_effects(con) or not hosts:
        return []
    placeholders = ",".join("?" * len(hosts))
    rows = con.execute(
        f"""SELECT e.run_uuid, r.started_at, h.hostname, e.experiment, t.knob, t.settings, e.ratio, e.lo, e.hi,
                   e.verdict, e.text
            FROM effects e JOIN runs r ON r.uuid = e.run_uuid JOIN hosts h ON h.id = r.host_id
            JOIN trials t ON t.id = (SELECT MIN(id) FROM trials WHERE run_uuid = e.run_uuid
                                     AND experiment = e.experiment AND arm = 'on')
            WHERE e.kind = 'effect' AND e.metric = 'time' AND t.knob IN ('aa', ?) AND r.suite_name = ?
                  AND h.hostname IN ({placeholders})
            ORDER BY r.started_at, r.rowid, e.position""", (POSITIVE_CONTROL, suite_name, *hosts)).fetchall()
    return [ControlResult(parse_time(started), run_uuid, host, experiment,
                          1 + (known_slowdown(settings) if knob == POSITIVE_CONTROL else 0),
                          number(ratio), number(lo), number(hi), verdict, text)
            for run_uuid, started, host, experiment, knob, settings, ratio, lo, hi, verdict, text in rows]


# ============================================================================================
# Read: hosts side by side (the comparison tunebench computed: harness/analysis/hosts.h)
# ============================================================================================


@dataclass
class Figure:
    """A number with its interval as tunebench computed and printed it; value None where there is
    none (text then says why, e.g. "not measured")."""

    value: float | None
    lo: float | None
    hi: float | None
    text: str


@dataclass
class HostRow:
    """One host on one workload."""

    workload: str  # "gpt tiny infer b8"
    host: str
    cores: int | None
    items_per_second: Figure
    per_core: Figure
    items_per_unit: Figure  # items per currency unit at the host's price per hour
    cost_per_million: Figure
    energy: Figure  # joules per item
    samples: int
    processes: int
    run_uuid: str


@dataclass
class HostComparison:
    suite: str = ""
    rows: list = field(default_factory=list)  # of HostRow, workloads in order, best host first
    benchmarks: dict = field(default_factory=dict)  # workload -> "experiment / arm" compared
    rankings: dict = field(default_factory=dict)  # workload -> [rank text]
    price_rankings: dict = field(default_factory=dict)
    pairs: dict = field(default_factory=dict)  # workload -> [pair line]
    priced: bool = False  # some host has a price
    notes: list = field(default_factory=list)
    unavailable: str = ""  # why tunebench could not compare, when it could not

    @property
    def hosts(self) -> list[str]:
        return sorted({r.host for r in self.rows})


def _figure(value) -> Figure:
    value = value if isinstance(value, dict) else {}
    nums = [value.get(k) if isinstance(value.get(k), (int, float)) and not isinstance(value.get(k), bool) else None
            for k in ("value", "lo", "hi")]
    return Figure(*nums, str(value.get("text") or ""))


def load_host_comparison(path: str) -> HostComparison:
    """The JSON `tunebench compare --hosts … --format json` prints (or {"unavailable": why}, which
    `tunebench report` writes when there is nothing to compare)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ReportError(f"--hosts-json {path}: cannot read it ({error.strerror or error})") from None
    except ValueError as error:
        raise ReportError(f"--hosts-json {path}: not valid JSON ({error}); write it with "
                          "`tunebench compare --hosts H1 H2 --format json`") from None
    if not isinstance(data, dict) or not ("workloads" in data or "unavailable" in data):
        raise ReportError(f"--hosts-json {path}: not a comparison of `tunebench compare --hosts H1 H2 --format json`")
    if "unavailable" in data:
        return HostComparison(unavailable=str(data["unavailable"]))
    hosts = {h.get("hostname"): h for h in data.get("hosts", []) if isinstance(h, dict)}
    comparison = HostComparison(suite=str(data.get("suite", "")), notes=[str(n) for n in data.get("notes", [])])
    comparison.priced = any(isinstance(h.get("price_per_hour"), (int, float)) for h in hosts.values())
    for w in data.get("workloads", []):
        label = str(w.get("label", "?"))
        comparison.benchmarks[label] = f"{w.get('experiment', '?')} / {w.get('arm', '?')}"
        comparison.rankings[label] = [str(r.get("text", "")) for r in w.get("ranking", [])]
        comparison.price_rankings[label] = [str(r.get("text", "")) for r in w.get("price_ranking", [])]
        comparison.pairs[label] = [str(p.get("line", "")) for p in w.get("pairs", [])]
        order = [h for r in w.get("ranking", []) for h in r.get("hosts", [])]
        for f in sorted(w.get("hosts", []), key=lambda f: order.index(f.get("hostname"))
                        if f.get("hostname") in order else len(order)):
            host = hosts.get(f.get("hostname"), {})
            comparison.rows.append(HostRow(
                label, str(f.get("hostname", "?")), host.get("cores"), _figure(f.get("items_per_second")),
                _figure(f.get("items_per_second_per_core")), _figure(f.get("items_per_currency_unit")),
                _figure(f.get("cost_per_million_items")), _figure(f.get("energy_joules_per_item")),
                int(f.get("samples", 0)), int(f.get("processes", 0)), str(host.get("run", ""))))
    return comparison


def latest_run_per_host(runs: list[RunInfo], hosts: list[str]) -> dict[str, RunInfo]:
    latest = {}
    for run in runs:
        if run.hostname in hosts:
            latest[run.hostname] = run  # runs are oldest first
    return latest


def stored_arms(con: sqlite3.Connection, run_uuid: str, knob: str | None = None) -> list[tuple]:
    """(workload, settings, stored summary row) of each arm of a run with an ok trial: the
    settings of its first trial, the summary tunebench stored (trials_ok, items_per_second,
    trial_median_seconds)."""
    if not has_stored_effects(con):
        return []
    knob_filter = " AND t.knob = ?" if knob else ""
    rows = con.execute(
        """SELECT t.model, t.preset, t.mode, t.batch, t.settings, a.trials_ok, a.items_per_second,
                  a.trial_median_seconds
           FROM arm_summaries a JOIN trials t ON t.id = (
               SELECT MIN(id) FROM trials WHERE run_uuid = a.run_uuid AND experiment = a.experiment AND arm = a.arm)
           WHERE a.run_uuid = ? AND a.trials_ok > 0""" + knob_filter + " ORDER BY a.position",
        (run_uuid, knob) if knob else (run_uuid,)).fetchall()
    return [((m, p, mo, b), _json_object(s), ok, ips, median) for m, p, mo, b, s, ok, ips, median in rows]


@dataclass
class ThreadPoint:
    workload: tuple
    host: str
    threads: int
    median_seconds: float  # stored median of the arm's trial medians
    trials: int
    run_uuid: str


def compute_thread_sweep(con, runs: list[RunInfo], hosts: list[str]) -> list[ThreadPoint]:
    """Time per iteration against threads, from each host's latest run with omp_threads trials."""
    with_sweep = {
        row[0]
        for row in con.execute("SELECT DISTINCT run_uuid FROM trials WHERE knob = 'omp_threads' AND status = 'ok'")
    }
    latest = latest_run_per_host([r for r in runs if r.uuid in with_sweep], hosts)
    points = []
    for host, run in latest.items():
        seen = set()
        for workload, settings, ok, _, median in stored_arms(con, run.uuid, knob="omp_threads"):
            threads = settings.get("omp_threads")
            if median is None or not isinstance(threads, int) or isinstance(threads, bool):
                continue
            if (workload, threads) not in seen:
                seen.add((workload, threads))
                points.append(ThreadPoint(workload, host, threads, median, ok, run.uuid))
    points.sort(key=lambda p: (p.workload, p.host, p.threads))
    return points

# ============================================================================================
# Present: figures (matplotlib, Agg). Each returns PNG bytes.
# ============================================================================================

VERDICT_COLOURS = {
    HELPS: "#1a9641",
    HURTS: "#d7191c",
    NO_EFFECT: "#8c8c8c",
    EQUIVALENT: "#4d7fb3",
    INCONCLUSIVE: "#b8860b",
    NOT_PRECISE: "#e08a2c",
    HOST_BUSY: "#c8c8c8",
    INSUFFICIENT: "#c8c8c8",
    "interact": "#7b3294",
    "no measurable interaction": "#8c8c8c",
}
ARM_COLOURS = ["#2c7bb6", "#fdae61", "#1a9641", "#d7191c", "#7b3294", "#8c510a", "#01665e", "#c51b7d"]
HOST_STYLES = ["-", "--", ":", "-."]
HOST_MARKERS = ["o", "s", "^", "D"]


def png_bytes(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()


def short(text: str, width: int) -> str:
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def plain_log_axis(axis, ticks=None):
    """Log-scale tick labels as plain numbers (mathtext is off for safety, see the top)."""
    if ticks is None:
        low, high = axis.get_view_interval()
        ticks = log_ticks(min(low, high), max(low, high))
    axis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def log_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """Readable values (1, 2, 5 x 10^k; else 2 significant digits) for a log axis lo..hi."""
    if not (lo > 0 and hi > lo):
        return [lo] if lo > 0 else [1.0]
    nice = [m * 10.0**k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) for m in (1, 2, 5)]
    ticks = [t for t in nice if lo <= t <= hi]
    while len(ticks) > count:
        ticks = ticks[::2]
    if len(ticks) < 3:
        ticks = sorted({float(f"{t:.2g}") for t in np.geomspace(lo, hi, 4)})
    return ticks


def ratio_ticks(lo: float, hi: float, count: int = 7) -> list[float]:
    """Readable tick values for a log axis of ratios between lo and hi, 1 always among them."""
    coarse = [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1.1, 1.25, 1.5, 2, 3, 5, 10, 20, 50, 100]
    fine = [0.95, 0.97, 0.98, 0.99, 0.995, 1.005, 1.01, 1.02, 1.03, 1.05]
    spacing = math.log(hi / lo) / count  # at most ~count labels, evenly apart on the log scale
    ticks = [1.0]
    for c in sorted(coarse) + sorted(fine, key=lambda v: -abs(math.log(v))):
        if lo <= c <= hi and all(abs(math.log(c / t)) >= spacing for t in ticks):
            ticks.append(c)
    return sorted(ticks)


def ratio_limits(values: list[float]) -> tuple[float, float]:
    finite = [v for v in values if math.isfinite(v) and v > 0] + [1.0]
    lo, hi = min(finite), max(finite)
    span = max(math.log(hi / lo), math.log(1.2))
    pad = math.exp(0.08 * span)
    return lo / pad, hi * pad


def style_ratio_axis(ax, lo: float, hi: float, left_text: str, right_text: str, title: str,
                     ticks: int = 7):
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ticks = ratio_ticks(lo, hi, ticks)
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:g}×" for t in ticks])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.axvspan(lo, 1, color=VERDICT_COLOURS[HELPS], alpha=0.07, lw=0)
    ax.axvspan(1, hi, color=VERDICT_COLOURS[HURTS], alpha=0.07, lw=0)
    ax.axvline(1, color="black", lw=0.9)
    # The title above, the two directions in their own band below it, both placed in points from
    # the axis (not in fractions of it: a tall forest plot's 1 % is as high as a line of text, and
    # the labels then ran into the title).
    ax.set_title(title, fontsize=10.5, loc="center", pad=20)
    ax.annotate(f"← {left_text}", xy=(0.0, 1.0), xycoords="axes fraction", xytext=(0, 3),
                textcoords="offset points", ha="left", va="bottom",
                color=VERDICT_COLOURS[HELPS], fontsize=9, fontweight="bold")
    ax.annotate(f"{right_text} →", xy=(1.0, 1.0), xycoords="axes fraction", xytext=(0, 3),
                textcoords="offset points", ha="right", va="bottom",
                color=VERDICT_COLOURS[HURTS], fontsize=9, fontweight="bold")
    ax.tick_params(axis="y", left=False, labelleft=False)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)


def draw_interval(ax, y: float, ratio: float, lo: float, hi: float, verdict: str):
    colour = VERDICT_COLOURS.get(verdict_kind(verdict), VERDICT_COLOURS[NO_EFFECT])
    if math.isfinite(lo) and math.isfinite(hi):
        ax.plot([lo, hi], [y, y], color=colour, lw=4, solid_capstyle="butt")
        ax.plot([lo, lo], [y - 0.17, y + 0.17], color=colour, lw=1.5)
        ax.plot([hi, hi], [y - 0.17, y + 0.17], color=colour, lw=1.5)
    if math.isfinite(ratio) and ratio > 0:
        filled = verdict != INSUFFICIENT
        ax.plot([ratio], [y], marker="D", ms=8, color=colour if filled else "white",
                markeredgecolor="black" if filled else colour, markeredgewidth=1.0, zorder=3)


def forest_rows(experiments: list[Experiment]) -> list[dict]:
    """One row per compared pair: its time effect and, where measured, its memory effect."""
    rows = []
    for x in experiments:
        compared = []
        for e in x.effects:
            if e.compared not in compared:
                compared.append(e.compared)
        for c in compared:
            time = next((e for e in x.effects if e.compared == c and e.metric == "time"), None)
            memory = next((e for e in x.effects if e.compared == c and e.metric == "peak memory"), None)
            sub = x.workload
            if x.knob == "factorial":
                sub = c.split(" vs ")[0] + "  vs all off"
            elif x.is_aa:
                sub = "A/A control (identical arms): expect no effect"
            elif x.is_positive_control:
                sub = f"positive control: ON {100 * x.slowdown:g}% slower by construction"
            rows.append({"experiment": x, "label": x.name, "sub": sub, "time": time, "memory": memory})
        if not compared:
            rows.append({"experiment": x, "label": x.name, "sub": x.problem or "no effect computed",
                         "time": None, "memory": None})
    return rows


def claim_text(x: Experiment) -> str:
    if x.is_aa:
        return "control: both arms identical"
    if x.is_positive_control:
        return f"control: ON arm {100 * x.slowdown:g}% slower by construction (expect {1 + x.slowdown:.2f}x)"
    if x.knob == "factorial":
        return "factorial: " + " × ".join(x.factors)
    if x.claim.get("claim"):
        return "claim: " + x.claim["claim"]
    return "no claim recorded for this knob"


def plot_forest(experiments: list[Experiment], hostname: str) -> bytes | None:
    rows = forest_rows(experiments)
    if not rows:
        return None
    has_memory = any(r["memory"] for r in rows)
    n = len(rows)
    fig = plt.figure(figsize=(13.5, 0.62 * n + 1.25))
    top, bottom = 1 - 0.78 / (0.62 * n + 1.25), 0.45 / (0.62 * n + 1.25)
    spans = {"label": (0.005, 0.245), "time": (0.255, 0.525 if has_memory else 0.62),
             "memory": (0.54, 0.68), "text": (0.695 if has_memory else 0.635, 0.995)}
    axes = {}
    for key, (x0, x1) in spans.items():
        if key == "memory" and not has_memory:
            continue
        axes[key] = fig.add_axes([x0, bottom, x1 - x0, top - bottom])
        axes[key].set_ylim(n - 0.5, -0.5)
    for key in ("label", "text"):
        axes[key].axis("off")
        axes[key].set_xlim(0, 1)
    values = [v for r in rows if r["time"] for v in (r["time"].ratio, r["time"].lo, r["time"].hi)]
    lo, hi = ratio_limits(values)
    style_ratio_axis(axes["time"], lo, hi, "faster: helps", "slower: hurts",
                     "time per iteration, on ÷ off (95 % interval)")
    if has_memory:
        values = [v for r in rows if r["memory"] for v in (r["memory"].ratio, r["memory"].lo, r["memory"].hi)]
        mlo, mhi = ratio_limits(values)
        style_ratio_axis(axes["memory"], mlo, mhi, "less", "more", "peak memory, on ÷ off", ticks=3)
    for i, row in enumerate(rows):
        for ax in axes.values():
            if i % 2:
                ax.axhspan(i - 0.5, i + 0.5, color="#f0f0f0", zorder=0, lw=0)
        x = row["experiment"]
        axes["label"].text(0.0, i - 0.1, short(row["label"], 44), fontsize=9.5, fontweight="bold",
                           va="center", ha="left")
        axes["label"].text(0.0, i + 0.24, short(row["sub"], 52), fontsize=8.5, color="#555555",
                           va="center", ha="left")
        time, memory = row["time"], row["memory"]
        if time:
            draw_interval(axes["time"], i, time.ratio, time.lo, time.hi, time.verdict)
        if has_memory:
            if memory:
                draw_interval(axes["memory"], i, memory.ratio, memory.lo, memory.hi, memory.verdict)
            else:
                axes["memory"].text(math.sqrt(mlo * mhi), i, "not measured", ha="center",
                                    va="center", fontsize=8, color="#999999")
        lines = []
        if time:
            lines.append(("time", time))
        if memory:
            lines.append(("memory", memory))
        y = i - 0.27 if len(lines) == 2 else i - 0.12
        for name, e in lines:
            colour = VERDICT_COLOURS.get(verdict_kind(e.verdict), "#555555")
            axes["text"].text(0.0, y, e.verdict.upper() if e.verdict in (HELPS, HURTS) else e.verdict,
                              color=colour, fontsize=9.5, fontweight="bold", va="center", ha="left")
            numbers = effect_text(e)
            axes["text"].text(0.43, y, f"{name} {numbers}", color="#333333", fontsize=8.5, va="center", ha="left")
            y += 0.24
        if not lines:
            axes["text"].text(0.0, y, "no effect computed", color="#999999", fontsize=9, va="center")
            y += 0.24
        axes["text"].text(0.0, y + (0.02 if len(lines) < 2 else 0), short(claim_text(x), 60),
                          fontsize=8.5, style="italic", color="#555555", va="center", ha="left")
    axes["time"].set_yticks([])
    fig.text(0.005, 0.995, f"Which advice helps on {short(hostname, 40)}: diamond = measured ratio, "
             "bar = 95 % interval; green helps, red hurts, grey no measurable effect, blue no effect "
             "beyond ±2 %, orange not precise enough",
             fontsize=10, va="top", ha="left", color="#333333")
    return png_bytes(fig)


def plot_factorial(f: Factorial) -> bytes:
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 3.4), gridspec_kw={"width_ratios": [1.25, 1]})
    fig.subplots_adjust(left=0.19, right=0.98, top=0.78, bottom=0.16, wspace=0.3)
    estimates = f.main_effects + f.interactions
    labels = ([f"main effect\n{short(e.label, 30)}" for e in f.main_effects]
              + [f"interaction\n{short(e.label, 30)}" for e in f.interactions])
    lo, hi = ratio_limits([v for e in estimates for v in (e.ratio, e.lo, e.hi)])
    style_ratio_axis(left, lo, hi, "faster", "slower", "effect on time (95 % interval)")
    for i, e in enumerate(estimates):
        draw_interval(left, i, e.ratio, e.lo, e.hi, e.verdict)
    left.set_ylim(len(estimates) - 0.5, -0.5)
    left.set_yticks(range(len(estimates)))
    left.tick_params(axis="y", labelleft=True)
    left.set_yticklabels(labels, fontsize=9)
    # Interaction plot of the first two factors: the stored medians of their four cells with any
    # other factors off.
    a, b = f.factors[0], f.factors[1]

    def cell_median(level_a: bool, level_b: bool) -> float:  # NaN (not drawn) for a missing cell
        return next((m for _, lv, m, _ in f.cells if lv.get(a) == level_a and lv.get(b) == level_b
                     and not any(on for k, on in lv.items() if k not in (a, b))), float("nan"))

    lines = {level_b: [cell_median(level_a, level_b) for level_a in (False, True)] for level_b in (False, True)}
    unit, scale = time_unit(min((y for ys in lines.values() for y in ys if math.isfinite(y)), default=1.0))
    for level_b, colour in ((False, ARM_COLOURS[0]), (True, ARM_COLOURS[1])):
        right.plot([0, 1], [y * scale for y in lines[level_b]], marker="o", color=colour, lw=2,
                   label=f"{short(b, 24)} {'on' if level_b else 'off'}")
    right.set_xticks([0, 1])
    right.set_xticklabels([f"{short(a, 24)} off", f"{short(a, 24)} on"])
    right.set_xlim(-0.3, 1.3)
    right.set_ylabel(f"median time per iteration ({unit})")
    right.set_title("interaction plot: parallel lines = no interaction", fontsize=10)
    right.legend(fontsize=9, frameon=False)
    right.grid(axis="y", color="#e5e5e5")
    fig.suptitle(f"{short(f.experiment, 70)}  ({f.workload}): main effects, interaction", fontsize=11,
                 x=0.01, ha="left")
    return png_bytes(fig)


def time_unit(seconds: float) -> tuple[str, float]:
    if seconds < 1e-3:
        return "µs", 1e6
    if seconds < 1:
        return "ms", 1e3
    return "s", 1.0


def plot_trends(trends: Trends) -> bytes | None:
    experiments = [x for x, ss in trends.series.items() if max(len(s.when) for s in ss) >= 2]
    if not experiments:
        return None
    columns = 2 if len(experiments) > 1 else 1
    rows = -(-len(experiments) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(13.5, 2.9 * rows + 0.9), squeeze=False)
    fig.subplots_adjust(left=0.06, right=0.99, top=1 - 0.85 / (2.9 * rows + 0.9),
                        bottom=0.35 / (2.9 * rows + 0.9), hspace=0.62, wspace=0.16)
    hosts = sorted({s.host for ss in trends.series.values() for s in ss})
    git_changes = [c for c in trends.changes if c.kind == "git"]
    draw_git = trends.draws_git_changes
    for index, experiment in enumerate(experiments):
        ax = axes[index // columns][index % columns]
        series = trends.series[experiment]
        arms = []
        for s in series:
            if s.arm not in arms:
                arms.append(s.arm)
        lowest = min(min(s.medians) for s in series)
        unit, scale = time_unit(lowest)
        wide = max(max(s.medians) for s in series) / lowest > 4  # e.g. 1 thread vs all cores
        for s in series:
            colour = ARM_COLOURS[arms.index(s.arm) % len(ARM_COLOURS)]
            h = hosts.index(s.host)
            ax.fill_between(s.when, np.array(s.lows) * scale, np.array(s.highs) * scale, color=colour, alpha=0.18, lw=0)
            ax.plot(s.when, np.array(s.medians) * scale, color=colour, ls=HOST_STYLES[h % 4], lw=1.3,
                    marker=HOST_MARKERS[h % 4] if len(s.when) <= 40 else None, ms=3)
            marked = [i for i, u in enumerate(s.run_uuids) if (u, experiment, s.arm) in trends.regressions]
            if marked:
                ax.plot([s.when[i] for i in marked], [s.medians[i] * scale * 1.04 for i in marked],
                        "v", color="#d7191c", ms=8, zorder=4)
        labelled = set()
        for change in trends.changes:
            if change.kind == "LibTorch":
                ax.axvline(change.when, color="#7b3294", lw=1.4)
                if (change.text, change.when.date()) not in labelled:  # hosts that changed the same day
                    labelled.add((change.text, change.when.date()))
                    ax.text(change.when, 0.98, " " + change.text, transform=ax.get_xaxis_transform(),
                            fontsize=7.5, color="#7b3294", va="top", ha="left")
            elif draw_git:
                ax.axvline(change.when, color="#999999", lw=0.8, ls=":")
        if wide:
            ax.set_yscale("log")
            ax.autoscale_view()
            plain_log_axis(ax.yaxis)
        legend_rows = 0 if len(arms) <= 2 else -(-len(arms) // 2)  # many arms: legend under the title
        ax.set_title(short(experiment, 60), fontsize=10, loc="left", pad=4 + 10.5 * legend_rows)
        ax.set_ylabel(f"{unit} / iteration" + (" (log)" if wide else ""), fontsize=9)
        ax.grid(axis="y", color="#e5e5e5")
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
        ax.tick_params(labelsize=8.5)
        handles = [matplotlib.lines.Line2D([], [], color=ARM_COLOURS[i % len(ARM_COLOURS)], lw=2, label=short(a, 32))
                   for i, a in enumerate(arms)]
        ax.legend(handles=handles, fontsize=7.5, frameon=False, loc="lower left" if legend_rows else "lower right",
                  bbox_to_anchor=(0.0, 1.0) if legend_rows else (1.0, 1.0), ncol=2 if legend_rows else len(arms),
                  borderaxespad=0.1, handlelength=1.5, labelspacing=0.2)
    for index in range(len(experiments), rows * columns):
        axes[index // columns][index % columns].axis("off")
    handles = [matplotlib.lines.Line2D([], [], color="#333333", ls=HOST_STYLES[i % 4],
                                       marker=HOST_MARKERS[i % 4], label=f"host {short(h, 30)}")
               for i, h in enumerate(hosts)]
    handles.append(matplotlib.patches.Patch(color="#888888", alpha=0.3, label="range of the run's process medians"))
    handles.append(matplotlib.lines.Line2D([], [], color="#7b3294", lw=1.4, label="LibTorch version change"))
    if draw_git and git_changes:
        handles.append(matplotlib.lines.Line2D([], [], color="#999999", lw=0.8, ls=":", label="git revision change"))
    if trends.regressions:
        handles.append(matplotlib.lines.Line2D([], [], color="#d7191c", marker="v", ls="",
                                               label="regression or step change (tunebench check)"))
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=9, frameon=False)
    return png_bytes(fig)


def human(value: float) -> str:
    """3 significant digits without exponents: 68,300 · 38.2 · 0.00424."""
    if value >= 1000:
        return f"{value:,.0f}" if value < 1e7 else f"{value:.3g}"
    return f"{value:.3g}"


def workload_label(workload: tuple) -> str:
    model, preset, mode, batch = workload
    return f"{model} {preset} {mode} b{batch}"


def plot_throughput(comparison: HostComparison | None) -> bytes | None:
    rows = [r for r in comparison.rows if r.items_per_second.value] if comparison else []
    if not rows:
        return None
    workloads = list(dict.fromkeys(r.workload for r in rows))
    hosts = sorted({r.host for r in rows})
    metrics = [("items / s", lambda r: r.items_per_second), ("items / s per core", lambda r: r.per_core)]
    if any(r.items_per_unit.value for r in rows):
        metrics.append(("items per currency unit (price per hour)", lambda r: r.items_per_unit))
    height_in = 0.32 * len(workloads) * len(hosts) + 0.25 * len(workloads) + 1.3
    fig, axes = plt.subplots(1, len(metrics), figsize=(13.5, height_in), sharey=True, squeeze=False)
    fig.subplots_adjust(left=0.15, right=0.98, top=1 - 0.75 / height_in, bottom=0.45 / height_in, wspace=0.12)
    height = 0.8 / len(hosts)
    for ax, (title, value) in zip(axes[0], metrics):
        for h, host in enumerate(hosts):
            ys, xs, errors = [], [], [[], []]
            for w, workload in enumerate(workloads):
                r = next((r for r in rows if r.workload == workload and r.host == host), None)
                f = value(r) if r else None
                if f and f.value:
                    ys.append(w - 0.4 + height * (h + 0.5))
                    xs.append(f.value)
                    has_interval = f.lo is not None and f.hi is not None
                    errors[0].append(f.value - f.lo if has_interval else 0)
                    errors[1].append(f.hi - f.value if has_interval else 0)
            bars = ax.barh(ys, xs, height=height * 0.9, color=ARM_COLOURS[h % len(ARM_COLOURS)], label=short(host, 30),
                           xerr=errors, error_kw={"ecolor": "#333333", "elinewidth": 1, "capsize": 2})
            ax.bar_label(bars, labels=[human(x) for x in xs], fontsize=7.5, padding=4)
        ax.set_xscale("log")
        ax.margins(x=0.25)
        ax.autoscale_view()
        plain_log_axis(ax.xaxis)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", color="#e5e5e5")
    axes[0][0].set_yticks(range(len(workloads)))
    axes[0][0].set_yticklabels(workloads, fontsize=9)
    axes[0][0].invert_yaxis()
    axes[0][0].legend(fontsize=9, frameon=False, loc="lower right")
    fig.suptitle("Throughput with default settings (every knob off, all cores), each host's latest run, "
                 "95 % intervals; longer is better", fontsize=10.5, x=0.01, ha="left")
    return png_bytes(fig)


def plot_thread_sweep(points: list[ThreadPoint]) -> bytes | None:
    if not points:
        return None
    workloads = sorted({p.workload for p in points})
    hosts = sorted({p.host for p in points})
    columns = min(len(workloads), 3)
    rows = -(-len(workloads) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(max(9.0, 4.5 * columns), 3.3 * rows + 0.5), squeeze=False)
    fig.subplots_adjust(left=0.1 if columns > 1 else 0.12, right=0.98, top=1 - 0.7 / (3.3 * rows + 0.5),
                        bottom=0.5 / (3.3 * rows + 0.5), wspace=0.3, hspace=0.45)
    for ax in axes.flat[len(workloads):]:
        ax.axis("off")
    for ax, workload in zip(axes.flat, workloads):
        for h, host in enumerate(hosts):
            pts = [p for p in points if p.workload == workload and p.host == host]
            if not pts:
                continue
            colour = ARM_COLOURS[h % len(ARM_COLOURS)]
            threads = [p.threads for p in pts]
            seconds = [p.median_seconds for p in pts]
            ms = [1e3 * v for v in seconds]
            ax.plot(threads, ms, marker=HOST_MARKERS[h % 4], color=colour, lw=2, label=short(host, 30))
            if pts[0].threads == 1:
                ax.plot(threads, [ms[0] / t for t in threads], ls=":", color=colour, lw=1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.autoscale_view()
        plain_log_axis(ax.xaxis, sorted({p.threads for p in points if p.workload == workload}))
        plain_log_axis(ax.yaxis)
        ax.set_xlabel("threads (OMP_NUM_THREADS)")
        ax.set_ylabel("median ms / iteration")
        ax.set_title(workload_label(workload), fontsize=10)
        ax.grid(color="#e5e5e5")
        ax.legend(fontsize=8.5, frameon=False)
    fig.suptitle("Thread sweep: time per iteration against threads; dotted = perfect scaling from 1 thread",
                 fontsize=10.5, x=0.01, ha="left")
    return png_bytes(fig)


# ============================================================================================
# Assemble: everything the page shows, computed before anything is drawn
# ============================================================================================


@dataclass
class Tuning:
    """The newest recommendation of `tunebench tune` (the tunings table), as tunebench stored it."""
    uuid: str
    created_at: str
    model: str
    recommendation: dict


def load_tuning(con: sqlite3.Connection) -> Tuning | None:
    if "tunings" not in {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}:
        return None
    row = con.execute("SELECT uuid, created_at, model, recommendation FROM tunings "
                      "ORDER BY created_at DESC, rowid DESC LIMIT 1").fetchone()
    if row is None:
        return None
    return Tuning(row[0], row[1], row[2], _json_object(row[3]))


def ladder_rows(t: Tuning) -> list[dict]:
    """One row per step of the ladder, then the configuration against the defaults (final run)."""
    rows = []
    for i, step in enumerate(t.recommendation.get("ladder", [])):
        kept = bool(step.get("kept"))
        rows.append({"label": f"{i + 1}. + {step.get('knob', '?')}",
                     "sub": (f"against {step.get('against', '?')}: kept" if kept
                             else f"dropped: {step.get('why', '')}"),
                     "effect": step, "cumulative": step.get("cumulative") if kept else None})
    final = (t.recommendation.get("vs_default") or {}).get("time")
    if final:
        rows.append({"label": "configuration vs defaults", "sub": "measured as a whole (final run)",
                     "effect": final, "cumulative": None})
    return rows


def plot_ladder(t: Tuning) -> bytes | None:
    rows = ladder_rows(t)
    if not rows:
        return None
    n = len(rows)
    fig = plt.figure(figsize=(12.5, 0.62 * n + 1.3))
    top, bottom = 1 - 0.8 / (0.62 * n + 1.3), 0.45 / (0.62 * n + 1.3)
    label = fig.add_axes([0.005, bottom, 0.3, top - bottom])
    ax = fig.add_axes([0.33, bottom, 0.42, top - bottom])
    text = fig.add_axes([0.77, bottom, 0.225, top - bottom])
    for a in (label, ax, text):
        a.set_ylim(n - 0.5, -0.5)
    for a in (label, text):
        a.axis("off")
        a.set_xlim(0, 1)
    values = [number(v) for r in rows for e in (r["effect"], r["cumulative"]) if e
              for v in (e.get("ratio"), e.get("lo"), e.get("hi"))]
    lo, hi = ratio_limits(values)
    style_ratio_axis(ax, lo, hi, "faster", "slower", "time per iteration: each step on ÷ off (diamond), "
                     "cumulative (circle), 95 % intervals")
    for i, r in enumerate(rows):
        if i % 2:
            for a in (label, ax, text):
                a.axhspan(i - 0.5, i + 0.5, color="#f0f0f0", zorder=0, lw=0)
        label.text(0.0, i - 0.1, short(r["label"], 40), fontsize=9.5, fontweight="bold", va="center")
        label.text(0.0, i + 0.24, short(r["sub"], 58), fontsize=8.5, color="#555555", va="center")
        e = r["effect"]
        draw_interval(ax, i, number(e.get("ratio")), number(e.get("lo")), number(e.get("hi")),
                      e.get("verdict", ""))
        c = r["cumulative"]
        if c and math.isfinite(number(c.get("ratio"))):
            ax.plot([number(c.get("lo")), number(c.get("hi"))], [i + 0.3, i + 0.3], color="#333333", lw=1.2)
            ax.plot([number(c.get("ratio"))], [i + 0.3], marker="o", ms=6, color="#333333")
        text.text(0.0, i - 0.1, short(e.get("text", ""), 40), fontsize=8.5, va="center")
        if c:
            text.text(0.0, i + 0.24, short("cumulative " + c.get("text", ""), 44), fontsize=8.5,
                      color="#555555", va="center")
    ax.set_yticks([])
    fig.text(0.005, 0.995, f"The ladder of {short(t.model, 60)}: each knob added to the configuration before it",
             fontsize=10, va="top", ha="left", color="#333333")
    return png_bytes(fig)


def tuning_html(t: Tuning, png: bytes | None) -> str:
    r = t.recommendation
    settings = ", ".join(f"{k}={json.dumps(v)}" for k, v in (r.get("resolved") or {}).items()) or "the defaults"
    parts = [f'<p class="meta">Recommendation {esc(t.uuid[:8])} of {esc(t.created_at)} for '
             f"<b>{esc(t.model)}</b> ({esc(r.get('mode', '?'))}, batch {esc(r.get('batch', '?'))}): "
             f"<b>{esc(settings)}</b></p>"]
    final = r.get("vs_default") or {}
    single = r.get("vs_best_single") or {}
    lines = [f"{esc(metric)} against the defaults: {esc(e.get('text', ''))}" for metric, e in final.items()]
    lines += [f"{esc(metric)} against the best knob alone: {esc(e.get('text', ''))}" for metric, e in single.items()]
    if lines:
        parts.append('<div class="glance">' + "".join(f"<div>{line}</div>" for line in lines) + "</div>")
    parts.append(image_html(png, "the ladder: each knob added in turn, with the cumulative speed-up"))
    rows = "".join(
        f"<tr><td>{i + 1}</td><td>{esc(s.get('knob', ''))}</td><td>{esc(s.get('against', ''))}</td>"
        f"<td class=\"num\">{esc(s.get('text', '-'))}</td>"
        f"<td>{'kept' if s.get('kept') else 'dropped: ' + esc(s.get('why', ''))}</td>"
        f"<td class=\"num\">{esc((s.get('cumulative') or {}).get('text', '')) if s.get('kept') else ''}</td></tr>"
        for i, s in enumerate(r.get("ladder", [])))
    if rows:
        parts.append("<table><tr><th>step</th><th>knob</th><th>measured against</th><th>effect [95 %]</th>"
                     "<th>fate</th><th>cumulative (product of kept steps)</th></tr>" + rows + "</table>")
    apply = r.get("apply") or {}
    code = [("launch", apply.get("launch"))] if apply.get("launch") else []
    code += [("Python", line) for line in apply.get("python", [])] + [("C++", line) for line in apply.get("cpp", [])]
    if code:
        parts.append("<h3>How to apply it</h3><table>" + "".join(
            f"<tr><th>{esc(k)}</th><td><code>{esc(v)}</code></td></tr>" for k, v in code) + "</table>")
    return "".join(parts)


@dataclass
class Report:
    db_path: str
    generated_at: str
    runs: list = field(default_factory=list)  # of RunInfo, on the selected hosts
    hosts: list = field(default_factory=list)  # hostnames shown
    run: RunInfo | None = None
    details: RunDetails | None = None
    experiments: list = field(default_factory=list)
    factorials: list = field(default_factory=list)
    trends: Trends | None = None
    check: Check | None = None  # noise floors and findings of `tunebench check` for the run
    hosts_compared: HostComparison | None = None  # tunebench's comparison; None: not handed over
    threads: list = field(default_factory=list)
    controls: list = field(default_factory=list)  # of ControlResult, oldest run first
    tuning: Tuning | None = None  # the newest recommendation of `tunebench tune`
    warnings: list = field(default_factory=list)  # things that make results less trustworthy
    missing: dict = field(default_factory=dict)  # section -> [what is missing and why]

    def lack(self, section: str, text: str):
        self.missing.setdefault(section, []).append(text)


SECTIONS = {"run": "Run", "claims": "Claims vs measured", "factorial": "Factorial experiments",
            "trends": "Trends", "hosts": "Hosts side by side", "check": "Regression check",
            "tune": "Your model: the recommended configuration"}


def build_report(db_path: str, con, missing_tables: list, version: int, run_spec: str,
                 host_filter: list | None, hosts_compared: HostComparison | None) -> Report:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    report = Report(db_path, now, hosts_compared=hosts_compared)
    if not missing_tables:
        report.tuning = load_tuning(con)
    if report.tuning is None:
        report.lack("tune", "No recommendation in this database: `tunebench tune --model FILE --input "
                            "SHAPE:DTYPE` (or a built-in model) makes one.")
    if missing_tables:
        if run_spec != "latest":
            raise ReportError(f"--run {run_spec!r}: the database has no runs")
        report.lack("run", f"The database has no tunebench tables (an empty file?). Make runs with "
                           f"`tunebench run --suite suites/smoke.json --db {db_path}`.")
        for section in ("claims", "factorial", "trends", "hosts", "check"):
            report.lack(section, "No run: nothing to show.")
        return report
    if version > SCHEMA_VERSION:
        report.warnings.append(f"The database has schema version {version}; this report reads version "
                               f"{SCHEMA_VERSION}. Columns added since are not shown.")
    all_runs = load_runs(con)
    known_hosts = sorted({r.hostname for r in all_runs})
    if host_filter:
        unknown = [h for h in host_filter if h not in known_hosts]
        if unknown:
            raise ReportError(f"--hosts: no run on {', '.join(map(repr, unknown))}; "
                              f"hosts in the database: {', '.join(known_hosts) or 'none'}")
    report.hosts = list(host_filter) if host_filter else known_hosts
    report.runs = [r for r in all_runs if r.hostname in report.hosts]
    report.run = select_run(all_runs if run_spec != "latest" else report.runs, run_spec)

    # 1. Claims vs measured, 2. factorials: the selected run.
    if report.run is None:
        report.lack("run", "The database has no runs yet. Make one with "
                           "`tunebench run --suite suites/smoke.json`.")
        for section in ("claims", "factorial", "trends", "hosts", "check"):
            report.lack(section, "No run: nothing to show.")
        return report
    report.details = load_run_details(con, report.run.uuid)
    report.check = load_check(con, report.run)
    report.experiments = load_experiments(con, report.run.uuid, report.details.claims)
    if not report.run.host_quiet:
        report.warnings.append("The host was not quiet when the run started ("
                               + "; ".join(report.details.host_warnings or ["no details"])
                               + "): intervals may be wider and effects noisier.")
    if report.run.status != "completed":
        report.warnings.append(f"The run's status is '{report.run.status}'.")
    if not report.experiments:  # experiments come from the run's trials
        report.lack("claims", "The selected run has no trials: nothing to compare with the claims.")
    elif not has_stored_effects(con):
        for section in ("claims", "factorial", "trends", "hosts"):
            report.lack(section, "Effects are not shown: " + OLD_SCHEMA_NOTE + ".")
    elif report.run.status == "running":
        report.lack("claims", "The run is still running: tunebench stores its effects when it finishes.")
    elif not any(x.effects for x in report.experiments):
        report.lack("claims", "No experiment of the selected run has a valid trial in both arms: no effect computed.")
    reasons: dict[str, int] = {}  # "failed: why" -> trials
    for x in report.experiments:
        for arm in x.arms:
            for problem in arm.problems:
                reason = problem.split(": ", 1)[1]  # drop "process N: "
                reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        hit = [x.name for x in report.experiments if any(a.failed or a.invalid for a in x.arms)]
        common = sorted(reasons.items(), key=lambda kv: -kv[1])
        report.warnings.append(
            f"{sum(reasons.values())} trial(s) of {len(hit)} experiment(s) failed or were invalid and are left "
            "out (the table counts them per experiment): "
            + "; ".join(f"{n}× {why}" for why, n in common[:3]) + ("; …" if len(common) > 3 else "") + ".")
    for x in report.experiments:
        if x.is_aa and any(e.verdict in (HELPS, HURTS) for e in x.effects):
            report.warnings.append(f"The A/A control {x.name} shows a measurable effect between identical "
                                   "arms: on this host the intervals are too narrow; distrust small effects.")
        for e in x.effects:
            if not x.is_positive_control or e.metric != "time" or not finite(e.lo, e.hi):
                continue
            truth = 1 + x.slowdown
            if not e.lo <= truth <= e.hi:
                report.warnings.append(
                    f"The positive control {x.name} measured {effect_text(e)}, which misses its known "
                    f"{truth:.2f}x: this run's intervals are too narrow or biased; distrust them.")
            elif e.lo <= 1:
                report.warnings.append(
                    f"The positive control {x.name} did not detect its known {100 * x.slowdown:g}% slowdown "
                    f"({effect_text(e)} includes 1): effects of that size can go unseen in this run.")
    report.factorials = [factorial_of(x) for x in report.experiments if x.knob == "factorial" and x.effects]
    if not report.factorials:
        report.lack("factorial", 'The selected run has no factorial experiment (a suite entry with '
                                 '"factorial": [knob, knob]).')

    # 3. Trends over all runs of the selected hosts, and the controls of the selected run's suite.
    report.trends = compute_trends(con, report.runs, report.hosts)
    report.controls = compute_controls(con, report.run.suite_name, report.hosts)
    if not report.controls and has_stored_effects(con):
        report.lack("trends", f"No control in the runs of suite {report.run.suite_name}: an experiment with "
                              '"aa": true (A/A) or "slowdown": 3 (a positive control) shows every run\'s own '
                              "coverage.")
    if not report.trends.runs_per_host or max(report.trends.runs_per_host.values()) < 2:
        count = len(report.runs)
        report.lack("trends", f"Trends need at least 2 runs on one host; the database has {count} "
                              f"run{'' if count == 1 else 's'} on the selected host(s). Runs of the same suite night after "
                              "night (e.g. --label nightly) build the history.")
    if not report.trends.regressions:
        report.lack("trends", report.trends.regression_note)

    # 4. Hosts side by side.
    report.threads = compute_thread_sweep(con, report.runs, report.hosts)
    compared = report.hosts_compared
    if compared is None:
        report.lack("hosts", "Hosts are compared by tunebench: render with `tunebench report`, or pass "
                             "--hosts-json FILE written by `tunebench compare --hosts H1 H2 --format json`.")
    elif compared.unavailable:
        report.lack("hosts", f"tunebench could not compare the hosts: {compared.unavailable}")
    else:
        if len(compared.hosts) < 2:
            report.lack("hosts", f"Only one host ({compared.hosts[0] if compared.hosts else 'none'}): nothing to "
                                 "compare side by side. Run the same suite on other machines and merge the databases.")
        if not compared.priced:
            report.lack("hosts", "No prices: pass --prices FILE (a JSON object of hostname to price per hour) "
                                 "for items per currency unit and cost per million items.")
        if compared.rows and all(r.energy.value is None for r in compared.rows):
            report.lack("hosts", "Energy per item is not measured on these hosts: tunebench reads it from NVML "
                                 "on CUDA devices only; nothing is shown rather than an estimate.")
        for note in compared.notes:
            report.lack("hosts", f"tunebench: {note}.")
    if not report.threads:
        report.lack("hosts", "No thread sweep: no run on these hosts has omp_threads trials.")
    elif all(len({p.threads for p in report.threads if p.host == h and p.workload == w}) < 3
             for h, w in {(p.host, p.workload) for p in report.threads}):
        report.lack("hosts", "The thread sweep has only two thread counts per host (the omp_threads knob's "
                             "off and on arms): a fuller curve needs a suite with more thread settings.")
    return report


# ============================================================================================
# Present: HTML page and Markdown summary
# ============================================================================================


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def md(value) -> str:
    """Text for a Markdown table cell: HTML-escaped (job summaries render HTML) and with
    Markdown's own specials neutralised."""
    text = str(value).replace("\n", " ")
    for ch in "\\`*_[]|~#":
        text = text.replace(ch, "\\" + ch)
    return html.escape(text, quote=False)


def verdict_class(verdict: str) -> str:
    return {HELPS: "helps", HURTS: "hurts", NO_EFFECT: "none", INSUFFICIENT: "insufficient",
            NO_RESULT: "insufficient", EQUIVALENT: "equivalent", INCONCLUSIVE: "none",
            NOT_PRECISE: "imprecise", HOST_BUSY: "insufficient"}.get(verdict_kind(verdict), "none")


def effect_text(e) -> str:
    """The ratio and interval of a stored effect as tunebench printed them, without the verdict."""
    text = e.text or ""
    return text[: -len(e.verdict)].strip() if e.verdict and text.endswith(e.verdict) else text.strip()


CSS = """
body{font-family:"DejaVu Sans",system-ui,sans-serif;margin:0;color:#222;background:#fff}
main{max-width:1370px;margin:0 auto;padding:10px 16px 40px}
h1{font-size:22px;margin:4px 0 2px} h2{font-size:18px;border-bottom:2px solid #ddd;padding-bottom:3px;margin:26px 0 8px}
h3{font-size:15px;margin:16px 0 6px}
.meta{color:#444;font-size:13.5px;margin:2px 0}
.glance{margin:8px 0 4px;font-size:14px}
.glance div{margin:4px 0}
.glance b{display:inline-block;min-width:190px}
.chip{display:inline-block;border-radius:4px;padding:1px 7px;margin:1px 2px;font-size:13px;color:#fff}
table.effects{width:100%} small{color:#555}
.helps{background:#1a9641;color:#fff} .hurts{background:#d7191c;color:#fff}
.none{background:#8c8c8c;color:#fff} .insufficient{background:#d9d9d9;color:#222} .equivalent{background:#4d7fb3;color:#fff} .imprecise{background:#e08a2c;color:#222}
.note{background:#fff8e1;border-left:4px solid #f0b400;padding:5px 12px;font-size:13.5px;margin:8px 0}
.note ul,.warn ul{margin:2px 0;padding-left:20px}
.warn{background:#fdecea;border-left:4px solid #d7191c;padding:5px 12px;font-size:13.5px;margin:8px 0}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4} td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.verdict{font-weight:bold;white-space:nowrap}
img{max-width:100%;height:auto;display:block;margin:4px 0}
footer{color:#777;font-size:12px;margin-top:30px}
code{font-size:12.5px}
"""


def notes_html(report: Report, section: str) -> str:
    items = report.missing.get(section, [])
    if not items:
        return ""
    return '<div class="note"><b>Not shown here:</b><ul>' + "".join(f"<li>{esc(t)}</li>" for t in items) + "</ul></div>"


def image_html(png: bytes | None, alt: str) -> str:
    if not png:
        return ""
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


NO_RESULT = "no effect computed"


def glance_groups(report: Report) -> dict:
    groups = {HELPS: [], HURTS: [], NO_EFFECT: [], EQUIVALENT: [], INCONCLUSIVE: [], NOT_PRECISE: [],
              HOST_BUSY: [], INSUFFICIENT: [], NO_RESULT: []}
    for x in report.experiments:
        for e in x.effects:
            name = x.name if x.knob != "factorial" else f"{x.name}: {e.compared.split(' vs ')[0]}"
            groups.setdefault(verdict_kind(e.verdict), []).append((name, e.metric, x))
        if not x.effects:
            groups[NO_RESULT].append((x.name, "time", x))
    return groups


def render_html(report: Report, figures: dict) -> str:
    run = report.run
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>tunebench report</title>", f"<style>{CSS}</style></head><body><main>"]
    parts.append("<h1>tunebench report</h1>")
    if run:
        d = report.details
        parts.append(
            f'<p class="meta">Run <code>{esc(run.uuid)}</code> · suite <b>{esc(run.suite_name)}</b>'
            + (f" · label {esc(run.label)}" if run.label else "")
            + f" · started {esc(run.started_at)} · {esc(run.status)}</p>"
            f'<p class="meta">Host <b>{esc(run.hostname)}</b> ({esc(run.cpu_model)}, {esc(run.cores)} cores)'
            f" · software {esc(d.software_build or 'LibTorch ' + run.libtorch_version)}"
            f" · git {esc(run.git_revision[:12])}"
            f" · database {esc(report.db_path)} ({len(report.runs)} run(s) on {len(report.hosts)} host(s))</p>"
        )
        groups = glance_groups(report)
        rows = []
        titles = {HELPS: f"Helps on {run.hostname}", HURTS: f"Hurts on {run.hostname}",
                  NO_EFFECT: "No measurable effect", EQUIVALENT: "No effect beyond ±2%",
                  INCONCLUSIVE: "Inconclusive", NOT_PRECISE: "Not precise enough",
                  HOST_BUSY: "Host too busy", INSUFFICIENT: "Insufficient data",
                  NO_RESULT: "No effect computed"}
        for verdict, title in titles.items():
            if groups.get(verdict):
                chips = "".join(
                    f'<span class="chip {verdict_class(verdict)}">{esc(name)}'
                    f'{" · peak memory" if metric == "peak memory" else ""}</span>'
                    for name, metric, _ in groups[verdict])
                rows.append(f"<div><b>{esc(title)}:</b> {chips}</div>")
        findings = report.check.findings if report.check else None
        if findings:
            chips = "".join(f'<span class="chip {"none" if f.kind == "stopped helping" else "hurts"}">'
                            f"{esc(f.kind)}: {esc(f.experiment)}{' ' + esc(f.arm) if f.arm else ''}</span>"
                            for f in findings)
            rows.append(f'<div><b><a href="#check">Found by tunebench check</a>:</b> {chips}</div>')
        if rows:
            parts.append('<div class="glance">' + "".join(rows) + "</div>")
    else:
        parts.append(f'<p class="meta">Database {esc(report.db_path)}</p>')
    parts.append(notes_html(report, "run"))
    if report.warnings:
        parts.append('<div class="warn"><b>Read with care:</b><ul>'
                     + "".join(f"<li>{esc(w)}</li>" for w in report.warnings) + "</ul></div>")

    # 1. Claims vs measured
    parts.append("<h2>1. Claims vs measured</h2>")
    if report.experiments:
        parts.append('<p class="meta">Effect = on ÷ off of seconds per iteration (and of peak memory for memory '
                     "knobs) with its 95 % interval: for a paired experiment (both arms alternating inside each "
                     "worker) a t interval over its workers of their adjacent ON/OFF blocks' log ratios; otherwise "
                     "the ratio of medians with a hierarchical bootstrap (processes, then samples). The verdict "
                     "comes from the interval: below 1 helps, above 1 hurts; a paired effect inside ±2 % is no "
                     "effect beyond ±2 %, one wider than ±2 % across 1 is not precise enough.</p>")
        parts.append(image_html(figures.get("forest.png"), "forest plot of every effect of the run"))
        parts.append(effects_table_html(report))
    parts.append(notes_html(report, "claims"))

    # 2. Factorial experiments
    parts.append("<h2>2. Factorial experiments</h2>")
    for i, f in enumerate(report.factorials):
        parts.append(f"<h3>{esc(f.experiment)} <span class=\"meta\">({esc(f.workload)})</span></h3>")
        if f.main_effects:
            parts.append(image_html(figures.get(f"factorial-{i + 1}.png"), "main effects and interaction plot"))
            parts.append(factorial_table_html(f))
        if f.note:
            parts.append(f'<div class="note">{esc(f.note)}</div>')
    parts.append(notes_html(report, "factorial"))

    # 3. Trends
    parts.append("<h2>3. Trends over the nightly history</h2>")
    parts.append(controls_html(report))
    if figures.get("trends.png"):
        parts.append('<p class="meta">Each point: one run\'s median of its processes\' median time per '
                     "iteration; band: the lowest to highest process median of that run. Vertical lines: "
                     "software changes.</p>")
        parts.append(image_html(figures["trends.png"], "median time per iteration over the runs"))
        parts.append(software_changes_html(report.trends))
        if report.trends.regressions:
            parts.append(f'<p class="meta">{esc(report.trends.regression_note)}</p>')
    parts.append(notes_html(report, "trends"))

    # 4. Hosts
    parts.append("<h2>4. Hosts side by side</h2>")
    if report.hosts_compared and report.hosts_compared.rows:
        parts.append(image_html(figures.get("hosts.png"), "throughput per host, per core and per price"))
        parts.append(throughput_table_html(report.hosts_compared))
    if report.threads:
        parts.append("<h3>Thread sweep</h3>")
        parts.append(image_html(figures.get("threads.png"), "time per iteration against threads"))
        parts.append(threads_table_html(report.threads))
    parts.append(notes_html(report, "hosts"))

    # 5. Regression check
    parts.append('<h2 id="check">5. Regression check of this run</h2>')
    if report.check:
        parts.append(check_html(report.check))
    parts.append(notes_html(report, "check"))

    # 6. The newest recommendation of `tunebench tune`
    parts.append('<h2 id="tune">6. Your model: the recommended configuration</h2>')
    if report.tuning:
        parts.append('<p class="meta">tunebench tune screens every knob on the model, adds the ones that '
                     "help best first, each measured against the configuration so far (kept only where it "
                     "still helps), then measures the configuration against the defaults. The cumulative "
                     "figure is the product of the kept steps, its interval from theirs; the final run is "
                     "the measurement of the whole.</p>")
        parts.append(tuning_html(report.tuning, figures.get("ladder.png")))
    parts.append(notes_html(report, "tune"))

    if report.details and report.details.not_applicable:
        parts.append("<h2>Not applicable on this host</h2><table><tr><th>experiment</th><th>reason</th></tr>")
        parts.extend(f"<tr><td>{esc(na.get('experiment', '?'))}</td><td>{esc(na.get('reason', ''))}</td></tr>"
                     for na in report.details.not_applicable)
        parts.append("</table>")
    parts.append(f"<footer>Generated {esc(report.generated_at)} by reports/render.py from "
                 f"{esc(report.db_path)}. Figures are embedded; the page needs no network.</footer>")
    parts.append("</main></body></html>")
    return "\n".join(p for p in parts if p)


def percent(fraction) -> str:
    """As tunebench's format_percent: one decimal, '-' when not a number."""
    return f"{100 * fraction:.1f} %" if isinstance(fraction, (int, float)) and math.isfinite(fraction) else "-"


def floors_caption(floors: list) -> str:
    """The calibration's settings in words; each stored per row, listed once when rows agree."""
    def values(attr, fmt):
        return " / ".join(dict.fromkeys(fmt(getattr(f, attr)) for f in floors))
    return (f"Noise floors from {values('runs', str)} A/A runs (calibrated {values('calibrated_at', str)}): "
            "the run-to-run spread of each benchmark's run median, expm1(σ of ln(run median)), and the "
            f"smallest slowdown `tunebench check` detects with probability {values('power', percent)} at a "
            f"{values('false_alarm', percent)} false-alarm rate per run (split over the suite's benchmarks) "
            f"against {values('baseline_runs', str)} baseline runs.")


def check_html(check: Check) -> str:
    parts = ["<h3>Found by tunebench check</h3>"]
    if check.findings:
        parts.append("<table><tr><th>kind</th><th>experiment</th><th>arm</th><th>detail</th></tr>")
        for f in check.findings:
            cls = "none" if f.kind == "stopped helping" else "hurts"
            parts.append(f'<tr><td class="verdict"><span class="chip {cls}">{esc(f.kind)}</span></td>'
                         f"<td>{esc(f.experiment)}</td><td>{esc(f.arm)}</td><td>{esc(f.detail)}</td></tr>")
        parts.append(f'</table><p class="meta">Checked {esc(", ".join(dict.fromkeys(f.checked_at for f in check.findings)))}. '
                     "Regressions and step changes are marked ▼ in the trends.</p>")
    else:
        parts.append(f'<div class="note">{esc(check.findings_note)}</div>')
    parts.append("<h3>Noise floors</h3>")
    if check.floors:
        parts.append('<table><tr><th>benchmark</th><th>arm</th><th>run-to-run spread</th>'
                     "<th>smallest detectable slowdown</th></tr>")
        parts.extend(f'<tr><td>{esc(f.experiment)}</td><td>{esc(f.arm)}</td><td class="num">{esc(percent(f.spread))}</td>'
                     f'<td class="num">{esc(percent(f.min_detectable))}</td></tr>' for f in check.floors)
        parts.append(f'</table><p class="meta">{esc(floors_caption(check.floors))}</p>')
    else:
        parts.append(f'<div class="note">{esc(check.floors_note)}</div>')
    return "\n".join(parts)


def check_markdown(check: Check) -> list:
    lines = ["### Found by tunebench check", ""]
    if check.findings:
        lines.extend(f"- **{md(f.kind)}** {md(f.experiment)}" + (f" ({md(f.arm)})" if f.arm else "") + f": {md(f.detail)}"
                     for f in check.findings)
    else:
        lines.append(md(check.findings_note))
    lines += ["", "### Noise floors", ""]
    if check.floors:
        lines.append(md(floors_caption(check.floors)))
        lines += ["", "| benchmark | arm | run-to-run spread | smallest detectable slowdown |", "|---|---|---|---|"]
        lines.extend(f"| {md(f.experiment)} | {md(f.arm)} | {md(percent(f.spread))} | {md(percent(f.min_detectable))} |"
                     for f in check.floors)
    else:
        lines.append(md(check.floors_note))
    lines.append("")
    return lines


def effects_table_html(report: Report) -> str:
    run = report.run
    software = f"LibTorch {run.libtorch_version}, git {run.git_revision[:7]}"
    rows = ['<table class="effects"><tr><th>experiment</th><th>claim</th><th>metric</th>'
            "<th>measured effect [95 % interval]</th><th>verdict</th><th>host</th><th>software</th>"
            "<th>trials ok / failed / invalid</th><th>note</th></tr>"]
    for x in report.experiments:
        trials = (f"{sum(a.ok for a in x.arms)} / {sum(a.failed for a in x.arms)} / "
                  f"{sum(a.invalid for a in x.arms)}")
        claim = claim_text(x)
        if x.claim.get("false_claim"):
            claim += f" (false claim in the sources: {x.claim['false_claim']})"
        for e in x.effects or [None]:
            name = f"{esc(x.name)}<br><small>{esc(x.workload)}</small>"
            if e is not None and x.knob == "factorial":
                name += f"<br><small>{esc(e.compared)}</small>"
            if e is None:
                cells = (f"<td></td><td></td><td>{esc(x.problem or 'no effect computed')}</td>")
            else:
                cells = (f"<td>{esc(e.metric)}</td><td class=\"num\">{esc(effect_text(e))}</td>"
                         f'<td class="verdict"><span class="chip {verdict_class(e.verdict)}">{esc(e.verdict)}</span></td>')
            rows.append(f"<tr><td>{name}</td><td>{esc(claim)}</td>{cells}<td>{esc(run.hostname)}</td>"
                        f"<td>{esc(software)}</td><td class=\"num\">{trials}</td>"
                        f"<td><small>{esc(e.note if e else '')}</small></td></tr>")
    rows.append("</table>")
    return "".join(rows)


def factorial_table_html(f: Factorial) -> str:
    rows = ["<table><tr><th>contrast</th><th>ratio [95 % interval]</th><th>verdict</th></tr>"]
    for kind, estimates in (("main effect", f.main_effects), ("interaction", f.interactions)):
        for e in estimates:
            cls = verdict_class(e.verdict) if kind == "main effect" else ("hurts" if e.verdict == "interact" else "none")
            rows.append(f"<tr><td>{kind}: {esc(e.label)}</td>"
                        f"<td class=\"num\">{esc(effect_text(e))}</td>"
                        f'<td class="verdict"><span class="chip {cls}">{esc(e.verdict)}</span></td></tr>')
    rows.append("</table><p class=\"meta\">Main effect: geometric mean of the cells with the factor on ÷ "
                "with it off. Interaction: (AB · base) ÷ (A · B) of the cell medians; 1 means the two "
                "effects multiply independently. Intervals: bootstrap of processes then samples in every cell.</p>")
    return "".join(rows)


def controls_summary(controls: list) -> list[str]:
    """Per kind of control: how often its interval covered the truth (and a positive control's
    excluded 1), over the series."""
    out = []
    for kind in dict.fromkeys(c.kind for c in controls):
        rows = [c for c in controls if c.kind == kind]
        text = f"{kind}: the truth inside {sum(c.covered for c in rows)} of {len(rows)}"
        if kind != "A/A":
            text += f", detected in {sum(c.detected for c in rows)} of {len(rows)}"
        out.append(text)
    return out


def controls_html(report: Report) -> str:
    if not report.controls:
        return ""
    rows = "".join(
        f"<tr><td>{esc(c.when.strftime('%Y-%m-%d %H:%M'))}</td><td>{esc(c.host)}</td><td>{esc(c.experiment)}</td>"
        f"<td>{esc(c.kind)}</td><td>{c.truth:.2f}x</td>"
        f'<td class="{verdict_class(c.verdict)}">{esc(c.text)}</td>'
        f"<td>{'yes' if c.covered else '<b>no</b>'}</td>"
        f"<td>{'' if c.kind == 'A/A' else ('yes' if c.detected else '<b>no</b>')}</td></tr>"
        for c in report.controls)
    return ('<h3>Controls of suite ' + esc(report.run.suite_name) + "</h3>"
            '<p class="meta">Every run checks its own intervals: an A/A control (identical arms: truth 1.00x) '
            "and a positive control (the ON arm slower by a known amount) should have the truth inside their "
            "95 % interval about 95 % of the time. "
            + esc("; ".join(controls_summary(report.controls))) + ".</p>"
            "<table><tr><th>run</th><th>host</th><th>control</th><th>kind</th><th>truth</th><th>measured</th>"
            "<th>truth inside</th><th>detected</th></tr>" + rows + "</table>")


def software_changes_html(trends: Trends) -> str:
    libtorch = [c for c in trends.changes if c.kind == "LibTorch"]
    git = [c for c in trends.changes if c.kind == "git"]
    text = []
    for c in libtorch:
        text.append(f"{c.when:%Y-%m-%d} on {c.host}: {c.text}")
    summary = f"{len(git)} git revision change(s)"
    if git:
        summary += " (dotted lines)" if trends.draws_git_changes else " (too many to draw)"
    items = "".join(f"<li>{esc(t)}</li>" for t in text) + f"<li>{esc(summary)}</li>"
    return f'<p class="meta">Software changes:</p><ul class="meta">{items}</ul>'


def throughput_table_html(c: HostComparison) -> str:
    """tunebench's figures as it printed them (text), per workload best host first, with its
    rankings and the ratio of every two hosts."""
    head = "<tr><th>host</th><th>cores</th><th>items/s</th><th>items/s per core</th>"
    head += "<th>items per currency unit</th><th>cost per 1M items</th>" if c.priced else ""
    head += "<th>energy per item (J)</th><th>samples</th><th>run</th></tr>"
    parts = [f'<p class="meta">Suite {esc(c.suite)}, each host\'s latest finished run. Figures with their 95 % '
             "intervals (hierarchical bootstrap: processes, then samples); ratios between hosts are unpaired "
             "(each host resampled independently); hosts share a rank when their ratio's interval contains 1.</p>"]
    for workload in dict.fromkeys(r.workload for r in c.rows):
        parts.append(f"<h3>{esc(workload)} <span class=\"meta\">(benchmark {esc(c.benchmarks.get(workload, ''))})"
                     "</span></h3><table>" + head)
        for r in (r for r in c.rows if r.workload == workload):
            price_cells = ""
            if c.priced:
                price_cells = (f'<td class="num">{esc(r.items_per_unit.text or "no price")}</td>'
                               f'<td class="num">{esc(r.cost_per_million.text or "no price")}</td>')
            parts.append(f"<tr><td>{esc(r.host)}</td><td class=\"num\">{esc(r.cores)}</td>"
                         f'<td class="num">{esc(r.items_per_second.text)}</td><td class="num">{esc(r.per_core.text)}</td>'
                         f'{price_cells}<td class="num">{esc(r.energy.text)}</td>'
                         f'<td class="num">{r.samples} ({r.processes} processes)</td>'
                         f"<td><code>{esc(r.run_uuid[:8])}</code></td></tr>")
        parts.append("</table><ul>")
        parts.append(f"<li>ranking by items/s: {esc('; '.join(c.rankings.get(workload, [])))}</li>")
        if c.price_rankings.get(workload):
            parts.append(f"<li>ranking by items per currency unit: {esc('; '.join(c.price_rankings[workload]))}</li>")
        parts.extend(f"<li>{esc(line)}</li>" for line in c.pairs.get(workload, []))
        parts.append("</ul>")
    return "".join(parts)


def threads_table_html(points: list[ThreadPoint]) -> str:
    rows = ["<table><tr><th>workload</th><th>host</th><th>threads</th><th>median s / iteration</th>"
            "<th>speed-up vs 1 thread</th><th>trials</th></tr>"]
    for p in points:
        one = next((q for q in points if q.host == p.host and q.workload == p.workload and q.threads == 1), None)
        speedup = f"{one.median_seconds / p.median_seconds:.3g}×" if one else ""
        rows.append(f"<tr><td>{esc(workload_label(p.workload))}</td><td>{esc(p.host)}</td>"
                    f"<td class=\"num\">{p.threads}</td><td class=\"num\">{p.median_seconds:.4g}</td>"
                    f"<td class=\"num\">{speedup}</td><td class=\"num\">{p.trials}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


VERDICT_MARKS = {HELPS: "🟢 helps", HURTS: "🔴 hurts", NO_EFFECT: "⚪ no measurable effect",
                 INSUFFICIENT: "⚫ insufficient data"}


def render_markdown(report: Report, html_path: Path) -> str:
    lines = []
    run = report.run
    if run:
        lines.append(f"## tunebench report: run {md(run.uuid[:8])}, suite {md(run.suite_name)}, {md(run.started_at)}")
        lines.append("")
        lines.append(f"Host **{md(run.hostname)}** ({md(run.cpu_model)}, {md(run.cores)} cores) · "
                     f"LibTorch {md(run.libtorch_version)} · git {md(run.git_revision[:7])} · status {md(run.status)}")
        lines.append("")
        groups = glance_groups(report)
        for verdict in (HELPS, HURTS):
            if groups.get(verdict):
                names = ", ".join(md(n) + (" (peak memory)" if m == "peak memory" else "") for n, m, _ in groups[verdict])
                lines.append(f"**{'Helps' if verdict == HELPS else 'Hurts'} on {md(run.hostname)}:** {names}  ")
        lines.append("")
        if any(x.effects for x in report.experiments):
            lines.append("| verdict | experiment | metric | measured effect [95 % interval] | claim |")
            lines.append("|---|---|---|---|---|")
            for x in report.experiments:
                for e in x.effects:
                    name = x.name if x.knob != "factorial" else f"{x.name}: {e.compared}"
                    lines.append(f"| {VERDICT_MARKS.get(e.verdict, md(e.verdict))} | {md(name)} | {md(e.metric)} | "
                                 f"{md(effect_text(e))} | {md(claim_text(x))} |")
            lines.append("")
        if report.controls:
            lines.append("**Controls over the series:** " + md("; ".join(controls_summary(report.controls))) + ".")
            lines.append("")
        compared = report.hosts_compared
        if compared and len(compared.hosts) > 1:
            lines.append(f"**Hosts ranked by items/s** (suite {md(compared.suite)}; a shared rank: not distinguishable):")
            lines.extend(f"- {md(w)}: {md('; '.join(ranks))}" for w, ranks in compared.rankings.items())
            lines.append("")
        if report.check:
            lines.extend(check_markdown(report.check))
    else:
        lines.append("## tunebench report")
        lines.append("")
    if report.tuning:
        r = report.tuning.recommendation
        settings = ", ".join(f"{k}={json.dumps(v)}" for k, v in (r.get("resolved") or {}).items()) or "the defaults"
        lines.append(f"**Recommended for {md(report.tuning.model)}** ({md(r.get('mode', '?'))}, batch "
                     f"{md(r.get('batch', '?'))}): {md(settings)}  ")
        for metric, e in (r.get("vs_default") or {}).items():
            lines.append(f"{md(metric)} against the defaults: {md(e.get('text', ''))}  ")
        lines.append("")
    if report.warnings:
        lines.append("**Read with care:**")
        lines.extend(f"- {md(w)}" for w in report.warnings)
        lines.append("")
    missing = []
    for section, items in report.missing.items():
        for text in items:
            sections = [s for s, texts in report.missing.items() if text in texts]
            if sections[0] == section:  # a note shared by several sections is listed once
                missing.append((SECTIONS.get(section, section) if len(sections) == 1 else "Everywhere", text))
    if missing:
        lines.append("**Not in this report:**")
        lines.extend(f"- {md(section)}: {md(text)}" for section, text in missing)
        lines.append("")
    lines.append(f"Full report (figures, trends, hosts): {md(html_path)}")
    return "\n".join(lines) + "\n"


# ============================================================================================
# Command line
# ============================================================================================

FIGURE_NAMES = ("forest.png", "trends.png", "hosts.png", "threads.png", "ladder.png")


def draw_figures(report: Report) -> dict:
    figures = {}
    if report.experiments and report.run:
        figures["forest.png"] = plot_forest(report.experiments, report.run.hostname)
    for i, f in enumerate(report.factorials):
        if f.main_effects:
            figures[f"factorial-{i + 1}.png"] = plot_factorial(f)
    if report.trends:
        figures["trends.png"] = plot_trends(report.trends)
    figures["hosts.png"] = plot_throughput(report.hosts_compared)
    figures["threads.png"] = plot_thread_sweep(report.threads)
    if report.tuning:
        figures["ladder.png"] = plot_ladder(report.tuning)
    return {name: png for name, png in figures.items() if png}


def write_outputs(report: Report, out_dir: Path) -> Path:
    figures = draw_figures(report)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for stale in list(out_dir.glob("factorial-*.png")) + [out_dir / n for n in FIGURE_NAMES]:
            if stale.is_file():
                stale.unlink()
        for name, png in figures.items():
            (out_dir / name).write_bytes(png)
        html_path = (out_dir / "report.html").resolve()
        html_path.write_text(render_html(report, figures), encoding="utf-8")
        (out_dir / "summary.md").write_text(render_markdown(report, html_path), encoding="utf-8")
    except OSError as error:
        raise ReportError(f"--out {out_dir}: cannot write the report ({error.strerror or error})") from None
    return html_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="render.py", description="Render a tunebench results database as HTML, Markdown and PNG figures.")
    parser.add_argument("--db", required=True, help="the SQLite results database (read only)")
    parser.add_argument("--out", required=True, type=Path, help="directory for report.html, summary.md, *.png")
    parser.add_argument("--run", default="latest", help="run for claims vs measured: latest (default), a uuid or a prefix")
    parser.add_argument("--hosts", nargs="+", metavar="H", help="only these hostnames (default: all)")
    parser.add_argument("--hosts-json", metavar="FILE",
                        help="hosts side by side as tunebench computed them (`tunebench compare --hosts H1 H2 "
                             "--format json`; `tunebench report` writes and passes it)")
    args = parser.parse_args(argv)
    try:
        hosts_compared = load_host_comparison(args.hosts_json) if args.hosts_json else None
        con, missing_tables, version = open_database(args.db)
        try:
            report = build_report(args.db, con, missing_tables, version, args.run, args.hosts, hosts_compared)
        except sqlite3.Error as error:
            raise ReportError(f"{args.db}: cannot read it ({error})") from None
        finally:
            con.close()
        html_path = write_outputs(report, args.out)
    except ReportError as error:
        print(f"render.py: error: {error}", file=sys.stderr)
        return 2
    summary = args.out / "summary.md"
    print(f"report: {len(report.experiments)} experiment(s) of run "
          f"{report.run.uuid if report.run else '(none)'}, {len(report.runs)} run(s) on "
          f"{len(report.hosts)} host(s); summary {summary}")
    print(html_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
