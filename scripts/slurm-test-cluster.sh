#!/usr/bin/env bash
# A private one-node Slurm cluster on this machine, for the tests (tests/slurm.cmake) and for trying the job
# scripts in jobs/slurm/ without a real cluster. Everything lives under DIR: slurm.conf, a munge key and
# socket, the controller's state, the node's spool, the logs and the daemons' PID files. munged runs as the
# munge user, slurmctld and slurmd as root, on ports of their own (not Slurm's 6817/6818, nor the system's
# munge socket), so the cluster runs beside a system Slurm and beside another test cluster.
#
# usage: scripts/slurm-test-cluster.sh start DIR [--mpi-default TYPE] [--port N] [--cpus N]
#        scripts/slurm-test-cluster.sh stop DIR
#   start  writes DIR/slurm.conf (MpiDefault TYPE, default none; slurmctld on port N, slurmd on N+1, default
#          the first free pair from 16817; one node with N CPUs, default nproc), starts munged, slurmctld and
#          slurmd, waits until the node is idle and prints `export SLURM_CONF=DIR/slurm.conf` on stdout:
#            eval "$(scripts/slurm-test-cluster.sh start /tmp/st-slurm)"
#   stop   cancels the cluster's jobs and stops its daemons by the PIDs in DIR.
# Needs root, slurm-wlm and munge (scripts/install-deps.sh). Exit status: 0 done, 2 bad arguments,
# 3 the cluster cannot start here (missing software, not root, a daemon failed: its log is shown). After a
# start, DIR/cluster.env (started) or DIR/unavailable (the reason) tells the tests what happened.
set -euo pipefail

readonly EXIT_USAGE=2 EXIT_CANNOT_START=3
readonly FIRST_PORT=16817
# Unix socket paths (the munge socket, slurmd's step sockets, PMIx's) must fit in 108 bytes.
readonly MAX_DIR_LENGTH=60

log() { printf 'slurm-test-cluster: %s\n' "$*" >&2; }
usage_error() { log "$*"; log "usage: $0 start DIR [--mpi-default TYPE] [--port N] [--cpus N] | stop DIR"; exit "$EXIT_USAGE"; }

# cannot_start REASON: stops the daemons that did start, records the reason in DIR/unavailable and exits 3.
cannot_start() {
  log "cannot start: $*"
  stop_cluster 2>/dev/null || true
  printf '%s\n' "$*" >"$dir/unavailable"
  exit "$EXIT_CANNOT_START"
}

# show_log FILE: the last lines of a daemon's log, for a failure message.
show_log() {
  [ -f "$1" ] || return 0
  log "last lines of $1:"
  tail -n 15 "$1" | sed 's/^/    /' >&2
}

check_prerequisites() {
  PATH=$PATH:/usr/sbin:/sbin  # the daemons and runuser, also from a PATH without them (Debian's for users)
  [ "$(id -u)" -eq 0 ] || cannot_start "needs root (slurmd starts the jobs' tasks; slurmctld runs as SlurmUser=root)"
  local cmd missing=()
  for cmd in munged munge unmunge slurmctld slurmd sinfo sbatch srun scontrol squeue scancel runuser; do
    command -v "$cmd" >/dev/null || missing+=("$cmd")
  done
  [ "${#missing[@]}" -eq 0 ] ||
    cannot_start "not installed: ${missing[*]} (apt-get install slurm-wlm munge, see scripts/install-deps.sh)"
  id munge >/dev/null 2>&1 || cannot_start "there is no munge user (apt-get install munge creates it)"
}

# port_is_free PORT: nothing on this machine accepts connections on PORT.
port_is_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_ports: sets ctld_port and slurmd_port, the first free pair from FIRST_PORT unless --port chose it.
pick_ports() {
  local p=${port:-$FIRST_PORT} tries=0
  while ! { port_is_free "$p" && port_is_free "$((p + 1))"; }; do
    [ -z "$port" ] || cannot_start "port $p or $((p + 1)) is in use (choose other ports with --port)"
    tries=$((tries + 1))
    [ "$tries" -lt 50 ] || cannot_start "no free pair of ports in $FIRST_PORT..$((p + 1))"
    p=$((p + 2))
  done
  ctld_port=$p
  slurmd_port=$((p + 1))
}

