"""Torch tensors at the seam (torch-tensors.test): a PyTorch user's batches,
prompts and state_dicts go in as they are.

A tiny Hugging Face GPT-2 (tied head, an attention mask) imported with
zero.from_torch, trained at stage STAGE on every rank of the job:

- `step`, `evaluate` and `generate` take CPU torch tensors, and a
  tokenizer's BatchEncoding (built here as a tokenizer returns it with
  return_tensors="pt", plus the labels a data collator adds): two trainers
  of one compiled graph, one fed numpy arrays and one fed the same values
  as torch tensors (a non-contiguous view among them), give bitwise the
  same losses, outputs, state and tokens;
- `load_state_dict(module.state_dict())`: the module's own names, torch
  tensors, both tied names or only one, into a trainer that has trained
  gives back bitwise the state of a fresh trainer of that module;
- what cannot be taken is refused by name: a tensor on another device,
  Python lists, a BatchEncoding missing the labels or with an input the
  graph was imported without, tied names that disagree, a missing
  parameter, a changed buffer.

Prints `ok: ...` per check; exits 1 at the first failed one.
"""

import argparse
import sys

import numpy as np
import torch
from transformers import BatchEncoding, GPT2Config, GPT2LMHeadModel

import zero

VOCAB, SEQ = 32, 8


def ok(what):
    if zero.rank() == 0:
        print(f"ok: {what}", flush=True)


def fail(what):
    print(f"FAIL (rank {zero.rank()}): {what}", flush=True)
    sys.exit(1)


def refused(call, kind, *words):
    """That `call()` raises `kind` with every one of `words` in its
    message."""
    try:
        call()
    except kind as error:
        message = str(error)
        if all(word in message for word in words):
            return message
        fail(f"the message lacks {words}: {message}")
    fail(f"accepted; expected {kind.__name__} naming {words}")


