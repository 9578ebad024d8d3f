#!/usr/bin/env bash
# The fleet on a Slurm cluster of two compute nodes on this one machine: each slurmd in its own
# network and UTS namespace (node tbnode1 / tbnode2, its own address on a bridge, its own
# hostname and /etc/hosts naming the nodes), the controller and munged beside them in the host's
# namespaces. Addresses exist only inside the namespaces and on the bridge this script makes;
# everything is torn down at the end, nothing reaches any other network. Then
#   1. ci/slurm/fleet.sh across both nodes, one task each, and the DDP suite with its two Gloo
#      ranks as job steps on the two nodes meeting in rank 0's TCPStore on tbnode1: the merged
#      database holds both nodes' runs once each, two hosts kept apart, and the DDP trial whose
#      ranks ran on tbnode1 and tbnode2;
#   2. the fleet again, and tbnode2 killed (every process in its namespace, slurmd included)
#      while its task runs: tbnode1's run is merged once, fleet.md and the report's summary say
#      MISSING for the lost task, and the fleet's exit status says so.
# Needs root (namespaces, slurmd), iproute2, util-linux and the packages ci/setup.sh installs.
#   tests/slurm_two_nodes.sh [TUNEBENCH_BINARY]   (default build/debian/tunebench)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/debian/tunebench}")
# shellcheck source=tests/slurm_cluster.sh
source tests/slurm_cluster.sh
slurm_require munged slurmctld slurmd sbatch srun scontrol sqlite3 ip nsenter unshare
slurm_make_dir
tag=$$
net=10.213.$((20 + RANDOM % 200))
bridge=tbbr$tag
host=$(hostname -s)
cleanup() {
  scontrol shutdown > /dev/null 2>&1 || true
  sleep 1
  for i in 1 2; do
    ip netns pids "tb$tag-$i" 2> /dev/null | xargs -r kill -9 2> /dev/null || true
    ip netns del "tb$tag-$i" 2> /dev/null || true
  done
  for pid in "$dir"/slurmctld.pid "$dir"/munged.pid; do
    [[ -f $pid ]] && kill "$(cat "$pid")" 2> /dev/null || true
  done
  ip link del "$bridge" 2> /dev/null || true
  sleep 1
  rm -rf "$dir"
}
trap cleanup EXIT

# The network: a bridge with the controller's address, a veth pair per node into its namespace.
ip link add "$bridge" type bridge
ip addr add "$net.1/24" dev "$bridge"
ip link set "$bridge" up
printf '127.0.0.1 localhost\n%s.1 %s\n%s.11 tbnode1\n%s.12 tbnode2\n' "$net" "$host" "$net" "$net" > "$dir/hosts"
for i in 1 2; do
  ns=tb$tag-$i
  ip netns add "$ns"
  ip link add "tbv$tag$i" type veth peer name eth0 netns "$ns"
  ip link set "tbv$tag$i" master "$bridge" up
  ip -n "$ns" addr add "$net.1$i/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
done

slurm_start_munge
# SlurmdTimeout 10: a killed node is DOWN within seconds, not the default five minutes.
slurm_write_conf tunebench-two-nodes "$host($net.1)" SlurmdTimeout=10 \
  "NodeName=tbnode1 NodeAddr=$net.11 CPUs=$(nproc) State=UNKNOWN" \
  "NodeName=tbnode2 NodeAddr=$net.12 CPUs=$(nproc) State=UNKNOWN"
slurmctld
# nsenter, not `ip netns exec`: the latter mounts a sysfs of its own, which hides the cgroup
# filesystem slurmd reads.
for i in 1 2; do
  mkdir -p "$dir/spool/tbnode$i"
  nsenter --net="/run/netns/tb$tag-$i" unshare --uts --mount --propagation private sh -c \
    "hostname tbnode$i && mount --bind '$dir/hosts' /etc/hosts && exec slurmd -N tbnode$i"
done
slurm_wait_idle
echo "[slurm] two-node cluster up: tbnode1 ($net.11), tbnode2 ($net.12), controller $host ($net.1)"

# 1. One task per node and the DDP suite with a rank on each node.
results=$dir/results
ci/slurm/fleet.sh --suite tests/suites/slurm.json --ddp-suite tests/suites/slurm_ddp.json \
  --nodes 2 --tasks-per-node 1 --results "$results" --tunebench "$bin" --label slurm-test \
  --wait -- --time=10 || fail "the fleet failed"
