#!/usr/bin/env python3
"""Does a padded batch cost more than a full one of the same shape? (issue
43: within 5%.)

Hugging Face's GPT-2 through zero.from_torch, trained at ZeRO stage 3 on
this job's ranks with the causal-LM loss. Steps alternate between a padded
batch (rows of random real lengths, right-padded, labels -100 on the
padding and on a prompt, as examples/python/finetune.py makes them) and a
full batch of the same shape (every label real), so that both kinds run
side by side in one process under the same conditions. The table gives
the median step time of each kind (the first two steps left out) and the
ratio padded / full. A padded batch has the same static shapes: only
train.count_labels and the loss differ, by skipping the ignored rows.

    python3 -m zero.run -n 2 bench/padded_batch.py --markdown
        [--steps 20] [--layers 4] [--dim 256] [--seq 128] [--batch 4]

Needs torch and transformers (scripts/setup-torch.sh) and the Python
package on PYTHONPATH (build/python).
"""

import argparse
import statistics
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20,
                        help="steps of each kind")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=4,
                        help="rows of the global batch")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    import zero
    torch.set_num_threads(1)
    torch.manual_seed(0)
    module = GPT2LMHeadModel(GPT2Config(
        n_embd=args.dim, n_layer=args.layers, n_head=args.heads,
        vocab_size=args.vocab, n_positions=args.seq, resid_pdrop=0.0,
        embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0))
    ranks = zero.world_size()
    rng = np.random.default_rng(7)
    ids = rng.integers(1, args.vocab, (args.batch, args.seq))
    example = torch.from_numpy(ids[:args.batch // ranks])
    graph = zero.from_torch(module, (example,))
    graph.config.optimizer(zero.AdamW(lr=1e-4)).enable_zero(True, 3)
    trainer = graph.trainer(graph.compile(ranks))

    def padded():
        batch_ids = rng.integers(1, args.vocab, (args.batch, args.seq))
        labels = batch_ids.copy()
        for row in range(args.batch):
            prompt = int(rng.integers(4, args.seq // 4))
            end = int(rng.integers(prompt + 1, args.seq + 1))
            batch_ids[row, end:] = 0
            labels[row, :prompt] = -100
            labels[row, end:] = -100
        return [batch_ids, labels]

    def full():
        batch_ids = rng.integers(1, args.vocab, (args.batch, args.seq))
        return [batch_ids, batch_ids.copy()]

    times = {"padded": [], "full": []}
    for step in range(args.steps):
        for kind, make in (("padded", padded), ("full", full)):
            batch = make()
            start = time.perf_counter()
            trainer.step(batch)
            times[kind].append(time.perf_counter() - start)
    padded_ms = statistics.median(times["padded"][2:]) * 1e3
    full_ms = statistics.median(times["full"][2:]) * 1e3
    if zero.rank() != 0:
        return
    shape = (f"GPT-2 {args.layers} layers, width {args.dim}, vocabulary "
             f"{args.vocab}, {args.batch} x {args.seq} tokens, stage 3, "
             f"{ranks} ranks")
    if args.markdown:
        print(f"| {shape} | {full_ms:.1f} | {padded_ms:.1f} | "
              f"{padded_ms / full_ms:.3f} |")
    else:
        print(f"{shape}: full {full_ms:.1f} ms, padded {padded_ms:.1f} ms, "
              f"padded / full {padded_ms / full_ms:.3f}")


if __name__ == "__main__":
    main()