def same_state(a, b):
    return sorted(a) == sorted(b) and all(
        a[k].dtype == b[k].dtype and a[k].tobytes() == b[k].tobytes()
        for k in a)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stage", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(
        n_embd=32, n_layer=1, n_head=2, vocab_size=VOCAB, n_positions=SEQ,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0,
        eos_token_id=0))
    rows = 2 * zero.world_size()
    generator = torch.Generator().manual_seed(3)
    ids = torch.randint(1, VOCAB, (rows, SEQ), generator=generator)
    mask = torch.ones(rows, SEQ, dtype=torch.int64)
    mask[0, SEQ - 3:] = 0  # one padded row
    graph = zero.from_torch(
        model, {"input_ids": ids[:2], "attention_mask": mask[:2]})
    graph.config.optimizer(zero.AdamW(lr=1e-2)).enable_zero(
        args.stage > 0, args.stage)
    compiled = graph.compile(zero.world_size())
    names = list(compiled.input_names)
    if names != ["input_ids", "attention_mask", "labels"]:
        fail(f"inputs {names}")

    by_numpy = graph.trainer(compiled)
    by_torch = graph.trainer(compiled)
    fresh = by_numpy.state_dict()

    # -- step and evaluate ---------------------------------------------------
    labels = ids.clone()
    # The ids as a column-major copy: a non-contiguous view of them.
    strided = ids.t().contiguous().t()
    assert not strided.is_contiguous()
    encoding = BatchEncoding({"input_ids": strided, "attention_mask": mask},
                             tensor_type="pt")
    encoding["labels"] = labels
    numpy_batch = [ids.numpy().copy(), mask.numpy().copy(),
                   labels.numpy().copy()]
    for step in range(2):
        want = by_numpy.step(numpy_batch)
        got = by_torch.step(encoding if step == 0 else [ids, mask, labels])
        if np.float32(want).tobytes() != np.float32(got).tobytes():
            fail(f"step {step + 1}: loss {got!r} from torch tensors, "
                 f"{want!r} from numpy")
    if not same_state(by_numpy.state_dict(), by_torch.state_dict()):
        fail("the state after two steps differs between numpy and torch "
             "batches")
    ok("step takes a BatchEncoding and a list of torch tensors (a "
       "non-contiguous one among them): losses and state bitwise numpy's")
    loss_np, out_np = by_numpy.evaluate(numpy_batch, outputs=True)
    loss_pt, out_pt = by_torch.evaluate(encoding, outputs=True)
    if loss_np != loss_pt or \
            out_np["logits"].tobytes() != out_pt["logits"].tobytes():
        fail("evaluate differs between numpy and torch batches")
    ok("evaluate takes a BatchEncoding: loss and logits bitwise numpy's")
    prompt = ids[1, :3]
    fixed = {"attention_mask": 1, "labels": -100}
    tokens_np = by_numpy.generate(prompt.numpy(), 3, temperature=0,
                                  inputs=fixed)
    tokens_pt = by_torch.generate(prompt, 3, temperature=0,
                                  inputs={"attention_mask": torch.ones(
                                      rows, SEQ, dtype=torch.int64),
                                      "labels": -100})
    if not np.array_equal(tokens_np, tokens_pt):
        fail(f"generate: {tokens_pt} from a torch prompt, {tokens_np} from "
             "numpy")
    ok("generate takes a torch prompt and torch inputs: the same tokens")

    # -- refusals at step ----------------------------------------------------
    refused(lambda: by_torch.step([ids.to("meta"), mask, labels]), TypeError,
            "batch element 0", "'meta'", ".cpu()")
    refused(lambda: by_torch.step([ids.tolist(), mask, labels]), TypeError,
            "batch element 0 is a list", "return_tensors")
    refused(lambda: by_torch.step(BatchEncoding(
        {"input_ids": ids, "attention_mask": mask})), ValueError,
        "missing ['labels']")
    extra = BatchEncoding({"input_ids": ids, "attention_mask": mask,
                           "token_type_ids": torch.zeros_like(ids)})
    extra["labels"] = labels
    refused(lambda: by_torch.step(extra), ValueError, "['token_type_ids']",
            "not inputs of the graph")
    ok("refused by name: a tensor on another device, lists, a batch "
       "missing the labels, an input the graph was imported without")

    # -- load_state_dict of the module's own state_dict ---------------------
    module_state = model.state_dict()
    tied = [k for k in ("transformer.wte.weight", "lm_head.weight")
            if k in module_state]
    if len(tied) != 2:
        fail(f"the module's state_dict has {tied} of the tied pair")
    by_torch.load_state_dict(module_state)
    if not same_state(by_torch.state_dict(), fresh):
        fail("load_state_dict(module.state_dict()) does not give the fresh "
             "trainer's state")
    once = {k: v for k, v in module_state.items() if k != "lm_head.weight"}
    by_numpy.load_state_dict(once)
    if not same_state(by_numpy.state_dict(), fresh):
        fail("load_state_dict with the tied name once does not give the "
             "fresh trainer's state")
    ok("load_state_dict(module.state_dict()) (torch tensors, module names, "
       "tied names twice or once): bitwise a fresh trainer's state")
    apart = dict(module_state)
    apart["lm_head.weight"] = apart["lm_head.weight"] + 1
    refused(lambda: by_torch.load_state_dict(apart), ValueError,
            "'lm_head.weight'", "'transformer.wte.weight'", "tied")
    lacking = {k: v for k, v in module_state.items()
               if k != "transformer.h.0.mlp.c_fc.weight"}
    refused(lambda: by_torch.load_state_dict(lacking), ValueError,
            "lacks ['transformer.h.0.mlp.c_fc.weight']")
    buffers = [k for k in module_state if k not in graph._state_owner]
    if buffers:
        changed = dict(module_state)
        changed[buffers[0]] = changed[buffers[0]] + 1
        refused(lambda: by_torch.load_state_dict(changed), ValueError,
                f"'{buffers[0]}'", "buffer")
    ok("load_state_dict refuses by name: tied names that disagree, a "
       "missing parameter" + (", a changed buffer" if buffers else ""))
    check_bf16_input(args.stage)
    check_padding(model, graph, compiled)
    return 0


