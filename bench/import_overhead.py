#!/usr/bin/env python3
"""Does importing cost anything at run time? Hugging Face's GPT-2 through
zero.from_torch against our hand-built zero.nn.GPT2 of the same shape
(issue 26).

Both steps are built in this process as test/torch/check_gpt2_vs_hand.py
builds them (the imported one trained with its logits' cross-entropy
against given targets, so that both compute the same loss), written as IR
files with their initial weights, and run by the same `zero-run` at each
ZeRO stage, side by side: each repetition runs every configuration once,
in an order that rotates, and the table gives the median over repetitions
of each run's mean step time (first step left out), and the ratio
imported / hand-built. The programs differ only where the models do:
Hugging Face's fused query/key/value projection (one matmul and three
slices, against three matmuls) and its constant position ids (wpe
expanded, against an embedding lookup of a positions input).

Default shape: GPT-2 124M (12 layers, width 768, 12 heads, vocabulary
50257, sequence 128), one sequence per rank, one BLAS thread per rank.

    python3 bench/import_overhead.py --markdown [--ranks 2] [--stages 0,3]
        [--steps 6] [--repeats 3] [--layers 12] [--dim 768]
        [--zero-run build/bin/zero-run]

Needs torch and transformers (scripts/setup-torch.sh) and the Python
package on PYTHONPATH (build/python).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "test", "torch"))

from benchlib import Interference, add_run_arguments, build_lock  # noqa: E402
from benchlib import machine, run_zero, timed_seconds  # noqa: E402


def write_programs(args, workdir):
    """Builds both steps and writes {name: (step.mlir, weights)}."""
    from safetensors.numpy import save_file
    from check_gpt2_vs_hand import build_pair, hand_weights, hugging_face_gpt2

    module = hugging_face_gpt2(layers=args.layers, dim=args.dim,
                               heads=args.heads, vocab=args.vocab,
                               seq=args.seq)
    imported, imported_compiled, _, hand_compiled = build_pair(
        module, args.batch, stage=0, ranks=1)
    programs = {}
    for name, compiled, init in (
            ("imported", imported_compiled, imported.init_path),
            ("hand-built", hand_compiled,
             os.path.join(workdir, "hand.safetensors"))):
        step = os.path.join(workdir, f"{name}.mlir")
        compiled.save(step, "step")
        programs[name] = (step, init)
    save_file(hand_weights(module), programs["hand-built"][1])
    parameters = sum(p.numel() for p in module.parameters())
    return programs, parameters


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="2")
    parser.add_argument("--stages", default="0,3")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=1,
                        help="sequences per rank per step")
    parser.add_argument("--zero-run", default=os.path.join(
        HERE, "..", "build", "bin", "zero-run"))
    parser.add_argument("--markdown", action="store_true")
    add_run_arguments(parser)
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="import-overhead-")
    start = time.monotonic()
    programs, parameters = write_programs(args, workdir)
    print(f"built both programs ({parameters / 1e6:.1f}M parameters) in "
          f"{time.monotonic() - start:.1f} s", flush=True)

    policy = Interference(args.noise_threshold, args.max_reruns)
    configs = [(ranks, stage, name)
               for ranks in [int(n) for n in args.ranks.split(",")]
               for stage in [int(s) for s in args.stages.split(",")]
               for name in programs]
    results = {}
    for repeat in range(args.repeats):
        with build_lock(args.lock):
            shift = repeat % len(configs)
            for ranks, stage, name in configs[shift:] + configs[:shift]:
                step, init = programs[name]
                metrics = run_zero(
                    args.zero_run, step, ranks, stage, args.steps,
                    os.path.join(workdir, "metrics.json"),
                    extra=["--init", init, "--blas-threads", "1"],
                    policy=policy)
                seconds = timed_seconds(metrics)
                mean = sum(seconds) / len(seconds)
                results.setdefault((ranks, stage, name), []).append(mean)
                print(f"N={ranks} stage {stage} {name}: {mean:.3f} s/step",
                      flush=True)

    print(f"\nmachine: {machine()}; {args.repeats} repetitions of "
          f"{args.steps} steps; reruns for interference: {policy.reruns}")
    if args.markdown:
        print("\n| N | stage | hand-built s/step | imported s/step | "
              "imported / hand-built |")
        print("|---|---|---|---|---|")
    for ranks, stage in sorted({(r, s) for r, s, _ in results}):
        hand = statistics.median(results[(ranks, stage, "hand-built")])
        imported = statistics.median(results[(ranks, stage, "imported")])
        print(f"| {ranks} | {stage} | {hand:.3f} | {imported:.3f} | "
              f"{imported / hand:.3f} |")


if __name__ == "__main__":
    main()
