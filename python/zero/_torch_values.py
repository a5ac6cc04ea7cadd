"""What the PyTorch importer (zero.torch) passes around: the values of a
step being built, and how it names what it refuses."""

import os
import re
import sys

import torch


class UnsupportedModuleError(ValueError):
    """The module uses something the importer cannot map; the message
    names the ATen op, the module path and the source line."""


# Documented, caught and printed as zero.torch.UnsupportedModuleError, which
# is where users import it from.
UnsupportedModuleError.__module__ = "zero.torch"

# Frames of these packages are never the user's line: the importer's own
# wrapper calls the user's loss function, and torch's functional layer
# (F.cross_entropy, ...) is what the user's line calls.
_PACKAGE_DIRS = tuple(
    os.path.dirname(os.path.abspath(module.__file__)) + os.sep
    for module in (torch, sys.modules[__name__.rsplit(".", 1)[0]]))


DTYPES = {
    torch.float32: "f32",
    torch.bfloat16: "bf16",
    torch.float16: "f16",
    torch.int32: "i32",
    torch.int64: "i64",
}


def where(node):
    """Where `node` comes from, for error messages: the module path and
    the source line."""
    parts = []
    frame = _user_frame(node)
    stack = node.meta.get("nn_module_stack")
    if stack:
        path, kind = list(stack.values())[-1]
        name = getattr(kind, "__name__", str(kind)).rsplit(".", 1)[-1]
        if path == "" and name == "_Wrapper":
            # Outside the user's module: in the loss function the wrapper
            # calls. torch.export records no frame inside it, so it is
            # named by its definition.
            parts.append(_describe_loss_function())
            frame = None
        else:
            # The user's module is our wrapper's `m`.
            path = path[2:] if path.startswith("m.") else (
                "" if path == "m" else path)
            parts.append(f"in module '{path}' ({name})" if path else
                         f"in the module itself ({name})")
    if frame:
        parts.append(frame)
    return "; ".join(parts) if parts else "(no source information)"


# The loss function of the import under way (zero.torch.from_torch sets it).
loss_function = None


def _describe_loss_function():
    function = loss_function
    if function is None:
        return "in the loss function"
    name = getattr(function, "__qualname__", repr(function))
    code = getattr(function, "__code__", None)
    if code is None:
        return f"in the loss function '{name}'"
    return (f"in the loss function '{name}' (defined at File "
            f"\"{code.co_filename}\", line {code.co_firstlineno})")


def _user_frame(node):
    """The innermost 'File "...", line N, in f' of the node's stack trace
    that is the user's code (not torch's, not this package's)."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    lines = [line.strip() for line in trace.strip().splitlines()]
    files = [line for line in lines if line.startswith("File ")]
    for line in reversed(files):
        path = re.match(r'File "([^"]+)"', line)
        if path and not os.path.abspath(path.group(1)).startswith(
                _PACKAGE_DIRS):
            return line
    return files[-1] if files else None


def check_batch(self, node, shape, what):
    """Refuses a dropout of a tensor whose first dimension is not the
    batch."""
    # train.dropout draws its mask along the batch, the first dimension.
    if not shape or shape[0] != self.batch_rows:
        raise UnsupportedModuleError(
            f"{what} of a tensor of shape {shape} whose first dimension is "
            f"not the batch ({self.batch_rows} rows a rank) {where(node)}: "
            "the mask is drawn along the batch")


def meta_shape(node):
    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor):
        raise UnsupportedModuleError(
            f"{node.target}: no static tensor shape recorded {where(node)}")
    shape = []
    for extent in value.shape:
        if not isinstance(extent, int):
            raise UnsupportedModuleError(
                f"{node.target}: data-dependent or symbolic shape "
                f"{tuple(value.shape)} {where(node)}; export with static "
                "shapes (every dimension fixed by the example inputs)")
        shape.append(extent)
    return shape


def dtype_name(dtype, what):
    if dtype not in DTYPES:
        raise UnsupportedModuleError(f"{what} has dtype {dtype}; the importer "
                                     "takes float32, bfloat16, float16, "
                                     "int32 and int64")
    return DTYPES[dtype]


class Live:
    """A value of the step: a zero.Tensor with its shape and dtype."""

    def __init__(self, tensor, shape, dtype):
        self.tensor, self.shape, self.dtype = tensor, list(shape), dtype


class Transposed:
    """A 2-D value read transposed: a weight behind `permute([1, 0])`,
    which the matmuls using it read with transpose_b instead of a copy."""

    def __init__(self, source, shape):
        self.source, self.shape = source, shape