def check_padding(model, graph, compiled):
    """A batch of fewer rows and positions than compiled (a short last
    batch, a pad-to-longest collator): padded by the trainer bitwise as by
    hand (ids 0, mask 0, labels -100 at the end), and its loss PyTorch's on
    the unpadded batch."""
    rows = 2 * zero.world_size()
    short_rows, short_seq = rows - 1, SEQ - 3
    generator = torch.Generator().manual_seed(9)
    ids = torch.randint(1, VOCAB, (short_rows, short_seq), generator=generator)
    mask = torch.ones_like(ids)
    by_hand = [np.zeros((rows, SEQ), np.int64), np.zeros((rows, SEQ), np.int64),
               np.full((rows, SEQ), -100, np.int64)]
    for full, part in zip(by_hand, (ids, mask, ids)):
        full[:short_rows, :short_seq] = part.numpy()
    padded, hand = graph.trainer(compiled), graph.trainer(compiled)
    with torch.no_grad():
        want = float(model(input_ids=ids, attention_mask=mask,
                           labels=ids).loss)
    for step in range(2):
        got = padded.step({"input_ids": ids, "attention_mask": mask,
                           "labels": ids})
        reference = hand.step(by_hand)
        if np.float32(got).tobytes() != np.float32(reference).tobytes():
            fail(f"padding: step {step + 1} loss {got!r}, hand-padded "
                 f"{reference!r}")
        if step == 0 and not abs(got - want) <= 1e-5 * abs(want):
            fail(f"padding: loss {got!r}, PyTorch's unpadded {want!r}")
    if not same_state(padded.state_dict(), hand.state_dict()):
        fail("padding: the state differs from the hand-padded trainer's")
    loss, outputs = padded.evaluate([ids, mask, ids], outputs=True)
    if list(outputs["logits"].shape) != [short_rows, short_seq, VOCAB]:
        fail(f"padding: evaluate's logits are {outputs['logits'].shape}")
    ok(f"a {short_rows} x {short_seq} batch (compiled {rows} x {SEQ}) is "
       "padded bitwise as by hand, its loss PyTorch's unpadded one; "
       "evaluate gives its rows' and positions' outputs")


class Shifted(torch.nn.Module):
    """A causal LM with a float input besides the ids: logits plus a
    per-position shift (a bf16 input under precision="bf16")."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 16)
        self.head = torch.nn.Linear(16, VOCAB)

    def forward(self, input_ids, shift):
        return self.head(self.embed(input_ids)) + shift[..., None]


def check_bf16_input(stage):
    """A bf16 float input: a torch bf16 tensor trains, evaluates and
    generates as the same values given as float32 numpy (the type a bf16
    input takes from numpy, which has no bfloat16)."""
    torch.manual_seed(1)
    model = Shifted()
    rows = 2 * zero.world_size()
    generator = torch.Generator().manual_seed(5)
    ids = torch.randint(0, VOCAB, (rows, SEQ), generator=generator)
    shift = torch.randn(rows, SEQ, generator=generator).bfloat16()
    graph = zero.from_torch(model, (ids[:2], shift[:2]), precision="bf16")
    graph.config.optimizer(zero.AdamW(lr=1e-2)).enable_zero(stage > 0, stage)
    compiled = graph.compile(zero.world_size())
    types = dict(zip(compiled.input_names, compiled.input_types))
    if types["shift"][1] != "bf16":
        fail(f"the shift input is {types['shift']}, not bf16")
    by_numpy, by_torch = graph.trainer(compiled), graph.trainer(compiled)
    widened = shift.float().numpy()
    for _ in range(2):
        want = by_numpy.step([ids.numpy(), widened, ids.numpy()])
        got = by_torch.step([ids, shift, ids])
        if np.float32(want).tobytes() != np.float32(got).tobytes():
            fail(f"bf16 input: loss {got!r} from a torch bf16 tensor, "
                 f"{want!r} from float32 numpy")
    if not same_state(by_numpy.state_dict(), by_torch.state_dict()):
        fail("bf16 input: the states differ")
    tokens_np = by_numpy.generate(ids[0, :2].numpy(), 2, temperature=0,
                                  inputs={"shift": 0.0, "labels": -100})
    tokens_pt = by_torch.generate(ids[0, :2], 2, temperature=0,
                                  inputs={"shift": torch.zeros(
                                      rows, SEQ, dtype=torch.bfloat16),
                                      "labels": -100})
    if not np.array_equal(tokens_np, tokens_pt):
        fail(f"bf16 input: generate gives {tokens_pt} and {tokens_np}")
    ok("a bf16 input takes a torch bf16 tensor (step, and generate's "
       "inputs): bitwise as float32 numpy")
    refused(lambda: by_torch.step([ids[:, :5], shift[:, :5], ids[:, :5]]),
            ValueError, f"{rows} x 5", "not be exact", "attention_mask")
    ok("a short batch of a graph without an attention_mask is refused: "
       "padding would not be exact")


if __name__ == "__main__":
    sys.exit(main())
