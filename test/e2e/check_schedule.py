#!/usr/bin/env python3
"""Checks a learning-rate schedule end to end (test/e2e/schedule.test).

1. The scheduled MLP (warmup 10, cosine to step 30) trains 40 deterministic
   steps on 2 ranks at ZeRO stages 0 and 3: the kernels compute each step's
   rate from the runtime's step, which every rank shares, so the loss
   traces and the final parameters are bitwise equal across the stages.
2. Step 1 of the warmup takes lr / 10. From one common starting state
   (--init), one step with the schedule and one with the constant rate of
   examples/mlp.mlir change each parameter by ratios of max |dp| of 0.1
   (within 5%). For Adam this holds although its update is not linear in
   the gradient: at step 1 the bias-corrected moments are g and g^2, so the
   update is lr * g / (|g| + eps), which scales with lr alone. Both runs see
   the same parameters and data, hence the same g, and the ratio is 0.1 up
   to the f32 rounding of p - dp (a few ulps of p on a dp ~1e-5 to 1e-4).

  check_schedule.py --src-root SRC --workdir DIR
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib  # noqa: E402


def max_changes(before_path, after_path):
    """Tensor name -> max |after - before| over its elements."""
    before = e2e_lib.read_safetensors(before_path)
    after = e2e_lib.read_safetensors(after_path)
    return {
        name: max(abs(a - b) for a, b in zip(after[name].values(),
                                             before[name].values()))
        for name in sorted(before)
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--src-root", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    checker = e2e_lib.Checker("schedule")
    here = os.path.dirname(os.path.abspath(__file__))
    scheduled = os.path.join(here, "inputs", "mlp-schedule.mlir")
    constant = os.path.join(args.src_root, "examples", "mlp.mlir")

    # 1. Stages agree bitwise.
    runs = {stage: e2e_lib.train(scheduled, args.workdir, f"stage{stage}", 2,
                                 stage, 40)
            for stage in (0, 3)}
    losses0, losses3 = runs[0][0]["losses"], runs[3][0]["losses"]
    checker.check(len(losses0) == 40, f"{len(losses0)} losses at stage 0")
    same = [i + 1 for i, (a, b) in enumerate(zip(losses0, losses3)) if a != b]
    checker.check(not same and len(losses0) == len(losses3),
                  f"stage 0 and 3 losses differ at steps {same[:5]}")
    problems = e2e_lib.bitwise_diff_states(runs[0][1], runs[3][1])
    checker.check(not problems, f"stage 0 and 3 states differ: {problems[:3]}")
    checker.note(f"stages 0 and 3: {len(losses0)} losses bitwise equal "
                 f"(first {losses0[0]:.6f}, last {losses0[-1]:.6f})")

    # 2. Step 1 of the warmup is a tenth of a constant-rate step.
    _, start = e2e_lib.train(constant, args.workdir, "start", 2, 0, 1)
    init = ["--init", start]
    _, after_constant = e2e_lib.train(constant, args.workdir, "constant", 2, 0,
                                      1, extra=init)
    _, after_scheduled = e2e_lib.train(scheduled, args.workdir, "warmup", 2, 0,
                                       1, extra=init)
    constant_dp = max_changes(start, after_constant)
    scheduled_dp = max_changes(start, after_scheduled)
    for name in constant_dp:
        ratio = scheduled_dp[name] / max(constant_dp[name], 1e-30)
        checker.check(abs(ratio / 0.1 - 1.0) <= 0.05,
                      f"{name}: step-1 max |dp| ratio {ratio:.6f}, "
                      "expected 0.1 within 5%")
        checker.note(f"{name}: max |dp| {scheduled_dp[name]:.4e} with warmup "
                     f"10, {constant_dp[name]:.4e} without: ratio {ratio:.6f}")
    checker.finish()


if __name__ == "__main__":
    main()
