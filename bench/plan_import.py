#!/usr/bin/env python3
"""Plans Hugging Face's Llama 3.1 8B imported with zero.from_torch from the
meta device, as torchtitan's runs are made (docs/torch.md, "Planning from
shapes alone"): LlamaConfig at torchtitan's shapes in bf16, one batch of 2
x 8192 token ids a GPU, attention="fused", checkpoint="selective_op",
gradients reduced in f32, ZeRO-3 over every GPU (FSDP's full shard). Prints
the predicted tokens/s a GPU, the peak device memory, and the import's and
the plan's wall time and the process's peak RSS. Needs torch and
transformers (scripts/setup-torch.sh).

    python3 bench/plan_import.py [--gpus 8,32] [--attention fused]
        [--checkpoint selective_op]
"""

import argparse
import os
import re
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if "PYTHONPATH" not in os.environ:
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))

import torch  # noqa: E402
import transformers  # noqa: E402

import zero  # noqa: E402


def plan(gpus, attention, checkpoint):
    config = transformers.LlamaConfig(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336,
        num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
        max_position_embeddings=8192, rope_theta=500000.0,
        tie_word_embeddings=False)
    start = time.perf_counter()
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
    ids = torch.zeros(2, 8192, dtype=torch.int64)
    graph = zero.from_torch(model, (ids,), attention=attention,
                            checkpoint=checkpoint)
    imported = time.perf_counter() - start
    graph.config.optimizer(zero.AdamW(lr=3e-4)).enable_zero(True, 3)
    graph.config.zero.reduce_dtype = "f32"
    if gpus > 8:
        graph.config.mesh(gpus // 8, 8)
        graph.config.zero.mesh_scheme = "full"
        graph.config.zero.machine = "h100-96gb-nodes-ib400"
    else:
        graph.config.zero.machine = "h100-96gb-nvlink-8"
    start = time.perf_counter()
    text = graph.compile(gpus).report_text()
    planned = time.perf_counter() - start
    tokens = re.search(r"^  tokens / s +([0-9.]+)", text, re.M).group(1)
    peak = int(re.search(r"^  peak device memory +([0-9]+) B", text,
                         re.M).group(1))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"{gpus} GPUs: {float(tokens):,.1f} tokens/s a GPU, peak "
          f"{peak / 2**30:.1f} GiB, import {imported:.1f} s, plan "
          f"{planned:.1f} s, peak RSS {rss:.2f} GiB", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", default="8,32")
    parser.add_argument("--attention", default="fused")
    parser.add_argument("--checkpoint", default="selective_op")
    args = parser.parse_args()
    for gpus in map(int, args.gpus.split(",")):
        plan(gpus, args.attention, args.checkpoint)


if __name__ == "__main__":
    main()
