"""Import a PyTorch module through torch.export (docs/torch.md).

    graph = zero.from_torch(model, (ids,))        # a zero.Graph
    graph.config.optimizer(zero.AdamW(lr=1e-3)).enable_zero(True, 3)
    compiled = graph.compile(zero.world_size())
    trainer = graph.trainer(compiled)             # starts from model's weights
    trainer.step([ids, labels])
    model.load_state_dict(graph.state_dict(trainer))

The module is exported with `torch.export`, decomposed to core ATen with
scaled_dot_product_attention kept whole, and each node becomes one or a few
ops of our builder (`zero.Graph`), so that everything a graph can do
(ZeRO stages, precision, offload, accumulation, checkpoints) works on it.
The forward is imported; `train-autodiff` differentiates it. Subgraphs that
depend on no input and no parameter (Hugging Face's causal-mask builder,
position ids, rotary tables) are evaluated once here with torch.
"""

import atexit
import inspect
import operator
import os
import tempfile

import numpy as np
import torch
from torch.export import ExportedProgram

from zero import _zero

aten = torch.ops.aten

__all__ = ["TorchGraph", "UnsupportedModuleError", "from_torch"]


class UnsupportedModuleError(ValueError):
    """The module uses something the importer cannot map; the message
    names the ATen op, the module path and the source line."""


_DTYPES = {
    torch.float32: "f32",
    torch.bfloat16: "bf16",
    torch.float16: "f16",
    torch.int32: "i32",
    torch.int64: "i64",
}

# Bookkeeping nodes: the value passes through unchanged.
_IDENTITY = {
    aten.clone.default,
    aten.alias.default,
    aten.detach.default,
    aten.lift_fresh_copy.default,
    aten.contiguous.default,
}
_DROPPED = {aten._assert_tensor_metadata.default}

_UNARY = {
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

_RESHAPES = {
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.unsqueeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.squeeze.default,
    aten.flatten.using_ints,
}


def _decomposition_table():
    table = torch.export.default_decompositions()
    # Kept whole: it becomes matmul, scale, causal_mask, softmax, matmul,
    # and its decomposition breaks Hugging Face's GPT-2 (a view of the
    # non-contiguous result).
    table.pop(aten.scaled_dot_product_attention.default, None)
    # Kept whole: train.softmax_cross_entropy, where its decomposition is
    # log_softmax, gather and the ignore_index masking.
    table.pop(aten.cross_entropy_loss.default, None)
    # train.silu, rather than x * sigmoid(x) in two kernels.
    table.pop(aten.silu.default, None)
    return table


def _where(node):
    """ `at <module path> (<source line>)` for error messages."""
    parts = []
    stack = node.meta.get("nn_module_stack")
    if stack:
        path, kind = list(stack.values())[-1]
        name = getattr(kind, "__name__", str(kind)).rsplit(".", 1)[-1]
        # The user's module is our wrapper's `m`.
        path = path[2:] if path.startswith("m.") else (
            "" if path == "m" else path)
        parts.append(f"in module '{path}' ({name})" if path else
                     f"in the module itself ({name})")
    trace = node.meta.get("stack_trace")
    if trace:
        lines = [line.strip() for line in trace.strip().splitlines()]
        files = [line for line in lines if line.startswith("File ")]
        if files:
            parts.append(files[-1])
    return "; ".join(parts) if parts else "(no source information)"


def _meta_shape(node):
    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor):
        raise UnsupportedModuleError(
            f"{node.target}: no static tensor shape recorded {_where(node)}")
    shape = []
    for extent in value.shape:
        if not isinstance(extent, int):
            raise UnsupportedModuleError(
                f"{node.target}: data-dependent or symbolic shape "
                f"{tuple(value.shape)} {_where(node)}; export with static "
                "shapes (every dimension fixed by the example inputs)")
        shape.append(extent)
    return shape


def _dtype_name(dtype, what):
    if dtype not in _DTYPES:
        raise UnsupportedModuleError(f"{what} has dtype {dtype}; the importer "
                                     "takes float32, bfloat16, float16, "
                                     "int32 and int64")
    return _DTYPES[dtype]


class _Live:
    """A value of the step: a zero.Tensor with its shape and dtype."""

    def __init__(self, tensor, shape, dtype):
        self.tensor, self.shape, self.dtype = tensor, list(shape), dtype


class _Wrapper(torch.nn.Module):
    """The user's module, returning one tensor: logits, or the loss."""

    def __init__(self, module, forward_kwargs, loss_fn, num_args):
        super().__init__()
        self.m = module
        self.forward_kwargs = dict(forward_kwargs)
        self.loss_fn = loss_fn
        self.num_args = num_args

    def forward(self, *args):
        out = self.m(*args[:self.num_args], **self.forward_kwargs)
        if self.loss_fn is not None:
            return self.loss_fn(out, *args[self.num_args:])
        return _pick_logits(out)


