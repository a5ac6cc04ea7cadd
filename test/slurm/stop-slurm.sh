#!/usr/bin/env bash
# stop-slurm.sh - stop the single-node Slurm cluster that start-slurm.sh
# started: slurmctld and slurmd (scontrol shutdown, then their pid files),
# and munged if start-slurm.sh started it. Idempotent: nothing running is
# not an error. Leaves the packages, the munge key and slurm.conf in place.

set -u -o pipefail

readonly RUN_DIR=/run/zero-slurm
readonly CTLD_PID="$RUN_DIR/slurmctld.pid"
readonly SLURMD_PID="$RUN_DIR/slurmd.pid"
readonly MUNGE_PID=/run/munge/munged.pid

log() { echo "stop-slurm: $*" >&2; }

pid_of() { # pidfile -> pid if that process is alive
  local pid
  [[ -r "$1" ]] || return 1
  pid="$(cat "$1" 2>/dev/null)"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  # A zombie (exited, not yet reaped) is not running.
  [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]] && echo "$pid"
}

wait_gone() { # seconds pidfile...
  local limit=$(($1 * 10)) i f alive
  shift
  for ((i = 0; i < limit; i++)); do
    alive=0
    for f in "$@"; do pid_of "$f" >/dev/null && alive=1; done
    ((alive)) || return 0
    sleep 0.1
  done
  return 1
}

[[ -d "$RUN_DIR" ]] || { echo "slurm: stopped (nothing was started)"; exit 0; }
exec 9>"$RUN_DIR/lock" && flock -w 300 9 || log "warning: could not take $RUN_DIR/lock"

if pid_of "$CTLD_PID" >/dev/null || pid_of "$SLURMD_PID" >/dev/null; then
  # Only when the configuration in use is ours (its pid files are in RUN_DIR).
  pid_of "$CTLD_PID" >/dev/null && scontrol shutdown >/dev/null 2>&1
  if ! wait_gone 15 "$CTLD_PID" "$SLURMD_PID"; then
    for f in "$CTLD_PID" "$SLURMD_PID"; do
      pid="$(pid_of "$f")" && kill -TERM "$pid" 2>/dev/null
    done
    if ! wait_gone 10 "$CTLD_PID" "$SLURMD_PID"; then
      for f in "$CTLD_PID" "$SLURMD_PID"; do
        pid="$(pid_of "$f")" && { log "killing $f's $pid"; kill -KILL "$pid" 2>/dev/null; }
      done
    fi
  fi
fi
# Job steps that outlived slurmd (slurmstepd) would keep tasks running.
for f in /var/spool/slurmd/*.pid; do
  [[ -e "$f" ]] || continue
  pid="$(pid_of "$f")" && kill -TERM "$pid" 2>/dev/null
done
rm -f "$CTLD_PID" "$SLURMD_PID"

if [[ -e "$RUN_DIR/munged.started" ]]; then
  if pid="$(pid_of "$MUNGE_PID")"; then
    kill -TERM "$pid" 2>/dev/null
    wait_gone 10 "$MUNGE_PID" || kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$RUN_DIR/munged.started"
fi

if pid_of "$CTLD_PID" >/dev/null || pid_of "$SLURMD_PID" >/dev/null; then
  log "error: slurm daemons still running"
  exit 1
fi
echo "slurm: stopped"
