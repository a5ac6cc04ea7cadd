"""What the runtime benchmarks under bench/ share.

* `build_lock(path)`: holds flock(2) on `path` (the lock the project's builds
  take, e.g. /tmp/zero-build.lock, the same lock as `flock PATH command`)
  around a batch of timed runs, so that no compile runs beside them on a
  small machine; each batch is kept short so that builds get in between.
* `snapshot_zero_run`, `snapshot`: copies build/bin/zero-run (or another
  built program) once, under the lock, so a rebuild between batches cannot
  mix two binaries into one comparison (zero-run and gpt2_train relaunch
  themselves through /proc/self/exe, so the copy is whole).
* `run_quiet`: runs a command and measures the CPU time other processes
  took meanwhile (the build lock does not stop test suites); a run during
  which others took more than a threshold is run again, up to a limit.
* `run_zero`: one `zero-run ... --metrics-json` and its parsed JSON.
* `machine`: the lines that docs/benchmarks.md records for a result.
* `table`: a plain or markdown table.
"""

import contextlib
import datetime
import fcntl
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_ZERO_RUN = os.path.join(ROOT, "build", "bin", "zero-run")


@contextlib.contextmanager
def build_lock(path):
    """flock(path) for the duration of the block; no-op without a path."""
    if not path:
        yield 0.0
        return
    asked = time.monotonic()
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield time.monotonic() - asked
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def snapshot_zero_run(zero_run, directory):
    """A private copy of zero-run, and the first 12 hex digits of its sha256."""
    return snapshot(zero_run, directory, "zero-run")


def snapshot(program, directory, name=None):
    """A private copy of a built program (zero-run, gpt2_train), named `name`
    or as the program, and the first 12 hex digits of its sha256."""
    if not os.access(program, os.X_OK):
        sys.exit(f"error: {program} not found or not executable; build first "
                 "(scripts/build.sh)")
    copy = os.path.join(directory, name or os.path.basename(program))
    shutil.copy2(program, copy)
    with open(copy, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    return copy, digest


def _busy_seconds():
    """CPU seconds all processes have used since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...: busy = all but idle, iowait.
    busy = sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)
    return busy / os.sysconf("SC_CLK_TCK")


def _children_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Interference:
    """Retry policy and tally for `run_quiet`.

    threshold: the largest share of the machine's CPU (0-1) that other
    processes may take during a run before it is run again; retries: how
    many times at most. A run kept after the last retry is kept as it is.
    """

    def __init__(self, threshold=0.05, retries=4):
        self.threshold = threshold
        self.retries = retries
        self.reruns = 0
        self.kept_noisy = 0


def run_quiet(cmd, policy):
    """subprocess.run(cmd), again while others used the CPU meanwhile.

    Returns (CompletedProcess, share of the machine's CPU others used during
    the kept run).
    """
    cores = os.cpu_count() or 1
    for attempt in range(policy.retries + 1):
        busy0, own0, wall0 = _busy_seconds(), _children_seconds(), time.monotonic()
        result = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.monotonic() - wall0
        foreign = (_busy_seconds() - busy0) - (_children_seconds() - own0)
        share = max(0.0, foreign) / (wall * cores) if wall > 0 else 0.0
        if result.returncode != 0 or share <= policy.threshold:
            return result, share
        if attempt < policy.retries:
            policy.reruns += 1
            print("  others took %.0f%% of the CPU during %s ...; again" % (
                100 * share, " ".join(os.path.basename(c) for c in cmd[:4])),
                file=sys.stderr)
    policy.kept_noisy += 1
    return result, share


def run_zero(zero_run, program, ranks, stage, steps, json_path, extra=(),
             policy=None):
    """Runs zero-run quietly; returns its metrics JSON, with `interference`
    added (the share of the CPU other processes took during the run)."""
    cmd = [zero_run, program, "-n", str(ranks), "--stage", str(stage),
           "--steps", str(steps), "--quiet", "--metrics-json", json_path,
           *extra]
    result, share = run_quiet(cmd, policy or Interference(1.0, 0))
    return read_metrics(cmd, result, json_path, share)


def read_metrics(cmd, result, json_path, share):
    """The metrics JSON a finished run wrote, or exit with its output."""
    if result.returncode != 0:
        sys.exit("error: %s failed (%d):\n%s%s" % (
            " ".join(cmd), result.returncode, result.stdout, result.stderr))
    with open(json_path) as f:
        metrics = json.load(f)
    metrics["interference"] = share
    return metrics


def add_run_arguments(parser):
    """Flags every benchmark shares: the lock and the interference rule."""
    parser.add_argument("--lock", default="",
                        help="flock this file around each repetition "
                             "(the build lock, e.g. /tmp/zero-build.lock)")
    parser.add_argument("--noise-threshold", type=float, default=0.05,
                        help="run again when other processes took more than this "
                             "share of the machine's CPU during a run (0-1)")
    parser.add_argument("--max-reruns", type=int, default=6,
                        help="runs again per configuration and repetition, at most")


def timed_seconds(metrics):
    """Step times without the first (warm-up) step, as samples_per_second."""
    seconds = metrics["step_seconds"]
    return seconds[1:] if len(seconds) > 1 else seconds


def median(values):
    return statistics.median(values)


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def machine():
    """One line: CPU model, cores, memory, kernel; and the date."""
    model = platform.processor() or "?"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    with open("/proc/meminfo") as f:
        kib = int(f.readline().split()[1])
    return "%s, %d cores, %.0f GiB, Linux %s; %s" % (
        model, os.cpu_count(), kib / 2**20, platform.release(),
        datetime.date.today().isoformat())


def table(header, rows, markdown):
    lines = []
    if markdown:
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        lines += ["| " + " | ".join(row) + " |" for row in rows]
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths)))
        lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)