def _pick_logits(out):
    if isinstance(out, torch.Tensor):
        return out
    logits = getattr(out, "logits", None)
    if isinstance(logits, torch.Tensor):
        return logits
    if isinstance(out, (tuple, list)) and out and isinstance(
            out[0], torch.Tensor):
        return out[0]
    raise UnsupportedModuleError(
        f"the module returned {type(out).__name__}; from_torch takes a "
        "tensor of logits (or an output with .logits, or a tuple whose "
        "first element is the logits), or pass loss=fn to compute the loss")


class TorchGraph(_zero.Graph):
    """A zero.Graph imported from a PyTorch module (zero.from_torch).

    Besides the Graph API it keeps what ties it to the module:
    `input_names` (the step's inputs, in order: the module's arguments,
    then `labels` or the loss function's targets), `parameter_paths` (our
    parameter name -> every module path holding that tensor: tied weights
    share one parameter), `constants` (frozen parameters the importer made
    of constant tensors), and `init_path`, a .safetensors file of the
    module's weights from which `trainer()` starts.
    """

    def trainer(self, compiled, seed=1):
        """A zero.Trainer starting from the module's weights."""
        from zero.trainer import Trainer
        return Trainer(compiled, seed=seed, init=self.init_path,
                       input_names=self.input_names)

    def state_dict(self, trainer):
        """The trained state as the module's own state_dict: torch tensors
        under the module's names (tied names share values), buffers as the
        module had them. Collective: every rank must call it."""
        ours = trainer.state_dict()
        result = {}
        for name, value in self._module_state.items():
            our_name = self._state_owner.get(name)
            if our_name is None:
                result[name] = value.detach().clone()
                continue
            array = ours[our_name]
            tensor = torch.from_numpy(np.ascontiguousarray(array))
            if value.dtype == torch.bfloat16 and array.dtype == np.uint16:
                tensor = tensor.view(torch.bfloat16)
            result[name] = tensor.to(value.dtype).reshape(value.shape)
        return result


