#!/usr/bin/env python3
"""Checks gradient accumulation end to end (test/e2e/accumulate*.test).

`zero-run --accumulate K` runs the micro-step on K consecutive micro-batches
of B rows per rank, then the apply step. For each model, N and K, at stages
0-3 in deterministic mode:

1. Report = measurement: every rank's state bytes (gradient accumulators
   included: full at stages 0-1, this rank's shard at stages 2-3) and its
   traffic in one optimizer step equal the compile-time report.
2. Traffic per optimizer step: stage 1 reduce-scatters the accumulated
   gradients once per optimizer step (the same bytes whatever K), stage 2
   once per micro-step (bytes proportional to K).
3. Bitwise: stages 0 and 1 give the same losses and final state, and so do
   stages 2 and 3; at N = 1 all four do. Across the two pairs the sums are
   associated differently (stages 0-1 add a rank's K micro-batch gradients
   and then average over the ranks; stages 2-3 average over the ranks each
   micro-step and then add), so for N > 1 they agree to float tolerance only.
4. The same training as one big batch: one micro-batch of K x B rows per
   rank (the model with a K times larger batch, K = 1, stage 0) gives the
   same losses and final parameters within --tolerance, relative.

--model gpt2-clip trains the GPT-2-shaped model forward-only (zero-pipeline
differentiates it) with activation checkpointing (recompute=true) and
global-norm clipping. --model mlp-f16 is the f16 MLP with dynamic loss
scaling; with --overflow it also checks that an overflow inside one
micro-batch of one rank skips the whole optimizer step on every rank.

  check_accumulation.py --model mlp --ranks 1,2,3 --accumulate 2,4 \
      --src-root SRC --workdir DIR
"""

import argparse
import os
import random
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib as lib  # noqa: E402
from run_matrix import check_measured  # noqa: E402

GPT2_OPTIMIZER = ("train.optimizer @adamw adamw lr 3.0e-04 betas(0.9, 0.95) "
                  "eps 1.0e-08 weight_decay 0.1")


def gpt2_clip_program(src_root, batch, workdir):
    """The e2e GPT-2 model, forward-only with recompute marks, clipping at
    global norm 0.5 (small enough that the synthetic task clips)."""
    path = lib.gpt2_program(src_root, batch, workdir,
                            ["--forward-only", "--recompute"], "gpt2-fwd")
    with open(path) as f:
        text = f.read()
    if text.count(GPT2_OPTIMIZER) != 1:
        raise ValueError("examples/gen_gpt2.py: optimizer line changed")
    text = text.replace(GPT2_OPTIMIZER, GPT2_OPTIMIZER + " clip_norm 0.5")
    clipped = path.replace(".mlir", "-clip.mlir")
    with open(clipped, "w") as f:
        f.write(text)
    return clipped


def mlp_f16_program(src_root, batch, workdir, scale=2.0 ** 16):
    """examples/mlp-forward.mlir with batch `batch`, f16 parameters and
    activations, and dynamic loss scaling from `scale`."""
    with open(os.path.join(src_root, "examples", "mlp-forward.mlir")) as f:
        text = f.read()
    if text.count(lib.MLP_ADAM) != 1:
        raise ValueError("examples/mlp-forward.mlir: optimizer line changed")
    text = text.replace(lib.MLP_ADAM, f"{lib.MLP_ADAM} loss_scale {scale:.1f} "
                        "growth_interval 1000")
    text, count = re.subn(r"x(f32)>", "xf16>", text)
    if count < 10:
        raise ValueError(f"only {count} f32 tensor types rewritten")
    head, sep, body = text.partition("func.func @step")
    body = re.sub(r"tensor<32x", f"tensor<{batch}x", body)
    path = os.path.join(workdir, f"mlp-f16-b{batch}-s{int(scale)}.mlir")
    with open(path, "w") as f:
        f.write(head + sep + body)
    return path


# name -> (program maker, local batch B, extra zero-run flags, clips)
MODELS = {
    "mlp": (lambda src, b, w: lib.mlp_program(src, b, w), 32, [], False),
    "gpt2-clip": (gpt2_clip_program, lib.GPT2_LOCAL_BATCH,
                  ["--pipeline-options", "recompute=true"], True),
    "mlp-f16": (mlp_f16_program, 32, [], False),
}


def reduce_scatter_bytes(metrics):
    return metrics["report"]["traffic"].get("reduce_scatter", {}).get("bytes", 0)


