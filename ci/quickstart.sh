#!/usr/bin/env bash
# The main job for a newcomer: set up, build (Debian's LibTorch), run the smoke suite into the
# default database results/tunebench.sqlite and show the results.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/setup.sh
bash ci/build.sh debian
tb=build/debian/tunebench
echo
$tb models
echo
status=0
# --wait-quiet: the build has just loaded both cores; a run started at once measures its tail.
# --budget: the planned trials, then the time left on the verdicts still open.
$tb run --suite suites/smoke.json --label quickstart --budget 420 --wait-quiet 180 || status=$?
echo
$tb show latest
echo
echo "Results database: $(pwd)/results/tunebench.sqlite (schema: results/README.md)"
$tb report --out reports/out
exit $status
