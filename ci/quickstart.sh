#!/usr/bin/env bash
# The main job for a newcomer: set up, build (Debian's LibTorch), and show what tunebench
# measures. The results database is results/tunebench.sqlite.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/setup.sh
bash ci/build.sh debian
mkdir -p results
echo
build/debian/tunebench models
echo
echo "Not built yet: the experiment harness (tunebench run, the smoke suite into"
echo "results/tunebench.sqlite) and the report. Until then this job shows the model table."
