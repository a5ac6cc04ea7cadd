"""Small modules through zero.from_torch, for FileCheck (test/torch/*.test).

  import_cases.py ir NAME       prints the imported forward IR of case NAME
  import_cases.py refusals      imports each module the importer refuses and
                                prints `refused NAME: <message>`
  import_cases.py honours       checks that every mapping declares the
                                arguments it honours (_torch_ops.HONOURS)
  import_cases.py all DIR       all of the above in one process (PyTorch and
                                transformers import once, not once a case:
                                most of a case's time), each into its own
                                file under DIR: ir-NAME.txt, honours.txt,
                                refusals.txt
"""

import contextlib
import os

import sys

import torch

import zero

F = torch.nn.functional


class Linear(torch.nn.Module):
    """nn.Linear: the weight is read with transpose_b, not copied."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x)


class Broadcast(torch.nn.Module):
    """x * w + 1.0 with w of shape [8] and a [2, 3, 1] gate: PyTorch's
    broadcasting spelled as reshape + expand, the scalar as a splat."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(8))
        self.g = torch.nn.Parameter(torch.ones(3, 1))

    def forward(self, x):
        return (x * self.w) * self.g + 1.0


class Split(torch.nn.Module):
    """A fused projection split in three, and a rotate-half."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(4, 12, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(x).split(4, dim=-1)
        rotated = torch.cat([-k[..., 2:], k[..., :2]], dim=-1)
        return q * torch.sigmoid(rotated) + F.silu(v)


class Tied(torch.nn.Module):
    """An embedding and an output layer sharing one weight."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(16, 4)
        self.head = torch.nn.Linear(4, 16, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        return self.head(self.emb(ids))


class Attention(torch.nn.Module):
    """Causal SDPA: matmul, scale, causal_mask, softmax, matmul."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(8))

    def forward(self, x):
        q = x * self.w
        return F.scaled_dot_product_attention(q, x, x, is_causal=True)


class TwoInputs(torch.nn.Module):
    """Returns its own loss of two inputs, given the same tensor twice."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4))

    def forward(self, x, y):
        return (x * self.w - y).mean()


class Padded(torch.nn.Module):
    """nn.Embedding(padding_idx=0) and the exact GELU: the attribute and
    the flag the IR carries to their gradients."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(16, 4, padding_idx=0)

    def forward(self, ids):
        return F.gelu(self.emb(ids))


class TokenTypes(torch.nn.Module):
    """BERT's token-type ids of zeros and OPT's positions repeated per row:
    constant ids, each a slice of its table expanded over the batch."""

    def __init__(self):
        super().__init__()
        self.types = torch.nn.Embedding(2, 4)
        self.positions = torch.nn.Embedding(8, 4)

    def forward(self, x):
        types = torch.zeros(x.shape[:2], dtype=torch.long)
        positions = torch.arange(2, 2 + x.shape[1]).expand(x.shape[0], -1)
        return x + self.types(types) + self.positions(positions)


CASES = {
    "padded": (Padded, lambda: torch.randint(0, 16, (2, 5))),
    "token-types": (TokenTypes, lambda: torch.randn(2, 5, 4)),
    "linear": (Linear, lambda: torch.randn(2, 3, 8)),
    "broadcast": (Broadcast, lambda: torch.randn(2, 3, 8)),
    "split": (Split, lambda: torch.randn(2, 3, 4)),
    "tied": (Tied, lambda: torch.randint(0, 16, (2, 5))),
    "attention": (Attention, lambda: torch.randn(2, 4, 6, 8)),
    "fused-attention": (Attention, lambda: torch.randn(2, 4, 6, 8)),
    "aliased": (TwoInputs, lambda: torch.randn(2, 4)),
}


def mean_loss(output):
    return output.mean()


def print_ir(name):
    torch.manual_seed(0)
    make, example = CASES[name]
    module, x = make(), example()
    if name == "aliased":
        graph = zero.from_torch(module, (x, x), loss=lambda out: out)
        print(graph.compile(1).ir("forward"))
        return
    loss = "causal_lm" if name == "tied" else mean_loss
    attention = "fused" if name == "fused-attention" else "separate"
    graph = zero.from_torch(module, (x,), loss=loss, attention=attention)
    print(graph.compile(1).ir("forward"))


class FrequencyScaled(torch.nn.Module):

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(16, 4, scale_grad_by_freq=True)

    def forward(self, ids):
        return self.emb(ids)


class ClassWeighted(torch.nn.Module):

    def __init__(self):
        super().__init__()
        self.register_buffer("weight", torch.tensor([1.0, 2.0, 1.0, 0.5]))

    def forward(self, x, y):
        return F.cross_entropy(x, y, weight=self.weight)


class Summed(torch.nn.Module):

    def forward(self, x, y):
        return F.cross_entropy(x, y, reduction="sum")


def cumsum_loss(output):
    """A loss function of the user's that the importer cannot map: its
    refusal names this function and line, not the package's wrapper."""
    return output.cumsum(dim=-1).mean()


class Cumsum(torch.nn.Module):

    def forward(self, x):
        return x.cumsum(dim=-1)


class TopK(torch.nn.Module):
    """A router's top-k, as a mixture of experts takes it."""

    def forward(self, x):
        return x.topk(2, dim=-1).values


class Where(torch.nn.Module):
    """torch.where of two computed tensors by a constant condition."""

    def __init__(self):
        super().__init__()
        self.register_buffer("keep", torch.tensor([True, False, True, False]))

    def forward(self, x):
        return torch.where(self.keep, x, x * 2)


class Branch(torch.nn.Module):

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda v: v * 2, lambda v: v * 3, (x,))


