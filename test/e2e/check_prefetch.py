#!/usr/bin/env python3
"""Checks zero-schedule end to end (test/e2e/prefetch.test).

For a model at stage 3 on N ranks, deterministic: a baseline run without
prefetch, then runs with a prefetch window, with a window and a bound on
gathered bytes, and with the gathers unbucketed (so that every parameter's
gather moves on its own), each checked for

* the same losses and final parameters, bitwise, as its baseline (the
  schedule moves collectives, never arithmetic);
* measured state, traffic and peak memory as the compile-time report says;
* a lowered program that differs from the baseline's (the option took
  effect: without it the test would pass vacuously);
* zero-report's `peak_gathered_bytes` within the bound, when one is given,
  and at least the baseline's with a window (one mesh axis);
* every rank's measured `peak_gathered` (the loaded program's gathered
  bytes alive at once) equal to the report's, exactly when N divides every
  gathered tensor (the models' shapes at N = 2), else above it by padding
  rows only (under 0.5%).

  check_prefetch.py --model gpt2 --ranks 2 --src-root SRC --workdir DIR \\
      [--zero-opt build/bin/zero-opt] [--mesh 2x2 --ranks 4]
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib as lib  # noqa: E402
from run_matrix import check_measured  # noqa: E402

STEPS = 4
# R, S with --mesh: the state cut over both axes (mesh-scheme=full), each
# parameter gathered across nodes, then within the node.
MESH = None


def peak_gathered(zero_opt, program, ranks, options, workdir, tag):
    report = os.path.join(workdir, f"{tag}-report.json")
    mesh = f"mesh={MESH[0]},{MESH[1]} mesh-scheme=full" if MESH else ""
    subprocess.run(
        [zero_opt, program, "-o", os.devnull,
         "--pass-pipeline=builtin.module(zero-pipeline{stage=3 ranks=%d "
         "report=json report-output=%s %s %s})"
         % (ranks, report, mesh, options)],
        check=True)
    with open(report) as f:
        return json.load(f)["per_rank"]["peak_gathered_bytes"]


def check_gathered(checker, where, metrics, ranks):
    planned = metrics["report"]["peak_gathered"]
    for entry in metrics["measured"]:
        measured = entry["peak_gathered"]
        at = f"{where} rank {entry['rank']}"
        if ranks == 2:
            checker.check(measured == planned,
                          f"{at}: measured peak gathered {measured} != "
                          f"report {planned}")
        else:
            checker.check(planned <= measured <= planned * 1.005,
                          f"{at}: measured peak gathered {measured} not the "
                          f"report's {planned} up to padding")


def run(program, workdir, tag, ranks, options):
    mesh = (["--mesh", f"{MESH[0]}x{MESH[1]}", "--mesh-scheme", "full"]
            if MESH else [])
    return lib.train_with_options(program, workdir, tag, ranks, 3, STEPS,
                                  options, mesh)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt2", choices=sorted(lib.MODELS))
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--src-root", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--zero-opt", default="zero-opt")
    parser.add_argument("--mesh", default="",
                        help="RxS: a two-level grid of --ranks = R*S, the "
                        "state cut over both axes")
    args = parser.parse_args()
    global MESH
    if args.mesh:
        MESH = [int(extent) for extent in args.mesh.split("x")]
        if MESH[0] * MESH[1] != args.ranks:
            parser.error(f"--mesh {args.mesh} is not {args.ranks} ranks")
    # A machine with a link per axis for a grid.
    machine = "h100-nodes-ib400" if MESH else "h100-nvlink-8"
    checker = lib.Checker(f"prefetch {args.model}")
    program, _ = lib.model_program(args.model, args.src_root, args.ranks,
                                   args.workdir)
    n = args.ranks

    for base in ["", "allgather-bucket-bytes=0"]:
        label = base or "buckets"
        ref_metrics, ref_state, ref_program = run(
            program, args.workdir, f"base-{label}", n, base)
        ref_peak = peak_gathered(args.zero_opt, program, n, base,
                                 args.workdir, f"base-{label}")
        check_measured(checker, f"{label} baseline", ref_metrics, n)
        check_gathered(checker, f"{label} baseline", ref_metrics, n)
        window = ref_peak  # about one step's worth of gathered bytes ahead
        bound = ref_peak + ref_peak // 2
        if MESH:
            # The planner counts a two-level gather's copy out of the first
            # level where it was, beside the second level moved up: a bound
            # just over what the window reaches would admit no move.
            bound = 2 * ref_peak
        # Compiled for the H100 preset, the gathers are placed for its NCCL
        # stream: the program runs the same on CPU ranks.
        for extra in [f"prefetch-bytes={window}",
                      f"prefetch-bytes={window * 4} "
                      f"max-live-gathered-bytes={bound}",
                      f"machine={machine}"]:
            options = f"{base} {extra}".strip()
            tag = options.replace(" ", "_").replace("=", "-")
            metrics, state, lowered = run(program, args.workdir, tag, n,
                                          options)
            where = f"N={n}{' mesh ' + args.mesh if MESH else ''} " \
                f"stage 3 {options}"
            check_measured(checker, where, metrics, n)
            check_gathered(checker, where, metrics, n)
            same = lib.check_same_training(
                checker, where, (ref_metrics, ref_state), (metrics, state))
            checker.check(lowered != ref_program,
                          f"{where}: the lowered program is the baseline's")
            peak = peak_gathered(args.zero_opt, program, n, options,
                                 args.workdir, tag)
            checker.check(metrics["report"]["peak_gathered"] == peak,
                          f"{where}: the program's report says peak gathered "
                          f"{metrics['report']['peak_gathered']}, zero-report "
                          f"{peak}")
            # One level of gathers only extends what is alive; with two,
            # the copy out of the first level moves too and may end an
            # overlap the baseline has.
            checker.check(MESH or peak >= ref_peak,
                          f"{where}: peak gathered {peak} below the "
                          f"baseline's {ref_peak}")
            if "max-live" in options:
                checker.check(peak <= bound,
                              f"{where}: peak gathered {peak} over the bound "
                              f"{bound}")
            if same:
                checker.note(f"{where}: bitwise equal to no prefetch, "
                             f"peak gathered {peak} B (baseline {ref_peak} B)")
    checker.finish()


if __name__ == "__main__":
    main()
