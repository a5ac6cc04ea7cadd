#!/usr/bin/env python3
"""Generate a GPT-2-shaped single-device training step in the train dialect.

The output is one MLIR module in the style of examples/mlp.mlir:

* a `dist.placement` on the module (`--ranks`, `--device`);
* one `train.param` per parameter, GPT-2 style: token embedding `@wte`
  [V, D], position embedding `@wpe` [T, D], per block `@h{i}.ln_1.{g,b}`,
  separate query, key and value projections `@h{i}.attn.{q,k,v}.{w,b}`,
  the attention output projection `@h{i}.attn.proj.{w,b}`,
  `@h{i}.ln_2.{g,b}`, the MLP `@h{i}.mlp.fc.{w,b}` [D, 4D] and
  `@h{i}.mlp.proj.{w,b}` [4D, D], and the final `@ln_f.{g,b}`. Weights
  start as normal(0.0, 0.02), biases as zeros, layer-norm gains as ones;
* a `train.optimizer @adamw` (AdamW, lr 3e-4, betas (0.9, 0.95), weight
  decay 0.1);
* `func.func @step(%tokens, %positions, %targets) -> tensor<f32>` with the
  `train.step` attribute. All three arguments are `tensor<BxTxi32>` so that
  every input of the step is batch-major (the step runs on a rank's local
  batch): `%positions` holds the position id of each token (0..T-1 on every
  row for plain GPT-2 training) and `%targets` the next-token ids.

The step is the forward pass (pre-LN blocks with causal multi-head
self-attention and a GELU MLP; the LM head is tied to `@wte`, logits =
ln_f(x) @ wte^T), the mean softmax cross-entropy, the complete hand-written
backward pass seeded with dloss = 1, and one `train.apply_gradient` per
trainable parameter. The tied `@wte` takes the sum of its LM-head and
embedding gradients, applied once.

The residual stream is kept 2-D, [B*T, D], so that every linear layer is a
2-D matmul whose weight gradient is `x^T dy` and whose bias gradient is a
`reduce_sum` over dimension 0; attention reshapes to [B, T, H, Dh] and
transposes to [B, H, T, Dh].

`--dtype bf16` makes the parameters and all compute bf16; the logits are
cast to f32 for the loss and its gradient is cast back to bf16 (layer-norm
statistics are f32 in either case, as the dialect requires).

`--forward-only` stops after the loss: the step ends with
`train.minimize %loss` instead of the backward and the apply_gradients,
which `zero-opt --train-autodiff` then generates (the same ops, up to
names and order).

`--recompute` (with `--forward-only`) marks every op of each transformer
block except the block's output `x{i+1}` with `{train.recompute}`, so that
`zero-opt --train-autodiff=recompute=true` recomputes the block's internals
in the backward from its input (activation checkpointing per block) instead
of keeping them alive from the forward.

`--frozen NAME[,NAME...]` gives those parameters the role `frozen`: they
take no `train.apply_gradient`, and every backward op whose result no
applied gradient needs is left out (their weight and bias gradients, and
the whole backward below the lowest trainable parameter). A
`train.layer_norm_grad` kept for its input gradient still returns the
gain and bias gradients, unused. A name may be a shell-style pattern,
e.g. `--frozen 'wpe,h0.*'`.

`--tp-plan megatron` gives the parameters Megatron-LM's tensor-parallel
plan as `dist.sbp` attributes, for `dist-tensor-parallel` (`zero-run
--tp N`): the query, key, value and MLP input projections column-parallel
(weights `[S(1)]`, biases `[S(0)]`), the attention and MLP output
projections row-parallel (weights `[S(0)]`, biases whole); embeddings and
layer norms whole.

The ops are collected in one pass and printed once, so the generator is
linear in the number of layers: `--layers 96` is instant.

Examples:

  python3 examples/gen_gpt2.py --layers 2 > examples/gpt2-tiny.mlir
  python3 examples/gen_gpt2.py --layers 12 --dtype bf16 --frozen wpe -o /tmp/g.mlir
  python3 examples/gen_gpt2.py --layers 2 --forward-only | zero-opt --train-autodiff
  python3 examples/gen_gpt2.py --help
"""

