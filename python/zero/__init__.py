"""The ZeRO compiler from Python: build a training step, enable ZeRO, know
before launch what every rank holds and sends, then train it.

    import zero
    graph = zero.Graph("mlp")
    x = graph.input("x", [32, 784], "f32")
    ...
    graph.minimize(loss)
    graph.config.optimizer(zero.Adam(lr=1e-3)).enable_zero(True, stage=3)
    compiled = graph.compile(zero.world_size())
    print(compiled.report["model_state"])
    trainer = zero.Trainer(compiled, seed=1)
    loss = trainer.step([x_batch, labels_batch])

Launch on several ranks with `mpirun -n 4 python3 train.py` or
`python3 -m zero.run -n 4 train.py`. docs/python.md has the whole API.
"""

import atexit as _atexit
import sys as _sys

from zero import _bundle

# The wheel's own Open MPI, before the extension module can start MPI.
if _bundle.present():
    _bundle.configure_open_mpi()

from zero import _zero  # noqa: E402
from zero._zero import (Adam, AdamW, CompiledGraph, Graph, GraphConfig, Init,
                        LossScaling, Momentum, Parameter, Schedule, SGD,
                        Tensor, add, attention, bias_add, cast, causal_mask,
                        concat, div, dropout, embedding, exp, expand, gelu, key_mask,
                        layer_norm, log, machine, matmul,
                        mul, narrow, neg, rank, reduce_mean, reduce_sum, relu,
                        reshape, rsqrt, scale, set_collective_timeout,
                        shutdown, sigmoid, silu, softmax,
                        softmax_cross_entropy, sqrt, sub, tanh, transpose,
                        world_size)
from zero import nn
from zero.trainer import Trainer

__version__ = _zero.__version__

__all__ = [
    "Adam", "AdamW", "CompiledGraph", "Graph", "GraphConfig", "Init",
    "LossScaling", "Momentum", "Parameter", "Schedule", "SGD", "Tensor",
    "Trainer", "add", "attention", "bias_add", "cast", "causal_mask",
    "concat", "div",
    "dropout", "embedding", "exp", "expand", "gelu", "key_mask",
    "layer_norm", "log", "machine", "matmul", "mul",
    "narrow", "neg", "nn", "rank", "reduce_mean", "reduce_sum", "relu",
    "reshape", "rsqrt", "scale", "set_collective_timeout", "shutdown",
    "sigmoid", "silu", "softmax",
    "softmax_cross_entropy", "sqrt", "sub", "tanh", "transpose", "world_size",
    "from_torch",
]


def __getattr__(name):
    # zero.from_torch and zero.torch import torch, which takes seconds and
    # is optional: only on first use.
    if name in ("from_torch", "torch"):
        import importlib
        module = importlib.import_module("zero.torch")
        return module if name == "torch" else module.from_torch
    raise AttributeError(f"module 'zero' has no attribute '{name}'")

# MPI must be finalized before the process exits, or mpirun reports the job
# as failed.
_atexit.register(shutdown)


def _end_job_on_uncaught_exception(kind, value, traceback):
    """torchrun's behaviour: a rank whose script raises prints its
    traceback and ends the whole job at once, instead of leaving the other
    ranks in a collective until its timeout."""
    _previous_excepthook(kind, value, traceback)
    _zero._end_job_after_uncaught(f"uncaught {kind.__name__}")


_previous_excepthook = _sys.excepthook
_sys.excepthook = _end_job_on_uncaught_exception
