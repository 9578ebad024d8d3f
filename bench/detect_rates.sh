#!/usr/bin/env bash
# Measures tunebench check's false-alarm and detection rates on this machine.
#   bench/detect_rates.sh [RUNS] [OUT_DIR]     default 16 runs into build/detect-rates/
# 1. RUNS A/A runs of suites/studies/detect_suite.json (4 benchmarks) into OUT_DIR/aa.sqlite;
# 2. tunebench_detect_rates: every run from the 6th checked against the 5 before it, with floors
#    from all the other runs (leave one out), as an A/A run (false alarms) and with 3, 5 and 10 %
#    slowdowns injected into its data (detection), with no minimum effect and with check's 5 %;
# 3. real slowdowns: floors from all RUNS runs (tunebench calibrate); for 3, 5 and 10 %, a copy
#    of the database gets one more run with the test-only slow:PCT fault and `tunebench check
#    --baseline last:5 --threshold 0` judges it (exit 1 = found).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-16}
out=${2:-build/detect-rates}
tb=build/debian/tunebench
rates=build/debian/tunebench_detect_rates
mkdir -p "$out"
rm -f "$out"/*.sqlite*
db=$out/aa.sqlite
for i in $(seq 1 "$runs"); do
  echo "[detect-rates] A/A run $i of $runs"
  $tb run --suite suites/studies/detect_suite.json --db "$db" --label aa -q
done
$tb calibrate --db "$db" --from last:$runs > /dev/null  # the floors check uses for the real slowdowns
$rates "$db" --calibration 8 --baseline 5 --threshold 0
$rates "$db" --calibration 8 --baseline 5 --threshold 5
for pct in 3 5 10; do
  copy=$out/slow$pct.sqlite
  cp "$db" "$copy"
  .venv/bin/python - "$pct" > "$out/slow$pct.json" <<'PY'
import json, sys
suite = json.load(open("suites/studies/detect_suite.json"))
suite["defaults"].setdefault("settings", {})["fault"] = f"slow:{sys.argv[1]}"
print(json.dumps(suite))
PY
  TUNEBENCH_TEST_FAULTS=1 $tb run --suite "$out/slow$pct.json" --db "$copy" --label slow -q
  status=0
  $tb check --db "$copy" --baseline last:5 --threshold 0 --no-store --verbose > "$out/slow$pct.check" || status=$?
  found=$(grep -c " regression" "$out/slow$pct.check" || true)
  echo "real slow:$pct run: check exit $status, $found of 4 benchmarks called a regression"
done
