"""zero.from_torch's activation checkpointing (import-checkpoint.test).

A small Hugging Face Llama (4 layers, 128 positions) is imported:

- with Hugging Face's own gradient checkpointing on
  (gradient_checkpointing_enable()), and checkpoint left to the module:
  every op of each decoder layer but its output is marked for
  recomputation (every matmul of the layers; the LM head is not), the
  planned peak drops, and it trains bitwise as the import without
  checkpointing at stages 0 and 3 (recomputing gives the same values);
- in eval mode (train=False) the flag marks nothing, as Hugging Face
  checkpoints only in training; checkpoint="none" overrides it;
- checkpoint="selective_op" marks every other matmul of a layer (the
  first kept), "selective" none of them, and the planned peaks order as
  the kept activations do: full < selective_op < selective < none;
- a module without Hugging Face layers checkpoints the elements of its
  nn.ModuleList (the op computing a block's output kept); one without
  blocks, and a bad mode, are refused.
"""

import copy

import torch
import transformers

import zero

SEQ, LAYERS = 128, 4


def build():
    config = transformers.LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128,
        num_hidden_layers=LAYERS, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=SEQ)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config)


def ids():
    generator = torch.Generator().manual_seed(1)
    return torch.randint(0, 256, (2 * zero.world_size(), SEQ),
                         generator=generator)


def matmul_marks(compiled):
    return [("train.recompute" in line)
            for line in compiled.ir("forward").splitlines()
            if "train.matmul " in line]


def compile_import(model, stage=0, **options):
    graph = zero.from_torch(model, (ids()[:2],), **options)
    graph.config.optimizer(zero.AdamW(lr=1e-3)).enable_zero(stage > 0, stage)
    return graph, graph.compile(zero.world_size())


def train(graph, compiled):
    trainer = graph.trainer(compiled)
    batch = ids().numpy()
    losses = [trainer.step([batch, batch]) for _ in range(3)]
    return losses, trainer.state_dict()


def ok(what):
    if zero.rank() == 0:
        print(f"ok: {what}", flush=True)


def main():
    torch.set_num_threads(1)
    model = build()
    flagged = copy.deepcopy(model)
    flagged.gradient_checkpointing_enable()
    peaks = {}
    for stage in (0, 3):
        plain, plain_compiled = compile_import(model, stage)
        marked, marked_compiled = compile_import(flagged, stage)
        marks = matmul_marks(marked_compiled)
        per_layer = (len(marks) - 1) // LAYERS
        if marks != [True] * (per_layer * LAYERS) + [False] \
                or any(matmul_marks(plain_compiled)):
            raise AssertionError(f"stage {stage}: Hugging Face's flag marks "
                                 f"{marks}")
        peaks[stage] = (plain_compiled.report["peak_transient"],
                        marked_compiled.report["peak_transient"])
        if not peaks[stage][1] < peaks[stage][0]:
            raise AssertionError(f"stage {stage}: peak {peaks[stage]}")
        ours, theirs = train(marked, marked_compiled), train(plain,
                                                           plain_compiled)
        if ours[0] != theirs[0] or any(
                ours[1][n].tobytes() != theirs[1][n].tobytes()
                for n in ours[1]):
            raise AssertionError(f"stage {stage}: checkpointed training "
                                 "differs from the plain one")
        ok(f"stage {stage}: gradient_checkpointing_enable() marks the "
           f"{per_layer} matmuls of each of {LAYERS} layers, peak "
           f"{peaks[stage][1]} B against {peaks[stage][0]} B, trains "
           f"bitwise as without")
    for what, options in (("train=False", {"train": False}),
                          ("checkpoint='none'", {"checkpoint": "none"})):
        _, compiled = compile_import(flagged, **options)
        if any(matmul_marks(compiled)):
            raise AssertionError(f"{what}: matmuls marked")
        ok(f"{what}: Hugging Face's flag marks nothing")

    order = ["full", "selective_op", "selective", "none"]
    policy_peaks = {}
    for mode in order:
        _, compiled = compile_import(model, checkpoint=mode)
        marks = matmul_marks(compiled)
        layer = marks[:per_layer]
        expected = {"full": [True] * per_layer,
                    "selective_op": [i % 2 == 1 for i in range(per_layer)],
                    "selective": [False] * per_layer,
                    "none": [False] * per_layer}[mode]
        if marks != expected * LAYERS + [False]:
            raise AssertionError(f"checkpoint={mode!r}: marks {layer}")
        policy_peaks[mode] = compiled.report["peak_transient"]
    values = [policy_peaks[m] for m in order]
    if values != sorted(values) or len(set(values)) != len(values):
        raise AssertionError(f"peaks do not order: {policy_peaks}")
    ok("checkpoint 'full', 'selective_op', 'selective', 'none': matmuls "
       "marked as each policy says; planned peaks " +
       " < ".join(f"{policy_peaks[m]} B" for m in order))

    class Blocks(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.h = torch.nn.ModuleList(
                torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(),
                                    torch.nn.Linear(8, 8))
                for _ in range(2))

        def forward(self, x):
            for block in self.h:
                x = x + block(x)
            return x

    graph = zero.from_torch(Blocks(), (torch.randn(2, 8),),
                            loss=lambda out: out.square().mean(),
                            checkpoint="full")
    compiled = graph.compile(zero.world_size())
    # Each block's second Linear computes its output, which is kept.
    if matmul_marks(compiled) != [True, False] * 2:
        raise AssertionError(f"ModuleList blocks: {matmul_marks(compiled)}")
    ok("a module's nn.ModuleList elements are its blocks: each block's "
       "first Linear marked, the one computing its output kept")
    for what, module, options, needle in (
            ("no blocks", torch.nn.Linear(8, 8), {"checkpoint": "full"},
             "has no blocks to checkpoint"),
            ("a bad mode", Blocks(), {"checkpoint": "most"},
             "checkpoint must be None or one of")):
        try:
            zero.from_torch(module, (torch.randn(2, 8),),
                            loss=lambda out: out.mean(), **options)
        except (ValueError, zero.torch.UnsupportedModuleError) as error:
            if needle not in str(error):
                raise
            ok(f"refused {what}: {error}")
        else:
            raise AssertionError(f"{what}: not refused")


if __name__ == "__main__":
    main()
