#!/usr/bin/env bash
# The fleet's merge job (submitted by ci/slurm/fleet.sh, after the node job whatever its end):
# merges every node's database into DIR/fleet.sqlite once, writes DIR/fleet.md — every task with
# its host, exit status and runs, and the tasks that left nothing as MISSING — and renders the
# report from the merged file. Exits 1 when a task is missing or the merge fails.
set -uo pipefail
# shellcheck disable=SC1090
source "${TB_FLEET_ENV:?submit with ci/slurm/fleet.sh}"
cd "$TB_REPO"
out=$TB_RESULTS
rm -f "$out/fleet.ok"
shopt -s nullglob
files=("$out"/nodes/*.sqlite)
status=0
if ((${#files[@]})); then
  "$TB_BIN" merge "${files[@]}" --db "$out/fleet.sqlite" || status=1
else
  echo "[merge] no node left a database" >&2
  status=1
fi

runs_of() { # the runs in one node's file: uuid prefix and status
  sqlite3 -separator ' ' "$1" "SELECT substr(uuid, 1, 8), '(' || status || ')' FROM runs" 2> /dev/null | paste -sd ' '
}
missing=0
{
  echo "# Fleet: job ${TB_NODE_JOB:-?}, suite $(basename "$TB_SUITE"), label $TB_LABEL"
  echo
  echo "| task | host | exit | runs merged |"
  echo "|---|---|---|---|"
  for ((t = 0; t < TB_EXPECTED_TASKS; t++)); do
    host=$(cat "$out/nodes/task-$t.started" 2> /dev/null || echo "-")
    rc=$(cat "$out/nodes/task-$t.status" 2> /dev/null || echo "-")
    file=$(compgen -G "$out/nodes/task-$t-*.sqlite" | head -1 || true)
    if [[ -n $file ]]; then
      echo "| $t | $host | $rc | $(runs_of "$file") |"
    else
      missing=$((missing + 1))
      if [[ $host == - ]]; then
        why="never started (node lost or job cancelled before it ran)"
      elif [[ $rc == - ]]; then
        why="started on $host and never finished (killed, node lost or out of time)"
      else
        why="ended with exit $rc and no results"
      fi
      echo "| $t | $host | $rc | **MISSING**: $why; see fleet-${TB_NODE_JOB:-*}.out |"
    fi
  done
  if [[ -n $TB_DDP_SUITE ]]; then
    file=$(compgen -G "$out/nodes/ddp-*.sqlite" | head -1 || true)
    rc=$(cat "$out/nodes/ddp.status" 2> /dev/null || echo "-")
    if [[ -n $file ]]; then
      echo "| ranks across nodes ($(basename "$TB_DDP_SUITE")) | $(basename "$file" .sqlite | cut -d- -f2-) | $rc | $(runs_of "$file") |"
    else
      missing=$((missing + 1))
      echo "| ranks across nodes ($(basename "$TB_DDP_SUITE")) | - | $rc | **MISSING**: no results; see fleet-${TB_NODE_JOB:-*}.out |"
    fi
  fi
  echo
  echo "$missing of $((TB_EXPECTED_TASKS + (${#TB_DDP_SUITE} > 0 ? 1 : 0))) expected result file(s) missing; merged: $out/fleet.sqlite"
} > "$out/fleet.md"
cat "$out/fleet.md"
((missing == 0)) || status=1

if [[ -f $out/fleet.sqlite ]]; then
  "$TB_BIN" report --db "$out/fleet.sqlite" --out "$out/report" || status=1
  # The fleet's table heads the report's Markdown summary: a missing node is not silently dropped.
  if [[ -f $out/report/summary.md ]]; then
    cat "$out/fleet.md" - "$out/report/summary.md" <<< "" > "$out/report/summary.md.new" &&
      mv "$out/report/summary.md.new" "$out/report/summary.md"
  fi
fi
((status == 0)) && touch "$out/fleet.ok"
exit $status
