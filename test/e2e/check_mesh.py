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

  check_mesh.py PROGRAM RxS [RxS ...]
"""

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


def main():
    program, grids = sys.argv[1], sys.argv[2:]
    checker = e2e_lib.Checker("check_mesh")
    steps = 4
    with tempfile.TemporaryDirectory() as workdir:
        for grid in grids:
            nodes, per_node = (int(x) for x in grid.split("x"))
            ranks = nodes * per_node
            where = f"{os.path.basename(program)} mesh {grid}"
            flat, flat_state = e2e_lib.train(program, workdir, f"flat{ranks}",
                                             ranks, 0, steps)
            mesh, mesh_state = e2e_lib.train(program, workdir, f"mesh{grid}",
                                             ranks, 0, steps,
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
    checker.finish()


if __name__ == "__main__":
    main()
