#!/usr/bin/env python3
"""Plans GPT- and Llama-shaped models of 7B to 70B parameters for 8 to 128
ranks without weights, and times it.

A case LxDxR builds the model with zero.nn.GPT2 (bf16, full activation
checkpointing, fused attention, one 2048-token sequence per rank,
vocabulary 32000); a case llama:LxDxFxR with zero.nn.Llama (Llama 3.1's
vocabulary 128256 and one 8192-token sequence per rank, D / 128 heads over
8 key/value heads, a SwiGLU of width F, bf16, full activation
checkpointing, fused attention: Llama 3.1 70B is llama:80x8192x28672x128).
Each turns
on ZeRO stage 3 sharded over every rank (`mesh=R,8`, `mesh_scheme="full"`,
so FSDP's full shard) and compiles it for the ranks on `h100-nodes-ib400`,
in a process of its own with its address space capped (`--limit-gib`,
default 3): a plan that allocated parameters would need the model's bytes
(140 GB at 70B in bf16, one rank's shard with its f32 master and AdamW's
moments 8.7 GB at 128 ranks) and fail there. It reports the wall time of
building and of compiling, the process's peak resident memory, the
per-rank model state, and the predicted step's peak device memory against
the card's (the H100 presets' constants are datasheet estimates, not
fitted to a published run: docs/zero-opt.md, "Presets").

    python3 bench/plan_scale.py [--markdown] [--limit-gib 3]
        [--cases 32x4096x8,llama:80x8192x28672x128]
"""

import argparse
import json
import os
import resource
import subprocess
import sys

import benchlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CASES = ("32x4096x8,40x5120x16,40x5120x128,80x8192x128,"
                 "llama:80x8192x28672x128")

CHILD = r"""
import json, resource, sys, time
import zero
family = sys.argv[1]
layers, dim, hidden, ranks = (int(v) for v in sys.argv[2:6])
start = time.perf_counter()
graph = zero.Graph(family)
graph.config.precision("bf16")
if family == "llama":
    seq, vocab = 8192, 128256
    tokens = graph.input("tokens", [1, seq], "i32")
    tables = [graph.input(name, [1, seq, 128], "f32") for name in ("cos", "sin")]
    targets = graph.input("targets", [1, seq], "i32")
    model = zero.nn.Llama(graph, layers=layers, vocab=vocab, seq=seq, dim=dim,
                          heads=dim // 128, kv_heads=8, hidden=hidden,
                          eps=1e-5, checkpoint=True, fused_attention=True)
    graph.minimize(model.loss(tokens, *tables, targets))
else:
    seq, vocab = 2048, 32000
    inputs = [graph.input(name, [1, seq], "i32")
              for name in ("tokens", "positions", "targets")]
    model = zero.nn.GPT2(graph, layers=layers, vocab=vocab, seq=seq, dim=dim,
                         heads=dim // 128, checkpoint=True,
                         fused_attention=True)
    graph.minimize(model.loss(*inputs))
graph.config.optimizer(zero.AdamW(lr=1e-4)).enable_zero(True, 3)
graph.config.activation_checkpointing(True)
graph.config.mesh(ranks // 8, 8)
graph.config.zero.mesh_scheme = "full"
graph.config.zero.machine = "h100-nodes-ib400"
built = time.perf_counter()
compiled = graph.compile(ranks)
done = time.perf_counter()
report = compiled.report
text = compiled.report_text()
peak = [line for line in text.splitlines() if "peak device memory" in line]
print(json.dumps({
    "build_s": built - start, "compile_s": done - built,
    "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "parameters_per_rank": report["parameters"],
    "model_state_per_rank": report["model_state"],
    "peak_device_bytes": int(peak[0].split()[3]) if peak else None,
    "fits": "the peak fits" in text,
}))
"""


def run_case(family, layers, dim, hidden, ranks, limit_gib):
    env = dict(os.environ)
    # The build tree's package, unless PYTHONPATH says where (lit does).
    env.setdefault("PYTHONPATH", os.path.join(ROOT, "build", "python"))

    def cap():
        limit = int(limit_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    result = subprocess.run(
        [sys.executable, "-c", CHILD, family, str(layers), str(dim),
         str(hidden), str(ranks)],
        env=env, capture_output=True, text=True, preexec_fn=cap)
    if result.returncode != 0:
        raise SystemExit(f"{layers}x{dim} on {ranks} ranks failed:\n"
                         f"{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def parameters(family, layers, dim, hidden):
    """zero.nn.GPT2's parameter count: embeddings (tied head), per layer
    two layer norms, the fused QKV and output projections and the 4x MLP,
    and the final norm; or zero.nn.Llama's: the embedding and the untied
    head, per layer the q and o projections, k and v for 8 heads of 128,
    the SwiGLU's three and two norms, and the final norm."""
    if family == "llama":
        per_layer = 2 * dim * dim + 2 * dim * 8 * 128 + 3 * dim * hidden \
            + 2 * dim
        return 2 * 128256 * dim + layers * per_layer + dim
    vocab, seq = 32000, 2048
    per_layer = 4 * dim + 3 * dim * dim + 3 * dim + dim * dim + dim \
        + 4 * dim * dim + 4 * dim + 4 * dim * dim + dim
    return vocab * dim + seq * dim + layers * per_layer + 2 * dim


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default=DEFAULT_CASES)
    parser.add_argument("--limit-gib", type=float, default=3.0)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = []
    for case in args.cases.split(","):
        family, _, shape = case.rpartition(":")
        family = family or "gpt"
        extents = [int(v) for v in shape.split("x")]
        if family == "llama":
            layers, dim, hidden, ranks = extents
        else:
            (layers, dim, ranks), hidden = extents, 4 * extents[1]
        figures = run_case(family, layers, dim, hidden, ranks,
                           args.limit_gib)
        count = parameters(family, layers, dim, hidden)
        # The plan holds every parameter once across the ranks (bf16), up
        # to the shards' padding.
        held = figures["parameters_per_rank"] * ranks / 2
        if not count <= held <= count * 1.001:
            raise SystemExit(f"{case}: the ranks hold {held:.0f} parameters, "
                             f"the model has {count}")
        rows.append([
            f"{'Llama ' if family == 'llama' else ''}{layers} x {dim}",
            f"{count / 1e9:.1f} B", str(ranks),
            f"{figures['build_s']:.2f}", f"{figures['compile_s']:.1f}",
            f"{figures['max_rss_mib']:.0f}",
            f"{figures['model_state_per_rank'] / 2**30:.2f}",
            f"{figures['peak_device_bytes'] / 2**30:.1f}"
            + (" (fits)" if figures["fits"] else " (does not fit)"),
        ])
        print(f"plan_scale: {case}: {figures}", file=sys.stderr)
    header = ["layers x width", "parameters", "ranks", "build s",
              "compile s", "peak RSS MiB", "model state / rank GiB",
              "predicted peak / rank GiB (of 79.6)"]
    print(benchlib.table(header, rows, args.markdown))

if __name__ == "__main__":
    main()
