#!/usr/bin/env python3
"""Plans published FSDP (ZeRO-3) training runs and sets the predicted
throughput beside the published one (issue 46).

Each run is built with zero.nn.GPT2 at the run's shapes, bf16, with fused
attention (FlashAttention-class, as the runs use), ZeRO stage 3 sharded over
every GPU (FSDP's FULL_SHARD: `mesh_scheme="full"` across nodes), the run's
micro-batch, accumulation and activation checkpointing, and compiled for
the run's GPU count on a machine preset: nothing is allocated, nothing runs.
From the report of the predicted step it takes tokens/s per GPU (the
report's own line; the tokens it counts a step are checked against the
run's), and sets MFU by the source's own formula beside the report's MFU
(the step's matmul and attention FLOPs, each op once and causal attention's
half of the score matrix, over the datasheet peak), and the peak device
memory against the card's.

The runs (MosaicML llm-foundry, scripts/train/benchmarking/README.md, the
"A100 80GB" and "A100 40GB with 1600 Gbps node-node interconnect (RoCE)"
tables):

  MPT-7B    32 x 4096, 8 A100-SXM 80 GB, micro-batch 6, accumulation 2,
            no activation checkpointing, amp_bf16 with Composer's DEFAULT
            mixed precision (gradients reduced in f32): 4,641 tok/s/GPU
  MPT-13B   40 x 5120, 16/32/64/128 A100 40 GB, 200 Gb/s RoCE a GPU,
            micro-batch 10/14/16/16, full checkpointing, pure bf16
            (Composer's PURE: gradients reduced in bf16):
            1,993 / 1,998 / 1,976 / 1,972 tok/s/GPU

The Llama 3.1 8B runs (torchtitan) reduce gradients in f32, torchtitan's
default mixed_precision_reduce. A run that reduces in f32 is planned with
config.zero.reduce_dtype = "f32".

Calibration: one constant, the A100's achieved bf16 matmul rate, is fitted
to MPT-7B (`--fit`: bisection on that rate, every other constant as the
preset states it), and the A100 presets carry the fitted value. MPT-13B is
not fitted: it checks the fit, on another model size, GPU memory, network,
precision and checkpointing choice. The script fails when a run's
prediction is further from the published figure than its bound (RUNS:
1 % for the fitted runs and Llama 3.1 8B on 128 GPUs, 3 % for MPT-13B),
when its planned peak does not fit the card the run used, or when the
Llama 3.1 8B series' 128-GPU throughput relative to its 8-GPU one is more
than 1 % from the published ratio (-2.72 %: a model without communication
costs fails it). MPT-13B's scaling is printed, not held (SCALING_BOUNDS
says why).

What differs from the runs, and is stated rather than hidden:
  - MPT uses ALiBi and no biases; zero.nn.GPT2 has learned positions and
    biases (0.01 % more parameters, 4096 more FLOPs per token and layer).
    The biases would let the compiler fuse them, and the GELU after them,
    into the matmuls (fuse-epilogues), which MPT's step, without biases,
    cannot: MPT runs are planned with config.zero.fuse_epilogues = False.
  - Both take the loss on an f32 copy of the bf16 logits (torchtitan's
    `pred.float()`, autocast's f32 cross-entropy in llm-foundry), which
    fuse-epilogues would fold away (train-fuse-loss-cast): every run is
    planned with it off. The Llama models have no biases, so nothing else
    of theirs would fuse.
  - Under amp_bf16 FSDP keeps the sharded parameters in f32 and casts
    them to bf16 for each gather; the plan keeps a bf16 shard and an f32
    master shard (2 bytes a parameter more, and no cast in the step).

    python3 bench/published_runs.py [--markdown] [--fit] [--runs NAME,...]
"""

import argparse
import json
import os
import re
import sys
import tempfile
import time

import benchlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The build tree's package, unless PYTHONPATH says where (lit does).
if "PYTHONPATH" not in os.environ:
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))

