#!/usr/bin/env bash
# A one-node SLURM cluster on localhost, for toolscale's tests and for trying `toolscale launch --executor slurm`.
#
#   slurm/dev-cluster.sh up       install Debian's packages if missing, start munge, MariaDB, slurmdbd,
#                                 slurmctld, slurmd (reuses a cluster that is already up)
#   slurm/dev-cluster.sh down     cancel its jobs, stop exactly the daemons it started (pid files)
#   slurm/dev-cluster.sh status   daemons and sinfo; exit 0 only when the cluster answers
#   slurm/dev-cluster.sh env      print `export SLURM_CONF=...` (eval it so sbatch/sacct find the cluster)
#
# Runs as root, without systemd or cgroups. Everything lives under one state directory,
# $TOOLSCALE_SLURM_DIR (default /tmp/toolscale-slurm): configs, munge key and socket, MariaDB data,
# spool, logs and pid files. Ports (TCP, 127.0.0.1): slurmctld 16817, slurmd 16818, slurmdbd 16819,
# MariaDB 16306 (override with TOOLSCALE_SLURM_PORT_BASE, default 16800: +17, +18, +19, -494).
# The node advertises $TOOLSCALE_SLURM_CPUS CPUs (default 8, more than the machine has is fine:
# SlurmdParameters=config_overrides) so job arrays run wide.
set -euo pipefail

D="${TOOLSCALE_SLURM_DIR:-/tmp/toolscale-slurm}"
BASE="${TOOLSCALE_SLURM_PORT_BASE:-16800}"
CPUS="${TOOLSCALE_SLURM_CPUS:-8}"
CTLD_PORT=$((BASE + 17)); SLURMD_PORT=$((BASE + 18)); DBD_PORT=$((BASE + 19)); DB_PORT=$((BASE - 494))
ETC="$D/etc"; RUN="$D/run"; LOG="$D/log"; MUNGE_SOCK="$D/munge/munge.socket"
export SLURM_CONF="$ETC/slurm.conf"
PACKAGES=(slurmctld slurmd slurm-client munge slurmdbd mariadb-server-core mariadb-client-core)

say() { echo "dev-cluster: $*" >&2; }
die() { say "error: $*"; exit 1; }

