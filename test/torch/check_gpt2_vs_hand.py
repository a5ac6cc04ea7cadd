"""An imported GPT-2 against our hand-built one (test/torch/gpt2-vs-hand.test).

  check_gpt2_vs_hand.py STEPS STAGE

Hugging Face's GPT2LMHeadModel, imported with zero.from_torch and trained
with its logits' cross-entropy against given targets, and zero.nn.GPT2 of
the same shape started from the same weights (c_attn split into q, k and v;
lm_head is wte in both), trained at STAGE on this job's ranks on the same
batches. Checked on rank 0, one `ok:` line each:

- the forward programs hold the same ops, up to names, reshapes (views) and
  parameter loads, except for what the two models are: Hugging Face's
  GPT-2 projects query, key and value with one fused matmul and splits it
  with three slices (ours: three matmuls and bias adds), and its position
  ids are a constant folded at import, so wpe is expanded over the batch
  (ours takes positions as an input: an embedding lookup);
- the report's model state, peak gathered bytes and every collective's
  count and bytes are equal;
- every step's loss is equal to 1e-6 relative.
"""

import collections
import re
import sys
import tempfile

import numpy as np
import torch
from safetensors.numpy import save_file

import zero

BATCH, SEQ, VOCAB, DIM, HEADS, LAYERS = 2, 16, 256, 64, 4, 2


def ok(what):
    if zero.rank() == 0:
        print("ok:", what, flush=True)


def fail(what):
    raise SystemExit(f"FAIL: {what}")


def hugging_face_gpt2(layers=LAYERS, dim=DIM, heads=HEADS, vocab=VOCAB,
                      seq=SEQ):
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    return GPT2LMHeadModel(
        GPT2Config(n_embd=dim, n_layer=layers, n_head=heads, vocab_size=vocab,
                   n_positions=seq, resid_pdrop=0.0, embd_pdrop=0.0,
                   attn_pdrop=0.0, bos_token_id=0, eos_token_id=0))


def next_token_loss(output, targets):
    logits = output.logits
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def hand_weights(module):
    """The module's weights under zero.nn.GPT2's names."""
    config = module.config
    dim = config.n_embd
    state = {name: value.detach().numpy().copy()
             for name, value in module.state_dict().items()}
    ours = {"wte": state["transformer.wte.weight"],
            "wpe": state["transformer.wpe.weight"],
            "ln_f.g": state["transformer.ln_f.weight"],
            "ln_f.b": state["transformer.ln_f.bias"]}
    for i in range(config.n_layer):
        theirs = f"transformer.h.{i}."
        for norm in ("ln_1", "ln_2"):
            ours[f"h{i}.{norm}.g"] = state[f"{theirs}{norm}.weight"]
            ours[f"h{i}.{norm}.b"] = state[f"{theirs}{norm}.bias"]
        fused_w = state[f"{theirs}attn.c_attn.weight"]
        fused_b = state[f"{theirs}attn.c_attn.bias"]
        for j, part in enumerate("qkv"):
            columns = slice(j * dim, (j + 1) * dim)
            ours[f"h{i}.attn.{part}.w"] = np.ascontiguousarray(
                fused_w[:, columns])
            ours[f"h{i}.attn.{part}.b"] = fused_b[columns].copy()
        for ours_name, their_name in (("attn.proj", "attn.c_proj"),
                                      ("mlp.fc", "mlp.c_fc"),
                                      ("mlp.proj", "mlp.c_proj")):
            ours[f"h{i}.{ours_name}.w"] = state[f"{theirs}{their_name}.weight"]
            ours[f"h{i}.{ours_name}.b"] = state[f"{theirs}{their_name}.bias"]
    return ours


def configure(graph, stage):
    graph.config.optimizer(zero.AdamW(lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                      weight_decay=0.01))
    graph.config.enable_zero(stage > 0, stage)


