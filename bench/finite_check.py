#!/usr/bin/env python3
"""What does Trainer.step's check of a float batch for NaN and infinity
cost? (issue 44: refused at the binding, with an opt-out whose saving is
measured.)

A linear classifier on a large float input (the shape of a batch of
images flattened: the case where the check scans the most bytes per unit
of compute), trained at stage 0 on this job's ranks. Steps alternate
between Trainer.check_finite on and off on the same batch, side by side in
one process; the table gives the median step time of each (the first two
steps left out) and the ratio.

    python3 -m zero.run -n 1 bench/finite_check.py --markdown
        [--steps 20] [--rows 256] [--features 65536] [--classes 16]

Needs the Python package on PYTHONPATH (build/python).
"""

import argparse
import statistics
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20,
                        help="steps of each kind")
    parser.add_argument("--rows", type=int, default=256,
                        help="rows of the global batch")
    parser.add_argument("--features", type=int, default=65536)
    parser.add_argument("--classes", type=int, default=16)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    import zero
    ranks = zero.world_size()
    graph = zero.Graph("finite_check")
    x = graph.input("x", [args.rows // ranks, args.features], "f32")
    labels = graph.input("labels", [args.rows // ranks], "i32")
    w = graph.parameter("w", [args.features, args.classes],
                        zero.Init.normal(0, 0.01))
    graph.minimize(zero.softmax_cross_entropy(zero.matmul(x, w.value),
                                              labels))
    graph.config.optimizer(zero.SGD(lr=0.01))
    trainer = zero.Trainer(graph.compile(ranks))
    rng = np.random.default_rng(3)
    batch = [rng.standard_normal((args.rows, args.features), np.float32),
             rng.integers(0, args.classes, args.rows).astype(np.int32)]
    times = {True: [], False: []}
    for step in range(2 * args.steps):
        check = step % 2 == 0
        trainer.check_finite = check
        start = time.perf_counter()
        trainer.step(batch)
        times[check].append(time.perf_counter() - start)
    on = statistics.median(times[True][1:]) * 1e3
    off = statistics.median(times[False][1:]) * 1e3
    if zero.rank() != 0:
        return
    megabytes = args.rows * args.features * 4 / 2**20
    if args.markdown:
        print("| batch | checked ms/step | unchecked ms/step | "
              "checked / unchecked |")
        print("|---|---|---|---|")
        print(f"| {args.rows} x {args.features} f32 ({megabytes:.0f} MiB), "
              f"{ranks} rank(s) | {on:.1f} | {off:.1f} | {on / off:.3f} |")
    else:
        print(f"check_finite on {on:.1f} ms/step, off {off:.1f} ms/step, "
              f"ratio {on / off:.3f} ({megabytes:.0f} MiB of f32 a step)")


if __name__ == "__main__":
    main()
