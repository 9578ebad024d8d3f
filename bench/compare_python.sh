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
import random

def pooled_median(groups):
    return statistics.median([t for g in groups for t in g])

def interval(cpp_runs, py_runs, resamples=2000, seed=7):
    # Hierarchical bootstrap: resample invocations, then samples within them, on each side.
    rng = random.Random(seed)
    def draw(groups):
        picked = [rng.choice(groups) for _ in groups]
        return [[rng.choice(g) for _ in g] for g in picked]
    ratios = sorted(pooled_median(draw(cpp_runs)) / pooled_median(draw(py_runs)) for _ in range(resamples))
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]

print(f"{'benchmark':<24} {'C++ ms':>9} {'Python ms':>10} {'C++/Python [95% interval]':>27}  verdict")
for name in names:
    cpp_runs = [[b["real_time"] for b in json.load(open(path))["benchmarks"] if b.get("run_type") == "iteration"]
                for path in sorted(glob.glob(f"{out}/cpp-{name}-*.json"))]
    py_runs = [json.loads(open(path).read())["repetitions_ms"]
               for path in sorted(glob.glob(f"{out}/python-{name}-*.jsonl"))]
    c, p = pooled_median(cpp_runs), pooled_median(py_runs)
    lo, hi = interval(cpp_runs, py_runs)
    verdict = "C++ faster" if hi < 1 else "C++ slower" if lo > 1 else "no measurable difference"
    print(f"{name:<24} {c:9.1f} {p:10.1f} {c / p:8.3f} [{lo:.3f}, {hi:.3f}]  {verdict}")
print("median ms per step; C++ and Python invocations in ABBA order, 3 samples x 2 steps each;")
print("interval: hierarchical bootstrap over invocations, then samples (2 invocations per side is few:")
print("the interval is indicative)")
PY
