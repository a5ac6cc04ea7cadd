#!/usr/bin/env python3
"""Kills one rank of a running zero-run job and reports how the job ended.

  kill_rank.py --rank R [--signal 9] [--wait 60] -- zero-run PROGRAM -n N ...

Starts the command (which must be long: e.g. --steps 100000), waits until
training is under way (the first "step" progress line), finds the rank's
process among the launcher's descendants (the one whose environment holds
OMPI_COMM_WORLD_RANK=R), sends it the signal, and waits up to --wait seconds
for the job to end. Prints the job's output, then one of

  killed rank R (pid P) with signal S
  exit status X after T s
  HANG: still running after W s

and exits 0 (FileCheck judges the output). A job that hangs is killed (its
whole process group) so that nothing is left behind.
"""

import argparse
import os
import signal
import subprocess
import sys
import threading
import time


def descendants(root):
    """Pids of every process below `root` (from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may hold spaces: the fields after ')' are fixed.
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            found.append(child)
            todo.append(child)
    return found


def rank_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return None
    for item in env:
        if item.startswith(b"OMPI_COMM_WORLD_RANK="):
            return int(item.split(b"=", 1)[1])
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--signal", type=int, default=signal.SIGKILL)
    parser.add_argument("--wait", type=float, default=60)
    parser.add_argument("--start-timeout", type=float, default=60)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    lines = []
    started = threading.Event()

    def pump():
        for raw in proc.stdout:
            line = raw.decode(errors="replace")
            lines.append(line)
            if line.startswith("step "):
                started.set()
        started.set()  # the output ended: do not wait for a step line

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    begin = time.monotonic()
    started.wait(args.start_timeout)

    victim = None
    while victim is None and proc.poll() is None and time.monotonic() - begin < args.start_timeout:
        for pid in descendants(proc.pid):
            if rank_of(pid) == args.rank:
                victim = pid
                break
        else:
            time.sleep(0.1)
    note = []
    if victim is None:
        note.append(f"no process of rank {args.rank} found (job status {proc.poll()})")
    else:
        os.kill(victim, args.signal)
        note.append(f"killed rank {args.rank} (pid {victim}) with signal {args.signal}")
        killed_at = time.monotonic()
        try:
            proc.wait(args.wait)
            note.append(f"exit status {proc.returncode} after "
                        f"{time.monotonic() - killed_at:.1f} s")
        except subprocess.TimeoutExpired:
            note.append(f"HANG: still running after {args.wait:g} s")
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    reader.join(5)
    sys.stdout.write("".join(lines))
    for line in note:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
