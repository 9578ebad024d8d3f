#!/usr/bin/env python3
"""Does sharing one heap offset between the two processes of a resident pair narrow a software
A/B? With --rounds N it first runs the study into --db: stage 2's A/B as an A/A (this build,
"self", against a copy of it, resident pairs, 48 workers each, the two benchmarks of
suites/studies/regression_suite.json's OFF arms), the suite's "heap_offset" "per_process" and "per_pair"
in alternating runs (labels offset-per_process and offset-per_pair; N rounds of four runs, ABBA),
~3 minutes a run here. Then it reads every run labelled offset-* in --db and prints, per
label and benchmark, the spread of the workers' estimates (what the interval is made of), the
pair-to-pair spread inside a worker, and the part between workers that is left once the
inside-a-worker part is taken out (the processes' own offsets, which a shared layout may cancel).
Each worker's estimate is the mean of its block pairs' log ratios, as bench/replay_looks.py
forms it. The ratio of the variances is the ratio of the process pairs the two need for one
interval width; its 95 % interval is a bootstrap over the workers.

  .venv/bin/python bench/offset_study.py --rounds 2 --db /tmp/offset-study/study.sqlite
"""
import argparse
import collections
import json
import math
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

from replay_looks import worker_pair_logs


def run_study(args):
    """Rounds of four runs, per_process / per_pair / per_pair / per_process, into args.db."""
    work = os.path.dirname(os.path.abspath(args.db))
    os.makedirs(work, exist_ok=True)
    copy = os.path.join(work, "last-good-tunebench")
    shutil.copy2(args.tunebench, copy)
    arms = {"off": {"worker_build": copy}, "on": {"worker_build": "self"}}
    experiments = [
        {"name": "resnet", "model": "resnet50", "preset": "tiny", "mode": "infer",
         "settings": {"no_grad": False}},
        {"name": "gpt", "model": "gpt", "preset": "tiny", "mode": "train", "iterations": 5,
         "settings": {"zero_grad_none": False}},
    ]
    for x in experiments:
        x.update({"knob": "worker_build", "arms": arms})
    for layout in ("per_process", "per_pair"):
        suite = {"name": "offset-study",
                 "description": "stage 2's software A/B as an A/A (bench/offset_study.py): this "
                                "build against a copy of it in resident pairs, heap offsets "
                                + layout,
                 "defaults": {"design": "auto", "workers": args.workers, "blocks": 6,
                              "block_samples": 3, "budget_s": 0, "warmup": 3, "iterations": 10,
                              "timeout_s": 120, "batch": 8, "settings": {"omp_threads": 1},
                              "heap_offset": layout},
                 "experiments": experiments}
        with open(os.path.join(work, layout + ".json"), "w") as f:
            json.dump(suite, f, indent=1)
    order = ["per_process", "per_pair", "per_pair", "per_process"] * args.rounds
    for i, layout in enumerate(order):
        with open("/proc/pressure/cpu") as f:
            pressure = f.readline().strip()
        print(f"[offset-study] {time.strftime('%H:%M:%S', time.gmtime())} run {i + 1}/{len(order)}"
              f" {layout} ({pressure})", file=sys.stderr, flush=True)
        subprocess.run([args.tunebench, "run", "--suite", os.path.join(work, layout + ".json"),
                        "--db", args.db, "--label", "offset-" + layout, "-q"], check=True)


def worker_pairs(db, run):
    """{experiment: [[log ratio of each block pair] per worker]}, workers of 2 pairs or more"""
    return {experiment: [logs for logs in workers if len(logs) >= 2]
            for experiment, workers in worker_pair_logs(db, run).items()}


