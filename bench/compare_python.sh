#!/usr/bin/env bash
# C++ models vs the same models through Python torch, on the same LibTorch (the PyPI build),
# the same threads and the same environment. This machine drifts between faster and slower
# phases, so each benchmark runs in ABBA order (C++, Python, Python, C++) and the table pools
# the samples of both invocations of each side.
#   bench/compare_python.sh [THREADS]   default: all cores
# Needs ci/build.sh pypi. Takes ~10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-$(nproc)}
out=${TUNEBENCH_BENCH_OUT:-build/bench}
mkdir -p "$out"
rm -f "$out"/cpp-*.json "$out"/python-*.jsonl
export OMP_NUM_THREADS=$threads TUNEBENCH_THREADS=$threads
export TUNEBENCH_BENCH_REPETITIONS=3 TUNEBENCH_BENCH_ITERATIONS=2
benchmarks=(resnet50_full_infer_b8 resnet50_full_train_b8 gpt_small_infer_b4 gpt_small_train_b4)
cpp() {
  build/pypi/tunebench_models_bench --benchmark_filter="^run/$1/" \
    --benchmark_out="$out/cpp-$1-$2.json" --benchmark_out_format=json > /dev/null
}
python() {
  .venv/bin/python bench/python_reference.py --threads "$threads" --repetitions 3 \
    --iterations 2 "$1" > "$out/python-$1-$2.jsonl"
}
for b in "${benchmarks[@]}"; do
  echo "[compare] $b" >&2
  cpp "$b" 1; python "$b" 1; python "$b" 2; cpp "$b" 2
done
.venv/bin/python - "$out" "${benchmarks[@]}" <<'PY'
import glob, json, statistics, sys
out, names = sys.argv[1], sys.argv[2:]
print(f"{'benchmark':<24} {'C++ ms':>9} {'Python ms':>10} {'C++/Python':>11}   per invocation (C++ | Python)")
for name in names:
    cpp_runs, py_runs = [], []
    for path in sorted(glob.glob(f"{out}/cpp-{name}-*.json")):
        cpp_runs.append([b["real_time"] for b in json.load(open(path))["benchmarks"]
                         if b.get("run_type") == "iteration"])
    for path in sorted(glob.glob(f"{out}/python-{name}-*.jsonl")):
        py_runs.append(json.loads(open(path).read())["repetitions_ms"])
    c = statistics.median([t for r in cpp_runs for t in r])
    p = statistics.median([t for r in py_runs for t in r])
    per = " ".join(f"{statistics.median(r):.0f}" for r in cpp_runs) + " | " + \
          " ".join(f"{statistics.median(r):.0f}" for r in py_runs)
    print(f"{name:<24} {c:9.1f} {p:10.1f} {c / p:11.3f}   {per}")
print("median ms per step over 2 invocations x 3 samples x 2 steps per side, ABBA order")
PY
