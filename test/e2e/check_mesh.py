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

Stages 1-3 on a mesh are hybrid sharding: the state is sharded within a
node and replicated across nodes. With --resume, a checkpoint taken on the
mesh resumes on the mesh bitwise (the same losses as the run that was not
interrupted), and resumes on one axis (and a one-axis checkpoint on the
mesh) to the same tolerance (on the first grid given).

  check_mesh.py PROGRAM --stages 0 1 2 3 --grids RxS [RxS ...] [--resume]
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


def check_resume(checker, program, grid, workdir):
    """Checkpoints at step 2 of 4 on the mesh and on one axis, resumed on
    both."""
    nodes, per_node = (int(x) for x in grid.split("x"))
    ranks = nodes * per_node
    where = f"{os.path.basename(program)} mesh {grid} resume"
    plans = {"mesh": ["--mesh", grid], "flat": []}
    full = {}
    for name, flags in plans.items():
        root = os.path.join(workdir, f"ckpt-{name}")
        full[name], _ = e2e_lib.train(
            program, workdir, f"full-{name}", ranks, 3, 4,
            extra=flags + ["--checkpoint-dir", root, "--checkpoint-every",
                           2])
    for source in plans:
        for target, flags in plans.items():
            resumed, _ = e2e_lib.train(
                program, workdir, f"resumed-{source}-{target}", ranks, 3, 4,
                extra=flags + ["--resume", os.path.join(
                    workdir, f"ckpt-{source}", "step-00000002")])
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
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    program = args.program
    checker = e2e_lib.Checker("check_mesh")
    steps = 4
    with tempfile.TemporaryDirectory() as workdir:
        for grid, stage in [(g, s) for g in args.grids for s in args.stages]:
            nodes, per_node = (int(x) for x in grid.split("x"))
            ranks = nodes * per_node
            where = (f"{os.path.basename(program)} mesh {grid} stage "
                     f"{stage}")
            flat, flat_state = e2e_lib.train(program, workdir,
                                             f"flat{ranks}-{stage}", ranks,
                                             stage, steps)
            mesh, mesh_state = e2e_lib.train(program, workdir,
                                             f"mesh{grid}-{stage}", ranks,
                                             stage, steps,
                                             extra=["--mesh", grid])
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
        if args.resume:
            check_resume(checker, program, args.grids[0], workdir)
    checker.finish()


if __name__ == "__main__":
    main()
