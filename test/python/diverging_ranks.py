"""Ranks that part ways (timeout.test):

  diverging_ranks.py save T    rank 0 saves a checkpoint while rank 1 trains
                               on: the PyTorch habit `if rank == 0:
                               save(...)` with a collective save
  diverging_ranks.py stall T   rank 1 stalls for 30 s before its next step
  diverging_ranks.py load T    rank 0 alone loads a state dict while rank 1
                               trains on (with ZeRO-3 each rank would load
                               only its own shard)
  diverging_ranks.py states T  every rank loads a state dict, each its own
  diverging_ranks.py exit T    rank 1's script ends (sys.exit(0)) while
                               rank 0 saves
  diverging_ranks.py end T     rank 1's script ends while rank 0 steps
  diverging_ranks.py signal T  rank 1 dies of an uncaught SIGTERM while
                               rank 0 steps
  diverging_ranks.py retry T   rank 0's batch is refused; it catches the
                               error and steps again with a good one
  diverging_ranks.py abandon T every rank's evaluate fails part-way; each
                               catches the error and calls evaluate again

T is the collective timeout in seconds.
"""

import os
import signal
import sys
import tempfile
import time

import numpy as np

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
if sys.argv[1] in ("exit", "end", "signal") and zero.rank() == 1:
    if sys.argv[1] == "exit":
        sys.exit(0)
    if sys.argv[1] == "signal":
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)
elif sys.argv[1] == "exit":
    trainer.save(tempfile.mkdtemp())
elif sys.argv[1] in ("retry", "abandon"):
    good = [np.ones((4 * zero.world_size(), 8), np.float32)]
    call = trainer.step if sys.argv[1] == "retry" else trainer.evaluate
    # evaluate checks its batch part-way, after the ranks agreed on the
    # call, and they agree only on one batch (its checksum): every rank
    # makes the bad call there.
    if zero.rank() == 0 or sys.argv[1] == "abandon":
        try:
            call([np.ones((3, 8), np.float32)])
        except ValueError as error:
            print(f"rank {zero.rank()}: caught {error}", flush=True)
    call(good)
elif sys.argv[1] == "save" and zero.rank() == 0:
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