import zero  # noqa: E402

A100_BF16_PEAK = 312e12  # dense tensor-core peak, llm-foundry's constant
H100_BF16_PEAK = 989e12  # dense tensor-core peak, torchtitan's for an H100


class Run:
    """One published run: the model's shapes, the cluster and the setup."""

    # Whether the plan fuses linear layers' epilogues and folds the loss's
    # f32 cast (fuse-epilogues): off, as the published steps keep the cast
    # (the module's docstring).
    fuse_epilogues = False

    def __init__(self, name, layers, dim, heads, gpus, micro, accum,
                 checkpoint, machine, published, source, vocab=50368,
                 seq=2048, memory=None, reduce="f32", bound=0.01):
        self.name, self.layers, self.dim, self.heads = name, layers, dim, heads
        # The published memory a GPU, GiB (torchtitan's: the caching
        # allocator's peak reserved), where the source states one.
        self.memory = memory
        self.gpus, self.micro, self.accum = gpus, micro, accum
        self.checkpoint, self.machine = checkpoint, machine
        self.published, self.source = published, source
        self.vocab, self.seq = vocab, seq
        # The type FSDP reduces gradients in: f32 under mixed precision
        # (Composer's DEFAULT, torchtitan's mixed_precision_reduce), bf16
        # under Composer's PURE.
        self.reduce = reduce
        # How far the prediction may be from the published figure, relative
        # (RUNS states why each).
        self.bound = bound

    def tokens_per_gpu(self):
        return self.micro * self.accum * self.seq

    def declare(self, graph):
        """Declares the inputs and the model; returns the loss."""
        raise NotImplementedError


class MptRun(Run):
    """An MPT run, as zero.nn.GPT2 (see the module's docstring)."""

    family = "MPT"
    # The stand-in's biases are not MPT's: no epilogue fusion through them
    # either (Run.fuse_epilogues).
    peak = A100_BF16_PEAK

    def parameters(self):
        """zero.nn.GPT2's parameter count (tied head, learned positions,
        biases)."""
        d = self.dim
        per_layer = 12 * d * d + 13 * d
        return self.vocab * d + self.seq * d + self.layers * per_layer + 2 * d

    def mfu(self, tokens_per_second_per_gpu):
        """llm-foundry's MFU: 3 (forward, backward, weight gradient) x
        (2 N FLOPs a token + the attention's 4 L d seq^2 a sequence)."""
        flops_per_seq = 2 * self.parameters() * self.seq
        attention_per_seq = self.layers * 2 * 2 * self.dim * self.seq ** 2
        seqs = tokens_per_second_per_gpu / self.seq
        return 3 * (flops_per_seq + attention_per_seq) * seqs / self.peak

    def declare(self, graph):
        shape = [self.micro, self.seq]
        inputs = [graph.input(name, shape, "i32")
                  for name in ("tokens", "positions", "targets")]
        model = zero.nn.GPT2(graph, layers=self.layers, vocab=self.vocab,
                             seq=self.seq, dim=self.dim, heads=self.heads,
                             checkpoint=self.checkpoint, fused_attention=True)
        return model.loss(*inputs)


