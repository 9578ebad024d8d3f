#!/usr/bin/env bash
# Configures and builds tunebench against one or both LibTorches (CMakePresets.json).
#   ci/build.sh [debian|pypi|all]   default: all
# debian: Debian's libtorch-dev 1.13 (CPU). pypi: the LibTorch inside .venv's torch wheel
# (CUDA-enabled; needs ci/setup.sh to have built .venv).
set -euo pipefail
cd "$(dirname "$0")/.."

build() {
  local preset=$1 extra=()
  if [[ $preset == pypi ]]; then
    if [[ ! -x .venv/bin/python ]]; then
      echo "ci/build.sh: .venv is missing; run ci/setup.sh first" >&2
      exit 1
    fi
    extra=(-DCMAKE_PREFIX_PATH="$(.venv/bin/python -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')")
  fi
  echo "[build] $preset"
  cmake --preset "$preset" "${extra[@]}" -Wno-dev > "build-$preset.configure.log" 2>&1 || {
    cat "build-$preset.configure.log" >&2
    exit 1
  }
  grep -E "^-- tunebench:" "build-$preset.configure.log" || true
  rm -f "build-$preset.configure.log"
  cmake --build --preset "$preset"
}

case "${1:-all}" in
  debian | pypi) build "$1" ;;
  all) build debian && build pypi ;;
  *)
    echo "ci/build.sh: unknown build '$1'; valid: debian, pypi, all" >&2
    exit 2
    ;;
esac
