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
`--mode fsdp2` (torch >= 2.4): FSDP2, `fully_shard` applied to each block
and then to the root (which holds wte, wpe and ln_f, so the tied LM head is
in the root's group), on a 1-D CPU device mesh, and torch.optim.AdamW on the
sharded (DTensor) parameters. `--reshard-after-forward true` (default) frees
each block's gathered parameters after its forward and gathers them again
in backward: ZeRO-3. `false` keeps them from the forward to the end of the
backward: parameters, gradients and optimizer state are still sharded
between steps, but the parameters are gathered once per step, which is the
traffic of ZeRO-2 (all-gather + reduce-scatter), and what the issue pairs
with our stage 2.
`--mode deepspeed --ds-stage K` (K = 1, 2, 3): deepspeed.initialize with
zero_optimization stage K, fp32 (no fp16/bf16), no gradient clipping, and
DeepSpeed's own choice of torch.optim.AdamW (`"torch_adam": true`; its
FusedAdam needs a compiled op, its CPUAdam is for offload) with the same
hyperparameters, on DeepSpeed's CPU accelerator (DS_ACCELERATOR=cpu) over
the gloo process group this script opens, the ranks spawned as in the
other modes (not by the deepspeed launcher). ZeRO-3 is told that wte is
also used outside its module (register_external_parameter), for the tied
LM head. DeepSpeed's ZeRO-3 keeps a parameter of fewer than
stage3_param_persistence_threshold elements (default 100,000) whole on
every rank; `--ds-param-persistence-threshold 0` partitions every one, as
our stage 3 and FSDP2 do. Timed from the engine's forward to the end of
engine.step() (which zeroes the gradients).

Each process runs with one intra-op and one inter-op thread, OMP and OpenBLAS
limited to one thread. A step is timed on rank 0 from zero_grad to the end of
optimizer.step(); the batches are generated before the loop. The per-step
loss is each rank's own (no collective inside the timed step); the ranks'
losses are averaged once after the loop, which is what zero-run reports.

Run `ddp` and `zero` with Debian's interpreter, which has python3-torch
1.13, and every mode with the virtual environment of PyTorch 2.x and
DeepSpeed (scripts/setup-bench.sh installs both):

    /usr/bin/python3 bench/torch_gpt2.py --mode ddp -n 2 --steps 20 \\
        --layers 2 --dim 128 --heads 4 --seq 64 --vocab 512 --batch 8 \\
        --metrics-json /tmp/ddp.json
    /opt/zero-bench-venv/bin/python bench/torch_gpt2.py --mode fsdp2 \\
        --reshard-after-forward false -n 2 ... --metrics-json /tmp/fsdp2.json
    /opt/zero-bench-venv/bin/python bench/torch_gpt2.py --mode deepspeed \\
        --ds-stage 3 -n 2 ... --metrics-json /tmp/ds3.json

Flags: --mode {ddp,zero,fsdp2,deepspeed}, -n ranks, --steps, the shape
(--layers --dim --heads --seq --vocab, --batch per rank), --bucket-view
(zero), --reshard-after-forward {true,false} (fsdp2), --ds-stage {1,2,3}
and --ds-param-persistence-threshold N (deepspeed), --seed, --metrics-json
(required).
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
import sys
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


def torch_major():
    return int(torch.__version__.split(".")[0])


def import_fully_shard():
    """FSDP2's entry point: public from torch 2.6, under _composable before."""
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard
    return fully_shard


def deepspeed_config(args):
    """ZeRO stage K in fp32 with torch.optim.AdamW: the generated step's
    arithmetic (no loss scaling, no clipping, no accumulation)."""
    return {
        "train_micro_batch_size_per_gpu": args.batch,
        "gradient_accumulation_steps": 1,
        "train_batch_size": args.batch * args.n,
        "optimizer": {"type": "AdamW", "params": {
            "lr": ADAMW["lr"], "betas": list(ADAMW["betas"]), "eps": ADAMW["eps"],
            "weight_decay": ADAMW["weight_decay"], "torch_adam": True}},
        "fp16": {"enabled": False},
        "bf16": {"enabled": False},
        "gradient_clipping": 0.0,
        "zero_optimization": dict(
            {"stage": args.ds_stage},
            **({} if args.ds_param_persistence_threshold is None else
               {"stage3_param_persistence_threshold": args.ds_param_persistence_threshold})),
        "steps_per_print": 1 << 30,
        "wall_clock_breakdown": False,
    }


