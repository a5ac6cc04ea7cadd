#!/usr/bin/env python3
"""Plain data parallelism on a two-level mesh (zero-run --mesh RxS,
dist-data-parallel{mesh=R,S}) against the same step on one axis of R*S
ranks, test/e2e/mesh.test.

For each program and grid, both runs train deterministically from the same
seed on the same synthetic batches (the batch is split over the mesh in rank
order, so every rank sees the rows it sees on one axis). Averaging within a
node and then across nodes sums the ranks' gradients in another association
than one all-reduce over all of them, so the two agree to rounding, not bit
for bit in general: losses within 1e-6 relative, final parameters within
1e-5 of the tensor's largest value, or 1e-5 absolute for a tensor that is
itself rounding noise (attention key biases, whose gradient is zero in exact
arithmetic) (documented in docs/runtime.md). On each axis the measured traffic of a
step (the axis's communicator's counters) equals the compiler's report for
that axis: count, bytes and bytes sent per rank, exactly.

Stages 1-3 on a mesh run each scheme of --schemes: hybrid (the state
sharded within a node and replicated across nodes), full (sharded over all
ranks, gathered across nodes first) and hpz (full, stage 3, later gathers
from the secondary shard within the node). hpz must equal full bit for bit:
the same values are gathered, only from elsewhere. With --resume, a
checkpoint taken on the mesh resumes on the mesh bitwise (the same losses
as the run that was not interrupted), and resumes on one axis (and a
one-axis checkpoint on the mesh) to the same tolerance (on the first grid
given, for each scheme).

  check_mesh.py PROGRAM --stages 0 1 2 3 --grids RxS [RxS ...]
                [--schemes hybrid full hpz] [--resume]
"""

import argparse

import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib  # noqa: E402


def close_states(a, b, tolerance):
    """The names whose values differ by more than `tolerance` relative."""
    left, right = e2e_lib.read_safetensors(a), e2e_lib.read_safetensors(b)
    problems = []
    if sorted(left) != sorted(right):
        return [f"names {sorted(left)} vs {sorted(right)}"]
    for name in left:
        x, y = left[name].values(), right[name].values()
        scale = max(max((abs(v) for v in x), default=0.0), 1.0)
        worst = max((abs(p - q) for p, q in zip(x, y)), default=0.0)
        if worst > tolerance * scale:
            problems.append(f"{name}: max difference {worst:.3g} of "
                            f"{scale:.3g}")
    return problems


SCHEME_FLAGS = {
    "hybrid": [],
    "full": ["--mesh-scheme", "full"],
    "hpz": ["--mesh-scheme", "full", "--hpz"],
}


