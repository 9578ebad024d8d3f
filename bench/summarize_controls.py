#!/usr/bin/env python3
"""Summarise the controls of one stored run: A/A controls and positive controls, grouped.

    .venv/bin/python bench/summarize_controls.py --db FILE [--run UUID-PREFIX] [--group REGEX]

Reads what tunebench stored (effects, trials) and prints, per group of control experiments
(by default the experiment name without its trailing number: aa-resnet50, slow3-resnet50, ...):
how many there are, the median and 90th percentile of their interval half-widths
((hi / lo)^(1/2) - 1, the measure the ±2 % target uses), how often the truth (1.00 for an A/A
control, 1 + slowdown for a positive control) is inside the interval, how often a positive
control excludes 1 (detected), the verdicts, how many settled at ±2 %, and the machine time
spent per experiment (sum of its worker processes' wall times, start-up included: the
`worker_wall_seconds` the orchestrator records in each trial's evidence; a paired worker's two
arms hold the same figure and count once).

With --effects, the run's other experiments (real knobs) are listed too, grouped the same way:
each stored time effect as `show` prints it, and per group the median estimate and half-width,
so that two ways of measuring one knob (in one process, in resident process pairs) can be set
side by side.

The statistics themselves are tunebench's (stored intervals and verdicts); this script only
counts and orders them for bench/ figures.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import statistics
import sys


def quantile(values: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default), q in [0, 1]."""
    s = sorted(values)
    if not s:
        return float("nan")
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="results database")
    parser.add_argument("--run", default="", help="run uuid or prefix (default: the latest run)")
    parser.add_argument("--group", default=r"^(.*?)-?\d+$",
                        help="regex whose first group names an experiment's group (default: the name "
                             "without its trailing number)")
    parser.add_argument("--effects", action="store_true",
                        help="also list the other experiments' time effects, grouped")
    args = parser.parse_args(argv)
    con = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    row = con.execute("SELECT uuid FROM runs WHERE uuid LIKE ? ORDER BY started_at DESC, rowid DESC LIMIT 1",
                      (args.run + "%",)).fetchone()
    if row is None:
        print(f"summarize_controls: no run {args.run!r} in {args.db}", file=sys.stderr)
        return 2
    run = row[0]
    controls = con.execute(
        """SELECT e.experiment, t.knob, t.settings, e.lo, e.hi, e.verdict
           FROM effects e JOIN trials t ON t.id = (SELECT MIN(id) FROM trials WHERE run_uuid = e.run_uuid
                                                   AND experiment = e.experiment AND arm = 'on')
           WHERE e.run_uuid = ? AND e.kind = 'effect' AND e.metric = 'time'
                 AND t.knob IN ('aa', 'positive_control')
           ORDER BY e.position""", (run,)).fetchall()
    seconds: dict[str, float] = {}
    workers: dict[str, int] = {}
    for experiment, process, evidence in con.execute(
            "SELECT experiment, process_index, evidence FROM trials WHERE run_uuid = ? AND arm = 'on'", (run,)):
        seconds[experiment] = seconds.get(experiment, 0.0) + json.loads(evidence or "{}").get("worker_wall_seconds", 0.0)
        workers[experiment] = max(workers.get(experiment, 0), process + 1)
    groups: dict[str, list] = {}
    pattern = re.compile(args.group)
    for experiment, knob, settings, lo, hi, verdict in controls:
        match = pattern.match(experiment)
        name = match.group(1) if match else experiment
        truth = 1 + (json.loads(settings).get("slowdown", 0) / 100 if knob == "positive_control" else 0)
        groups.setdefault(name, []).append((experiment, truth, lo, hi, verdict))
    print(f"run {run}: {len(controls)} controls")
    for name, rows in groups.items():
        widths = [(hi / lo) ** 0.5 - 1 for _, _, lo, hi, _ in rows if lo and hi and lo > 0]
        inside = sum(1 for _, truth, lo, hi, _ in rows if lo is not None and lo <= truth <= hi)
        truth = rows[0][1]
        settled = [x for x, _, lo, hi, _ in rows if lo and hi and (hi / lo) ** 0.5 - 1 <= 0.02]
        times = [seconds.get(x, 0.0) for x, *_ in rows]
        verdicts: dict[str, int] = {}
        for *_, verdict in rows:
            key = verdict.split(" (")[0]
            verdicts[key] = verdicts.get(key, 0) + 1
        line = (f"{name}: {len(rows)} experiments, truth {truth:.2f}x inside {inside} of {len(rows)}; "
                f"half-width median ±{100 * statistics.median(widths):.2f}% p90 ±{100 * quantile(widths, 0.9):.2f}% "
                f"(max ±{100 * max(widths):.2f}%); settled at ±2% {len(settled)} of {len(rows)}")
        if truth > 1:
            detected = sum(1 for _, _, lo, _, _ in rows if lo is not None and lo > 1)
            line += f"; detected {detected} of {len(rows)}"
        line += (f"; workers median {statistics.median(workers.get(x, 0) for x, *_ in rows):g}; machine time per "
                 f"experiment median {statistics.median(times):.0f} s (range {min(times):.0f}-{max(times):.0f} s)")
        if settled:
            line += f", of the settled ones median {statistics.median(seconds.get(x, 0.0) for x in settled):.0f} s"
        line += "; verdicts: " + ", ".join(f"{k} {n}" for k, n in sorted(verdicts.items(), key=lambda kv: -kv[1]))
        print(line)
    if args.effects:
        print_effects(con, run, pattern, seconds)
    return 0


def print_effects(con: sqlite3.Connection, run: str, pattern: re.Pattern, seconds: dict[str, float]) -> None:
    """Each group of real-knob experiments: their stored time effects, median estimate and width."""
    rows = con.execute(
        """SELECT e.experiment, e.ratio, e.lo, e.hi, e.text FROM effects e
           JOIN trials t ON t.id = (SELECT MIN(id) FROM trials WHERE run_uuid = e.run_uuid
                                    AND experiment = e.experiment AND arm = 'on')
           WHERE e.run_uuid = ? AND e.kind = 'effect' AND e.metric = 'time'
                 AND t.knob NOT IN ('aa', 'positive_control')
           ORDER BY e.position""", (run,)).fetchall()
    groups: dict[str, list] = {}
    for experiment, ratio, lo, hi, text in rows:
        match = pattern.match(experiment)
        groups.setdefault(match.group(1) if match else experiment, []).append((experiment, ratio, lo, hi, text))
    for name, members in groups.items():
        ratios = [r for _, r, *_ in members if r]
        widths = [(hi / lo) ** 0.5 - 1 for _, _, lo, hi, _ in members if lo and hi and lo > 0]
        times = [seconds.get(x, 0.0) for x, *_ in members]
        print(f"{name}: {len(members)} experiments, estimate median {statistics.median(ratios):.4f}x, "
              f"half-width median ±{100 * statistics.median(widths):.2f}%, machine time median "
              f"{statistics.median(times):.0f} s")
        for experiment, _, _, _, text in members:
            print(f"  {experiment}: {text}")


if __name__ == "__main__":
    sys.exit(main())
