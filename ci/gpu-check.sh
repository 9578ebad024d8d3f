#!/usr/bin/env bash
# The GPU check: on a machine with a GPU, PyTorch, CMake and nvcc but no network and none of
# tunebench's other dependencies, build tunebench against that machine's torch with the folder
# ci/gpu-deps.sh prepared, run suites/cuda-smoke.json, and print a short table last.
#   ci/gpu-check.sh [DEPS_DIR]      default DEPS_DIR: shared/gpu-deps
# Environment: PYTHON (the python with torch; default python3), BUILD_DIR (default build/gpu),
# GPU_CHECK_BUDGET_S (default 480: the whole check must end within 8 minutes; the run gets what the
# build left), GPU_CHECK_SIMULATE=1 (ignore /usr when looking for the dependencies, so a machine
# that has them installed proves the folder alone is enough).
# Exit: 0 when the run completed, 1 when it completed with failures or ran out of time, 2 on a
# setup error.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
budget=${GPU_CHECK_BUDGET_S:-480}
fail() { echo "ci/gpu-check.sh: $*" >&2; exit 2; }

deps=$(realpath -m "${1:-shared/gpu-deps}")
libdir=$deps/usr/lib/x86_64-linux-gnu
[[ -f $deps/MANIFEST ]] || fail "$deps is not a folder made by ci/gpu-deps.sh (no MANIFEST); run ci/gpu-deps.sh where there is network"
py=${PYTHON:-$(command -v python3 || command -v python || true)}
[[ -n $py ]] || fail "no python3 with torch on PATH (set PYTHON)"
torch_prefix=$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)') ||
  fail "$py cannot import torch"
# This machine's torch is what we build against; the project pins another for its own builds and
# checked its CUDA code against that one's headers. Say so when they differ.
torch_here=$("$py" -c 'import torch; print(torch.__version__)')
torch_pinned=$(sed -n 's/^torch==//p' ci/requirements-torch.txt)
if [[ ${torch_here%%+*} != "$torch_pinned" ]]; then
  echo "[gpu-check] note: this machine's torch is $torch_here, the project pins $torch_pinned" \
    "(ci/requirements-torch.txt): the build below uses $torch_here; a compile error names the API that differs"
else
  echo "[gpu-check] torch $torch_here (the pinned version)"
