"""Mistakes a PyTorch user makes at from_torch, each refused with what to
do instead (mistakes.test), not with an importer's internals:

- the model wrapped in nn.DataParallel (or DistributedDataParallel);
- the labels among the example inputs, as `model(**batch)` passes them;
- a module whose forward updates a buffer (BatchNorm in training mode, a
  counter);
- model.train() or model.eval() between the import and trainer() (the
  import followed the module's modes);
- attention="fused" on attention written as separate ops (a model loaded
  with attn_implementation="eager"), which would keep the probabilities it
  was asked to save; a softmax that is not attention's still imports;
- at the trainer: load_state_dict(strict=False), a batch that is one
  number; and a boolean attention mask, which trains as its 0/1 ids.

Each case is then done the right way and imports. Prints `ok: ...` per
check with the message; exits 1 at the first failed one.
"""

import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

import zero
from zero.torch import UnsupportedModuleError


def refused(call, kind, *words):
    try:
        call()
    except kind as error:
        message = str(error)
        if all(word in message for word in words):
            return message.splitlines()[0]
        print(f"FAIL: the message lacks {words}: {message}")
        sys.exit(1)
    print(f"FAIL: accepted; expected {kind.__name__} naming {words}")
    sys.exit(1)


class Normed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)
        self.norm = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        return self.norm(self.linear(x))


class Routed(torch.nn.Module):
    """A softmax over a linear layer's output (a router's), beside
    attention through scaled_dot_product_attention."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)
        self.router = torch.nn.Linear(8, 8)

    def forward(self, x):
        q, k, v = self.qkv(x).unsqueeze(1).chunk(3, dim=-1)
        attended = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True).squeeze(1)
        gated = attended * torch.softmax(self.router(x), dim=-1)
        return gated.reshape(-1, 8)


class Counting(torch.nn.Module):
    """Counts its calls in a buffer, in forward."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)
        self.register_buffer("calls", torch.zeros(()))
        self.update = True

    def forward(self, x):
        if self.update:
            self.calls.add_(1)
        return self.linear(x)


def main():
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(
        n_embd=16, n_layer=1, n_head=2, vocab_size=32, n_positions=8,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    ids = torch.randint(0, 32, (2, 8))

    message = refused(lambda: zero.from_torch(torch.nn.DataParallel(model),
                                              (ids,)),
                      UnsupportedModuleError, "DataParallel", "model.module")
    print(f"ok: nn.DataParallel: {message}")
    zero.from_torch(torch.nn.DataParallel(model).module, (ids,))
    print("ok: its .module imports")

    message = refused(lambda: zero.from_torch(
        model, {"input_ids": ids, "labels": ids}), ValueError,
        "'labels'", "step's last input", "leave them out")
    print(f"ok: labels among the example inputs: {message}")
    message = refused(lambda: zero.from_torch(
        model, (ids,), forward_kwargs={"labels": ids}), ValueError,
        "'labels'")
    print("ok: labels in forward_kwargs: refused the same way")

    normed = Normed().train()
    x = torch.randn(4, 8)
    y = torch.randint(0, 4, (4,))
    loss = torch.nn.functional.cross_entropy
    message = refused(lambda: zero.from_torch(
        normed, (x,), loss=loss, example_targets=(y,)),
        UnsupportedModuleError, "norm.running_mean", "eval()",
        "track_running_stats=False")
    print(f"ok: BatchNorm in training mode: {message}")
    counting = Counting()
    message = refused(lambda: zero.from_torch(
        counting, (x,), loss=loss, example_targets=(y,)),
        UnsupportedModuleError, "['calls']", "outside forward")
    print(f"ok: a counter buffer updated in forward: {message}")
    counting.update = False
    zero.from_torch(counting, (x,), loss=loss, example_targets=(y,))
    print("ok: without the update it imports")

    eager = GPT2LMHeadModel(GPT2Config(
        n_embd=16, n_layer=1, n_head=2, vocab_size=32, n_positions=8,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        attn_implementation="eager"))
    message = refused(lambda: zero.from_torch(eager, (ids,),
                                              attention="fused"),
                      UnsupportedModuleError, "attention=\"fused\"",
                      "separate ops", "attn_implementation=\"sdpa\"",
                      "modeling_gpt2.py")
    print(f"ok: attention='fused' on eager attention: {message}")
    graph = zero.from_torch(model, (ids,), attention="fused")
    if "train.attention " not in graph.compile(1).ir("forward"):
        print("FAIL: the sdpa model imported without train.attention")
        return 1
    print("ok: loaded with sdpa it imports as one train.attention a layer")
    routed = Routed()
    tokens = torch.randn(2, 6, 8)
    zero.from_torch(routed, (tokens,), attention="fused",
                    loss=torch.nn.functional.cross_entropy,
                    example_targets=(torch.randint(0, 8, (12,)),))
    print("ok: a router's softmax beside sdpa imports with attention='fused'")

    import numpy as np
    dropping = GPT2LMHeadModel(GPT2Config(
        n_embd=16, n_layer=1, n_head=2, vocab_size=32, n_positions=8))
    dropping.eval()  # as from_pretrained returns it
    graph = zero.from_torch(dropping, (ids,))
    dropping.train()
    message = refused(lambda: graph.trainer(graph.compile(1)), RuntimeError,
                      "training mode", "eval mode", "module.train() before")
    print(f"ok: model.train() after an eval-mode import: {message}")
    dropping.eval()
    graph.trainer(graph.compile(1))
    print("ok: back in eval mode, trainer() builds")
    dropping.train()
    graph = zero.from_torch(dropping, (ids,))
    dropping.transformer.h[0].attn.eval()
    message = refused(lambda: graph.trainer(graph.compile(1)), RuntimeError,
                      "submodule 'transformer.h.0.attn' is in eval mode")
    print(f"ok: one submodule's eval() after a training-mode import: "
          f"{message}")
    dropping.transformer.h[0].attn.train()
    graph.trainer(graph.compile(1))
    print("ok: the modes of the import back: trainer() builds")

    masked = zero.from_torch(model, {"input_ids": ids,
                                     "attention_mask": torch.ones_like(ids)})
    batch = np.random.default_rng(1).integers(1, 32, (2, 8))
    mask = np.ones((2, 8), bool)
    mask[1, 6:] = False
    labels = np.where(mask, batch, -100)
    by_bool = masked.trainer(masked.compile(1))
    by_ids = masked.trainer(masked.compile(1))
    got = [by_bool.step({"input_ids": batch, "attention_mask": mask,
                         "labels": labels}) for _ in range(2)]
    want = [by_ids.step({"input_ids": batch,
                         "attention_mask": mask.astype(np.int64),
                         "labels": labels}) for _ in range(2)]
    if np.float32(got).tobytes() != np.float32(want).tobytes():
        print(f"FAIL: a boolean mask trained to {got}, its ids to {want}")
        return 1
    print("ok: a boolean attention mask trains as its 0/1 ids, bitwise")
    message = refused(lambda: by_ids.load_state_dict(
        model.state_dict(), strict=False), ValueError, "strict=False",
        "state.update")
    print(f"ok: load_state_dict(strict=False): {message}")
    message = refused(lambda: by_ids.step(5), TypeError, "got int")
    print(f"ok: a batch that is one number: {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
