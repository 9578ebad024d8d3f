#!/usr/bin/env python3
"""Benchmark: render the report from a year of nightly history.

    bench_render.py [--db PATH] [--out DIR] [--repeat 3] [--limit 60]

Uses --db (default reports/out/history-365x100x20.sqlite, git-ignored), generating it with
generate_history.py (365 runs x 100 trials x 20 samples) when it does not exist. Runs
`render.py --db PATH --out DIR` in a fresh interpreter --repeat times (start-up and imports
included, as a CI job sees it), prints each wall time and the median, then times the compute and
present phases once in this process. Exit 1 when the median exceeds --limit seconds.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPORTS = HERE.parent / "reports"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPORTS))

import generate_history  # noqa: E402
from tunebench_report.assemble import build_report  # noqa: E402
from tunebench_report.cli import write_outputs  # noqa: E402
from tunebench_report.load import open_database  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, default=REPORTS / "out" / "history-365x100x20.sqlite")
    parser.add_argument("--out", type=Path, default=REPORTS / "out" / "bench-report")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=float, default=60.0, help="seconds the median may take")
    args = parser.parse_args()

    if not args.db.exists():
        args.db.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        generate_history.generate(args.db, runs=365, trials=100, samples=20, hosts=1, seed=1)
        print(f"generated {args.db} in {time.perf_counter() - start:.1f} s")
    with sqlite3.connect(f"file:{args.db}?mode=ro", uri=True) as con:
        runs, trials, samples = (con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                                 for t in ("runs", "trials", "samples"))
    print(f"database: {args.db} ({args.db.stat().st_size / 2**20:.0f} MiB): "
          f"{runs} runs, {trials:,} trials, {samples:,} samples")

    times = []
    for i in range(args.repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, str(REPORTS / "render.py"), "--db", str(args.db), "--out", str(args.out)],
                       check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
        print(f"render {i + 1}/{args.repeat}: {times[-1]:.2f} s")

    start = time.perf_counter()
    # The export of the database (tunebench export --format tables) counts as computing.
    report = build_report(open_database(str(args.db)), "latest", None, None)
    computed = time.perf_counter()
    write_outputs(report, args.out)
    presented = time.perf_counter()

    middle = statistics.median(times)
    print(f"in process: compute {computed - start:.2f} s (effects, trends, hosts), "
          f"present {presented - computed:.2f} s (figures, HTML, Markdown)")
    print(f"render time, {runs} runs x {round(trials / max(runs, 1))} trials x {round(samples / max(trials, 1))} samples: "
          f"median {middle:.2f} s of {args.repeat} (min {min(times):.2f} s, limit {args.limit:g} s)")
    print(f"report: {(args.out / 'report.html').resolve()}")
    return 0 if middle <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
