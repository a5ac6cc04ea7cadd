#!/usr/bin/env python3
"""Times `zero-pipeline stage=3` on GPT-2-shaped steps of growing depth.

For each depth the step is generated with examples/gen_gpt2.py, then
`zero-opt --zero-pipeline="stage=3 ranks=N" --mlir-timing` runs REPEATS times;
the median wall time of the ZeroPipeline pass (the whole chain: materialize,
data parallel, shard, bucket, verify) and of the whole tool run are reported,
with the operation counts before and after. Linear scaling shows as a flat
"ms per layer" column and a 96/12 time ratio near 8.

    python3 bench/zero_pipeline_scaling.py [--zero-opt build/bin/zero-opt]
        [--layers 12,24,48,96] [--ranks 8] [--repeats 5] [--markdown]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OP_LINE = re.compile(r'^\s*(%[^=]+=\s*)?"[a-z_0-9]+\.[a-z_0-9.]+"')


def count_ops(zero_opt, path, extra=()):
    generic = subprocess.run(
        [zero_opt, path, "--mlir-print-op-generic", *extra],
        check=True, capture_output=True, text=True).stdout
    return sum(1 for line in generic.splitlines() if OP_LINE.match(line))


def timed_run(zero_opt, path, pipeline):
    result = subprocess.run(
        [zero_opt, path, pipeline, "--mlir-timing", "-o", os.devnull],
        check=True, capture_output=True, text=True)
    times = {}
    for line in result.stderr.splitlines():
        match = re.match(r"\s*([0-9.]+) \(\s*[-0-9.]+%\)\s+(\S.*)$", line)
        if match:
            times.setdefault(match.group(2).strip(), float(match.group(1)))
    return times["ZeroPipeline"], times["Total"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zero-opt",
                        default=os.path.join(ROOT, "build", "bin", "zero-opt"))
    parser.add_argument("--layers", default="12,24,48,96")
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--markdown", action="store_true",
                        help="print a markdown table for docs/benchmarks.md")
    args = parser.parse_args()
    if not os.path.exists(args.zero_opt):
        sys.exit(f"error: {args.zero_opt} not found; build first (scripts/build.sh)")

    pipeline = f"--zero-pipeline=stage=3 ranks={args.ranks}"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for layers in [int(x) for x in args.layers.split(",")]:
            path = os.path.join(tmp, f"gpt2-{layers}.mlir")
            subprocess.run([sys.executable,
                            os.path.join(ROOT, "examples", "gen_gpt2.py"),
                            "--layers", str(layers), "--output", path],
                           check=True)
            ops_in = count_ops(args.zero_opt, path)
            ops_out = count_ops(args.zero_opt, path, [pipeline])
            runs = [timed_run(args.zero_opt, path, pipeline)
                    for _ in range(args.repeats)]
            pass_s = statistics.median(r[0] for r in runs)
            total_s = statistics.median(r[1] for r in runs)
            rows.append((layers, ops_in, ops_out, pass_s, total_s))

    base = rows[0]
    header = ("layers", "ops in", "ops out", "pipeline s", "tool total s",
              "ms/layer", f"time / time({base[0]})", f"layers / {base[0]}")
    lines = []
    for layers, ops_in, ops_out, pass_s, total_s in rows:
        lines.append((str(layers), str(ops_in), str(ops_out),
                      f"{pass_s:.4f}", f"{total_s:.4f}",
                      f"{1000 * pass_s / layers:.3f}",
                      f"{pass_s / base[3]:.2f}", f"{layers / base[0]:.2f}"))
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for line in lines:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [max(len(h), *(len(l[i]) for l in lines))
                  for i, h in enumerate(header)]
        print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
        for line in lines:
            print("  ".join(c.rjust(w) for c, w in zip(line, widths)))
    deepest = rows[-1]
    verdict = "under" if deepest[3] < 2.0 else "OVER"
    print(f"\n{deepest[0]} layers: zero-pipeline stage=3 took {deepest[3]:.3f} s "
          f"({verdict} the 2 s target); median of {args.repeats} runs, "
          f"ranks={args.ranks}.")


if __name__ == "__main__":
    main()
