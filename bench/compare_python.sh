#!/usr/bin/env bash
# C++ models vs the same models through Python torch, on the same LibTorch (the PyPI build),
# the same threads and the same environment. Prints a table: median ms per step and the ratio.
#   bench/compare_python.sh [THREADS]   default: all cores
# Needs ci/build.sh pypi. Takes ~10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-$(nproc)}
out=${TUNEBENCH_BENCH_OUT:-build/bench}
mkdir -p "$out"
export OMP_NUM_THREADS=$threads TUNEBENCH_THREADS=$threads
filter='(resnet50_full|gpt_small)_'
build/pypi/tunebench_models_bench --benchmark_filter="$filter" \
  --benchmark_out="$out/cpp.json" --benchmark_out_format=json >&2
.venv/bin/python bench/python_reference.py --threads "$threads" > "$out/python.jsonl"
.venv/bin/python - "$out/cpp.json" "$out/python.jsonl" <<'PY'
import json, sys
cpp = {b["run_name"].split("/")[0].replace("run/", ""): b["real_time"]
       for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("aggregate_name") == "median"}
cpp = {k.split("run/")[-1]: v for k, v in cpp.items()}
rows = [json.loads(line) for line in open(sys.argv[2])]
print(f"{'benchmark':<24} {'C++ ms':>9} {'Python ms':>10} {'C++/Python':>11}")
for r in rows:
    c = cpp.get(r["name"])
    print(f"{r['name']:<24} {c:9.1f} {r['median_ms']:10.1f} {c / r['median_ms']:11.3f}")
print(f"torch {rows[0]['torch']}, {rows[0]['threads']} threads; median of 5 repetitions x 3 steps")
PY
