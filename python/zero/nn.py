"""Layers, and `nn.Graph`: a training step written as a class, as in
OneFlow's `nn.Graph`.

    class MLP(zero.nn.Graph):
        def __init__(self):
            super().__init__("mlp")
            self.fc1 = zero.nn.Linear(self, "fc1", 784, 128)
            self.fc2 = zero.nn.Linear(self, "fc2", 128, 10)
            self.config.optimizer(zero.Adam(lr=1e-3))
            self.config.enable_zero(True, stage=3)

        def build(self, x, labels):
            return zero.softmax_cross_entropy(
                self.fc2(zero.relu(self.fc1(x))), labels)

    graph = MLP()
    compiled = graph.compile(zero.world_size(),
                             x=([32, 784], "f32"), labels=([32], "i32"))

`compile` declares the inputs (name=(shape, dtype), in build's order), calls
`build`, minimizes what it returns and compiles.
"""

from zero import _zero
from zero._zero import (CausalSelfAttention, Embedding, GPT2, GPT2Block,
                        LayerNorm, Linear, Llama, RMSNorm)

__all__ = ["CausalSelfAttention", "Embedding", "GPT2", "GPT2Block", "Graph",
           "LayerNorm", "Linear", "Llama", "RMSNorm", "rope_tables"]


def rope_tables(positions, head_dim, theta=10000.0):
    """Llama's default rotary tables for integer `positions` [batch, seq]:
    (cos, sin), float32 [batch, seq, head_dim] each, as Hugging Face's
    LlamaRotaryEmbedding computes them without rope_scaling (whose output,
    for a scaled variant, can be passed to zero.nn.Llama as it is)."""
    import numpy as np
    positions = np.asarray(positions)
    if positions.ndim != 2 or head_dim <= 0 or head_dim % 2:
        raise ValueError("rope_tables takes positions [batch, seq] and an "
                         f"even head_dim; got positions of shape "
                         f"{list(positions.shape)} and head_dim {head_dim}")
    inv_freq = 1.0 / (theta ** (np.arange(0, head_dim, 2, dtype=np.float32)
                                / head_dim))
    freqs = positions.astype(np.float32)[..., None] * inv_freq
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb).astype(np.float32), np.sin(emb).astype(np.float32)


class Graph(_zero.Graph):
    """A training step as a class: subclasses define `build(*inputs)`."""

    def build(self, *inputs):
        """The step, which subclasses define: takes the inputs' tensors in
        the order compile declares them and returns the loss to minimize
        (a scalar f32 Tensor)."""
        raise NotImplementedError(
            f"{type(self).__name__} must define build(self, ...), returning "
            "the loss to minimize")

    def compile(self, ranks, **inputs):
        """Declares the inputs (name=(shape, dtype), e.g. x=([32, 784],
        "f32"), in build's order, recorded in `input_names`), calls build,
        minimizes the tensor it returns and compiles for `ranks` ranks: a
        CompiledGraph. A graph already built compiles again without
        inputs."""
        if getattr(self, "_built", False):
            if inputs:
                raise ValueError(f"graph '{self.name}' is already built; "
                                 "compile it again without inputs")
        else:
            tensors = []
            for name, spec in inputs.items():
                try:
                    shape, dtype = spec
                    shape = [int(extent) for extent in shape]
                    if not isinstance(dtype, str):
                        raise TypeError
                except (TypeError, ValueError):
                    raise ValueError(
                        f"input '{name}' must be given as (shape, dtype), "
                        f"e.g. {name}=([32, 784], 'f32'); got {spec!r}"
                    ) from None
                tensors.append(self.input(name, list(shape), dtype))
            self.input_names = list(inputs)
            loss = self.build(*tensors)
            if not isinstance(loss, _zero.Tensor):
                raise TypeError(f"{type(self).__name__}.build returned "
                                f"{type(loss).__name__}, not the loss tensor")
            self.minimize(loss)
            self._built = True
        return super().compile(ranks)
