#!/usr/bin/env python3
"""Checks ZeRO-Offload end to end (test/e2e/offload*.test).

For each model, N and ZeRO stage, in deterministic mode, a run compiled with
`zero-run --offload MODE` against the same run without offload:

1. Bitwise: the same losses and the same final state, tensor by tensor: the
   host stream runs the same CPU kernels on the same values.
2. Report = measurement: state bytes and traffic as in every e2e run
   (run_matrix.check_measured), and the two pools of the memory plan: the
   device bytes (device buffers + device arena) and the host bytes (host
   buffers + host arena) the runtime allocated, the bytes its program copies
   between them per optimizer step, and high waters within both arenas.
3. The placement: the plan says the mode; with `optimizer` the master
   copies and optimizer slots are all the host holds; with
   `optimizer+params` the parameter shards are there too.

With --budget it also runs `--offload auto` at a budget of exactly the
device bytes of `--offload optimizer` (which must be chosen, and whose
measured device high water must stay within the budget) and at one byte
less than the least any placement reaches (which must fail, saying so).

  check_offload.py --model mlp --ranks 1,2,3 --stages 1,2,3 \\
      --src-root SRC --workdir DIR [--budget]
"""

import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib as lib  # noqa: E402
from run_matrix import check_measured  # noqa: E402

STEPS = 3


