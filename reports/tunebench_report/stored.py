"""Reading: the stored rows as plain dataclasses (no plotting, no HTML or Markdown).

Every number here is one tunebench computed and stored (the `effects` and `arm_summaries` tables,
written by harness/analysis/effects.cpp when a run finishes, when an older file is migrated and
when runs are merged; `noise_floors` and `regressions` from calibrate and check; `tunings` from
tune), read from the export of load.py: this module computes no statistic, so an interval here
is the one `tunebench show` prints. Rows are picked and ordered in Python; columns are read by
name, so a column tunebench adds is simply there.
"""

from __future__ import annotations

import datetime
import json
import math
from dataclasses import dataclass, field

from .load import ReportError, Tables

# ============================================================================================
# Verdicts as tunebench stores them (harness/analysis/stats.cpp computes every number this page shows)
# ============================================================================================

HELPS, HURTS, NO_EFFECT, INSUFFICIENT = "helps", "hurts", "no measurable effect", "insufficient data"
# The paired estimator's verdicts (harness/analysis/paired.h). Stored verdicts carry their numbers ("no
# effect beyond ±2%", "not precise enough (±3.4%)"); verdict_kind() drops them.
EQUIVALENT, INCONCLUSIVE = "no effect beyond the margin", "inconclusive"
NOT_PRECISE, HOST_BUSY = "not precise enough", "host too busy"


# A control's words, which tunebench prints beside its interval in place of the estimator's
# verdict: an A/A "holds 1 (±1.0%)" or "shows an effect: the host was noisy", a positive control
# "detected" or "missed".
HOLDS, NOISY, DETECTED, MISSED = "holds 1", "shows an effect", "detected", "missed"


def verdict_kind(verdict: str) -> str:
    """A stored verdict, or the words printed beside an effect, without its numbers: "no effect
    beyond ±2%" is EQUIVALENT, "holds 1 (±1.0%)" HOLDS."""
    if verdict.startswith("no effect beyond"):
        return EQUIVALENT
    if verdict.startswith("not precise enough"):
        return NOT_PRECISE
    return next((w for w in (HOLDS, NOISY) if verdict.startswith(w)), verdict)


NO_RESULT = "no effect computed"  # an experiment without a stored effect


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
    host_id: int | None = None
    software_id: int | None = None
    # Whether the run's controls certify it, as tunebench stored it: "certified: …" or
    # "not certified: …"; empty without controls (or in a database from before).
    certification: str = ""

    @property
    def not_certified(self) -> bool:
        return self.certification.startswith("not certified")

    @property
    def when(self) -> datetime.datetime:
        return parse_time(self.started_at)


def parse_time(text: str) -> datetime.datetime:
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        return datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def load_runs(tables: Tables) -> list[RunInfo]:
    """Every run, oldest first (the order storage::resolve_run uses: start time, then stored order)."""
    hosts = {h.get("id"): h for h in tables.rows("hosts")}
    software = {sw.get("id"): sw for sw in tables.rows("software")}
    runs = []
    for index, r in enumerate(tables.rows("runs")):
        h, sw = hosts.get(r.get("host_id"), {}), software.get(r.get("software_id"), {})
        runs.append((r.get("started_at") or "", index, RunInfo(
            r.get("uuid"), r.get("started_at") or "", r.get("ended_at"), r.get("status") or "",
            r.get("suite_name") or "", r.get("label") or "", h.get("hostname") or "?",
            h.get("cpu_model") or "?", h.get("cores"), sw.get("libtorch_version") or "?",
            sw.get("git_revision") or r.get("git_revision") or "", bool(r.get("host_quiet")),
            r.get("host_id"), r.get("software_id"), r.get("certification") or "")))
    return [run for _, _, run in sorted(runs, key=lambda t: t[:2])]


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


def load_run_details(tables: Tables, run_uuid: str) -> RunDetails:
    row = next((r for r in tables.rows("runs") if r.get("uuid") == run_uuid), {})
    sw = next((x for x in tables.rows("software") if x.get("id") == row.get("software_id")), {})
    suite, state, software = (_json_object(t) for t in (row.get("suite_json"), row.get("host_state"), sw.get("json")))
    claims = suite.get("claims") if isinstance(suite.get("claims"), dict) else {}
    claims = {k: v for k, v in claims.items() if isinstance(v, dict)}
    not_applicable = [
        na for na in suite.get("not_applicable") or [] if isinstance(na, dict)
    ]
    warnings = state.get("warnings") if isinstance(state.get("warnings"), list) else []
    return RunDetails(claims, not_applicable, [str(w) for w in warnings],
                      str(software.get("libtorch_build", "")), row.get("command_line") or "")


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


def by_position(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: r.get("position") or 0)


