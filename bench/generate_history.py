#!/usr/bin/env python3
"""Generate a synthetic tunebench results database: a nightly history for reports and tests.

    generate_history.py --out PATH [--runs 365] [--trials 100] [--samples 20] [--hosts 1] [--seed 1]

Makes a new database through tunebench (no copy of its schema here): `--runs` nights of a nightly
suite per host (`--trials` trials per run, `--samples` samples per trial) are written as run
records and stored by `tunebench import`, which stores each as a finished run and computes its
effects, as a real run's end does. The binary is $TUNEBENCH_BINARY, else build/debian/tunebench.
This script only synthesises samples (numpy's generator, seeded); it computes no statistic.

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
- what `tunebench calibrate --from last:5` stores (noise floors of the latest run's host and
  software, its last 5 completed runs taken as A/A runs) and what `tunebench check --baseline
  last:5 --across-software` finds and stores for every run (--no-check skips it): regressions and
  step changes at the slowdowns.
Deterministic for a given --seed. The file must not exist yet (nothing is overwritten).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


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
    # A positive control: the ON arm 3 % slower by construction ("slowdown": 3).
    {"name": "slow3.no_grad.resnet50-full-infer", "knob": "positive_control", "model": "resnet50",
     "preset": "full", "mode": "infer", "batch": 32, "time": 0.36, "ratio": 1.03,
     "rss": 700 * MiB, "rss_ratio": 1.0},
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
    if knob == "positive_control":
        return [("off", {**base, "no_grad": True}, 1.0),
                ("on", {**base, "no_grad": True, "slowdown": 3}, experiment["ratio"])]
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
        elif x["knob"] == "positive_control":
            entry.update({"slowdown": 3, "knob": "no_grad"})
        else:
            entry["knob"] = x["knob"]
        entries.append(entry)
    used = {f for x in experiments for f in x.get("factors", [])}
    used |= {x["knob"] for x in experiments if x["knob"] in CLAIMS}
    used |= {"no_grad"} if any(x["knob"] in ("aa", "positive_control") for x in experiments) else set()
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


def software_fingerprint(version: str, revision: str) -> dict:
    return {"compiler": "12.2.0", "cuda": "none", "cudnn": "none",
            "git_revision": revision, "libtorch_build": f"LibTorch {version} (CPU only)",
            "libtorch_version": version, "tunebench": "0.1.0"}


def host_fingerprint(host: dict) -> dict:
    return {"cores": host["cores"], "cpu_model": host["cpu_model"], "gpu": "none",
            "gpu_driver": "none", "gpu_memory_bytes": 0, "hostname": host["hostname"],
            "memory_bytes": host["memory_bytes"], "numa_nodes": host["numa_nodes"],
            "sockets": host["sockets"]}


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


def iso(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def tunebench_binary() -> str:
    """$TUNEBENCH_BINARY, else the debian build's binary beside this checkout."""
    build = Path(__file__).resolve().parent.parent / "build" / "debian"
    default = next((p for p in (build / "tunebench", build / "app" / "tunebench") if p.is_file()),
                   build / "tunebench")
    return os.environ.get("TUNEBENCH_BINARY") or str(default)