class _Importer:

    def __init__(self, program, graph, wrapper, compute_dtype):
        self.program = program
        self.graph = graph
        self.wrapper = wrapper
        # What a declared f32 tensor becomes: the configured precision.
        self.compute_dtype = compute_dtype
        self.values = {}  # fx node -> _Live, torch.Tensor, list, or scalar
        self.parameters = {}  # storage key -> (our name, _Live)
        self.parameter_paths = {}
        self.init_tensors = {}
        self.constants = {}
        self.const_count = 0

    # -- Values ------------------------------------------------------------

    def arg(self, value):
        if isinstance(value, torch.fx.Node):
            if value not in self.values:
                raise UnsupportedModuleError(
                    f"{value.target} is used before it is defined")
            return self.values[value]
        if isinstance(value, (list, tuple)):
            return [self.arg(v) for v in value]
        return value

    def is_constant(self, value):
        if isinstance(value, (_Live, _Transposed)):
            return False
        if isinstance(value, list):
            return all(self.is_constant(v) for v in value)
        return True

    def live(self, value, node, like=None):
        """`value` as a _Live: constants become splat `full`s, or frozen
        parameters holding their values."""
        if isinstance(value, _Live):
            return value
        if isinstance(value, _Transposed):
            source = value.source
            return _Live(_zero.transpose(source.tensor, [1, 0]), value.shape,
                         source.dtype)
        if isinstance(value, (int, float, bool)):
            if like is None:
                raise UnsupportedModuleError(
                    f"{node.target}: a scalar operand with no tensor beside "
                    f"it {_where(node)}")
            tensor = self.graph.full(like.shape, float(value), like.dtype)
            return _Live(tensor, like.shape, like.dtype)
        if not isinstance(value, torch.Tensor):
            raise UnsupportedModuleError(
                f"{node.target}: operand {value!r} is neither a tensor nor "
                f"a number {_where(node)}")
        dtype = _dtype_name(value.dtype, f"a constant of {node.target}")
        shape = list(value.shape)
        flat = value.reshape(-1)
        if flat.numel() > 0 and bool((flat == flat[0]).all()):
            if dtype in ("i32", "i64"):
                raise UnsupportedModuleError(
                    f"{node.target}: an integer constant operand "
                    f"{_where(node)}")
            tensor = self.graph.full(shape, float(flat[0]), dtype)
            return _Live(tensor, shape, dtype)
        if dtype in ("i32", "i64"):
            raise UnsupportedModuleError(
                f"{node.target}: a non-constant-valued integer tensor "
                f"computed from no input {_where(node)}; only position ids "
                "of the form arange(start, start + n) are supported (as an "
                "embedding's ids)")
        return self.constant_parameter(value, node)

    def constant_parameter(self, value, node):
        """A frozen parameter holding a constant tensor (rotary tables)."""
        # By value: Hugging Face computes the rotary tables once per use.
        key = (value.dtype, tuple(value.shape),
               value.detach().contiguous().reshape(-1).view(torch.uint8)
               .numpy().tobytes())
        if key not in self.constants:
            name = f"const.{self.const_count}"
            self.const_count += 1
            dtype = _DTYPES[value.dtype]
            shape = list(value.shape)
            if not shape:
                raise UnsupportedModuleError(
                    f"{node.target}: a rank-0 constant {_where(node)}")
            param = self.graph.parameter(name, shape, _zero.Init.zeros())
            param.requires_grad = False
            self.init_tensors[name] = value.detach().to(torch.float32).clone()
            self.constants[key] = (_Live(param.value, shape,
                                         self.compute_dtype), value)
        live, _ = self.constants[key]
        wanted = _DTYPES[value.dtype]
        if wanted == "f32":
            wanted = self.compute_dtype
        if wanted != live.dtype:
            cast = _zero.cast(live.tensor, wanted)
            return _Live(cast, live.shape, wanted)
        return live

    # -- Placeholders --------------------------------------------------------

    def placeholders(self, user_inputs):
        signature = self.program.graph_signature
        state = self.program.state_dict
        constants = self.program.constants
        params = signature.inputs_to_parameters
        buffers = signature.inputs_to_buffers
        lifted = signature.inputs_to_lifted_tensor_constants
        named = dict(self.wrapper.named_parameters(remove_duplicate=False))
        user_index = 0
        for node in self.program.graph.nodes:
            if node.op != "placeholder":
                continue
            if node.name in params:
                path = params[node.name]
                tensor = state[path]
                self.values[node] = ("parameter", path, tensor,
                                     named.get(path))
            elif node.name in buffers:
                path = buffers[node.name]
                tensor = state[path] if path in state else constants[path]
                self.values[node] = tensor
            elif node.name in lifted:
                self.values[node] = constants[lifted[node.name]]
            else:
                self.values[node] = user_inputs[user_index]
                user_index += 1

    def strip(self, path):
        return path[2:] if path.startswith("m.") else path

    def parameter(self, entry, node):
        """The zero parameter for a placeholder, made on first use; tied
        tensors (one tensor, several paths) share one."""
        _, path, tensor, module_param = entry
        key = (tensor.data_ptr(), tuple(tensor.shape), tensor.stride())
        path = self.strip(path)
        if key not in self.parameters:
            dtype = _dtype_name(tensor.dtype, f"parameter '{path}'")
            if dtype not in ("f32", "bf16", "f16"):
                raise UnsupportedModuleError(
                    f"parameter '{path}' is {tensor.dtype}; parameters are "
                    "float")
            shape = list(tensor.shape)
            if not shape or any(extent <= 0 for extent in shape):
                raise UnsupportedModuleError(
                    f"parameter '{path}' has shape {tuple(shape)}; the "
                    "importer takes parameters of rank >= 1 with positive "
                    "extents")
            # Declared f32: the configured precision decides the type it
            # computes in, with an f32 master where that is 16-bit.
            name = path
            param = self.graph.parameter(name, shape, _zero.Init.zeros())
            requires_grad = (module_param.requires_grad
                             if module_param is not None else True)
            if not requires_grad:
                param.requires_grad = False
            self.init_tensors[name] = tensor.detach().to(torch.float32).clone()
            self.parameters[key] = (name,
                                    _Live(param.value, shape,
                                          self.compute_dtype))
            self.parameter_paths[name] = []
        name, live = self.parameters[key]
        if path not in self.parameter_paths[name]:
            self.parameter_paths[name].append(path)
        return live

    # -- The walk -------------------------------------------------------------

    def refuse_dynamic(self):
        """Control flow and data-dependent shapes, named before anything
        else fails on them."""
        for node in self.program.graph.nodes:
            if isinstance(node.target, torch._ops.HigherOrderOperator):
                raise UnsupportedModuleError(
                    f"control flow ({node.target.__name__}) {_where(node)}: a "
                    "training step is one static graph; take the branch "
                    "outside the module, or compute both sides")
            value = node.meta.get("val")
            values = value if isinstance(value, (list, tuple)) else [value]
            for item in values:
                if isinstance(item, torch.Tensor) and any(
                        not isinstance(extent, int) for extent in item.shape):
                    raise UnsupportedModuleError(
                        f"{node.target} has a data-dependent shape "
                        f"{tuple(item.shape)} {_where(node)}: every shape of "
                        "a step is fixed when it is compiled")

    def run(self):
        self.refuse_dynamic()
        output = None
        for node in self.program.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                output = node.args[0]
                break
            if node.op != "call_function":
                raise UnsupportedModuleError(
                    f"a '{node.op}' node ({node.target}) {_where(node)}: "
                    "the importer takes exported functional graphs")
            args = [self.resolve(a, node) for a in node.args]
            kwargs = {k: self.resolve(v, node) for k, v in node.kwargs.items()}
            if node.target in _DROPPED:
                continue
            if self.foldable(args, kwargs):
                self.values[node] = node.target(*args, **kwargs)
                continue
            self.values[node] = self.lower(node, args, kwargs)
        outputs = output if isinstance(output, (list, tuple)) else [output]
        if len(outputs) != 1:
            raise UnsupportedModuleError(
                f"the exported module returns {len(outputs)} values; it must "
                "return one tensor (the logits, or the loss)")
        result = self.values[outputs[0]]
        if not isinstance(result, _Live):
            raise UnsupportedModuleError(
                "the module's output depends on no input and no trainable "
                "parameter")
        return result

    def resolve(self, value, node):
        """Arguments: placeholders of parameters become live values."""
        if isinstance(value, torch.fx.Node):
            resolved = self.arg(value)
            if isinstance(resolved, tuple) and resolved and resolved[0] == \
                    "parameter":
                return self.parameter(resolved, node)
            return resolved
        if isinstance(value, (list, tuple)):
            return [self.resolve(v, node) for v in value]
        return value

    def foldable(self, args, kwargs):
        return all(self.is_constant(a) for a in args) and all(
            self.is_constant(v) for v in kwargs.values())

    def lower(self, node, args, kwargs):
        target = node.target
        if target is operator.getitem:
            return args[0][args[1]]
        if target in _IDENTITY:
            return self.live(args[0], node)
        if target in _UNARY:
            x = self.live(args[0], node)
            return _Live(getattr(_zero, _UNARY[target])(x.tensor), x.shape,
                         x.dtype)
        if target in _RESHAPES:
            x = self.live(args[0], node)
            return self.reshape(x, _meta_shape(node))
        handler = _HANDLERS.get(target)
        if handler is None:
            raise UnsupportedModuleError(
                f"ATen op '{target}' has no mapping to the train dialect "
                f"{_where(node)}; docs/torch.md lists the supported ops")
        return handler(self, node, args, kwargs)

    # -- Helpers ----------------------------------------------------------------

    def reshape(self, x, shape):
        if list(shape) == x.shape:
            return x
        return _Live(_zero.reshape(x.tensor, list(shape)), shape, x.dtype)

    def broadcast(self, x, shape, node):
        """`x` broadcast to `shape` as PyTorch does: size-1 and missing
        leading dims are repeated (reshape, then expand)."""
        shape = list(shape)
        if x.shape == shape:
            return x
        offset = len(shape) - len(x.shape)
        if offset < 0:
            raise UnsupportedModuleError(
                f"{node.target}: cannot broadcast {x.shape} to {shape} "
                f"{_where(node)}")
        kept, new_dims = [], []
        for d, extent in enumerate(shape):
            source = d - offset
            if source >= 0 and x.shape[source] == extent:
                kept.append(extent)
            elif source < 0 or x.shape[source] == 1:
                new_dims.append(d)
            else:
                raise UnsupportedModuleError(
                    f"{node.target}: cannot broadcast {x.shape} to {shape} "
                    f"{_where(node)}")
        squeezed = self.reshape(x, kept)
        return _Live(_zero.expand(squeezed.tensor, shape, new_dims), shape,
                     x.dtype)

    def binary(self, node, a, b, op):
        shape = _meta_shape(node)
        if isinstance(a, _Live) and not isinstance(b, _Live) and op == "mul" \
                and isinstance(b, (int, float)):
            return self.broadcast(
                _Live(_zero.scale(a.tensor, float(b)), a.shape, a.dtype),
                shape, node)
        if isinstance(b, _Live) and not isinstance(a, _Live) and op == "mul" \
                and isinstance(a, (int, float)):
            return self.broadcast(
                _Live(_zero.scale(b.tensor, float(a)), b.shape, b.dtype),
                shape, node)
        if isinstance(a, _Live) and op == "div" and isinstance(b, (int, float)):
            return self.broadcast(
                _Live(_zero.scale(a.tensor, 1.0 / float(b)), a.shape,
                      a.dtype), shape, node)
        like = a if isinstance(a, _Live) else b
        out = _Live(None, shape, like.dtype)
        a = self.broadcast(self.live(a, node, out), shape, node)
        b = self.broadcast(self.live(b, node, out), shape, node)
        if a.dtype != b.dtype:
            raise UnsupportedModuleError(
                f"{node.target}: operands of {a.dtype} and {b.dtype} "
                f"{_where(node)}")
        return _Live(getattr(_zero, op)(a.tensor, b.tensor), shape, a.dtype)


