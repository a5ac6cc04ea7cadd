#!/usr/bin/env python3
"""Checks on the loss files gpt2_train --losses-out writes (one loss per
line, "%.9g", which round-trips a float: two files hold bitwise equal losses
exactly when their lines are equal).

  check_losses.py same A B [C ...] [--steps N]   bitwise equal traces
  check_losses.py close A B --rtol X             |a - b| / |b| <= X per step
  check_losses.py differ A B --min-rtol X        some step's losses differ by > X
  check_losses.py learns A --first K --last M --min-drop F [--below L]
                                                  mean of the last M losses at
                                                  least F (a fraction) below
                                                  the mean of the first K
  check_losses.py peak SMALLER LARGER            the "peak transient" of the
                                                  first plan output is lower

Every check prints one line saying what it found and exits non-zero on a
failure.
"""

import argparse
import math
import re
import sys


def read(path):
    with open(path) as f:
        lines = [line.strip() for line in f if line.strip()]
    if not lines:
        raise SystemExit(f"FAIL: {path} holds no losses")
    values = [float(line) for line in lines]
    if not all(math.isfinite(v) for v in values):
        raise SystemExit(f"FAIL: {path} holds a non-finite loss: {values}")
    return lines, values


def same(args):
    first_lines, _ = read(args.files[0])
    if args.steps is not None and len(first_lines) != args.steps:
        print(f"FAIL: {args.files[0]} holds {len(first_lines)} losses, "
              f"expected {args.steps}")
        return 1
    for path in args.files[1:]:
        lines, _ = read(path)
        if lines != first_lines:
            step = next((i for i, (a, b) in enumerate(zip(lines, first_lines))
                         if a != b), min(len(lines), len(first_lines)))
            print(f"FAIL: {path} differs from {args.files[0]} at step "
                  f"{step + 1}: {lines[step:step + 1]} vs "
                  f"{first_lines[step:step + 1]}")
            return 1
    print(f"{len(first_lines)} losses bitwise equal in {len(args.files)} runs")
    return 0


def close(args):
    _, a = read(args.files[0])
    _, b = read(args.files[1])
    if len(a) != len(b):
        print(f"FAIL: {len(a)} and {len(b)} losses")
        return 1
    worst = max(abs(x - y) / max(abs(y), 1e-30) for x, y in zip(a, b))
    if not worst <= args.rtol:
        print(f"FAIL: worst relative difference {worst:.3g} > {args.rtol:g}: "
              f"{a} vs {b}")
        return 1
    print(f"{len(a)} losses within {args.rtol:g} relative (worst {worst:.3g})")
    return 0


def differ(args):
    _, a = read(args.files[0])
    _, b = read(args.files[1])
    differences = [abs(x - y) / max(abs(y), 1e-30) for x, y in zip(a, b)]
    worst = max(differences)
    if not worst > args.min_rtol:
        print(f"FAIL: the losses differ by at most {worst:.3g} relative, not "
              f"more than {args.min_rtol:g}: {a} vs {b}")
        return 1
    print(f"the losses differ by more than {args.min_rtol:g} relative")
    return 0


def learns(args):
    _, values = read(args.files[0])
    if len(values) < args.first + args.last:
        print(f"FAIL: {len(values)} losses, fewer than {args.first} + "
              f"{args.last}")
        return 1
    head = sum(values[:args.first]) / args.first
    tail = sum(values[-args.last:]) / args.last
    drop = 1 - tail / head
    print(f"mean of the first {args.first} losses {head:.3f}, of the last "
          f"{args.last} {tail:.3f}: {100 * drop:.0f}% lower")
    if not drop >= args.min_drop:
        print(f"FAIL: less than {100 * args.min_drop:.0f}% lower")
        return 1
    if args.below is not None and not tail < args.below:
        print(f"FAIL: the last mean {tail:.3f} is not below {args.below}")
        return 1
    print("learns: ok")
    return 0


UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}


def peak_of(path):
    with open(path) as f:
        match = re.search(r"peak transient ([0-9.]+) (B|KiB|MiB|GiB|TiB)",
                          f.read())
    if not match:
        raise SystemExit(f"FAIL: no 'peak transient' in {path}")
    return float(match.group(1)) * UNITS[match.group(2)]


def peak(args):
    smaller, larger = peak_of(args.files[0]), peak_of(args.files[1])
    if not smaller < larger:
        print(f"FAIL: peak transient {smaller:.0f} B is not below "
              f"{larger:.0f} B")
        return 1
    print(f"peak transient lower: {smaller / larger:.2f} of the other")
    return 0


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("check", choices=["same", "close", "differ", "learns",
                                          "peak"])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--steps", type=int)
    parser.add_argument("--rtol", type=float, default=0.0)
    parser.add_argument("--min-rtol", type=float, default=0.0)
    parser.add_argument("--first", type=int, default=5)
    parser.add_argument("--last", type=int, default=10)
    parser.add_argument("--min-drop", type=float, default=0.0)
    parser.add_argument("--below", type=float)
    args = parser.parse_args()
    return {"same": same, "close": close, "differ": differ, "learns": learns,
            "peak": peak}[args.check](args)


if __name__ == "__main__":
    sys.exit(main())
