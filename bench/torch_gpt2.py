#!/usr/bin/python3
"""The PyTorch baseline of bench/runtime_vs_pytorch.py: gen_gpt2.py's model.

Trains the model that `examples/gen_gpt2.py` writes as a training step, in
PyTorch (fp32, CPU), on N processes over gloo, and writes a metrics JSON with
the keys zero-run's `--metrics-json` has (`samples_per_second` without the
first step, `step_seconds`, `losses`, `global_batch`), so that the two are
read the same way.

The model is the generated step, op for op:

* token embedding wte [V, D] + position embedding wpe [T, D];
* L pre-LN blocks: x + proj(attn(ln_1(x))), then x + fc2(gelu(fc1(ln_2(x))));
  attention with separate q, k and v projections, H heads, scores scaled by
  1/sqrt(D/H), causal mask filled with -inf, softmax; GELU is the tanh
  approximation (as the runtime's kernel); layer norms with eps 1e-5;
* final layer norm and the LM head tied to wte (logits = x wte^T);
* mean softmax cross-entropy over the B*T next-token targets;
* AdamW on every parameter: lr 3e-4, betas (0.9, 0.95), eps 1e-8, weight
  decay 0.1 (PyTorch's AdamW, which the runtime's `train.adamw` follows).

Weights start as normal(0, 0.02), biases as zeros, gains as ones (the same
distributions, not the same numbers: the two random generators differ).
`nn.Linear` stores its weight as [out, in] where the generated step has
[in, out]; the arithmetic is the same.

The data is zero-run's synthetic language-model batch in distribution:
uniform random tokens, positions 0..T-1, targets (token * 7 + 3) mod V.

`--mode ddp`: DistributedDataParallel and torch.optim.AdamW.
`--mode zero`: DistributedDataParallel and
torch.distributed.optim.ZeroRedundancyOptimizer(optimizer_class=AdamW),
PyTorch's ZeRO-1 (optimizer state sharded by whole tensors, parameters
broadcast from their owner after the update: one broadcast per parameter by
default, one per rank with `--bucket-view`).

Each process runs with one intra-op and one inter-op thread, OMP and OpenBLAS
limited to one thread. A step is timed on rank 0 from zero_grad to the end of
optimizer.step(); the batches are generated before the loop. The per-step
loss is each rank's own (no collective inside the timed step); the ranks'
losses are averaged once after the loop, which is what zero-run reports.

Run with Debian's interpreter, which has python3-torch
(scripts/setup-bench.sh installs it):

    /usr/bin/python3 bench/torch_gpt2.py --mode ddp -n 2 --steps 20 \\
        --layers 2 --dim 128 --heads 4 --seq 64 --vocab 512 --batch 8 \\
        --metrics-json /tmp/ddp.json
"""

import os

# Before torch loads: one thread per process for OpenMP and OpenBLAS (Debian's
# torch calls the system BLAS, OpenBLAS, whose pthreads torch does not size).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import json
import math
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


class Block(nn.Module):
    def __init__(self, dim, heads, mask):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(dim, eps=1e-5)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)
        self.ln_2 = nn.LayerNorm(dim, eps=1e-5)
        self.fc = nn.Linear(dim, 4 * dim)
        self.fc_proj = nn.Linear(4 * dim, dim)
        # A plain attribute, not a buffer: DDP would broadcast a buffer
        # every forward, which the generated step does not do.
        self.mask = mask
        self.scale = 1.0 / math.sqrt(dim // heads)

    def forward(self, x):
        b, t, d = x.shape
        h, dh = self.heads, d // self.heads
        y = self.ln_1(x)
        q = self.q(y).view(b, t, h, dh).transpose(1, 2)
        k = self.k(y).view(b, t, h, dh).transpose(1, 2)
        v = self.v(y).view(b, t, h, dh).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        scores = scores.masked_fill(self.mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(ctx)
        y = F.gelu(self.fc(self.ln_2(x)), approximate="tanh")
        return x + self.fc_proj(y)


class GPT2(nn.Module):
    def __init__(self, layers, vocab, seq, dim, heads):
        super().__init__()
        mask = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, mask) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim, eps=1e-5)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, 0.02)
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)

    def forward(self, tokens, positions, targets):
        x = self.wte(tokens) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied LM head
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               targets.reshape(-1))


ADAMW = dict(lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)


def worker(rank, args, port):
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.n)

    torch.manual_seed(args.seed)  # the same initial model on every rank
    model = GPT2(args.layers, args.vocab, args.seq, args.dim, args.heads)
    ddp = DistributedDataParallel(model)
    if args.mode == "ddp":
        optimizer = torch.optim.AdamW(ddp.parameters(), **ADAMW)
    else:
        from torch.distributed.optim import ZeroRedundancyOptimizer
        optimizer = ZeroRedundancyOptimizer(
            ddp.parameters(), optimizer_class=torch.optim.AdamW,
            parameters_as_bucket_view=args.bucket_view, **ADAMW)

    # This rank's slice of every step's global batch, made before timing.
    gen = torch.Generator().manual_seed(args.seed * 1000003 + rank)
    shape = (args.batch, args.seq)
    positions = torch.arange(args.seq, dtype=torch.long).expand(shape).contiguous()
    batches = []
    for _ in range(args.steps):
        tokens = torch.randint(args.vocab, shape, generator=gen)
        # zero-run's synthetic language-model labels: a fixed function of
        # the token at the same position, so both sides learn the same task.
        targets = (tokens * 7 + 3) % args.vocab
        batches.append((tokens, targets))

    seconds, losses = [], []
    dist.barrier()
    for tokens, targets in batches:
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = ddp(tokens, positions, targets)
        loss.backward()
        optimizer.step()
        seconds.append(time.perf_counter() - start)
        losses.append(loss.detach())
    mean_losses = torch.stack(losses)
    dist.all_reduce(mean_losses)
    mean_losses /= args.n

    if rank == 0:
        timed = seconds[1:] if len(seconds) > 1 else seconds
        global_batch = args.batch * args.n
        metrics = {
            "bucket_view": args.bucket_view,
            "program": "torch %s: gen_gpt2 layers=%d dim=%d heads=%d seq=%d vocab=%d" % (
                args.mode, args.layers, args.dim, args.heads, args.seq, args.vocab),
            "ranks": args.n,
            "steps": args.steps,
            "global_batch": global_batch,
            "losses": [float(x) for x in mean_losses],
            "step_seconds": seconds,
            "samples_per_second": global_batch * len(timed) / sum(timed),
            "torch_version": torch.__version__,
            "parameters": sum(p.numel() for p in model.parameters()),
        }
        with open(args.metrics_json, "w") as f:
            json.dump(metrics, f, indent=2)
    # Every rank done with gloo before any tears it down.
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["ddp", "zero"], default="ddp")
    parser.add_argument("-n", type=int, default=2, help="processes (ranks)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--batch", type=int, default=2, help="batch per rank")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--bucket-view", action="store_true",
                        help="--mode zero: parameters_as_bucket_view=True (one "
                             "broadcast per rank instead of one per parameter)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--metrics-json", required=True)
    args = parser.parse_args()
    mp.spawn(worker, args=(args, free_port()), nprocs=args.n, join=True)


if __name__ == "__main__":
    main()