# -- Op handlers --------------------------------------------------------------


def _dim(dim, rank):
    return dim + rank if dim < 0 else dim


def _add(self, node, args, kwargs, op="add"):
    a, b = args[0], args[1]
    alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
    if alpha != 1:
        if isinstance(b, _Live):
            b = _Live(_zero.scale(b.tensor, float(alpha)), b.shape, b.dtype)
        else:
            b = b * alpha
    mask = self.additive_causal_mask(node, a, b) if op == "add" else None
    if mask is not None:
        return mask
    return self.binary(node, a, b, op)


def _additive_causal_mask(self, node, a, b):
    """scores + M, M a constant that is 0 on and below the diagonal of the
    last two dims and very negative above: Hugging Face's causal mask."""
    scores, mask = (a, b) if isinstance(a, _Live) else (b, a)
    if not isinstance(scores, _Live) or not isinstance(mask, torch.Tensor):
        return None
    if mask.dim() < 2 or not mask.is_floating_point():
        return None
    rows, cols = mask.shape[-2], mask.shape[-1]
    if rows != cols or list(_meta_shape(node)) != scores.shape:
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
    return _Live(_zero.causal_mask(scores.tensor, float("-inf")),
                 scores.shape, scores.dtype)


_Importer.additive_causal_mask = _additive_causal_mask


