#!/usr/bin/env bash
# The nightly job: set up, build, run a suite labelled "nightly", check it against the baseline
# window of earlier nights on this host and software, render the report, and exit with check's
# status (0 no regression, 1 regression, 2 usage or data error).
#
#   ci/nightly.sh [--suite FILE] [--db FILE] [--out DIR] [--baseline last:N] [--threshold PCT]
#                 [--calibrate N] [--skip-setup]
#
# --calibrate N  first make N A/A runs of the suite and store its noise floors (do this once per
#                host and software, e.g. after a LibTorch upgrade; check is quieter with them).
# The first night has no baseline: it is stored, reported, and the job passes saying so.
# Writes DIR/check.md (the Markdown check, also appended to $GITHUB_STEP_SUMMARY when set) and
# the report (DIR/index.html, DIR/summary.md).
set -euo pipefail
cd "$(dirname "$0")/.."

suite=suites/cpu-nightly.json
[[ -f $suite ]] || suite=suites/smoke.json
db=results/nightly.sqlite
out=reports/nightly
baseline=last:5
threshold=5
calibrate=0
setup=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --suite) suite=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --threshold) threshold=$2; shift 2 ;;
    --calibrate) calibrate=$2; shift 2 ;;
    --skip-setup) setup=0; shift ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "ci/nightly.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [[ ! -f $suite ]]; then
  echo "ci/nightly.sh: no suite file $suite" >&2
  exit 2
fi

if [[ $setup == 1 ]]; then
  bash ci/setup.sh
  bash ci/build.sh debian
fi
tb=build/debian/tunebench
mkdir -p "$out"

if [[ $calibrate -gt 0 ]]; then
  echo "[nightly] calibrating: $calibrate A/A runs of $suite"
  $tb calibrate --suite "$suite" --db "$db" --runs "$calibrate"
fi

echo "[nightly] running $suite into $db"
run_status=0
$tb run --suite "$suite" --db "$db" --label nightly || run_status=$?
if [[ $run_status == 2 ]]; then
  echo "[nightly] the run could not start (exit 2)" >&2
  exit 2
fi

echo "[nightly] checking against $baseline (threshold $threshold %)"
check_status=0
$tb check --db "$db" --baseline "$baseline" --threshold "$threshold" --format md \
  > "$out/check.md" 2> "$out/check.err" || check_status=$?
if [[ $check_status == 2 ]] && grep -q "no baseline for run" "$out/check.err"; then
  {
    echo "**tunebench check**: first night of this suite on this host and software — stored as"
    echo "the baseline; nothing to compare with yet."
  } > "$out/check.md"
  check_status=0
elif [[ $check_status == 2 ]]; then
  cat "$out/check.err" >&2
fi
cat "$out/check.md"
if [[ -n ${GITHUB_STEP_SUMMARY:-} ]]; then
  cat "$out/check.md" >> "$GITHUB_STEP_SUMMARY"
fi

echo "[nightly] report"
$tb report --db "$db" --out "$out" || echo "[nightly] the report failed; the check stands" >&2

if [[ $check_status == 0 && $run_status != 0 ]]; then
  echo "[nightly] no regression, but the run ended with failed trials (exit $run_status)" >&2
  exit "$run_status"
fi
exit "$check_status"