def load_experiments(tables: Tables, run_uuid: str, claims: dict) -> list[Experiment]:
    """The run's experiments (first-seen order of their trials) with the arm summaries and
    effects tunebench stored for it, and the problems of trials that failed."""
    experiments: dict[str, Experiment] = {}
    trials = sorted(tables.grouped("trials", "run_uuid").get(run_uuid, []), key=lambda t: t.get("sequence") or 0)
    for t in trials:
        name, knob, arm = t.get("experiment"), t.get("knob"), t.get("arm")
        x = experiments.get(name)
        if x is None:
            x = experiments[name] = Experiment(name, knob, t.get("model"), t.get("preset"), t.get("mode"),
                                               t.get("batch"), [])
            x.claim = (claims.get(knob) or {}) if knob not in ("aa", "factorial", POSITIVE_CONTROL) else {}
        if knob == POSITIVE_CONTROL and arm == "on":
            x.slowdown = known_slowdown(t.get("settings"))
        a = next((a for a in x.arms if a.name == arm), None)
        if a is None:
            a = Arm(arm)
            x.arms.append(a)
        if t.get("status") != "ok":
            a.problems.append(f"process {t.get('process_index')}: {t.get('status')}: {t.get('error')}")
    for row in by_position(tables.grouped("arm_summaries", "run_uuid").get(run_uuid, [])):
        x = experiments.get(row.get("experiment"))
        a = next((a for a in x.arms if a.name == row.get("arm")), None) if x else None
        if a is not None:
            a.ok, a.failed, a.invalid = row.get("trials_ok"), row.get("trials_failed"), row.get("trials_invalid")
            a.median_seconds = number(row.get("median_seconds"))
    for row in by_position(tables.grouped("effects", "run_uuid").get(run_uuid, [])):
        x = experiments.get(row.get("experiment"))
        if x is None:
            continue
        if row.get("kind") == "none":
            x.problem = row.get("note") or ""
            continue
        e = Effect(row.get("metric"), row.get("compared"), number(row.get("ratio")), number(row.get("lo")),
                   number(row.get("hi")), row.get("verdict") or "", row.get("note") or "",
                   row.get("confidence"), row.get("text") or "", row.get("kind"))
        (x.effects if e.kind == "effect" else x.contrasts).append(e)
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


MARKED_KINDS = ("regression", "step change")  # not 'stopped helping': no slowdown to mark


def regression_marks(tables: Tables) -> tuple[set, str]:
    """The slowdowns `tunebench check` stored in the `regressions` table (kinds 'regression' and
    'step change'), as {(run_uuid, experiment, arm)}. Nothing is guessed: without rows nothing is
    marked and the note says why."""
    marks = {(r.get("run_uuid"), r.get("experiment"), r.get("arm"))
             for r in tables.rows("regressions") if r.get("kind") in MARKED_KINDS}
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
    """What calibrate and check stored for the selected run; where there is none, `note` says
    what to do."""

    floors: list | None = None
    floors_note: str = ""
    findings: list | None = None
    findings_note: str = ""


FLOOR_COLUMNS = ("experiment", "arm", "runs", "sigma_log", "false_alarm", "power", "baseline_runs",
                 "min_detectable", "calibrated_at")
FINDING_COLUMNS = ("experiment", "arm", "kind", "ratio", "lo", "hi", "detail", "checked_at")


def load_check(tables: Tables, run: RunInfo) -> Check:
    """Noise floors for the run's host, software and suite (as harness/store/calibration.cpp's noise_floors()),
    and the findings `tunebench check` stored for the run."""
    check = Check()
    floors = [f for f in tables.rows("noise_floors")
              if (f.get("host_id"), f.get("software_id"), f.get("suite_name"))
              == (run.host_id, run.software_id, run.suite_name)]
    floors.sort(key=lambda f: (f.get("experiment") or "", f.get("arm") or ""))
    check.floors = [NoiseFloor(*(f.get(c) for c in FLOOR_COLUMNS)) for f in floors]
    if not floors:
        check.floors_note = (f"Suite '{run.suite_name}' is not calibrated on this host and software "
                             f"(host {run.hostname}, LibTorch {run.libtorch_version}, git {run.git_revision[:7]}): "
                             "`tunebench calibrate --suite FILE` measures its noise floors with A/A runs.")
    findings = tables.grouped("regressions", "run_uuid").get(run.uuid, [])
    check.findings = [Finding(*(f.get(c) for c in FINDING_COLUMNS)) for f in findings]
    if not findings:
        check.findings_note = ("No findings stored for this run: either `tunebench check` did not check it, "
                               "or it checked it and found nothing (the database does not record which). "
                               "`tunebench check --run RUN` checks it and stores what it finds.")
    return check


def compute_trends(tables: Tables, runs: list[RunInfo], hosts: list[str]) -> Trends:
    """Per experiment, arm and host: each run's stored median of its trial medians and their
    range (arm_summaries), oldest run first. `runs` are oldest first (load_runs)."""
    series: dict[tuple, TrendSeries] = {}
    summaries = tables.grouped("arm_summaries", "run_uuid")
    for run in runs:
        if run.hostname not in hosts:
            continue
        for a in by_position(summaries.get(run.uuid, [])):
            if a.get("trial_median_seconds") is None:
                continue
            s = series.setdefault((a.get("experiment"), a.get("arm"), run.hostname),
                                  TrendSeries(a.get("experiment"), a.get("arm"), run.hostname))
            s.when.append(run.when)
            s.run_uuids.append(run.uuid)
            s.medians.append(a.get("trial_median_seconds"))
            s.lows.append(a.get("trial_median_low_seconds"))
            s.highs.append(a.get("trial_median_high_seconds"))
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
    marks, note = regression_marks(tables)
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