def _sub(self, node, args, kwargs):
    return _add(self, node, args, kwargs, op="sub")


def _mul(self, node, args, kwargs):
    return self.binary(node, args[0], args[1], "mul")


def _div(self, node, args, kwargs):
    if kwargs.get("rounding_mode") is not None:
        raise UnsupportedModuleError(
            f"div with rounding_mode {_where(node)}")
    return self.binary(node, args[0], args[1], "div")


def _pow(self, node, args, kwargs):
    x, exponent = self.live(args[0], node), args[1]
    if exponent == 2:
        return _Live(_zero.mul(x.tensor, x.tensor), x.shape, x.dtype)
    if exponent == 3:
        square = _zero.mul(x.tensor, x.tensor)
        return _Live(_zero.mul(square, x.tensor), x.shape, x.dtype)
    if exponent == 0.5:
        return _Live(_zero.sqrt(x.tensor), x.shape, x.dtype)
    if exponent == -0.5:
        return _Live(_zero.rsqrt(x.tensor), x.shape, x.dtype)
    if exponent == 1:
        return x
    raise UnsupportedModuleError(
        f"pow with exponent {exponent!r} {_where(node)}; the importer takes "
        "0.5, -0.5, 1, 2 and 3")


class _Transposed:
    """A 2-D value read transposed: a weight behind `permute([1, 0])`,
    which the matmuls using it read with transpose_b instead of a copy."""

    def __init__(self, source, shape):
        self.source, self.shape = source, shape


def _permute(self, node, args, kwargs):
    x = self.live(args[0], node)
    perm = [_dim(d, len(x.shape)) for d in args[1]]
    if perm == list(range(len(perm))):
        return x
    if perm == [1, 0] and node.users and all(
            user.target in (aten.mm.default, aten.addmm.default)
            and user.args[-1] is node and node not in user.args[:-1]
            for user in node.users):
        return _Transposed(x, _meta_shape(node))
    return _Live(_zero.transpose(x.tensor, perm), _meta_shape(node), x.dtype)


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
    return _Live(_zero.transpose(x.tensor, perm), _meta_shape(node), x.dtype)


def _expand(self, node, args, kwargs):
    return self.broadcast(self.live(args[0], node), _meta_shape(node), node)


def _mm(self, node, args, kwargs):
    a, b = self.live(args[0], node), args[1]
    transpose_b = isinstance(b, _Transposed)
    b = self.live(b.source if transpose_b else b, node)
    if a.dtype != b.dtype:
        raise UnsupportedModuleError(
            f"{node.target}: operands of {a.dtype} and {b.dtype} "
            f"{_where(node)}")
    out = _zero.matmul(a.tensor, b.tensor, transpose_b=transpose_b)
    return _Live(out, _meta_shape(node), a.dtype)


def _addmm(self, node, args, kwargs):
    if kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1:
        raise UnsupportedModuleError(
            f"addmm with beta or alpha {_where(node)}")
    product = _mm(self, node, [args[1], args[2]], {})
    bias = self.live(args[0], node)
    shape = product.shape
    if bias.shape == [shape[-1]]:
        return _Live(_zero.bias_add(product.tensor, bias.tensor), shape,
                     product.dtype)
    bias = self.broadcast(bias, shape, node)
    return _Live(_zero.add(product.tensor, bias.tensor), shape, product.dtype)


def _layer_norm(self, node, args, kwargs):
    x = self.live(args[0], node)
    normalized, weight, bias, eps = args[1], args[2], args[3], args[4]
    if len(normalized) != 1 or normalized[0] != x.shape[-1]:
        raise UnsupportedModuleError(
            f"layer_norm over {list(normalized)} of {x.shape} "
            f"{_where(node)}; the importer normalizes the last dim only")
    features = [x.shape[-1]]
    gamma = self.live(weight, node) if weight is not None else _Live(
        self.graph.full(features, 1.0, x.dtype), features, x.dtype)
    beta = self.live(bias, node) if bias is not None else _Live(
        self.graph.full(features, 0.0, x.dtype), features, x.dtype)
    y = _zero.layer_norm(x.tensor, gamma.tensor, beta.tensor, float(eps))
    # The mean and rstd outputs are the op's own; nothing reads them.
    return [_Live(y, x.shape, x.dtype), None, None]


