#!/usr/bin/env python3
"""Where a step's compute time goes, by kernel: `zero-run --profile`'s trace
summed per kernel name on rank 0's compute stream (steps after the first),
as a share of the stream's busy time.

Used for issue 26's question whether fused RMSNorm and rotary-embedding
kernels would pay for themselves: `--group` sums the kernels such a fusion
could replace (every use of them, so an upper bound on what it could save).

    python3 bench/op_profile.py --llama [--steps 5] [--markdown]
    python3 bench/op_profile.py step.mlir --init weights.safetensors
        [-n 1] [--stage 0] [--group train.mul,train.add]

`--llama` imports the Hugging Face Llama below first (needs torch and
transformers, scripts/setup-torch.sh, and build/python on PYTHONPATH).
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from benchlib import DEFAULT_ZERO_RUN, machine  # noqa: E402

# A Llama small enough to profile in seconds on two cores, large enough
# that its matrix products dominate as they do at 100M.
LLAMA = dict(hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
             num_attention_heads=8, num_key_value_heads=4, vocab_size=8000,
             max_position_embeddings=256, tie_word_embeddings=True,
             bos_token_id=0, eos_token_id=0)
LLAMA_SHAPE = "2x128"

# What RMSNorm (x * rsqrt(mean(x^2) + eps) * w) and the rotary embedding
# (x * cos + rotate_half(x) * sin) are made of, forward and backward.
NORM_AND_ROTARY = ["train.mul", "train.add", "train.expand", "train.slice",
                   "train.pad", "train.neg", "train.concat", "train.rsqrt",
                   "train.reduce_mean", "train.div", "train.reduce_sum",
                   "train.scale"]


def make_llama():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(**LLAMA))


def compute_stream_times(trace_path):
    with open(trace_path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    streams = {e["tid"]: e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"
               and e.get("pid") == 0}
    times, counts, steps = collections.Counter(), collections.Counter(), set()
    for e in events:
        if e.get("ph") != "X" or e.get("pid") != 0:
            continue
        step = int(e.get("args", {}).get("step", 0))
        if step < 2 or streams.get(e["tid"]) != "@compute":
            continue
        steps.add(step)
        times[e["name"]] += e["dur"]
        counts[e["name"]] += 1
    return times, counts, max(len(steps), 1)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("program", nargs="?")
    parser.add_argument("--init", default="")
    parser.add_argument("--llama", action="store_true")
    parser.add_argument("-n", type=int, default=1)
    parser.add_argument("--stage", type=int, default=0)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--group", default=",".join(NORM_AND_ROTARY),
                        help="kernels summed together (default: those of "
                             "RMSNorm and the rotary embedding)")
    parser.add_argument("--zero-run", default=DEFAULT_ZERO_RUN)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="op-profile-")
    program, init = args.program, args.init
    if args.llama:
        program = os.path.join(workdir, "llama.mlir")
        init = os.path.join(workdir, "llama.safetensors")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [HERE] + [p for p in [env.get("PYTHONPATH")] if p])
        subprocess.run([sys.executable, "-m", "zero.import_torch",
                        "op_profile:make_llama", "--example-shape",
                        LLAMA_SHAPE, "-o", program, "--init", init],
                       check=True, env=env)
    if not program:
        parser.error("give a program, or --llama")
    trace = os.path.join(workdir, "profile.json")
    cmd = [args.zero_run, program, "-n", str(args.n), "--stage",
           str(args.stage), "--steps", str(args.steps), "--blas-threads",
           "1", "--quiet", "--profile", trace]
    if init:
        cmd += ["--init", init]
    subprocess.run(cmd, check=True)
    times, counts, steps = compute_stream_times(trace)
    busy = sum(times.values())
    print(f"machine: {machine()}; rank 0's compute stream, steps 2-"
          f"{steps + 1}: {busy / steps / 1000:.1f} ms busy per step")
    if args.markdown:
        print("\n| kernel | launches per step | ms per step | share |")
        print("|---|---|---|---|")
    for name, micros in times.most_common(12):
        print(f"| {name} | {counts[name] // steps} | "
              f"{micros / steps / 1000:.2f} | {100 * micros / busy:.1f}% |")
    group = [name for name in args.group.split(",") if name]
    grouped = sum(times[name] for name in group)
    print(f"\ngroup ({len(group)} kernels, every use): "
          f"{grouped / steps / 1000:.2f} ms per step, "
          f"{100 * grouped / busy:.1f}% of the compute stream")


if __name__ == "__main__":
    main()