import argparse
import fnmatch
import math
import shlex
import sys

DEFAULTS = {
    "layers": 2,
    "vocab": 256,
    "seq": 16,
    "batch": 2,
    "dim": 64,
    "heads": 4,
    "dtype": "f32",
    "frozen": "",
    "ranks": 1,
    "device": "cpu",
    "forward_only": False,
    "tp_plan": "none",
}

# Megatron-LM's plan by parameter-name suffix: column-parallel projections
# split their outputs, row-parallel ones their inputs.
MEGATRON_PLAN = {
    "attn.q.w": "S(1)", "attn.k.w": "S(1)", "attn.v.w": "S(1)",
    "attn.q.b": "S(0)", "attn.k.b": "S(0)", "attn.v.b": "S(0)",
    "mlp.fc.w": "S(1)", "mlp.fc.b": "S(0)",
    "attn.proj.w": "S(0)", "mlp.proj.w": "S(0)",
}


def tp_plan_attr(name, plan):
    """The ` {dist.sbp = ...}` suffix of parameter `name` under `plan`."""
    if plan != "megatron":
        return ""
    entry = MEGATRON_PLAN.get(name.split(".", 1)[-1])
    return " {dist.sbp = #dist.sbp<[%s]>}" % entry if entry else ""

NEG_INF = "0xFFF0000000000000"  # -inf as an f64 attribute.
LN_EPS = "1.0e-05"
INIT_WEIGHT = "normal(0.0, 0.02)"


def tensor(shape, elem):
    """`tensor<2x16x64xf32>`; a rank-0 shape gives `tensor<f32>`."""
    if not shape:
        return "tensor<%s>" % elem
    return "tensor<%sx%s>" % ("x".join(str(d) for d in shape), elem)


def dims_attr(values):
    return "[" + ", ".join(str(v) for v in values) + "]"


class Body:
    """The ops of the step, in order, with their SSA defs and uses.

    Ops are appended as (results, operands, text, keep); comments as text
    only. `render` drops every op whose results no kept op needs (one
    backward sweep over the list), which is how frozen parameters lose
    their gradient computation.
    """

    def __init__(self):
        self.entries = []  # (kind, results, operands, text, keep)
        # While set, ops get the `train.recompute` mark (`--recompute`).
        self.recompute = False

    def comment(self, text):
        self.entries.append(("comment", (), (), text, False))

    def op(self, results, operands, text, keep=False):
        if self.recompute:
            # The attribute dictionary of every train op comes just before
            # the ` : ` that starts its types.
            head, sep, types = text.partition(" : ")
            text = head + " {train.recompute}" + sep + types
        self.entries.append(("op", tuple(results), tuple(operands), text, keep))

    def render(self, indent):
        live_values = set()
        live = [False] * len(self.entries)
        for index in range(len(self.entries) - 1, -1, -1):
            kind, results, operands, _, keep = self.entries[index]
            if kind != "op":
                continue
            if keep or any(r in live_values for r in results):
                live[index] = True
                live_values.update(operands)
        lines = []
        pending = None  # A comment is printed only if a live op follows it.
        for index, (kind, results, _, text, _) in enumerate(self.entries):
            if kind == "comment":
                pending = text
                continue
            if not live[index]:
                continue
            if pending is not None:
                if lines:
                    lines.append("")
                lines.append(indent + "// " + pending)
                pending = None
            if results:
                lines.append(indent + ", ".join("%" + r for r in results) + " = " + text)
            else:
                lines.append(indent + text)
        return lines


