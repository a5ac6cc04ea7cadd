"""Padding masks: a tokenizer's attention_mask [batch, keys] followed
through the ops Hugging Face builds its attention mask with
(transformers' masking_utils) into scaled_dot_product_attention.

The boolean tensors on the way have no type in our graph. They are kept
symbolic, as a KeyMask: value[b, ..., j] = const[b, ..., j] and
keep[b, j] != 0, with `keep` the step's integer input and `const` a
constant boolean tensor (the causal part) folded by torch. Attention then
becomes causal_mask (when `const` is causal), key_mask and a safe softmax;
eager attention's float mask (torch.where(mask, 0, lowest), added to the
scores: an AdditiveMask) becomes the same masks writing the lowest float,
before the plain softmax eager attention takes. Any other use of such a
value is refused, naming the op."""

import torch

from zero import _zero
from zero._torch_values import UnsupportedModuleError, Live, meta_shape, where

aten = torch.ops.aten


class KeyMask:
    """A boolean tensor of `shape`: const & (keep[b, j] != 0), b the first
    index and j the last; const is None (all true) or a bool tensor that
    broadcasts to `shape`."""

    def __init__(self, keep, shape, const=None):
        self.keep = keep
        self.shape = list(shape)
        self.const = const


class AdditiveMask:
    """The float mask eager attention adds to its scores (masking_utils'
    eager_mask): 0 where `mask`, a KeyMask, is true and `fill` (the dtype's
    lowest, or -inf) elsewhere."""

    def __init__(self, mask, fill):
        self.mask = mask
        self.fill = fill
        self.shape = mask.shape


def holds_mask(value):
    if isinstance(value, (KeyMask, AdditiveMask)):
        return True
    if isinstance(value, (list, tuple)):
        return any(holds_mask(v) for v in value)
    return False


def from_input(x, node):
    """`x != 0` (a cast to bool) of the step's integer [batch, keys]
    input."""
    if x.dtype not in ("i32", "i64") or len(x.shape) != 2:
        raise UnsupportedModuleError(
            f"a cast to bool of {x.dtype}{x.shape} {where(node)}; the "
            "importer takes boolean tensors only as an attention_mask "
            "[batch, keys] of integers on its way to attention")
    return KeyMask(x, x.shape)


def _index(self, node, args, kwargs):
    """mask[batch_ids, key_ids]: masking_utils' padding_mask_function
    reads the attention_mask at aranges of the batch and the keys."""
    source, indices = args[0], args[1]
    shape = meta_shape(node)
    if (not isinstance(source, KeyMask) or source.const is not None
            or len(source.shape) != 2 or len(indices) != 2
            or not all(isinstance(i, torch.Tensor) for i in indices)):
        raise UnsupportedModuleError(
            f"indexing of an attention mask {where(node)}; the importer "
            "takes the attention_mask read at the batch's and the keys' "
            "positions")
    batch, keys = (torch.broadcast_to(i, shape) for i in indices)
    rank = len(shape)
    along_batch = torch.arange(shape[0]).reshape([-1] + [1] * (rank - 1))
    along_keys = torch.arange(shape[-1]).reshape([1] * (rank - 1) + [-1])
    if (shape[0] != source.shape[0] or shape[-1] != source.shape[1]
            or not bool((batch == along_batch).all())
            or not bool((keys == along_keys).all())):
        raise UnsupportedModuleError(
            f"the attention mask read at other positions than its own "
            f"(shifted or permuted keys) {where(node)}")
    return KeyMask(source.keep, shape)


def _and(self, node, args, kwargs):
    a, b = args[0], args[1]
    if isinstance(b, KeyMask):
        a, b = b, a
    shape = meta_shape(node)
    if isinstance(b, KeyMask):
        if b.keep is not a.keep:
            raise UnsupportedModuleError(
                f"two different attention masks combined {where(node)}")
        const = _combine(a.const, b.const)
    elif isinstance(b, torch.Tensor) and b.dtype == torch.bool:
        const = _combine(a.const, b)
    else:
        raise UnsupportedModuleError(
            f"an attention mask combined with {type(b).__name__} "
            f"{where(node)}; the importer takes constant boolean masks")
    if shape[0] != a.shape[0] or shape[-1] != a.shape[-1]:
        raise UnsupportedModuleError(
            f"an attention mask broadcast to {shape} {where(node)}: its "
            "batch and keys must stay the first and the last dimension")
    return KeyMask(a.keep, shape, const)


def _combine(x, y):
    if x is None:
        return y
    if y is None:
        return x
    return torch.logical_and(x, y)


def _expand(self, node, args, kwargs):
    mask, shape = args[0], meta_shape(node)
    if shape[0] != mask.shape[0] or shape[-1] != mask.shape[-1]:
        raise UnsupportedModuleError(
            f"an attention mask expanded to {shape} {where(node)}: its "
            "batch and keys must stay the first and the last dimension")
    return KeyMask(mask.keep, shape, mask.const)