def _embedding(self, node, args, kwargs):
    table, ids = self.live(args[0], node), args[1]
    if isinstance(ids, torch.Tensor):
        # Position ids: arange(start, start + n) is a narrow of the table.
        flat = ids.reshape(-1)
        start = int(flat[0]) if flat.numel() else 0
        if not torch.equal(flat, torch.arange(start, start + flat.numel(),
                                              dtype=flat.dtype)):
            raise UnsupportedModuleError(
                f"embedding of constant ids other than a range "
                f"{_where(node)}")
        rows = _zero.narrow(table.tensor, 0, start, flat.numel())
        return self.reshape(_Live(rows, [flat.numel(), table.shape[1]],
                                  table.dtype), _meta_shape(node))
    return _Live(_zero.embedding(table.tensor, ids.tensor), _meta_shape(node),
                 table.dtype)


def _softmax(self, node, args, kwargs):
    x, dim = self.live(args[0], node), _dim(args[1], len(args[0].shape))
    if dim != len(x.shape) - 1:
        raise UnsupportedModuleError(
            f"softmax over dim {dim} of {x.shape} {_where(node)}; the "
            "importer takes the last dim")
    return _Live(_zero.softmax(x.tensor), x.shape, x.dtype)


def _gelu(self, node, args, kwargs):
    approximate = kwargs.get("approximate", "none")
    if approximate != "tanh":
        raise UnsupportedModuleError(
            f"gelu(approximate='{approximate}') {_where(node)}; train.gelu "
            "is the tanh approximation (GELU(approximate='tanh'), "
            "Hugging Face's gelu_new)")
    x = self.live(args[0], node)
    return _Live(_zero.gelu(x.tensor), x.shape, x.dtype)


def _reduce(self, node, args, kwargs, op):
    x = self.live(args[0], node)
    dims = args[1] if len(args) > 1 else kwargs.get("dim")
    keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    if kwargs.get("dtype") is not None:
        raise UnsupportedModuleError(f"{node.target} with dtype "
                                     f"{_where(node)}")
    rank = len(x.shape)
    dims = list(range(rank)) if dims is None else sorted(
        _dim(d, rank) for d in dims)
    reduced = getattr(_zero, op)(x.tensor, dims)
    kept = [e for d, e in enumerate(x.shape) if d not in dims]
    out = _Live(reduced, kept, x.dtype)
    return self.reshape(out, _meta_shape(node)) if keepdim else out


def _slice(self, node, args, kwargs):
    x = self.live(args[0], node)
    rank = len(x.shape)
    dim = _dim(args[1] if len(args) > 1 else 0, rank)
    start = args[2] if len(args) > 2 else None
    end = args[3] if len(args) > 3 else None
    step = args[4] if len(args) > 4 else 1
    if step != 1:
        raise UnsupportedModuleError(f"a slice with step {step} "
                                     f"{_where(node)}")
    extent = x.shape[dim]
    start = 0 if start is None else start
    end = extent if end is None else end
    start = max(0, min(extent, start + extent if start < 0 else start))
    end = max(start, min(extent, end + extent if end < 0 else end))
    if start == 0 and end == extent:
        return x
    shape = list(x.shape)
    shape[dim] = end - start
    return _Live(_zero.narrow(x.tensor, dim, start, end - start), shape,
                 x.dtype)


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
        parts.append(_Live(_zero.narrow(x.tensor, dim, offset, size), shape,
                           x.dtype))
        offset += size
    return parts


def _cat(self, node, args, kwargs):
    tensors = args[0]
    like = next(t for t in tensors if isinstance(t, _Live))
    rank = len(like.shape)
    dim = _dim(args[1] if len(args) > 1 else kwargs.get("dim", 0), rank)
    parts = [self.live(t, node) for t in tensors]
    parts = [p for p in parts if p.shape[dim] > 0]
    if len(parts) == 1:
        return parts[0]
    return _Live(_zero.concat([p.tensor for p in parts], dim),
                 _meta_shape(node), like.dtype)


def _to_copy(self, node, args, kwargs):
    x = self.live(args[0], node)
    dtype = kwargs.get("dtype")
    if dtype is None:
        return x
    target = _dtype_name(dtype, "a cast")
    if target == x.dtype:
        return x
    if target not in ("f32", "bf16", "f16") or x.dtype not in ("f32", "bf16",
                                                                 "f16"):
        raise UnsupportedModuleError(
            f"a cast from {x.dtype} to {target} {_where(node)}")
    return _Live(_zero.cast(x.tensor, target), x.shape, target)


