"""Launches a Python training script on N ranks through Open MPI's mpirun:

    python3 -m zero.run -n 4 train.py [script arguments]
    python3 -m zero.run -n 8 --hostfile hosts train.py

is `mpirun -n 4 [--hostfile hosts] python3 train.py ...` with the flags
zero-run uses: --oversubscribe (more ranks than cores is allowed),
--bind-to none, and --allow-run-as-root where the launcher runs as root.
In the script, zero.rank() and zero.world_size() say where it runs.
"""

import argparse
import os
import shutil
import sys

from zero import _bundle


def mpirun_command(ranks, script, arguments, hostfile=None, mpirun=None):
    # The wheel's own mpirun (zero/_bundle), else the system's.
    mpirun = mpirun or (_bundle.mpirun() if _bundle.present()
                        else shutil.which("mpirun"))
    if mpirun is None:
        raise SystemExit("zero.run: mpirun not found: install Open MPI "
                         "(apt-get install openmpi-bin)")
    command = [mpirun, "-n", str(ranks), "--oversubscribe", "--bind-to",
               "none"]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    if hostfile:
        command += ["--hostfile", hostfile]
    return command + [sys.executable, script] + list(arguments)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m zero.run",
        description="Run a Python training script on N ranks (mpirun).")
    parser.add_argument("-n", "--ranks", type=int, required=True,
                        help="number of ranks")
    parser.add_argument("--hostfile", help="Open MPI hostfile (several hosts)")
    parser.add_argument("script", help="the training script")
    parser.add_argument("arguments", nargs=argparse.REMAINDER,
                        help="arguments for the script")
    args = parser.parse_args(argv)
    if args.ranks < 1:
        parser.error(f"-n must be at least 1, got {args.ranks}")
    if not os.path.isfile(args.script):
        parser.error(f"no such script: {args.script}")
    command = mpirun_command(args.ranks, args.script, args.arguments,
                             args.hostfile)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