def _constant_scalar(value):
    """A Python number or a one-element constant tensor as a float, else
    None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.reshape(()).item())
    return None


def _where(self, node, args, kwargs):
    """torch.where(mask, 0, lowest): eager attention's float mask."""
    mask, keep, drop = args[0], args[1], args[2]
    zero, fill = _constant_scalar(keep), _constant_scalar(drop)
    if not isinstance(mask, KeyMask) or zero != 0.0 or fill is None \
            or not fill < -1e30:
        raise UnsupportedModuleError(
            f"torch.where on an attention mask {where(node)}; the importer "
            "takes it as eager attention's float mask only: 0 where the mask "
            "allows, the dtype's lowest (or -inf) elsewhere")
    return AdditiveMask(mask, fill)


def _slice(self, node, args, kwargs):
    """mask[..., :keys]: eager attention trims the mask to the keys; only a
    slice that keeps everything is taken."""
    mask, dim = args[0], args[1]
    start = args[2] if len(args) > 2 and args[2] is not None else 0
    end = args[3] if len(args) > 3 and args[3] is not None else None
    step = args[4] if len(args) > 4 else 1
    size = mask.shape[dim]
    if not isinstance(mask, AdditiveMask) or start != 0 or step != 1 or (
            end is not None and end < size):
        raise UnsupportedModuleError(
            f"a slice of an attention mask that drops positions "
            f"{where(node)}")
    return mask


def _add(self, node, args, kwargs):
    """scores + mask: eager attention's masking. The mask is made as a
    tensor (zeros masked by attention_scores with the mask's fill) and
    added, as PyTorch does: the gradient passes every score, masked or not.
    It matters where a query's every key is masked (left padding): the
    softmax of a row of the lowest float is uniform, and its gradient
    reaches every key, which a mask that overwrites the scores would
    cut."""
    scores, mask = args[0], args[1]
    if isinstance(scores, AdditiveMask):
        scores, mask = mask, scores
    if not isinstance(mask, AdditiveMask) or not isinstance(scores, Live) \
            or scores.dtype not in ("f32", "bf16", "f16"):
        raise UnsupportedModuleError(
            f"an attention mask added to {type(scores).__name__} "
            f"{where(node)}; the importer takes eager attention's float mask "
            "added to the attention scores")
    zeros = self.full(scores.shape, 0.0, scores.dtype)
    additive = attention_scores(zeros, mask.mask, False, node, mask.fill)
    return Live(_zero.add(scores.tensor, additive.tensor), scores.shape,
                scores.dtype)


HANDLERS = {
    aten.where.self: _where,
    aten.slice.Tensor: _slice,
    aten.add.Tensor: _add,
    aten.index.Tensor: _index,
    aten.bitwise_and.Tensor: _and,
    aten.logical_and.default: _and,
    aten.expand.default: _expand,
}

HONOURS = {
    aten.where.self: ("condition", "self", "other"),
    aten.index.Tensor: ("self", "indices"),
    aten.bitwise_and.Tensor: ("self", "other"),
    aten.logical_and.default: ("self", "other"),
}


def lower(self, node, args, kwargs):
    """A node some of whose arguments are KeyMasks."""
    handler = HANDLERS.get(node.target)
    if handler is None:
        raise UnsupportedModuleError(
            f"the attention mask reaches {node.target} {where(node)}; the "
            "importer takes it, as Hugging Face's masking_utils builds it, "
            "into scaled_dot_product_attention, or as eager attention's "
            "float mask added to the scores")
    return handler(self, node, args, kwargs)


def attention_scores(scores, mask, causal, node, fill=float("-inf")):
    """Scores [batch, ..., queries, keys] masked by `mask`, a KeyMask:
    causal_mask where its constant part is causal, then key_mask, each
    writing `fill` (-inf: ready for a safe softmax)."""
    batch, queries, keys = scores.shape[0], scores.shape[-2], \
        scores.shape[-1]
    # PyTorch aligns a mask with the scores from the right: its first
    # dimension is the batch only at the scores' own rank.
    if (len(mask.shape) != len(scores.shape) or mask.shape[0] != batch
            or mask.shape[-1] != keys or mask.shape[-2] not in (1, queries)):
        raise UnsupportedModuleError(
            f"attention with a mask of shape {mask.shape} for scores "
            f"{scores.shape} {where(node)}")
    if mask.const is not None:
        const = torch.broadcast_to(mask.const,
                                   mask.shape[:-2] + [queries, keys])
        const = const.reshape(-1, queries, keys)
        first = const[0]
        if not bool((const == first).all()):
            raise UnsupportedModuleError(
                f"attention with a constant mask that differs between "
                f"sequences or heads {where(node)}")
        lower = torch.tril(torch.ones(queries, keys, dtype=torch.bool))
        if bool((first == lower).all()):
            causal = True
        elif not bool(first.all()):
            raise UnsupportedModuleError(
                f"attention with a mask whose constant part is neither "
                f"causal nor allows every position (a sliding window, a "
                f"prefix) {where(node)}")
    tensor = scores.tensor
    if causal:
        tensor = _zero.causal_mask(tensor, fill)
    tensor = _zero.key_mask(tensor, mask.keep.tensor, fill)
    return Live(tensor, scores.shape, scores.dtype)
