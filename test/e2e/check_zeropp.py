#!/usr/bin/env python3
"""ZeRO++'s quantized communication (zero-run --mesh RxS --mesh-scheme full
--hpz with --qwz and --qgz), test/e2e/zeropp.test.

Each quantized run trains from the same seed on the same batches as the
same mesh in full precision (full 2-D sharding with hpZ): every loss within
--rtol relative over --steps steps with int8 codes, --rtol-int4 with int4
gradient codes (qgZ's default; the block quantizer's error is at most half
a block's scale per element, 127 levels or 7, and the weights and gradients
it moves are averaged in full precision). On each axis the measured traffic
of a step equals the compiler's report for that axis, to the byte, as does
the report's closed formula of the bytes across nodes (and of the same in
full precision, against the run without quantization); and the bytes
across nodes fall: int8 codes are a quarter of the f32 values they
replace, int4 codes an eighth, plus one f32 scale per block; int4 moves
fewer than int8.

  check_zeropp.py PROGRAM --grid RxS --steps N --rtol X --rtol-int4 Y
                  [--pipeline-options "quantize-block=256 ..."]
"""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib  # noqa: E402

# name: (flags, whether the gradients move as int4 codes)
VARIANTS = {
    "qwz": (["--qwz"], False),
    "qgz int8": (["--qgz", "--qgz-bits", "8"], False),
    "qgz int4": (["--qgz"], True),
    "qwz+qgz int4": (["--qwz", "--qgz"], True),
}


def gathers_and_reductions(axis):
    """Bytes of a step's gathers, all-to-alls and reduce-scatters on an axis
    (its all-reduces, of losses and small unsharded tensors, left out)."""
    return sum(kind["bytes"] for name, kind in axis["traffic"].items()
               if name != "all_reduce")


def across_nodes(metrics):
    """Bytes this rank sent across nodes (axis 0) in one step, measured."""
    return sum(kind["sent_bytes_per_rank"]
               for kind in metrics["measured_axes"][0]["traffic_per_step"]
               .values())


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("program")
    parser.add_argument("--grid", required=True)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--rtol-int4", type=float, default=5e-3)
    parser.add_argument("--pipeline-options", default="")
    args = parser.parse_args()
    nodes, per_node = (int(x) for x in args.grid.split("x"))
    ranks = nodes * per_node
    name = os.path.basename(args.program)
    checker = e2e_lib.Checker("check_zeropp")
    base = ["--mesh", args.grid, "--mesh-scheme", "full", "--hpz"]
    if args.pipeline_options:
        base.append(f"--pipeline-options={args.pipeline_options}")
    with tempfile.TemporaryDirectory() as workdir:
        reference, _ = e2e_lib.train(args.program, workdir, "hpz", ranks, 3,
                                     args.steps, extra=base)
        full_bytes = across_nodes(reference)
        moved = {}
        for variant, (flags, int4) in VARIANTS.items():
            where = f"{name} mesh {args.grid} {variant}"
            rtol = args.rtol_int4 if int4 else args.rtol
            run, _ = e2e_lib.train(args.program, workdir,
                                   variant.replace(" ", "-"), ranks, 3,
                                   args.steps, extra=base + flags)
            worst = max(abs(x - y) / abs(y) for x, y in
                        zip(run["losses"], reference["losses"]))
            checker.check(len(run["losses"]) == args.steps and
                          worst <= rtol,
                          f"{where}: losses {run['losses'][-3:]} vs "
                          f"{reference['losses'][-3:]}: worst relative "
                          f"difference {worst:.3g} > {rtol}")
            for axis, (plan, seen) in enumerate(zip(
                    run["report"]["axes"], run["measured_axes"])):
                checker.check(plan["traffic"] == seen["traffic_per_step"],
                              f"{where}: axis {axis} measured "
                              f"{seen['traffic_per_step']}, planned "
                              f"{plan['traffic']}")
            # The report's closed formula counts those bytes from the
            # parameters' shards alone, quantized and in full precision.
            formula = (run["report"].get("across_nodes_bytes"),
                       run["report"].get("across_nodes_bytes_unquantized"))
            planned = (gathers_and_reductions(run["report"]["axes"][0]),
                       gathers_and_reductions(reference["report"]["axes"][0]))
            checker.check(formula == planned,
                          f"{where}: across-nodes formula {formula} B "
                          f"(quantized, full precision), planned {planned}")
            quantized = across_nodes(run)
            moved[variant] = quantized
            checker.check(quantized < full_bytes,
                          f"{where}: {quantized} B across nodes, not fewer "
                          f"than full precision's {full_bytes}")
            checker.note(f"{where}: {args.steps} losses within {rtol} "
                         f"of full precision (worst {worst:.1e}); "
                         f"per-axis traffic as planned; across nodes "
                         f"{quantized / full_bytes:.2f}x of full precision")
        checker.check(moved["qgz int4"] < moved["qgz int8"],
                      f"{name}: qgz moved {moved['qgz int4']} B across nodes "
                      f"as int4, not fewer than {moved['qgz int8']} as int8")
    checker.finish()


if __name__ == "__main__":
    main()
