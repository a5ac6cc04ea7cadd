"""zero.nn.Llama, the builder's Llama family, against the Llama written op
by op in examples/llama/llama.py (which test/torch/llama-by-hand.test holds
to Hugging Face's LlamaForCausalLM), and its options
(test/python/llama-builder.test). Rank 0 checks that:
  - from one initial state (the example's, Hugging Face's names), the two
    train 5 AdamW steps to bitwise the same losses and parameters at ZeRO
    stage 3, the rotary tables an input here (zero.nn.rope_tables) and
    frozen parameters there;
  - fused attention (train.attention) trains an untied, grouped-query
    Llama as the separate ops do (losses to 2e-5 relative, under SGD);
  - with activation checkpointing the forward marks what each policy
    recomputes: 'full' every matmul of a layer, 'selective' none,
    'selective_op' (torchtitan's) the second, fourth and sixth of the
    seven; the planned peaks order as the kept activations do;
  - bf16 multiplies in bf16 and normalizes in f32 (Hugging Face's
    LlamaRMSNorm: a cast to f32 before the norm's reduction); its step-1
    loss differs from f32's, by less than 3 %;
  - a bad shape or option raises at the call, naming the layer.
"""

import os
import re
import sys
import tempfile
import types

import numpy as np

import zero

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "llama"))
import llama as example  # noqa: E402

CFG = example.Config()  # vocab 256, dim 64, 2 layers, 4 heads, 2 kv heads
B = 2


def ok(what):
    if zero.rank() == 0:
        print(f"ok: N={zero.world_size()}: {what}", flush=True)


def builder_graph(cfg, batch, precision="f32", **options):
    graph = zero.Graph("llama_builder")
    graph.config.precision(precision)
    ids = graph.input("input_ids", [batch, cfg.seq], "i64")
    cos = graph.input("cos", [batch, cfg.seq, cfg.head_dim], "f32")
    sin = graph.input("sin", [batch, cfg.seq, cfg.head_dim], "f32")
    labels = graph.input("labels", [batch, cfg.seq], "i64")
    model = zero.nn.Llama(graph, layers=cfg.layers, vocab=cfg.vocab,
                          seq=cfg.seq, dim=cfg.dim, heads=cfg.heads,
                          kv_heads=cfg.kv_heads, hidden=cfg.hidden,
                          eps=cfg.eps, **options)
    logits = model.logits(ids, cos, sin)
    # The example's (Hugging Face's) shift: logits[:, :-1] against
    # labels[:, 1:].
    graph.minimize(zero.softmax_cross_entropy(
        zero.narrow(logits, 1, 0, cfg.seq - 1),
        zero.narrow(labels, 1, 1, cfg.seq - 1)))
    return graph, model


def batches(cfg, steps):
    rng = np.random.default_rng(1)
    rows = B * zero.world_size()
    positions = np.tile(np.arange(cfg.seq), (rows, 1))
    cos, sin = zero.nn.rope_tables(positions, cfg.head_dim, cfg.theta)
    for _ in range(steps):
        ids = rng.integers(0, cfg.vocab, (rows, cfg.seq))
        yield ids, cos, sin


def against_example():
    state = example.initial_state(CFG)
    positions = np.arange(CFG.seq)[None, :]
    cos, sin = zero.nn.rope_tables(positions, CFG.head_dim, CFG.theta)
    if not (np.array_equal(cos[0], state["rope.cos"])
            and np.array_equal(sin[0], state["rope.sin"])):
        raise AssertionError("rope_tables differ from the example's tables")
    theirs = example.build(CFG, B)
    ours, _ = builder_graph(CFG, B, tied_embeddings=True)
    results = []
    with tempfile.TemporaryDirectory() as directory:
        for graph, names in ((theirs, ["input_ids", "labels"]),
                             (ours, ["input_ids", "cos", "sin", "labels"])):
            graph.config.optimizer(zero.AdamW(lr=3e-3)).enable_zero(True, 3)
            compiled = graph.compile(zero.world_size())
            # The rotary tables are parameters of the example only.
            init = os.path.join(directory,
                                f"{graph.name}-{zero.rank()}.safetensors")
            example.write_state({k: v for k, v in state.items()
                                 if graph is theirs
                                 or not k.startswith("rope.")}, init)
            trainer = zero.Trainer(compiled, init=init, input_names=names)
            losses = []
            for ids, c, s in batches(CFG, 5):
                inputs = [ids, ids] if len(names) == 2 else [ids, c, s, ids]
                losses.append(trainer.step(inputs))
            results.append((losses, trainer.state_dict()))
    (theirs_losses, theirs_state), (our_losses, our_state) = results
    if theirs_losses != our_losses:
        raise AssertionError(f"losses differ: example {theirs_losses}, "
                             f"builder {our_losses}")
    names = sorted(our_state)
    if names != sorted(k for k in theirs_state if not k.startswith("rope.")):
        raise AssertionError(f"parameter names differ: {names}")
    for name in names:
        if not np.array_equal(our_state[name], theirs_state[name]):
            raise AssertionError(f"{name} differs after 5 steps")
    ok(f"zero.nn.Llama trains as examples/llama/llama.py does: 5 losses "
       f"bitwise, {len(names)} tensors (loss {our_losses[0]:.4f} -> "
       f"{our_losses[-1]:.4f})")


