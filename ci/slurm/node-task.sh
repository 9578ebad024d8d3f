#!/usr/bin/env bash
# One task of the fleet's node job (ci/slurm/node-job.sh starts it with srun): runs the suite
# into a database on this node's local disk, then copies the file into the shared results
# directory under a temporary name and renames it, so the merge job never reads half a file.
# DIR/nodes/task-N.started says which host task N ran on; task-N.status its exit status.
set -uo pipefail
# shellcheck disable=SC1090
source "${TB_FLEET_ENV:?submit with ci/slurm/fleet.sh}"
cd "$TB_REPO"
task=${SLURM_PROCID:?run under srun}
host=$(hostname -s)
out=$TB_RESULTS/nodes
echo "$host" > "$out/task-$task.started"
db=${TMPDIR:-/tmp}/tunebench-$SLURM_JOB_ID-$task.sqlite
rm -f "$db"
# The test of this script (tests/slurm_one_node.sh) makes one task fail as a lost node would.
if [[ ${TUNEBENCH_TEST_FAIL_TASK:-} == "$task" ]]; then
  echo "[fleet] task $task on $host: failing on purpose (TUNEBENCH_TEST_FAIL_TASK)" >&2
  echo 99 > "$out/task-$task.status"
  exit 99
fi
args=(run --suite "$TB_SUITE" --db "$db" --label "$TB_LABEL" -q)
[[ -n $TB_FILTER ]] && args+=(--filter "$TB_FILTER")
"$TB_BIN" "${args[@]}"
rc=$?
echo "$rc" > "$out/task-$task.status"
# Exit 1 still stored a run (some trials failed, or it was interrupted): it is merged and says so.
if [[ -f $db ]] && ((rc == 0 || rc == 1)); then
  cp "$db" "$out/task-$task-$host.sqlite.part" && mv "$out/task-$task-$host.sqlite.part" "$out/task-$task-$host.sqlite"
fi
rm -f "$db"
echo "[fleet] task $task on $host: exit $rc"
exit "$rc"
