"""One handler per core ATen op the PyTorch importer maps (docs/torch.md):
each gets the importer, the fx node and its resolved arguments (live
values, constant tensors, numbers) and returns the op's value."""

import torch

from zero import _torch_attention, _torch_masks, _zero
from zero._torch_values import (UnsupportedModuleError, Live, Transposed,
                                check_batch, dtype_name, meta_shape, where)

aten = torch.ops.aten

# Bookkeeping nodes: the value passes through unchanged.
IDENTITY = {
    aten.clone.default,
    aten.alias.default,
    aten.detach.default,
    aten.lift_fresh_copy.default,
    aten.contiguous.default,
}
DROPPED = {aten._assert_tensor_metadata.default}

UNARY = {
    aten.neg.default: "neg",
    aten.exp.default: "exp",
    aten.log.default: "log",
    aten.sqrt.default: "sqrt",
    aten.rsqrt.default: "rsqrt",
    aten.tanh.default: "tanh",
    aten.relu.default: "relu",
    aten.sigmoid.default: "sigmoid",
    aten.silu.default: "silu",
}

RESHAPES = {
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.unsqueeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.squeeze.default,
    aten.flatten.using_ints,
}


def _dim(dim, rank):
    return dim + rank if dim < 0 else dim


def _add(self, node, args, kwargs, op="add"):
    a, b = args[0], args[1]
    alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
    if alpha != 1:
        if isinstance(b, Live):
            b = Live(_zero.scale(b.tensor, float(alpha)), b.shape, b.dtype)
        else:
            b = b * alpha
    mask = _additive_causal_mask(self, node, a, b) if op == "add" else None
    if mask is not None:
        return mask
    return self.binary(node, a, b, op)


def _additive_causal_mask(self, node, a, b):
    """scores + M, M a constant that is 0 on and below the diagonal of the
    last two dims and very negative above: Hugging Face's causal mask."""
    scores, mask = (a, b) if isinstance(a, Live) else (b, a)
    if not isinstance(scores, Live) or not isinstance(mask, torch.Tensor):
        return None
    if mask.dim() < 2 or not mask.is_floating_point():
        return None
    rows, cols = mask.shape[-2], mask.shape[-1]
    if rows != cols or list(meta_shape(node)) != scores.shape:
        return None
    flat = mask.reshape(-1, rows, cols)
    lower = torch.tril(torch.ones(rows, cols, dtype=torch.bool))
    if not bool((flat[:, lower] == 0).all()):
        return None
    upper = flat[:, ~lower]
    if upper.numel() and not bool((upper == upper.reshape(-1)[0]).all()):
        return None
    fill = float(upper.reshape(-1)[0]) if upper.numel() else float("-inf")
    if fill > -1e30:
        return None
    return Live(_zero.causal_mask(scores.tensor, float("-inf")),
                scores.shape, scores.dtype)


def _sub(self, node, args, kwargs):
    return _add(self, node, args, kwargs, op="sub")


def _mul(self, node, args, kwargs):
    source = _gelu_new_input(node)
    if source is not None:
        x = self.live(self.values[source], node)
        return Live(_zero.gelu(x.tensor), x.shape, x.dtype)
    return self.binary(node, args[0], args[1], "mul")


def _with_scalar(node, target, scalar):
    """`node` is target(v, scalar) or target(scalar, v): v, else None."""
    if not isinstance(node, torch.fx.Node) or node.target is not target:
        return None
    a, b = node.args[0], node.args[1]
    for value, number in ((a, b), (b, a)):
        if isinstance(value, torch.fx.Node) and isinstance(
                number, (int, float)) and abs(number - scalar) <= 1e-6 * abs(
                    scalar):
            return value
    return None


