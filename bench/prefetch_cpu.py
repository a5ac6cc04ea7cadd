#!/usr/bin/env python3
"""Whether issuing stage 3's gathers early shortens a step on CPU ranks.

gpt2_train trains GPT-2 at ZeRO stage 3 on N CPU ranks once per
`--prefetch-bytes P` (zero-schedule issues each parameter gather up to P
bytes of gathers ahead of its use; docs/passes.md, "zero-schedule") and,
where asked, once per `--machine M` (each gather placed for that machine's
predicted timeline instead). The configurations alternate: each repetition
runs every one once, in an order rotated per repetition, so that a slow
spell of the machine does not fall on one configuration.

The table gives the planned arena per rank and its ratio to the training
plan's tensor-level peak transient (gpt2_train's "plan, arena per rank"
line: what the earlier gathers cost in memory), the wall time of each run's
steps (its "done: S steps in T s" line, compile and launch left out) and
the final loss (the mean of the last steps), which must not depend on where
the gathers are issued. "others' CPU, most" is the largest share of the
machine other processes took during one of a configuration's kept runs
(benchlib's interference rule runs a noisy one again, up to a limit).

    python3 bench/prefetch_cpu.py [--prefetch-bytes 0,1048576,8388608]
        [--machines cpu] [--size mini] [--ranks 2] [--steps 150]
        [--repeats 3] [--lock /tmp/zero-build.lock] [--markdown]
"""

import argparse
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARENA = re.compile(r"plan, arena per rank: ([0-9.]+ \w+), ([0-9.]+) x")
DONE = re.compile(r"done: (\d+) steps in ([0-9.]+) s .*loss (\S+) -> (\S+) \(")
UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def parse_bytes(text):
    number, unit = text.split()
    return float(number) * UNITS[unit]


def show_bytes(count):
    for unit in ("GiB", "MiB", "KiB"):
        if count and count % UNITS[unit] == 0:
            return f"{count // UNITS[unit]} {unit}"
    return str(count)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prefetch-bytes", default="0,1048576,8388608",
                        help="comma-separated byte counts, one configuration each")
    parser.add_argument("--machines", default="",
                        help="comma-separated gpt2_train --machine presets or files, "
                             "one configuration each (none by default)")
    parser.add_argument("--size", default="mini")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gpt2-train",
                        default=os.path.join(ROOT, "build", "bin", "gpt2_train"))
    parser.add_argument("--markdown", action="store_true")
    benchlib.add_run_arguments(parser)
    args = parser.parse_args()

    configs = [(show_bytes(int(p)), ["--prefetch-bytes", str(int(p))])
               for p in args.prefetch_bytes.split(",") if p]
    configs += [(f"0, machine {m}", ["--machine", m])
                for m in args.machines.split(",") if m]
    if not configs:
        sys.exit("error: no configuration (--prefetch-bytes, --machines)")
    policy = benchlib.Interference(args.noise_threshold, args.max_reruns)
    seconds = {label: [] for label, _ in configs}
    others = {label: [] for label, _ in configs}
    plans, losses = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        with benchlib.build_lock(args.lock):
            gpt2_train, digest = benchlib.snapshot(args.gpt2_train, tmp)
        for rep in range(args.repeats):
            shift = rep % len(configs)
            with benchlib.build_lock(args.lock):
                for label, extra in configs[shift:] + configs[:shift]:
                    cmd = [gpt2_train, "--size", args.size, "-n", str(args.ranks),
                           "--stage", "3", "--steps", str(args.steps),
                           "--deterministic", *extra]
                    result, share = benchlib.run_quiet(cmd, policy)
                    arena, done = ARENA.search(result.stdout), DONE.search(result.stdout)
                    if result.returncode != 0 or not arena or not done:
                        sys.exit("error: %s failed (%d) or printed no plan/done line:\n%s%s"
                                 % (" ".join(cmd), result.returncode, result.stdout,
                                    result.stderr))
                    plans[label] = (parse_bytes(arena.group(1)), float(arena.group(2)))
                    seconds[label].append(float(done.group(2)))
                    others[label].append(share)
                    losses.setdefault(label, set()).add(done.group(4))
                    print(f"  {label}: {done.group(2)} s, others took "
                          f"{100 * share:.0f}% of the CPU", file=sys.stderr)

    print(f"machine: {benchlib.machine()}")
    print(f"gpt2_train sha256 {digest}; --size {args.size} -n {args.ranks} --stage 3 "
          f"--steps {args.steps} --deterministic; {args.repeats} alternating runs; "
          f"{policy.reruns} run(s) repeated for interference, "
          f"{policy.kept_noisy} kept noisy")
    rows = []
    for label, _ in configs:
        arena, ratio = plans[label]
        rows.append([label, f"{arena / 2**20:.2f} MiB", f"{ratio:.3f}",
                     ", ".join(f"{s:.2f}" for s in seconds[label]),
                     f"{100 * max(others[label]):.0f}%",
                     " / ".join(sorted(losses[label]))])
    print(benchlib.table(["prefetch-bytes", "arena per rank", "arena / peak transient",
                          f"{args.steps} steps (s), {args.repeats} runs",
                          "others' CPU, most", "final loss"],
                         rows, args.markdown))


if __name__ == "__main__":
    main()
