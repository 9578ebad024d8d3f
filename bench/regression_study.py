#!/usr/bin/env python3
"""The two-stage check's false alarms and detection on this machine.

Real runs, nothing simulated; every figure comes from `tunebench check --format json` (computed
in C++). Into one database, nights of suites/studies/regression_suite.json:

  1. Calibration (a new history only): --calibrate A/A nights (nothing changed, label "aa"), then
     `tunebench calibrate` on them: the noise floors, absolute and reference-relative.
  2. Checked nights, --nights A/A ones and --checks injected ones per slowdown (--slowdowns, per
     cent), in a random order. An injected night has one benchmark (experiment x arm) chosen at
     random made slower in this build only (TUNEBENCH_TEST_SLOWDOWN: the orchestrator passes it
     to its own workers, not to the last-good build's). Every night is checked in two stages as
     it runs, against every A/A night before it (--baseline label:aa): stage 1 flags, stage 2
     runs each flag as a paired A/B of a copy of the binary (the "last-good build") against the
     binary. In an A/A night a regression is a false alarm; in an injected night, found = that
     benchmark's final status is "regression", and any other benchmark called a regression is a
     false alarm too.

Prints a Markdown table of the rates with Clopper-Pearson 95 % intervals and writes every check's
JSON to --out. Run it on a quiet host: nothing else on the cores.

Where things live. The checks, every one a line of JSON that says its session, host, build and
baseline, are kept in the repository (--out, default bench/studies/regression-study/checks.jsonl,
committed after a study): the table pools every session's checks, so the study grows across
sessions and machines even though nothing outside the clone survives between them (a study kept
in results/ and then one in /var/cache were both lost that way). The database of nights, the
history each check compares with, is per host and session: it stays outside the clone
(--db, default ${TUNEBENCH_CACHE:-/var/cache/tunebench}/studies/regression-study.sqlite), and a
session without one starts a new history (its own A/A and calibration nights).

Without --extend a study starts a new history in --db: --calibrate A/A nights calibrate the floors,
then --nights more A/A nights and --checks injected nights per slowdown run in a random order, each
checked as it runs. --extend grows a history already in --db (same session and host): its A/A
nights stay the history (no new calibration). The table counts every check in checks.jsonl.
--loaded F runs a fraction F of the checked nights (night and both stages) with the host loaded by
a compile (--load-jobs loops of the C++ compiler on a translation unit that includes LibTorch),
counted apart in the table ("loaded"). --confirm-all checks with `check --confirm-all`: every
benchmark goes to stage 2, flagged or not (a release gate); those sessions are tabled apart.
A check that fails (exit 2) is said and left out, and the study goes on.

  .venv/bin/python bench/regression_study.py --calibrate 8 --nights 24 --checks 10 \\
      --slowdowns 5 3 --loaded 0.33
  .venv/bin/python bench/regression_study.py --extend --nights 8 --checks 4 --loaded 0.33
  .venv/bin/python bench/regression_study.py --extend --confirm-all --nights 3 --checks 4
  .venv/bin/python bench/regression_study.py --summarize
"""
import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

SUITE = "suites/studies/regression_suite.json"


def clopper_pearson(k, n, confidence=0.95):
    """The exact binomial interval of k successes in n, by bisection on the binomial tail."""
    if n == 0:
        return (math.nan, math.nan)

    def tail_ge(p):  # P(X >= k)
        return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))

    def tail_le(p):  # P(X <= k)
        return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(0, k + 1))

    def solve(f, target, increasing):
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if (f(mid) < target) == increasing:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    alpha = 1 - confidence
    lower = 0.0 if k == 0 else solve(tail_ge, alpha / 2, True)
    upper = 1.0 if k == n else solve(tail_le, alpha / 2, False)
    return (lower, upper)


def rate(k, n):
    lo, hi = clopper_pearson(k, n)
    if n == 0:
        return "- (0 checks)"
    return f"{k}/{n} = {100 * k / n:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]"


def tb(args, *argv, env=None, check=True):
    cmd = [args.tunebench, *argv]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if check and result.returncode not in (0, 1, 3):
        sys.exit(f"{' '.join(cmd)}: exit {result.returncode}\n{result.stderr[-2000:]}")
    return result