def check_pair(checker, where, a, b):
    """Losses and final state of runs a and b are the same bits."""
    (a_metrics, a_state), (b_metrics, b_state) = a, b
    checker.check(a_metrics["losses"] == b_metrics["losses"],
                  f"{where}: losses differ: {a_metrics['losses']} vs "
                  f"{b_metrics['losses']}")
    problems = lib.bitwise_diff_states(a_state, b_state)
    checker.check(not problems, f"{where}: final state differs: {problems[:3]}")


def check_accumulation(checker, args, make, local, extra, clips):
    for ranks in [int(n) for n in args.ranks.split(",")]:
        program = make(args.src_root, local, args.workdir)
        rs_bytes = {}
        for k in [int(k) for k in args.accumulate.split(",")]:
            runs = {}
            for stage in range(4):
                tag = f"{args.model}-n{ranks}-k{k}-s{stage}"
                metrics, state = lib.train(program, args.workdir, tag, ranks,
                                           stage, args.steps,
                                           extra=["--accumulate", k] + extra)
                check_measured(checker, tag, metrics, ranks)
                for entry in metrics["measured"]:
                    checker.check(
                        entry["grad_accumulators"] == metrics["report"]["gradients"],
                        f"{tag} rank {entry['rank']}: measured accumulators "
                        f"{entry['grad_accumulators']} != report gradients "
                        f"{metrics['report']['gradients']}")
                checker.check(metrics["accumulate_steps"] == k and
                              metrics["global_batch"] % (ranks * k) == 0,
                              f"{tag}: metrics say {metrics['accumulate_steps']} "
                              f"micro-batches, global batch "
                              f"{metrics['global_batch']}")
                rs_bytes[(k, stage)] = reduce_scatter_bytes(metrics)
                runs[stage] = (metrics, state)
            full, sharded = (runs[1][0]["report"]["gradients"],
                             runs[2][0]["report"]["gradients"])
            checker.check(ranks == 1 or sharded < full,
                          f"N={ranks} K={k}: stage 2 accumulators {sharded} "
                          f"bytes are not sharded (stage 1: {full})")
            # Stage 0 sums the squares of the clipping norm over whole
            # tensors, stages 1-3 over shards (test/e2e/check_clipping.py).
            if not clips or ranks == 1:
                check_pair(checker, f"N={ranks} K={k}: stage 1 vs 0", runs[1],
                           runs[0])
            check_pair(checker, f"N={ranks} K={k}: stage 3 vs 2", runs[3], runs[2])
            if ranks == 1:
                check_pair(checker, f"N=1 K={k}: stage 2 vs 0", runs[2], runs[0])

            # One batch of K x B rows per rank.
            big = make(args.src_root, local * k, args.workdir)
            tag = f"{args.model}-n{ranks}-k{k}-big"
            ref_metrics, ref_state = lib.train(big, args.workdir, tag, ranks, 0,
                                               args.steps, extra=extra)
            checker.check(ref_metrics["global_batch"] ==
                          runs[0][0]["global_batch"],
                          f"{tag}: global batch {ref_metrics['global_batch']} "
                          f"!= {runs[0][0]['global_batch']}")
            worst = 0.0
            for stage in (0, 2):
                metrics, state = runs[stage]
                for step, (a, b) in enumerate(zip(metrics["losses"],
                                                  ref_metrics["losses"]), 1):
                    error = lib.relative_error(a, b)
                    worst = max(worst, error)
                    checker.check(error <= args.tolerance,
                                  f"N={ranks} K={k} stage {stage}: step {step} "
                                  f"loss {a!r} vs one big batch {b!r}")
                problems, l2, _ = lib.close_states(state, ref_state,
                                                   args.tolerance)
                worst = max(worst, l2)
                for problem in problems:
                    checker.check(False, f"N={ranks} K={k} stage {stage} vs "
                                  f"one big batch: {problem}")
            pairs = ("stages 0-3" if ranks == 1 else
                     "stages 2=3" if clips else "stages 0=1 and 2=3")
            checker.note(f"N={ranks} K={k}: {pairs} bitwise equal, one big "
                         f"batch within {worst:.1e}")
        ks = sorted({k for k, _ in rs_bytes})
        if ranks > 1 and len(ks) > 1:
            low, high = ks[0], ks[-1]
            checker.check(rs_bytes[(low, 1)] == rs_bytes[(high, 1)],
                          f"N={ranks}: stage 1 reduce-scatters "
                          f"{rs_bytes[(low, 1)]} bytes at K={low} but "
                          f"{rs_bytes[(high, 1)]} at K={high}")
            checker.check(rs_bytes[(low, 2)] * high == rs_bytes[(high, 2)] * low,
                          f"N={ranks}: stage 2 reduce-scatters "
                          f"{rs_bytes[(low, 2)]} bytes at K={low} and "
                          f"{rs_bytes[(high, 2)]} at K={high}, not K-fold")
            checker.note(f"N={ranks}: stage 1 reduce-scatters once per optimizer "
                         f"step, stage 2 once per micro-step")


