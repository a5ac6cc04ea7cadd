#!/usr/bin/env python3
"""Checks a `zero-run --profile` trace against the program it ran.

Reads the Chrome trace and the lowered program (`--emit-program`) and checks
that: it is a Chrome trace (metadata naming a process per rank and a thread
per zrt stream, complete "X" slices with non-negative times); every rank
timed every kernel launch and copy of the step exactly once per step, under
its kernel's name and on the stream the program puts it on; the slices of
one stream of one rank never overlap (a stream runs in order); and each
collective of the communication stream is timed once per step. Prints one
line per finding, then `profile: all N checks passed` or exits 1.
"""

import argparse
import collections
import json
import re
import sys


def program_instructions(path):
    """(name, stream, kind) of each instruction of each zrt.step body."""
    bodies, body = [], None
    for line in open(path):
        text = line.strip()
        if text.startswith("zrt.step"):
            body = []
            bodies.append(body)
            continue
        if body is None:
            continue
        if text == "}":
            body = None
            continue
        m = re.match(r'zrt\.launch "([^"]+)" on @(\w+)', text)
        if m:
            body.append((m.group(1), m.group(2), "kernel"))
            continue
        m = re.match(r"zrt\.copy on @(\w+)", text)
        if m:
            body.append(("zrt.copy", m.group(1), "copy"))
            continue
        m = re.match(r"zrt\.(all_reduce|reduce_scatter|all_gather|broadcast|all_to_all)\b.* on @(\w+)", text)
        if m:
            body.append(("zrt." + m.group(1), m.group(2), "collective"))
            continue
        m = re.match(r"zrt\.(record|wait) @\w+ on @(\w+)", text)
        if m:
            body.append(("zrt." + m.group(1), m.group(2), m.group(1)))
    return bodies


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("program")
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    args = parser.parse_args()
    failures, checks = [], 0

    def check(ok, message):
        nonlocal checks
        checks += 1
        if not ok:
            failures.append(message)

    events = json.load(open(args.trace))["traceEvents"]
    meta = [e for e in events if e["ph"] == "M"]
    slices = [e for e in events if e["ph"] == "X"]
    processes = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta
               if e["name"] == "thread_name"}
    check(sorted(processes) == list(range(args.ranks)),
          f"processes {sorted(processes)}, expected one per rank")
    check(all(e["ts"] >= 0 and e["dur"] >= 0 for e in slices),
          "a slice has a negative time")

    bodies = program_instructions(args.program)
    check(len(bodies) == 1, f"{len(bodies)} step bodies; the check reads one")
    body = bodies[0]
    timed = collections.Counter()
    for e in slices:
        a = e["args"]
        timed[(e["pid"], a["body"], a["instruction"], a["step"])] += 1
        if a["instruction"] >= len(body):
            check(False, f"rank {e['pid']} instruction {a['instruction']} named "
                         f"{e['name']}: the program has {len(body)} instructions")
            continue
        name, stream, kind = body[a["instruction"]]
        check(e["name"] == name,
              f"rank {e['pid']} instruction {a['instruction']} named {e['name']}, program says {name}")
        check(threads.get((e["pid"], e["tid"])) == "@" + stream,
              f"rank {e['pid']} {name} on {threads.get((e['pid'], e['tid']))}, program says @{stream}")
    for rank in range(args.ranks):
        for step in range(1, args.steps + 1):
            for index, (name, stream, kind) in enumerate(body):
                if kind in ("kernel", "copy", "collective"):
                    count = timed[(rank, 0, index, step)]
                    check(count == 1,
                          f"rank {rank} step {step}: {name} (instruction {index}) timed {count} times")
    by_stream = collections.defaultdict(list)
    for e in slices:
        if e["cat"] != "collective":
            by_stream[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for key, spans in by_stream.items():
        spans.sort()
        overlaps = sum(1 for a, b in zip(spans, spans[1:]) if b[0] < a[1] - 1e-3)
        check(overlaps == 0, f"rank {key[0]} {threads.get(key)}: {overlaps} overlapping slices")

    kinds = collections.Counter(k for _, _, k in body)
    streams = sorted({t for t in threads.values()})
    print(f"profile: {args.ranks} rank(s), {args.steps} step(s), streams {' '.join(streams)}; "
          f"per step {kinds['kernel']} launches, {kinds['copy']} copies, "
          f"{kinds['collective']} collectives")
    for failure in failures[:20]:
        print(f"FAIL: {failure}")
    if failures:
        print(f"profile: {len(failures)} of {checks} checks failed")
        sys.exit(1)
    print(f"profile: all {checks} checks passed")


if __name__ == "__main__":
    main()