class CompileLoad:
    """--load-jobs loops compiling a LibTorch translation unit, as a build beside the benchmark
    would: started before a night, stopped after its check."""

    def __init__(self, jobs):
        self.procs = []
        self.jobs = jobs

    def __enter__(self):
        unit = "harness/worker/ddp.cpp"  # includes torch/torch.h: ~25 s of one core per compile
        torch_include = "/usr/include/torch/csrc/api/include"
        loop = (f"while :; do c++ -std=c++17 -O2 -Iharness -I. -isystem {torch_include} "
                f"-DTUNEBENCH_GLOO=0 -DTUNEBENCH_NCCL=0 -DTUNEBENCH_GLOO_MISSING='\"\"' "
                f"-DTUNEBENCH_NCCL_MISSING='\"\"' -c {unit} -o /dev/null 2>/dev/null; done")
        for _ in range(self.jobs):
            self.procs.append(subprocess.Popen(["bash", "-c", loop], start_new_session=True))
        time.sleep(3)  # the compilers are running before the night starts
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            os.killpg(p.pid, 9)
            p.wait()


class Log:
    """checks.jsonl: each check with what makes it readable without the database (its session,
    host, build, the labels of its baseline's nights, the A/A nights stored when it ran)."""

    def __init__(self, args):
        self.args = args
        self.file = open(os.path.join(args.out, "checks.jsonl"), "a")
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        self.session = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "commit": commit, "host": host_name(), "budget_s": args.budget,
                        "threshold_pct": args.threshold, "confirm_all": args.confirm_all}

    def write(self, report):
        labels = run_labels(self.args)
        report["session"] = self.session
        report["baseline_labels"] = [labels.get(u, "?") for u in report.get("baseline", [])]
        report["aa_nights_stored"] = len(stored_aa_nights(self.args))
        self.file.write(json.dumps(report) + "\n")
        self.file.flush()


def host_name():
    """The CPU, as the study tells its histories apart (check compares only runs of one host)."""
    fields = {}
    for line in open("/proc/cpuinfo"):
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return (f"{fields.get('model name', '?')} family {fields.get('cpu family', '?')} "
            f"model {fields.get('model', '?')}, {os.cpu_count()} CPUs")


def night(args, label, env=None):
    tb(args, "run", "--suite", SUITE, "--db", args.db, "--label", label, "-q", env=env)
    out = subprocess.run(["sqlite3", args.db, "SELECT uuid FROM runs WHERE suite_name = "
                          "'regression-study' ORDER BY started_at DESC, rowid DESC LIMIT 1"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def two_stage(args, run, baseline, env=None):
    started = time.time()
    r = tb(args, "check", "--db", args.db, "--run", run, "--baseline", baseline, "--format",
           "json", "--confirm-with", args.last_good, "--confirm-budget", str(args.budget),
           "--threshold", str(args.threshold), "-q", *(["--confirm-all"] if args.confirm_all else []),
           env=env, check=False)
    if r.returncode not in (0, 1, 3):
        # A check that failed (exit 2) is said and left out; the study goes on with the next night.
        print(f"check of {run} failed (exit {r.returncode}), left out:\n{r.stderr[-2000:]}",
              flush=True)
        return None
    report = json.loads(r.stdout)
    report["exit"] = r.returncode
    report["check_seconds"] = round(time.time() - started, 1)  # both stages, wall time
    return report


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tunebench", default="build/debian/tunebench")
    studies = os.path.join(os.environ.get("TUNEBENCH_CACHE", "/var/cache/tunebench"), "studies")
    p.add_argument("--db", default=os.path.join(studies, "regression-study.sqlite"),
                   help="the nights: this host's history (outside the clone)")
    p.add_argument("--out", default="bench/studies/regression-study",
                   help="folder of checks.jsonl, every session's checks (commit it)")
    p.add_argument("--nights", type=int, default=24, help="A/A nights checked")
    p.add_argument("--calibrate", type=int, default=8,
                   help="A/A nights that calibrate the floors first (a new history only)")
    p.add_argument("--checks", type=int, default=10, help="injected nights per slowdown")
    p.add_argument("--slowdowns", type=int, nargs="*", default=[5, 3], help="per cent")
    p.add_argument("--budget", type=float, default=480,
                   help="stage 2 seconds per flag (480: ci/nightly.sh's --confirm-budget)")
    p.add_argument("--threshold", type=float, default=5, help="per cent")
    p.add_argument("--confirm-all", action="store_true",
                   help="stage 2 for every benchmark, flagged or not (check --confirm-all); its "
                        "checks are tabled apart")
    p.add_argument("--seed", type=int, default=17)
    p.add_argument("--extend", action="store_true",
                   help="grow the study in --db/--out: its A/A nights are the history")
    p.add_argument("--recalibrate", action="store_true",
                   help="with --extend: calibrate the floors again on every A/A night stored")
    p.add_argument("--loaded", type=float, default=0.0,
                   help="fraction of checked nights run with the host loaded by a compile")
    p.add_argument("--load-jobs", type=int, default=1, help="compiler loops when loaded")
    p.add_argument("--summarize", action="store_true",
                   help="only print the table from --out's checks.jsonl")
    p.add_argument("--since", default="",
                   help="with --summarize: only sessions started at or after this UTC time "
                        "(ISO, e.g. 2026-12-02T19:00)")
    args = p.parse_args()
    if args.summarize:
        summarize(args, read_rows(args))
        return
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.db)), exist_ok=True)
    args.last_good = os.path.join(os.path.dirname(os.path.abspath(args.db)), "last-good-tunebench")
    shutil.copy2(args.tunebench, args.last_good)
    log = Log(args)
    started = time.time()

    def say(text):
        print(f"[{time.time() - started:6.0f}s] {text}", flush=True)

    # A new history (no A/A nights stored for this host): --calibrate nights calibrate the floors
    # first; then every night is checked as it runs.
    stored = stored_aa_nights(args) if os.path.exists(args.db) else []
    if args.extend and len(stored) < 5:
        sys.exit(f"--extend: {args.db} has {len(stored)} A/A nights; run the study without "
                 "--extend first")
    if args.extend and args.recalibrate:
        floors = tb(args, "calibrate", "--db", args.db, "--from", "label:aa")
        say(f"recalibrated on the {len(stored)} A/A nights stored:\n" + floors.stdout)
    if not args.extend:
        for i in range(args.calibrate):
            say(f"calibration night {i + 1}/{args.calibrate}: {night(args, 'aa')[:8]}")
        floors = tb(args, "calibrate", "--db", args.db, "--from", f"last:{args.calibrate}")
        say("calibrated:\n" + floors.stdout)
    extend(args, log, say)
    summarize(args, read_rows(args))


