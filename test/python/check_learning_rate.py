"""Reading and changing the learning rate between steps
(Trainer.learning_rate, Trainer.learning_rates), test/python/learning-rate.test.

Prints one `ok:` line per property that must hold, bit for bit where it
says so, then one `refused:` line per mistake. With `ranks` as argument it
runs on every rank of a 2-rank job and checks that a rate set on one rank
only is refused on every rank at the next step.
"""

import math
import sys
import tempfile

import numpy as np

import zero


def mlp(optimizer, schedule=None, groups=()):
    graph = zero.Graph("mlp")
    x = graph.input("x", [8, 16], "f32")
    labels = graph.input("labels", [8], "i32")
    fc1 = zero.nn.Linear(graph, "fc1", 16, 32)
    fc2 = zero.nn.Linear(graph, "fc2", 32, 4)
    graph.minimize(zero.softmax_cross_entropy(fc2(zero.relu(fc1(x))), labels))
    graph.config.optimizer(optimizer)
    if schedule is not None:
        graph.config.learning_rate_schedule(schedule)
    for name, scale in groups:
        biases = [p for _, p in graph.named_parameters()
                  if len(p.value.shape) < 2]
        graph.config.parameter_group(name, biases, lr_scale=scale)
    return graph.compile(zero.world_size())


def same_state(a, b):
    return all(np.array_equal(a[k], b[k]) for k in a) and a.keys() == b.keys()


def single():
    sgd = mlp(zero.SGD(lr=0.01))
    trainer = zero.Trainer(sgd, seed=3)
    assert trainer.learning_rate == 0.01
    assert trainer.learning_rates() == {"default": 0.01}
    print("ok: the rate is the configured one until it is set")

    for _ in range(2):
        trainer.step()
    trainer.learning_rate = 0.005
    assert trainer.learning_rate == 0.005
    assert trainer.learning_rates() == {"default": 0.005}
    changed = [trainer.step() for _ in range(3)]
    again = zero.Trainer(sgd, seed=3)
    for _ in range(2):
        again.step()
    again.learning_rate = 0.005
    assert [again.step() for _ in range(3)] == changed
    print("ok: a rate set between steps trains the same way every time")

    x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    y = np.arange(8, dtype=np.int32) % 4
    base = zero.Trainer(sgd, seed=3)
    base.step([x, y])
    start = base.state_dict()
    base.learning_rate = 0.005
    base.step([x, y])
    compiled_half = zero.Trainer(mlp(zero.SGD(lr=0.005)), seed=3)
    compiled_half.load_state_dict(start)
    compiled_half.step([x, y])
    assert same_state(base.state_dict(), compiled_half.state_dict())
    print("ok: a step at a rate set to 0.005 equals a step compiled at 0.005, "
          "bitwise")

    # AdamW with a cosine schedule: the schedule keeps its shape at the new
    # peak, and every group keeps its scale.
    schedule = zero.Schedule.cosine(2, 10, 0.001)
    adamw = mlp(zero.AdamW(lr=0.01), schedule, groups=[("bias", 0.5)])
    scheduled = zero.Trainer(adamw, seed=3)
    untouched = zero.Trainer(adamw, seed=3)
    for _ in range(4):
        scheduled.step()
        untouched.step()
    scheduled.learning_rate = 0.02
    new, old = scheduled.learning_rates(), untouched.learning_rates()
    assert set(new) == {"default", "bias"}, new
    for group in new:
        assert math.isclose(new[group], 2 * old[group], rel_tol=1e-12), group
    assert math.isclose(old["bias"], old["default"] / 2, rel_tol=1e-12)
    print("ok: with a cosine schedule and a group at lr_scale 0.5, setting "
          "the peak from 0.01 to 0.02 doubles every group's next rate")
    scheduled.step()
    untouched.step()
    assert not same_state(scheduled.state_dict(), untouched.state_dict())
    print("ok: the changed rate changes the training")

    with tempfile.TemporaryDirectory() as root:
        saved = zero.Trainer(adamw, seed=3)
        for _ in range(3):
            saved.step()
        saved.learning_rate = 0.004
        saved.step()
        path = saved.save(root)
        after = [saved.step() for _ in range(3)]
        resumed = zero.Trainer(adamw, seed=3)
        resumed.load(path)
        assert resumed.learning_rate == 0.004, resumed.learning_rate
        assert [resumed.step() for _ in range(3)] == after
    print("ok: a checkpoint keeps the changed rate; the resumed run "
          "continues bitwise")

    mistakes = {
        "negative": -1.0,
        "not a number": float("nan"),
        "infinite": float("inf"),
        "a string": "0.1",
    }
    for what, value in mistakes.items():
        try:
            trainer.learning_rate = value
        except (ValueError, TypeError) as error:
            print(f"refused {what}: {type(error).__name__}: {error}")
        else:
            raise AssertionError(f"{what} was accepted")
    assert trainer.learning_rate == 0.005
    print("ok: a refused rate leaves the rate as it was")


def ranks():
    trainer = zero.Trainer(mlp(zero.SGD(lr=0.01)), seed=3)
    trainer.step()
    trainer.learning_rate = 0.005  # every rank: accepted
    trainer.step()
    if zero.rank() == 1:
        trainer.learning_rate = 0.0025
    try:
        trainer.step()
    except RuntimeError as error:
        print(f"rank {zero.rank()}: refused: {error}")
    else:
        print(f"rank {zero.rank()}: accepted")


if __name__ == "__main__":
    ranks() if sys.argv[1:] == ["ranks"] else single()
