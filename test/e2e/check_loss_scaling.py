#!/usr/bin/env python3
"""Checks dynamic loss scaling end to end (test/e2e/loss-scaling.test).

The MLP of examples/mlp-forward.mlir in f16 (parameters, inputs and
activations; the loss and the optimizer state f32), its optimizer given
`loss_scale S growth_interval G`, through `zero-opt --train-autodiff`, then
`zero-run` with --deterministic at stages 0-3:

1. Healthy scale (S = 2^16, G = 3, 8 steps, N = 2 and 3): no step overflows,
   so the scale doubles after steps 3 and 6 (2^18, 2 good steps left).
   Losses and final state (parameters, masters, scaler) are bitwise equal
   across the stages. Measured traffic and state equal the report's; stages
   1-3 all-reduce the overflow flag beside the loss; stage 0 all-reduces
   only the gradients and the loss, as every rank checks the same averaged
   gradients there.
2. Overflow (S = 2^40, G = 1000, 30 steps, N = 3, stages 0, 2, 3): f16
   gradients overflow until the scale has halved enough. With k skipped
   steps the final scale is 2^(40 - k) and the good-step count 30 - k, with
   0 < k < 30; the stages stay bitwise equal, which needs every rank to skip
   the same steps although each checks only its own shards.
3. A skipped step changes nothing: after 1 and after 2 overflowing steps the
   parameters, masters and moments are the same bits, only the scale differs.
4. The all-reduce of the flag is what makes the ranks agree: the stage-2
   program with it removed (each rank trusting its own shards) diverges from
   stage 0 in run 2. This is the self-test that the comparison can fail.
5. f16 with loss scaling tracks f32 training of the same model: the losses
   over 8 steps agree within 1e-3 relative.

  check_loss_scaling.py --src-root SRC --workdir DIR
"""

import argparse
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib  # noqa: E402
from run_matrix import check_measured  # noqa: E402

OPTIMIZER = "train.optimizer @adam adam lr 1.0e-03 betas(0.9, 0.999) eps 1.0e-08"
F16_TOLERANCE = 1e-3


def zero_opt(args):
    tool = os.path.join(os.path.dirname(e2e_lib.zero_run_path()), "zero-opt")
    proc = subprocess.run([tool] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"zero-opt {' '.join(args)}:\n{proc.stdout}")


def step_program(src_root, workdir, name, dtype, loss_scale=None):
    """examples/mlp-forward.mlir in `dtype`, differentiated."""
    with open(os.path.join(src_root, "examples", "mlp-forward.mlir")) as f:
        text = f.read()
    if text.count(OPTIMIZER) != 1:
        raise ValueError("examples/mlp-forward.mlir: optimizer line changed")
    if loss_scale is not None:
        scale, interval = loss_scale
        text = text.replace(OPTIMIZER, f"{OPTIMIZER} loss_scale {scale:.1f} "
                            f"growth_interval {interval}")
    # Every float tensor but the scalar loss.
    text, count = re.subn(r"x(f32)>", f"x{dtype}>", text)
    if count < 20:
        raise ValueError(f"only {count} f32 tensor types rewritten")
    forward = os.path.join(workdir, f"{name}-forward.mlir")
    with open(forward, "w") as f:
        f.write(text)
    step = os.path.join(workdir, f"{name}.mlir")
    zero_opt([forward, "--train-autodiff", "-o", step])
    return step


def scaler(state_path):
    tensors = e2e_lib.read_safetensors(state_path)
    scale = struct.unpack("<f", tensors["loss_scale"].data)[0]
    good = struct.unpack("<f", tensors["loss_scale.good_steps"].data)[0]
    return scale, good


