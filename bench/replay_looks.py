#!/usr/bin/env python3
"""Replays stage 2's look rule (detect::decision_looks) on stored A/B runs of the regression
study: for each A/B of each `confirm` run since --since, the interval over all its workers at the
A/B's level, and the first look (16, 32, 64, … workers) whose interval at the looks' level would
have decided. Each worker's estimate is the mean of its block pairs' log ratios (the first sample
of each block dropped), as harness/analysis/paired does for 3 pairs (its 10 % trim cuts none); t quantiles
by the Cornish-Fisher expansion (no SciPy in the environment).

  .venv/bin/python bench/replay_looks.py --since 2026-12-03T14:50
"""
import argparse
import collections
import math
import os
import sqlite3
import statistics

CACHE = os.environ.get("TUNEBENCH_CACHE", "/var/cache/tunebench")


def t_quantile(p, dof):
    z = statistics.NormalDist().inv_cdf(p)
    return (z + (z ** 3 + z) / (4 * dof) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * dof ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * dof ** 3))


def interval(estimates, confidence):
    n = len(estimates)
    mean = statistics.mean(estimates)
    half = t_quantile(1 - (1 - confidence) / 2, n - 1) * statistics.stdev(estimates) / math.sqrt(n)
    return mean, mean - half, mean + half


def decide(lo, hi, threshold):
    if hi < math.log(1 + threshold):
        return "no regression"
    return "regression" if lo > 0 else "unknown"


def worker_pair_logs(db, run):
    """{experiment: [the log ratios (ON / OFF) of a worker's block pairs, per worker]}: the mean of
    a block's samples, its first dropped, against the other arm's block of the pair."""
    rows = db.execute("SELECT t.experiment, t.arm, t.process_index, s.block, s.position, s.seconds "
                      "FROM trials t JOIN samples s ON s.trial_id = t.id "
                      "WHERE t.run_uuid = ? AND t.status = 'ok'", (run,)).fetchall()
    blocks = collections.defaultdict(lambda: collections.defaultdict(list))
    arms = collections.defaultdict(dict)
    for experiment, arm, worker, block, position, seconds in rows:
        arms[(experiment, worker)][block] = arm
        if position > 0:
            blocks[(experiment, worker)][block].append(seconds)
    out = collections.defaultdict(list)
    for (experiment, worker) in sorted(blocks, key=lambda k: (k[0], k[1])):
        b = blocks[(experiment, worker)]
        logs = []
        for j in range(0, max(b) + 1, 2):
            if j in b and j + 1 in b:
                first, second = statistics.mean(b[j]), statistics.mean(b[j + 1])
                on, off = (first, second) if arms[(experiment, worker)][j] == "on" else (second, first)
                logs.append(math.log(on / off))
        if logs:
            out[experiment].append(logs)
    return out


def worker_estimates(db, run):
    return {experiment: [statistics.mean(logs) for logs in workers]
            for experiment, workers in worker_pair_logs(db, run).items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", default=os.path.join(CACHE, "studies", "regression-study.sqlite"))
    p.add_argument("--since", default="2026-12-03T14:50", help="A/B runs started at or after (UTC)")
    p.add_argument("--threshold", type=float, default=5, help="per cent")
    p.add_argument("--false-alarm", type=float, default=1, help="per cent per run")
    p.add_argument("--max-workers", type=int, default=1000)
    args = p.parse_args()
    db = sqlite3.connect(args.db)
    runs = db.execute("SELECT uuid, started_at FROM runs WHERE suite_name = 'confirm' AND "
                      "started_at >= ? ORDER BY started_at", (args.since,)).fetchall()
    looks = [n for n in (16 * 2 ** k for k in range(20)) if n <= args.max_workers]
    threshold = args.threshold / 100
    print("| A/B run | benchmark | workers | all workers at the A/B's level | looks: stopped at |\n"
          "|---|---|---|---|---|")
    for run, started in runs:
        estimates = worker_estimates(db, run)
        level = 1 - 2 * args.false_alarm / 100 / max(len(estimates), 1)
        look_level = 1 - (1 - level) / (len(looks) + 1)
        for experiment, w in sorted(estimates.items()):
            if len(w) < 3:
                continue
            m, lo, hi = interval(w, level)
            stopped = "not decided at a look"
            for n in looks:
                if n > len(w):
                    break
                mn, ln, hn = interval(w[:n], look_level)
                if decide(ln, hn, threshold) != "unknown":
                    stopped = f"{n} workers, {decide(ln, hn, threshold)}, {math.exp(mn):.4f}"
                    break
            print(f"| {started} {run[:8]} | {experiment} | {len(w)} | {math.exp(m):.4f} "
                  f"[{math.exp(lo):.4f}, {math.exp(hi):.4f}] {decide(lo, hi, threshold)} | "
                  f"{stopped} |")


if __name__ == "__main__":
    main()