def stored_aa_nights(args):
    out = subprocess.run(["sqlite3", args.db, "SELECT uuid FROM runs WHERE suite_name = "
                          "'regression-study' AND label = 'aa' AND status = 'completed' "
                          "ORDER BY started_at, rowid"],
                         capture_output=True, text=True, check=True)
    return out.stdout.split()


def extend(args, log, say):
    """--nights A/A nights and --checks injected nights per slowdown in a random order, each
    checked against every A/A night before it (the same rule for both); a
    fraction --loaded of them with the host loaded by a compile."""
    aa = stored_aa_nights(args)  # main() saw to at least 5
    done = sum(1 for _ in open(os.path.join(args.out, "checks.jsonl")))
    rng = random.Random(args.seed + done)  # a new draw for every extension
    say(f"{len(aa)} A/A nights in this history, {done} checks stored")
    out = subprocess.run(["sqlite3", "-separator", " ", args.db, "SELECT DISTINCT experiment, arm "
                          f"FROM trials WHERE run_uuid = '{aa[-1]}' ORDER BY experiment, arm"],
                         capture_output=True, text=True, check=True)
    names = [tuple(line.split(" ", 1)) for line in out.stdout.splitlines()]
    # A/A and injected nights in a random order, so that a slow phase of the VM falls on both.
    planned = [("aa", 0)] * args.nights + [
        (f"slow{pct}", pct) for pct in args.slowdowns for _ in range(args.checks)]
    rng.shuffle(planned)
    loaded = set(rng.sample(range(len(planned)), round(args.loaded * len(planned))))
    for i, (phase, pct) in enumerate(planned):
        env = None
        if pct:
            experiment, arm = rng.choice(names)
            env = dict(os.environ, TUNEBENCH_TEST_SLOWDOWN=f"{experiment}/{arm}={pct}")
        tag = phase + ("-loaded" if i in loaded else "")
        load = CompileLoad(args.load_jobs) if i in loaded else None
        if load:
            load.__enter__()
        try:
            if pct:
                run = night(args, f"slow{pct}", env=env)
                report = two_stage(args, run, "label:aa", env=env)
                if report is not None:
                    report["injected"] = [experiment, arm]
            else:
                run = night(args, "aa")
                report = two_stage(args, run, "label:aa")
        finally:
            if load:
                load.__exit__()
        if report is None:
            continue
        report["phase"] = tag
        log.write(report)
        if pct:
            found = [b for b in report["benchmarks"] if [b["experiment"], b["arm"]] == report["injected"]]
            say(f"{tag}: {pct} % into {experiment} {arm}: {found[0]['status'] if found else '?'}")
        else:
            say(f"{tag} check {run[:8]}: exit {report['exit']}, "
                f"flagged {sum(b['flagged'] for b in report['benchmarks'])}, "
                f"regressions {sum(b['status'] == 'regression' for b in report['benchmarks'])}")