class DataDependent(torch.nn.Module):

    def forward(self, x):
        return x[x > 0]


class TwoIndexTensors(torch.nn.Module):
    """Advanced indexing by two index tensors (pairs of positions)."""

    def forward(self, x):
        return x[[0, 1], [1, 2]]


class Pow(torch.nn.Module):

    def forward(self, x):
        return x.pow(4)


class MaskOutsideAttention(torch.nn.Module):
    """An attention_mask used to zero the padding's features: the importer
    takes the mask only into attention."""

    def forward(self, x, attention_mask):
        return x * attention_mask.bool().unsqueeze(-1)


class FloatMaskAttention(torch.nn.Module):
    """The attention_mask made floats (eager attention's way) and given to
    scaled_dot_product_attention: refused, where the boolean mask or the
    floats added to the scores are taken."""

    def forward(self, x, attention_mask):
        # Read at the batch's and the keys' positions, as masking_utils.
        batch = torch.arange(x.shape[0])[:, None, None, None]
        keys = torch.arange(x.shape[2])[None, None, None, :]
        keep = attention_mask.bool()[batch, keys]
        floats = torch.where(keep, torch.zeros(()),
                             torch.finfo(torch.float32).min)
        return torch.nn.functional.scaled_dot_product_attention(
            x, x, x, attn_mask=floats)


class CrossAttention(torch.nn.Module):
    """Queries over fewer keys: not what train.attention computes."""

    def forward(self, x):
        return F.scaled_dot_product_attention(x, x[:, :, :2], x[:, :, :2])


class DroppedAttention(torch.nn.Module):
    """Attention dropout: PyTorch's math backend drops probabilities, which
    a fused kernel never holds."""

    def forward(self, x):
        return F.scaled_dot_product_attention(x, x, x, dropout_p=0.1,
                                              is_causal=True)


class Mean(torch.nn.Module):

    def forward(self, x):
        return x.mean(dim=-1)


