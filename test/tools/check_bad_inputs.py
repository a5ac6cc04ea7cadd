#!/usr/bin/env python3
"""Feeds every file of a corpus of broken inputs to a tool and asserts that it
fails cleanly: exit status 1 (not 0, not a signal, not an abort), at least one
diagnostic that names a location as FILE:LINE:COL, and no crash report.

usage: check_bad_inputs.py TOOL CORPUS_DIR [EXTRA_ARGS...]

Each corpus file may start with a line `// ARGS: ...` giving extra arguments
for that file (an impossible pass option, say); such a file needs a message
but not a location, since the mistake is on the command line.
"""

import os
import re
import shlex
import subprocess
import sys

CRASH_MARKERS = ("Stack dump", "PLEASE submit a bug report", "Assertion",
                 "Segmentation fault", "terminate called", "UNREACHABLE")
TIMEOUT_S = 30


def file_args(path):
    with open(path, "rb") as f:
        first = f.readline().decode("utf-8", errors="replace")
    if first.startswith("// ARGS:"):
        return shlex.split(first[len("// ARGS:"):])
    return []


def check(tool, path, extra):
    args = [tool, path] + file_args(path) + extra
    try:
        run = subprocess.run(args, capture_output=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "hung for more than %d s" % TIMEOUT_S
    stderr = run.stderr.decode("utf-8", errors="replace")
    if run.returncode < 0:
        return "killed by signal %d" % -run.returncode
    if run.returncode != 1:
        return "exit status %d, expected 1" % run.returncode
    for marker in CRASH_MARKERS:
        if marker in stderr:
            return "crash report in stderr (%s)" % marker
    if not stderr.strip():
        return "failed without a message"
    # Command-line mistakes are reported against the option, not the file.
    if file_args(path):
        return None
    name = re.escape(os.path.basename(path))
    if not re.search(name + r":\d+:\d+: error:", stderr):
        return "diagnostic has no FILE:LINE:COL location:\n" + stderr
    return None


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    tool, corpus, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    files = sorted(os.path.join(corpus, f) for f in os.listdir(corpus))
    if not files:
        print("empty corpus: %s" % corpus)
        return 1
    failures = 0
    for path in files:
        problem = check(tool, path, extra)
        status = "ok" if problem is None else "FAIL: " + problem
        print("%-40s %s" % (os.path.basename(path), status))
        failures += problem is not None
    # A file that does not exist is bad input too.
    missing = os.path.join(corpus, "does-not-exist.mlir")
    run = subprocess.run([tool, missing], capture_output=True, timeout=TIMEOUT_S)
    if run.returncode != 1 or b"does-not-exist.mlir" not in run.stderr:
        print("missing file: FAIL (status %d)" % run.returncode)
        failures += 1
    else:
        print("%-40s ok" % "(missing file)")
    print("%d inputs, %d failures" % (len(files) + 1, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
