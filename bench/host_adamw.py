#!/usr/bin/env python3
"""The host AdamW update of offloaded optimizer state against STREAM triad
and against torch.optim.AdamW, side by side in one run.

zero-offload moves a rank's AdamW update to the host: the runtime's kernel
(runtime/cpu "train.adamw", vectorized with Highway) over the rank's f32
shard, in place. `zero-bench-host-adamw` times it and a STREAM triad over
the same bytes on 1 and T threads; this script runs it, then times
`torch.optim.AdamW.step()` on one f32 tensor of as many elements with
`torch.set_num_threads(T)` (Debian's PyTorch, /usr/bin/python3, installed by
scripts/setup-bench.sh), repeating both `--repeats` times alternately, and
prints the medians and the ratios.

Targets (issue 16, docs/benchmarks.md "Offload"): >= 60 % of the triad's
bandwidth and >= 4x PyTorch's AdamW on the same threads.

    python3 bench/host_adamw.py [--elements 33554432] [--threads 1,2]
        [--repeats 3] [--markdown]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

TORCH_STEP = r"""
import json, sys, time, torch
elements, threads, iterations = (int(a) for a in sys.argv[1:4])
torch.set_num_threads(threads)
torch.manual_seed(0)
p = torch.nn.Parameter(torch.randn(elements))
p.grad = torch.randn(elements)
# GPT-2's settings, as zero-bench-host-adamw binds the kernel.
opt = torch.optim.AdamW([p], lr=6e-4, betas=(0.9, 0.95), eps=1e-8,
                        weight_decay=0.1)
opt.step()
best = 1e30
for _ in range(iterations):
    start = time.perf_counter()
    opt.step()
    best = min(best, time.perf_counter() - start)
print(json.dumps({"seconds": best, "version": torch.__version__}))
"""


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elements", type=int, default=32 << 20)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bench", default=os.path.join(root, "build", "bin",
                                                        "zero-bench-host-adamw"))
    parser.add_argument("--torch-python", default="/usr/bin/python3")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]

    ours = {t: [] for t in threads}
    triad = {t: [] for t in threads}
    torch = {t: [] for t in threads}
    version = "?"
    target = "?"
    with tempfile.TemporaryDirectory() as scratch:
        figures = os.path.join(scratch, "host_adamw.json")
        for _ in range(args.repeats):
            subprocess.run([args.bench, "--elements", str(args.elements),
                            "--thread-counts", args.threads,
                            "--iterations", str(args.iterations),
                            "--json", figures],
                           check=True, stdout=subprocess.DEVNULL)
            with open(figures) as f:
                data = json.load(f)
            target = data["target"]
            for row in data["rows"]:
                ours[row["threads"]].append(row["adamw_elements_per_s"])
                triad[row["threads"]].append(row["triad_gbps"])
            for t in threads:
                result = subprocess.run(
                    [args.torch_python, "-c", TORCH_STEP, str(args.elements),
                     str(t), str(args.iterations)],
                    check=True, capture_output=True, text=True)
                measured = json.loads(result.stdout)
                version = measured["version"]
                torch[t].append(args.elements / measured["seconds"])

    print(f"machine: {benchlib.machine()}")
    print(f"host AdamW over {args.elements} f32 elements (28 B each per "
          f"update), best of {args.iterations} per run, median of "
          f"{args.repeats} runs; ours with {target}, torch {version}")
    rows = []
    for t in threads:
        ours_eps = statistics.median(ours[t])
        torch_eps = statistics.median(torch[t])
        ours_gbps = ours_eps * 28 / 1e9
        triad_gbps = statistics.median(triad[t])
        rows.append([str(t), f"{ours_eps:.3e}", f"{ours_gbps:.1f}",
                     f"{triad_gbps:.1f}", f"{100 * ours_gbps / triad_gbps:.0f}%",
                     f"{torch_eps:.3e}", f"{ours_eps / torch_eps:.2f}x"])
    print(benchlib.table(["threads", "ours elem/s", "ours GB/s", "triad GB/s",
                          "of triad", "torch elem/s", "ours / torch"],
                         rows, args.markdown))


if __name__ == "__main__":
    main()
