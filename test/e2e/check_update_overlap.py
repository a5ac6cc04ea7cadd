#!/usr/bin/env python3
"""Checks zero-schedule's stage 1-2 updates placed for a machine end to end
(test/e2e/update-overlap.test).

Compiled for a machine whose collectives overlap compute (the H100
preset), zero-schedule moves each optimizer update and the gather of its
result into the backward. For a model at stages 1 and 2 on N ranks,
deterministic, a run compiled for no machine and one compiled for the H100
preset (run here on CPU ranks) are checked for

* the same losses and final parameters, bitwise (the schedule moves
  operations, never changes them);
* measured state, traffic and peak memory as the compile-time report says;
* at stage 2, a lowered program that differs from the baseline's (without
  it the test would pass vacuously); at stage 1, whose reductions follow
  the backward, the updates cannot move into it.

  check_update_overlap.py --model gpt2-bf16 --ranks 2 --src-root SRC \\
      --workdir DIR
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib as lib  # noqa: E402
from run_matrix import check_measured  # noqa: E402

STEPS = 4


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt2-bf16", choices=sorted(lib.MODELS))
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--src-root", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    checker = lib.Checker(f"update overlap {args.model}")
    program, _ = lib.model_program(args.model, args.src_root, args.ranks,
                                   args.workdir)
    n = args.ranks
    for stage in (1, 2):
        ref_metrics, ref_state, ref_program = lib.train_with_options(
            program, args.workdir, f"base-{stage}", n, stage, STEPS, "")
        check_measured(checker, f"stage {stage} baseline", ref_metrics, n)
        options = "machine=h100-nvlink-8"
        metrics, state, lowered = lib.train_with_options(
            program, args.workdir, f"h100-{stage}", n, stage, STEPS, options)
        where = f"N={n} stage {stage} {options}"
        check_measured(checker, where, metrics, n)
        same = lib.check_same_training(checker, where, (ref_metrics, ref_state),
                                       (metrics, state))
        if stage == 2:
            checker.check(lowered != ref_program,
                          f"{where}: the lowered program is the baseline's")
        if same:
            checker.note(f"{where}: bitwise equal to the program compiled "
                         f"for no machine"
                         + ("" if lowered == ref_program else
                            ", reordered"))
    checker.finish()


if __name__ == "__main__":
    main()