def read_rows(args):
    """checks.jsonl by phase: "aa", a slowdown (int), and the loaded ones as "aa-loaded" and
    "PCT-loaded"."""
    rows = {"aa": [], **{s: [] for s in args.slowdowns}}
    for line in open(os.path.join(args.out, "checks.jsonl")):
        r = json.loads(line)
        if r.get("session", {}).get("started", "") < getattr(args, "since", ""):
            continue
        phase = r["phase"]
        base = phase.removesuffix("-loaded")
        key = "aa" if base == "aa" else int(base[4:])
        if phase.endswith("-loaded"):
            key = f"{key}-loaded"
        rows.setdefault(key, []).append(r)
    return rows


def stated_se(c):
    """An A/B's stated standard error of its log ratio, from its interval at the level stage 2
    decided at (checks before the run-level decision: 95 %)."""
    z = statistics.NormalDist().inv_cdf(1 - (1 - c.get("confidence", 0.95)) / 2)
    return (math.log(c["hi"]) - math.log(c["lo"])) / (2 * z)


def stage1_flag(b):
    """Whether stage 1 alone flagged the benchmark: under --confirm-all every benchmark is sent
    to stage 2 ("flagged"); the check says stage 1's own flag ("stage1_flagged", since the
    session of 3 December 10:00). Older checks' records are read from stage 1's figures."""
    if "stage1_flagged" in b:
        return bool(b["stage1_flagged"])
    if "flag_ratio" in b and b.get("ratio"):
        return b["ratio"] > b["flag_ratio"] or b.get("history_status") == "regression"
    return bool(b["flagged"])


def run_labels(args):
    out = subprocess.run(["sqlite3", "-separator", " ", args.db, "SELECT uuid, label FROM runs"],
                         capture_output=True, text=True, check=True)
    return dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)


def summarize(args, rows):
    print(f"\nchecks in {args.out}/checks.jsonl, by session:\n")
    print("| session (UTC) | build | host | stage 2 for | stage 2 decides | stage 2 budget | "
          "A/A nights | checks |\n|---|---|---|---|---|---|---|---|")
    sessions = {}
    for r in (r for rs in rows.values() for r in rs):
        s = r.get("session", {"started": "before sessions were recorded"})
        key = s["started"]
        entry = sessions.setdefault(key, [s, 0, 0, set()])
        entry[1] = max(entry[1], r.get("aa_nights_stored", 0))
        entry[2] += 1
        entry[3].add(rule(r))
    said = {"95": "95 % per A/B", "run": "at the run's level", "looks": "run's level, at looks"}
    for key in sorted(sessions):
        s, nights, n, rules = sessions[key]
        print(f"| {key} | {s.get('commit', '?')} | {s.get('host', '?')} | "
              f"{'every benchmark' if s.get('confirm_all') else 'flagged ones'} | "
              f"{', '.join(said[x] for x in sorted(rules))} | "
              f"{s.get('budget_s', '?')} s | {nights or '?'} | {n} |")
    # An A/A check is one only if its baseline window held A/A nights alone: the first checks of an
    # extension look back over the injected nights of the session before. Checks say their
    # baseline's labels; older ones are looked up in the database.
    labels = run_labels(args) if os.path.exists(args.db) else {}

    def window_labels(r):
        return r.get("baseline_labels") or [labels.get(u, "aa") for u in r.get("baseline", [])]

    for key in [k for k in rows if str(k).startswith("aa")]:
        clean = [r for r in rows[key] if all(l == "aa" for l in window_labels(r))]
        if len(clean) < len(rows[key]):
            print(f"{key}: {len(rows[key]) - len(clean)} check(s) left out, their baseline held "
                  f"injected nights")
        rows[key] = clean
    # Checks whose stage 2 took only the flagged benchmarks, then those with --confirm-all (every
    # benchmark A/B'd), apart: they answer different questions.
    # And checks whose stage 2 decided at the run's level (the false-alarm rate split over its
    # A/Bs, since the confirmation carries its "confidence") apart from those at 95 % per A/B.
    # And since 3 December 16:00 those whose A/Bs also stopped at the first of their looks that
    # decided (the confirmations say their "looks").
    headings = {"95": ", deciding at 95 % per A/B:",
                "run": ", deciding at the run's level (1 % false alarms per run split over its "
                       "A/Bs):",
                "looks": ", deciding at the run's level at looks (1 % false alarms per run split "
                         "over its A/Bs and each A/B's looks: 16, 32, … workers and its last; an "
                         "A/B stops at the first look that decides):"}
    for level in headings:
        for confirm_all in (False, True):
            mode = {k: [r for r in v if bool(r.get("session", {}).get("confirm_all")) == confirm_all
                        and rule(r) == level]
                    for k, v in rows.items()}
            if any(mode.values()):
                summarize_mode(args, mode, confirm_all, headings[level])


