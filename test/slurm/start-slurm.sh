#!/usr/bin/env bash
# start-slurm.sh - start a single-node Slurm cluster on this machine for the
# full test tier (`srun -n 4 zero-run ...`, `srun -n 2 python3 train.py`).
#
# Idempotent: installs what is missing (Debian: apt-get update once, then
# apt-get install --no-install-recommends), creates a munge key if there is
# none, starts munged, writes /etc/slurm/slurm.conf for one node, starts
# slurmctld and slurmd as plain background daemons (no systemd), waits until
# the node is idle and prints
#   slurm: ready (N CPUs, mpi plugins: ...)
# Run again while the cluster is up, it only checks and prints that line.
# Stop it with stop-slurm.sh.
#
# Must run as root (installs packages, SlurmUser=root in a container).
#
# Environment:
#   ZERO_SLURM_CPUS     CPUs the node declares (default: the larger of nproc
#                       and 8), so that 4 tasks fit on a 2-core machine;
#                       slurmd takes the declared count (config_overrides).
#   ZERO_SLURM_TIMEOUT  seconds to wait for the node to be idle (default 60).
#   ZERO_SLURM_NO_INSTALL=1  never run apt-get; fail if something is missing.

set -u -o pipefail

readonly MARKER="# written by zero test/slurm/start-slurm.sh"
readonly CONF_DIR=/etc/slurm
readonly CONF="$CONF_DIR/slurm.conf"
readonly RUN_DIR=/run/zero-slurm          # pid files and what we started
readonly LOG_DIR=/var/log/slurm
readonly CTLD_LOG="$LOG_DIR/slurmctld.log"
readonly SLURMD_LOG="$LOG_DIR/slurmd.log"
readonly CTLD_PID="$RUN_DIR/slurmctld.pid"
readonly SLURMD_PID="$RUN_DIR/slurmd.pid"
readonly MUNGE_PID=/run/munge/munged.pid
readonly MUNGE_KEY=/etc/munge/munge.key
readonly TIMEOUT="${ZERO_SLURM_TIMEOUT:-60}"

log() { echo "start-slurm: $*" >&2; }

show_logs() {
  local f
  for f in "$CTLD_LOG" "$SLURMD_LOG" /var/log/munge/munged.log \
           "$RUN_DIR/slurmctld.out" "$RUN_DIR/slurmd.out" "$RUN_DIR/munged.out"; do
    if [[ -s "$f" ]]; then
      echo "---- tail of $f ----" >&2
      tail -n 25 "$f" >&2
    fi
  done
}

die() {
  log "error: $*"
  show_logs
  exit 1
}

pid_alive() { # pidfile
  local pid
  [[ -r "$1" ]] || return 1
  pid="$(cat "$1" 2>/dev/null)"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  # A zombie (exited, not yet reaped) is not running.
  [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]]
}

[[ "$(id -u)" == 0 ]] || die "must run as root (installs packages, runs slurmctld/slurmd as root)"

mkdir -p "$RUN_DIR" || die "cannot create $RUN_DIR"
# One start at a time (tests may start the cluster concurrently). The
# daemons are started with fd 9 closed, so they do not hold the lock.
exec 9>"$RUN_DIR/lock" || die "cannot open $RUN_DIR/lock"
flock -w 300 9 || die "another start-slurm.sh/stop-slurm.sh holds $RUN_DIR/lock"

# ---------------------------------------------------------------- packages
# libpmix-dev holds the unversioned libpmix.so that Slurm's mpi_pmix_v4.so
# dlopens (from <libdir>/pmix2/lib); without it `srun --mpi=pmix` fails.
pmix_lib() { compgen -G "/usr/lib/*/pmix2/lib/libpmix.so" >/dev/null; }

missing=()
for pkg in slurmctld slurmd slurm-client munge; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done
pmix_lib || missing+=(libpmix-dev)

