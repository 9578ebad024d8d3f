#!/usr/bin/env bash
# Runs a suite on every node of a Slurm allocation and merges the nodes' results once.
#
#   ci/slurm/fleet.sh --suite FILE [--nodes N] [--tasks-per-node K] [--ddp-suite FILE]
#                     [--results DIR] [--label L] [--filter REGEX] [--tunebench PATH]
#                     [--wait] [-- SBATCH_OPTION…]
#
# Submits two jobs:
#   1. tunebench-fleet (ci/slurm/node-job.sh): N nodes × K tasks. Each task runs the suite into a
#      database on its node's local disk ($TMPDIR or /tmp: SQLite's locking is unreliable on a
#      network filesystem), then copies the finished file into DIR/nodes/. With --ddp-suite, the
#      batch script then runs that suite once with `--ranks srun`: ddp_scaling / ddp_no_sync
#      ranks as job steps across the allocation's nodes.
#   2. tunebench-merge (ci/slurm/merge-job.sh), --dependency=afterany on the first: merges every
#      node's file into DIR/fleet.sqlite (`tunebench merge` imports each run once), lists in
#      DIR/fleet.md every task that left no results as missing, and renders DIR/report/. It
#      depends on afterany, not afterok, so that one lost node does not lose the others' results;
#      it exits non-zero when a task is missing, for whatever waits on it.
#
# DIR (default results/fleet-<date>) and the tunebench binary (default: an installed tunebench on
# PATH — `cmake --install` or the .deb, on every node — else build/pypi/tunebench, else
# build/debian/tunebench) must be on a filesystem every node sees, as the repository is.
# Anything after `--` goes to both sbatch calls (e.g. --partition=cpu --time=02:00:00
# --account=X). --wait returns when the merge job has ended, with its exit status.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

usage() { sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }
die() {
  echo "ci/slurm/fleet.sh: $*" >&2
  exit 2
}

suite="" ddp_suite="" nodes=1 tasks=1 results="" label=fleet filter="" tunebench="" wait=0
extra=()
while (($#)); do
  case $1 in
    --suite) suite=${2:?--suite needs a file}; shift 2 ;;
    --ddp-suite) ddp_suite=${2:?--ddp-suite needs a file}; shift 2 ;;
    --nodes) nodes=${2:?--nodes needs a count}; shift 2 ;;
    --tasks-per-node) tasks=${2:?--tasks-per-node needs a count}; shift 2 ;;
    --results) results=${2:?--results needs a directory}; shift 2 ;;
    --label) label=${2:?--label needs a value}; shift 2 ;;
    --filter) filter=${2:?--filter needs a regular expression}; shift 2 ;;
    --tunebench) tunebench=${2:?--tunebench needs a path}; shift 2 ;;
    --wait) wait=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ -n $suite ]] || die "--suite FILE is required (e.g. suites/smoke.json)"
[[ -f $suite ]] || die "--suite $suite: no such file"
[[ -z $ddp_suite || -f $ddp_suite ]] || die "--ddp-suite $ddp_suite: no such file"
[[ $nodes =~ ^[1-9][0-9]*$ ]] || die "--nodes $nodes: must be a positive count"
[[ $tasks =~ ^[1-9][0-9]*$ ]] || die "--tasks-per-node $tasks: must be a positive count"
command -v sbatch > /dev/null || die "sbatch is not on PATH (Debian package slurm-client)"
if [[ -z $tunebench ]] && installed=$(command -v tunebench); then
  # An installed tunebench (its share/tunebench beside its bin/) needs no checkout on the nodes.
  [[ -f $(dirname "$installed")/../share/tunebench/.tunebench-installed ]] && tunebench=$installed
fi
if [[ -z $tunebench ]]; then
  for b in build/pypi/tunebench build/debian/tunebench; do
    [[ -x $b ]] && tunebench=$repo/$b && break
  done
fi
[[ -n $tunebench && -x $tunebench ]] || die "no tunebench binary (build it with ci/build.sh, or give --tunebench)"
results=${results:-results/fleet-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$results/nodes"
results=$(cd "$results" && pwd)
if compgen -G "$results/nodes/*" > /dev/null; then
  die "--results $results already holds a fleet's files: give a new directory"
fi

# What the merge job compares against: how many tasks there should be, and what they ran.
cat > "$results/fleet.env" << ENV
TB_REPO=$(printf %q "$repo")
TB_BIN=$(printf %q "$tunebench")
TB_SUITE=$(printf %q "$(realpath "$suite")")
TB_DDP_SUITE=$(printf %q "${ddp_suite:+$(realpath "$ddp_suite")}")
TB_LABEL=$(printf %q "$label")
TB_FILTER=$(printf %q "$filter")
TB_RESULTS=$(printf %q "$results")
TB_EXPECTED_TASKS=$((nodes * tasks))
ENV

# --no-kill: a node lost mid-job ends its own tasks, not the whole job (Slurm's default kills
# the job on every node); --no-requeue: nor is the job then started again from the beginning,
# waiting for the lost node (Slurm requeues a batch job on a node failure by default) — the
# merge job runs after it and says MISSING for the lost node's tasks.
node_job=$(sbatch --parsable --job-name=tunebench-fleet --nodes="$nodes" --no-kill --no-requeue \
  --ntasks-per-node="$tasks" --output="$results/fleet-%j.out" "${extra[@]}" \
  --export=ALL,TB_FLEET_ENV="$results/fleet.env" ci/slurm/node-job.sh)
node_job=${node_job%%;*}
merge_job=$(sbatch --parsable --job-name=tunebench-merge --nodes=1 --ntasks=1 \
  --dependency=afterany:"$node_job" --output="$results/merge-%j.out" "${extra[@]}" \
  --export=ALL,TB_FLEET_ENV="$results/fleet.env",TB_NODE_JOB="$node_job" ci/slurm/merge-job.sh)
merge_job=${merge_job%%;*}
echo "fleet job $node_job ($nodes node(s) x $tasks task(s)), merge job $merge_job after it"
echo "results: $results (fleet.md, fleet.sqlite, report/); watch: squeue -j $node_job,$merge_job"

((wait)) || exit 0
while squeue -h -j "$node_job,$merge_job" 2> /dev/null | grep -q .; do sleep 2; done
cat "$results/merge-$merge_job.out" 2> /dev/null || true
# The merge job's own verdict: fleet.md's last line says how many tasks are missing.
[[ -f $results/fleet.ok ]]
