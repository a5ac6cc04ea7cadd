"""Ranks that part ways (timeout.test):

  diverging_ranks.py save T    rank 0 saves a checkpoint while rank 1 trains
                               on: the PyTorch habit `if rank == 0:
                               save(...)` with a collective save
  diverging_ranks.py stall T   rank 1 stalls for 30 s before its next step
  diverging_ranks.py load T    rank 0 alone loads a state dict while rank 1
                               trains on (with ZeRO-3 each rank would load
                               only its own shard)
  diverging_ranks.py states T  every rank loads a state dict, each its own

T is the collective timeout in seconds.
"""

import sys
import tempfile
import time

import zero

zero.set_collective_timeout(float(sys.argv[2]))
graph = zero.Graph("m")
x = graph.input("x", [4, 8], "f32")
w = graph.parameter("w", [8, 4], zero.Init.normal(0, 0.1))
graph.minimize(zero.reduce_mean(zero.matmul(x, w.value), [0, 1]))
graph.config.optimizer(zero.SGD(lr=0.1)).enable_zero(True, 3)
trainer = zero.Trainer(graph.compile(zero.world_size()))
trainer.step()
state = trainer.state_dict()  # on every rank: it is collective too
if sys.argv[1] == "save" and zero.rank() == 0:
    trainer.save(tempfile.mkdtemp())
elif sys.argv[1] == "load" and zero.rank() == 0:
    trainer.load_state_dict(state)
elif sys.argv[1] == "states":
    trainer.load_state_dict({name: value + zero.rank()
                             for name, value in state.items()})
else:
    if sys.argv[1] == "stall" and zero.rank() == 1:
        time.sleep(30)
    trainer.step()
print(f"rank {zero.rank()}: finished")