def _gelu_new_input(node):
    """x when `node` ends Hugging Face's gelu_new written out:
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), which is train.gelu.
    The ops before it are then left unread (and not emitted)."""
    if len(node.args) != 2:
        return None
    for half, rest in ((node.args[0], node.args[1]),
                       (node.args[1], node.args[0])):
        x = _with_scalar(half, aten.mul.Tensor, 0.5)
        tanh = _with_scalar(rest, aten.add.Tensor, 1.0)
        if x is None or tanh is None or tanh.target is not aten.tanh.default:
            continue
        inner = _with_scalar(tanh.args[0], aten.mul.Tensor, 0.7978845608028654)
        if inner is None or inner.target is not aten.add.Tensor:
            continue
        if inner.args[0] is x:
            cubic = _with_scalar(inner.args[1], aten.mul.Tensor, 0.044715)
        elif inner.args[1] is x:
            cubic = _with_scalar(inner.args[0], aten.mul.Tensor, 0.044715)
        else:
            continue
        if (cubic is not None and cubic.target is aten.pow.Tensor_Scalar
                and cubic.args[0] is x and cubic.args[1] == 3):
            return x
    return None


def _div(self, node, args, kwargs):
    return self.binary(node, args[0], args[1], "div")


def _pow(self, node, args, kwargs):
    x, exponent = self.live(args[0], node), args[1]
    if exponent == 2:
        return Live(_zero.mul(x.tensor, x.tensor), x.shape, x.dtype)
    if exponent == 3:
        square = _zero.mul(x.tensor, x.tensor)
        return Live(_zero.mul(square, x.tensor), x.shape, x.dtype)
    if exponent == 0.5:
        return Live(_zero.sqrt(x.tensor), x.shape, x.dtype)
    if exponent == -0.5:
        return Live(_zero.rsqrt(x.tensor), x.shape, x.dtype)
    if exponent == 1:
        return x
    raise UnsupportedModuleError(
        f"pow with exponent {exponent!r} {where(node)}; the importer takes "
        "0.5, -0.5, 1, 2 and 3")


def _permute(self, node, args, kwargs):
    x = self.live(args[0], node)
    perm = [_dim(d, len(x.shape)) for d in args[1]]
    if perm == list(range(len(perm))):
        return x
    if perm == [1, 0] and node.users and all(
            user.target in (aten.mm.default, aten.addmm.default)
            and user.args[-1] is node and node not in user.args[:-1]
            for user in node.users):
        return Transposed(x, meta_shape(node))
    return Live(_zero.transpose(x.tensor, perm), meta_shape(node), x.dtype)


def _transpose(self, node, args, kwargs):
    x = self.live(args[0], node)
    rank = len(x.shape)
    perm = list(range(rank))
    if node.target is aten.t.default:
        a, b = 0, rank - 1
    else:
        a, b = _dim(args[1], rank), _dim(args[2], rank)
    perm[a], perm[b] = perm[b], perm[a]
    if a == b:
        return x
    return Live(_zero.transpose(x.tensor, perm), meta_shape(node), x.dtype)


def _expand(self, node, args, kwargs):
    return self.broadcast(self.live(args[0], node), meta_shape(node), node)


def _mm(self, node, args, kwargs):
    a, b = self.live(args[0], node), args[1]
    transpose_b = isinstance(b, Transposed)
    b = self.live(b.source if transpose_b else b, node)
    if a.dtype != b.dtype:
        raise UnsupportedModuleError(
            f"{node.target}: operands of {a.dtype} and {b.dtype} "
            f"{where(node)}")
    out = _zero.matmul(a.tensor, b.tensor, transpose_b=transpose_b)
    return Live(out, meta_shape(node), a.dtype)


def _addmm(self, node, args, kwargs):
    """beta bias + alpha (mat1 @ mat2). With beta 0 the bias is still
    read, times 0: a parameter takes part with a zero gradient, so weight
    decay still moves it, as in PyTorch (where, unlike here, a NaN in such
    a bias does not propagate)."""
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
    product = _mm(self, node, [args[1], args[2]], {})
    shape = product.shape
    if alpha != 1:
        product = Live(_zero.scale(product.tensor, float(alpha)), shape,
                       product.dtype)
    bias = self.live(args[0], node)
    if beta != 1:
        bias = Live(_zero.scale(bias.tensor, float(beta)), bias.shape,
                    bias.dtype)
    if bias.shape == [shape[-1]]:
        return Live(_zero.bias_add(product.tensor, bias.tensor), shape,
                    product.dtype)
    bias = self.broadcast(bias, shape, node)
    return Live(_zero.add(product.tensor, bias.tensor), shape, product.dtype)