class Step:
    """Emits typed train ops into a Body; each returns its result name(s)."""

    def __init__(self, body, elem):
        self.body = body
        self.elem = elem

    def t(self, *shape):
        return tensor(shape, self.elem)

    def load(self, name, shape):
        self.body.op([name], [], "train.load @%s : %s" % (name, self.t(*shape)))
        return name

    def matmul(self, out, lhs, rhs, lshape, rshape, oshape, ta=False, tb=False):
        flags = (" transpose_a" if ta else "") + (" transpose_b" if tb else "")
        self.body.op([out], [lhs, rhs], "train.matmul %%%s, %%%s%s : %s, %s -> %s" % (
            lhs, rhs, flags, self.t(*lshape), self.t(*rshape), self.t(*oshape)))
        return out

    def bias_add(self, out, x, b, shape):
        self.body.op([out], [x, b], "train.bias_add %%%s, %%%s : %s, %s" % (
            x, b, self.t(*shape), self.t(shape[-1])))
        return out

    def binary(self, opname, out, a, b, shape):
        self.body.op([out], [a, b], "train.%s %%%s, %%%s : %s" % (opname, a, b, self.t(*shape)))
        return out

    def unary(self, opname, out, x, shape):
        self.body.op([out], [x], "train.%s %%%s : %s" % (opname, x, self.t(*shape)))
        return out

    def act_grad(self, opname, out, saved, dy, shape):
        self.body.op([out], [saved, dy], "train.%s %%%s, %%%s : %s" % (opname, saved, dy, self.t(*shape)))
        return out

    def scale(self, out, x, factor, shape):
        self.body.op([out], [x], "train.scale %%%s by %s : %s" % (x, factor, self.t(*shape)))
        return out

    def causal_mask(self, out, x, fill, shape):
        self.body.op([out], [x], "train.causal_mask %%%s fill %s : %s" % (x, fill, self.t(*shape)))
        return out

    def reshape(self, out, x, ishape, oshape, elem=None):
        elem = elem or self.elem
        self.body.op([out], [x], "train.reshape %%%s : %s -> %s" % (
            x, tensor(ishape, elem), tensor(oshape, elem)))
        return out

    def transpose(self, out, x, perm, ishape):
        oshape = [ishape[p] for p in perm]
        self.body.op([out], [x], "train.transpose %%%s permutation %s : %s -> %s" % (
            x, dims_attr(perm), self.t(*ishape), self.t(*oshape)))
        return out

    def reduce_sum(self, out, x, dims, ishape):
        oshape = [d for i, d in enumerate(ishape) if i not in dims]
        self.body.op([out], [x], "train.reduce_sum %%%s dims %s : %s -> %s" % (
            x, dims_attr(dims), self.t(*ishape), self.t(*oshape)))
        return out

    def layer_norm(self, prefix, x, g, b, shape):
        outs = [prefix, prefix + ".mean", prefix + ".rstd"]
        self.body.op(outs, [x, g, b], "train.layer_norm %%%s, %%%s, %%%s eps %s : %s, %s -> %s" % (
            x, g, b, LN_EPS, self.t(*shape), self.t(shape[-1]), tensor(shape[:-1], "f32")))
        return outs

    def layer_norm_grad(self, outs, dy, x, g, mean, rstd, shape):
        self.body.op(outs, [dy, x, g, mean, rstd],
                     "train.layer_norm_grad %%%s, %%%s, %%%s, %%%s, %%%s : %s, %s, %s" % (
                         dy, x, g, mean, rstd, self.t(*shape), self.t(shape[-1]),
                         tensor(shape[:-1], "f32")))
        return outs

    def embedding(self, out, table, ids, tshape, ishape):
        self.body.op([out], [table, ids], "train.embedding %%%s, %%%s : %s, %s -> %s" % (
            table, ids, self.t(*tshape), tensor(ishape, "i32"), self.t(*ishape, tshape[1])))
        return out

    def embedding_grad(self, out, dy, ids, tshape, ishape):
        self.body.op([out], [dy, ids], "train.embedding_grad %%%s, %%%s : %s, %s -> %s" % (
            dy, ids, self.t(*ishape, tshape[1]), tensor(ishape, "i32"), self.t(*tshape)))
        return out

    def cast(self, out, x, shape, src, dst):
        self.body.op([out], [x], "train.cast %%%s : %s -> %s" % (x, tensor(shape, src), tensor(shape, dst)))
        return out

    def apply_gradient(self, grad, param, shape):
        self.body.op([], [grad], "train.apply_gradient %%%s to @%s with @adamw : %s" % (
            grad, param, self.t(*shape)), keep=True)


