"""Supervised fine-tuning of a Hugging Face causal LM with ZeRO-3, as users
bring it from PyTorch: padded batches of prompt-and-response pairs, the
prompt and the padding labelled -100, LoRA adapters on a frozen base (or
every weight trained), evaluation, checkpoints and resume.

    python3 -m zero.run -n 2 examples/python/finetune.py --steps 40 \
        --lora --out runs/finetune
    python3 -m zero.run -n 2 examples/python/finetune.py --steps 80 \
        --lora --out runs/finetune --resume   # continues from the newest

The model is a Llama built from a small config (nothing is downloaded);
the tokens are bytes (vocabulary 256, pad id 0). The pairs come from the
shipped play (examples/gpt2/data/coriolanus.txt): each speech is a prompt
and the next speech its response, "Q: <speech>\\nA: <reply>". Rows are
right-padded to --seq, with the tokenizer's attention_mask (1 on the real
tokens, 0 on the padding) as the step's second input; labels are the ids
with -100 on the prompt and the padding, so the loss is the mean over the
response tokens of the whole global batch (docs/torch.md, "Fine-tuning"). --dropout (0.1 by default)
is the attention's dropout and, with --lora, the adapters' (PEFT's
lora_dropout); its masks depend on the seed and the step only, so a resumed
run continues bitwise. With --lora, PEFT's LoRA (rank 8 on q_proj and
v_proj) trains and the base is frozen: no gradient, no optimizer state. At the end the trained weights are written with PEFT's
save_pretrained (the adapters alone) or, without --lora, as one
.safetensors of the module's state.
"""

import argparse
import os
import sys

import numpy as np
import torch

import zero

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "gpt2", "data", "coriolanus.txt")
VOCAB, PAD, IGNORE = 256, 0, -100


def speeches(path):
    """The play's speeches, in order, as bytes: a speaker's lines without
    the speaker's name, joined by spaces."""
    with open(path, "rb") as f:
        blocks = f.read().split(b"\n\n")
    out = []
    for block in blocks:
        lines = block.strip().split(b"\n")
        if len(lines) >= 2 and lines[0].endswith(b":"):
            out.append(b" ".join(line.strip() for line in lines[1:]))
    return out


def examples(path, seq):
    """(ids, attention_mask, labels) for every pair of consecutive speeches
    that fits in `seq` tokens with at least one response token;
    right-padded."""
    said = speeches(path)
    pairs = []
    for prompt, reply in zip(said, said[1:]):
        prompt = b"Q: " + prompt[:seq // 2] + b"\nA: "
        reply = reply[:seq - len(prompt)]
        if not reply:
            continue
        tokens = np.frombuffer(prompt + reply, dtype=np.uint8).astype(np.int64)
        ids = np.full(seq, PAD, dtype=np.int64)
        mask = np.zeros(seq, dtype=np.int64)
        labels = np.full(seq, IGNORE, dtype=np.int64)
        ids[:len(tokens)] = tokens
        mask[:len(tokens)] = 1
        labels[len(prompt):len(tokens)] = tokens[len(prompt):]
        pairs.append((ids, mask, labels))
    return pairs


def batch(pairs, first, rows):
    """`rows` pairs from `first` on (wrapping): the global batch, as
    [ids, attention_mask, labels]."""
    chosen = [pairs[(first + row) % len(pairs)] for row in range(rows)]
    return [np.stack(column) for column in zip(*chosen)]


def build_model(lora, dropout):
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(hidden_size=64, intermediate_size=172,
                    num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, vocab_size=VOCAB,
                    max_position_embeddings=256, tie_word_embeddings=False,
                    bos_token_id=1, eos_token_id=2, pad_token_id=PAD,
                    attention_dropout=dropout))
    if not lora:
        return model
    from peft import LoraConfig, get_peft_model
    return get_peft_model(model, LoraConfig(
        r=8, lora_alpha=16, lora_dropout=dropout,
        target_modules=["q_proj", "v_proj"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40,
                        help="train until this step (a resumed run too)")
    parser.add_argument("--batch", type=int, default=8,
                        help="rows of the global batch")
    parser.add_argument("--seq", type=int, default=96)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--lora", action="store_true",
                        help="train LoRA adapters on a frozen base")
    parser.add_argument("--dropout", type=float, default=0.1,
                        help="attention (and adapter) dropout, PyTorch's p")
    parser.add_argument("--stage", type=int, default=3, choices=range(4))
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--checkpoint-every", type=int, default=10)
    parser.add_argument("--out", default="runs/finetune")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the newest checkpoint in --out "
                        "(from the start where there is none yet)")
    parser.add_argument("--data", default=CORPUS)
    args = parser.parse_args()
    rank, ranks = zero.rank(), zero.world_size()
    if args.batch % ranks:
        parser.error(f"--batch {args.batch} does not split over {ranks} "
                     "ranks")

    def log(*message):
        if rank == 0:
            print(*message, flush=True)

    pairs = examples(args.data, args.seq)
    held_out = len(pairs) // 10  # the last tenth: validation
    train_pairs, val_pairs = pairs[:-held_out], pairs[-held_out:]

    module = build_model(args.lora, args.dropout)
    per_rank = args.batch // ranks
    ids, mask, _ = (torch.from_numpy(a)
                    for a in batch(train_pairs, 0, per_rank))
    # By keyword, as a tokenizer's output: the step's inputs are input_ids,
    # attention_mask and (the causal-LM loss's) labels.
    graph = zero.from_torch(module, {"input_ids": ids,
                                     "attention_mask": mask})
    graph.config.optimizer(zero.AdamW(lr=args.lr, weight_decay=0.0))
    graph.config.enable_zero(args.stage > 0, args.stage)
    compiled = graph.compile(ranks)
    log(compiled.report_text().rstrip())
    trainer = graph.trainer(compiled)

    checkpoints = os.path.join(args.out, "checkpoints")
    if args.resume and os.path.isdir(checkpoints) and os.listdir(checkpoints):
        trainer.load(checkpoints)
        log(f"resumed from {checkpoints} after step {trainer.steps_done}")
    elif args.resume:
        log(f"no checkpoint in {checkpoints} yet: starting from step 1")

    validation = batch(val_pairs, 0, args.batch)
    for step in range(trainer.steps_done + 1, args.steps + 1):
        loss = trainer.step(
            batch(train_pairs, (step - 1) * args.batch, args.batch))
        log(f"step {step:4d}/{args.steps}  train loss {loss:.6f}")
        if step % args.eval_every == 0 or step == args.steps:
            log(f"step {step:4d}/{args.steps}  validation loss "
                f"{trainer.evaluate(validation):.6f}")
        if step % args.checkpoint_every == 0:
            where = trainer.save(checkpoints, keep=2)
            log(f"step {step:4d}/{args.steps}  checkpoint {where}")

    state = graph.state_dict(trainer)
    if rank == 0:
        module.load_state_dict(state)
        if args.lora:
            module.save_pretrained(os.path.join(args.out, "adapter"))
            log(f"adapters saved in {os.path.join(args.out, 'adapter')}")
        else:
            from safetensors.torch import save_file
            # --out exists only where a checkpoint was written before.
            os.makedirs(args.out, exist_ok=True)
            path = os.path.join(args.out, "model.safetensors")
            save_file({k: v.contiguous() for k, v in state.items()}, path)
            log(f"weights saved in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
