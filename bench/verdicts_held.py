#!/usr/bin/env python3
"""Which verdicts held between two runs of one suite.

Reads the effects `tunebench show RUN --json` prints for each run (computed and stored in C++;
nothing is recomputed here), pairs them by experiment, metric and comparison, and prints a
Markdown summary and table: each effect with its interval and verdict in both runs, and what
changed. The issue's goal: no verdict moves between helps and hurts, or between a decided verdict
(helps, hurts) and "no effect beyond ±2 %", from one night to the next.

  bench/verdicts_held.py --db results/cpu-nightly.sqlite RUN_A RUN_B [--tunebench build/debian/tunebench]
"""
import argparse
import json
import subprocess
import sys

DECIDED = ("helps", "hurts")


def kind(verdict):
    """The verdict's class: decided (helps/hurts), equivalent, or undecided (the rest)."""
    if verdict in DECIDED:
        return verdict
    if verdict.startswith("no effect beyond"):
        return "equivalent"
    return "undecided"


def effects(tunebench, db, run):
    out = subprocess.run([tunebench, "show", run, "--db", db, "--json"], check=True,
                         capture_output=True, text=True).stdout
    report = json.loads(out)
    found = {}
    for x in report["experiments"]:
        for e in x["effects"]:
            found[(x["name"], e["metric"], e["compared"])] = e
    return report["run"], found


def interval(e):
    if e.get("lo") is None or e.get("hi") is None:
        return f"{e['ratio']:.3f}x [no interval]" if e.get("ratio") is not None else "no estimate"
    return f"{e['ratio']:.3f}x [{e['lo']:.3f}, {e['hi']:.3f}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_a")
    parser.add_argument("run_b")
    parser.add_argument("--db", required=True)
    parser.add_argument("--tunebench", default="build/debian/tunebench")
    args = parser.parse_args()
    run_a, a = effects(args.tunebench, args.db, args.run_a)
    run_b, b = effects(args.tunebench, args.db, args.run_b)
    shared = [k for k in a if k in b]
    if not shared:
        sys.exit(f"runs {run_a} and {run_b} share no effect: are they runs of one suite?")
    held = flipped = to_equivalent = other = 0
    rows = []
    for key in shared:
        va, vb = a[key]["verdict"], b[key]["verdict"]
        ka, kb = kind(va), kind(vb)
        if ka == kb and (ka != "undecided" or va == vb):
            held += 1
            change = "held"
        elif {ka, kb} == set(DECIDED):
            flipped += 1
            change = "**helps ↔ hurts**"
        elif {ka, kb} in ({"helps", "equivalent"}, {"hurts", "equivalent"}):
            to_equivalent += 1
            change = "**decided ↔ no effect beyond ±2 %**"
        else:
            other += 1
            change = "changed"
        rows.append((key, va, vb, change))
    print(f"Runs {run_a[:8]} and {run_b[:8]}: {len(shared)} effects in both; "
          f"{held} kept their verdict, {len(shared) - held} changed: "
          f"{flipped} between helps and hurts, {to_equivalent} between a decided verdict and "
          f"'no effect beyond ±2 %', {other} otherwise (to or from inconclusive, not precise "
          f"enough, or between those).")
    print()
    print(f"| experiment | metric | {run_a[:8]} | {run_b[:8]} | |")
    print("|---|---|---|---|---|")
    for (name, metric, compared), va, vb, change in rows:
        label = name if compared == "on vs off" else f"{name} ({compared})"
        print(f"| {label} | {metric} | {interval(a[(name, metric, compared)])} {va} | "
              f"{interval(b[(name, metric, compared)])} {vb} | {change} |")


if __name__ == "__main__":
    main()