def fused_against_separate():
    cfg = example.Config(layers=2, heads=4, kv_heads=1)
    losses = {}
    for fused in (False, True):
        graph, _ = builder_graph(cfg, B, fused_attention=fused)
        graph.config.optimizer(zero.SGD(lr=0.2)).enable_zero(True, 3)
        compiled = graph.compile(zero.world_size())
        if fused != ("train.attention" in compiled.ir("forward")):
            raise AssertionError(f"fused={fused}: train.attention "
                                 "present or absent wrongly")
        trainer = zero.Trainer(compiled, seed=3,
                               input_names=["input_ids", "cos", "sin",
                                            "labels"])
        losses[fused] = [trainer.step([ids, c, s, ids])
                         for ids, c, s in batches(cfg, 4)]
    if not np.allclose(losses[True], losses[False], rtol=2e-5, atol=0):
        raise AssertionError(f"fused {losses[True]} vs separate "
                             f"{losses[False]}")
    ok(f"fused attention, untied head, 4 heads over 1 kv head: trains as "
       f"the separate ops do ({len(losses[True])} losses)")


def recompute_marks(ir):
    """The forward's matmuls in order, True where marked train.recompute."""
    return [("train.recompute" in line) for line in ir.splitlines()
            if re.search(r"train\.matmul ", line)]


def checkpoint_policies():
    cfg = example.Config(seq=64, layers=6, vocab=32)
    peaks, marks = {}, {}
    for mode in ("none", "selective", "selective_op", "full"):
        graph, _ = builder_graph(cfg, B, checkpoint=mode,
                                 fused_attention=True)
        graph.config.optimizer(zero.SGD(lr=0.1)).enable_zero(True, 3)
        graph.config.activation_checkpointing(mode != "none")
        compiled = graph.compile(zero.world_size())
        marks[mode] = recompute_marks(compiled.ir("forward"))
        peaks[mode] = compiled.report["peak_transient"]
    layer = 7  # q, k, v, o, gate, up, down; the LM head's after them
    expected = {"none": [False] * layer, "selective": [False] * layer,
                "full": [True] * layer,
                "selective_op": [False, True] * 3 + [False]}
    for mode, want in expected.items():
        got = marks[mode]
        if got != want * cfg.layers + [False]:
            raise AssertionError(f"checkpoint={mode!r}: matmuls marked "
                                 f"{got}, expected {want} a layer")
    order = ["full", "selective_op", "selective", "none"]
    if [peaks[m] for m in order] != sorted(peaks[m] for m in order) or \
            len(set(peaks.values())) != 4:
        raise AssertionError(f"peaks do not order as the kept activations "
                             f"do: {peaks}")
    ok("checkpoint 'full', 'selective_op', 'selective', 'none': matmuls "
       "marked as each policy says; planned peaks " +
       " < ".join(f"{peaks[m]} B" for m in order))


def bf16():
    losses = {}
    for precision in ("f32", "bf16"):
        graph, _ = builder_graph(CFG, B, precision=precision)
        graph.config.optimizer(zero.SGD(lr=0.1)).enable_zero(True, 3)
        compiled = graph.compile(zero.world_size())
        forward = compiled.ir("forward")
        if precision == "bf16" and not (
                re.search(r"train\.reduce_mean .*tensor<[0-9x]+xf32>",
                          forward)
                and re.search(r"train\.matmul .*xbf16>", forward)):
            raise AssertionError("bf16: matmuls not in bf16, or RMSNorm "
                                 "not reducing in f32")
        trainer = zero.Trainer(compiled, seed=3,
                               input_names=["input_ids", "cos", "sin",
                                            "labels"])
        losses[precision] = [trainer.step([ids, c, s, ids])
                             for ids, c, s in batches(CFG, 2)]
    first = losses["bf16"][0] / losses["f32"][0] - 1
    if abs(first) > 0.03 or losses["bf16"] == losses["f32"]:
        raise AssertionError(f"bf16 step 1 loss {losses['bf16'][0]} vs f32 "
                             f"{losses['f32'][0]}")
    ok(f"bf16 matmuls, RMSNorm in f32: step 1's loss {abs(first):.1e} "
       "from f32's")


def errors():
    def expect(call, *words):
        try:
            call()
        except (ValueError, TypeError) as error:
            if all(word in str(error) for word in words):
                return
            raise AssertionError(f"message lacks {words}: {error}")
        raise AssertionError(f"no error for {words}")

    # 4 query heads do not group over 3 key/value heads (example.Config
    # refuses it itself).
    three = types.SimpleNamespace(**dict(vars(CFG), kv_heads=3))
    expect(lambda: builder_graph(three, B), "model.layers.0.self_attn",
           "kv_heads dividing heads")
    graph = zero.Graph("bad_tables")
    ids = graph.input("ids", [B, CFG.seq], "i64")
    table = graph.input("cos", [B, CFG.seq, CFG.head_dim + 2], "f32")
    model = zero.nn.Llama(graph, layers=1, vocab=CFG.vocab, seq=CFG.seq,
                          dim=CFG.dim, heads=CFG.heads, kv_heads=2)
    expect(lambda: model.logits(ids, table, table), "rotary tables",
           f"[batch, seq, {CFG.head_dim}]")
    expect(lambda: zero.nn.Llama(zero.Graph("g"), checkpoint="most"),
           "'selective_op'", "'most'")
    expect(lambda: zero.nn.rope_tables(np.zeros((4,)), 16), "[batch, seq]")
    ok("bad kv_heads, rotary tables, checkpoint mode and positions raise, "
       "naming the layer or argument")


def main():
    against_example()
    fused_against_separate()
    checkpoint_policies()
    bf16()
    errors()


if __name__ == "__main__":
    main()
