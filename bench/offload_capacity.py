#!/usr/bin/env python3
"""The largest GPT-shaped model whose plan fits a device, from the compiler
alone.

For each rank count and offload mode, the GPT-3 family's shapes (layers x
width, examples/gen_gpt2.py, bf16 with fp32 masters, AdamW, one sequence of
--seq tokens per rank) are compiled in increasing size with
`zero-pipeline{stage=3 lower-to-runtime=1 offload=MODE}` and the device
bytes per rank of the lowered program's memory plan (device buffers + the
planned arena, activations included) are compared with --device-gib. Nothing
runs: this is the plan the runtime then allocates exactly (offload.test
checks measured = plan on CPU ranks).

    python3 bench/offload_capacity.py [--ranks 1,8] [--device-gib 80]
        [--seq 1024] [--markdown]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (name, layers, width, heads): the GPT-3 paper's table, plus 20B and 65B.
FAMILY = [
    ("125M", 12, 768, 12), ("350M", 24, 1024, 16), ("760M", 24, 1536, 16),
    ("1.3B", 24, 2048, 32), ("2.7B", 32, 2560, 32), ("6.7B", 32, 4096, 32),
    ("13B", 40, 5120, 40), ("20B", 44, 6144, 48), ("30B", 48, 7168, 56),
    ("65B", 80, 8192, 64), ("175B", 96, 12288, 96),
]
MODES = ["none", "optimizer", "optimizer+params"]


def plan(zero_opt, tmp, shape, ranks, seq, mode):
    name, layers, width, heads = shape
    program = os.path.join(tmp, f"{name}-n{ranks}.mlir")
    if not os.path.exists(program):
        subprocess.run([sys.executable, os.path.join(ROOT, "examples", "gen_gpt2.py"),
                        "--layers", str(layers), "--dim", str(width),
                        "--heads", str(heads), "--seq", str(seq),
                        "--vocab", "50257", "--batch", "1",
                        "--dtype", "bf16", "--ranks", str(ranks),
                        "-o", program], check=True)
    report = os.path.join(tmp, "report.json")
    # With lower-to-runtime the report ends with the program's memory plan.
    pipeline = (f"builtin.module(zero-pipeline{{stage=3 lower-to-runtime=1 "
                f"offload={mode} report=json report-output={report}}})")
    start = time.monotonic()
    subprocess.run([zero_opt, program, f"--pass-pipeline={pipeline}",
                    "-o", os.devnull], check=True)
    with open(report) as f:
        data = json.load(f)
    memory = data["memory_plan"]
    return (memory["device_bytes"], memory["host_bytes"],
            data["formula"]["trainable_elements"], time.monotonic() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="1,8")
    parser.add_argument("--device-gib", type=float, default=80)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--zero-opt", default=os.path.join(ROOT, "build", "bin", "zero-opt"))
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    limit = args.device_gib * 2**30
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for ranks in [int(n) for n in args.ranks.split(",")]:
            for mode in MODES:
                largest, beyond = None, None
                for shape in FAMILY:
                    device, host, params, seconds = plan(args.zero_opt, tmp, shape,
                                                         ranks, args.seq, mode)
                    print(f"  N={ranks} {mode} {shape[0]}: {params / 1e9:.2f}B params, "
                          f"device {device / 2**30:.1f} GiB, host {host / 2**30:.1f} GiB "
                          f"({seconds:.1f} s to compile)", file=sys.stderr)
                    if device <= limit:
                        largest = (shape[0], params, device, host)
                    else:
                        beyond = (shape[0], device)
                        break
                rows.append([str(ranks), mode,
                             f"{largest[0]} ({largest[1] / 1e9:.2f}B)" if largest else "none",
                             f"{largest[2] / 2**30:.1f}" if largest else "-",
                             f"{largest[3] / 2**30:.1f}" if largest else "-",
                             f"{beyond[0]}: {beyond[1] / 2**30:.1f}" if beyond else "-"])
    print(f"machine: {benchlib.machine()}")
    print(f"largest GPT-3-family shape whose stage-3 plan fits {args.device_gib:g} GiB "
          f"per device (bf16, fp32 masters, AdamW, 1 x {args.seq} tokens per rank)")
    print(benchlib.table(["N", "offload", "largest that fits", "device GiB",
                          "host GiB", "next size: device GiB"], rows, args.markdown))


if __name__ == "__main__":
    main()