def _sdpa(self, node, args, kwargs):
    q, k, v = (self.live(a, node) for a in args[:3])
    names = ["attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"]
    options = dict(zip(names, args[3:]))
    options.update(kwargs)
    mask = options.get("attn_mask")
    if options.get("dropout_p", 0.0) != 0.0:
        raise UnsupportedModuleError(
            f"attention dropout {_where(node)}; train has no dropout: build "
            "the model with attention dropout 0")
    if options.get("enable_gqa", False):
        raise UnsupportedModuleError(
            f"scaled_dot_product_attention(enable_gqa=True) {_where(node)}")
    if k.shape != q.shape or v.shape != q.shape:
        raise UnsupportedModuleError(
            f"attention with q {q.shape}, k {k.shape}, v {v.shape} "
            f"{_where(node)}; the importer takes one shape for all three")
    causal = bool(options.get("is_causal", False))
    if mask is not None:
        if isinstance(mask, _Live) or not _is_causal_mask(mask):
            raise UnsupportedModuleError(
                f"attention with a mask that is not the constant causal mask "
                f"{_where(node)}")
        causal = True
    scale = options.get("scale")
    scale = 1.0 / float(q.shape[-1])**0.5 if scale is None else float(scale)
    scores = _zero.matmul(q.tensor, k.tensor, transpose_b=True)
    scores = _zero.scale(scores, scale)
    if causal:
        scores = _zero.causal_mask(scores, float("-inf"))
    probs = _zero.softmax(scores)
    return _Live(_zero.matmul(probs, v.tensor), q.shape, q.dtype)


def _cross_entropy(self, node, args, kwargs):
    names = ["weight", "reduction", "ignore_index", "label_smoothing"]
    options = dict(zip(names, args[2:]))
    options.update(kwargs)
    logits, labels = self.live(args[0], node), args[1]
    if not isinstance(labels, _Live) or labels.dtype not in ("i32", "i64"):
        raise UnsupportedModuleError(
            f"cross_entropy with targets that are not integer class indices "
            f"{_where(node)}")
    if options.get("weight") is not None:
        raise UnsupportedModuleError(f"cross_entropy with class weights "
                                     f"{_where(node)}")
    if options.get("reduction", 1) != 1:
        raise UnsupportedModuleError(
            f"cross_entropy with reduction other than 'mean' {_where(node)}")
    if options.get("label_smoothing", 0.0) != 0.0:
        raise UnsupportedModuleError(
            f"cross_entropy with label_smoothing {_where(node)}")
    # ignore_index (-100 by default) has no counterpart: every label must be
    # a class, and the runtime refuses a batch with one that is not.
    if len(logits.shape) > 2:
        # PyTorch's classes are dim 1 of [N, C, d1, ...]: move them last.
        rank = len(logits.shape)
        perm = [0] + list(range(2, rank)) + [1]
        shape = [logits.shape[d] for d in perm]
        logits = _Live(_zero.transpose(logits.tensor, perm), shape,
                       logits.dtype)
    return _Live(_zero.softmax_cross_entropy(logits.tensor, labels.tensor), [],
                 "f32")


def _is_causal_mask(mask):
    rows, cols = mask.shape[-2], mask.shape[-1]
    lower = torch.tril(torch.ones(rows, cols, dtype=torch.bool))
    flat = mask.reshape(-1, rows, cols)
    if mask.dtype == torch.bool:
        return bool((flat == lower).all())
    return bool((flat[:, lower] == 0).all()) and bool(
        (flat[:, ~lower] < -1e30).all())


_HANDLERS = {
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
    aten.split_with_sizes.default: _split,
    aten.split.Tensor: _split,
    aten.cat.default: _cat,
    aten._to_copy.default: _to_copy,
    aten.scaled_dot_product_attention.default: _sdpa,
}


# -- The entry point ----------------------------------------------------------


