"""Assembly: everything the page shows, read and judged before anything is drawn (the Report),
with what each section lacks and why."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from .hosts import HostComparison
from .load import ReportError, Tables
from .stored import (HELPS, HURTS, Check, RunDetails, RunInfo, Trends, compute_controls,
                     compute_thread_sweep, compute_trends, factorial_of, finite, load_check, load_experiments,
                     load_run_details, load_runs, load_tunings, select_run)
from .text import effect_text

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
    tunings: list = field(default_factory=list)  # of Tuning: the newest of `tunebench tune` first
    tunings_stored: int = 0  # how many the database holds (only the newest few are shown)
    warnings: list = field(default_factory=list)  # things that make results less trustworthy
    missing: dict = field(default_factory=dict)  # section -> [what is missing and why]

    def lack(self, section: str, text: str):
        self.missing.setdefault(section, []).append(text)


SECTIONS = {"run": "Run", "claims": "Claims vs measured", "factorial": "Factorial experiments",
            "trends": "Trends", "hosts": "Hosts side by side", "check": "Regression check",
            "tune": "Tuning"}


def build_report(tables: Tables, run_spec: str, host_filter: list | None,
                 hosts_compared: HostComparison | None) -> Report:
    """The report of the run `run_spec` (latest on the shown hosts by default) and of the history
    of `host_filter` (every host by default). ReportError for a --run or --hosts that matches
    nothing."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    report = Report(tables.database, now, hosts_compared=hosts_compared)
    # Without a recommendation the page and the summary have no tuning section at all.
    report.tunings, report.tunings_stored = load_tunings(tables)
    if not tables.has("runs"):
        if run_spec != "latest":
            raise ReportError(f"--run {run_spec!r}: the database has no runs")
        report.lack("run", f"The database has no tunebench tables (an empty file?). Make runs with "
                           f"`tunebench run --suite suites/smoke.json --db {tables.database}`.")
        for section in ("claims", "factorial", "trends", "hosts", "check"):
            report.lack(section, "No run: nothing to show.")
        return report
    all_runs = load_runs(tables)
    known_hosts = sorted({r.hostname for r in all_runs})
    if host_filter:
        unknown = [h for h in host_filter if h not in known_hosts]
        if unknown:
            raise ReportError(f"--hosts: no run on {', '.join(map(repr, unknown))}; "
                              f"hosts in the database: {', '.join(known_hosts) or 'none'}")
    report.hosts = list(host_filter) if host_filter else known_hosts
    report.runs = [r for r in all_runs if r.hostname in report.hosts]
    report.run = select_run(all_runs if run_spec != "latest" else report.runs, run_spec)
    if report.run is None:
        report.lack("run", "The database has no runs yet. Make one with "
                           "`tunebench run --suite suites/smoke.json`.")
        for section in ("claims", "factorial", "trends", "hosts", "check"):
            report.lack(section, "No run: nothing to show.")
        return report
    read_run(report, tables)
    read_history(report, tables)
    read_hosts(report, tables)
    return report


def read_run(report: Report, tables: Tables):
    """1. Claims vs measured, 2. factorials: the selected run, and what makes it less trustworthy."""
    report.details = load_run_details(tables, report.run.uuid)
    report.check = load_check(tables, report.run)
    report.experiments = load_experiments(tables, report.run.uuid, report.details.claims)
    if not report.run.host_quiet:
        report.warnings.append("The host was not quiet when the run started ("
                               + "; ".join(report.details.host_warnings or ["no details"])
                               + "): intervals may be wider and effects noisier.")
    if report.run.status != "completed":
        report.warnings.append(f"The run's status is '{report.run.status}'.")
    if not report.experiments:  # experiments come from the run's trials
        report.lack("claims", "The selected run has no trials: nothing to compare with the claims.")
    elif not tables.has("effects"):
        for section in ("claims", "factorial", "trends", "hosts"):
            report.lack(section, "No effects stored in this database.")
    elif report.run.status == "running":
        report.lack("claims", "The run is still running: tunebench stores its effects when it finishes.")
    elif not any(x.effects for x in report.experiments):
        report.lack("claims", "No experiment of the selected run has a valid trial in both arms: no effect computed.")
    report.warnings.extend(trial_warnings(report.experiments))
    report.factorials = [factorial_of(x) for x in report.experiments if x.knob == "factorial" and x.effects]
    if not report.factorials:
        report.lack("factorial", 'The selected run has no factorial experiment (a suite entry with '
                                 '"factorial": [knob, knob]).')


def trial_warnings(experiments: list) -> list[str]:
    """Failed or invalid trials, an A/A control that shows an effect, a positive control that
    misses or does not detect its known slowdown."""
    warnings = []
    reasons: dict[str, int] = {}  # "failed: why" -> trials
    for x in experiments:
        for arm in x.arms:
            for problem in arm.problems:
                reason = problem.split(": ", 1)[1]  # drop "process N: "
                reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        hit = [x.name for x in experiments if any(a.failed or a.invalid for a in x.arms)]
        common = sorted(reasons.items(), key=lambda kv: -kv[1])
        warnings.append(
            f"{sum(reasons.values())} trial(s) of {len(hit)} experiment(s) failed or were invalid and are left "
            "out (the table counts them per experiment): "
            + "; ".join(f"{n}× {why}" for why, n in common[:3]) + ("; …" if len(common) > 3 else "") + ".")
    for x in experiments:
        if x.is_aa and any(e.verdict in (HELPS, HURTS) for e in x.effects):
            warnings.append(f"The A/A control {x.name} shows a measurable effect between identical "
                            "arms: on this host the intervals are too narrow; distrust small effects.")
        for e in x.effects:
            if not x.is_positive_control or e.metric != "time" or not finite(e.lo, e.hi):
                continue
            truth = 1 + x.slowdown
            if not e.lo <= truth <= e.hi:
                warnings.append(
                    f"The positive control {x.name} measured {effect_text(e)}, which misses its known "
                    f"{truth:.2f}x: this run's intervals are too narrow or biased; distrust them.")
            elif e.lo <= 1:
                warnings.append(
                    f"The positive control {x.name} did not detect its known {100 * x.slowdown:g}% slowdown "
                    f"({effect_text(e)} includes 1): effects of that size can go unseen in this run.")
    return warnings


def read_history(report: Report, tables: Tables):
    """3. Trends over all runs of the selected hosts, and the controls of the selected run's suite."""
    report.trends = compute_trends(tables, report.runs, report.hosts)
    report.controls = compute_controls(tables, report.runs, report.run.suite_name, report.hosts)
    if not report.controls and tables.has("effects"):
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


def read_hosts(report: Report, tables: Tables):
    """4. Hosts side by side (tunebench's comparison, handed over) and the thread sweep."""
    report.threads = compute_thread_sweep(tables, report.runs, report.hosts)
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
