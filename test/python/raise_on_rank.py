"""Rank 1 raises between two steps while rank 0 goes on into the next
step's collectives (test/python/fail-fast.test)."""

import zero

graph = zero.Graph("m")
x = graph.input("x", [4, 8], "f32")
w = graph.parameter("w", [8, 4], zero.Init.normal(0, 0.1))
graph.minimize(zero.reduce_mean(zero.matmul(x, w.value), [0, 1]))
graph.config.optimizer(zero.SGD(lr=0.1)).enable_zero(True, 3)
trainer = zero.Trainer(graph.compile(zero.world_size()))
trainer.step()
if zero.rank() == 1:
    raise ValueError("a bad batch on rank 1")
trainer.step()
print(f"rank {zero.rank()}: second step done")
