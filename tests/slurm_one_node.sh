#!/usr/bin/env bash
# The fleet on a real Slurm cluster of one node: starts munged, slurmctld and slurmd
# from Debian's packages on this host with a generated slurm.conf (everything under a temporary
# directory, its own ports and munge socket; SLURM_CONF points the clients at it), then
#   1. submits ci/slurm/fleet.sh with two tasks running tests/suites/slurm.json and, from the
#      batch script, tests/suites/slurm_ddp.json with its two Gloo ranks as srun job steps
#      meeting in a TCPStore; waits; checks the merged database: both tasks' runs and the DDP
#      run completed, the two-rank trial's evidence (each rank's TCPStore, host and Slurm node),
#      one host in the hosts table, and fleet.md with nothing missing;
#   2. submits it again with one task failing on purpose: the merge job still merges the other,
#      fleet.md and the report's summary say MISSING for the failed task, and the fleet fails;
# then stops the daemons. Needs root (slurmd) and the packages ci/setup.sh installs.
#   tests/slurm_one_node.sh [TUNEBENCH_BINARY]   (default build/debian/tunebench)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/debian/tunebench}")
# shellcheck source=tests/slurm_cluster.sh
source tests/slurm_cluster.sh
slurm_require munged slurmctld slurmd sbatch srun scontrol sqlite3
slurm_make_dir
cleanup() {
  scontrol shutdown > /dev/null 2>&1 || true
  for pid in "$dir"/slurmctld.pid "$dir"/slurmd-*.pid "$dir"/munged.pid; do
    [[ -f $pid ]] && kill "$(cat "$pid")" 2> /dev/null || true
  done
  sleep 1
  rm -rf "$dir"
}
trap cleanup EXIT

host=$(hostname -s)
slurm_start_munge
slurm_write_conf tunebench-test "$host" \
  "NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN"
mkdir -p "$dir/spool/$host"
slurmctld
slurmd
slurm_wait_idle
echo "[slurm] one-node cluster up: $host, $(nproc) CPUs"

# 1. Two tasks and the DDP suite across the allocation.
results=$dir/results
ci/slurm/fleet.sh --suite tests/suites/slurm.json --ddp-suite tests/suites/slurm_ddp.json \
  --nodes 1 --tasks-per-node 2 --results "$results" --tunebench "$bin" --label slurm-test \
  --wait -- --time=10 || fail "the fleet failed"
db=$results/fleet.sqlite
q() { sqlite3 "$db" "$1"; }
[[ $(q "SELECT count(*) FROM runs WHERE suite_name = 'slurm-fleet' AND status = 'completed'") == 2 ]] ||
  fail "expected both tasks' runs completed in the merged database: $(q 'SELECT uuid, suite_name, status FROM runs')"
[[ $(q "SELECT count(*) FROM runs WHERE suite_name = 'slurm-ddp' AND status = 'completed'") == 1 ]] ||
  fail "expected the DDP run completed: $(q 'SELECT uuid, suite_name, status FROM runs')"
[[ $(q "SELECT count(DISTINCT hostname) FROM hosts") == 1 && $(q "SELECT hostname FROM hosts") == "$(hostname)" ]] ||
  fail "expected one host, $(hostname): $(q 'SELECT hostname FROM hosts')"
ranks=$(q "SELECT json_extract(evidence, '$.process_count') || ' ' ||
                  json_extract(evidence, '$.processes[0].ddp.store') || ' ' ||
                  json_extract(evidence, '$.processes[1].ddp.store') || ' ' ||
                  json_extract(evidence, '$.processes[1].ddp.rank') || ' ' ||
                  json_extract(evidence, '$.processes[0].ddp.host') || ' ' ||
                  json_extract(evidence, '$.processes[1].node')
           FROM trials t JOIN runs r ON r.uuid = t.run_uuid
           WHERE r.suite_name = 'slurm-ddp' AND t.arm = 'on' AND t.status = 'ok'")
[[ $ranks == "2 TCPStore TCPStore 1 $(hostname) $host" ]] ||
  fail "expected the on arm's trial with 2 ranks over a TCPStore on $host, got '$ranks'"
grep -q "0 of 3 expected result file(s) missing" "$results/fleet.md" || fail "fleet.md: $(cat "$results/fleet.md")"
[[ -f $results/report/report.html ]] || fail "no merged report"
echo "[slurm] fleet 1: 2 task runs + 1 DDP run merged; ranks: $ranks"

# 2. One task lost: still merged, and said.
results=$dir/results-lost
if TUNEBENCH_TEST_FAIL_TASK=1 ci/slurm/fleet.sh --suite tests/suites/slurm.json --nodes 1 \
  --tasks-per-node 2 --results "$results" --tunebench "$bin" --wait -- --time=10; then
  fail "a fleet with a lost task passed"
fi
[[ $(sqlite3 "$results/fleet.sqlite" "SELECT count(*) FROM runs WHERE status = 'completed'") == 1 ]] ||
  fail "the surviving task's run was not merged"
grep -q "| 1 | $host | 99 | \*\*MISSING\*\*" "$results/fleet.md" || fail "fleet.md does not say task 1 is missing: $(cat "$results/fleet.md")"
grep -q "MISSING" "$results/report/summary.md" || fail "the report's summary does not say task 1 is missing"
echo "[slurm] fleet 2: the lost task is MISSING in fleet.md and the report, the other merged"
echo "[slurm] passed"