def _layer_norm(self, node, args, kwargs):
    x = self.live(args[0], node)
    normalized, weight, bias, eps = args[1], args[2], args[3], args[4]
    if len(normalized) != 1 or normalized[0] != x.shape[-1]:
        raise UnsupportedModuleError(
            f"layer_norm over {list(normalized)} of {x.shape} "
            f"{where(node)}; the importer normalizes the last dim only")
    features = [x.shape[-1]]
    gamma = self.live(weight, node) if weight is not None else self.full(
        features, 1.0, x.dtype)
    beta = self.live(bias, node) if bias is not None else self.full(
        features, 0.0, x.dtype)
    y = _zero.layer_norm(x.tensor, gamma.tensor, beta.tensor, float(eps))
    # The mean and rstd outputs are the op's own; nothing reads them.
    return [Live(y, x.shape, x.dtype), None, None]


def _embedding(self, node, args, kwargs):
    table, ids = self.live(args[0], node), args[1]
    padding_idx = args[2]  # normalized: given, or the schema's -1
    # aten's -1 means no padding row (F.embedding has already turned a
    # negative index into a row); ids are never negative, so neither is a
    # row that gets no gradient.
    padding_idx = None if padding_idx < 0 else int(padding_idx)
    if padding_idx is not None and padding_idx >= table.shape[0]:
        raise UnsupportedModuleError(
            f"embedding with padding_idx {padding_idx} of a "
            f"{table.shape[0]}-row table {where(node)}")
    if isinstance(ids, torch.Tensor):
        return _constant_lookup(self, node, table, ids, padding_idx)
    return Live(_zero.embedding(table.tensor, ids.tensor, padding_idx),
                meta_shape(node), table.dtype)


def _runs(ids):
    """[start, length] of each run of consecutive ids, in order: one slice
    each."""
    runs = []
    for value in ids:
        if runs and value == runs[-1][0] + runs[-1][1]:
            runs[-1][1] += 1
        else:
            runs.append([value, 1])
    return runs


def _constant_lookup(self, node, table, ids, padding_idx):
    """The rows of `table` at constant `ids` (position ids, OPT's learned
    positions, BERT's token types), made of slices of the table so that
    the gradient reaches exactly the rows looked up: ids equal along the
    leading dims are looked up once and expanded, equal ids are one row
    expanded, and runs of consecutive ids (arange) are one slice each."""
    vocabulary, features = table.shape
    shape = list(ids.shape) + [features]
    flat = ids.reshape(-1)
    if flat.numel() == 0:
        raise UnsupportedModuleError(f"embedding of no ids {where(node)}")
    low, high = int(flat.min()), int(flat.max())
    if low < 0 or high >= vocabulary:
        raise UnsupportedModuleError(
            f"embedding of constant ids in [{low}, {high}] from a "
            f"{vocabulary}-row table {where(node)}")
    if padding_idx is not None and bool((flat == padding_idx).any()):
        # Slices would train the row that PyTorch leaves alone.
        raise UnsupportedModuleError(
            f"embedding of constant ids holding its padding_idx "
            f"{padding_idx} {where(node)}")
    if flat.numel() > 1 and bool((flat == flat[0]).all()):
        row = _zero.narrow(table.tensor, 0, int(flat[0]), 1)
        row = self.reshape(Live(row, [1, features], table.dtype), [features])
        return self.broadcast(row, shape, node)
    if ids.dim() >= 2 and ids.shape[0] > 1 and bool((ids == ids[:1]).all()):
        inner = _constant_lookup(self, node, table, ids[0], padding_idx)
        return self.broadcast(inner, shape, node)
    parts = [_zero.narrow(table.tensor, 0, start, length)
             for start, length in _runs(flat.tolist())]
    rows = parts[0] if len(parts) == 1 else _zero.concat(parts, 0)
    return self.reshape(Live(rows, [flat.numel(), features], table.dtype),
                        shape)


