#!/usr/bin/env python3
"""The CUDA backends against the CPU backend, on a GPU.

For each model (the f32 MLP, the f32 GPT-2 of the matrix tests, and that
GPT-2 in bf16 with a frozen embedding):

1. --backend cuda on one rank, stages 0-3: every step's loss within --rtol
   (relative) of the CPU backend's, and the measured state and traffic equal
   to the compile-time report (as on CPU).
2. --backend cuda --cuda-graph, stage 3: the losses and the final state are
   bitwise equal to the eager CUDA run (the graph replays the same kernels
   in the same order), and the graph's traffic is counted every step.
3. --backend cuda-host-staged on two ranks sharing one GPU, stages 0-3,
   --deterministic: losses within --rtol of the CPU backend on two ranks,
   stages 0-3 bitwise equal to each other (host-staged collectives are the
   MPI communicator's rank-order reductions), measured state equal to the
   report.
4. With two or more GPUs, --backend cuda on two ranks, stages 0-3, against
   the CPU backend on two ranks.
5. Offload (--backend cuda, one rank, stage 3): --offload optimizer and
   optimizer+params within --rtol of the CPU backend (the update runs on
   the host, as a CPU kernel after the transfers), the pinned host pool and
   the device pool as the memory plan says; and with --cuda-graph the same
   losses and state bitwise as the eager offloaded run.

Every difference is printed; the exit status is 1 when any check failed.

  check_cuda_backend.py --src-root . --workdir /tmp/cuda [--models mlp]
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

# Per-step loss tolerance against the CPU backend: cuBLAS and the CUDA
# reductions sum in another order than the CPU kernels; bf16 rounds that
# difference to 8 bits.
RTOL = {"mlp": 1e-4, "gpt2": 1e-4, "gpt2-bf16": 2e-2}


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


def check_model(checker, model, args, gpus):
    make, local = lib.MODELS[model]
    workdir = os.path.join(args.workdir, model)
    os.makedirs(workdir, exist_ok=True)
    rtol = RTOL[model]
    steps = args.steps
    program = make(args.src_root, local, workdir)

    cpu, _ = run(program, workdir, "cpu-n1", 1, 0, steps, ["--deterministic"])
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

    try:
        eager, eager_state = run(program, workdir, "cuda-eager", 1, 3, steps,
                                 ["--backend", "cuda"])
        graph, graph_state = run(program, workdir, "cuda-graph", 1, 3, steps,
                                 ["--backend", "cuda", "--cuda-graph"])
        checker.check(graph["losses"] == eager["losses"],
                      f"{model}: CUDA-graph losses {graph['losses']} differ "
                      f"from eager {eager['losses']}")
        differences = lib.bitwise_diff_states(graph_state, eager_state)
        checker.check(not differences,
                      f"{model}: CUDA-graph state differs: {differences}")
        check_measured(checker, f"{model} cuda-graph", graph, 1)
    except lib.RunError as error:
        checker.check(False, f"{model} cuda-graph: zero-run failed: {error}")

    for mode in ("optimizer", "optimizer+params"):
        tag = f"cuda-offload-{mode.replace('+', '-')}"
        try:
            eager, eager_state = run(program, workdir, tag, 1, 3, steps,
                                     ["--backend", "cuda", "--offload", mode])
            graph, graph_state = run(program, workdir, tag + "-graph", 1, 3,
                                     steps, ["--backend", "cuda", "--cuda-graph",
                                             "--offload", mode])
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

    ranks = 2
    program_n = make(args.src_root, local, workdir)
    cpu2, _ = run(program_n, workdir, "cpu-n2", ranks, 0, steps,
                  ["--deterministic"])
    modes = [("cuda-host-staged", ["--backend", "cuda-host-staged",
                                   "--deterministic"])]
    if gpus >= ranks:
        modes.append(("cuda", ["--backend", "cuda"]))
    for name, extra in modes:
        staged = []
        for stage in range(4):
            tag = f"{name}-n{ranks}-s{stage}"
            try:
                metrics, _ = run(program_n, workdir, tag, ranks, stage, steps,
                                 extra)
            except lib.RunError as error:
                checker.check(False, f"{model} {tag}: zero-run failed: {error}")
                continue
            compare_losses(checker, f"{model} {tag}", metrics["losses"],
                           cpu2["losses"], rtol)
            check_measured(checker, f"{model} {tag}", metrics, ranks)
            staged.append(metrics["losses"])
        if name == "cuda-host-staged" and len(staged) == 4:
            checker.check(all(losses == staged[0] for losses in staged),
                          f"{model} {name}: stages 0-3 are not bitwise equal")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src-root", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--models", default="mlp,gpt2,gpt2-bf16")
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    gpus = gpu_count()
    checker = lib.Checker("check_cuda_backend")
    if gpus == 0:
        print("check_cuda_backend: no GPU (nvidia-smi -L lists none)")
        return 1
    for model in args.models.split(","):
        check_model(checker, model, args, gpus)
    return checker.finish()


if __name__ == "__main__":
    sys.exit(main())
