"""zero.dropout in training (test/python/dropout.test).

  check_dropout.py STEPS
  check_dropout.py accumulate STEPS
  check_dropout.py compare OUT1 OUT2

An MLP with dropout (p = 0.3) after its hidden layer trains STEPS steps at
ZeRO stages 0-3 on this job's ranks, on a global batch of 8 rows split
over them. Prints, on rank 0, each stage's losses as exact hex floats and
a digest of its final state, so that runs on different rank counts can be
compared with diff; checks that the stages agree bitwise, that dropout
changed the training (a graph without it trains otherwise), and that
evaluate runs without dropout: it equals the evaluation of the same
parameters in the graph without dropout.

`accumulate` trains with 2 micro-batches a step, each of half the global
batch: the stages agree bitwise, and every micro-step draws its own mask.
That is checked on a global batch whose two halves are the same rows: with
one mask for both micro-steps, the accumulated gradient would be the
gradient of one half, and the training bitwise that of a graph without
accumulation on the half alone; with a mask per micro-step it is not.

`compare` holds two runs' outputs (on different rank counts) to each
other: the same masks give losses equal up to the rounding of the ranks'
loss average (1e-6 relative); other masks would differ by far more.
"""

import hashlib
import sys

import numpy as np

import zero

ROWS, FEATURES, HIDDEN, CLASSES = 8, 16, 32, 5


def build(ranks, stage, rate, accumulate=1, rows=ROWS):
    graph = zero.Graph("dropout")
    micro = rows // ranks // accumulate
    x = graph.input("x", [micro, FEATURES], "f32")
    labels = graph.input("labels", [micro], "i32")
    w1 = graph.parameter("w1", [FEATURES, HIDDEN], zero.Init.normal(0, 0.3))
    w2 = graph.parameter("w2", [HIDDEN, CLASSES], zero.Init.normal(0, 0.3))
    h = zero.dropout(zero.relu(zero.matmul(x, w1.value)), rate)
    graph.minimize(zero.softmax_cross_entropy(zero.matmul(h, w2.value),
                                              labels))
    graph.config.optimizer(zero.SGD(lr=0.5)).enable_zero(stage > 0, stage)
    if accumulate > 1:
        graph.config.set_gradient_accumulation_steps(accumulate)
    return zero.Trainer(graph.compile(ranks), seed=3)


def batches(steps):
    rng = np.random.default_rng(4)
    return [[rng.standard_normal((ROWS, FEATURES)).astype(np.float32),
             rng.integers(0, CLASSES, ROWS).astype(np.int32)]
            for _ in range(steps)]


def digest(state):
    h = hashlib.sha256()
    for name in sorted(state):
        h.update(name.encode())
        h.update(np.ascontiguousarray(state[name]).tobytes())
    return h.hexdigest()[:16]


def compare(first, second):
    def losses(path):
        with open(path) as f:
            line = next(l for l in f if l.startswith("stage 0:"))
        return [float.fromhex(v) for v in
                line.split("losses ")[1].split(";")[0].split()]
    a, b = losses(first), losses(second)
    worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
    if len(a) != len(b) or worst > 1e-6:
        raise SystemExit(f"the runs differ: {a} against {b}")
    print(f"ok: {len(a)} losses agree across rank counts to {worst:.1e}")


def accumulated(steps):
    ranks = zero.world_size()
    data = batches(steps)
    runs = [[build(ranks, stage, 0.3, accumulate=2).step(batch)
             for batch in data] for stage in range(4)]
    if any(run != runs[0] for run in runs):
        raise SystemExit(f"with accumulation the stages differ: {runs}")
    halves = [[array[:ROWS // 2] for array in batch] for batch in data]
    doubled = [[np.concatenate([a, a]) for a in half] for half in halves]
    trainer = build(ranks, 0, 0.3, accumulate=2)
    twice = [trainer.step(batch) for batch in doubled]
    trainer = build(ranks, 0, 0.3, rows=ROWS // 2)
    once = [trainer.step(batch) for batch in halves]
    if twice == once:
        raise SystemExit("the two micro-steps drew one mask: accumulating "
                         "two copies of a half trained as the half alone")
    if zero.rank() == 0:
        print(f"ok: accumulation 2: stages 0-3 bitwise identical; each "
              f"micro-step draws its own mask ({steps} steps)", flush=True)


def main():
    if sys.argv[1] == "compare":
        return compare(sys.argv[2], sys.argv[3])
    if sys.argv[1] == "accumulate":
        return accumulated(int(sys.argv[2]))
    steps = int(sys.argv[1])
    ranks = zero.world_size()
    data = batches(steps)
    runs = {}
    for stage in range(4):
        trainer = build(ranks, stage, 0.3)
        losses = [trainer.step(batch) for batch in data]
        state = trainer.state_dict()
        runs[stage] = (losses, digest(state), trainer.evaluate(data[0]),
                       state)
        if zero.rank() == 0:
            print(f"stage {stage}: losses "
                  + " ".join(float(v).hex() for v in losses)
                  + f"; state {runs[stage][1]}", flush=True)
    first = runs[0]
    if any(run[:2] != first[:2] for run in runs.values()):
        raise SystemExit("the stages differ")
    plain = build(ranks, 0, 0.0)
    plain_losses = [plain.step(batch) for batch in data]
    if plain_losses == first[0]:
        raise SystemExit("dropout changed nothing")
    plain.load_state_dict(first[3])
    if plain.evaluate(data[0]) != first[2]:
        raise SystemExit(f"evaluate ran with dropout: {first[2]} against "
                         f"{plain.evaluate(data[0])} without")
    if zero.rank() == 0:
        print("ok: stages 0-3 bitwise identical; dropout changes the "
              "training; evaluate runs without it", flush=True)


if __name__ == "__main__":
    main()