db=$results/fleet.sqlite
q() { sqlite3 "$db" "$1"; }
[[ $(q "SELECT count(*) FROM runs WHERE suite_name = 'slurm-fleet' AND status = 'completed'") == 2 ]] ||
  fail "expected both nodes' runs completed in the merged database: $(q 'SELECT uuid, suite_name, status FROM runs')"
[[ $(q "SELECT group_concat(h.hostname, ' ') FROM (SELECT DISTINCT h.hostname FROM runs r JOIN hosts h ON h.id = r.host_id WHERE r.suite_name = 'slurm-fleet' ORDER BY h.hostname) h") == "tbnode1 tbnode2" ]] ||
  fail "expected the two nodes' runs on hosts tbnode1 and tbnode2: $(q 'SELECT hostname FROM hosts')"
[[ $(q "SELECT count(*) FROM runs WHERE suite_name = 'slurm-ddp' AND status = 'completed'") == 1 ]] ||
  fail "expected the DDP run completed: $(q 'SELECT uuid, suite_name, status FROM runs')"
ranks=$(q "SELECT json_extract(evidence, '$.process_count') || ' ' ||
                  json_extract(evidence, '$.processes[0].ddp.store') || ' ' ||
                  json_extract(evidence, '$.processes[1].ddp.store') || ' ' ||
                  json_extract(evidence, '$.processes[0].node') || ' ' ||
                  json_extract(evidence, '$.processes[1].node') || ' ' ||
                  json_extract(evidence, '$.processes[1].ddp.host')
           FROM trials t JOIN runs r ON r.uuid = t.run_uuid
           WHERE r.suite_name = 'slurm-ddp' AND t.arm = 'on' AND t.status = 'ok'")
[[ $ranks == "2 TCPStore TCPStore tbnode1 tbnode2 tbnode2" ]] ||
  fail "expected the on arm's 2 ranks on tbnode1 and tbnode2 over a TCPStore, got '$ranks'"
grep -q "0 of 3 expected result file(s) missing" "$results/fleet.md" || fail "fleet.md: $(cat "$results/fleet.md")"
echo "[slurm] fleet across 2 nodes: 2 node runs + 1 DDP run merged; ranks: $ranks"

# 2. tbnode2 lost while its task runs.
results=$dir/results-lost
ci/slurm/fleet.sh --suite tests/suites/slurm.json --nodes 2 --tasks-per-node 1 \
  --results "$results" --tunebench "$bin" --wait -- --time=10 > "$dir/lost.out" 2>&1 &
fleet=$!
for _ in $(seq 600); do
  grep -qs tbnode2 "$results"/nodes/task-*.started && break
  sleep 0.1
done
grep -qs tbnode2 "$results"/nodes/task-*.started || fail "tbnode2's task never started"
ip netns pids "tb$tag-2" | xargs -r kill -9
echo "[slurm] tbnode2 killed (slurmd and its task) while the task ran"
# The fleet must end on its own: a lost node is neither waited for nor retried.
for _ in $(seq 240); do
  kill -0 "$fleet" 2> /dev/null || break
  sleep 0.5
done
if kill -0 "$fleet" 2> /dev/null; then
  squeue >&2 || true
  fail "the fleet did not end within 2 minutes of losing tbnode2: $(cat "$dir/lost.out")"
fi
if wait "$fleet"; then
  fail "a fleet that lost a node passed: $(cat "$dir/lost.out")"
fi
[[ $(sqlite3 "$results/fleet.sqlite" "SELECT count(*) FROM runs WHERE status = 'completed'") == 1 ]] ||
  fail "tbnode1's run was not merged once: $(sqlite3 "$results/fleet.sqlite" 'SELECT uuid, status FROM runs')"
[[ $(sqlite3 "$results/fleet.sqlite" "SELECT hostname FROM hosts") == tbnode1 ]] ||
  fail "expected only tbnode1's host merged"
grep -q "| tbnode2 | .*\*\*MISSING\*\*" "$results/fleet.md" || fail "fleet.md does not say tbnode2's task is missing: $(cat "$results/fleet.md")"
grep -q "MISSING" "$results/report/summary.md" || fail "the report's summary does not say the task is missing"
echo "[slurm] lost node: tbnode1's run merged once, tbnode2's task MISSING in fleet.md and the report"
echo "[slurm] passed"