if ((${#missing[@]})); then
  [[ "${ZERO_SLURM_NO_INSTALL:-0}" == 1 ]] && die "missing packages: ${missing[*]} (ZERO_SLURM_NO_INSTALL=1)"
  command -v apt-get >/dev/null || die "missing packages ${missing[*]} and no apt-get"
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >"$RUN_DIR/apt.log" 2>&1 || { cat "$RUN_DIR/apt.log" >&2; die "apt-get update failed"; }
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$RUN_DIR/apt.log" 2>&1 ||
    { tail -n 30 "$RUN_DIR/apt.log" >&2; die "apt-get install ${missing[*]} failed"; }
fi
for exe in munged slurmctld slurmd srun sinfo scontrol; do
  command -v "$exe" >/dev/null || die "$exe not found after install"
done

# ------------------------------------------------------------------- munge
if [[ ! -s "$MUNGE_KEY" ]]; then
  log "creating $MUNGE_KEY"
  mkdir -p /etc/munge
  if command -v mungekey >/dev/null; then
    mungekey --create --force --keyfile="$MUNGE_KEY" || die "mungekey failed"
  else
    dd if=/dev/urandom of="$MUNGE_KEY" bs=1 count=1024 status=none || die "cannot write $MUNGE_KEY"
  fi
fi
chown munge:munge /etc/munge "$MUNGE_KEY" && chmod 700 /etc/munge && chmod 400 "$MUNGE_KEY" ||
  die "cannot set the owner/mode of $MUNGE_KEY"
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
chmod 755 /run/munge

if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  if pid_alive "$MUNGE_PID"; then
    die "munged (pid $(cat "$MUNGE_PID")) runs but munge -n | unmunge fails"
  fi
  rm -f "$MUNGE_PID" /run/munge/munge.socket.2*
  log "starting munged"
  runuser -u munge -- /usr/sbin/munged 9>&- </dev/null >"$RUN_DIR/munged.out" 2>&1 ||
    die "munged failed to start"
  touch "$RUN_DIR/munged.started"   # stop-slurm.sh stops only what we started
  for _ in $(seq 50); do
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
    sleep 0.1
  done
  munge -n 2>/dev/null | unmunge >/dev/null 2>&1 || die "munged does not answer (munge -n | unmunge)"
fi

# -------------------------------------------------------------- slurm.conf
node="$(hostname -s 2>/dev/null)"
[[ -n "$node" ]] || node=localhost
ncpu="$(nproc)"
cpus="${ZERO_SLURM_CPUS:-$((ncpu > 8 ? ncpu : 8))}"
[[ "$cpus" =~ ^[1-9][0-9]*$ ]] || die "ZERO_SLURM_CPUS='$cpus' is not a number of CPUs"

if [[ -e "$CONF" ]] && ! grep -qxF "$MARKER" "$CONF"; then
  die "$CONF exists and was not written by this script; not touching a real cluster's configuration"
fi

mkdir -p "$CONF_DIR" "$LOG_DIR" /var/spool/slurmctld /var/spool/slurmd || die "cannot create the slurm directories"
new_conf="$(mktemp "$RUN_DIR/slurm.conf.XXXXXX")"
cat >"$new_conf" <<EOF
$MARKER
# A single-node test cluster; no cgroups, no accounting database.
ClusterName=zero-test
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmctldLogFile=$CTLD_LOG
SlurmdLogFile=$SLURMD_LOG
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOG_DIR/jobcomp.log
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
# The node declares $cpus CPUs (the machine has $ncpu); slurmd takes them.
SlurmdParameters=config_overrides
ReturnToService=2
KillOnBadExit=1
KillWait=5
InactiveLimit=0
MinJobAge=300
SlurmdTimeout=60
SlurmctldTimeout=60
MessageTimeout=20
NodeName=$node NodeHostname=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF
conf_changed=0
if ! cmp -s "$new_conf" "$CONF"; then
  conf_changed=1
  mv -f "$new_conf" "$CONF" || die "cannot write $CONF"
  chmod 644 "$CONF"
else
  rm -f "$new_conf"
fi

# ----------------------------------------------------------------- daemons
if ((conf_changed)) && { pid_alive "$CTLD_PID" || pid_alive "$SLURMD_PID"; }; then
  log "slurm.conf changed: restarting slurmctld and slurmd"
  scontrol shutdown >/dev/null 2>&1
  for _ in $(seq 100); do
    pid_alive "$CTLD_PID" || pid_alive "$SLURMD_PID" || break
    sleep 0.1
  done
  for p in "$CTLD_PID" "$SLURMD_PID"; do
    pid_alive "$p" && kill "$(cat "$p")" 2>/dev/null
  done
  sleep 1
fi

if ! pid_alive "$CTLD_PID"; then
  log "starting slurmctld"
  # -c: start without the previous run's jobs; -i: ignore unreadable state.
  setsid /usr/sbin/slurmctld -c -i 9>&- </dev/null >"$RUN_DIR/slurmctld.out" 2>&1 ||
    die "slurmctld failed to start"
fi
if ! pid_alive "$SLURMD_PID"; then
  log "starting slurmd"
  setsid /usr/sbin/slurmd -N "$node" 9>&- </dev/null >"$RUN_DIR/slurmd.out" 2>&1 ||
    die "slurmd failed to start"
fi

# ------------------------------------------------------------------- ready
state=""
deadline=$((SECONDS + TIMEOUT))
while ((SECONDS < deadline)); do
  state="$(sinfo -h -n "$node" -o %T 2>/dev/null | head -n 1)"
  case "$state" in
    idle|mixed|allocated) break ;;
    down*|drain*|fail*|unknown*|"")
      # A node left down by an earlier run: put it back.
      [[ "$state" == down* || "$state" == drain* ]] &&
        scontrol update NodeName="$node" State=RESUME >/dev/null 2>&1 ;;
  esac
  pid_alive "$CTLD_PID" || die "slurmctld exited"
  pid_alive "$SLURMD_PID" || die "slurmd exited"
  sleep 0.5
done
case "$state" in
  idle|mixed|allocated) ;;
  *) sinfo -N -l >&2 2>&1; scontrol show node "$node" >&2 2>&1
     die "node $node is '${state:-not listed}' after ${TIMEOUT}s, not idle" ;;
esac

# A one-task step proves munge credentials, slurmd and slurmstepd work.
if ! out="$(timeout 30 srun -n 1 --immediate=20 --mpi=none true 2>&1)"; then
  echo "$out" >&2
  die "srun -n 1 true failed on node $node"
fi

cpus_now="$(sinfo -h -n "$node" -o %c 2>/dev/null | head -n 1)"
# srun --mpi=list: "MPI plugin types are..." then one type a line, then
# "specific pmix plugin versions available: pmix_v4".
mpi="$(srun --mpi=list 2>&1 | awk '
  /plugin types are/ {next}
  /versions available/ {sub(/.*available: */, ""); v=$0; next}
  NF {t = t (t ? "," : "") $1}
  END {printf "%s%s", t, (v ? " (" v ")" : "")}')"
echo "slurm: ready (${cpus_now:-$cpus} CPUs, mpi plugins: ${mpi:-none listed})"
