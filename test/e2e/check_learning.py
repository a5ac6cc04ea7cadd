#!/usr/bin/env python3
"""Checks from a zero-run metrics JSON that training learned: the mean loss
of the last K steps is below (1 - MIN_DROP) times the mean of the first K,
and every loss is finite.

  check_learning.py METRICS.json [--window 5] [--min-drop 0.05] [--min-steps 40]
"""

import argparse
import json
import math
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("metrics")
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--min-drop", type=float, default=0.05)
    parser.add_argument("--min-steps", type=int, default=40)
    parser.add_argument("--below", type=float,
                        help="also require the last window's mean below this")
    args = parser.parse_args()
    with open(args.metrics) as f:
        losses = json.load(f)["losses"]
    failures = []
    if len(losses) < args.min_steps:
        failures.append(f"{len(losses)} steps, expected at least {args.min_steps}")
    bad = [i + 1 for i, x in enumerate(losses) if not math.isfinite(x)]
    if bad:
        failures.append(f"non-finite loss at steps {bad}")
    first = sum(losses[: args.window]) / args.window
    last = sum(losses[-args.window :]) / args.window
    drop = 1 - last / first
    print(f"mean loss of the first {args.window} steps {first:.6f}, of the last "
          f"{args.window} {last:.6f}: {100 * drop:.1f}% lower")
    if not drop >= args.min_drop:
        failures.append(f"the last {args.window} steps' mean loss {last:.6f} is not "
                        f"{100 * args.min_drop:g}% below the first {args.window} "
                        f"steps' {first:.6f}")
    if args.below is not None and not last < args.below:
        failures.append(f"the last {args.window} steps' mean loss {last:.6f} is not "
                        f"below {args.below:g}")
    for failure in failures:
        print(f"FAIL: {failure}")
    print("learning: FAILED" if failures else "learning: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
