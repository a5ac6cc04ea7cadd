#!/usr/bin/env python3
"""Checks a `zero-run --profile-table` JSON table against the program it
ran, the Chrome trace of the same run and zero-report's prediction.

Checks that: every launch, copy and collective of the lowered program
(`--emit-program`) has exactly one row, with its kernel's name and stream;
the rows' predicted times, each times its launches per step, add up to each
family's and each stream's predicted time; the compute stream's predicted
kernels, blocked time and time after its last instruction add up to the
predicted step, and that step is zero-report's for the same program and
machine (`--report`, its JSON); every row was timed, and its measured time
is the mean of rank 0's trace slices of that instruction over the steps the
table counts (`--trace`). Prints one line per finding, then
`profile table: all N checks passed` or exits 1.
"""

import argparse
import collections
import json
import math
import sys

from check_profile import program_instructions


def close(a, b, rel=1e-6, tiny=1e-12):
    return abs(a - b) <= rel * max(abs(a), abs(b)) + tiny


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("table")
    parser.add_argument("program")
    parser.add_argument("--report", required=True)
    parser.add_argument("--trace", required=True)
    args = parser.parse_args()
    failures, checks = [], 0

    def check(ok, message):
        nonlocal checks
        checks += 1
        if not ok:
            failures.append(message)

    table = json.load(open(args.table))
    rows = table["rows"]
    bodies = program_instructions(args.program)
    expected = [(b, i, name, stream) for b, body in enumerate(bodies)
                for i, (name, stream, kind) in enumerate(body)
                if kind in ("kernel", "copy", "collective")]
    got = [(r["body"], r["index"],
            r["name"] if r["category"] != "collective" else "zrt." + r["name"],
            r["stream"]) for r in rows]
    check(sorted(got) == sorted(expected),
          f"rows {len(got)}, program instructions {len(expected)}; first "
          f"difference {sorted(set(got) ^ set(expected))[:1]}")

    families = collections.defaultdict(float)
    streams = collections.defaultdict(float)
    for r in rows:
        families[r["name"]] += r["predicted_seconds"] * r["launches_per_step"]
        streams[r["stream"]] += r["predicted_seconds"] * r["launches_per_step"]
    for f in table["families"]:
        check(close(families[f["name"]], f["predicted_seconds"]),
              f"family {f['name']}: rows predict {families[f['name']]}, the "
              f"family {f['predicted_seconds']}")
    for s in table["streams"]:
        check(close(streams[s["name"]], s["predicted_busy_seconds"]),
              f"stream {s['name']}: rows predict {streams[s['name']]}, the "
              f"stream {s['predicted_busy_seconds']}")
    compute = (table["predicted_compute_work_seconds"] +
               table["predicted_compute_blocked_seconds"] +
               table["predicted_after_compute_seconds"])
    check(close(compute, table["predicted_step_seconds"]),
          f"compute work + blocked + after = {compute}, the predicted step "
          f"{table['predicted_step_seconds']}")
    check(close(streams["compute"], table["predicted_compute_work_seconds"]),
          f"the compute stream's rows predict {streams['compute']}, its work "
          f"{table['predicted_compute_work_seconds']}")
    report = json.load(open(args.report))["prediction"]
    check(close(report["step_seconds"], table["predicted_step_seconds"]),
          f"zero-report predicts {report['step_seconds']} s, the table "
          f"{table['predicted_step_seconds']} s")

    # The measured side against rank 0's trace.
    events = json.load(open(args.trace))["traceEvents"]
    slices = collections.defaultdict(list)
    for e in events:
        if e.get("ph") != "X" or e["pid"] != 0:
            continue
        step = e["args"]["step"]
        if table["first_step"] <= step <= table["last_step"]:
            slices[(e["args"]["body"], e["args"]["instruction"])].append(
                e["dur"] * 1e-6)
    for r in rows:
        durations = slices.get((r["body"], r["index"]), [])
        check(r["measured"] and durations,
              f"row {r['body']}/{r['index']} ({r['name']}) was not timed")
        if durations:
            mean = sum(durations) / len(durations)
            # The trace rounds to nanoseconds in microseconds.
            check(math.isclose(mean, r["measured_seconds"], rel_tol=1e-3,
                               abs_tol=2e-9),
                  f"row {r['body']}/{r['index']} ({r['name']}): measured "
                  f"{r['measured_seconds']}, the trace's mean {mean}")
            launches = len(durations) / table["steps"]
            check(close(launches, r["launches_per_step"]),
                  f"row {r['body']}/{r['index']} ({r['name']}): "
                  f"{r['launches_per_step']} launches a step, the trace has "
                  f"{launches}")

    for message in failures:
        print("FAIL:", message)
    if failures:
        print(f"profile table: {len(failures)} of {checks} checks failed")
        return 1
    print(f"profile table: {len(rows)} rows, {len(table['families'])} "
          f"families, steps {table['first_step']}-{table['last_step']}")
    print(f"profile table: all {checks} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
