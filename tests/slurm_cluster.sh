# Sourced by tests/slurm_one_node.sh and tests/slurm_two_nodes.sh: a throwaway Slurm cluster's
# common parts from Debian's packages — a temporary directory, munged on its own socket and key,
# and a slurm.conf with its own ports — and the failure report both print. Nothing here starts
# slurmctld or slurmd: each test does, one node or two.

# Exits 1 naming what is missing, or when not root (slurmd needs it).
slurm_require() {
  local program
  for program in "$@"; do
    command -v "$program" > /dev/null || {
      echo "$0: $program is missing (ci/setup.sh installs slurm-wlm, munge, sqlite3, iproute2)" >&2
      exit 1
    }
  done
  [[ $(id -u) == 0 ]] || { echo "$0: needs root (slurmd)" >&2; exit 1; }
}

# Sets dir (the cluster's temporary directory) and exports SLURM_CONF inside it.
slurm_make_dir() {
  dir=$(mktemp -d /tmp/tunebench-slurm-XXXXXX)
  chmod 755 "$dir"
  mkdir -p "$dir"/{state,spool,log}
  export SLURM_CONF=$dir/slurm.conf
}

# The daemons' logs, the fleet's job outputs and every trial that was not ok, then exit 1.
fail() {
  echo "FAIL: $*" >&2
  for f in "$dir"/log/*.log "$dir"/results*/fleet-*.out "$dir"/results*/merge-*.out; do
    [[ -f $f ]] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }
  done
  for f in "$dir"/results*/fleet.sqlite; do
    [[ -f $f ]] && { echo "--- trials not ok in $f" >&2; sqlite3 "$f" "SELECT experiment, arm, status, error, worker_stderr FROM trials WHERE status != 'ok'" >&2; }
  done
  exit 1
}

# munged on the cluster's own socket and key.
slurm_start_munge() {
  head -c 1024 /dev/urandom > "$dir/munge.key"
  chmod 600 "$dir/munge.key"
  munged --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" \
    --log-file="$dir/log/munged.log" --pid-file="$dir/munged.pid" --seed-file="$dir/munge.seed"
}

# slurm_write_conf CLUSTER CONTROLLER LINE…: $SLURM_CONF with the settings both tests share
# (root, munge, ports from a random base, no cgroups or accounting, cons_tres by core) and then
# each LINE (NodeName=…, SlurmdTimeout=…); one partition "test" of all nodes. Each slurmd's spool,
# pid file and log are per node name (%n).
slurm_write_conf() {
  local cluster=$1 controller=$2
  shift 2
  local port=$((20000 + RANDOM % 20000))
  {
    cat << EOF2
ClusterName=$cluster
SlurmctldHost=$controller
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.sock
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
EOF2
    printf '%s\n' "$@"
    echo "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
  } > "$SLURM_CONF"
}

# Waits up to 30 s for every node to be idle; fails with sinfo's word otherwise.
slurm_wait_idle() {
  for _ in $(seq 60); do
    [[ $(sinfo -h -o %T 2> /dev/null | sort -u) == idle ]] && return 0
    sleep 0.5
  done
  fail "the cluster did not come up: $(sinfo 2>&1)"
}
