#!/usr/bin/env bash
# Installs everything tunebench needs on a Debian 12 machine, as root, by package name.
# Quick to run again: Debian packages already present are skipped, and the Python environment
# (torch alone is ~4 GB) lives in a cache outside the clone, keyed by the contents of the
# requirement files, so a fresh clone reuses it and a changed pin builds a new one.
#
#   TUNEBENCH_CACHE   where cached environments live (default /var/cache/tunebench)
#   TUNEBENCH_NO_VENV=1  skip the Python environment (Debian-only build, no reports)
#   TUNEBENCH_CACHE_KEEP_DAYS  environments and compiled packages unused this long are removed
#                     from the cache (default 14; ci/prune-cache.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*"; }

# --- Debian packages -----------------------------------------------------------------------
# ccache: the compiler cache (cmake/ccache.cmake) that lets a fresh clone reuse earlier objects.
# libclang-rt-14-dev: libFuzzer and the sanitizer runtimes for ci/fuzz.sh (clang only recommends it).
# slurmctld, slurmd, slurm-client, munge: a one-node Slurm cluster for tests/slurm_one_node.sh,
# which runs ci/slurm/'s fleet for real (the daemons are started by the test, not as services);
# iproute2 and util-linux: the two-node cluster of tests/slurm_two_nodes.sh (a network and UTS
# namespace per node, a bridge between them).
# libopenblas0-openmp: without it Debian's LibTorch sends every fp32 matmul to the reference
# BLAS (libblas.so.3), ~30x slower on this machine (README.md, Setup).
DEB_PACKAGES=(
  build-essential cmake ninja-build pkg-config git clang clang-format ccache
  libclang-rt-14-dev
  libtorch-dev libgloo-dev
  libbenchmark-dev libgtest-dev libgmock-dev googletest
  libsqlite3-dev sqlite3 libsqlitecpp-dev libssl-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libboost-math-dev
  libjemalloc2 libjemalloc-dev libgoogle-perftools4 libgoogle-perftools-dev
  libomp-dev libomp5-14 numactl libnuma-dev
  libopenblas0-openmp libopenblas-dev
  python3-venv
  chromium fonts-dejavu-core
  slurmctld slurmd slurm-client munge iproute2 util-linux
)
missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  log "Debian packages: all ${#DEB_PACKAGES[@]} present"
fi

# Make OpenBLAS's OpenMP flavour what libblas.so.3, liblapack.so.3 and libopenblas.so.0 resolve
# to. Debian's LibTorch links all three; with libopenblas-dev the last two pointed at the pthread
# flavour, so every worker loaded a second OpenBLAS whose own pool thread spun (sched_yield)
# beside the two OpenMP threads on 2 cores: a third runnable thread, run-queue wait ~0.8-1.0 s per
# second of step, and step times that jumped between ~100 and ~180 ms (ResNet-50 at 96², batch 4).
for lib in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
  name=$lib-x86_64-linux-gnu
  want=$(update-alternatives --list "$name" 2>/dev/null | grep openblas-openmp | head -n1 || true)
  [[ -n "$want" ]] || continue
  current=$(readlink -f "/etc/alternatives/$name" 2>/dev/null || true)
  if [[ "$current" != "$(readlink -f "$want")" ]]; then
    log "selecting OpenBLAS (OpenMP) as $lib"
    update-alternatives --set "$name" "$want" >/dev/null
  fi
done

# --- Python environment --------------------------------------------------------------------
if [[ "${TUNEBENCH_NO_VENV:-0}" == 1 ]]; then
  log "TUNEBENCH_NO_VENV=1: skipping the Python environment"
  exit 0
fi
PY=${TUNEBENCH_PYTHON:-$(command -v python3)}
reqs=(ci/requirements-torch.txt reports/requirements.txt)
key=$({ "$PY" --version 2>&1; cat "${reqs[@]}"; } | sha256sum | cut -c1-16)
cache=${TUNEBENCH_CACHE:-/var/cache/tunebench}
venv="$cache/venv-$key"
if [[ ! -f "$venv/.complete" ]]; then
  log "building the Python environment in $venv (torch is large: this takes several minutes once)"
  mkdir -p "$cache"
  rm -rf "$venv"   # a half-built one from an interrupted setup
  "$PY" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q $(printf -- '-r %s ' "${reqs[@]}")
  touch "$venv/.complete"   # written last: its presence means the environment is whole
else
  log "Python environment: cached at $venv"
fi
ln -sfn "$venv" .venv
touch "$venv/.last-used"   # ci/prune-cache.sh removes environments unused for two weeks
bash ci/prune-cache.sh --keep "$venv" | sed 's/^/[setup] /' || true

# The example models of the quick start (models/examples/make_examples.py): built from code with
# a fixed seed in this environment, never downloaded; made again when the script or the
# environment changes.
examples=build/examples
stamp="$examples/.made-$key-$(sha256sum models/examples/make_examples.py | cut -c1-16)"
if [[ ! -f "$stamp" ]]; then
  rm -rf "$examples"
  .venv/bin/python models/examples/make_examples.py "$examples" | sed 's/^/[setup] /'
  touch "$stamp"
else
  log "example models: $examples"
fi
log "done: .venv -> $venv"