class LlamaRun(Run):
    """A Llama run, as zero.nn.Llama (untied head, the rotary tables
    inputs of the step)."""

    family = "Llama"
    peak = H100_BF16_PEAK

    def __init__(self, *args, kv_heads, hidden, **kwargs):
        super().__init__(*args, **kwargs)
        self.kv_heads, self.hidden = kv_heads, hidden

    def parameters(self, embedding=True):
        d, head_dim = self.dim, self.dim // self.heads
        attention = 2 * d * d + 2 * d * self.kv_heads * head_dim
        per_layer = attention + 3 * d * self.hidden + 2 * d
        table = self.vocab * d
        return (table if embedding else 0) + self.layers * per_layer + d + \
            table

    def mfu(self, tokens_per_second_per_gpu):
        """torchtitan's MFU: 6 N + 12 L H Q T FLOPs a token, N the
        parameters without the embedding table, Q the head width, T the
        sequence, against the H100's 989 TFLOP/s."""
        head_dim = self.dim // self.heads
        per_token = 6 * self.parameters(embedding=False) + \
            12 * self.layers * self.heads * head_dim * self.seq
        return per_token * tokens_per_second_per_gpu / self.peak

    def declare(self, graph):
        shape = [self.micro, self.seq]
        head_dim = self.dim // self.heads
        tokens = graph.input("tokens", shape, "i32")
        cos = graph.input("cos", shape + [head_dim], "f32")
        sin = graph.input("sin", shape + [head_dim], "f32")
        targets = graph.input("targets", shape, "i32")
        model = zero.nn.Llama(graph, layers=self.layers, vocab=self.vocab,
                              seq=self.seq, dim=self.dim, heads=self.heads,
                              kv_heads=self.kv_heads, hidden=self.hidden,
                              eps=1e-5, checkpoint=self.checkpoint,
                              fused_attention=True)
        return model.loss(tokens, cos, sin, targets)


# The bounds. A fitted run (FITTED) is its published figure by
# construction: 1 %. MPT-13B is 1.0-2.2 % over its figures (the fit to an
# amp_bf16 run carries autocast's costs into pure-bf16 runs,
# docs/benchmarks.md): 3 %. Llama 3.1 8B on 128 GPUs, unfitted, is within
# 0.1 %: 1 %, under its -2.72 % scaling effect. A ring share of 1/N for
# (N-1)/N fails both (docs/benchmarks.md).
LLM_FOUNDRY = "llm-foundry scripts/train/benchmarking/README.md"
TORCHTITAN = "torchtitan benchmarks/llama3_h100_202412_torchtitan.md"
RUNS = [
    MptRun("MPT-7B", 32, 4096, 32, 8, 6, 2, "none", "a100-80gb-nvlink-8",
           4641, LLM_FOUNDRY + ", A100 80GB, 7b 2048 x 8"),
] + [
    MptRun(f"MPT-13B x {gpus}", 40, 5120, 40, gpus, micro, 1, "full",
           "a100-40gb-nodes-roce200", published,
           LLM_FOUNDRY + f", A100 40GB RoCE, 13b 2048 x {gpus}",
           reduce="gradient", bound=0.03)
    for gpus, micro, published in ((16, 10, 1993), (32, 14, 1998),
                                   (64, 16, 1976), (128, 16, 1972))
] + [
    LlamaRun(f"Llama 3.1 8B x {gpus}", 32, 4096, 32, gpus, 2, 1,
             "selective_op", machine, published,
             TORCHTITAN + f", Table {table}, FSDP", vocab=128256, seq=8192,
             kv_heads=8, hidden=14336, memory=memory)
    for gpus, machine, published, memory, table in (
        (8, "h100-96gb-nvlink-8", 5762, 82.4, 1),
        (128, "h100-96gb-nodes-ib400", 5605, 67.0, 3))
]
# The runs a preset's matmul rate is fitted to (--fit), one per GPU type.
FITTED = ("MPT-7B", "Llama 3.1 8B x 8")


# Each series' scaling bound, tighter than its published effect. Llama 3.1
# 8B loses 2.72 % from 8 to 128 GPUs (the inter-node links): held to 1 %.
# MPT-13B's published series is not monotone (+0.25 % from 16 to 32 GPUs,
# then -1.1 % to 64) and loses 1.05 % from 16 to 128, an effect the size of
# its own noise; the plan predicts +0.1 % (its bf16 reduce-scatters and
# gathers hide behind full recomputation on every link it has). No bound
# under 1.05 % that the series' noise does not break exists, so it is
# printed, not checked: the communication model is held by Llama's series
# and by the unfitted runs' bounds.
SCALING_BOUNDS = {"MPT-13B": None, "Llama 3.1 8B": 0.01}


