#!/usr/bin/env bash
# Fuzzes the suite parser and validator (fuzz/fuzz_suite.cpp) with libFuzzer for a bounded time.
#   ci/fuzz.sh [SECONDS]   default 60
# Builds fuzz/ with clang++ into build/fuzz (AddressSanitizer, UndefinedBehaviorSanitizer),
# seeds the corpus with suites/*.json and tests/suites/*.json, uses a dictionary of JSON tokens,
# field names and every catalog id, model, preset and option, and runs one fuzzing process.
# Prints executions per second, total executions, corpus size and coverage. Exits non-zero on a
# finding (crash, sanitizer report, unexpected exception, broken invariant, hang); the input
# that caused it is saved under build/fuzz/findings/ and the log says how to reproduce it.
#   TUNEBENCH_FUZZ_ARGS   extra libFuzzer flags, e.g. "-max_len=100000"
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
out=build/fuzz

echo "[fuzz] building $out (clang++, libFuzzer, ASan, UBSan)"
mkdir -p build
if [[ ! -f $out/build.ninja ]]; then
  CXX=clang++ cmake -S fuzz -B "$out" -G Ninja -Wno-dev > "$out.configure.log" 2>&1 || {
    cat "$out.configure.log" >&2
    exit 1
  }
  rm -f "$out.configure.log"
fi
cmake --build "$out" -j2

# The corpus grows across runs in build/fuzz/corpus; the shipped suites are read-only seeds.
mkdir -p "$out/corpus" "$out/findings"
"$out/fuzz_suite" -dict_out="$out/suite.dict"
log=$out/fuzz.log
echo "[fuzz] fuzzing for ${seconds} s: $out/fuzz_suite $out/corpus suites tests/suites"
touch "$out/findings/.started"
status=0
"$out/fuzz_suite" "$out/corpus" suites tests/suites \
  -dict="$out/suite.dict" -max_total_time="$seconds" -max_len=8192 -timeout=10 \
  -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$out/findings/" \
  ${TUNEBENCH_FUZZ_ARGS:-} > "$log" 2>&1 || status=$?

# libFuzzer's last status line: "#N ... cov: C ft: F corp: K/SIZE ... exec/s: E".
last=$(grep -E '^#[0-9]+' "$log" | tail -n1 || true)
edges=$(grep -oE 'Loaded [0-9]+ modules +\([0-9]+ inline 8-bit counters\)' "$log" | head -n1 |
  grep -oE '\([0-9]+' | tr -d '(' || true)
echo "[fuzz] last status: $last"
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb|new_units_added)' "$log" |
  sed 's/^/[fuzz] /' || true
cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<< "$last")
corp=$(sed -nE 's/.* corp: ([0-9]+\/[0-9a-zA-Z]+).*/\1/p' <<< "$last")
echo "[fuzz] coverage: ${cov:-?} of ${edges:-?} instrumented edges (the parser, knobs, records," \
  "model registry with the size arithmetic, nlohmann_json, fmt); corpus: ${corp:-?} inputs/bytes"

if ((status != 0)); then
  echo "[fuzz] FINDING (libFuzzer exit $status); the end of $log:" >&2
  tail -n 60 "$log" >&2
  find "$out/findings" -type f -newer "$out/findings/.started" | sed 's|^|[fuzz] saved: |' >&2
  echo "[fuzz] reproduce: $out/fuzz_suite $out/findings/<file>" >&2
  exit 1
fi
echo "[fuzz] no finding in ${seconds} s"