def parts(workers):
    """(sd of the worker means, pooled sd of pairs inside a worker, sd between workers left)"""
    means = [statistics.mean(w) for w in workers]
    k = statistics.mean(len(w) for w in workers)
    within = statistics.mean(statistics.variance(w) for w in workers)
    total = statistics.variance(means)
    return math.sqrt(total), math.sqrt(within), math.sqrt(max(total - within / k, 0))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True)
    p.add_argument("--rounds", type=int, default=0, help="run this many rounds first (0: only read)")
    p.add_argument("--workers", type=int, default=48, help="resident pairs per benchmark and run")
    p.add_argument("--tunebench", default="build/debian/tunebench")
    p.add_argument("--resamples", type=int, default=2000)
    args = p.parse_args()
    if args.rounds > 0:
        run_study(args)
    db = sqlite3.connect(args.db)
    runs = db.execute("SELECT uuid, label FROM runs WHERE label LIKE 'offset-%' AND status = "
                      "'completed' ORDER BY started_at").fetchall()
    by = collections.defaultdict(list)  # (label, experiment) -> per run: workers
    for run, label in runs:
        for experiment, workers in worker_pairs(db, run).items():
            by[(label, experiment)].append(workers)
    print("| label | benchmark | runs | workers | sd of worker estimates | pairs inside a worker "
          "| between workers, left |\n|---|---|---|---|---|---|---|")
    for (label, experiment), per_run in sorted(by.items()):
        sds = [parts(w) for w in per_run]
        n = sum(len(w) for w in per_run)
        mean_sd = [math.sqrt(statistics.mean(s[i] ** 2 for s in sds)) for i in range(3)]
        print(f"| {label} | {experiment} | {len(per_run)} | {n} | {100 * mean_sd[0]:.2f} % | "
              f"{100 * mean_sd[1]:.2f} % | {100 * mean_sd[2]:.2f} % |")
    # The noise inside a worker at its finest: consecutive samples of one block (the first, dropped
    # by the estimator, left out), and the shape of the block pairs' log ratios about their
    # worker's mean (normal: kurtosis 3; heavy tails would favour a robust estimator).
    consecutive, centred = [], []
    for run, _ in runs:
        rows = db.execute("SELECT s.trial_id, s.block, s.position, s.seconds FROM samples s JOIN "
                          "trials t ON t.id = s.trial_id WHERE t.run_uuid = ? AND t.status = 'ok' "
                          "ORDER BY s.trial_id, s.block, s.position", (run,)).fetchall()
        block = collections.defaultdict(list)
        for trial, b, position, seconds in rows:
            if position > 0:
                block[(trial, b)].append(seconds)
        for kept in block.values():
            consecutive += [math.log(b / a) for a, b in zip(kept, kept[1:])]
        for workers in worker_pairs(db, run).values():
            for logs in workers:
                centred += [x - statistics.mean(logs) for x in logs]
    if consecutive and centred:
        sd = statistics.pstdev(centred)
        kurtosis = statistics.mean(x ** 4 for x in centred) / sd ** 4
        print(f"\nconsecutive samples of a block: sd of their log ratio {100 * statistics.pstdev(consecutive):.1f} % "
              f"({len(consecutive)}); block pairs about their worker's mean: kurtosis {kurtosis:.2f} "
              f"({len(centred)})")
    rng = random.Random(1)
    labels = sorted({label for label, _ in by})
    experiments = sorted({e for _, e in by})
    if len(labels) == 2:
        # shared over per-process: offset-per_pair / offset-per_process (offset-S / offset-I: the
        # same two, from the prototype that chose by an environment variable)
        b, a = sorted(labels, key=lambda label: label.endswith(("per_process", "-I")))
        print(f"\nvariance of the worker estimates, {b} / {a} (each run's about its own mean; "
              "95 % bootstrap over workers within runs):")
        for experiment in experiments + ["both"]:
            keys = experiments if experiment == "both" else [experiment]

            def pooled(label, draw):
                v = []
                for e in keys:
                    for workers in by.get((label, e), []):
                        means = [statistics.mean(w) for w in workers]
                        if draw:
                            means = [rng.choice(means) for _ in means]
                        v.append(statistics.variance(means))
                return statistics.mean(v)

            ratio = pooled(b, False) / pooled(a, False)
            boot = []
            while len(boot) < args.resamples:
                num, den = pooled(b, True), pooled(a, True)
                if den > 0:  # a draw of one worker over and over has no spread
                    boot.append(num / den)
            boot.sort()
            lo, hi = boot[int(0.025 * len(boot))], boot[int(0.975 * len(boot)) - 1]
            print(f"  {experiment}: {ratio:.3f} [{lo:.3f}, {hi:.3f}]")


if __name__ == "__main__":
    main()