def check_pools(checker, where, metrics, mode):
    plan = metrics["report"].get("memory_plan")
    if not checker.check(plan is not None, f"{where}: the report has no memory plan"):
        return
    checker.check(plan["offload"] == mode,
                  f"{where}: the plan offloads '{plan['offload']}', expected '{mode}'")
    checker.check(plan["host_persistent_bytes"] > 0,
                  f"{where}: nothing in host memory")
    for entry in metrics["measured"]:
        pools = entry["pools"]
        at = f"{where} rank {entry['rank']}"
        for measured, planned in [("device_bytes", "device_bytes"),
                                  ("host_bytes", "host_bytes"),
                                  ("host_persistent", "host_persistent_bytes"),
                                  ("host_arena_bytes", "host_arena_bytes"),
                                  ("host_link_bytes_per_step",
                                   "host_link_bytes_per_step")]:
            checker.check(pools[measured] == plan[planned],
                          f"{at}: measured {measured} {pools[measured]} != "
                          f"plan {planned} {plan[planned]}")
        # Against the compiler's plan, not the pools the runtime allocated
        # (those bound the high waters by construction).
        checker.check(pools["device_high_water"] <= plan["device_bytes"],
                      f"{at}: device high water {pools['device_high_water']} "
                      f"over the planned device pool {plan['device_bytes']}")
        checker.check(pools["host_arena_high_water"] <= plan["host_arena_bytes"],
                      f"{at}: host arena high water over the planned host arena")
        # Every byte in host memory is one the plan's decisions name.
        decided = sum(int(m.group(1)) for line in plan["decisions"]
                      for m in [re.search(r", (\d+) B\) in host memory", line)] if m)
        checker.check(pools["host_persistent"] == decided,
                      f"{at}: {pools['host_persistent']} B in host memory, the "
                      f"plan's decisions name {decided}")
        # All optimizer state (masters and slots); with params, some
        # parameter shards too (replicated small ones stay).
        optimizer_state = entry["masters"] + entry["slots"]
        if mode == "optimizer":
            checker.check(pools["host_persistent"] == optimizer_state,
                          f"{at}: {pools['host_persistent']} B in host memory, "
                          f"expected the optimizer state's {optimizer_state}")
        else:
            checker.check(optimizer_state < pools["host_persistent"]
                          <= optimizer_state + entry["parameters"],
                          f"{at}: {pools['host_persistent']} B in host memory, "
                          f"expected the optimizer state's {optimizer_state} "
                          "and parameter shards")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(lib.MODELS), required=True)
    parser.add_argument("--ranks", default="1,2,3")
    parser.add_argument("--stages", default="1,2,3")
    parser.add_argument("--src-root", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--budget", action="store_true")
    parser.add_argument("--accumulate", type=int, default=1,
                        help="micro-batches per optimizer step, both runs")
    args = parser.parse_args()
    checker = lib.Checker(f"offload {args.model}")
    accumulate = ["--accumulate", args.accumulate] if args.accumulate > 1 else []

    for ranks in [int(n) for n in args.ranks.split(",")]:
        program, _ = lib.model_program(args.model, args.src_root, ranks, args.workdir)
        for stage in [int(s) for s in args.stages.split(",")]:
            base, base_state = lib.train(program, args.workdir,
                                         f"{args.model}-n{ranks}-s{stage}"
                                         f"-k{args.accumulate}",
                                         ranks, stage, STEPS, extra=accumulate)
            modes = ["optimizer"] + (["optimizer+params"] if stage == 3 else [])
            for mode in modes:
                where = f"N={ranks} stage {stage} offload={mode}"
                if args.accumulate > 1:
                    where += f" K={args.accumulate}"
                tag = (f"{args.model}-n{ranks}-s{stage}-k{args.accumulate}-"
                       f"{mode.replace('+', '-')}")
                run, state = lib.train(program, args.workdir, tag, ranks, stage,
                                       STEPS, extra=["--offload", mode] + accumulate)
                same_losses = checker.check(
                    run["losses"] == base["losses"],
                    f"{where}: losses {run['losses']} != without offload "
                    f"{base['losses']}")
                problems = lib.bitwise_diff_states(base_state, state)
                for problem in problems:
                    checker.check(False, f"{where}: {problem}")
                check_measured(checker, where, run, ranks, require_written=True)
                check_pools(checker, where, run, mode)
                if same_losses and not problems:
                    checker.note(f"{where}: bitwise equal to no offload, "
                                 "pools as planned")

    if args.budget:
        ranks, stage = int(args.ranks.split(",")[-1]), 3
        program, _ = lib.model_program(args.model, args.src_root, ranks, args.workdir)
        optimizer, _ = lib.train(program, args.workdir, "budget-optimizer",
                                 ranks, stage, STEPS, extra=["--offload", "optimizer"])
        budget = optimizer["report"]["memory_plan"]["device_bytes"]
        auto, _ = lib.train(program, args.workdir, "budget-auto", ranks, stage,
                            STEPS, extra=["--offload", "auto",
                                          "--device-memory-budget", budget])
        plan = auto["report"]["memory_plan"]
        checker.check(plan["offload"] == "optimizer" and plan["device_bytes"] <= budget,
                      f"auto at {budget} B chose {plan['offload']} "
                      f"({plan['device_bytes']} B)")
        checker.check(auto["losses"] == optimizer["losses"],
                      "auto's losses differ from offload=optimizer's")
        high = max(entry["pools"]["device_high_water"] for entry in auto["measured"])
        checker.check(high <= budget,
                      f"measured device high water {high} B over the budget {budget} B")
        least = min(budget, plan["device_bytes"])
        params, _ = lib.train(program, args.workdir, "budget-params", ranks, stage,
                              STEPS, extra=["--offload", "optimizer+params"])
        least = min(least, params["report"]["memory_plan"]["device_bytes"])
        command = [lib.zero_run_path(), program, "-n", ranks, "--stage", stage,
                   "--steps", 1, "--quiet", "--offload", "auto",
                   "--device-memory-budget", least - 1]
        result = subprocess.run([str(c) for c in command], capture_output=True,
                                text=True, timeout=300)
        checker.check(result.returncode != 0 and "no placement fits" in result.stderr
                      and "short by" in result.stderr,
                      f"auto at {least - 1} B: exit {result.returncode}, "
                      f"stderr {result.stderr.strip()[:400]!r}")
        checker.note(f"N={ranks} stage 3: auto fits {budget} B with the "
                     f"optimizer state on the host (measured high water {high} B); "
                     f"{least - 1} B is refused")
    checker.finish()


if __name__ == "__main__":
    main()