fi
nvcc=$(command -v nvcc || true)
[[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
[[ -n $nvcc ]] || fail "no nvcc on PATH or in /usr/local/cuda/bin"
build=${BUILD_DIR:-build/gpu}
generator="Unix Makefiles"
command -v ninja >/dev/null && generator=Ninja

args=(-S . -B "$build" -G "$generator" -Wno-dev
  -DCMAKE_BUILD_TYPE=Release -DTUNEBENCH_BUILD_TESTS=OFF -DTUNEBENCH_BUILD_BENCH=OFF
  "-DCMAKE_PREFIX_PATH=$torch_prefix;$deps/usr;$libdir/cmake;$deps/usr/share/cmake"
  "-DOPENSSL_ROOT_DIR=$deps/usr" "-DCMAKE_CUDA_COMPILER=$nvcc"
  "-DCUDAToolkit_ROOT=$(dirname "$(dirname "$(readlink -f "$nvcc")")")"
  # The folder's libraries at run time, for the workers too, whatever LD_LIBRARY_PATH says (the
  # workers get the orchestrator's): an RPATH, which also serves the libraries' own dependencies.
  "-DCMAKE_BUILD_RPATH=$libdir" "-DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags")
# pkg-config, where there is one, sees only the folder's .pc files (libnuma is found without it).
export PKG_CONFIG_LIBDIR=$libdir/pkgconfig:$deps/usr/share/pkgconfig PKG_CONFIG_SYSROOT_DIR=$deps
if [[ ${GPU_CHECK_SIMULATE:-0} == 1 ]]; then
  args+=(-DCMAKE_IGNORE_PREFIX_PATH=/usr)
fi
# build/ is git-ignored, so a fresh clone (or the device machine's copy of the tree) has none:
# make the build folder first, and keep both logs inside it.
mkdir -p "$build"
configure_log=$build/configure.log build_log=$build/build.log
echo "[gpu-check] configure: torch from $torch_prefix, nvcc $nvcc, dependencies from $deps"
cmake "${args[@]}" >"$configure_log" 2>&1 || { cat "$configure_log" >&2; fail "configure failed"; }
grep -E "^-- tunebench:" "$configure_log" || true
grep -q "CUDA code paths: ON" "$configure_log" ||
  echo "[gpu-check] warning: this torch has no CUDA: the CUDA experiments will be not applicable"
echo "[gpu-check] build ($(nproc) jobs)"
cmake --build "$build" --target tunebench -j "$(nproc)" >"$build_log" 2>&1 ||
  { tail -40 "$build_log" >&2; fail "build failed (log: $build_log)"; }
echo "[gpu-check] built in $((SECONDS - start)) s"
# libstdc++ before LibTorch in the binary's search order (torch 2.11.0's libtorch.so exports
# std::filesystem functions that crash when found first); says which comes first if not.
cmake -DBINARY="$build/tunebench" -P tests/build_link_order.cmake 2>&1 | sed 's/^-- /[gpu-check] /' ||
  echo "[gpu-check] warning: the link order above lets LibTorch's copies of C++ library functions win"

tb=$build/tunebench
env_out=$("$tb" env)
head -40 <<<"$env_out"
# A canary before the suite: one small CUDA trial (ci/gpu-canary.json) given to the worker directly,
# 60 s at most. When it fails: the worker's own output and, where cuda-gdb is installed, where it
# crashed or hung (the first GPU run spent a second call of its device time to learn that).
canary=ci/gpu-canary.json
if grep -qE '^  gpu +none' <<<"$env_out"; then
  echo "[gpu-check] canary skipped: no GPU on this host"
else
  crc=0
  timeout --kill-after=5 60 "$tb" worker <"$canary" >"$build/canary.out" 2>"$build/canary.err" || crc=$?
  if ((crc == 0)) && grep -q '"status":"ok"' "$build/canary.out"; then
    echo "[gpu-check] canary ($canary): ok"
  else
    echo "[gpu-check] canary ($canary) failed, exit $crc; its stderr, then its result:"
    head -c 2000 "$build/canary.err"
    head -c 800 "$build/canary.out"
    echo
    if command -v cuda-gdb >/dev/null; then
      echo "[gpu-check] the canary again under cuda-gdb (a crash's backtrace; a hang is interrupted at 60 s):"
      timeout --signal=INT --kill-after=10 60 cuda-gdb -q -batch -ex "run worker < $canary > /dev/null" \
        -ex bt -ex "thread apply all bt 6" "$tb" 2>&1 |
        grep -vE '^\[(New Thread|Thread .* exited)|^warning: Cuda Driver error' | tail -60 || true
    fi
  fi
fi
db=$build/gpu-check.sqlite
rm -f "$db" "$db-wal" "$db-shm"
left=$((budget - (SECONDS - start) - 20))
((left > 30)) || fail "no time left for the run after the build"
echo "[gpu-check] run suites/cuda-smoke.json (at most $left s)"
rc=0
timeout --signal=TERM --kill-after=10 "$left" "$tb" run --suite suites/cuda-smoke.json --db "$db" \
  --label gpu-check || rc=$?
if ((rc == 124 || rc == 137)); then echo "[gpu-check] the run passed its $left s: interrupted, finished trials kept"; fi
# Workers run in process groups of their own, so `timeout` signals only the orchestrator: one that
# was killed (not stopped) leaves its worker running on the GPU. Stop any such worker now.
# (Workers are started as /proc/self/exe: found by their executable, which is this build's.)
tb_real=$(realpath "$tb")
for exe in /proc/[0-9]*/exe; do
  [[ $(readlink "$exe" 2>/dev/null) == "$tb_real" ]] || continue
  pid=${exe#/proc/}
  pid=${pid%/exe}
  echo "[gpu-check] stopping leftover worker $pid"
  kill -KILL "$pid" 2>/dev/null || true
done
"$tb" show latest --db "$db" --json >"$build/gpu-check.json" || true

# The short table: each experiment's effect and what the GPU read back.
"$py" - "$build/gpu-check.json" <<'PY'
import json, sys
try:
    report = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(f"[gpu-check] no report to tabulate: {e}")
def fmt(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else "-"
print()
print(f"cuda-smoke on {report['host'].get('gpu')} (driver {report['host'].get('gpu_driver')}, "
      f"CUDA {report['software'].get('cuda')}, cuDNN {report['software'].get('cudnn')}): {report['status']}")
print(f"{'experiment':44} {'off ms':>8} {'on ms':>8} {'ratio':>6} {'verdict':22} {'syncs/step':>10} {'peak MiB':>9} {'J/item':>8} ok/fail/inv")
for x in report["experiments"]:
    arms = x["arms"]
    first, last = arms[0], arms[-1]
    time = next((e for e in x["effects"] if e["metric"] == "time"), {})
    ev = last.get("evidence") or {}
    joules = ev.get("gpu_energy_joules_per_item")
    peak = ev.get("device_peak_bytes")
    counts = "/".join(str(sum(a[k] for a in arms)) for k in ("ok", "failed", "invalid"))
    ms = lambda a: fmt(a["median_seconds"] * 1e3, ".3f") if a["median_seconds"] is not None else "-"
    print(f"{x['name'][:44]:44} {ms(first):>8} {ms(last):>8} {fmt(time.get('ratio'), '.3f'):>6} "
          f"{(time.get('verdict') or x.get('problem') or '-')[:22]:22} "
          f"{fmt(ev.get('host_syncs_per_step'), '.2f'):>10} "
          f"{fmt(peak / 2**20 if isinstance(peak, (int, float)) and peak >= 0 else None, '.1f'):>9} "
          f"{fmt(joules, '.4f'):>8} {counts}")
for na in report.get("not_applicable", []):
    print(f"not applicable: {na['experiment']}: {na['reason']}")
PY
echo "[gpu-check] done in $((SECONDS - start)) s, run exit $rc"
exit $((rc == 0 ? 0 : rc == 2 ? 2 : 1))
