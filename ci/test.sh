#!/usr/bin/env bash
# Sets up, builds both LibTorch variants and runs their tests: every test of the debian build,
# and of the pypi build those labelled libtorch (code that differs between LibTorch versions or
# needs the pypi build; CMakeLists.txt says which). Every test runs in one build at least.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's line says when it started (seconds since this script did), so a slow CI shows
# where its time went.
start=$SECONDS
step() { printf '[test %4ds] %s\n' $((SECONDS - start)) "$*"; }

step "setup"
bash ci/setup.sh

step "formatting (clang-format, .clang-format)"
git ls-files -- '*.cpp' '*.h' | xargs clang-format --dry-run -Werror

status=0
step "nothing names files outside the repository or an issue number"
# (This file, which holds the patterns, excepted.)
outside='\.\./shared|\b(CATALOG|DESIGN|MEASUREMENT|SAMPLER|ARCHITECTURE|CUDA_REVIEW|STYLE)\.md'
if git grep -nE "$outside|[Ii]ssue #[0-9]+|\(#[0-9]+\)" -- . ':!ci/test.sh'; then
  echo "a line above names a file outside the repository or an issue number: say it in docs/ instead" >&2
  status=1
fi

step "build: debian"
bash ci/build.sh debian
step "debian: every test"
ctest --preset debian -j2 || status=1
step "build: pypi"
bash ci/build.sh pypi
step "pypi: the tests labelled libtorch"
ctest --preset pypi -j2 -L libtorch || status=1

step "the knob reference docs/knobs.md is what \`tunebench list --format md\` prints"
if ! build/debian/tunebench list --format md | diff -u docs/knobs.md - > build/knobs-md.diff; then
  cat build/knobs-md.diff
  echo "docs/knobs.md is out of date: run build/debian/tunebench list --format md > docs/knobs.md" >&2
  status=1
fi

step "a one-node Slurm cluster: the fleet, its merge and ranks as job steps (tests/slurm_one_node.sh)"
bash tests/slurm_one_node.sh build/debian/tunebench || status=1
step "a two-node Slurm cluster on this machine: the fleet across nodes, DDP ranks on two nodes, a node killed mid-run (tests/slurm_two_nodes.sh)"
bash tests/slurm_two_nodes.sh build/debian/tunebench || status=1

step "fuzzing the suite parser (ci/fuzz.sh, 30 s)"
bash ci/fuzz.sh 30 || status=1

step "reports (reports/test_render.py; screenshots in build/reports-tests)"
TUNEBENCH_BINARY=build/debian/tunebench TUNEBENCH_TEST_OUT=build/reports-tests \
  .venv/bin/python -m unittest discover -s reports -p 'test_*.py' || status=1
step "done: exit $status"
exit $status