def from_torch(module, example_args, *, loss="causal_lm", example_targets=(),
               forward_kwargs=None, name=None, precision=None,
               init_path=None):
    """Imports `module` as a training step of our builder.

    example_args: a tuple of example inputs (token ids, ...) with the
        per-rank batch as dimension 0; their shapes and dtypes are the
        step's inputs.
    loss: "causal_lm" (the default: the mean cross-entropy of the
        module's logits[:, :-1] against labels[:, 1:], `labels` an extra
        input shaped like the first argument; every label must be a class
        index, so Hugging Face's ignore_index -100 is refused when a batch
        holds it), or a function `loss(output, *targets)` returning the
        scalar loss, exported with the module (`example_targets` gives
        example targets).
    forward_kwargs: keyword arguments for every call of the module (for a
        Hugging Face model, use_cache=False is added when it takes one).
    precision: "bf16" or "f16" for mixed precision (set before the graph
        is built, as zero.Graph requires).
    init_path: where to write the module's weights (.safetensors); a
        temporary file by default.

    Returns a TorchGraph.
    """
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"from_torch takes a torch.nn.Module, not "
                        f"{type(module).__name__}")
    if isinstance(example_args, torch.Tensor):
        example_args = (example_args,)
    example_args = tuple(example_args)
    example_targets = tuple(example_targets)
    if not example_args or not all(
            isinstance(a, torch.Tensor) for a in example_args):
        raise TypeError("example_args must be a tuple of tensors")
    kwargs = dict(forward_kwargs or {})
    if hasattr(module, "config") and "use_cache" not in kwargs:
        kwargs["use_cache"] = False
    loss_fn = None
    if callable(loss):
        loss_fn = loss
    elif loss != "causal_lm":
        raise ValueError(f"loss must be 'causal_lm' or a function, got "
                         f"{loss!r}")
    elif example_targets:
        raise ValueError("example_targets go with a loss function; the "
                         "causal-LM loss takes labels shaped like the ids")

    wrapper = _Wrapper(module, kwargs, loss_fn, len(example_args))
    was_training = module.training
    # Dropout and other training-mode randomness have no place in a
    # deterministic step: export in eval mode.
    module.eval()
    try:
        exported = torch.export.export(wrapper,
                                       example_args + example_targets)
        program = exported.run_decompositions(_decomposition_table())
    except Exception as error:  # torch's own message says what failed
        raise UnsupportedModuleError(
            f"torch.export could not export the module: {error}") from error
    finally:
        module.train(was_training)
    assert isinstance(program, ExportedProgram)

    if precision is None:
        # A 16-bit module trains in its type, with f32 masters.
        dtypes = {p.dtype for p in module.parameters()}
        precision = next((_DTYPES[d] for d in (torch.bfloat16, torch.float16)
                          if d in dtypes), "f32")
    graph = TorchGraph(name or type(module).__name__)
    graph.config.precision(precision)
    inputs = []
    input_names = []
    arg_names = _argument_names(module, len(example_args))
    for index, example in enumerate(example_args + example_targets):
        if example.dim() == 0:
            raise UnsupportedModuleError(
                f"input {index} is a scalar; inputs need a batch dimension")
        input_name = (arg_names[index] if index < len(example_args) else
                      f"target{index - len(example_args)}")
        dtype = _dtype_name(example.dtype, f"input '{input_name}'")
        tensor = graph.input(input_name, list(example.shape), dtype)
        inputs.append(_Live(tensor, list(example.shape),
                            precision if dtype == "f32" else dtype))
        input_names.append(input_name)

    importer = _Importer(program, graph, wrapper, precision)
    importer.placeholders(inputs)
    result = importer.run()

    if loss_fn is None:
        ids = example_args[0]
        if result.tensor is None or len(result.shape) != 3 or ids.dim() != 2:
            raise UnsupportedModuleError(
                f"the causal-LM loss takes logits [batch, seq, vocab] and ids "
                f"[batch, seq]; got logits {result.shape} and ids "
                f"{list(ids.shape)}: pass loss=fn for another loss")
        labels_dtype = _dtype_name(ids.dtype, "labels")
        labels = graph.input("labels", list(ids.shape), labels_dtype)
        input_names.append("labels")
        seq = result.shape[1]
        logits = _zero.narrow(result.tensor, 1, 0, seq - 1)
        targets = _zero.narrow(labels, 1, 1, seq - 1)
        graph.minimize(_zero.softmax_cross_entropy(logits, targets))
    else:
        if result.shape != [] or result.dtype != "f32":
            raise UnsupportedModuleError(
                f"the loss function returned {result.dtype}{result.shape}; "
                "it must return a scalar float32 loss")
        graph.minimize(result.tensor)
    graph.check()

    graph.input_names = input_names
    graph.parameter_paths = importer.parameter_paths
    graph.constants = sorted(name for name in importer.init_tensors
                             if name not in importer.parameter_paths)
    graph._module_state = dict(module.state_dict(keep_vars=False))
    graph._state_owner = {path: name
                          for name, paths in importer.parameter_paths.items()
                          for path in paths}
    # Tied names the export did not use still belong to the parameter.
    by_data = {}
    for path, value in graph._module_state.items():
        by_data.setdefault(value.data_ptr(), []).append(path)
    for path in list(graph._state_owner):
        value = graph._module_state.get(path)
        if value is None:
            continue
        for alias in by_data.get(value.data_ptr(), []):
            graph._state_owner.setdefault(alias, graph._state_owner[path])
    graph.init_path = _write_init(importer.init_tensors, init_path)
    return graph


def _remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass


def _argument_names(module, count):
    try:
        params = list(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):
        params = []
    names = [p for p in params if p not in ("self", "args", "kwargs")]
    return [names[i] if i < len(names) else f"input{i}" for i in range(count)]


def _write_init(tensors, path):
    from safetensors.torch import save_file
    if path is None:
        handle, path = tempfile.mkstemp(prefix="zero-torch-",
                                        suffix=".safetensors")
        os.close(handle)
        atexit.register(_remove_quietly, path)
    save_file({name: t.contiguous() for name, t in tensors.items()}, path)
    return path