def check_resume(checker, program, grid, scheme, workdir, flat_runs):
    """Checkpoints at step 2 of 4 on the mesh and on one axis, resumed on
    both. The one-axis runs are the same for every scheme: `flat_runs`
    keeps them by their tag, so each is trained once."""
    nodes, per_node = (int(x) for x in grid.split("x"))
    ranks = nodes * per_node
    where = f"{os.path.basename(program)} mesh {grid} {scheme} resume"
    plans = {"mesh": ["--mesh", grid] + SCHEME_FLAGS[scheme], "flat": []}

    def train(tag, name, extra):
        if name == "flat" and tag in flat_runs:
            return flat_runs[tag]
        metrics, _ = e2e_lib.train(program, workdir, tag, ranks, 3, 4,
                                   extra=extra)
        if name == "flat":
            flat_runs[tag] = metrics
        return metrics

    def label(name):
        return "flat" if name == "flat" else f"{scheme}-{name}"

    full = {}
    for name, flags in plans.items():
        root = os.path.join(workdir, f"ckpt-{label(name)}")
        full[name] = train(
            f"full-{label(name)}", name,
            flags + ["--checkpoint-dir", root, "--checkpoint-every", 2])
    for source in plans:
        for target, flags in plans.items():
            resumed = train(
                f"resumed-{label(source)}-{label(target)}",
                "flat" if source == target == "flat" else "mesh",
                flags + ["--resume", os.path.join(
                    workdir, f"ckpt-{label(source)}", "step-00000002")])
            expected = full[target]["losses"][2:]
            got = resumed["losses"]
            if source == target:
                checker.check(got == expected,
                              f"{where}: {source} -> {target}: losses {got} "
                              f"!= uninterrupted {expected}")
            else:
                checker.check(
                    len(got) == len(expected) and all(
                        math.isclose(x, y, rel_tol=1e-6)
                        for x, y in zip(got, expected)),
                    f"{where}: {source} -> {target}: losses {got} vs "
                    f"{expected}")
    checker.note(f"{where}: stage 3 checkpoints resume on the mesh bitwise "
                 f"and between the mesh and one axis of {ranks}")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("program")
    parser.add_argument("--stages", nargs="+", type=int, default=[0])
    parser.add_argument("--grids", nargs="+", required=True)
    parser.add_argument("--schemes", nargs="+", choices=list(SCHEME_FLAGS),
                        default=["hybrid"])
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    program = args.program
    checker = e2e_lib.Checker("check_mesh")
    steps = 4
    with tempfile.TemporaryDirectory() as workdir:
        runs = [(g, s, scheme) for g in args.grids for s in args.stages
                for scheme in (args.schemes if s > 0 else ["hybrid"])
                if scheme != "hpz" or s == 3]
        finals = {}
        # One axis of R*S ranks is the reference of every scheme and of every
        # grid of that many ranks (2x4 and 4x2): trained once.
        flats = {}
        for grid, stage, scheme in runs:
            nodes, per_node = (int(x) for x in grid.split("x"))
            ranks = nodes * per_node
            where = (f"{os.path.basename(program)} mesh {grid} stage "
                     f"{stage}" + (f" {scheme}" if stage > 0 else ""))
            if (ranks, stage) not in flats:
                flats[ranks, stage] = e2e_lib.train(
                    program, workdir, f"flat{ranks}-{stage}", ranks, stage,
                    steps)
            flat, flat_state = flats[ranks, stage]
            mesh, mesh_state = e2e_lib.train(
                program, workdir, f"mesh{grid}-{stage}-{scheme}", ranks,
                stage, steps, extra=["--mesh", grid] + SCHEME_FLAGS[scheme])
            finals[(grid, stage, scheme)] = (mesh["losses"], mesh_state)
            checker.check(mesh["grid"] == [nodes, per_node],
                          f"{where}: ran on grid {mesh['grid']}")
            for step, (x, y) in enumerate(zip(flat["losses"],
                                              mesh["losses"]), 1):
                checker.check(math.isclose(x, y, rel_tol=1e-6),
                              f"{where}: step {step} loss {y} vs {x} on one "
                              f"axis of {ranks}")
            problems = close_states(flat_state, mesh_state, 1e-5)
            checker.check(not problems,
                          f"{where}: final parameters differ: {problems[:3]}")
            planned = mesh["report"].get("axes", [])
            measured = mesh.get("measured_axes", [])
            checker.check(len(planned) == 2 and len(measured) == 2,
                          f"{where}: {len(planned)} planned and "
                          f"{len(measured)} measured axes")
            for axis, (plan, seen) in enumerate(zip(planned, measured)):
                checker.check(plan["ranks"] == seen["ranks"] ==
                              [nodes, per_node][axis],
                              f"{where}: axis {axis} ranks {plan['ranks']} "
                              f"vs {seen['ranks']}")
                checker.check(plan["traffic"] == seen["traffic_per_step"],
                              f"{where}: axis {axis} measured "
                              f"{seen['traffic_per_step']}, planned "
                              f"{plan['traffic']}")
            total = sum(kind["sent_bytes_per_rank"]
                        for axis in measured
                        for kind in axis["traffic_per_step"].values())
            checker.note(f"{where}: {steps} losses within 1e-6 of one axis "
                         f"of {ranks}; per-axis traffic as planned "
                         f"({total:.0f} B sent per rank per step)")
        for (grid, stage, scheme), (losses, state) in finals.items():
            if scheme != "hpz":
                continue
            off_losses, off_state = finals.get((grid, stage, "full"),
                                               (None, None))
            if off_state is None:
                continue
            same = (losses == off_losses and
                    open(state, "rb").read() == open(off_state, "rb").read())
            checker.check(same, f"mesh {grid} stage 3: hpz losses {losses} "
                          f"and state differ from full's {off_losses}")
            checker.note(f"{os.path.basename(program)} mesh {grid} stage 3: "
                         f"hpz equals full bitwise (losses and state)")
        if args.resume:
            flat_runs = {}
            for scheme in args.schemes:
                check_resume(checker, program, args.grids[0], scheme,
                             workdir, flat_runs)
    checker.finish()


if __name__ == "__main__":
    main()
