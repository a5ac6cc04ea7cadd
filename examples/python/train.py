"""A complete training script, in the shape a PyTorch user writes one:

    python3 -m zero.run -n 2 examples/python/train.py --steps 200 \
        --eval-every 50 --checkpoint-every 50 --out runs/gpt2-mini
    python3 -m zero.run -n 2 examples/python/train.py --steps 200 \
        --out runs/gpt2-mini --resume        # continues from the newest
    python3 -m zero.run -n 2 examples/python/train.py --steps 400 \
        --schedule-total 400 --out runs/gpt2-mini --resume  # trains longer

GPT-2 mini (zero.nn.GPT2) on the shipped text, byte-level tokens, split 90/10
into training and validation text; AdamW with a linear warmup and a cosine
decay, no weight decay on biases and norm gains (a parameter group);
ZeRO stage 3; the validation loss every --eval-every steps (Trainer.evaluate:
no backward, no update); a checkpoint every --checkpoint-every steps
(keeping the newest two), from which --resume continues bitwise: the same
losses as a run that never stopped (test/python/train-script.test). The
cosine schedule's length is --steps unless --schedule-total says otherwise;
a resume under another length is refused unless --schedule-total gives it
(the rates of the steps already run would not be those of the new
schedule). Each step logs its loss, learning rate and gradient norm
(clipped at --clip, as nanoGPT does), from Trainer.metrics. After the last
step it prints --sample-tokens bytes sampled after --prompt
(Trainer.generate, as nanoGPT's sample.py).
docs/python.md describes every call used here.
"""

import argparse
import os
import sys

import numpy as np

import zero
from train_gpt2 import CORPUS, SIZES, corpus_batch


def build(size, stage, ranks, total_steps, warmup, weight_decay, clip):
    layers, dim, heads, vocab, seq, batch, lr = SIZES[size]
    graph = zero.Graph("gpt2")
    local = batch // ranks
    tokens = graph.input("tokens", [local, seq], "i32")
    positions = graph.input("positions", [local, seq], "i32")
    targets = graph.input("targets", [local, seq], "i32")
    model = zero.nn.GPT2(graph, layers=layers, vocab=vocab, seq=seq, dim=dim,
                         heads=heads)
    graph.minimize(model.loss(tokens, positions, targets))
    # What Trainer.generate samples from (training steps do not compute it).
    graph.output("logits", model.logits(tokens, positions))
    graph.config.optimizer(zero.AdamW(lr=lr, betas=(0.9, 0.95), eps=1e-8,
                                      weight_decay=weight_decay))
    graph.config.learning_rate_schedule(
        zero.Schedule.cosine(warmup, total_steps, lr / 10))
    # Biases and layer-norm gains (every 1-D parameter) without weight decay.
    no_decay = [param for _, param in graph.named_parameters()
                if len(param.value.shape) < 2]
    graph.config.parameter_group("no_decay", no_decay, weight_decay=0.0)
    graph.config.enable_zero(stage > 0, stage)
    graph.config.clip_grad_norm(clip)
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
    parser.add_argument("--schedule-total", type=int,
                        help="the learning-rate schedule's length in steps "
                        "(default --steps); given, a resume continues under "
                        "it even where the checkpoint's was another")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--clip", type=float, default=1.0,
                        help="clip the gradients' global norm at this")
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--eval-every", type=int, default=50,
                        help="evaluate every this many steps and after the "
                        "last (0: after the last only)")
    parser.add_argument("--eval-batches", type=int, default=4)
    parser.add_argument("--checkpoint-every", type=int, default=50,
                        help="save every this many steps (0: never)")
    parser.add_argument("--out", default="runs/gpt2")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the newest checkpoint in --out")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", default=CORPUS)
    parser.add_argument("--sample-tokens", type=int, default=200,
                        help="after training, sample this many bytes after "
                        "--prompt (0: no sample)")
    parser.add_argument("--prompt", default="MENENIUS:")
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--top-k", type=int, default=40)
    args = parser.parse_args()
    for name in ("eval_every", "checkpoint_every"):
        if getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must be 0 or more")
    rank, ranks = zero.rank(), zero.world_size()

    def log(*message):
        if rank == 0:
            print(*message, flush=True)

    total = args.schedule_total or args.steps
    graph, batch, seq = build(args.size, args.stage, ranks, total,
                              args.warmup, args.weight_decay, args.clip)
    compiled = graph.compile(ranks)
    log(compiled.report_text().rstrip())
    trainer = zero.Trainer(compiled, seed=args.seed,
                           input_names=["tokens", "positions", "targets"])
    checkpoints = os.path.join(args.out, "checkpoints")
    if args.resume and not os.path.exists(os.path.join(checkpoints,
                                                       "latest")):
        log(f"no checkpoint in {checkpoints} yet: starting from step 0")
    elif args.resume:
        trainer.load(checkpoints, schedule_total=args.schedule_total)
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
        metrics = trainer.metrics
        log(f"step {step:4d}/{args.steps}  train loss {loss:.6f}  lr "
            f"{metrics['learning_rate']:.3e}  grad norm "
            f"{metrics['grad_norm']:.4f}")
        if (args.eval_every and step % args.eval_every == 0) or \
                step == args.steps:
            log(f"step {step:4d}/{args.steps}  validation loss "
                f"{trainer.evaluate(validation):.6f}")
        if args.checkpoint_every and step % args.checkpoint_every == 0:
            where = trainer.save(checkpoints, keep=2)
            log(f"step {step:4d}/{args.steps}  checkpoint {where}")
    if trainer.metrics is not None:
        log(f"last step: {trainer.metrics['tokens_per_second']:.0f} "
            "tokens/s")
    if args.sample_tokens > 0:
        # As nanoGPT's sample.py: bytes in, bytes out.
        prompt = np.frombuffer(args.prompt.encode(), dtype=np.uint8)
        sample = trainer.generate(
            prompt, args.sample_tokens, temperature=args.temperature,
            top_k=args.top_k, inputs={"positions": np.arange(seq),
                                      "targets": 0})
        log(f"sample after step {trainer.steps_done} (temperature "
            f"{args.temperature}, top_k {args.top_k}):")
        log(bytes(sample.astype(np.uint8)).decode("utf-8",
                                                  errors="replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
