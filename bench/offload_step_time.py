#!/usr/bin/env python3
"""What offload costs a training step on CPU ranks, side by side.

One GPT-2-shaped model (examples/gen_gpt2.py, AdamW, fp32) is trained by
zero-run on N ranks at a ZeRO stage without offload, with
`--offload optimizer` and (stage 3) with `--offload optimizer+params`. The
configurations are interleaved: each repetition runs every one once, in an
order rotated per repetition, and the table gives the median step time (the
first step dropped) over repetitions and its ratio to no offload, with the
range of the per-repetition ratios.

On CPU ranks "device" and host are the same DRAM, so what this measures is
the cost of the offloaded schedule itself: the copies over the "host link"
(memcpy here), the host kernels on the worker thread, and the events
between them. The overlap has to hide most of it (issue 16).

    python3 bench/offload_step_time.py [--ranks 2] [--stage 2]
        [--repeats 5] [--steps 12] [--layers 4 --dim 256 ...] [--markdown]
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIMS = {"layers": 4, "dim": 256, "heads": 4, "seq": 64, "vocab": 2048,
        "batch": 8}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--stage", type=int, default=2)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--zero-run", default=os.path.join(ROOT, "build", "bin",
                                                           "zero-run"))
    parser.add_argument("--markdown", action="store_true")
    for key, value in DIMS.items():
        parser.add_argument("--" + key, type=int, default=value)
    benchlib.add_run_arguments(parser)
    args = parser.parse_args()
    modes = ["none", "optimizer"] + (["optimizer+params"] if args.stage == 3 else [])
    policy = benchlib.Interference(args.noise_threshold, args.max_reruns)

    with tempfile.TemporaryDirectory() as tmp:
        program = os.path.join(tmp, "gpt2.mlir")
        gen = [sys.executable, os.path.join(ROOT, "examples", "gen_gpt2.py"),
               "--output", program, "--ranks", str(args.ranks)]
        for key in DIMS:
            gen += ["--" + key, str(getattr(args, key))]
        subprocess.run(gen, check=True)
        with benchlib.build_lock(args.lock):
            zero_run, digest = benchlib.snapshot_zero_run(args.zero_run, tmp)
        steps = {mode: [] for mode in modes}
        plans = {}
        for rep in range(args.repeats):
            order = modes[rep % len(modes):] + modes[:rep % len(modes)]
            with benchlib.build_lock(args.lock):
                for mode in order:
                    metrics = benchlib.run_zero(
                        zero_run, program, args.ranks, args.stage, args.steps,
                        os.path.join(tmp, "m.json"),
                        ["--offload", mode, "--blas-threads", "1",
                         "--deterministic"], policy)
                    steps[mode].append(benchlib.median(benchlib.timed_seconds(metrics)))
                    plans[mode] = metrics["report"].get("memory_plan")

    print(f"machine: {benchlib.machine()}")
    print(f"zero-run sha256 {digest}; GPT-2 shape "
          + ", ".join(f"{k} {getattr(args, k)}" for k in DIMS)
          + f"; N={args.ranks}, stage {args.stage}, {args.steps} steps, "
          f"median of {args.repeats} interleaved repetitions")
    base = steps["none"]
    rows = []
    for mode in modes:
        ratios = [a / b for a, b in zip(steps[mode], base)]
        plan = plans.get(mode) or {}
        rows.append([mode, f"{1e3 * benchlib.median(steps[mode]):.1f}",
                     f"{benchlib.median(ratios):.3f}",
                     f"{min(ratios):.3f}-{max(ratios):.3f}",
                     f"{plan.get('device_bytes', 0) / 2**20:.1f}" if plan else "-",
                     f"{plan.get('host_bytes', 0) / 2**20:.1f}" if plan else "-",
                     f"{plan.get('host_link_bytes_per_step', 0) / 2**20:.1f}"
                     if plan else "-"])
    print(benchlib.table(["offload", "ms/step", "vs none", "range",
                          "device MiB", "host MiB", "link MiB/step"],
                         rows, args.markdown))


if __name__ == "__main__":
    main()
