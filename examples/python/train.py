"""A complete training script, in the shape a PyTorch user writes one:

    python3 -m zero.run -n 2 examples/python/train.py --steps 200 \
        --eval-every 50 --checkpoint-every 50 --out runs/gpt2-mini
    python3 -m zero.run -n 2 examples/python/train.py --steps 400 \
        --out runs/gpt2-mini --resume        # continues from the newest

GPT-2 mini (zero.nn.GPT2) on the shipped text, byte-level tokens, split 90/10
into training and validation text; AdamW with a linear warmup and a cosine
decay, no weight decay on biases and norm gains (a parameter group);
ZeRO stage 3; the validation loss every --eval-every steps (Trainer.evaluate:
no backward, no update); a checkpoint every --checkpoint-every steps
(keeping the newest two), from which --resume continues bitwise: the same
losses as a run that never stopped (test/python/train-script.test).
docs/python.md describes every call used here.
"""

import argparse
import os
import sys

import numpy as np

import zero
from train_gpt2 import CORPUS, SIZES, corpus_batch


def build(size, stage, ranks, total_steps, warmup, weight_decay):
    layers, dim, heads, vocab, seq, batch, lr = SIZES[size]
    graph = zero.Graph("gpt2")
    local = batch // ranks
    tokens = graph.input("tokens", [local, seq], "i32")
    positions = graph.input("positions", [local, seq], "i32")
    targets = graph.input("targets", [local, seq], "i32")
    model = zero.nn.GPT2(graph, layers=layers, vocab=vocab, seq=seq, dim=dim,
                         heads=heads)
    graph.minimize(model.loss(tokens, positions, targets))
    graph.config.optimizer(zero.AdamW(lr=lr, betas=(0.9, 0.95), eps=1e-8,
                                      weight_decay=weight_decay))
    graph.config.learning_rate_schedule(
        zero.Schedule.cosine(warmup, total_steps, lr / 10))
    # Biases and layer-norm gains (every 1-D parameter) without weight decay.
    no_decay = [param for _, param in graph.named_parameters()
                if len(param.value.shape) < 2]
    graph.config.parameter_group("no_decay", no_decay, weight_decay=0.0)
    graph.config.enable_zero(stage > 0, stage)
    return graph, batch, seq


def validation_batches(text, seed, count, rows, seq):
    """`count` global batches of the validation text, stacked: evaluate
    gives the mean of their losses."""
    arrays = [corpus_batch(text, seed, -1 - index, rows, seq)
              for index in range(count)]
    return [np.concatenate(parts) for parts in zip(*arrays)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="mini")
    parser.add_argument("--stage", type=int, default=3, choices=range(4))
    parser.add_argument("--steps", type=int, default=200,
                        help="train until this step (a resumed run too)")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--eval-batches", type=int, default=4)
    parser.add_argument("--checkpoint-every", type=int, default=50)
    parser.add_argument("--out", default="runs/gpt2")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the newest checkpoint in --out")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", default=CORPUS)
    args = parser.parse_args()
    rank, ranks = zero.rank(), zero.world_size()

    def log(*message):
        if rank == 0:
            print(*message, flush=True)

    graph, batch, seq = build(args.size, args.stage, ranks, args.steps,
                              args.warmup, args.weight_decay)
    compiled = graph.compile(ranks)
    log(compiled.report_text().rstrip())
    trainer = zero.Trainer(compiled, seed=args.seed,
                           input_names=["tokens", "positions", "targets"])
    checkpoints = os.path.join(args.out, "checkpoints")
    if args.resume:
        trainer.load(checkpoints)
        log(f"resumed from {checkpoints} after step {trainer.steps_done}")

    with open(args.data, "rb") as f:
        text = np.frombuffer(f.read(), dtype=np.uint8).astype(np.int32)
    split = len(text) * 9 // 10
    train_text, val_text = text[:split], text[split:]
    validation = validation_batches(val_text, args.seed, args.eval_batches,
                                    batch, seq)

    for step in range(trainer.steps_done + 1, args.steps + 1):
        loss = trainer.step(corpus_batch(train_text, args.seed, step, batch,
                                         seq))
        log(f"step {step:4d}/{args.steps}  train loss {loss:.6f}")
        if step % args.eval_every == 0 or step == args.steps:
            log(f"step {step:4d}/{args.steps}  validation loss "
                f"{trainer.evaluate(validation):.6f}")
        if step % args.checkpoint_every == 0:
            where = trainer.save(checkpoints, keep=2)
            log(f"step {step:4d}/{args.steps}  checkpoint {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