def plan(run, machine):
    """Compiles `run` for its GPUs on `machine` (a preset or a JSON file);
    returns the report's tokens/s a GPU, its MFU (None on a machine without
    a datasheet peak), the predicted peak device bytes, the card's GiB, and
    the compile's wall time."""
    start = time.perf_counter()
    graph = zero.Graph(run.family.lower())
    graph.config.precision("bf16")
    graph.minimize(run.declare(graph))
    graph.config.optimizer(zero.AdamW(lr=1e-4)).enable_zero(True, 3)
    graph.config.activation_checkpointing(run.checkpoint != "none")
    if run.accum > 1:
        graph.config.gradient_accumulation_steps(run.accum)
    if run.gpus > 8:
        graph.config.mesh(run.gpus // 8, 8)
        graph.config.zero.mesh_scheme = "full"
    graph.config.zero.machine = machine
    graph.config.zero.reduce_dtype = run.reduce
    graph.config.zero.fuse_epilogues = run.fuse_epilogues
    text = graph.compile(run.gpus).report_text()
    step = re.search(r"^  step time +([0-9.]+) ms", text, re.M)
    peak = re.search(r"^  peak device memory +([0-9]+) B", text, re.M)
    card = re.search(r"^  device memory +([0-9.]+) GiB", text, re.M)
    tokens = re.search(r"^  tokens / s +([0-9.]+) a device +\(([0-9]+) a "
                       r"step", text, re.M)
    mfu = re.search(r"^  MFU +([0-9.]+) %", text, re.M)
    if not (step and peak and card and tokens):
        raise SystemExit(f"{run.name}: the report has no predicted step:\n"
                         f"{text[-2000:]}")
    if "the peak fits" not in text:
        raise SystemExit(f"published_runs: {run.name}: the plan's peak device "
                         f"memory ({peak.group(1)} B) does not fit the "
                         f"{card.group(1)} GiB card the run used")
    # The report counts the step's tokens itself (its largest integer
    # input): they must be the run's.
    if int(tokens.group(2)) != run.tokens_per_gpu():
        raise SystemExit(f"published_runs: {run.name}: the report counts "
                         f"{tokens.group(2)} tokens a step on a GPU, the run "
                         f"{run.tokens_per_gpu()}")
    return (float(tokens.group(1)),
            float(mfu.group(1)) / 100 if mfu else None, int(peak.group(1)),
            float(card.group(1)), time.perf_counter() - start)


def throughput(run, machine):
    return plan(run, machine)[0]


def fit(run, low=0.3, high=1.0):
    """The bf16 matmul rate (as a fraction of the GPU's dense peak) at which
    `run`'s predicted throughput is its published one, every other constant
    of its machine as the preset states it."""
    base = zero.machine(run.machine)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "machine.json")

        def predicted(fraction):
            machine = json.loads(json.dumps(base))
            rate = fraction * run.peak
            machine["matmul_flops"]["bf16"] = rate
            machine["matmul_flops"]["f16"] = rate
            with open(path, "w") as file:
                json.dump(machine, file)
            return throughput(run, path)

        for _ in range(30):
            middle = (low + high) / 2
            if predicted(middle) < run.published:
                low = middle
            else:
                high = middle
        return (low + high) / 2