def _softmax(self, node, args, kwargs):
    x, dim = self.live(args[0], node), _dim(args[1], len(args[0].shape))
    # _softmax's half_to_float has no default: honoured where it is False.
    if node.target is aten._softmax.default and args[2]:
        raise UnsupportedModuleError(
            f"_softmax(half_to_float=True) {where(node)}")
    if self.fused_attention and _torch_attention.eager_attention_scores(
            self, node):
        # Imported as written, it would keep the [L, S] probabilities the
        # user asked attention="fused" to save, without a word.
        raise UnsupportedModuleError(
            f"attention=\"fused\" takes attention through "
            f"scaled_dot_product_attention, but this attention is written "
            f"as separate ops (a matmul of two activations, then softmax) "
            f"{where(node)}; load the model with attn_implementation="
            f"\"sdpa\" where its family has it, or import it with "
            f"attention=\"separate\"")
    if dim != len(x.shape) - 1:
        raise UnsupportedModuleError(
            f"softmax over dim {dim} of {x.shape} {where(node)}; the "
            "importer takes the last dim")
    return Live(_zero.softmax(x.tensor), x.shape, x.dtype)


def _gelu(self, node, args, kwargs):
    approximate = kwargs.get("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise UnsupportedModuleError(
            f"gelu(approximate='{approximate}') {where(node)}")
    x = self.live(args[0], node)
    return Live(_zero.gelu(x.tensor, exact=approximate == "none"), x.shape,
                x.dtype)


def _reduce(self, node, args, kwargs, op):
    x = self.live(args[0], node)
    dims = args[1] if len(args) > 1 else kwargs.get("dim")
    keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    rank = len(x.shape)
    # An empty dim list reduces every dim, as no list does: `x.sum()`
    # exports as sum.dim_IntList(x, []).
    dims = list(range(rank)) if not dims else sorted(
        _dim(d, rank) for d in dims)
    reduced = getattr(_zero, op)(x.tensor, dims)
    kept = [e for d, e in enumerate(x.shape) if d not in dims]
    out = Live(reduced, kept, x.dtype)
    return self.reshape(out, meta_shape(node)) if keepdim else out