def compute_controls(tables: Tables, runs: list[RunInfo], suite_name: str, hosts: list[str]) -> list[ControlResult]:
    """Every stored time effect of an A/A or positive control in the runs of `suite_name` on `hosts`,
    oldest run first (`runs` as load_runs orders them). A control is known by the knob of its ON
    arm's first trial."""
    first_trial = tables.first_by("trials", "run_uuid", "experiment", "arm")
    effects = tables.grouped("effects", "run_uuid")
    controls = []
    for run in runs:
        if run.suite_name != suite_name or run.hostname not in hosts:
            continue
        for e in by_position(effects.get(run.uuid, [])):
            if e.get("kind") != "effect" or e.get("metric") != "time":
                continue
            on = first_trial.get((run.uuid, e.get("experiment"), "on"), {})
            if on.get("knob") not in ("aa", POSITIVE_CONTROL):
                continue
            truth = 1 + (known_slowdown(on.get("settings")) if on.get("knob") == POSITIVE_CONTROL else 0)
            controls.append(ControlResult(run.when, run.uuid, run.hostname, e.get("experiment"), truth,
                                          number(e.get("ratio")), number(e.get("lo")), number(e.get("hi")),
                                          e.get("verdict") or "", e.get("text") or ""))
    return controls


def latest_run_per_host(runs: list[RunInfo], hosts: list[str]) -> dict[str, RunInfo]:
    latest = {}
    for run in runs:
        if run.hostname in hosts:
            latest[run.hostname] = run  # runs are oldest first
    return latest


def stored_arms(tables: Tables, run_uuid: str, knob: str | None = None) -> list[tuple]:
    """(workload, settings, trials_ok, items_per_second, trial_median_seconds) of each arm of a run
    with an ok trial, in stored order: the workload and settings of the arm's first trial, the rest
    from the summary tunebench stored."""
    first_trial = tables.first_by("trials", "run_uuid", "experiment", "arm")
    arms = []
    for a in by_position(tables.grouped("arm_summaries", "run_uuid").get(run_uuid, [])):
        t = first_trial.get((run_uuid, a.get("experiment"), a.get("arm")))
        if t is None or not (a.get("trials_ok") or 0) > 0 or (knob and t.get("knob") != knob):
            continue
        arms.append(((t.get("model"), t.get("preset"), t.get("mode"), t.get("batch")), _json_object(t.get("settings")),
                     a.get("trials_ok"), a.get("items_per_second"), a.get("trial_median_seconds")))
    return arms


@dataclass
class ThreadPoint:
    workload: tuple
    host: str
    threads: int
    median_seconds: float  # stored median of the arm's trial medians
    trials: int
    run_uuid: str


def compute_thread_sweep(tables: Tables, runs: list[RunInfo], hosts: list[str]) -> list[ThreadPoint]:
    """Time per iteration against threads, from each host's latest run with omp_threads trials."""
    with_sweep = {t.get("run_uuid") for t in tables.rows("trials")
                  if t.get("knob") == "omp_threads" and t.get("status") == "ok"}
    latest = latest_run_per_host([r for r in runs if r.uuid in with_sweep], hosts)
    points = []
    for host, run in latest.items():
        seen = set()
        for workload, settings, ok, _, median in stored_arms(tables, run.uuid, knob="omp_threads"):
            threads = settings.get("omp_threads")
            if median is None or not isinstance(threads, int) or isinstance(threads, bool):
                continue
            if (workload, threads) not in seen:
                seen.add((workload, threads))
                points.append(ThreadPoint(workload, host, threads, median, ok, run.uuid))
    points.sort(key=lambda p: (p.workload, p.host, p.threads))
    return points

TUNINGS_SHOWN = 3  # the newest recommendations the report shows; `tunebench show UUID` prints any


@dataclass
class Tuning:
    """A recommendation of `tunebench tune` (a row of the tunings table), as tunebench stored it."""
    uuid: str
    created_at: str
    model: str
    recommendation: dict


def load_tunings(tables: Tables, limit: int = TUNINGS_SHOWN) -> tuple[list[Tuning], int]:
    """The newest `limit` recommendations, newest first (by created_at, then the later stored), and
    how many the database holds."""
    rows = list(enumerate(tables.rows("tunings")))
    rows.sort(key=lambda ir: (ir[1].get("created_at") or "", ir[0]), reverse=True)
    return ([Tuning(row.get("uuid") or "", row.get("created_at") or "", row.get("model") or "",
                    _json_object(row.get("recommendation"))) for _, row in rows[:limit]], len(rows))