def tunebench(*args: str, ok=(0,)) -> subprocess.CompletedProcess:
    done = subprocess.run([tunebench_binary(), *args], capture_output=True, text=True)
    if done.returncode not in ok:
        raise RuntimeError(f"tunebench {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done


def night_records(rng, experiments: list[dict], suite: dict, night: int, runs: int, trials: int,
                  samples: int, host_index: int, host: dict, seed: int, start: datetime.datetime):
    """One host's run of one night as a run record (storage::import_records' format)."""
    version = "1.13.0" if night < runs // 2 else "2.1.0"
    revision = revision_of(night, runs)
    started = start + datetime.timedelta(days=night, minutes=47 * host_index)
    duration = datetime.timedelta(seconds=int(trials * samples * 0.9) + 60)
    run_uuid = f"{seed:04x}{night:04x}-{host_index:04x}-4000-8000-{rng.integers(1 << 47):012x}"
    quiet = bool(rng.random() > 0.03)
    state = {"cpu_governor": "performance", "load_average": [0.05, 0.1, 0.1],
             "other_running_processes": 0, "quiet": quiet, "turbo": "off",
             "warnings": [] if quiet else ["load average 3.20 over the last minute"]}
    night_factor = float(rng.lognormal(0.0, 0.012))
    records, failures, sequence = [], 0, 0
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
            base = x["time"] * host["speed"] * step_factor(x, night, runs) * ratio
            process_factor = float(rng.lognormal(0.0, 0.015))
            failed = rng.random() < 0.002
            rss_ratio = x["rss_ratio"] if arm != "off" else 1.0
            rss = int(x["rss"] * rss_ratio * rng.normal(1.0, 0.002))
            if failed:
                failures += 1
                status, error, values, ips = "failed", "worker timed out after 600 s", [], 0.0
            else:
                values = base * night_factor * process_factor * rng.lognormal(0.0, 0.01, samples)
                outliers = rng.random(samples) < 0.01
                values[outliers] *= 1.3
                status, error = "ok", ""
                ips = x["batch"] / (base * night_factor * process_factor)  # the trial's true rate
            spec = {"run_uuid": run_uuid, "experiment": x["name"], "knob": x["knob"], "arm": arm,
                    "settings": settings, "model": {"name": x["model"], "preset": x["preset"], "options": {}},
                    "mode": x["mode"], "batch": x["batch"], "warmup": 5, "samples": samples,
                    "iterations": 10, "timeout_s": 600.0, "process_index": process, "sequence": sequence,
                    "seed": int(rng.integers(1 << 62))}
            result = {"status": status, "error": error, "sample_seconds": [float(v) for v in values],
                      "probe_seconds": 0.0101 * float(rng.lognormal(0, 0.01)),
                      "peak_rss_bytes": 0 if failed else rss, "page_faults_per_iteration": 12.0,
                      "device_peak_bytes": -1, "items_per_second": ips, "check_value": 0.5,
                      "evidence": {}, "worker_stderr": ""}
            records.append({"spec": spec, "result": result})
            sequence += 1
    run = {"uuid": run_uuid, "suite_name": "nightly", "suite_hash": sha256(dump(suite["suite"])),
           "suite": suite, "label": "nightly", "git_revision": revision,
           "command_line": "tunebench run --suite suites/nightly.json --label nightly",
           "started_at": iso(started), "host": host_fingerprint(host),
           "software": software_fingerprint(version, revision), "host_state": state, "host_quiet": quiet}
    return {"run": run, "status": "completed with failures" if failures else "completed",
            "ended_at": iso(started + duration), "trials": records}


def generate(path: Path, runs: int, trials: int, samples: int, hosts: int, seed: int,
             check: bool = True) -> dict:
    """Make the history in a new file through tunebench: the runs as records (`tunebench
    import`, which stores each as a finished run and computes its effects), then what
    `tunebench calibrate --from last:5` and a nightly `tunebench check --across-software`
    store (noise floors of the latest run's host and software; findings of every run)."""
    rng = np.random.default_rng(seed)
    experiments = plan_suite(trials)
    suite = suite_json(experiments, samples)
    chosen_hosts = HOSTS[:hosts]
    start = datetime.datetime(2025, 1, 1, 2, 0, tzinfo=datetime.timezone.utc)
    totals = {"runs": 0, "trials": 0, "samples": 0, "noise_floors": 0, "findings": 0}
    uuids = []
    with tempfile.TemporaryDirectory() as scratch:
        records = Path(scratch) / "runs.jsonl"
        with records.open("w", encoding="utf-8") as out:
            for night in range(runs):
                for host_index, host in enumerate(chosen_hosts):
                    record = night_records(rng, experiments, suite, night, runs, trials, samples,
                                           host_index, host, seed, start)
                    out.write(json.dumps(record) + "\n")
                    uuids.append(record["run"]["uuid"])
                    totals["runs"] += 1
                    totals["trials"] += len(record["trials"])
                    totals["samples"] += sum(len(t["result"]["sample_seconds"]) for t in record["trials"])
        tunebench("import", str(records), "--db", str(path))
    if runs >= 3:
        floors = tunebench("calibrate", "--from", "last:5", "--db", str(path), "-q", ok=(0, 1, 2))
        totals["noise_floors"] = max(0, len(floors.stdout.strip().splitlines()) - 2) if floors.returncode == 0 else 0
    if check:
        for uuid in uuids[hosts:]:
            found = tunebench("check", "--run", uuid, "--baseline", "last:5", "--across-software",
                              "--format", "json", "--db", str(path), ok=(0, 1, 2, 3))
            if found.returncode != 2:
                totals["findings"] += 1 if found.returncode == 1 else 0
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
    parser.add_argument("--no-check", action="store_true",
                        help="do not run tunebench check on every run (faster; no findings)")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.trials < 4 or args.samples < 1:
        parser.error("--runs must be >= 1, --trials >= 4 and --samples >= 1")
    if args.out.exists():
        print(f"generate_history.py: error: {args.out} exists; choose a new path", file=sys.stderr)
        return 2
    try:
        totals = generate(args.out, args.runs, args.trials, args.samples, args.hosts, args.seed,
                          check=not args.no_check)
    except (OSError, RuntimeError) as error:
        print(f"generate_history.py: error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {totals['runs']} runs, {totals['trials']} trials, "
          f"{totals['samples']} samples, {totals['noise_floors']} noise floors, "
          f"{totals['findings']} runs with findings of check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
