#!/usr/bin/env bash
# The fleet's node job (submitted by ci/slurm/fleet.sh; runs as the batch script on the first
# node): every task runs the suite on its node (ci/slurm/node-task.sh), then, with a DDP suite,
# this script runs it once with the ranks as job steps across the nodes (`--ranks srun`: the
# TCPStore's server is rank 0 on this, the first, node).
set -uo pipefail
# shellcheck disable=SC1090
source "${TB_FLEET_ENV:?submit with ci/slurm/fleet.sh}"
cd "$TB_REPO"
echo "[fleet] job $SLURM_JOB_ID on $(scontrol show hostnames "$SLURM_JOB_NODELIST" | paste -sd ' '): $SLURM_NTASKS task(s)"

# One task per node (or --tasks-per-node): a node whose task fails leaves no file and the merge
# job says so; the others carry on (--kill-on-bad-exit=0).
srun --kill-on-bad-exit=0 ci/slurm/node-task.sh
status=$?

if [[ -n $TB_DDP_SUITE ]]; then
  db=${TMPDIR:-/tmp}/tunebench-$SLURM_JOB_ID-ddp.sqlite
  rm -f "$db"
  echo "[fleet] $TB_DDP_SUITE with its ranks across the allocation (--ranks srun)"
  "$TB_BIN" run --suite "$TB_DDP_SUITE" --db "$db" --label "$TB_LABEL" --ranks srun -q
  rc=$?
  echo "$rc" > "$TB_RESULTS/nodes/ddp.status"
  if [[ -f $db ]]; then
    cp "$db" "$TB_RESULTS/nodes/ddp-$(hostname -s).sqlite.part" &&
      mv "$TB_RESULTS/nodes/ddp-$(hostname -s).sqlite.part" "$TB_RESULTS/nodes/ddp-$(hostname -s).sqlite"
    rm -f "$db"
  fi
  ((rc == 0)) || status=1
fi
exit $status