write_slurm_conf() {
  cat >"$dir/slurm.conf" <<EOF
# A one-node test cluster written by scripts/slurm-test-cluster.sh; everything under $dir.
ClusterName=scaletrain-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire (default 120 s) is also how long a requeued job waits before it may start again: 5 s keeps the
# requeue tests (jobs/slurm/train_requeue.sbatch) short.
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=5
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=$mpi_default
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# Finished jobs are forgotten 4 s after they end: with a MinJobAge above 4, sbatch -W polls every 8 s instead of 2 s.
MinJobAge=4
# The main scheduler's pass every second (default 60 s): a requeued job whose begin time has passed starts at the next
# pass (the backfill scheduler skips it while nothing else changes).
SchedulerParameters=sched_interval=1
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  : >"$dir/plugstack.conf"  # no SPANK plugins (the system's plugstack.conf may include some)
}

# start_munged: a private munged (own key and socket) running as the munge user.
start_munged() {
  local m=$dir/munge
  mkdir -p "$m"
  head -c 1024 /dev/urandom >"$m/munge.key"
  chown -R munge:munge "$m"
  chmod 0755 "$m"  # munged wants the socket's directory searchable by all; the key stays 0600
  chmod 0600 "$m/munge.key"
  if ! runuser -u munge -- munged --socket="$m/munge.socket" --key-file="$m/munge.key" \
       --pid-file="$m/munged.pid" --log-file="$m/munged.log" --seed-file="$m/munged.seed" 2>"$dir/log/munged.err"; then
    cat "$dir/log/munged.err" >&2
    show_log "$m/munged.log"
    cannot_start "munged failed to start (log: $m/munged.log)"
  fi
  if ! munge --socket="$m/munge.socket" -n | unmunge --socket="$m/munge.socket" >/dev/null; then
    show_log "$m/munged.log"
    cannot_start "munged started but a credential does not round-trip through $m/munge.socket"
  fi
}

# start_daemon NAME: slurmctld or slurmd with DIR/slurm.conf (both put themselves in the background).
start_daemon() {
  local name=$1 args=(-f "$dir/slurm.conf")
  [ "$name" = slurmctld ] && args+=(-c)  # -c: a fresh controller state
  [ "$name" = slurmd ] && args+=(-N "$node")
  if ! "$name" "${args[@]}" 2>"$dir/log/$name.err"; then
    cat "$dir/log/$name.err" >&2
    show_log "$dir/log/$name.log"
    cannot_start "$name failed to start (log: $dir/log/$name.log)"
  fi
}

# wait_for_idle_node: until sinfo shows the node idle (30 s at most; a node refused as invalid or drained fails
# at once).
wait_for_idle_node() {
  local state="" i
  for ((i = 0; i < 150; i++)); do
    state=$(SLURM_CONF=$dir/slurm.conf sinfo -h -N -n "$node" -o %T 2>/dev/null || true)
    [ "$state" = idle ] && return 0
    [[ $state == inval* || $state == drain* ]] && break
    sleep 0.2
  done
  show_log "$dir/log/slurmctld.log"
  show_log "$dir/log/slurmd.log"
  cannot_start "the node $node did not become idle (state: '${state:-no answer}'; the logs above say why)"
}