def summarize_mode(args, mode, confirm_all, heading):
    """One table group: checks of one stage-2 mode (flagged or all) and one decision rule."""
    print("\n**" + ("With --confirm-all** (stage 2 for every benchmark, flagged or not)"
                    if confirm_all else "Stage 2 for the flagged benchmarks**") + heading)
    plain = {k: v for k, v in mode.items() if not str(k).endswith("-loaded")}
    plain.setdefault("aa", [])
    for pct in args.slowdowns:
        plain.setdefault(pct, [])
    summarize_group(args, plain, "", args.slowdowns)
    loaded = {k.removesuffix("-loaded"): v for k, v in mode.items()
              if str(k).endswith("-loaded") and v}
    if loaded:
        print("\nWith the host loaded by a compile (--loaded):")
        loaded = {("aa" if k == "aa" else int(k)): v for k, v in loaded.items()}
        loaded.setdefault("aa", [])
        summarize_group(args, loaded, "loaded ", [p for p in args.slowdowns if p in loaded])


def rule(r):
    """How the check's stage 2 decided: "looks" (at the run's level, each A/B stopping at the
    first of its looks that decides: its confirmations say their looks), "run" (at the run's
    level, sampled to the target: they say their confidence), "95" (each A/B at 95 %, before)."""
    confirmations = [b.get("confirmation") or {} for b in r["benchmarks"]]
    if any("looks" in c for c in confirmations):
        return "looks"
    return "run" if any("confidence" in c for c in confirmations) else "95"


def run_level(r):
    """Whether the check's stage 2 decided at the run's level (with or without looks); checks
    before that decided each A/B at 95 %."""
    return rule(r) != "95"


def redecided(r, threshold_pct, false_alarm=0.01):
    """A check's answers had its stage 2 decided at the run's level: each A/B's interval widened
    from its 95 % to 1 − 2·false_alarm/A/Bs (normal quantiles) on the same data. Sampled to the
    95 % target, so with less power than stage 2 at that level would have; the false-alarm side
    is the rule's own (the stopping never looked at the estimate)."""
    confirmed = [b for b in r["benchmarks"] if (b.get("confirmation") or {}).get("hi")]
    z = statistics.NormalDist().inv_cdf(1 - false_alarm / max(len(confirmed), 1))
    out = {}
    for b in r["benchmarks"]:
        c = b.get("confirmation") or {}
        if not c.get("hi"):
            out[(b["experiment"], b["arm"])] = b["status"]
            continue
        log, se = math.log(c["ratio"]), stated_se(c)
        lo, hi = math.exp(log - z * se), math.exp(log + z * se)
        out[(b["experiment"], b["arm"])] = ("no regression" if hi < 1 + threshold_pct / 100 else
                                            "regression" if lo > 1 else "unknown")
    return out


def mean_ratio(logs):
    """The geometric mean ratio of log ratios, with a normal 95 % interval from their spread
    where there are two or more."""
    mean = sum(logs) / len(logs)
    if len(logs) < 2:
        return f"{math.exp(mean):.4f}"
    half = 1.96 * math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1) / len(logs))
    return f"{math.exp(mean):.4f} [{math.exp(mean - half):.4f}, {math.exp(mean + half):.4f}]"


