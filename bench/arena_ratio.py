#!/usr/bin/env python3
"""How tight the planned arena is: arena bytes over the tensor-level peak.

The training plan counts the transient bytes of the step's tensors at their
peak ("peak transient"); the lowered program puts every transient at a fixed
offset of one arena, which also holds padded collective buffers, packed
buckets and the inputs of collectives still in flight. For GPT-2 shapes at
ZeRO stages 0-3 this compiles the step (`gpt2_train --plan-only`, nothing
runs) and prints both and their ratio; issue 17's target is <= 1.10. The
runtime allocates exactly the planned arena (e2e tests check the measured
high water against it).

    python3 bench/arena_ratio.py [--sizes mini,124M,355M] [--ranks 2]
        [--seq 128] [--precision f32] [--markdown] [--check 1.10]
"""

import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def parse_bytes(text):
    number, unit = text.split()
    return float(number) * UNITS[unit]


def plan(gpt2_train, size, stage, ranks, seq, precision):
    start = time.monotonic()
    out = subprocess.run([gpt2_train, "--size", size, "--stage", str(stage),
                          "-n", str(ranks), "--batch", str(ranks), "--seq", str(seq),
                          "--precision", precision, "--plan-only"],
                         check=True, capture_output=True, text=True).stdout
    peak = re.search(r"peak transient ([0-9.]+ \w+)", out)
    arena = re.search(r"plan, arena per rank: ([0-9.]+ \w+), ([0-9.]+) x", out)
    if not peak or not arena:
        sys.exit(f"arena_ratio: unexpected gpt2_train output:\n{out}")
    return (parse_bytes(peak.group(1)), parse_bytes(arena.group(1)),
            float(arena.group(2)), time.monotonic() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="mini,124M,355M")
    parser.add_argument("--ranks", default="2")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--precision", default="f32")
    parser.add_argument("--gpt2-train",
                        default=os.path.join(ROOT, "build", "bin", "gpt2_train"))
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--check", type=float, default=0,
                        help="exit 1 when a ratio is above this (0: no check)")
    args = parser.parse_args()
    rows, worst = [], 0.0
    for size in args.sizes.split(","):
        for ranks in [int(n) for n in args.ranks.split(",")]:
            for stage in range(4):
                peak, arena, ratio, seconds = plan(args.gpt2_train, size, stage, ranks,
                                                   args.seq, args.precision)
                print(f"  {size} N={ranks} stage {stage}: {seconds:.1f} s to compile",
                      file=sys.stderr)
                worst = max(worst, ratio)
                rows.append([size, str(ranks), str(stage), f"{peak / 2**20:.2f}",
                             f"{arena / 2**20:.2f}", f"{ratio:.3f}"])
    print(f"machine: {benchlib.machine()}")
    print(f"arena against the tensor-level peak ({args.precision}, one sequence of "
          f"{args.seq} tokens per rank, default buckets)")
    print(benchlib.table(["size", "N", "stage", "peak transient MiB", "arena MiB",
                          "arena / peak"], rows, args.markdown))
    print(f"largest ratio: {worst:.3f}")
    if args.check and worst > args.check:
        print(f"above {args.check:g}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
