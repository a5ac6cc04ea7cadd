#!/usr/bin/env python3
"""Runs a command and reports how it ended and how long it took, for tests
that promise a bound ("the job ends at once", "refused within 2 s").

  run_timed.py SECONDS -- COMMAND...

The command's output passes through. Afterwards two lines are appended to
standard output:

  exit status N          (N < 0: killed by signal -N, as subprocess says)
  elapsed: within the SECONDS s bound
  elapsed: T s, over the SECONDS s bound

so that FileCheck holds both. `not timeout 60 CMD` cannot do that: a hang
that timeout ends (124) passes for a failure, and a run of 59 s for one of
one. The command is killed, with its whole process group (mpirun and its
ranks), at twice the bound plus 10 s; it then reports the kill and is over
the bound. Exits 0 once the command has run, 2 on a usage error.
"""

import os
import signal
import subprocess
import sys
import time


def main(argv):
    if len(argv) < 3 or argv[1] != "--":
        print("usage: run_timed.py SECONDS -- COMMAND...", file=sys.stderr)
        return 2
    try:
        bound = float(argv[0])
    except ValueError:
        print(f"run_timed.py: the bound must be a number of seconds, got "
              f"'{argv[0]}'", file=sys.stderr)
        return 2
    command = argv[2:]
    sys.stdout.flush()
    start = time.monotonic()
    process = subprocess.Popen(command, start_new_session=True)
    try:
        status = process.wait(timeout=2 * bound + 10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        status = process.wait()
        print(f"run_timed.py: killed after {2 * bound + 10:g} s")
    elapsed = time.monotonic() - start
    print(f"exit status {status}")
    if elapsed <= bound:
        print(f"elapsed: within the {bound:g} s bound")
    else:
        print(f"elapsed: {elapsed:.1f} s, over the {bound:g} s bound")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