class OnMeta(torch.nn.Module):
    """Partly on the meta device: a module plans from shapes alone only when
    all of it is there (test/torch/meta-plan.test)."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4, device="meta")
        self.scale = torch.nn.Parameter(torch.ones(4))

    def forward(self, x):
        return self.proj(x) * self.scale


REFUSED = {
    "scale-grad-by-freq": (FrequencyScaled(), (torch.randint(0, 16, (2, 4)),),
                           mean_loss, ()),
    "class-weights": (ClassWeighted(), (torch.randn(2, 4),), None,
                      (torch.randint(0, 4, (2,)),)),
    "reduction": (Summed(), (torch.randn(2, 4),), None,
                  (torch.randint(0, 4, (2,)),)),
    "in-a-loss-function": (Mean(), (torch.randn(2, 4),), cumsum_loss, ()),
    "cumsum": (Cumsum(), (torch.randn(2, 4),), mean_loss, ()),
    "topk": (TopK(), (torch.randn(2, 4),), mean_loss, ()),
    "where": (Where(), (torch.randn(2, 4),), mean_loss, ()),
    "control-flow": (Branch(), (torch.randn(2, 4),), mean_loss, ()),
    "data-dependent": (DataDependent(), (torch.randn(2, 4),), mean_loss, ()),
    "two-index-tensors": (TwoIndexTensors(), (torch.randn(2, 4),), mean_loss,
                          ()),
    "not-a-module": (lambda x: x, (torch.randn(2, 4),), mean_loss, ()),
    "not-logits": (Mean(), (torch.randn(2, 4),), "causal_lm", ()),
    "pow": (Pow(), (torch.randn(2, 4),), mean_loss, ()),
    "mask-outside-attention": (
        MaskOutsideAttention(),
        {"x": torch.randn(2, 4, 3),
         "attention_mask": torch.ones(2, 4, dtype=torch.int64)}, mean_loss,
        ()),
    "float-mask-into-attention": (
        FloatMaskAttention(),
        {"x": torch.randn(2, 1, 4, 8),
         "attention_mask": torch.ones(2, 4, dtype=torch.int64)}, mean_loss,
        ()),
    "meta-device": (OnMeta(), (torch.randn(2, 4),), mean_loss, ()),
    "fused-cross-attention": (CrossAttention(), (torch.randn(2, 1, 4, 8),),
                              "fused", ()),
    "fused-attention-dropout": (DroppedAttention(),
                                (torch.randn(2, 1, 4, 8),), "fused", ()),
    "attention-option": (Mean(), (torch.randn(2, 4),), "attention-option",
                         ()),
    "input-given-twice": (
        MaskOutsideAttention(),
        {"x": torch.randn(2, 4, 3),
         "attention_mask": torch.ones(2, 4, dtype=torch.int64)},
        "forward-kwargs", ()),
}


def refusals():
    for name, (module, args, loss, targets) in REFUSED.items():
        kwargs = {}
        if loss is None:
            # The module computes its own loss from (x, y).
            kwargs = {"loss": lambda out: out, "example_targets": ()}
            args = args + targets
        elif loss == "forward-kwargs":
            kwargs = {"loss": mean_loss,
                      "forward_kwargs": {"attention_mask": None}}
        elif loss == "fused":
            kwargs = {"loss": mean_loss, "attention": "fused"}
        elif loss == "attention-option":
            kwargs = {"loss": mean_loss, "attention": "flash"}
        else:
            kwargs = {"loss": loss}
        try:
            zero.from_torch(module, args, **kwargs)
        except (TypeError, ValueError) as error:
            message = " ".join(str(error).split())
            kind = type(error)
            print(f"refused {name}: {kind.__module__}.{kind.__name__}: "
                  f"{message}")
        else:
            raise AssertionError(f"{name} was imported")


def honours():
    """Every mapped op declares the arguments it honours, by names its
    schema has, and honours every argument that has no default (which a
    call always gives)."""
    from zero import _torch_ops
    mapped = (set(_torch_ops.HANDLERS) | set(_torch_ops.UNARY)
              | _torch_ops.IDENTITY | _torch_ops.RESHAPES)
    undeclared = sorted(str(op) for op in mapped - set(_torch_ops.HONOURS))
    if undeclared:
        raise AssertionError(f"mapped without HONOURS: {undeclared}")
    for op, names in _torch_ops.HONOURS.items():
        schema = op._schema
        arguments = {argument.name: argument for argument in
                     schema.arguments}
        unknown = set(names) - set(arguments)
        if unknown:
            raise AssertionError(f"{op}: {sorted(unknown)} not in {schema}")
        required = [name for name, argument in arguments.items()
                    if not argument.has_default_value() and name not in names]
        if required:
            raise AssertionError(f"{op}: required {required} not honoured")
    print(f"honours: {len(_torch_ops.HONOURS)} ops declare their arguments")


def run_all(directory):
    os.makedirs(directory, exist_ok=True)
    jobs = [(f"ir-{name}", lambda name=name: print_ir(name)) for name in CASES]
    jobs += [("honours", honours), ("refusals", refusals)]
    for stem, job in jobs:
        with open(os.path.join(directory, stem + ".txt"), "w") as out:
            with contextlib.redirect_stdout(out):
                job()


if __name__ == "__main__":
    if sys.argv[1] == "all":
        run_all(sys.argv[2])
    elif sys.argv[1] == "ir":
        print_ir(sys.argv[2])
    elif sys.argv[1] == "honours":
        honours()
    else:
        refusals()
