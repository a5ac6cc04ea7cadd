"""The importer's attention (docs/torch.md): scaled_dot_product_attention
as PyTorch's math backend computes it or as one train.attention
(attention="fused"), and the eager attention "fused" cannot take, found
at its softmax so that it is refused rather than imported unfused."""

import torch

from zero import _torch_masks, _zero
from zero._torch_values import (UnsupportedModuleError, Live, check_batch,
                                where)

aten = torch.ops.aten


# What eager attention applies between q @ k^T and the softmax: scales,
# soft-caps (tanh), masks, casts and views.
_SCORE_OPS = frozenset((
    "view", "_unsafe_view", "reshape", "expand", "clone", "contiguous",
    "_to_copy", "to", "type_as", "mul", "div", "add", "sub", "neg", "tanh",
    "masked_fill", "where"))
# What a weight passes through on its way into a matmul (a linear layer).
_WEIGHT_OPS = frozenset(("t", "transpose", "permute", "view", "expand",
                         "_unsafe_view", "reshape", "_to_copy"))


def _op_name(node):
    target = node.target
    packet = getattr(target, "overloadpacket", None)
    return getattr(packet, "__name__", None) if packet else None


def _is_weight(self, value):
    """Whether `value` is a parameter, seen through views and casts."""
    while isinstance(value, torch.fx.Node):
        entry = self.values.get(value)
        if isinstance(entry, tuple) and entry and entry[0] == "parameter":
            return True
        if value.op != "call_function" or _op_name(value) not in _WEIGHT_OPS:
            return False
        value = value.args[0]
    return False


def eager_attention_scores(self, node):
    """The matmul of two activations (q @ k^T) the softmax `node` reads
    through _SCORE_OPS, or None: eager attention, which from_torch's
    attention="fused" would otherwise import as separate ops."""
    frontier, seen = [node.args[0]], set()
    while frontier and len(seen) < 32:
        value = frontier.pop()
        if not isinstance(value, torch.fx.Node) or value in seen:
            continue
        seen.add(value)
        if value.op != "call_function":
            continue
        name = _op_name(value)
        if name in ("matmul", "bmm", "einsum"):
            operands = [a for a in value.args if isinstance(a, torch.fx.Node)]
            if operands and not any(_is_weight(self, a) for a in operands):
                return value
        elif name in _SCORE_OPS:
            frontier.extend(a for a in value.args
                            if isinstance(a, torch.fx.Node))
    return None