def param_specs(cfg):
    """(name, shape, init) of every parameter, in declaration order."""
    L, V, T, D = cfg.layers, cfg.vocab, cfg.seq, cfg.dim
    specs = [("wte", (V, D), INIT_WEIGHT), ("wpe", (T, D), INIT_WEIGHT)]
    for i in range(L):
        p = "h%d." % i
        specs += [
            (p + "ln_1.g", (D,), "ones"),
            (p + "ln_1.b", (D,), "zeros"),
        ]
        for z in ("q", "k", "v", "proj"):
            specs += [
                (p + "attn.%s.w" % z, (D, D), INIT_WEIGHT),
                (p + "attn.%s.b" % z, (D,), "zeros"),
            ]
        specs += [
            (p + "ln_2.g", (D,), "ones"),
            (p + "ln_2.b", (D,), "zeros"),
            (p + "mlp.fc.w", (D, 4 * D), INIT_WEIGHT),
            (p + "mlp.fc.b", (4 * D,), "zeros"),
            (p + "mlp.proj.w", (4 * D, D), INIT_WEIGHT),
            (p + "mlp.proj.b", (D,), "zeros"),
        ]
    specs += [("ln_f.g", (D,), "ones"), ("ln_f.b", (D,), "zeros")]
    return specs


def resolve_frozen(spec, names, parser):
    """The parameter names that `--frozen` selects (exact names or patterns)."""
    frozen = set()
    for item in spec.split(","):
        item = item.strip().lstrip("@")
        if not item:
            continue
        matched = fnmatch.filter(names, item)
        if not matched:
            parser.error("--frozen: %r names no parameter (they are wte, wpe, "
                         "h0.ln_1.g, h0.attn.q.w, ..., ln_f.b)" % item)
        frozen.update(matched)
    return frozen


def command_line(cfg):
    """The canonical command that regenerates this output (for the header)."""
    words = ["python3 examples/gen_gpt2.py", "--layers %d" % cfg.layers]
    for key in ("vocab", "seq", "batch", "dim", "heads", "dtype", "frozen", "ranks", "device",
                "tp_plan"):
        value = getattr(cfg, key)
        if value != DEFAULTS[key]:
            words.append("--%s %s" % (key.replace("_", "-"), shlex.quote(str(value))))
    if cfg.forward_only:
        words.append("--forward-only")
    if cfg.recompute:
        words.append("--recompute")
    return " ".join(words)


