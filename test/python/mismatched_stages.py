"""Rank 0 compiles ZeRO stage 1, rank 1 stage 2 (or another batch), as a
script that picks its configuration per rank would (mismatch.test)."""

import sys

import zero

batch = 8
if sys.argv[1] == "batch" and zero.rank() == 1:
    batch = 4
graph = zero.Graph("m")
x = graph.input("x", [batch, 8], "f32")
w = graph.parameter("w", [8, 4], zero.Init.normal(0, 0.1))
graph.minimize(zero.reduce_mean(zero.matmul(x, w.value), [0, 1]))
stage = 1 + zero.rank() if sys.argv[1] == "stage" else 1
graph.config.optimizer(zero.SGD(lr=0.1)).enable_zero(True, stage)
try:
    zero.Trainer(graph.compile(zero.world_size()))
except ValueError as error:
    print(f"rank {zero.rank()}: refused: {error}", flush=True)
else:
    print(f"rank {zero.rank()}: accepted", flush=True)
