"""Prints this rank's place in the job: `rank R: world size N`.

Used by test/torch/torchrun.test to start the same script under torchrun
(refused) and under python -m zero.run (one job of N ranks).
"""

import zero

print(f"rank {zero.rank()}: world size {zero.world_size()}", flush=True)
zero.shutdown()
