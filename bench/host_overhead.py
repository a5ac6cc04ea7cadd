#!/usr/bin/env python3
"""Time per step of 1,000 small parameters against 10 large ones, same total.

DESIGN.md section 5: the runtime turns the program into an instruction list
once and replays it, with no per-parameter host work per step. This checks
it from outside: bench/gen_many_params.py writes two training steps with the
same total number of parameter elements (default 8,000,000), one as 1,000
vectors of 8,000 and one as 10 vectors of 800,000, doing the same arithmetic
per element (forward multiply and sum, backward multiply, AdamW). zero-run
trains each at stage 0 and stage 3 on N ranks (default 2); the step-time
ratio many/few is the measure (target: within 10 %).

The same two shapes at a total 1,000 times smaller (`--floor-total`, 1,000 x
8 and 10 x 800 elements) take almost no arithmetic, so their step time is the
runtime's fixed cost: per instruction (kernel, collective, update) and per
step. The floor's many-minus-few difference bounds what 1,000 parameters
cost on the host over 10 (printed as "fixed cost").

Runs are interleaved: each repetition runs every configuration once while
holding the build lock (`--lock`); figures are medians over repetitions of
the median step time (first step excluded). A run during which other
processes took more than `--noise-threshold` of the CPU is run again (see
bench/runtime_vs_pytorch.py).

    python3 bench/host_overhead.py --lock /tmp/zero-build.lock --markdown
        [--params 1000,10] [--total 8000000] [--floor-total 8000]
        [--stages 0,3] [--ranks 2] [--steps 20] [--repeats 5]
        [--pipeline-options "regather-in-backward=false"]
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zero-run", default=benchlib.DEFAULT_ZERO_RUN)
    parser.add_argument("--params", default="1000,10",
                        help="parameter counts: many,few")
    parser.add_argument("--total", type=int, default=8_000_000)
    parser.add_argument("--floor-total", type=int, default=8_000,
                        help="total of the fixed-cost models (0: none)")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--stages", default="0,3")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--pipeline-options", default="",
                        help="passed to zero-run, e.g. \"regather-in-backward=false\"")
    benchlib.add_run_arguments(parser)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    many, few = [int(x) for x in args.params.split(",")]
    stages = [int(x) for x in args.stages.split(",")]
    totals = [args.total] + ([args.floor_total] if args.floor_total else [])
    for total in totals:
        if total % many or total % few:
            parser.error("totals must be multiples of %d and %d, got %d" % (many, few, total))

    results = {}
    policy = benchlib.Interference(args.noise_threshold, args.max_reruns)
    with tempfile.TemporaryDirectory() as tmp:
        programs = {}
        for total in totals:
            for count in (many, few):
                path = os.path.join(tmp, "p%d-%d.mlir" % (count, total))
                subprocess.run([sys.executable,
                                os.path.join(benchlib.ROOT, "bench", "gen_many_params.py"),
                                "--params", str(count), "--total", str(total),
                                "--batch", str(args.batch), "-o", path], check=True)
                programs[(total, count)] = path
        with benchlib.build_lock(args.lock):
            zero_run, digest = benchlib.snapshot_zero_run(args.zero_run, tmp)

        configs = [(total, count, stage) for total in totals
                   for stage in stages for count in (many, few)]
        for rep in range(args.repeats):
            with benchlib.build_lock(args.lock) as waited:
                load = benchlib.loadavg()
                shift = rep % len(configs)
                for config in configs[shift:] + configs[:shift]:
                    total, count, stage = config
                    metrics = benchlib.run_zero(
                        zero_run, programs[(total, count)], args.ranks, stage,
                        args.steps, os.path.join(tmp, "m.json"),
                        ["--blas-threads", str(args.blas_threads)] +
                        (["--pipeline-options", args.pipeline_options]
                         if args.pipeline_options else []), policy)
                    entry = results.setdefault(config, {"ms": [], "noise": []})
                    entry["noise"].append(metrics["interference"])
                    entry["ms"].append(1000 * benchlib.median(benchlib.timed_seconds(metrics)))
                    entry["instructions"] = metrics["instructions"]
                    traffic = metrics["measured"][0]["traffic_per_step"]
                    entry["collectives"] = sum(t["count"] for t in traffic.values())
                    entry["loss"] = (metrics["losses"][0], metrics["losses"][-1])
            print("repetition %d/%d done (waited %.0f s for the lock; load %s before)"
                  % (rep + 1, args.repeats, waited, load), file=sys.stderr)

    print("%d steps, the first excluded; median of %d interleaved repetitions; "
          "N=%d, batch %d per rank; zero-run %s (sha256 %s) with --blas-threads %d%s."
          % (args.steps, args.repeats, args.ranks, args.batch, args.zero_run,
             digest, args.blas_threads,
             " --pipeline-options \"%s\"" % args.pipeline_options
             if args.pipeline_options else ""))
    print("Runs during which other processes took over %.0f%% of the CPU were run "
          "again (at most %d times): %d reruns, %d noisy runs kept."
          % (100 * args.noise_threshold, args.max_reruns, policy.reruns, policy.kept_noisy))
    print("Machine: %s\n" % benchlib.machine())
    head = ("total elements", "stage", "parameters", "elements each", "instructions",
            "collectives/step", "ms/step", "min-max", "others' CPU", "us/instruction",
            "ms/step many / few")
    rows = []
    for total in totals:
        for stage in stages:
            base = benchlib.median(results[(total, few, stage)]["ms"])
            for count in (many, few):
                e = results[(total, count, stage)]
                ms = benchlib.median(e["ms"])
                rows.append(("{:,}".format(total), str(stage), str(count),
                             "{:,}".format(total // count), str(e["instructions"]),
                             str(e["collectives"]), "%.2f" % ms,
                             "%.2f-%.2f" % (min(e["ms"]), max(e["ms"])),
                             "%.0f%%" % (100 * max(e["noise"])),
                             "%.2f" % (1000 * ms / e["instructions"]),
                             "%.3f" % (ms / base) if count == many else ""))
    print(benchlib.table(head, rows, args.markdown))
    print()
    for stage in stages:
        big_many = results[(args.total, many, stage)]
        big_few = results[(args.total, few, stage)]
        r = benchlib.median(big_many["ms"]) / benchlib.median(big_few["ms"])
        pairs = [a / b for a, b in zip(big_many["ms"], big_few["ms"])]
        print("stage %d: step time %d params / %d params = %.3f (per repetition "
              "%.3f-%.3f); target within 10%%: %s" % (
                  stage, many, few, r, min(pairs), max(pairs),
                  "met" if abs(r - 1) <= 0.10 else "MISSED"))
        if args.floor_total:
            floor_many = results[(args.floor_total, many, stage)]
            floor_few = results[(args.floor_total, few, stage)]
            fixed = benchlib.median(floor_many["ms"]) - benchlib.median(floor_few["ms"])
            print("         fixed cost of %d params over %d (from the %s-element "
                  "models): %.2f ms/step = %.1f%% of the %d-param step" % (
                      many, few, "{:,}".format(args.floor_total), fixed,
                      100 * fixed / benchlib.median(big_many["ms"]), many))


if __name__ == "__main__":
    main()
