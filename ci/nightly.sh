#!/usr/bin/env bash
# The nightly job: set up, build, run a suite labelled "nightly", check it in two stages, render
# the report, and exit with check's status (0 no regression, 1 regression, 2 usage or data error,
# 3 unknown: a flagged benchmark's A/B could not decide within its budget).
#
#   ci/nightly.sh [--suite FILE] [--db FILE] [--out DIR] [--baseline last:N] [--threshold PCT]
#                 [--calibrate N] [--last-good DIR] [--confirm-budget S] [--confirm-all]
#                 [--tunebench FILE] [--skip-setup]
#
# Stage 1 compares every benchmark with the baseline window (on the quieter of its absolute and
# reference-relative histories) and flags leniently; stage 2 runs each flagged benchmark again as
# a paired A/B of the last-good build against tonight's (tunebench check --confirm-with).
# --last-good DIR  where the last build that passed is kept (DIR/tunebench; default
#                  results/last-good). A night that passes replaces it; a night without one runs
#                  stage 1 alone and keeps its build. The example workflow caches it beside the
#                  database.
# --confirm-budget S  seconds of workers per flagged benchmark in stage 2 (default 480).
# --confirm-all  send every benchmark to stage 2, flagged or not (a release gate). Stage 1 flags
#                only part of the 5 % slowdowns on a noisy host, stage 2 confirms nearly all it
#                gets (docs/studies/regression-study.md); each benchmark costs an A/B (~3 min on
#                the 2-core VM of that study), so this suits small suites.
# --tunebench FILE  the build to run and keep (default build/debian/tunebench, which the setup
#                builds; with --skip-setup, whatever is there).
# --calibrate N  first make N A/A runs of the suite and store its noise floors (do this once per
#                host and software, e.g. after a LibTorch upgrade; check is quieter with them).
# The first night has no baseline: it is stored, reported, and the job passes saying so. The
# history spans tunebench's own commits (a change there is what the check looks for); another
# LibTorch, compiler or LibTorch build starts a new one (and needs its own --calibrate).
# Writes DIR/check.md (the Markdown check, also appended to $GITHUB_STEP_SUMMARY when set) and
# the report (DIR/report.html, DIR/summary.md).
set -euo pipefail
cd "$(dirname "$0")/.."

suite=suites/cpu-nightly.json
[[ -f $suite ]] || suite=suites/smoke.json
db=results/nightly.sqlite
out=reports/nightly
baseline=last:5
threshold=5
calibrate=0
last_good=results/last-good
confirm_budget=480
confirm_all=0
tb=build/debian/tunebench
setup=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --suite) suite=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --threshold) threshold=$2; shift 2 ;;
    --calibrate) calibrate=$2; shift 2 ;;
    --last-good) last_good=$2; shift 2 ;;
    --confirm-budget) confirm_budget=$2; shift 2 ;;
    --confirm-all) confirm_all=1; shift ;;
    --tunebench) tb=$2; shift 2 ;;
    --skip-setup) setup=0; shift ;;
    -h | --help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;   # the comment block above
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
if [[ ! -x $tb ]]; then
  echo "ci/nightly.sh: no tunebench executable at $tb (build it: bash ci/build.sh debian)" >&2
  exit 2
fi
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

stage2=()
if [[ -x $last_good/tunebench ]]; then
  stage2=(--confirm-with "$last_good/tunebench" --confirm-budget "$confirm_budget")
  confirmed=flags
  if [[ $confirm_all == 1 ]]; then
    stage2+=(--confirm-all)
    confirmed="every benchmark"
  fi
  echo "[nightly] checking against $baseline (threshold $threshold %), $confirmed confirmed" \
    "against the last-good build in $last_good"
else
  echo "[nightly] checking against $baseline (threshold $threshold %); no last-good build in" \
    "$last_good yet: stage 1 only"
  if [[ $confirm_all == 1 ]]; then
    echo "[nightly] --confirm-all needs a last-good build: tonight is stage 1 only, and a night" \
      "that passes keeps its build for the next" >&2
  fi
fi
# The Markdown check to check.md; its messages (stage 2's progress) shown as they come and kept.
set +e
$tb check --db "$db" --baseline "$baseline" --threshold "$threshold" --format md "${stage2[@]}" \
  2>&1 > "$out/check.md" | tee "$out/check.err" >&2
check_status=${PIPESTATUS[0]}
set -e
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

# A night that passes keeps its build as the last-good one (copied, then renamed into place, so
# that a killed job never leaves half a binary).
if [[ $check_status == 0 && $run_status == 0 ]]; then
  mkdir -p "$last_good"
  cp "$tb" "$last_good/tunebench.new"
  mv "$last_good/tunebench.new" "$last_good/tunebench"
  echo "kept $(date -u +%FT%TZ) from $(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
    > "$last_good/KEPT"
  echo "[nightly] this build is now the last-good one ($last_good/tunebench)"
fi

echo "[nightly] report"
$tb report --db "$db" --out "$out" || echo "[nightly] the report failed; the check stands" >&2

if [[ $check_status == 0 && $run_status != 0 ]]; then
  echo "[nightly] no regression, but the run ended with failed trials (exit $run_status)" >&2
  exit "$run_status"
fi
exit "$check_status"
