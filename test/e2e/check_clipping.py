#!/usr/bin/env python3
"""Checks gradient clipping by global norm end to end (test/e2e/clipping.test).

The MLP of examples/mlp.mlir with momentum SGD (linear in the gradient,
unlike Adam, whose update hardly changes when every gradient is scaled) and
`clip_norm 0.1`, small enough that every step clips. For N = 2 and 3 (3
pads the shards of fc1.b, fc2.w and fc2.b), stages 0-3, 5 deterministic
steps:

1. Stages 1-3 give bitwise equal losses and final parameters: they compute
   the same shards, the same per-rank partial sums of squares, and add them
   with the same all-reduce.
2. Stage 0 sums the squares of whole tensors in another order than the
   shards' partial sums, so its norm (and so every later value) may differ
   in the last bits: losses and parameters agree with stage 1 within 1e-6,
   relative. Bitwise equality is reported, not required.
3. Every rank's measured traffic (including the scalar all-reduce of the
   partial sums at stages 1-3) and state equal the report's.
4. Clipping is active: the same runs without clip_norm give other losses.

  check_clipping.py --src-root SRC --workdir DIR
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib  # noqa: E402
from run_matrix import check_measured  # noqa: E402

CLIPPED = e2e_lib.MLP_MOMENTUM + " clip_norm 0.1"
STEPS = 5
TOLERANCE = 1e-6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--src-root", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    checker = e2e_lib.Checker("clipping")
    clipped = e2e_lib.mlp_program(args.src_root, 16, args.workdir, CLIPPED,
                                  "mlp-clip")
    plain = e2e_lib.mlp_program(args.src_root, 16, args.workdir,
                                e2e_lib.MLP_MOMENTUM, "mlp-noclip")
    for ranks in (2, 3):
        runs = {}
        for stage in (0, 1, 2, 3):
            tag = f"clip-n{ranks}-s{stage}"
            metrics, state = e2e_lib.train(clipped, args.workdir, tag, ranks,
                                           stage, STEPS)
            checker.check(len(metrics["losses"]) == STEPS,
                          f"{tag}: {len(metrics['losses'])} losses")
            check_measured(checker, tag, metrics, ranks)
            runs[stage] = (metrics["losses"], state)
            if stage > 0:
                reduce = metrics["report"]["traffic"].get("all_reduce", {})
                # The loss and the partial sums of squares.
                checker.check(reduce.get("count") == 2,
                              f"{tag}: {reduce.get('count')} all-reduces, "
                              "expected 2 (loss and squared norm)")
        base_losses, base_state = runs[1]
        for stage in (2, 3):
            losses, state = runs[stage]
            checker.check(losses == base_losses,
                          f"N={ranks}: stage {stage} losses differ from "
                          f"stage 1: {losses} vs {base_losses}")
            problems = e2e_lib.bitwise_diff_states(base_state, state)
            checker.check(not problems, f"N={ranks}: stage {stage} state "
                          f"differs from stage 1: {problems[:3]}")
        checker.note(f"N={ranks}: stages 1-3 bitwise equal "
                     f"(losses {base_losses[0]:.6f} -> {base_losses[-1]:.6f})")

        losses0, state0 = runs[0]
        worst = max(e2e_lib.relative_error(a, b)
                    for a, b in zip(losses0, base_losses))
        checker.check(worst <= TOLERANCE,
                      f"N={ranks}: stage 0 losses differ from stage 1 by "
                      f"{worst:.3e} relative")
        problems, worst_l2, worst_max = e2e_lib.close_states(
            state0, base_state, TOLERANCE)
        checker.check(not problems, f"N={ranks}: stage 0 state differs from "
                      f"stage 1 beyond {TOLERANCE}: {problems[:3]}")
        bitwise = (losses0 == base_losses
                   and not e2e_lib.bitwise_diff_states(state0, base_state))
        checker.note(f"N={ranks}: stage 0 vs 1: losses {worst:.1e}, "
                     f"parameters {worst_l2:.1e} (L2) {worst_max:.1e} (max) "
                     f"relative; bitwise equal: {'yes' if bitwise else 'no'}")

        unclipped, _ = e2e_lib.train(plain, args.workdir, f"noclip-n{ranks}",
                                     ranks, 1, STEPS)
        unclipped = unclipped["losses"]
        checker.check(unclipped[0] == base_losses[0],
                      f"N={ranks}: the first loss (before any update) "
                      f"differs without clipping")
        differ = sum(a != b for a, b in zip(unclipped[1:], base_losses[1:]))
        checker.check(differ == STEPS - 1,
                      f"N={ranks}: only {differ} of {STEPS - 1} losses after "
                      "an update change without clip_norm")
        checker.note(f"N={ranks}: clipping active (last loss "
                     f"{base_losses[-1]:.6f} clipped, {unclipped[-1]:.6f} not)")
    checker.finish()


if __name__ == "__main__":
    main()
