#!/usr/bin/env bash
# Machine time to a ±2 % interval on the same A/A (ResNet-50 at 96x96, batch 4, inference, every
# core): tunebench's paired engine (`tunebench run` of suites/studies/engine_aa.json, wall time of
# the whole command: plan, worker start-up, warm-up, blocks, store) against a minimal per-step
# alternation loop (bench/alternation_probe.cpp, wall time of all its workers). Rounds in ABBA
# order (engine, probe, probe, engine) so a drifting host weighs on both alike; prints each
# measurement and the ratio of the medians, engine over probe.
#   bench/engine_vs_probe.sh [ROUNDS] [OUT_DIR] [SUITE]
#     default 1 round (2 of each) into build/engine-vs-probe/, the engine on
#     suites/studies/engine_aa.json (another SUITE: the same A/A with other blocks, say)
#   PROBE_ARGS  more options for the probe, to match another SUITE's model (e.g. "--batch 1" for
#     suites/studies/engine_aa_15ms.json)
# A quiet host only (/proc/pressure/cpu): nothing else on the cores.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-1}
out=${2:-build/engine-vs-probe}
suite=${3:-suites/studies/engine_aa.json}
tb=build/debian/tunebench
probe=build/debian/tunebench_alternation_probe
mkdir -p "$out"
rm -f "$out"/engine.sqlite* "$out"/results.jsonl

engine() {
  local start end
  start=$(date +%s.%N)
  $tb run --suite "$suite" --db "$out/engine.sqlite" --label engine-vs-probe -q
  end=$(date +%s.%N)
  $tb show latest --db "$out/engine.sqlite" --json | python3 -c '
import json, sys
run = json.load(sys.stdin)
stop = run["sampling"]["paired"][0]
print(json.dumps({"who": "engine", "seconds": round(float(sys.argv[2]) - float(sys.argv[1]), 1),
                  "workers": stop["workers"], "half_width": stop["half_width"],
                  "settled": stop["stop"].startswith("settled"),
                  "worker_seconds": stop["seconds"]}))' "$start" "$end" | tee -a "$out/results.jsonl"
}
probe() {
  # shellcheck disable=SC2086  # PROBE_ARGS is a list of options
  $probe --target 0.02 --max-workers 40 ${PROBE_ARGS:-} | python3 -c '
import json, sys
r = json.loads(sys.stdin.read()); r["who"] = "probe"; print(json.dumps(r))' | tee -a "$out/results.jsonl"
}
for _ in $(seq 1 "$rounds"); do
  engine
  probe
  probe
  engine
done
python3 - "$out/results.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(who, key):
    return statistics.median(r[key] for r in rows if r["who"] == who)
for who in ("engine", "probe"):
    xs = [r for r in rows if r["who"] == who]
    print(f"{who}: {len(xs)} runs, median {med(who, 'seconds'):.0f} s to "
          f"±{100 * med(who, 'half_width'):.1f} % with {med(who, 'workers'):.0f} workers; "
          f"settled {sum(r['settled'] for r in xs)} of {len(xs)}")
# A run that stopped off ±2 % (wider or narrower at its last look) is put on the same footing by
# width ∝ 1/√time: seconds · (half-width / 2 %)², the time it would have taken to reach ±2 %.
for r in rows:
    r["at_2pct"] = r["seconds"] * (r["half_width"] / 0.02) ** 2
print(f"engine/probe machine time: {med('engine', 'seconds') / med('probe', 'seconds'):.2f} as run, "
      f"{med('engine', 'at_2pct') / med('probe', 'at_2pct'):.2f} scaled to ±2 % "
      f"(engine {med('engine', 'at_2pct'):.0f} s, probe {med('probe', 'at_2pct'):.0f} s)")
PY
