#!/usr/bin/env python3
"""Tensor parallelism (zero-run --tp, dist-tensor-parallel) against the same
step at tp = 1, test/e2e/tensor-parallel.test.

Each program carries a tensor-parallel plan as `dist.sbp` on its
parameters: the MLP's first linear column-parallel and its second
row-parallel; GPT-2 tiny Megatron-LM's plan (gen_gpt2.py --tp-plan
megatron). Each layout trains deterministically from the same seed on the
same batches as the run with the same data-parallel ranks at tp = 1, which
reads the same plan and ignores it. Checked:

* losses within 1e-6 relative, every step, with the program's own
  optimizer (Adam, AdamW: their moments split with the parameters);
* with SGD in its place, final parameters (gathered whole by
  --save-state) within 1e-6 of the tensor's largest value (at least 1),
  or 2e-5 absolute for a tensor that is itself rounding noise (below
  1e-4: the attention key biases, whose gradient is zero in exact
  arithmetic). A split contraction sums in another association than the
  whole one; SGD keeps that rounding where it is, where Adam turns a
  rounding difference in a near-zero gradient into a difference of up
  to lr in that element's step (20 steps end up to 3e-5 apart there
  while the losses still agree to 1e-6), so parameters are held to
  1e-6 under SGD;
* per rank, measured parameter bytes equal the report's and the plan's
  (each split tensor's 1/tp, the others whole; at stage 3 each of those
  cut over the data-parallel ranks, padded: |W|/(tp*dp));
* ZeRO on top (--stages 1 2 3): each stage trains bitwise as stage 0 of
  the same layout (losses and final parameters), ZeRO's gathers and
  reduce-scatters run over the data-parallel axes only, carrying the
  tensor-parallel shards;
* on each placement axis, the measured traffic of a step equals the
  report's for that axis, to the byte (the tensor-parallel all-reduces on
  the last axis, the data-parallel averages on the others).

  check_tensor_parallel.py --layouts N:TP[:RxS[:SCHEME]] [...]
      [--stages 1 2 3] (--gpt2 SRC_ROOT | --mlp SRC_ROOT)
  (N ranks, TP of them a tensor-parallel group, an RxS data mesh, and
  the mesh scheme of stages 1-3, hybrid or full)
"""

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib  # noqa: E402

PARAM = re.compile(
    r"train\.param @(\S+) param : tensor<([^>]*)>.*?"
    r"(?:\{dist\.sbp = #dist\.sbp<\[(S\((\d+)\)|B)\]>\})?$")

MLP_PLAN = {"fc1.w": "S(1)", "fc1.b": "S(0)", "fc2.w": "S(0)"}


OPTIMIZERS = {
    "mlp": e2e_lib.MLP_ADAM,
    "gpt2-tiny": "train.optimizer @adamw adamw lr 3.0e-04 betas(0.9, 0.95) "
                 "eps 1.0e-08 weight_decay 0.1",
}


def with_sgd(program, label):
    """`program` with its optimizer replaced by SGD (same symbol)."""
    with open(program) as f:
        text = f.read()
    declared = OPTIMIZERS[label]
    if text.count(declared) != 1:
        raise ValueError(f"{program}: no '{declared}' to replace")
    symbol = declared.split()[1]
    path = program.replace(".mlir", "-sgd.mlir")
    with open(path, "w") as f:
        f.write(text.replace(declared,
                             f"train.optimizer {symbol} sgd lr 1.0e-01"))
    return path


def mlp_with_plan(src_root, workdir):
    """examples/mlp.mlir with the MLP's column/row plan on its parameters."""
    with open(os.path.join(src_root, "examples", "mlp.mlir")) as f:
        lines = f.read().split("\n")
    planned = 0
    for index, line in enumerate(lines):
        match = re.match(r"\s*train\.param @(\S+) param", line)
        if match and match.group(1) in MLP_PLAN:
            lines[index] = (line.rstrip() + " {dist.sbp = #dist.sbp<[%s]>}" %
                            MLP_PLAN[match.group(1)])
            planned += 1
    if planned != len(MLP_PLAN):
        raise ValueError("examples/mlp.mlir: %d of %d planned parameters "
                         "found; update MLP_PLAN" % (planned, len(MLP_PLAN)))
    path = os.path.join(workdir, "mlp-tp.mlir")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def gpt2_with_plan(src_root, workdir):
    path = os.path.join(workdir, "gpt2-tiny-tp.mlir")
    subprocess.run([sys.executable,
                    os.path.join(src_root, "examples", "gen_gpt2.py"),
                    "--layers", "2", "--tp-plan", "megatron", "-o", path],
                   check=True)
    return path


