"""GPT-2 from Python with ZeRO, on the shipped text (byte-level tokens):

    python3 -m zero.run -n 4 examples/python/train_gpt2.py --size mini --stage 3

The same model, optimizer, initial state and batches as
examples/gpt2/gpt2_train (C++), so the two print the same losses bit for
bit (test/python/gpt2.test). docs/python.md walks through it.
"""

import argparse
import os
import sys
import time

import numpy as np

import zero

# name: (layers, width, heads, vocabulary, context, global batch, lr), as in
# examples/gpt2/Gpt2Flags.cpp.
SIZES = {
    "tiny": (2, 32, 4, 256, 16, 8, 3e-3),
    "mini": (4, 64, 4, 256, 64, 8, 2e-3),
}
HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "gpt2", "data", "coriolanus.txt")
MASK = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def build_gpt2(size, stage, ranks, batch, seq=None, accumulate=1,
               checkpoint=False):
    """The graph gpt2_train builds: the per-rank micro-batch is batch/ranks."""
    layers, dim, heads, vocab, context, _, lr = SIZES[size]
    seq = seq or context
    if batch % ranks:
        raise ValueError(f"the global batch {batch} does not split over "
                         f"{ranks} ranks")
    local = batch // ranks
    graph = zero.Graph("gpt2")
    tokens = graph.input("tokens", [local, seq], "i32")
    positions = graph.input("positions", [local, seq], "i32")
    targets = graph.input("targets", [local, seq], "i32")
    model = zero.nn.GPT2(graph, layers=layers, vocab=vocab, seq=seq, dim=dim,
                         heads=heads, checkpoint=checkpoint)
    graph.minimize(model.loss(tokens, positions, targets))
    graph.config.optimizer(zero.AdamW(lr=lr, betas=(0.9, 0.95), eps=1e-8,
                                      weight_decay=0.1))
    graph.config.enable_zero(stage > 0, stage)
    graph.config.activation_checkpointing(checkpoint)
    graph.config.gradient_accumulation_steps(accumulate)
    return graph


def corpus_batch(text, seed, step, rows, seq):
    """Optimizer step `step`'s global batch: row g is the window of seq + 1
    bytes at a start drawn from (seed, step, g), as gpt2_train draws it."""
    starts = len(text) - seq
    first = splitmix64(splitmix64(seed) ^ step)
    windows = np.empty((rows, seq + 1), dtype=np.int32)
    for g in range(rows):
        start = splitmix64(first ^ g) % starts
        windows[g] = text[start:start + seq + 1]
    positions = np.tile(np.arange(seq, dtype=np.int32), (rows, 1))
    return [np.ascontiguousarray(windows[:, :-1]), positions,
            np.ascontiguousarray(windows[:, 1:])]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="mini")
    parser.add_argument("--stage", type=int, default=3, choices=range(4))
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", default=CORPUS)
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--losses-out", help="write each step's loss (%%.9g)")
    parser.add_argument("--save-step", help="write the differentiated step")
    parser.add_argument("--checkpoint-dir", help="save a checkpoint at the end")
    args = parser.parse_args()

    rank, ranks = zero.rank(), zero.world_size()
    batch = SIZES[args.size][5]
    seq = SIZES[args.size][4]
    graph = build_gpt2(args.size, args.stage, ranks, batch,
                       accumulate=args.accumulate)
    compiled = graph.compile(ranks)
    if rank == 0:
        report = compiled.report
        print(f"gpt2 {args.size} at ZeRO stage {compiled.stage} on {ranks} "
              f"rank(s): per rank {report['model_state']:,} B of model "
              f"state, peak transient {report['peak_transient']:,} B")
        if args.save_step:
            compiled.save(args.save_step, "step")
    trainer = zero.Trainer(compiled, seed=args.seed,
                           input_names=["tokens", "positions", "targets"])
    with open(args.data, "rb") as f:
        text = np.frombuffer(f.read(), dtype=np.uint8).astype(np.int32)
    losses = []
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        loss = trainer.step(corpus_batch(text, args.seed, step,
                                         batch * args.accumulate, seq))
        losses.append(loss)
        if rank == 0 and (step == 1 or step == args.steps
                          or step % args.log_every == 0):
            rate = step * batch * args.accumulate * seq / (
                time.perf_counter() - start)
            print(f"step {step:4d}/{args.steps}  loss {loss:.4f}  "
                  f"({rate:.0f} tokens/s)")
    if rank == 0 and args.losses_out:
        with open(args.losses_out, "w") as f:
            f.writelines("%.9g\n" % loss for loss in losses)
    if args.checkpoint_dir:
        where = trainer.save(args.checkpoint_dir)
        if rank == 0:
            print(f"checkpoint: {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
