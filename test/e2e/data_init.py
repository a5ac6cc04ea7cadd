#!/usr/bin/env python3
"""Training from files: batches from --data (.npz) and the initial state
from --init (.safetensors). Needs the files of make_files.py in --files.

  data_init.py --part data|init --files DIR --workdir DIR

--part data (MLP and GPT-2, batches from hand-built .npz files):
  * MLP, N = 2, stages 0-3, 4 steps over mlp-ab.npz (2 global batches of
    64 rows, used in turn): losses and final parameters bitwise equal
    across stages; the metrics name the file and its 2 batches;
  * one rank with batch 64 over the same file sees the same global batches:
    losses within 1e-5 relative of the 2-rank run's, parameters within 1e-5
    relative L2 (each rank reads its own rows of every global batch);
  * the file is what is read: step 1 of mlp-a.npz (batch A alone) equals
    step 1 of mlp-ab.npz bitwise, and step 1 of mlp-ba.npz (B first)
    differs from it;
  * GPT-2 (three i32 inputs), N = 2, stages 0-3 over gpt2-ab.npz: losses
    and final parameters bitwise equal across stages.

--part init (MLP, --init and --save-state):
  * all-zero parameters (mlp-zeros.safetensors, written by hand): every
    logit is 0, so the first loss is ln 10 whatever the data (checked to
    1e-6 relative), at N = 1 and at N = 3 stage 3 (sharded, padded);
  * a saved state loads exactly: over one fixed batch (mlp-a.npz), run A
    trains 6 steps and run B 5 steps then saves S5. The first loss of a
    run started from --init S5 is the loss of S5's parameters on that
    batch, i.e. A's 6th loss: bitwise at the same N (2) and stage (1), and
    within 1e-5 relative on 4 ranks at stage 3 with batch 16 (the same
    global batch, loaded resharded and padded);
  * training continues from the loaded parameters: the optimizer moments
    are not saved, so the first step from S5 is Adam's first step, which
    moves every element by at most lr = 1e-3; the state saved after it is
    within lr of S5 element-wise (and differs from it).
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib as lib  # noqa: E402

TOL = 1e-5


def run(checker, program, workdir, tag, ranks, stage, steps, extra):
    try:
        metrics, state = lib.train(program, workdir, tag, ranks, stage, steps, extra=extra)
    except lib.RunError as error:
        checker.check(False, f"{tag}: zero-run failed: {error}")
        return None, None
    checker.note(f"{tag}: losses {[round(x, 6) for x in metrics['losses']]}")
    return metrics, state


def bitwise_stages(checker, label, results):
    base_stage = min(results)
    base, base_state = results[base_stage]
    for stage, (metrics, state) in sorted(results.items()):
        checker.check(
            metrics["losses"] == base["losses"],
            f"{label}: stage {stage} losses {metrics['losses']} != stage "
            f"{base_stage} losses {base['losses']}",
        )
        for problem in lib.bitwise_diff_states(state, base_state):
            checker.check(False, f"{label}: stage {stage} final parameters differ "
                                 f"from stage {base_stage}: {problem}")


def part_data(checker, args):
    files, work = args.files, args.workdir
    mlp32 = lib.mlp_program(args.src_root, 32, work)
    mlp64 = lib.mlp_program(args.src_root, 64, work)
    ab = os.path.join(files, "mlp-ab.npz")

    results = {}
    for stage in range(4):
        metrics, state = run(checker, mlp32, work, f"data-mlp-n2-s{stage}", 2, stage, 4,
                             ["--data", ab])
        if metrics:
            results[stage] = (metrics, state)
    if len(results) != 4:
        return
    bitwise_stages(checker, "MLP --data mlp-ab.npz, N=2", results)
    metrics, state = results[0]
    checker.check(metrics["data"] == f"{ab} (2 global batches)",
                  f"metrics 'data' is {metrics['data']!r}, expected "
                  f"'{ab} (2 global batches)'")
    checker.check(metrics["global_batch"] == 64,
                  f"global batch {metrics['global_batch']}, expected 64")

    single, single_state = run(checker, mlp64, work, "data-mlp-n1-b64", 1, 0, 4, ["--data", ab])
    if single:
        for step, (a, b) in enumerate(zip(metrics["losses"], single["losses"]), 1):
            error = lib.relative_error(a, b)
            checker.check(error <= TOL, f"--data, step {step}: 2-rank loss {a!r} vs "
                                        f"1-rank batch-64 loss {b!r}: relative error "
                                        f"{error:.3e} > {TOL:g}")
        problems, l2, _ = lib.close_states(state, single_state, TOL)
        for problem in problems:
            checker.check(False, f"--data, 2 ranks vs 1 rank batch 64: {problem}")
        checker.note(f"--data: 2 ranks vs 1 rank over the same batches: parameters "
                     f"relative L2 {l2:.2e}")

    first_a, _ = run(checker, mlp32, work, "data-mlp-a", 2, 0, 1,
                     ["--data", os.path.join(files, "mlp-a.npz")])
    first_b, _ = run(checker, mlp32, work, "data-mlp-ba", 2, 0, 1,
                     ["--data", os.path.join(files, "mlp-ba.npz")])
    if first_a and first_b:
        checker.check(first_a["losses"][0] == metrics["losses"][0],
                      f"step 1 over mlp-a.npz {first_a['losses'][0]!r} != step 1 "
                      f"over mlp-ab.npz {metrics['losses'][0]!r} (both batch A)")
        checker.check(first_b["losses"][0] != metrics["losses"][0],
                      f"step 1 over mlp-ba.npz (batch B) equals step 1 over "
                      f"mlp-ab.npz (batch A): {first_b['losses'][0]!r}; is the file read?")

    gpt2 = lib.gpt2_program(args.src_root, lib.GPT2_LOCAL_BATCH, work)
    results = {}
    for stage in range(4):
        m, s = run(checker, gpt2, work, f"data-gpt2-n2-s{stage}", 2, stage, 4,
                   ["--data", os.path.join(files, "gpt2-ab.npz")])
        if m:
            results[stage] = (m, s)
    if len(results) == 4:
        bitwise_stages(checker, "GPT-2 --data gpt2-ab.npz, N=2", results)


def part_init(checker, args):
    files, work = args.files, args.workdir
    mlp32 = lib.mlp_program(args.src_root, 32, work)
    mlp16 = lib.mlp_program(args.src_root, 16, work)
    zeros = os.path.join(files, "mlp-zeros.safetensors")
    one_batch = os.path.join(files, "mlp-a.npz")
    lr = 1e-3  # examples/mlp.mlir's Adam

    for ranks, stage in ((1, 0), (3, 3)):
        metrics, _ = run(checker, mlp32, work, f"init-zeros-n{ranks}-s{stage}", ranks, stage,
                         1, ["--init", zeros])
        if metrics:
            loss = metrics["losses"][0]
            error = lib.relative_error(loss, math.log(10))
            checker.check(error <= 1e-6,
                          f"--init all zeros, N={ranks} stage {stage}: first loss "
                          f"{loss!r}, expected ln 10 = {math.log(10)!r} (relative "
                          f"error {error:.3e})")

    a6, _ = run(checker, mlp32, work, "init-a6", 2, 1, 6, ["--data", one_batch])
    b5, s5 = run(checker, mlp32, work, "init-b5", 2, 1, 5, ["--data", one_batch])
    if not (a6 and b5):
        return
    checker.check(b5["losses"] == a6["losses"][:5],
                  f"5-step run losses {b5['losses']} != the 6-step run's first five "
                  f"{a6['losses'][:5]}")
    resumed, resumed_state = run(checker, mlp32, work, "init-from-s5", 2, 1, 1,
                                 ["--data", one_batch, "--init", s5])
    if resumed:
        checker.check(resumed["losses"][0] == a6["losses"][5],
                      f"first loss from --init S5 {resumed['losses'][0]!r} != loss 6 "
                      f"of the uninterrupted run {a6['losses'][5]!r} (same N, stage)")
        saved = lib.read_safetensors(s5)
        after = lib.read_safetensors(resumed_state)
        moved = 0.0
        for name in sorted(saved):
            if name not in after:
                checker.check(False, f"state after resuming has no tensor '{name}'")
                continue
            deltas = [abs(x - y) for x, y in zip(after[name].values(), saved[name].values())]
            worst = max(deltas)
            moved = max(moved, worst)
            checker.check(worst <= lr * (1 + 1e-3),
                          f"one step from --init S5 moved '{name}' by up to {worst:.3e} "
                          f"> lr {lr:g}: it did not start from S5")
        checker.check(moved > 0, "one step from --init S5 changed no parameter")
    resharded, _ = run(checker, mlp16, work, "init-from-s5-n4-s3", 4, 3, 1,
                       ["--data", one_batch, "--init", s5])
    if resharded:
        error = lib.relative_error(resharded["losses"][0], a6["losses"][5])
        checker.check(error <= TOL,
                      f"first loss from --init S5 on 4 ranks, stage 3 "
                      f"{resharded['losses'][0]!r} vs loss 6 on 2 ranks, stage 1 "
                      f"{a6['losses'][5]!r}: relative error {error:.3e} > {TOL:g}")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["data", "init"], required=True)
    parser.add_argument("--files", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--src-root", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    checker = lib.Checker(f"data_init {args.part}")
    (part_data if args.part == "data" else part_init)(checker, args)
    checker.finish()


if __name__ == "__main__":
    main()