start_cluster() {
  stop_cluster 2>/dev/null  # a cluster left behind in DIR by an interrupted run
  rm -rf "$dir/state" "$dir/spool" "$dir/log" "$dir/munge" "$dir/unavailable" "$dir/cluster.env"
  mkdir -p "$dir/state" "$dir/spool" "$dir/log"
  chmod 0755 "$dir"  # munged, running as munge, reaches its key and socket through DIR
  check_prerequisites
  pick_ports
  node=$(hostname -s)
  write_slurm_conf
  local t0=$SECONDS
  start_munged
  start_daemon slurmctld
  start_daemon slurmd
  wait_for_idle_node
  printf 'export SLURM_CONF=%s\n' "$dir/slurm.conf" >"$dir/cluster.env"
  log "node $node idle ($cpus CPUs, MpiDefault=$mpi_default, slurmctld port $ctld_port) after" \
      "$((SECONDS - t0)) s; stop it with: $0 stop $dir"
  cat "$dir/cluster.env"
}

# alive PID: the process exists and is not a zombie waiting to be reaped.
alive() { [ -d "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

# stop_pids NAME:PIDFILE...: sends TERM to each process named in a PID file that is still that program, then
# waits for them all (10 s at most, then KILL) and removes the PID files.
stop_pids() {
  local spec name file pid pids=() i running
  for spec in "$@"; do
    name=${spec%%:*}
    file=${spec#*:}
    [ -f "$file" ] || continue
    pid=$(cat "$file")
    rm -f "$file"
    if [[ $pid =~ ^[0-9]+$ ]] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]; then
      kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
    fi
  done
  for ((i = 0; i < 200; i++)); do
    running=0
    for pid in "${pids[@]}"; do alive "$pid" && running=1; done
    [ "$running" -eq 0 ] && return 0
    sleep 0.05
  done
  for pid in "${pids[@]}"; do
    alive "$pid" && { log "process $pid did not stop within 10 s: killing it"; kill -KILL "$pid" 2>/dev/null; }
  done
  return 0
}

# cancel_jobs: cancels the cluster's jobs and waits (10 s at most) until slurmd has ended their steps.
cancel_jobs() {
  [ -f "$dir/slurmctld.pid" ] && [ -f "$dir/slurm.conf" ] || return 0
  local i
  SLURM_CONF=$dir/slurm.conf scancel --partition=debug 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do
    [ -z "$(SLURM_CONF=$dir/slurm.conf squeue -h -o %i 2>/dev/null)" ] && return 0
    sleep 0.2
  done
}

stop_cluster() {
  cancel_jobs
  stop_pids "slurmd:$dir/slurmd.pid" "slurmctld:$dir/slurmctld.pid"
  stop_pids "munged:$dir/munge/munged.pid"  # last: the daemons authenticate through it until they end
  rm -f "$dir/cluster.env"
}

main() {
  [ $# -ge 2 ] || usage_error "an action (start or stop) and a directory are required"
  local action=$1
  [ "$action" = stop ] && [ ! -d "$2" ] && return 0  # nothing was started there
  mkdir -p "$2"
  dir=$(cd "$2" && pwd)
  shift 2
  [ "${#dir}" -le "$MAX_DIR_LENGTH" ] ||
    usage_error "$dir is longer than $MAX_DIR_LENGTH characters: Unix socket paths under it would not fit (use e.g. /tmp/st-slurm)"
  mpi_default=none port="" cpus=$(nproc)
  while [ $# -gt 0 ]; do
    case "$1" in
      --mpi-default) mpi_default=${2:?--mpi-default needs a type}; shift 2 ;;
      --port) port=${2:?--port needs a number}; shift 2 ;;
      --cpus) cpus=${2:?--cpus needs a number}; shift 2 ;;
      *) usage_error "unknown option '$1'" ;;
    esac
  done
  [[ -z $port || $port =~ ^[0-9]+$ ]] || usage_error "--port '$port' is not a number"
  [[ $cpus =~ ^[1-9][0-9]*$ ]] || usage_error "--cpus '$cpus' is not a positive number"
  case "$action" in
    start) start_cluster ;;
    stop) stop_cluster ;;
    *) usage_error "unknown action '$action'" ;;
  esac
}

main "$@"
