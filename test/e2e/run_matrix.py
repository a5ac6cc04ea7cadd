#!/usr/bin/env python3
"""Stage/rank matrix of one model: trains it at ZeRO stages 0-3 on N ranks
(deterministic mode) and checks the properties of DESIGN.md section 6:

1. At each N, the loss trace and the final parameters (--save-state) of the
   four stages are bitwise equal.
2. Against one rank training the same global batch (the model with an
   N times larger batch), losses and final parameters agree within
   --tolerance, relative. Losses: |a - b| / |b| per step. Parameters: per
   tensor, the relative L2 ||a - b||_2 / ||b||_2 (see e2e_lib.tensor_errors
   for why not the max norm, which is printed too).
3. Every rank's measured parameters, slots, masters and persistent bytes
   equal the compile-time report's; its traffic in the first step equals the
   report's traffic per step (count, bytes and sent_bytes_per_rank of every
   collective kind); its measured peak is at most the report's peak.

Every difference is printed; the exit status is 1 when any check failed.

  run_matrix.py --model mlp --ranks 1,2,3,4 --steps 10 --workdir /tmp/m

--tamper KIND deliberately breaks one expectation (a self-test of the
checks: the run must then fail and say what differs).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib as lib  # noqa: E402

STATE_KEYS = ["parameters", "slots", "masters", "persistent"]
TRAFFIC_FIELDS = ["count", "bytes", "sent_bytes_per_rank"]


def check_measured(checker, where, metrics, ranks, require_written=False):
    report = metrics["report"]
    measured = metrics["measured"]
    checker.check(
        len(measured) == ranks,
        f"{where}: metrics hold {len(measured)} ranks' measurements, expected {ranks}",
    )
    for entry in measured:
        rank = entry.get("rank")
        at = f"{where} rank {rank}"
        for key in STATE_KEYS:
            checker.check(
                entry.get(key) == report.get(key),
                f"{at}: measured {key} {entry.get(key)} != report {report.get(key)}",
            )
        # Derived: the arena's extent as the loaded program's operands reach
        # it, against the compiler's plan (zrt.planned_arena), which the
        # runtime does not allocate by.
        checker.check(
            entry["peak"] <= report["peak"],
            f"{at}: derived peak {entry['peak']} > report peak {report['peak']}",
        )
        # Measured (--check-memory on CPU ranks): the bytes the instructions
        # wrote while the run went on, against the same plan.
        written = entry.get("written")
        checker.check(written is not None or not require_written,
                      f"{at}: no measured writes (zero-run --check-memory)")
        if written is not None:
            checker.check(
                written["arena_high_water"] <= report["arena_bytes"],
                f"{at}: wrote the arena up to byte "
                f"{written['arena_high_water']}, beyond the "
                f"{report['arena_bytes']} planned",
            )
            checker.check(
                written["host_arena_high_water"] <= report["host_arena_bytes"],
                f"{at}: wrote the host arena up to byte "
                f"{written['host_arena_high_water']}, beyond the "
                f"{report['host_arena_bytes']} planned",
            )
            # And against what no placement decided: the bytes live at
            # once, times zero-run's fragmentation bound (RunMetrics.h).
            live = report.get("live_bytes_lower_bound", 0)
            bound = report.get("arena_fragmentation_bound", 0)
            checker.check(
                live > 0 and written["arena_high_water"] <= live * bound,
                f"{at}: wrote the arena up to byte "
                f"{written['arena_high_water']}, beyond {bound} x the {live} "
                f"bytes live at once",
            )
            checker.check(
                written.get("guard_bytes", 0) == 0
                and written.get("host_guard_bytes", 0) == 0,
                f"{at}: wrote {written.get('guard_bytes')} and "
                f"{written.get('host_guard_bytes')} bytes into the guard "
                f"bands past the arenas",
            )
            checker.check(
                entry["peak_written"] <= report["peak"],
                f"{at}: measured peak {entry['peak_written']} > report peak "
                f"{report['peak']}",
            )
        got = entry["traffic_per_step"]
        want = report["traffic"]
        for kind in sorted(set(got) | set(want)):
            if kind not in got or kind not in want:
                checker.check(
                    False,
                    f"{at}: collective kind '{kind}' only in the "
                    f"{'measurement' if kind in got else 'report'}",
                )
                continue
            for field in TRAFFIC_FIELDS:
                checker.check(
                    got[kind].get(field) == want[kind].get(field),
                    f"{at}: {kind} {field} measured {got[kind].get(field)!r} "
                    f"!= report {want[kind].get(field)!r}",
                )


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(lib.MODELS), required=True)
    parser.add_argument("--ranks", default="1,2,3,4")
    parser.add_argument("--stages", default="0,1,2,3")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tolerance", type=float, default=1e-5)
    parser.add_argument("--reference", choices=["full", "losses", "none"], default="full",
                        help="what to compare with the one-rank run: losses and "
                             "parameters, losses only, or nothing")
    parser.add_argument("--src-root", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--tamper", choices=["loss", "state", "report", "reference"],
                        help="break one expectation on purpose (self-test)")
    args = parser.parse_args()

    os.makedirs(args.workdir, exist_ok=True)
    stages = [int(s) for s in args.stages.split(",")]
    checker = lib.Checker(f"run_matrix {args.model}")

    for ranks in [int(n) for n in args.ranks.split(",")]:
        local, single = lib.model_program(args.model, args.src_root, ranks, args.workdir)
        results = {}
        for stage in stages:
            tag = f"{args.model}-n{ranks}-s{stage}"
            try:
                metrics, state = lib.train(local, args.workdir, tag, ranks, stage,
                                           args.steps, args.seed)
            except lib.RunError as error:
                checker.check(False, f"{tag}: zero-run failed: {error}")
                continue
            checker.note(f"{tag}: {metrics['_seconds']:.2f} s, losses "
                         f"{metrics['losses'][0]:.6f} -> {metrics['losses'][-1]:.6f}")
            checker.check(len(metrics["losses"]) == args.steps,
                          f"{tag}: {len(metrics['losses'])} losses for {args.steps} steps")
            if args.tamper == "report" and stage == stages[-1] and ranks > 1:
                metrics["report"]["traffic"]["all_gather"]["bytes"] += 4
                metrics["report"]["slots"] += 1
            check_measured(checker, tag, metrics, ranks, require_written=True)
            results[stage] = (metrics, state)
        if not results:
            continue

        # 1. Bitwise across stages.
        base_stage = min(results)
        base_metrics, base_state = results[base_stage]
        for problem in lib.check_saved_params(local, base_state):
            checker.check(False, f"N={ranks}: --save-state: {problem}")
        if args.tamper == "state" and ranks > 1:
            tensors = lib.read_safetensors(base_state)
            name = sorted(tensors)[-1]
            data = bytearray(tensors[name].data)
            data[0] ^= 1  # the lowest mantissa bit of element 0
            tensors[name].data = bytes(data)
            lib.write_safetensors(base_state, tensors)
        for stage, (metrics, state) in sorted(results.items()):
            if stage == base_stage:
                continue
            losses, base_losses = metrics["losses"], base_metrics["losses"]
            if args.tamper == "loss" and ranks > 1:
                losses = list(losses)
                losses[-1] = losses[-1] * (1 + 2**-23)
            mismatched = [i for i, (a, b) in enumerate(zip(losses, base_losses)) if a != b]
            checker.check(
                not mismatched and len(losses) == len(base_losses),
                f"N={ranks}: stage {stage} losses differ from stage {base_stage} "
                f"at steps {[i + 1 for i in mismatched]}: "
                + ", ".join(f"{losses[i]!r} vs {base_losses[i]!r}" for i in mismatched[:4]),
            )
            for problem in lib.bitwise_diff_states(state, base_state):
                checker.check(False, f"N={ranks}: stage {stage} final parameters "
                                     f"differ from stage {base_stage}: {problem}")

        # 2. Against one rank over the same global batch.
        if ranks == 1 or args.reference == "none":
            continue
        tag = f"{args.model}-n{ranks}-reference"
        try:
            ref_metrics, ref_state = lib.train(single, args.workdir, tag, 1, 0,
                                               args.steps, args.seed)
        except lib.RunError as error:
            checker.check(False, f"{tag}: zero-run failed: {error}")
            continue
        check_measured(checker, tag, ref_metrics, 1, require_written=True)
        checker.check(
            ref_metrics["global_batch"] == base_metrics["global_batch"],
            f"N={ranks}: global batch {base_metrics['global_batch']} but the "
            f"one-rank reference's is {ref_metrics['global_batch']}",
        )
        ref_losses = ref_metrics["losses"]
        if args.tamper == "reference":
            ref_losses = [x * (1 + 1e-4) for x in ref_losses]
        worst_loss = 0.0
        for step, (a, b) in enumerate(zip(base_metrics["losses"], ref_losses), 1):
            error = lib.relative_error(a, b)
            worst_loss = max(worst_loss, error)
            checker.check(
                error <= args.tolerance,
                f"N={ranks}: step {step} loss {a!r} vs one-rank reference {b!r}: "
                f"relative error {error:.3e} > {args.tolerance:g}",
            )
        if args.reference == "losses":
            checker.note(f"N={ranks}: vs one-rank reference: worst loss relative "
                         f"error {worst_loss:.2e}")
            continue
        problems, worst_l2, worst_max = lib.close_states(base_state, ref_state,
                                                         args.tolerance)
        for problem in problems:
            checker.check(False, f"N={ranks}: final parameters vs one-rank "
                                 f"reference: {problem}")
        checker.note(f"N={ranks}: vs one-rank reference: worst loss relative "
                     f"error {worst_loss:.2e}; parameters: worst relative L2 "
                     f"{worst_l2:.2e}, worst relative max {worst_max:.2e}")

    checker.finish()


if __name__ == "__main__":
    main()