def check_stages(checker, program, workdir, tag, ranks, stages, steps):
    runs = {}
    for stage in stages:
        run_tag = f"{tag}-n{ranks}-s{stage}"
        metrics, state = e2e_lib.train(program, workdir, run_tag, ranks, stage,
                                       steps)
        check_measured(checker, run_tag, metrics, ranks)
        # Stage 0: the gradients' bucket and the loss; stages 1-3
        # reduce-scatter the gradients and all-reduce the loss and the flag.
        reduces = metrics["report"]["traffic"].get("all_reduce", {})
        checker.check(reduces.get("count") == 2,
                      f"{run_tag}: {reduces.get('count')} all-reduces, "
                      "expected 2")
        runs[stage] = (metrics["losses"], state)
    base_losses, base_state = runs[stages[0]]
    for stage in stages[1:]:
        losses, state = runs[stage]
        checker.check(losses == base_losses,
                      f"{tag} N={ranks}: stage {stage} losses differ from "
                      f"stage {stages[0]}")
        problems = e2e_lib.bitwise_diff_states(base_state, state)
        checker.check(not problems, f"{tag} N={ranks}: stage {stage} state "
                      f"differs from stage {stages[0]}: {problems[:3]}")
    return base_losses, base_state


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--src-root", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    checker = e2e_lib.Checker("loss-scaling")
    work = args.workdir

    healthy = step_program(args.src_root, work, "healthy", "f16",
                           (2.0 ** 16, 3))
    for ranks in (2, 3):
        losses, state = check_stages(checker, healthy, work, "healthy", ranks,
                                     (0, 1, 2, 3), 8)
        scale, good = scaler(state)
        checker.check((scale, good) == (2.0 ** 18, 2.0),
                      f"healthy N={ranks}: scaler ends at ({scale}, {good}), "
                      "expected (2^18, 2)")
        checker.note(f"N={ranks}: stages 0-3 bitwise equal, scale 2^16 -> "
                     f"2^18 (losses {losses[0]:.6f} -> {losses[-1]:.6f})")

    overflow = step_program(args.src_root, work, "overflow", "f16",
                            (2.0 ** 40, 1000))
    steps = 30
    _, state = check_stages(checker, overflow, work, "overflow", 3, (0, 2, 3),
                            steps)
    scale, good = scaler(state)
    skipped = steps - int(good)
    checker.check(0 < skipped < steps and scale == 2.0 ** (40 - skipped),
                  f"overflow: scale {scale} and {good} good steps do not "
                  f"show 0 < k < {steps} halvings from 2^40")
    checker.note(f"overflow N=3: stages 0, 2, 3 bitwise equal, {skipped} "
                 f"steps skipped, scale 2^40 -> 2^{40 - skipped}")

    one, one_state = e2e_lib.train(overflow, work, "skip-1", 2, 2, 1)
    two, two_state = e2e_lib.train(overflow, work, "skip-2", 2, 2, 2)
    problems = e2e_lib.bitwise_diff_states(one_state, two_state)
    checker.check(
        sorted(p.split("'")[1] for p in problems)
        == ["loss_scale"],
        f"skipped step: states after 1 and 2 overflowing steps differ in "
        f"more than the scale: {problems[:4]}")
    checker.check(scaler(one_state)[0] == 2.0 ** 39 and
                  scaler(two_state)[0] == 2.0 ** 38,
                  "skipped step: the scale did not halve each step")
    checker.note("a skipped step leaves parameters, masters and moments "
                 "bitwise unchanged")

    # Self-test: stage 2 without the agreement diverges.
    sharded = os.path.join(work, "overflow-s2.mlir")
    zero_opt([overflow, "--zero-pipeline=stage=2 ranks=3", "-o", sharded])
    with open(sharded) as f:
        text = f.read()
    match = re.search(r"\n\s*(%\S+) = dist\.all_reduce max (%\S+) axis 0 "
                      r": tensor<f32>", text)
    checker.check(match is not None, "no all-reduce max of the flag at stage 2")
    if match:
        text = text[:match.start()] + text[match.end():]
        text = re.sub(re.escape(match.group(1)) + r"\b", match.group(2), text)
        broken = os.path.join(work, "overflow-s2-disagree.mlir")
        with open(broken, "w") as f:
            f.write(text)
        program = os.path.join(work, "overflow-s2-disagree-program.mlir")
        zero_opt([broken, "--zero-lower-to-runtime", "-o", program])
        broken_state = os.path.join(work, "disagree.safetensors")
        e2e_lib.zero_run(program, ["-n", 3, "--steps", steps, "--seed", 1,
                                   "--deterministic", "--quiet",
                                   "--save-state", broken_state,
                                   "--timeout", 60])
        differs = e2e_lib.bitwise_diff_states(
            os.path.join(work, "overflow-n3-s0.safetensors"), broken_state)
        checker.check(bool(differs), "self-test: without the all-reduce of "
                      "the flag the run still matches stage 0")
        checker.note("self-test: without agreeing on overflow, ranks diverge")

    f32 = step_program(args.src_root, work, "f32", "f32")
    reference, _ = e2e_lib.train(f32, work, "f32", 2, 0, 8)
    half, _ = e2e_lib.train(healthy, work, "f16", 2, 0, 8)
    worst = max(e2e_lib.relative_error(a, b)
                for a, b in zip(half["losses"], reference["losses"]))
    checker.check(worst <= F16_TOLERANCE, f"f16 losses differ from f32 by "
                  f"{worst:.2e} relative (> {F16_TOLERANCE})")
    checker.note(f"f16 with loss scaling tracks f32 within {worst:.1e} "
                 f"relative (tolerance {F16_TOLERANCE})")
    checker.finish()


if __name__ == "__main__":
    main()
