"""What the PyTorch importer (zero.torch) passes around: the values of a
step being built, and how it names what it refuses."""

import torch


class UnsupportedModuleError(ValueError):
    """The module uses something the importer cannot map; the message
    names the ATen op, the module path and the source line."""


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
