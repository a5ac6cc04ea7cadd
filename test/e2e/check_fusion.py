"""The fusion passes end to end: a step lowered with its linear layers and
residual norms fused trains bit for bit as the same step lowered unfused.

For each model and ZeRO stage, the step is rewritten once by zero-pipeline
(lower-to-runtime=false), then lowered twice: with the fusion passes
before zero-lower-to-runtime (as zero-pipeline lowers it) and without. The
fused program must launch every fused kernel it can (GPT-2 has all four
fused matmuls, and its residual adds with the layer norms that read them:
train-fuse-residual-norm) and the unfused one none; in bf16 the fused program's cross-entropy and
its gradient read the bf16 logits (train-fuse-loss-cast), the unfused
one's an f32 copy; both train N ranks for a few deterministic steps
and must give the same losses and final parameters, bitwise. Each program's
planned arena is printed: fusion drops the matmuls' own result buffers, so
the fused arena is at most the unfused one.
"""

import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib  # noqa: E402

FUSED_KERNELS = ("train.matmul_bias", "train.matmul_bias_gelu",
                 "train.matmul_gelu_grad", "train.matmul_bias_grad",
                 "train.add_layer_norm")
# The fusion passes zero-pipeline runs under fuse-epilogues, in its order.
FUSION_PASSES = "train-fuse-epilogues,train-fuse-loss-cast," \
    "train-fuse-residual-norm,"


def loss_logits_types(text):
    """The element type of the logits each loss launch reads."""
    return sorted(set(re.findall(
        r'zrt\.launch "train\.softmax_cross_entropy(?:_grad)?" .*?'
        r'ins\([^:]*: memref<[0-9x]*x(\w+)>', text)))


def lower(zero_opt, rewritten, path, fuse):
    passes = (FUSION_PASSES if fuse else "") + \
        "zero-lower-to-runtime,zero-offload"
    subprocess.run([zero_opt, rewritten,
                    f"--pass-pipeline=builtin.module({passes})", "-o", path],
                   check=True)
    with open(path) as f:
        return f.read()


def run(program, workdir, tag, ranks, steps):
    metrics = os.path.join(workdir, f"{tag}.json")
    state = os.path.join(workdir, f"{tag}.safetensors")
    e2e_lib.zero_run(program, [
        "-n", ranks, "--steps", steps, "--seed", 1, "--deterministic",
        "--quiet", "--metrics-json", metrics, "--save-state", state,
        "--timeout", 60])
    with open(metrics) as f:
        return json.load(f), state


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True, choices=["gpt2", "gpt2-bf16"])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--zero-opt", required=True)
    parser.add_argument("--src-root", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()

    checker = e2e_lib.Checker(f"fusion {args.model}")
    make, local = e2e_lib.MODELS[args.model]
    step = make(args.src_root, local, args.workdir)
    for stage in range(4):
        tag = f"{args.model}-n{args.ranks}-s{stage}"
        rewritten = os.path.join(args.workdir, f"{tag}.rewritten.mlir")
        subprocess.run(
            [args.zero_opt, step,
             f"--pass-pipeline=builtin.module(zero-pipeline{{stage={stage} "
             f"ranks={args.ranks} lower-to-runtime=false}})",
             "-o", rewritten], check=True)
        programs, arenas, kernels, logits = {}, {}, {}, {}
        for fuse in (True, False):
            name = "fused" if fuse else "unfused"
            path = os.path.join(args.workdir, f"{tag}.{name}.zrt.mlir")
            text = lower(args.zero_opt, rewritten, path, fuse)
            programs[name] = path
            arenas[name] = int(re.search(r"planned_arena = (\d+)",
                                         text).group(1))
            kernels[name] = {k: text.count(f'"{k}"') for k in FUSED_KERNELS}
            logits[name] = loss_logits_types(text)
        where = f"N={args.ranks} stage {stage}"
        missing = [k for k, n in kernels["fused"].items() if n == 0]
        checker.check(not missing, f"{where}: no launch of {missing}")
        leaked = [k for k, n in kernels["unfused"].items() if n]
        checker.check(not leaked, f"{where}: unfused program launches {leaked}")
        narrow = "bf16" if args.model == "gpt2-bf16" else "f32"
        checker.check(logits["fused"] == [narrow],
                      f"{where}: fused loss reads {logits['fused']} logits, "
                      f"not {narrow}")
        checker.check(logits["unfused"] == ["f32"],
                      f"{where}: unfused loss reads {logits['unfused']} "
                      "logits, not f32")
        checker.check(arenas["fused"] <= arenas["unfused"],
                      f"{where}: fused arena {arenas['fused']} B > unfused "
                      f"{arenas['unfused']} B")
        fused = run(programs["fused"], args.workdir, f"{tag}.fused",
                    args.ranks, args.steps)
        unfused = run(programs["unfused"], args.workdir, f"{tag}.unfused",
                      args.ranks, args.steps)
        if e2e_lib.check_same_training(checker, where, unfused, fused):
            launches = ", ".join(f"{n} {k}" for k, n in kernels["fused"].items())
            checker.note(f"{where}: fused bitwise equal to unfused ({launches}; "
                         f"loss on {narrow} logits; arena {arenas['fused']} B, unfused "
                         f"{arenas['unfused']} B)")
    checker.finish()


if __name__ == "__main__":
    main()