# Long (~120 lines) because it prints the study's whole summary table for one group of checks, one
# row after another in the order docs/studies/regression-study.md shows them; each row is a few
# lines of counting over the same checks.
def summarize_group(args, rows, prefix, slowdowns):
    print(f"\n| {prefix}checks | result (95 % interval) |\n|---|---|")
    aa = rows["aa"]
    bench_checks = sum(len(r["benchmarks"]) for r in aa)
    false = sum(b["status"] == "regression" for r in aa for b in r["benchmarks"])
    runs_false = sum(any(b["status"] == "regression" for b in r["benchmarks"]) for r in aa)
    flagged = sum(stage1_flag(b) for r in aa for b in r["benchmarks"])
    unknown = sum(b["status"] == "unknown" for r in aa for b in r["benchmarks"])
    print(f"| A/A: false alarms per benchmark check | {rate(false, bench_checks)} |")
    print(f"| A/A: false alarms per run | {rate(runs_false, len(aa))} |")
    print(f"| A/A: flagged by stage 1 (sent to stage 2) | {rate(flagged, bench_checks)} |")
    print(f"| A/A: unknown after stage 2 | {rate(unknown, bench_checks)} |")
    for pct in slowdowns:
        rs = rows[pct]
        hit = flag = 0
        others = other_false = 0
        for r in rs:
            for b in r["benchmarks"]:
                if [b["experiment"], b["arm"]] == r["injected"]:
                    hit += b["status"] == "regression"
                    flag += stage1_flag(b)
                else:
                    others += 1
                    other_false += b["status"] == "regression"
        print(f"| {pct} % injected: confirmed as regression | {rate(hit, len(rs))} |")
        print(f"| {pct} % injected: flagged by stage 1 | {rate(flag, len(rs))} |")
        print(f"| {pct} % nights: other benchmarks called regressions | {rate(other_false, others)} |")
    # Checks decided at 95 % per A/B: what the run-level rule would have said on the same A/Bs.
    checked = [r for key in ["aa", *slowdowns] for r in rows.get(key, [])]
    if checked and not any(run_level(r) for r in checked) and any(
            (b.get("confirmation") or {}).get("hi") for r in checked for b in r["benchmarks"]):
        answers = {id(r): redecided(r, args.threshold) for r in checked}
        false = sum(v == "regression" for r in aa for v in answers[id(r)].values())
        runs_false = sum(any(v == "regression" for v in answers[id(r)].values()) for r in aa)
        unknown = sum(v == "unknown" for r in checked for v in answers[id(r)].values())
        print(f"| re-decided at the run's level on the same A/Bs (1 % per run over each check's "
              f"A/Bs; sampled for 95 %, so with less power): A/A false alarms per benchmark "
              f"check / per run | {rate(false, bench_checks)} / {rate(runs_false, len(aa))} |")
        for pct in slowdowns:
            rs = rows[pct]
            hit = sum(answers[id(r)][tuple(r["injected"])] == "regression" for r in rs)
            others = [v for r in rs for k, v in answers[id(r)].items() if list(k) != r["injected"]]
            print(f"| re-decided: {pct} % injected confirmed / other benchmarks called "
                  f"regressions | {rate(hit, len(rs))} / "
                  f"{rate(sum(v == 'regression' for v in others), len(others))} |")
        total = sum(len(answers[id(r)]) for r in checked)
        print(f"| re-decided: unknown | {rate(unknown, total)} |")
    # Stage 2's A/Bs of every check of this group: how far they got.
    abs_ = [b["confirmation"] for key in ["aa", *slowdowns] for r in rows.get(key, [])
            for b in r["benchmarks"]
            if b.get("flagged") and (b.get("confirmation") or {}).get("half_width")]
    if abs_:
        widths = sorted(100 * c["half_width"] for c in abs_)
        workers = sorted(c["workers"] for c in abs_)
        print(f"| stage 2's A/Bs: half-width at the level decided on (min / median / max), "
              f"resident process pairs "
              f"(median, max) | ±{widths[0]:.1f} / ±{widths[len(widths) // 2]:.1f} / "
              f"±{widths[-1]:.1f} %, {workers[len(workers) // 2]} and {workers[-1]} pairs, "
              f"{len(abs_)} A/Bs |")
    # Stage 2's interval against the spread of its answers: the A/Bs of benchmarks that were not
    # slowed (every A/A benchmark, the others of an injected night) measure the ratio 1, so their
    # log ratios divided by their stated standard errors should spread with sd 1.
    not_slowed = [(f"{b['experiment']}/{b['arm']}", b["confirmation"])
                  for key in ["aa", *slowdowns] for r in rows.get(key, []) for b in r["benchmarks"]
                  if (b.get("confirmation") or {}).get("ratio") and b["confirmation"].get("hi")
                  and [b["experiment"], b["arm"]] != r.get("injected")]
    null = [(math.log(c["ratio"]), stated_se(c)) for _, c in not_slowed]
    if len(null) >= 3:
        logs = [x for x, _ in null]
        mean = sum(logs) / len(logs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
        z = [x / se for x, se in null if se > 0]
        zsd = math.sqrt(sum(v * v for v in z) / len(z))
        print(f"| stage 2's A/Bs of benchmarks not slowed: mean ratio, spread (sd) of the ratios, "
              f"their stated standard error (median), sd of ratio/stated error (1 if honest) | "
              f"{math.exp(mean):.4f}, {100 * sd:.2f} %, {100 * sorted(se for _, se in null)[len(null) // 2]:.2f} %, "
              f"{zsd:.2f} over {len(null)} A/Bs |")
        # Where an A/B stops at the first look that decides (stage 2 at looks), the look at which
        # it stopped selects its ratio: an A/A stops early on "no regression" when its first
        # workers happen to lean fast, and runs on when they lean slow. So stopped ratios lean
        # below 1 even with arms alike, most at the early looks; grouped by where they stopped,
        # a bias of one build's arm would show at every look, the selection only at the early
        # ones. What stopping must not spoil is the interval: the share of these intervals (at
        # the level decided on) that hold 1, which should be at least that level.
        looks = {}
        for (x, _), (_, c) in zip(null, not_slowed):
            # by look (16, 32, … process pairs); a pair that failed leaves one fewer
            looks.setdefault(1 << max(c.get("workers", 0) - 1, 1).bit_length(), []).append(x)
        print("| the same A/Bs by the look they stopped at (process pairs, up to): mean ratio "
              "[95 %] (A/Bs) | "
              + "; ".join(f"{w}: {mean_ratio(v)} ({len(v)})" for w, v in sorted(looks.items()))
              + " |")
        held = sum(c["lo"] <= 1 <= c["hi"] for _, c in not_slowed)
        levels = [c.get("confidence", 0.95) for _, c in not_slowed]
        print(f"| the same A/Bs whose interval at the level decided on holds 1 (their levels "
              f"{100 * min(levels):.2f}–{100 * max(levels):.2f} %) | "
              f"{rate(held, len(not_slowed))} |")
    # The same A/Bs per benchmark: an A/A of two identical builds should centre on 1. A mean away
    # from 1 (its interval from the A/Bs' spread) is a fixed bias of one build's arm where every
    # A/B sampled to one target; where they stopped at looks, the selection above pulls it below
    # 1 too (read the row by stopping point). The spread about that mean over the stated errors
    # says whether the rest is honest.
    per = {}
    for name, x in zip((name for name, _ in not_slowed), null):
        per.setdefault(name, []).append(x)
    for name, v in sorted(per.items()):
        if len(v) < 3:
            continue
        logs = [x for x, _ in v]
        mean = sum(logs) / len(logs)
        about = math.sqrt(sum(((x - mean) / se) ** 2 for x, se in v) / (len(v) - 1))
        print(f"| {name}: not-slowed A/Bs' mean ratio (95 % interval), sd of ratio/stated error "
              f"about that mean | {mean_ratio(logs)}, {about:.2f} over {len(v)} A/Bs |")
    seconds = sorted(r["check_seconds"] for key in ["aa", *slowdowns] for r in rows.get(key, [])
                     if "check_seconds" in r)
    if seconds:
        print(f"| a check's wall time, both stages (min / median / max) | {seconds[0]:.0f} / "
              f"{seconds[len(seconds) // 2]:.0f} / {seconds[-1]:.0f} s over {len(seconds)} checks |")
    bases = {}
    for r in aa:
        for b in r["benchmarks"]:
            bases[b["basis"]] = bases.get(b["basis"], 0) + 1
    print(f"\nbasis chosen in the A/A checks: {bases}")


if __name__ == "__main__":
    main()