def planned_parameter_bytes(program, tp, shards=1):
    """Bytes of parameters one rank holds under the plan: at stage 0
    (`shards` 1), or each tensor-parallel shard cut flat into `shards`
    padded pieces (stage 3)."""
    total = 0
    with open(program) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("train.param") or " param :" not in line:
                continue
            match = PARAM.match(line)
            if not match:
                raise ValueError("cannot read parameter line: " + line)
            shape = match.group(2).split("x")[:-1]
            elements = math.prod(int(x) for x in shape)
            if match.group(4) is not None:
                elements //= tp
            total += 4 * -(-elements // shards)
    return total


def close_states(reference, run):
    problems, worst = [], 0.0
    left = e2e_lib.read_safetensors(reference)
    right = e2e_lib.read_safetensors(run)
    if sorted(left) != sorted(right):
        return [f"names {sorted(left)} vs {sorted(right)}"], worst
    for name in left:
        x, y = left[name].values(), right[name].values()
        scale = max((abs(v) for v in x), default=0.0)
        diff = max((abs(p - q) for p, q in zip(x, y)), default=0.0)
        bound = 2e-5 if scale < 1e-4 else 1e-6 * max(scale, 1.0)
        if diff > bound:
            problems.append(f"{name}: max difference {diff:.3g} of "
                            f"{scale:.3g}")
        elif scale >= 1e-4:
            worst = max(worst, diff / max(scale, 1.0))
    return problems, worst


def check_stage(checker, program, workdir, where, layout, ranks, tp, shards,
                extra, stage, steps, stage0, stage0_state):
    """ZeRO stage `stage` on the layout: as its stage 0, bitwise; memory
    and per-axis traffic as the report says."""
    where = f"{where} stage {stage}"
    run, state = e2e_lib.train(program, workdir, f"tp{layout}-{stage}", ranks,
                               stage, steps, extra=extra)
    same = (run["losses"] == stage0["losses"] and
            open(state, "rb").read() == open(stage0_state, "rb").read())
    checker.check(same, f"{where}: losses {run['losses'][-1]} and state "
                        f"differ from stage 0's {stage0['losses'][-1]}")
    planned = planned_parameter_bytes(program, tp, shards if stage == 3 else 1)
    for measured in run["measured"]:
        checker.check(
            measured["parameters"] == run["report"]["parameters"] == planned
            and measured["slots"] == run["report"]["slots"],
            f"{where}: rank {measured['rank']} holds {measured['parameters']} "
            f"B of parameters and {measured['slots']} B of slots, the report "
            f"{run['report']['parameters']} B and {run['report']['slots']} B, "
            f"the plan {planned} B of parameters")
    axes, seen = run["report"]["axes"], run["measured_axes"]
    for axis, (plan, got) in enumerate(zip(axes, seen)):
        checker.check(plan["traffic"] == got["traffic_per_step"],
                      f"{where}: axis {axis} measured "
                      f"{got['traffic_per_step']}, planned {plan['traffic']}")
    tensor_axis = seen[-1]["traffic_per_step"]
    checker.check(set(tensor_axis) == {"all_reduce"},
                  f"{where}: ZeRO's collectives on the tensor-parallel axis: "
                  f"{sorted(tensor_axis)}")
    zero_kinds = set().union(*(a["traffic_per_step"] for a in seen[:-1]))
    checker.check({"reduce_scatter", "all_gather"} <= zero_kinds,
                  f"{where}: the data-parallel axes carry {sorted(zero_kinds)}")
    checker.note(f"{where}: bitwise as stage 0; {planned} B of parameters a "
                 f"rank as planned; per-axis traffic as planned")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mlp", metavar="SRC_ROOT")
    parser.add_argument("--gpt2", metavar="SRC_ROOT")
    parser.add_argument("--layouts", nargs="+", required=True,
                        help="N:TP, N:TP:RxS or N:TP:RxS:SCHEME")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--stages", nargs="+", type=int, default=[],
                        help="ZeRO stages (1-3) to run on each layout besides 0")
    args = parser.parse_args()
    checker = e2e_lib.Checker("check_tensor_parallel")
    with tempfile.TemporaryDirectory() as workdir:
        if args.mlp:
            program, label = mlp_with_plan(args.mlp, workdir), "mlp"
        else:
            program, label = gpt2_with_plan(args.gpt2, workdir), "gpt2-tiny"
        sgd = with_sgd(program, label)
        references = {}
        for layout in args.layouts:
            parts = layout.split(":")
            ranks, tp = int(parts[0]), int(parts[1])
            mesh = parts[2] if len(parts) > 2 else None
            scheme = parts[3] if len(parts) > 3 else "hybrid"
            data = ranks // tp
            where = f"{label} -n {ranks} --tp {tp}" + (
                f" --mesh {mesh}" if mesh else "")
            if data not in references:
                references[data] = (
                    e2e_lib.train(program, workdir, f"ref{data}", data, 0,
                                  args.steps),
                    e2e_lib.train(sgd, workdir, f"ref{data}-sgd", data, 0,
                                  args.steps))
            (reference, _), (sgd_reference, sgd_reference_state) = \
                references[data]
            extra = ["--tp", tp] + (["--mesh", mesh] if mesh else [])
            # Stages 1-3 cut the state over the node's ranks (hybrid) or
            # over every data-parallel rank (full).
            shards = data
            if mesh and scheme == "hybrid":
                shards = int(mesh.split("x")[1])
            if scheme != "hybrid":
                extra += ["--mesh-scheme", scheme]
                where += f" --mesh-scheme {scheme}"
            run, state = e2e_lib.train(program, workdir, f"tp{layout}", ranks,
                                       0, args.steps, extra=extra)
            sgd_run, sgd_state = e2e_lib.train(sgd, workdir,
                                               f"tp{layout}-sgd", ranks, 0,
                                               args.steps, extra=extra)
            grid = ([int(x) for x in mesh.split("x")] if mesh else [data])
            checker.check(run["grid"] == grid + [tp],
                          f"{where}: ran on grid {run['grid']}")
            for kind, ref, got in (("", reference, run),
                                   (" (SGD)", sgd_reference, sgd_run)):
                for step, (x, y) in enumerate(
                        zip(ref["losses"], got["losses"]), 1):
                    checker.check(math.isclose(x, y, rel_tol=1e-6),
                                  f"{where}{kind}: step {step} loss {y} vs "
                                  f"{x} at tp=1")
                checker.check(len(got["losses"]) == args.steps,
                              f"{where}{kind}: {len(got['losses'])} losses")
            problems, worst = close_states(sgd_reference_state, sgd_state)
            checker.check(not problems,
                          f"{where} (SGD): final parameters differ: "
                          f"{problems[:3]}")
            planned = planned_parameter_bytes(program, tp)
            for measured in run["measured"]:
                checker.check(
                    measured["parameters"] == run["report"]["parameters"] ==
                    planned,
                    f"{where}: rank {measured['rank']} holds "
                    f"{measured['parameters']} B of parameters, the report "
                    f"{run['report']['parameters']} B, the plan {planned} B")
            axes = run["report"].get("axes", [])
            seen = run.get("measured_axes", [])
            checker.check(len(axes) == len(seen) == len(grid) + 1,
                          f"{where}: {len(axes)} planned and {len(seen)} "
                          f"measured axes")
            tp_traffic = None
            for axis, (plan, got) in enumerate(zip(axes, seen)):
                checker.check(plan["traffic"] == got["traffic_per_step"],
                              f"{where}: axis {axis} measured "
                              f"{got['traffic_per_step']}, planned "
                              f"{plan['traffic']}")
                tp_traffic = got["traffic_per_step"]
            collectives = sum(kind["count"] for kind in (tp_traffic or {}).values())
            checker.check(collectives > 0,
                          f"{where}: no collective on the tensor-parallel "
                          f"axis")
            for stage in args.stages:
                check_stage(checker, program, workdir, where, layout, ranks,
                            tp, shards, extra, stage, args.steps, run, state)
            checker.note(f"{where}: {args.steps} losses within 1e-6 of tp=1, "
                         f"parameters (SGD) within 1e-6; "
                         f"{planned} B of parameters a rank as planned; "
                         f"per-axis traffic as planned ({collectives} "
                         f"tensor-parallel collectives a step)")
    checker.finish()


if __name__ == "__main__":
    main()