def make_step(args, model, positions):
    """Wraps the model as --mode says; returns step(tokens, targets) -> loss,
    one whole training step, and a description with the library versions."""
    info = {"torch_version": torch.__version__}
    if args.mode in ("ddp", "zero"):
        ddp = DistributedDataParallel(model)
        if args.mode == "ddp":
            optimizer = torch.optim.AdamW(ddp.parameters(), **ADAMW)
        else:
            from torch.distributed.optim import ZeroRedundancyOptimizer
            optimizer = ZeroRedundancyOptimizer(
                ddp.parameters(), optimizer_class=torch.optim.AdamW,
                parameters_as_bucket_view=args.bucket_view, **ADAMW)
        info["bucket_view"] = args.bucket_view

        def step(tokens, targets):
            optimizer.zero_grad(set_to_none=True)
            loss = ddp(tokens, positions, targets)
            loss.backward()
            optimizer.step()
            return loss
        return step, info

    if args.mode == "fsdp2":
        from torch.distributed.device_mesh import init_device_mesh
        fully_shard = import_fully_shard()
        mesh = init_device_mesh("cpu", (args.n,))
        for block in model.blocks:
            fully_shard(block, mesh=mesh, reshard_after_forward=args.reshard_after_forward)
        fully_shard(model, mesh=mesh, reshard_after_forward=args.reshard_after_forward)
        optimizer = torch.optim.AdamW(model.parameters(), **ADAMW)
        info["reshard_after_forward"] = args.reshard_after_forward

        def step(tokens, targets):
            optimizer.zero_grad(set_to_none=True)
            loss = model(tokens, positions, targets)
            loss.backward()
            optimizer.step()
            return loss
        return step, info

    # deepspeed: its CPU accelerator is chosen by the environment, before
    # the import; it finds the gloo group open and uses it.
    os.environ["DS_ACCELERATOR"] = "cpu"
    import deepspeed
    if args.ds_stage == 3:
        # The LM head reads wte.weight outside wte's forward; ZeRO-3 must
        # keep it gathered for the whole root forward.
        deepspeed.zero.register_external_parameter(model, model.wte.weight)
    engine, _, _, _ = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), config=deepspeed_config(args))
    info["deepspeed_version"] = deepspeed.__version__
    info["ds_stage"] = args.ds_stage
    info["ds_param_persistence_threshold"] = args.ds_param_persistence_threshold
    info["ds_optimizer"] = type(engine.optimizer).__name__
    # What ZeRO wraps: torch.optim.AdamW (recorded, since the JSON is the proof).
    base = getattr(engine.optimizer, "optimizer", engine.optimizer)
    info["ds_base_optimizer"] = "%s.%s" % (type(base).__module__, type(base).__name__)

    def step(tokens, targets):
        loss = engine(tokens, positions, targets)
        engine.backward(loss)
        engine.step()
        return loss
    return step, info


def describe(args):
    if args.mode == "fsdp2":
        return "fsdp2 reshard_after_forward=%s" % args.reshard_after_forward
    if args.mode == "deepspeed":
        return "deepspeed zero stage %d" % args.ds_stage
    return args.mode


def worker(rank, args, port):
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    # What launchers set; DeepSpeed reads them.
    os.environ["RANK"] = os.environ["LOCAL_RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = os.environ["LOCAL_WORLD_SIZE"] = str(args.n)
    dist.init_process_group("gloo", rank=rank, world_size=args.n)

    torch.manual_seed(args.seed)  # the same initial model on every rank
    model = GPT2(args.layers, args.vocab, args.seq, args.dim, args.heads)
    parameters = sum(p.numel() for p in model.parameters())

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

    step, info = make_step(args, model, positions)
    # DeepSpeed may size torch's pools for the machine when it loads.
    torch.set_num_threads(1)

    seconds, losses = [], []
    dist.barrier()
    for tokens, targets in batches:
        start = time.perf_counter()
        loss = step(tokens, targets)
        seconds.append(time.perf_counter() - start)
        losses.append(loss.detach())
    mean_losses = torch.stack(losses)
    dist.all_reduce(mean_losses)
    mean_losses /= args.n

    if rank == 0:
        timed = seconds[1:] if len(seconds) > 1 else seconds
        global_batch = args.batch * args.n
        metrics = {
            "program": "torch %s: gen_gpt2 layers=%d dim=%d heads=%d seq=%d vocab=%d" % (
                describe(args), args.layers, args.dim, args.heads, args.seq, args.vocab),
            "mode": args.mode,
            "ranks": args.n,
            "steps": args.steps,
            "global_batch": global_batch,
            "losses": [float(x) for x in mean_losses],
            "step_seconds": seconds,
            "samples_per_second": global_batch * len(timed) / sum(timed),
            "parameters": parameters,
            "threads": torch.get_num_threads(),
        }
        metrics.update(info)
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
    parser.add_argument("--mode", choices=["ddp", "zero", "fsdp2", "deepspeed"],
                        default="ddp")
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
    parser.add_argument("--reshard-after-forward", choices=["true", "false"],
                        default="true",
                        help="--mode fsdp2: true = ZeRO-3 (gather again in "
                             "backward), false = ZeRO-2 traffic")
    parser.add_argument("--ds-stage", type=int, choices=[1, 2, 3], default=3,
                        help="--mode deepspeed: zero_optimization stage")
    parser.add_argument("--ds-param-persistence-threshold", type=int, default=None,
                        help="--ds-stage 3: stage3_param_persistence_threshold (DeepSpeed's "
                             "default 1e5 keeps every parameter under 100,000 elements "
                             "whole on every rank; 0 partitions them all)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--metrics-json", required=True)
    args = parser.parse_args()
    args.reshard_after_forward = args.reshard_after_forward == "true"
    if args.mode in ("fsdp2", "deepspeed") and torch_major() < 2:
        # FSDP2 is torch 2.x; today's DeepSpeed needs torch 2.x too.
        parser.exit(2, "error: --mode %s needs PyTorch 2.x; %s has torch %s (use the "
                       "virtual environment of scripts/setup-bench.sh)\n"
                    % (args.mode, sys.executable, torch.__version__))
    if args.mode == "fsdp2":
        try:
            import_fully_shard()
        except ImportError as error:
            parser.exit(2, "error: --mode fsdp2: no fully_shard in torch %s: %s\n"
                        % (torch.__version__, error))
    mp.spawn(worker, args=(args, free_port()), nprocs=args.n, join=True)


if __name__ == "__main__":
    main()