def scaling(name, series, low, high, problems, bound=None, memory=False):
    """Checks a series' throughput at `high` GPUs relative to `low` against
    the published ratio: within `bound` (an absolute difference of the two
    ratios), which must be tighter than the published effect, so that a
    model without communication costs (a ratio of 1) fails; None where the
    series cannot be held so (printed, not checked). With `memory`, prints
    the drop in memory a GPU beside the published drop."""
    if low not in series or high not in series:
        return
    (ours_low, theirs_low, run_low, peak_low) = series[low]
    (ours_high, theirs_high, run_high, peak_high) = series[high]
    ours, theirs = ours_high / ours_low, theirs_high / theirs_low
    print(f"{name} {high} vs {low} GPUs: predicted {ours - 1:+.2%}, "
          f"published {theirs - 1:+.2%}")
    if bound is not None:
        assert bound < abs(theirs - 1), "a bound wider than the effect"
        if abs(ours - theirs) > bound:
            problems.append(f"{name} scaling: {high} vs {low} GPUs predicted "
                            f"{ours - 1:+.2%}, published {theirs - 1:+.2%} "
                            f"(bound {bound:.1%})")
    else:
        print(f"{name} scaling: not checked (see SCALING_BOUNDS)")
    if memory:
        # Stated, not held: the published figure is the caching
        # allocator's peak reserve, ours the plan's peak in use.
        drop = (peak_low - peak_high) / 2**30
        published = run_low.memory - run_high.memory
        print(f"{name} memory a GPU, {low} minus {high} GPUs: predicted "
              f"{drop:.1f} GiB, published {published:.1f} GiB")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--fit", action="store_true",
                        help="fit the A100 bf16 matmul rate to MPT-7B and "
                             "print it, instead of the table")
    parser.add_argument("--runs", default="",
                        help="comma-separated run names (default: all)")
    args = parser.parse_args()
    if args.fit:
        for run in RUNS:
            if run.name in FITTED:
                fraction = fit(run)
                print(f"{run.machine} bf16 matmul rate fitted to {run.name}: "
                      f"{fraction * run.peak / 1e12:.1f} TFLOP/s "
                      f"({fraction * 100:.1f} % of the "
                      f"{run.peak / 1e12:.0f} TFLOP/s peak)")
        return
    wanted = set(filter(None, args.runs.split(",")))
    rows, problems, series = [], [], {}
    for run in RUNS:
        if wanted and run.name not in wanted:
            continue
        tokens, report_mfu, peak, card, wall = plan(run, run.machine)
        error = tokens / run.published - 1
        if abs(error) > run.bound:
            problems.append(f"{run.name}: predicted {tokens:.0f} tok/s/GPU, "
                            f"published {run.published} ({error:+.1%}, "
                            f"bound {run.bound:.0%})")
        series.setdefault(run.name.split(" x ")[0], {})[run.gpus] = (
            tokens, run.published, run, peak)
        rows.append([
            run.name, run.machine, str(run.gpus),
            f"{run.micro} x {run.accum}",
            run.checkpoint,
            f"{tokens:,.0f}", f"{run.published:,}", f"{error:+.1%}",
            f"{run.mfu(tokens):.1%}", f"{run.mfu(run.published):.1%}",
            "" if report_mfu is None else f"{report_mfu:.1%}",
            f"{peak / 2**30:.1f} of {card:.0f}",
            "" if run.memory is None else f"{run.memory}", f"{wall:.1f}",
        ])
        print(f"published_runs: {run.name}: {tokens:.1f} tok/s/GPU, peak "
              f"{peak} B, planned in {wall:.2f} s", file=sys.stderr)
    header = ["run", "machine", "GPUs", "micro x accum", "checkpointing",
              "predicted tok/s/GPU", "published", "error", "predicted MFU",
              "published MFU", "report's MFU", "peak GiB / GPU", "published GiB", "plan s"]
    print(benchlib.table(header, rows, args.markdown))
    for name, (low, high) in (("MPT-13B", (16, 128)),
                              ("Llama 3.1 8B", (8, 128))):
        scaling(name, series.get(name, {}), low, high, problems,
                SCALING_BOUNDS[name], memory=name.startswith("Llama"))
    if problems:
        raise SystemExit("published_runs: " + "; ".join(problems))


if __name__ == "__main__":
    main()