def generate(cfg, frozen):
    L, V, T, D, H, B = cfg.layers, cfg.vocab, cfg.seq, cfg.dim, cfg.heads, cfg.batch
    Dh = D // H
    N = B * T
    F = 4 * D
    elem = cfg.dtype
    bf16 = elem == "bf16"
    inv_sqrt_dh = repr(1.0 / math.sqrt(Dh))
    specs = param_specs(cfg)
    trainable = [s for s in specs if s[0] not in frozen]
    body = Body()
    s = Step(body, elem)
    ND, BT = (N, D), (B, T)
    heads_shape = (B, H, T, Dh)
    split_shape = (B, T, H, Dh)
    scores_shape = (B, H, T, T)
    perm = [0, 2, 1, 3]  # [B,T,H,Dh] <-> [B,H,T,Dh]; its own inverse.

    # ----------------------------------------------------------------- forward
    body.comment("Parameters.")
    for name, shape, _ in specs:
        s.load(name, shape)

    body.comment("Embeddings: token + position, flattened to the [B*T, D] residual stream.")
    s.embedding("tok_emb", "wte", "tokens", (V, D), BT)
    s.embedding("pos_emb", "wpe", "positions", (T, D), BT)
    s.binary("add", "emb", "tok_emb", "pos_emb", (B, T, D))
    s.reshape("x0", "emb", (B, T, D), ND)

    for i in range(L):
        p = "h%d." % i
        x = "x%d" % i
        body.comment("Block %d: x%d -> x%d. Attention." % (i, i, i + 1))
        # Checkpointing per block: only the block's input and output stay
        # alive for the backward; everything in between is recomputed.
        body.recompute = cfg.recompute
        ln1 = s.layer_norm(p + "ln_1", x, p + "ln_1.g", p + "ln_1.b", ND)[0]
        for z in ("q", "k", "v"):
            a = p + "attn." + z
            s.matmul(a + ".mm", ln1, a + ".w", ND, (D, D), ND)
            s.bias_add(a, a + ".mm", a + ".b", ND)
            s.reshape(a + ".split", a, ND, split_shape)
            s.transpose(a + ".heads", a + ".split", perm, split_shape)
        a = p + "attn."
        s.matmul(a + "scores", a + "q.heads", a + "k.heads", heads_shape, heads_shape, scores_shape, tb=True)
        s.scale(a + "scaled", a + "scores", inv_sqrt_dh, scores_shape)
        s.causal_mask(a + "masked", a + "scaled", NEG_INF, scores_shape)
        s.unary("softmax", a + "probs", a + "masked", scores_shape)
        s.matmul(a + "ctx.heads", a + "probs", a + "v.heads", scores_shape, heads_shape, heads_shape)
        s.transpose(a + "ctx.split", a + "ctx.heads", perm, heads_shape)
        s.reshape(a + "ctx", a + "ctx.split", split_shape, ND)
        s.matmul(a + "proj.mm", a + "ctx", a + "proj.w", ND, (D, D), ND)
        s.bias_add(a + "proj", a + "proj.mm", a + "proj.b", ND)
        s.binary("add", p + "resid", x, a + "proj", ND)

        body.comment("Block %d: MLP." % i)
        ln2 = s.layer_norm(p + "ln_2", p + "resid", p + "ln_2.g", p + "ln_2.b", ND)[0]
        m = p + "mlp."
        s.matmul(m + "fc.mm", ln2, m + "fc.w", ND, (D, F), (N, F))
        s.bias_add(m + "fc", m + "fc.mm", m + "fc.b", (N, F))
        s.unary("gelu", m + "gelu", m + "fc", (N, F))
        s.matmul(m + "proj.mm", m + "gelu", m + "proj.w", (N, F), (F, D), ND)
        s.bias_add(m + "proj", m + "proj.mm", m + "proj.b", ND)
        body.recompute = False
        s.binary("add", "x%d" % (i + 1), p + "resid", m + "proj", ND)

    xl = "x%d" % L
    body.comment("Final layer norm, LM head tied to wte (logits = ln_f @ wte^T), loss.")
    s.layer_norm("ln_f", xl, "ln_f.g", "ln_f.b", ND)
    s.matmul("logits.2d", "ln_f", "wte", ND, (V, D), (N, V), tb=True)
    s.reshape("logits", "logits.2d", (N, V), (B, T, V))
    loss_logits = "logits"
    if bf16:
        loss_logits = s.cast("logits.f32", "logits", (B, T, V), "bf16", "f32")
    body.op(["loss"], [loss_logits, "targets"],
            "train.softmax_cross_entropy %%%s, %%targets : %s, %s -> tensor<f32>" % (
                loss_logits, tensor((B, T, V), "f32"), tensor(BT, "i32")), keep=True)

    def emit_backward():
        body.comment("Backward, seeded with dloss = 1. Loss and LM head.")
        body.op(["one"], [], "arith.constant dense<1.0> : tensor<f32>")
        body.op([loss_logits + ".grad"], [loss_logits, "targets", "one"],
                "train.softmax_cross_entropy_grad %%%s, %%targets, %%one : %s, %s" % (
                    loss_logits, tensor((B, T, V), "f32"), tensor(BT, "i32")))
        if bf16:
            s.cast("logits.grad", "logits.f32.grad", (B, T, V), "f32", "bf16")
        s.reshape("logits.2d.grad", "logits.grad", (B, T, V), (N, V))
        s.matmul("wte.grad.head", "logits.2d.grad", "ln_f", (N, V), ND, (V, D), ta=True)
        s.matmul("ln_f.grad", "logits.2d.grad", "wte", (N, V), (V, D), ND)
        s.layer_norm_grad([xl + ".grad", "ln_f.g.grad", "ln_f.b.grad"],
                          "ln_f.grad", xl, "ln_f.g", "ln_f.mean", "ln_f.rstd", ND)

        def linear_grads(prefix, x, dy, xshape, wshape):
            """dW = x^T dy and db = sum over rows of dy for y = x W + b (2-D)."""
            yshape = (xshape[0], wshape[1])
            s.reduce_sum(prefix + ".b.grad", dy, [0], yshape)
            s.matmul(prefix + ".w.grad", x, dy, xshape, yshape, wshape, ta=True)

        for i in reversed(range(L)):
            p = "h%d." % i
            m = p + "mlp."
            a = p + "attn."
            x = "x%d" % i
            dx_out = "x%d.grad" % (i + 1)

            body.comment("Block %d backward: MLP." % i)
            linear_grads(m + "proj", m + "gelu", dx_out, (N, F), (F, D))
            s.matmul(m + "gelu.grad", dx_out, m + "proj.w", ND, (F, D), (N, F), tb=True)
            s.act_grad("gelu_grad", m + "fc.grad", m + "fc", m + "gelu.grad", (N, F))
            linear_grads(m + "fc", p + "ln_2", m + "fc.grad", ND, (D, F))
            s.matmul(p + "ln_2.grad", m + "fc.grad", m + "fc.w", (N, F), (D, F), ND, tb=True)
            s.layer_norm_grad([p + "ln_2.in.grad", p + "ln_2.g.grad", p + "ln_2.b.grad"],
                              p + "ln_2.grad", p + "resid", p + "ln_2.g",
                              p + "ln_2.mean", p + "ln_2.rstd", ND)
            s.binary("add", p + "resid.grad", dx_out, p + "ln_2.in.grad", ND)

            body.comment("Block %d backward: attention." % i)
            dres = p + "resid.grad"
            linear_grads(a + "proj", a + "ctx", dres, ND, (D, D))
            s.matmul(a + "ctx.grad", dres, a + "proj.w", ND, (D, D), ND, tb=True)
            s.reshape(a + "ctx.split.grad", a + "ctx.grad", ND, split_shape)
            s.transpose(a + "ctx.heads.grad", a + "ctx.split.grad", perm, split_shape)
            # ctx = probs @ v: dprobs = dctx v^T, dv = probs^T dctx.
            s.matmul(a + "probs.grad", a + "ctx.heads.grad", a + "v.heads",
                     heads_shape, heads_shape, scores_shape, tb=True)
            s.matmul(a + "v.heads.grad", a + "probs", a + "ctx.heads.grad",
                     scores_shape, heads_shape, heads_shape, ta=True)
            s.act_grad("softmax_grad", a + "masked.grad", a + "probs", a + "probs.grad", scores_shape)
            s.causal_mask(a + "scaled.grad", a + "masked.grad", "0.0", scores_shape)
            s.scale(a + "scores.grad", a + "scaled.grad", inv_sqrt_dh, scores_shape)
            # scores = q k^T: dq = dscores k, dk = dscores^T q.
            s.matmul(a + "q.heads.grad", a + "scores.grad", a + "k.heads",
                     scores_shape, heads_shape, heads_shape)
            s.matmul(a + "k.heads.grad", a + "scores.grad", a + "q.heads",
                     scores_shape, heads_shape, heads_shape, ta=True)
            for z in ("q", "k", "v"):
                az = a + z
                s.transpose(az + ".split.grad", az + ".heads.grad", perm, heads_shape)
                s.reshape(az + ".grad", az + ".split.grad", split_shape, ND)
                linear_grads(az, p + "ln_1", az + ".grad", ND, (D, D))
                s.matmul(p + "ln_1.grad." + z, az + ".grad", az + ".w", ND, (D, D), ND, tb=True)
            s.binary("add", p + "ln_1.grad.qk", p + "ln_1.grad.q", p + "ln_1.grad.k", ND)
            s.binary("add", p + "ln_1.grad", p + "ln_1.grad.qk", p + "ln_1.grad.v", ND)
            s.layer_norm_grad([p + "ln_1.in.grad", p + "ln_1.g.grad", p + "ln_1.b.grad"],
                              p + "ln_1.grad", x, p + "ln_1.g", p + "ln_1.mean", p + "ln_1.rstd", ND)
            s.binary("add", x + ".grad", dres, p + "ln_1.in.grad", ND)

        body.comment("Embeddings backward; the tied wte sums its LM-head and embedding gradients."
                     if "wte" not in frozen else "Embeddings backward.")
        s.reshape("emb.grad", "x0.grad", ND, (B, T, D))
        s.embedding_grad("wte.grad.embed", "emb.grad", "tokens", (V, D), BT)
        s.binary("add", "wte.grad", "wte.grad.head", "wte.grad.embed", (V, D))
        s.embedding_grad("wpe.grad", "emb.grad", "positions", (T, D), BT)

        body.comment("Update: one apply_gradient per trainable parameter.")
        for name, shape, _ in trainable:
            s.apply_gradient(name + ".grad", name, shape)

    # ---------------------------------------------------------------- backward
    if cfg.forward_only:
        # train-autodiff builds the backward and the apply_gradients.
        body.op([], ["loss"], "train.minimize %loss : tensor<f32>", keep=True)
    else:
        emit_backward()

    # ------------------------------------------------------------------ output
    out = []
    w = out.append
    n_params = sum(math.prod(shape) for _, shape, _ in specs)
    w("// GPT-2-shaped training step: %d layer(s), vocabulary %d, sequence %d," % (L, V, T))
    w("// batch %d, width %d, %d heads of %d, %s; %d parameters in %d tensors" % (
        B, D, H, Dh, elem, n_params, len(specs)))
    w("// (%d trainable, %d frozen)." % (len(trainable), len(frozen)))
    w("//")
    w("// Generated by examples/gen_gpt2.py; do not edit. Regenerate with")
    w("//")
    w("//   %s" % command_line(cfg))
    w("//")
    w("// Pre-LN blocks with causal multi-head self-attention (separate q, k, v")
    w("// projections) and a GELU MLP; the LM head is tied to @wte; mean softmax")
    if cfg.forward_only:
        w("// cross-entropy against %targets. Forward only: train.minimize names the")
        w("// loss, and train-autodiff builds the backward and one train.apply_gradient")
        w("// with AdamW per trainable parameter.")
        if cfg.recompute:
            w("// Every op of a block except its output is marked train.recompute, for")
            w("// train-autodiff recompute=true to recompute in the backward.")
    else:
        w("// cross-entropy against %targets. Forward and backward are written out by")
        w("// hand (the tied @wte takes the sum of its LM-head and embedding gradients);")
        w("// every trainable parameter gets one train.apply_gradient with AdamW.")
    w("// %tokens, %positions (0..T-1 on every row) and %targets are BxT ids.")
    if bf16:
        w("// bf16: parameters and compute are bf16; the loss takes f32 logits.")
    w("")
    w("module attributes {dist.placement = #dist.placement<%s, [%d]>} {" % (cfg.device, cfg.ranks))
    for name, shape, init in specs:
        role = "frozen" if name in frozen else "param"
        w("  train.param @%s %s : %s init %s%s" % (name, role, tensor(shape, elem), init,
                                                  tp_plan_attr(name, cfg.tp_plan)))
    w("")
    w("  train.optimizer @adamw adamw lr 3.0e-04 betas(0.9, 0.95) eps 1.0e-08 weight_decay 0.1")
    w("")
    ids = tensor(BT, "i32")
    w("  func.func @step(%%tokens: %s, %%positions: %s, %%targets: %s) -> tensor<f32>" % (ids, ids, ids))
    w("      attributes {train.step} {")
    out.extend(body.render("    "))
    w("    return %loss : tensor<f32>")
    w("  }")
    w("}")
    return "\n".join(out) + "\n"


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be a positive integer, got %s" % text)
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=positive, default=DEFAULTS["layers"],
                        help="number of transformer blocks L (default %(default)s)")
    parser.add_argument("--vocab", type=positive, default=DEFAULTS["vocab"],
                        help="vocabulary size V (default %(default)s)")
    parser.add_argument("--seq", type=positive, default=DEFAULTS["seq"],
                        help="sequence length T, also the rows of wpe (default %(default)s)")
    parser.add_argument("--batch", type=positive, default=DEFAULTS["batch"],
                        help="batch size B of one step (default %(default)s)")
    parser.add_argument("--dim", type=positive, default=DEFAULTS["dim"],
                        help="model width D (default %(default)s)")
    parser.add_argument("--heads", type=positive, default=DEFAULTS["heads"],
                        help="attention heads H; must divide --dim (default %(default)s)")
    parser.add_argument("--dtype", choices=["f32", "bf16"], default=DEFAULTS["dtype"],
                        help="element type of parameters and compute (default %(default)s)")
    parser.add_argument("--frozen", default=DEFAULTS["frozen"], metavar="NAME[,NAME...]",
                        help="parameters (names or shell patterns, e.g. 'wpe,h0.*') "
                             "with role frozen: no gradient computed or applied")
    parser.add_argument("--ranks", type=positive, default=DEFAULTS["ranks"],
                        help="ranks of the module's dist.placement (default %(default)s)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default=DEFAULTS["device"],
                        help="device kind of the placement (default %(default)s)")
    parser.add_argument("--forward-only", action="store_true",
                        help="emit the forward pass and train.minimize %%loss only, "
                             "for train-autodiff to differentiate")
    parser.add_argument("--recompute", action="store_true",
                        help="with --forward-only, mark every op of each transformer "
                             "block except its output train.recompute, for "
                             "train-autodiff recompute=true to recompute in the backward")
    parser.add_argument("--tp-plan", choices=["none", "megatron"], default=DEFAULTS["tp_plan"],
                        help="tensor-parallel plan as dist.sbp on the parameters "
                             "(default %(default)s)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write to FILE instead of stdout")
    cfg = parser.parse_args(argv)
    if cfg.recompute and not cfg.forward_only:
        parser.error("--recompute marks ops for train-autodiff; it needs --forward-only")
    if cfg.dim % cfg.heads:
        parser.error("--heads %d does not divide --dim %d" % (cfg.heads, cfg.dim))
    names = [name for name, _, _ in param_specs(cfg)]
    frozen = resolve_frozen(cfg.frozen, names, parser)
    # The header reprints --frozen without spaces or '@'.
    cfg.frozen = ",".join(i.strip().lstrip("@") for i in cfg.frozen.split(",") if i.strip())
    text = generate(cfg, frozen)
    if cfg.output:
        with open(cfg.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