def build_pair(module, batch, stage, ranks):
    """(imported graph, its compiled program, hand-built graph, its
    compiled program) for `module` with `batch` sequences per rank."""
    config = module.config
    seq = config.n_positions
    example = torch.zeros(batch, seq, dtype=torch.int32)
    # Two distinct example tensors: the ids and the targets.
    imported = zero.from_torch(module, (example,), loss=next_token_loss,
                               example_targets=(example.clone(),))
    configure(imported, stage)
    imported_compiled = imported.compile(ranks)

    hand = zero.Graph("gpt2")
    tokens = hand.input("tokens", [batch, seq], "i32")
    positions = hand.input("positions", [batch, seq], "i32")
    targets = hand.input("targets", [batch, seq], "i32")
    configure(hand, stage)
    model = zero.nn.GPT2(hand, config.n_layer, config.vocab_size, seq,
                         config.n_embd, config.n_head)
    # The user's cross_entropy ignores -100 (its default), so the imported
    # loss counts the labels it keeps; the hand-built one does the same.
    hand.minimize(zero.softmax_cross_entropy(
        model.logits(tokens, positions), targets, ignore_index=-100))
    return imported, imported_compiled, hand, hand.compile(ranks)


def op_counts(compiled):
    """Ops of the forward program, reshapes and parameter loads left out."""
    ops = re.findall(r"= (train\.[a-z_]+)", compiled.ir("forward"))
    return collections.Counter(
        op for op in ops if op not in ("train.reshape", "train.load"))


def main():
    steps, stage = int(sys.argv[1]), int(sys.argv[2])
    ranks = zero.world_size()
    module = hugging_face_gpt2()
    imported, imported_compiled, hand, hand_compiled = build_pair(
        module, BATCH, stage, ranks)

    theirs, ours = op_counts(imported_compiled), op_counts(hand_compiled)
    expected_extra = collections.Counter(
        {"train.slice": 3 * LAYERS, "train.expand": 1})
    expected_missing = collections.Counter(
        {"train.matmul": 2 * LAYERS, "train.bias_add": 2 * LAYERS,
         "train.embedding": 1})
    if theirs - ours != expected_extra or ours - theirs != expected_missing:
        fail(f"forward ops differ beyond the fused QKV and the constant "
             f"positions: imported has {dict(theirs - ours)} more and "
             f"{dict(ours - theirs)} fewer")
    ok(f"forward: the same {sum((theirs & ours).values())} ops, up to the "
       f"fused QKV ({3 * LAYERS} slices for {2 * LAYERS} matmuls and bias "
       f"adds) and the constant positions")

    reports = imported_compiled.report, hand_compiled.report
    for key in ("parameters", "gradients", "optimizer_slots", "model_state",
                "persistent", "peak_gathered", "traffic"):
        if reports[0][key] != reports[1][key]:
            fail(f"report '{key}': imported {reports[0][key]}, hand-built "
                 f"{reports[1][key]}")
    ok(f"stage {stage} N={ranks}: model state, peak gathered bytes and "
       f"traffic equal the hand-built report's")

    with tempfile.TemporaryDirectory() as tmp:
        init = f"{tmp}/hand.safetensors"
        save_file(hand_weights(module), init)
        imported_trainer = imported.trainer(imported_compiled)
        hand_trainer = zero.Trainer(
            hand_compiled, init=init,
            input_names=["tokens", "positions", "targets"])
        rng = np.random.default_rng(7)
        worst = 0.0
        for step in range(steps):
            ids = rng.integers(0, VOCAB, size=(ranks * BATCH, SEQ + 1),
                               dtype=np.int32)
            inputs = np.ascontiguousarray(ids[:, :SEQ])
            labels = np.ascontiguousarray(ids[:, 1:])
            position_ids = np.tile(np.arange(SEQ, dtype=np.int32),
                                   (ranks * BATCH, 1))
            a = imported_trainer.step([inputs, labels])
            b = hand_trainer.step([inputs, position_ids, labels])
            error = abs(a - b) / abs(b)
            worst = max(worst, error)
            if error > 1e-6:
                fail(f"step {step}: imported loss {a!r}, hand-built {b!r}")
    ok(f"stage {stage} N={ranks}: {steps} losses equal to 1e-6 "
       f"(largest difference {worst:.1e})")


if __name__ == "__main__":
    main()
