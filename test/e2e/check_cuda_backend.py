#!/usr/bin/env python3
"""The CUDA backends against the CPU backend, on a GPU.

For each model (by default the f32 MLP, the f32 GPT-2 of the matrix tests
and that GPT-2 in bf16 with a frozen embedding; gpt2-tiny and gpt2-mini,
the shapes of gpt2_train's --size tiny and mini, on request), the parts
that --parts names (default all):

1. n1: --backend cuda on one rank, stages 0-3: every step's loss within
   the model's tolerance (relative) of the CPU backend's, and the measured
   state and traffic equal to the compile-time report (as on CPU).
2. graph: --backend cuda --cuda-graph, stage 3: the losses and the final
   state are bitwise equal to the eager CUDA run (the graph replays the
   same kernels in the same order), and the graph's traffic is counted
   every step.
3. host-staged: --backend cuda-host-staged on two ranks sharing one GPU,
   stages 0-3, --deterministic: losses within the tolerance of the CPU
   backend on two ranks, stages 0-3 bitwise equal to each other
   (host-staged collectives are the MPI communicator's rank-order
   reductions), measured state equal to the report.
4. nccl: with two or more GPUs, --backend cuda on two ranks, stages 0-3,
   against the CPU backend on two ranks (said and passed over on one GPU).
5. mesh: --backend cuda-host-staged on four ranks sharing one GPU, placed
   on a 2x2 mesh at stage 3 (--deterministic): hybrid sharding, and full
   2-D sharding with all of ZeRO++ (hpZ, int8 qwZ, int4 qgZ, so the
   quantizer's CUDA kernels run), each against the CPU backend on the same
   mesh: losses within the model's tolerance (hybrid) or 5e-3 relative (a
   code a rounding moves moves by a whole step of its scale), and every
   axis's measured traffic equal to the report's, to the byte.
6. offload: --backend cuda, one rank, stage 3: --offload optimizer and
   optimizer+params within the tolerance of the CPU backend (the update
   runs on the host, as a CPU kernel after the transfers), the pinned host
   pool and the device pool as the memory plan says; and with --cuda-graph
   the same losses and state bitwise as the eager offloaded run.

Every difference is printed; the exit status is 1 when any check failed.
scripts/gpu-check.sh runs the parts one at a time, each under its own
deadline, on gpt2-tiny and gpt2-mini.

  check_cuda_backend.py --src-root . --workdir /tmp/cuda [--models mlp]
                        [--parts n1,graph] [--steps 8]
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib as lib  # noqa: E402
from check_offload import check_pools  # noqa: E402
from run_matrix import check_measured  # noqa: E402

# gpt2-tiny and gpt2-mini, the "GPT-2 tiny and mini" of the GPU check
# (scripts/gpu-check.sh): the shapes of gpt2_train's --size tiny (2 layers,
# width 32, sequence 16) and mini (4 layers, width 64, sequence 64), byte
# vocabulary, f32, as gen_gpt2.py writes them for zero-run. gpt2_train's
# shapes rather than examples/gpt2-tiny.mlir (width 64; no mini exists as a
# file) because the GPU check's benchmark part trains those sizes with
# gpt2_train; zero-run rather than gpt2_train because only zero-run gives
# the strict checks here (per-step losses against a --deterministic CPU run,
# --metrics-json's measured state and traffic against the report). Local
# batch 4: at N = 2 the global batch is gpt2_train's default, 8.
GPT2_SIZES = {
    "gpt2-tiny": ["--layers", "2", "--dim", "32", "--heads", "4",
                  "--vocab", "256", "--seq", "16"],
    "gpt2-mini": ["--layers", "4", "--dim", "64", "--heads", "4",
                  "--vocab", "256", "--seq", "64"],
}


def sized_gpt2(name):
    def make(src_root, batch, workdir):
        path = os.path.join(workdir, f"{name}-b{batch}.mlir")
        subprocess.run(
            [sys.executable, os.path.join(src_root, "examples", "gen_gpt2.py")]
            + GPT2_SIZES[name] + ["--batch", str(batch), "-o", path],
            check=True)
        return path
    return make


# Per-step loss tolerance against the CPU backend: cuBLAS and the CUDA
# reductions sum in another order than the CPU kernels; bf16 rounds that
# difference to 8 bits. The models this checks are these.
RTOL = {"mlp": 1e-4, "gpt2": 1e-4, "gpt2-bf16": 2e-2, "gpt2-tiny": 1e-4,
        "gpt2-mini": 1e-4}
MODELS = {name: lib.MODELS[name] for name in ("mlp", "gpt2", "gpt2-bf16")}
for _name in GPT2_SIZES:
    MODELS[_name] = (sized_gpt2(_name), 4)

PARTS = ["n1", "graph", "host-staged", "nccl", "mesh", "offload"]
# The flags that put a run on host-staged collectives (a test of this
# script without a GPU swaps them for the CPU backend's).
HOST_STAGED = ["--backend", "cuda-host-staged"]
# Schemes of the mesh part: (name, zero-run flags, relative tolerance or
# None for the model's).
MESH_SCHEMES = [
    ("hybrid", ["--mesh", "2x2", "--mesh-scheme", "hybrid"], None),
    ("zeropp-int4", ["--mesh", "2x2", "--mesh-scheme", "full", "--hpz",
                     "--qwz", "--qgz", "--qgz-bits", "4"], 5e-3),
]


def gpu_count():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                             text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def run(program, workdir, tag, ranks, stage, steps, extra=()):
    metrics = os.path.join(workdir, f"{tag}.json")
    state = os.path.join(workdir, f"{tag}.safetensors")
    args = ["-n", ranks, "--stage", stage, "--steps", steps, "--quiet",
            "--metrics-json", metrics, "--save-state", state,
            "--timeout", 120] + list(extra)
    lib.zero_run(program, args, timeout=600)
    with open(metrics) as f:
        return json.load(f), state


def compare_losses(checker, where, got, want, rtol):
    for step, (a, b) in enumerate(zip(got, want), 1):
        error = abs(a - b) / max(abs(b), 1e-30)
        checker.check(error <= rtol,
                      f"{where}: step {step} loss {a!r} vs CPU {b!r} "
                      f"(relative {error:.3g} > {rtol})")
    checker.check(len(got) == len(want),
                  f"{where}: {len(got)} losses vs {len(want)}")


def check_n1(checker, model, program, workdir, steps, rtol, cpu):
    for stage in range(4):
        tag = f"cuda-n1-s{stage}"
        try:
            metrics, _ = run(program, workdir, tag, 1, stage, steps,
                             ["--backend", "cuda"])
        except lib.RunError as error:
            checker.check(False, f"{model} {tag}: zero-run failed: {error}")
            continue
        compare_losses(checker, f"{model} {tag}", metrics["losses"],
                       cpu["losses"], rtol)
        check_measured(checker, f"{model} {tag}", metrics, 1)
        checker.check(metrics.get("backend") == "cuda",
                      f"{model} {tag}: backend {metrics.get('backend')!r}")
        checker.note(f"{model} {tag}: losses {metrics['losses'][0]:.6f} -> "
                     f"{metrics['losses'][-1]:.6f}, "
                     f"{metrics['samples_per_second']:.1f} samples/s")


def check_graph(checker, model, program, workdir, steps):
    try:
        eager, eager_state = run(program, workdir, "cuda-eager", 1, 3, steps,
                                 ["--backend", "cuda"])
        graph, graph_state = run(program, workdir, "cuda-graph", 1, 3, steps,
                                 ["--backend", "cuda", "--cuda-graph"])
    except lib.RunError as error:
        checker.check(False, f"{model} cuda-graph: zero-run failed: {error}")
        return
    checker.check(graph["losses"] == eager["losses"],
                  f"{model}: CUDA-graph losses {graph['losses']} differ "
                  f"from eager {eager['losses']}")
    differences = lib.bitwise_diff_states(graph_state, eager_state)
    checker.check(not differences,
                  f"{model}: CUDA-graph state differs: {differences}")
    check_measured(checker, f"{model} cuda-graph", graph, 1)
    checker.note(f"{model} cuda-graph: {graph['samples_per_second']:.1f} "
                 f"samples/s, eager {eager['samples_per_second']:.1f}")


def check_offload(checker, model, program, workdir, steps, rtol, cpu):
    for mode in ("optimizer", "optimizer+params"):
        tag = f"cuda-offload-{mode.replace('+', '-')}"
        offload = ["--backend", "cuda", "--offload", mode]
        try:
            eager, eager_state = run(program, workdir, tag, 1, 3, steps,
                                     offload)
            graph, graph_state = run(program, workdir, tag + "-graph", 1, 3,
                                     steps, offload + ["--cuda-graph"])
        except lib.RunError as error:
            checker.check(False, f"{model} {tag}: zero-run failed: {error}")
            continue
        compare_losses(checker, f"{model} {tag}", eager["losses"],
                       cpu["losses"], rtol)
        check_measured(checker, f"{model} {tag}", eager, 1)
        check_pools(checker, f"{model} {tag}", eager, mode)
        checker.check(graph["losses"] == eager["losses"] and
                      not lib.bitwise_diff_states(graph_state, eager_state),
                      f"{model} {tag}: the CUDA graph differs from eager")


def check_two_ranks(checker, model, program, workdir, steps, rtol, modes):
    """Each (name, zero-run flags) of `modes` on two ranks, stages 0-3,
    against the CPU backend on two ranks."""
    ranks = 2
    cpu2, _ = run(program, workdir, "cpu-n2", ranks, 0, steps,
                  ["--deterministic"])
    for name, extra in modes:
        staged = []
        for stage in range(4):
            tag = f"{name}-n{ranks}-s{stage}"
            try:
                metrics, _ = run(program, workdir, tag, ranks, stage, steps,
                                 extra)
            except lib.RunError as error:
                checker.check(False, f"{model} {tag}: zero-run failed: {error}")
                continue
            compare_losses(checker, f"{model} {tag}", metrics["losses"],
                           cpu2["losses"], rtol)
            check_measured(checker, f"{model} {tag}", metrics, ranks)
            staged.append(metrics["losses"])
        if name == "cuda-host-staged":
            # A stage that failed failed above; the others must still agree.
            checker.check(all(losses == staged[0] for losses in staged),
                          f"{model} {name}: stages 0-3 are not bitwise equal")


def check_mesh(checker, model, program, workdir, steps, rtol):
    ranks = 4
    for name, flags, tolerance in MESH_SCHEMES:
        tag = f"mesh-{name}"
        try:
            cpu, _ = run(program, workdir, f"cpu-{tag}", ranks, 3, steps,
                         flags + ["--deterministic"])
            staged, _ = run(program, workdir, f"staged-{tag}", ranks, 3,
                            steps, flags + HOST_STAGED + ["--deterministic"])
        except lib.RunError as error:
            checker.check(False, f"{model} {tag}: zero-run failed: {error}")
            continue
        compare_losses(checker, f"{model} {tag}", staged["losses"],
                       cpu["losses"], tolerance or rtol)
        axes = staged.get("measured_axes", [])
        checker.check(len(axes) == 2, f"{model} {tag}: {len(axes)} measured "
                      "axes, the 2x2 mesh has 2")
        for axis, (plan, seen) in enumerate(zip(staged["report"]["axes"],
                                                axes)):
            checker.check(plan["traffic"] == seen["traffic_per_step"],
                          f"{model} {tag}: axis {axis} measured "
                          f"{seen['traffic_per_step']}, planned "
                          f"{plan['traffic']}")
        checker.note(f"{model} {tag}: losses {staged['losses'][0]:.6f} -> "
                     f"{staged['losses'][-1]:.6f} (CPU "
                     f"{cpu['losses'][-1]:.6f})")


def check_model(checker, model, args, gpus):
    make, local = MODELS[model]
    workdir = os.path.join(args.workdir, model)
    os.makedirs(workdir, exist_ok=True)
    rtol = RTOL[model]
    steps = args.steps
    parts = args.parts
    program = make(args.src_root, local, workdir)

    cpu = None
    if "n1" in parts or "offload" in parts:
        cpu, _ = run(program, workdir, "cpu-n1", 1, 0, steps,
                     ["--deterministic"])
    if "n1" in parts:
        check_n1(checker, model, program, workdir, steps, rtol, cpu)
    if "graph" in parts:
        check_graph(checker, model, program, workdir, steps)
    if "offload" in parts:
        check_offload(checker, model, program, workdir, steps, rtol, cpu)
    if "mesh" in parts:
        check_mesh(checker, model, program, workdir, steps, rtol)

    modes = []
    if "host-staged" in parts:
        modes.append(("cuda-host-staged", HOST_STAGED + ["--deterministic"]))
    if "nccl" in parts:
        if gpus >= 2:
            modes.append(("cuda", ["--backend", "cuda"]))
        else:
            checker.note(f"{model} cuda-n2: not run, {gpus} GPU here and "
                         "NCCL on 2 ranks needs 2")
    if modes:
        check_two_ranks(checker, model, program, workdir, steps, rtol, modes)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src-root", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--models", default="mlp,gpt2,gpt2-bf16",
                        help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    models = args.models.split(",")
    args.parts = args.parts.split(",")
    for value, known, flag in ((models, MODELS, "--models"),
                               (args.parts, PARTS, "--parts")):
        unknown = [v for v in value if v not in known]
        if unknown or not value:
            parser.error(f"{flag}: unknown {', '.join(unknown)!r} (known: "
                         f"{', '.join(known)})")
    gpus = gpu_count()
    checker = lib.Checker("check_cuda_backend")
    if gpus == 0:
        print("check_cuda_backend: no GPU (nvidia-smi -L lists none)")
        return 1
    for model in models:
        check_model(checker, model, args, gpus)
    return checker.finish()


if __name__ == "__main__":
    sys.exit(main())