pid_of() { local f="$RUN/$1.pid"; [[ -s "$f" ]] && cat "$f" || true; }
# a pid file counts only while its process is that daemon (a reused PID is never signalled)
alive() {
  local p; p="$(pid_of "$1")"
  [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null && [[ "$(cat "/proc/$p/comm" 2>/dev/null)" == "$1" ]]
}

install_packages() {
  local missing=()
  command -v slurmctld >/dev/null || missing+=(slurmctld)
  command -v slurmd >/dev/null || missing+=(slurmd)
  command -v sbatch >/dev/null || missing+=(slurm-client)
  command -v munged >/dev/null || missing+=(munge)
  command -v slurmdbd >/dev/null || missing+=(slurmdbd)
  command -v mariadbd >/dev/null || missing+=(mariadb-server-core)
  command -v mariadb >/dev/null || missing+=(mariadb-client-core)
  [[ ${#missing[@]} -eq 0 ]] && return 0
  [[ $(id -u) -eq 0 ]] || die "missing ${missing[*]}; run as root (or install: apt-get install ${PACKAGES[*]})"
  say "installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  # policy-rc.d keeps the packages' init scripts from starting system-wide daemons
  local policy=/usr/sbin/policy-rc.d created_policy=0
  if [[ ! -e $policy ]]; then printf '#!/bin/sh\nexit 101\n' > $policy; chmod +x $policy; created_policy=1; fi
  apt-get update -qq >"$LOG/apt.log" 2>&1 || { [[ $created_policy = 1 ]] && rm -f $policy; die "apt-get update failed (see $LOG/apt.log)"; }
  apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >>"$LOG/apt.log" 2>&1 \
    || { [[ $created_policy = 1 ]] && rm -f $policy; die "apt-get install failed (see $LOG/apt.log)"; }
  [[ $created_policy = 1 ]] && rm -f $policy
  return 0
}

write_configs() {
  local host mem
  host="$(hostname -s)"
  mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 ))
  mkdir -p "$ETC" "$RUN" "$LOG" "$D/munge" "$D/spool/ctld" "$D/spool/d" "$D/mysql"
  cat > "$ETC/slurm.conf" <<EOF
# written by slurm/dev-cluster.sh
ClusterName=toolscale
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# cred_expire also sets how long a requeued job waits before it may start again (default 120 s)
AuthInfo=socket=$MUNGE_SOCK,cred_expire=10
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
StateSaveLocation=$D/spool/ctld
SlurmdSpoolDir=$D/spool/d
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
EnforcePartLimits=ALL
ReturnToService=2
KillWait=5
SchedulerParameters=batch_sched_delay=0,sched_interval=1
SlurmdParameters=config_overrides
MpiDefault=none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$MUNGE_SOCK
JobCompType=jobcomp/none
InactiveLimit=0
MinJobAge=60
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=10
NodeName=$host NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  cat > "$ETC/slurmdbd.conf" <<EOF
# written by slurm/dev-cluster.sh
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$RUN/slurmdbd.pid
LogFile=$LOG/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=root
StorageLoc=toolscale_slurm_acct
EOF
  chmod 600 "$ETC/slurmdbd.conf"
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local secs=$1 what=$2; shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [[ $SECONDS -lt $end ]] || return 1
    sleep 0.2
  done
}

start_munge() {
  alive munged && return 0
  if [[ ! -s "$D/munge/munge.key" ]]; then
    dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none
  fi
  chmod 700 "$D/munge"; chmod 400 "$D/munge/munge.key"
  munged --force --key-file="$D/munge/munge.key" --socket="$MUNGE_SOCK" --pid-file="$RUN/munged.pid" \
    --log-file="$LOG/munged.log" --seed-file="$D/munge/munge.seed" \
    || die "munged did not start (see $LOG/munged.log)"
  wait_for 10 munge test -S "$MUNGE_SOCK" || die "munge socket $MUNGE_SOCK did not appear"
}

start_mariadb() {
  alive mariadbd && return 0
  if [[ ! -d "$D/mysql/data/mysql" ]]; then
    mariadb-install-db --no-defaults --user=root --datadir="$D/mysql/data" --auth-root-authentication-method=normal \
      --skip-test-db >"$LOG/mariadb-install.log" 2>&1 || die "mariadb-install-db failed (see $LOG/mariadb-install.log)"
  fi
  nohup mariadbd --no-defaults --user=root --datadir="$D/mysql/data" --socket="$D/mysql/mysqld.sock" \
    --pid-file="$RUN/mariadbd.pid" --port="$DB_PORT" --bind-address=127.0.0.1 --skip-grant-tables \
    --innodb-buffer-pool-size=64M --log-error="$LOG/mariadbd.log" >/dev/null 2>&1 &
  wait_for 30 mariadb mariadb --no-defaults --socket="$D/mysql/mysqld.sock" -u root -e "SELECT 1" \
    || die "MariaDB did not start (see $LOG/mariadbd.log)"
}

start_slurmdbd() {
  alive slurmdbd && return 0
  slurmdbd || die "slurmdbd did not start (see $LOG/slurmdbd.log)"
  wait_for 30 slurmdbd bash -c "exec 3<>/dev/tcp/127.0.0.1/$DBD_PORT" || die "slurmdbd is not listening on $DBD_PORT (see $LOG/slurmdbd.log)"
}

start_slurm() {
  if ! alive slurmctld; then
    slurmctld -f "$SLURM_CONF" || die "slurmctld did not start (see $LOG/slurmctld.log)"
  fi
  wait_for 30 slurmctld scontrol ping || die "slurmctld does not answer (see $LOG/slurmctld.log)"
  if ! alive slurmd; then
    slurmd -f "$SLURM_CONF" || die "slurmd did not start (see $LOG/slurmd.log)"
  fi
  local host; host="$(hostname -s)"
  if ! wait_for 30 node bash -c "sinfo -h -n $host -o %T | grep -Eq '^(idle|mixed|allocated)'"; then
    scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
    wait_for 15 node bash -c "sinfo -h -n $host -o %T | grep -Eq '^(idle|mixed|allocated)'" \
      || die "node $host is not up: $(sinfo -h -o '%T %E' 2>&1) (see $LOG/slurmd.log)"
  fi
  # accounting must know the cluster before sacct reports jobs
  wait_for 30 accounting bash -c "sacctmgr -n -P list cluster format=cluster | grep -qx toolscale" \
    || die "slurmdbd never registered cluster 'toolscale' (see $LOG/slurmdbd.log, $LOG/slurmctld.log)"
}

healthy() {
  for d in munged mariadbd slurmdbd slurmctld slurmd; do alive "$d" || return 1; done
  scontrol ping >/dev/null 2>&1
}

cmd_up() {
  local t0=$SECONDS
  mkdir -p "$LOG" "$RUN"
  if healthy; then say "already up ($D)"; return 0; fi
  install_packages
  write_configs
  start_munge
  start_mariadb
  start_slurmdbd
  start_slurm
  say "up in $((SECONDS - t0)) s: $CPUS CPUs on $(hostname -s), state in $D; eval \"\$($0 env)\" for sbatch/sacct"
}

stop_daemons() {  # SIGTERM the named daemons together, wait up to 10 s, SIGKILL what is left
  local name pid pids=() end=$((SECONDS + 10))
  for name in "$@"; do
    pid="$(pid_of "$name")"
    if alive "$name"; then kill -TERM "$pid" 2>/dev/null || true; pids+=("$name:$pid"); fi
  done
  for entry in "${pids[@]}"; do
    name=${entry%%:*}; pid=${entry##*:}
    while kill -0 "$pid" 2>/dev/null && [[ $SECONDS -lt $end ]]; do sleep 0.05; done
    if kill -0 "$pid" 2>/dev/null; then say "$name ($pid) ignored SIGTERM; killing"; kill -KILL "$pid" 2>/dev/null || true; fi
  done
  for name in "$@"; do rm -f "$RUN/$name.pid"; done
}

cmd_down() {
  local t0=$SECONDS
  if [[ -f "$SLURM_CONF" ]] && alive slurmctld; then
    scancel --full -u "$(id -un)" >/dev/null 2>&1 || true
    # let the job steps end while slurmd is still there to reap them
    local end=$((SECONDS + 8))
    while [[ -n "$(squeue -h -o %i 2>/dev/null)" && $SECONDS -lt $end ]]; do sleep 0.2; done
  fi
  stop_daemons slurmd slurmctld   # slurmctld reports its last state to slurmdbd, so that goes next
  stop_daemons slurmdbd
  stop_daemons mariadbd munged
  say "down in $((SECONDS - t0)) s (state kept in $D; remove it for a fresh cluster)"
}

cmd_status() {
  local ok=0
  for d in munged mariadbd slurmdbd slurmctld slurmd; do
    if alive "$d"; then echo "$d: running (pid $(pid_of "$d"))"; else echo "$d: stopped"; ok=1; fi
  done
  if [[ $ok = 0 ]] && scontrol ping >/dev/null 2>&1; then
    sinfo -o "%P %a %D %T %c %m" 2>&1
    return 0
  fi
  return 1
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) echo "export SLURM_CONF=$SLURM_CONF" ;;
  *) echo "usage: $0 up|down|status|env" >&2; exit 2 ;;
esac
