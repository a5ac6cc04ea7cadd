#!/usr/bin/env python3
"""Checks that two training runs are bitwise equal: their loss traces
(zero-run --metrics-json) and, with --states, their final parameters
(zero-run --save-state, fp32 masters included).

Used by the autodiff tests: a step whose backward train-autodiff generated
trains like the same step with the backward written by hand (or kept
instead of recomputed). Both run the same kernels on the same operands in
the same order, so nothing is left to a tolerance: the losses must be the
same f32 values (the metrics JSON prints them exactly) and every saved
tensor must hold the same bytes.

  compare_runs.py A.json B.json [--states A.safetensors B.safetensors]
"""

import argparse
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib  # noqa: E402


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--states", nargs=2, metavar=("A_STATE", "B_STATE"))
    args = parser.parse_args()
    with open(args.a) as f:
        a = json.load(f)["losses"]
    with open(args.b) as f:
        b = json.load(f)["losses"]
    if len(a) != len(b) or not a:
        print(f"FAIL: {len(a)} and {len(b)} losses")
        return 1
    for step, (x, y) in enumerate(zip(a, b), 1):
        if struct.pack("<f", x) != struct.pack("<f", y):
            print(f"FAIL: step {step}: loss {x!r} vs {y!r}, not bitwise "
                  "equal")
            return 1
    what = f"{len(a)} losses"
    if args.states:
        problems = e2e_lib.bitwise_diff_states(*args.states)
        if problems:
            print(f"FAIL: final parameters not bitwise equal: {problems[:3]}")
            return 1
        tensors = len(e2e_lib.read_safetensors(args.states[0]))
        what += f" and the final parameters ({tensors} tensors)"
    print(f"{what} bitwise equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