def sdpa(self, node, args, kwargs):
    q, k, v = (self.live(a, node) for a in args[:3])
    names = ["attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"]
    options = dict(zip(names, args[3:]))
    options.update(kwargs)
    mask = options.get("attn_mask")
    if isinstance(mask, _torch_masks.AdditiveMask):
        # PyTorch's backends treat a float mask of the lowest float and of
        # -inf differently on rows with every key masked; not imported.
        raise UnsupportedModuleError(
            f"attention given the attention mask as floats {where(node)}; "
            "the importer takes it as a boolean mask into "
            "scaled_dot_product_attention (masking_utils' sdpa_mask), or "
            "added to the scores by eager attention")
    # q [..., L, E], k [..., S, E], v [..., S, Ev] -> [..., L, Ev]: queries
    # and keys may differ in number, values in width; the leading dims are
    # one (grouped-query attention arrives with k and v repeated), or k's
    # and v's broadcast to q's, as PyTorch broadcasts them (multi-query
    # attention: Falcon's one key head for all query heads).
    if len(q.shape) == len(k.shape) == len(v.shape) >= 2:
        k, v = (_broadcast_leading(self, t, q.shape[:-2], node)
                for t in (k, v))
    if not (len(q.shape) == len(k.shape) == len(v.shape) >= 2
            and q.shape[:-2] == k.shape[:-2] == v.shape[:-2]
            and k.shape[-1] == q.shape[-1] and v.shape[-2] == k.shape[-2]):
        raise UnsupportedModuleError(
            f"attention with q {q.shape}, k {k.shape}, v {v.shape} "
            f"{where(node)}; the importer takes q [..., L, E], k [..., S, E] "
            "and v [..., S, Ev] with the same leading dims")
    causal = bool(options.get("is_causal", False))
    scale = options.get("scale")
    scale = 1.0 / float(q.shape[-1])**0.5 if scale is None else float(scale)
    if self.fused_attention:
        _check_fusable(node, q, k, v, mask, options)
    if isinstance(mask, _torch_masks.KeyMask):
        # A tokenizer's attention_mask: a query whose keys are all padding
        # (left padding) attends to nothing and gets zeros, as in PyTorch.
        scores = _zero.scale(
            _zero.matmul(q.tensor, k.tensor, transpose_b=True), scale)
        scores = Live(scores, q.shape[:-1] + k.shape[-2:-1], q.dtype)
        masked = _torch_masks.attention_scores(scores, mask, causal, node)
        probs = _attention_dropout(self, node, masked.shape,
                                   _zero.softmax(masked.tensor, safe=True),
                                   options)
        return Live(_zero.matmul(probs, v.tensor),
                    q.shape[:-1] + v.shape[-1:], q.dtype)
    if mask is not None:
        # A constant mask that allows every position (a bidirectional
        # encoder given no attention_mask: BERT) is no mask at all. The
        # causal test needs the mask's own [L, S]: one broadcast along
        # either ([1, S], [L, 1]) is not triangular, whatever it holds.
        full = tuple(mask.shape[-2:]) == (q.shape[-2], k.shape[-2])
        is_causal = not isinstance(mask, Live) and full and \
            _is_causal_mask(mask)
        if not is_causal and (isinstance(mask, Live)
                              or not _allows_all(mask)):
            raise UnsupportedModuleError(
                f"attention with a mask that is neither the constant causal "
                f"mask nor one allowing every position {where(node)}")
        causal = causal or is_causal
    if self.fused_attention:
        return Live(_zero.attention(q.tensor, k.tensor, v.tensor, scale,
                                    causal), q.shape, q.dtype)
    scores = _zero.matmul(q.tensor, k.tensor, transpose_b=True)
    scores = _zero.scale(scores, scale)
    if causal:
        scores = _zero.causal_mask(scores, float("-inf"))
    probs = _attention_dropout(self, node, q.shape[:-1] + k.shape[-2:-1],
                               _zero.softmax(scores), options)
    return Live(_zero.matmul(probs, v.tensor), q.shape[:-1] + v.shape[-1:],
                q.dtype)


def _broadcast_leading(self, x, leading, node):
    """`x` with its leading dims broadcast to `leading`, where they
    broadcast (extents 1 or equal); else `x`, for the caller to refuse."""
    if x.shape[:-2] == list(leading) or not all(
            e in (1, want) for e, want in zip(x.shape[:-2], leading)):
        return x
    return self.broadcast(x, list(leading) + x.shape[-2:], node)


def _check_fusable(node, q, k, v, mask, options):
    """from_torch(attention="fused") takes what train.attention computes:
    causal or unmasked self-attention, q, k and v of one shape and type,
    no dropout. Anything else is refused rather than imported otherwise."""
    reason = None
    if isinstance(mask, _torch_masks.KeyMask):
        reason = "a padding mask (the tokenizer's attention_mask)"
    elif float(options.get("dropout_p", 0.0)) != 0.0:
        reason = f"dropout_p={options['dropout_p']}"
    elif not (q.shape == k.shape == v.shape and q.dtype == k.dtype == v.dtype):
        reason = (f"q {q.shape}, k {k.shape} and v {v.shape} of different "
                  "shapes or types")
    if reason:
        raise UnsupportedModuleError(
            f"attention=\"fused\" takes causal or unmasked self-attention "
            f"with q, k and v of one shape and no dropout; this call has "
            f"{reason} {where(node)}; import it with attention=\"separate\"")


def _attention_dropout(self, node, shape, probs, options):
    """PyTorch's math attention drops attention probabilities: softmax,
    then dropout(dropout_p), then the product with v."""
    rate = float(options.get("dropout_p", 0.0))
    if rate == 0.0:
        return probs
    check_batch(self, node, shape, "attention dropout")
    return _zero.dropout(probs, rate)


def _allows_all(mask):
    if mask.dtype == torch.bool:
        return bool(mask.all())
    return bool((mask == 0).all())


def _is_causal_mask(mask):
    rows, cols = mask.shape[-2], mask.shape[-1]
    lower = torch.tril(torch.ones(rows, cols, dtype=torch.bool))
    flat = mask.reshape(-1, rows, cols)
    if mask.dtype == torch.bool:
        return bool((flat == lower).all())
    return bool((flat[:, lower] == 0).all()) and bool(
        (flat[:, ~lower] < -1e30).all())