def scaler(state_path):
    tensors = lib.read_safetensors(state_path)
    return (struct.unpack("<f", tensors["loss_scale"].data)[0],
            struct.unpack("<f", tensors["loss_scale.good_steps"].data)[0])


def check_overflow(checker, args):
    """One row of micro-batch 1 on rank 0 of every step makes the scaled
    gradients overflow f16; every other row is ordinary. Each optimizer step
    is skipped on every rank, at every stage."""
    ranks, k, local, steps = 2, 2, 32, 2
    program = mlp_f16_program(args.src_root, local, args.workdir)
    rng = random.Random(7)
    rows = ranks * local * k * steps
    features, labels = [], []
    for row in range(rows):
        in_step = row % (ranks * local * k)
        spike = in_step == ranks * local  # micro-batch 1, rank 0, row 0
        features.extend([1000.0 if spike else rng.random()] * 1 +
                        [rng.random() for _ in range(783)])
        labels.append(rng.randrange(10))
    data = os.path.join(args.workdir, "overflow.npz")
    lib.write_npz(data, {
        "input0": lib.Tensor.from_values("F16", [rows, 784], features),
        "input1": lib.Tensor.from_values("I32", [rows], labels),
    })
    calm = os.path.join(args.workdir, "calm.npz")
    for index in range(len(features)):
        if features[index] == 1000.0:
            features[index] = 0.5
    lib.write_npz(calm, {
        "input0": lib.Tensor.from_values("F16", [rows, 784], features),
        "input1": lib.Tensor.from_values("I32", [rows], labels),
    })
    states = {}
    for stage in range(4):
        for count in (1, 2):
            tag = f"overflow-s{stage}-steps{count}"
            metrics, state = lib.train(program, args.workdir, tag, ranks, stage,
                                       count, extra=["--accumulate", k,
                                                     "--data", data])
            states[(stage, count)] = (metrics, state)
        scale, good = scaler(states[(stage, 2)][1])
        checker.check((scale, good) == (2.0 ** 14, 0.0),
                      f"stage {stage}: scaler after 2 overflowing steps is "
                      f"({scale}, {good}), expected (2^14, 0)")
        problems = lib.bitwise_diff_states(states[(stage, 1)][1],
                                           states[(stage, 2)][1])
        checker.check(sorted(p.split("'")[1] for p in problems) == ["loss_scale"],
                      f"stage {stage}: a skipped step changed more than the "
                      f"scale: {problems[:4]}")
    for stage in (1, 3):
        check_pair(checker, f"overflow: stage {stage} vs {stage - 1}",
                   states[(stage, 2)], states[(stage - 1, 2)])
    # Self-test: without the spike the same run updates.
    _, calm_state = lib.train(program, args.workdir, "calm", ranks, 2, 1,
                              extra=["--accumulate", k, "--data", calm])
    checker.check(scaler(calm_state) == (2.0 ** 16, 1.0) and
                  lib.bitwise_diff_states(calm_state, states[(2, 1)][1]),
                  f"self-test: without the spike the step is not applied "
                  f"(scaler {scaler(calm_state)})")
    checker.note("an overflow in one micro-batch of one rank skips the whole "
                 "step on every rank, stages 0-3")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(MODELS), required=True)
    parser.add_argument("--ranks", default="1,2,3")
    parser.add_argument("--accumulate", default="2,4")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=1e-5)
    parser.add_argument("--overflow", action="store_true")
    parser.add_argument("--src-root", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    checker = lib.Checker(f"accumulation {args.model}")
    make, local, extra, clips = MODELS[args.model]
    try:
        check_accumulation(checker, args, make, local, extra, clips)
        if args.overflow:
            check_overflow(checker, args)
    except (lib.RunError, subprocess.CalledProcessError, ValueError) as error:
        checker.check(False, str(error))
    checker.finish()


if __name__ == "__main__":
    main()