def _slice(self, node, args, kwargs):
    x = self.live(args[0], node)
    rank = len(x.shape)
    dim = _dim(args[1] if len(args) > 1 else 0, rank)
    start = args[2] if len(args) > 2 else None
    end = args[3] if len(args) > 3 else None
    step = args[4] if len(args) > 4 else 1
    if not isinstance(step, int) or step < 1:
        # PyTorch itself refuses a step below 1.
        raise UnsupportedModuleError(f"a slice with step {step} "
                                     f"{where(node)}")
    extent = x.shape[dim]
    start = 0 if start is None else start
    end = extent if end is None else end
    start = max(0, min(extent, start + extent if start < 0 else start))
    end = max(start, min(extent, end + extent if end < 0 else end))
    if start == 0 and end == extent and step == 1:
        return x
    count = -(-(end - start) // step)
    if step == 1 or count <= 1:
        return _narrow(x, dim, start, count)
    return _strided(self, x, dim, start, step, count)


def _narrow(x, dim, start, length):
    shape = list(x.shape)
    shape[dim] = length
    return Live(_zero.narrow(x.tensor, dim, start, length), shape, x.dtype)


def _strided(self, x, dim, start, step, count):
    """x[start : start + count * step : step] along `dim`, exactly, from
    ops with gradients (GPT-J's and Cohere's interleaved rotary take x[...,
    ::2] and x[..., 1::2]): the first count - 1 picks are every step-th
    row of a [count - 1, step] reshape, the last is narrowed on its own
    (the range need not reach a whole group past it), then concatenated."""
    groups = count - 1
    shape = list(x.shape)
    grouped = self.reshape(_narrow(x, dim, start, groups * step),
                           shape[:dim] + [groups, step] + shape[dim + 1:])
    picked = self.reshape(_narrow(grouped, dim + 1, 0, 1),
                          shape[:dim] + [groups] + shape[dim + 1:])
    last = _narrow(x, dim, start + groups * step, 1)
    shape[dim] = count
    return Live(_zero.concat([picked.tensor, last.tensor], dim), shape,
                x.dtype)


def _select(self, node, args, kwargs):
    """x.select(dim, i): the position's slice, its dim dropped."""
    x = self.live(args[0], node)
    rank = len(x.shape)
    dim = _dim(args[1], rank)
    index = args[2]
    extent = x.shape[dim]
    if not isinstance(index, int) or not -extent <= index < extent:
        raise UnsupportedModuleError(
            f"select of index {index} along a dim of {extent} {where(node)}")
    index += extent if index < 0 else 0
    return self.reshape(_narrow(x, dim, index, 1), meta_shape(node))


def _index(self, node, args, kwargs):
    """x[..., ids, ...] with constant integer ids along one dim (Falcon's
    fused_qkv[..., [-2], :]): the slices at those positions concatenated,
    runs of consecutive ids one slice each, so the gradient reaches exactly
    the positions read (a repeated id twice)."""
    x = self.live(args[0], node)
    indices = list(args[1])
    given = [(d, i) for d, i in enumerate(indices) if i is not None]
    if len(given) != 1:
        raise UnsupportedModuleError(
            f"indexing by {len(given)} index tensors at once {where(node)}; "
            "the importer takes one, along one dim")
    dim, ids = given[0]
    if not isinstance(ids, torch.Tensor):
        raise UnsupportedModuleError(
            f"indexing by ids computed in the step {where(node)}; the "
            "importer takes constant ids (the result of a gather by computed "
            "ids is not implemented)")
    if ids.dtype == torch.bool or ids.is_floating_point():
        raise UnsupportedModuleError(
            f"indexing by a {ids.dtype} tensor {where(node)}; the importer "
            "takes integer ids (a boolean mask selects a data-dependent "
            "number of elements)")
    extent = x.shape[dim]
    flat = ids.reshape(-1).tolist()
    if not flat or not all(-extent <= i < extent for i in flat):
        raise UnsupportedModuleError(
            f"indexing a dim of {extent} by ids {flat[:8]} {where(node)}")
    runs = _runs(i + extent if i < 0 else i for i in flat)
    parts = [_narrow(x, dim, start, length) for start, length in runs]
    shape = list(x.shape)
    shape[dim] = len(flat)
    picked = parts[0] if len(parts) == 1 else Live(
        _zero.concat([p.tensor for p in parts], dim), shape, x.dtype)
    return self.reshape(picked, meta_shape(node))


def _split(self, node, args, kwargs):
    x = self.live(args[0], node)
    rank = len(x.shape)
    dim = _dim(args[2] if len(args) > 2 else kwargs.get("dim", 0), rank)
    sizes = args[1]
    if isinstance(sizes, int):
        total, sizes = x.shape[dim], []
        while sum(sizes) < total:
            sizes.append(min(args[1], total - sum(sizes)))
    parts, offset = [], 0
    for size in sizes:
        shape = list(x.shape)
        shape[dim] = size
        parts.append(Live(_zero.narrow(x.tensor, dim, offset, size), shape,
                          x.dtype))
        offset += size
    return parts


def _cat(self, node, args, kwargs):
    tensors = args[0]
    like = next(t for t in tensors if isinstance(t, Live))
    rank = len(like.shape)
    dim = _dim(args[1] if len(args) > 1 else kwargs.get("dim", 0), rank)
    parts = [self.live(t, node) for t in tensors]
    parts = [p for p in parts if p.shape[dim] > 0]
    if len(parts) == 1:
        return parts[0]
    return Live(_zero.concat([p.tensor for p in parts], dim),
                meta_shape(node), like.dtype)


def _to_copy(self, node, args, kwargs):
    x = self.live(args[0], node)
    dtype = kwargs.get("dtype")
    if dtype is None:
        return x
    if dtype == torch.bool:
        return _torch_masks.from_input(x, node)
    target = dtype_name(dtype, "a cast")
    if target == x.dtype:
        return x
    if target not in ("f32", "bf16", "f16") or x.dtype not in ("f32", "bf16",
                                                               "f16"):
        raise UnsupportedModuleError(
            f"a cast from {x.dtype} to {target} {where(node)}")
    return Live(_zero.cast(x.tensor, target), x.shape, target)


def _dropout(self, node, args, kwargs):
    """native_dropout (training mode): the result and, unused by the
    modules we take, the mask."""
    x = self.live(args[0], node)
    rate, train = float(args[1]), args[2]
    if not train or rate == 0.0:
        return [x, None]
    check_batch(self, node, x.shape, "dropout")
    return [Live(_zero.dropout(x.tensor, rate), x.shape, x.dtype), None]


def _cross_entropy(self, node, args, kwargs):
    logits, labels = self.live(args[0], node), args[1]
    if not isinstance(labels, Live) or labels.dtype not in ("i32", "i64"):
        raise UnsupportedModuleError(
            f"cross_entropy with targets that are not integer class indices "
            f"{where(node)}")
    # Normalized: given, or the schema's -100. Positions labelled so take no
    # part, and the mean is over the others of the global batch (the count
    # is averaged over the ranks), as one process training on it.
    ignore_index = int(args[4])
    label_smoothing = float(args[5])  # PyTorch's, as the op takes it
    if len(logits.shape) > 2:
        # PyTorch's classes are dim 1 of [N, C, d1, ...]: move them last.
        rank = len(logits.shape)
        perm = [0] + list(range(2, rank)) + [1]
        shape = [logits.shape[d] for d in perm]
        logits = Live(_zero.transpose(logits.tensor, perm), shape,
                      logits.dtype)
    return Live(
        _zero.softmax_cross_entropy(logits.tensor, labels.tensor,
                                    ignore_index=ignore_index,
                                    label_smoothing=label_smoothing), [],
        "f32")


HANDLERS = {
    aten.add.Tensor: _add,
    aten.add.Scalar: _add,
    aten.sub.Tensor: _sub,
    aten.sub.Scalar: _sub,
    aten.mul.Tensor: _mul,
    aten.mul.Scalar: _mul,
    aten.div.Tensor: _div,
    aten.div.Scalar: _div,
    aten.pow.Tensor_Scalar: _pow,
    aten.permute.default: _permute,
    aten.t.default: _transpose,
    aten.transpose.int: _transpose,
    aten.expand.default: _expand,
    aten.mm.default: _mm,
    aten.bmm.default: _mm,
    aten.matmul.default: _mm,
    aten.addmm.default: _addmm,
    aten.native_layer_norm.default: _layer_norm,
    aten.embedding.default: _embedding,
    aten._softmax.default: _softmax,
    aten.softmax.int: _softmax,
    aten.gelu.default: _gelu,
    aten.mean.dim: lambda s, n, a, k: _reduce(s, n, a, k, "reduce_mean"),
    aten.sum.dim_IntList: lambda s, n, a, k: _reduce(s, n, a, k, "reduce_sum"),
    aten.mean.default: lambda s, n, a, k: _reduce(s, n, a, k, "reduce_mean"),
    aten.sum.default: lambda s, n, a, k: _reduce(s, n, a, k, "reduce_sum"),
    aten.cross_entropy_loss.default: _cross_entropy,
    aten.slice.Tensor: _slice,
    aten.select.int: _select,
    aten.index.Tensor: _index,
    aten.split_with_sizes.default: _split,
    aten.split.Tensor: _split,
    aten.cat.default: _cat,
    aten._to_copy.default: _to_copy,
    aten.scaled_dot_product_attention.default: _torch_attention.sdpa,
    aten.native_dropout.default: _dropout,
}


# The arguments each mapping honours, by the names of its op's schema.
# Before a call is lowered, any other argument given a value other than its
# default is refused (_torch_schema.check_arguments), so a mapping cannot
# drop an argument unseen. Arguments that say where or how values are
# stored, not what they are (memory_format, device, layout, pin_memory,
# non_blocking, an embedding's sparse gradient, expand's implicit), are
# honoured by every mapping of an op that has them.
_SELF = ("self",)
HONOURS = {
    **{op: _SELF for op in UNARY},
    aten.clone.default: ("self", "memory_format"),
    aten.alias.default: _SELF,
    aten.detach.default: _SELF,
    aten.lift_fresh_copy.default: _SELF,
    aten.contiguous.default: ("self", "memory_format"),
    # Reshapes take the result's shape from the node, whatever spells it.
    aten.view.default: ("self", "size"),
    aten._unsafe_view.default: ("self", "size"),
    aten.reshape.default: ("self", "shape"),
    aten.unsqueeze.default: ("self", "dim"),
    aten.squeeze.dim: ("self", "dim"),
    aten.squeeze.dims: ("self", "dim"),
    aten.squeeze.default: _SELF,
    aten.flatten.using_ints: ("self", "start_dim", "end_dim"),
    aten.add.Tensor: ("self", "other", "alpha"),
    aten.add.Scalar: ("self", "other", "alpha"),
    aten.sub.Tensor: ("self", "other", "alpha"),
    aten.sub.Scalar: ("self", "other", "alpha"),
    aten.mul.Tensor: ("self", "other"),
    aten.mul.Scalar: ("self", "other"),
    aten.div.Tensor: ("self", "other"),
    aten.div.Scalar: ("self", "other"),
    aten.pow.Tensor_Scalar: ("self", "exponent"),
    aten.permute.default: ("self", "dims"),
    aten.t.default: _SELF,
    aten.transpose.int: ("self", "dim0", "dim1"),
    aten.expand.default: ("self", "size", "implicit"),
    aten.mm.default: ("self", "mat2"),
    aten.bmm.default: ("self", "mat2"),
    aten.matmul.default: ("self", "other"),
    aten.addmm.default: ("self", "mat1", "mat2", "beta", "alpha"),
    aten.native_layer_norm.default: ("input", "normalized_shape", "weight",
                                     "bias", "eps"),
    aten.embedding.default: ("weight", "indices", "padding_idx", "sparse"),
    aten._softmax.default: ("self", "dim", "half_to_float"),
    aten.softmax.int: ("self", "dim"),
    aten.gelu.default: ("self", "approximate"),
    aten.mean.dim: ("self", "dim", "keepdim"),
    aten.sum.dim_IntList: ("self", "dim", "keepdim"),
    aten.mean.default: _SELF,
    aten.sum.default: _SELF,
    aten.cross_entropy_loss.default: ("self", "target", "ignore_index",
                                      "label_smoothing"),
    aten.slice.Tensor: ("self", "dim", "start", "end", "step"),
    aten.select.int: ("self", "dim", "index"),
    aten.index.Tensor: ("self", "indices"),
    aten.split_with_sizes.default: ("self", "split_sizes", "dim"),
    aten.split.Tensor: ("self", "split_size", "dim"),
    aten.cat.default: ("tensors", "dim"),
    aten._to_copy.default: ("self", "dtype", "layout", "device", "pin_memory",
                            "non_blocking", "memory_format"),
    aten.scaled_dot_product_attention.default: ("query", "key", "value",
                                                "attn_mask", "dropout_p",
                                                "is_causal", "scale"),
    aten.native_dropout.default: ("input", "p", "train"),
}

# What an op with no mapping says beyond that, where it tells the user
# something: what it belongs to and what is not supported.
UNMAPPED = {
    aten.topk.default:
    "top-k routing, as a mixture of experts' router takes it (Mixtral, "
    "Qwen-MoE, DeepSeek-MoE): mixture-of-experts layers are not supported "
    "yet",
    aten.where.self:
    "torch.where of tensors is not supported yet; where it builds the "
    "attention mask of scaled_dot_product_attention (T5 under "
    "attn_implementation=\"sdpa\", the default), load the model with "
    "attn_implementation=\"eager\"",
    aten.cumsum.default:
    "a cumulative sum is not supported yet (Bloom, OPT and Falcon with "
    "ALiBi take their positions from the attention_mask's: import them "
    "without the attention_mask input, and the positions are constants)",
}

# What the user can do instead, where an argument is refused.
HINTS = {
    aten.embedding.default: {
        "scale_grad_by_freq":
        "PyTorch divides each row's gradient by how often its id occurs in "
        "the batch, and under data parallelism each rank would count only "
        "its part of the batch: build the embedding with "
        "scale_grad_by_freq=False",
    },
    aten.cross_entropy_loss.default: {
        "weight": "compute the loss without class weights",
        "reduction": "take the mean (reduction='mean')",
    },
    aten.scaled_dot_product_attention.default: {
        "enable_gqa":
        "repeat the key and value heads to the query's count before "
        "attention",
    },
}
