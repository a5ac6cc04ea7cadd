"""Trainer.metrics, the figures a user logs of a step
(test/python/metrics.test).

Each figure is held against one computed another way: the gradient norm
against the SGD update (lr * gradient, unclipped) and against the norm an
unclipped twin reports, the learning rate against learning_rates() before
the step, a skipped step against the state it left unchanged, throughput
against the step's own time. Prints one `ok:` line per property. With
`ranks FILE` it runs on each rank of a 2-rank job at stage 3 and holds the
norm to the one-rank norm written to FILE by `write FILE`.
"""

import math
import sys

import numpy as np

import zero


def mlp(optimizer=None, clip=None, scaling=None, schedule=None, stage=None):
    graph = zero.Graph("mlp")
    rows = 8 // zero.world_size()  # the global batch is 8 rows
    x = graph.input("x", [rows, 16], "f32")
    labels = graph.input("labels", [rows], "i32")
    fc1 = zero.nn.Linear(graph, "fc1", 16, 32)
    fc2 = zero.nn.Linear(graph, "fc2", 32, 4)
    graph.minimize(zero.softmax_cross_entropy(fc2(zero.relu(fc1(x))), labels))
    graph.config.optimizer(optimizer or zero.SGD(lr=0.1, weight_decay=0.0))
    if clip is not None:
        graph.config.clip_grad_norm(clip)
    if scaling is not None:
        graph.config.loss_scaling(scaling)
    if schedule is not None:
        graph.config.learning_rate_schedule(schedule)
    if stage is not None:
        graph.config.enable_zero(True, stage)
    return graph.compile(zero.world_size())


def batch(scale=1.0):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((8, 16)) * scale).astype(np.float32)
    return [x, np.arange(8, dtype=np.int32) % 4]


def update_norm(before, after, lr):
    """The norm of the gradient an SGD step without decay applied."""
    return math.sqrt(sum(float(np.sum(((before[k].astype(np.float64) -
                                         after[k]) / lr) ** 2))
                         for k in before))


def close(a, b, rtol):
    return abs(a - b) <= rtol * abs(b)


def single():
    plain = zero.Trainer(mlp(), seed=3)
    assert plain.metrics is None
    loss = plain.step(batch())
    m = plain.metrics
    assert m["step"] == 1 and m["loss"] == loss, m
    assert m["grad_norm"] is None and m["loss_scale"] is None, m
    assert m["skipped"] is False and m["skipped_steps"] == 0, m
    assert m["learning_rate"] == 0.1 and m["learning_rates"] == {
        "default": 0.1}, m
    assert m["seconds"] > 0 and m["samples_per_second"] == 8 / m["seconds"]
    assert m["tokens_per_second"] is None, m
    print("ok: without clipping or loss scaling: the loss step returned, the "
          "rate, no norm, no scale, throughput from the step's time")

    # Clipping that does not bind: the update is lr times the gradient.
    loose = zero.Trainer(mlp(clip=1e6), seed=3)
    before = loose.state_dict()
    loose.step(batch())
    norm = loose.metrics["grad_norm"]
    applied = update_norm(before, loose.state_dict(), 0.1)
    assert close(norm, applied, 1e-4), (norm, applied)
    print(f"ok: grad_norm {norm:.6g} is the norm of the gradient the update "
          f"applied ({applied:.6g})")

    # Clipping that binds: the norm is the one before clipping (PyTorch's
    # clip_grad_norm_ returns it), the update is clipped to max_norm.
    tight = zero.Trainer(mlp(clip=0.01), seed=3)
    before = tight.state_dict()
    tight.step(batch())
    clipped = update_norm(before, tight.state_dict(), 0.1)
    assert tight.metrics["grad_norm"] == norm, (tight.metrics, norm)
    assert close(clipped, 0.01, 1e-3), clipped
    print("ok: with clipping at 0.01, grad_norm is the norm before clipping "
          "and the update's norm is 0.01")

    # PyTorch's way to measure the norm: clip_grad_norm_(params, inf).
    # A finite norm gives min(1, inf) = 1: the update is the unclipped one,
    # bit for bit, and the norm is reported.
    measured = zero.Trainer(mlp(clip=float("inf")), seed=3)
    unclipped = zero.Trainer(mlp(), seed=3)
    measured.step(batch())
    unclipped.step(batch())
    assert measured.metrics["grad_norm"] == norm, (measured.metrics, norm)
    got, want = measured.state_dict(), unclipped.state_dict()
    assert all(got[k].tobytes() == want[k].tobytes() for k in want)
    print(f"ok: with clip_grad_norm(inf), grad_norm {norm:.6g} and the "
          "update of a step without clipping, bitwise")

    # A schedule: the rate the step used, as learning_rates() said before.
    scheduled = zero.Trainer(mlp(optimizer=zero.AdamW(lr=0.01),
                                 schedule=zero.Schedule.cosine(2, 6, 0.001)),
                             seed=3)
    rates = []
    for _ in range(4):
        expected = scheduled.learning_rates()["default"]
        scheduled.step(batch())
        rates.append(scheduled.metrics["learning_rate"])
        assert rates[-1] == expected, (rates, expected)
    assert len(set(rates)) == 4, rates
    print("ok: under a cosine schedule each step's learning_rate is the rate "
          "learning_rates() gave before it")

    # Loss scaling: a batch whose scaled gradients overflow is skipped (the
    # state stays as it was) and the scale halves; a good step after it
    # trains and keeps the scale.
    initial = 2.0 ** 120
    scaled = zero.Trainer(mlp(scaling=zero.LossScaling.dynamic(initial, 1000)),
                          seed=3)
    before = scaled.state_dict()
    scaled.step(batch(scale=1e4))
    m = scaled.metrics
    after = scaled.state_dict()
    assert m["skipped"] is True and m["skipped_steps"] == 1, m
    assert m["loss_scale"] == initial / 2, m
    # The parameters (not the scaler's own state) are as they were.
    params = [k for k in before if not k.startswith("loss_scale")]
    assert len(params) == 4, sorted(before)
    assert all(np.array_equal(before[k], after[k]) for k in params)
    scaled.step(batch())
    m = scaled.metrics
    assert m["skipped"] is False and m["skipped_steps"] == 1, m
    assert m["loss_scale"] == initial / 2, m
    trained = scaled.state_dict()
    assert not any(np.array_equal(after[k], trained[k]) for k in params)
    print("ok: an overflowing step is skipped (state unchanged), counted, and "
          "halves loss_scale; the next step trains")

    # Token ids: tokens per second from the batch's elements.
    graph = zero.Graph("lm")
    ids = graph.input("ids", [4, 6], "i32")
    labels = graph.input("labels", [4, 6], "i32")
    embedding = zero.nn.Embedding(graph, "wte", 11, 8)
    head = zero.nn.Linear(graph, "head", 8, 11)
    graph.minimize(zero.softmax_cross_entropy(head(embedding(ids)), labels))
    graph.config.optimizer(zero.SGD(lr=0.1))
    lm = zero.Trainer(graph.compile(1), seed=1)
    tokens = np.arange(24, dtype=np.int32).reshape(4, 6) % 11
    lm.step([tokens, (tokens + 1) % 11])
    m = lm.metrics
    assert m["tokens_per_second"] == 24 / m["seconds"], m
    assert m["samples_per_second"] == 4 / m["seconds"], m
    print("ok: token ids give tokens_per_second, 24 tokens over the step's "
          "time")
    return norm


def memory_and_progress():
    """The memory figures, and the progress line: none by default off a
    terminal; with progress=True one line at the first step shown, every
    10 steps and at the last of run()'s, counting toward it, with the loss step returned; through
    tqdm where it is installed."""
    import io
    import re
    compiled = mlp()
    trainer = zero.Trainer(compiled, seed=3)
    captured = io.StringIO()
    stderr, sys.stderr = sys.stderr, captured
    try:
        trainer.step(batch())
        assert captured.getvalue() == "", captured.getvalue()
        m = trainer.metrics
        assert m["arena_bytes"] == compiled.report["arena_bytes"] > 0, m
        assert 0 < m["rss_bytes"] <= m["peak_rss_bytes"], m
        # A CPU rank has no device: its figures are None, not 0.
        assert m["device_bytes"] is None and m["peak_device_bytes"] is None \
            and m["device_used_bytes"] is None, m
        assert trainer.device_memory() is None
        # The plain line: tqdm hidden.
        tqdm = sys.modules.get("tqdm")
        sys.modules["tqdm"] = None
        try:
            trainer.progress = True
            losses = trainer.run(24)
        finally:
            if tqdm is None:
                del sys.modules["tqdm"]
            else:
                sys.modules["tqdm"] = tqdm
    finally:
        sys.stderr = stderr
    lines = captured.getvalue().splitlines()
    steps = [int(re.match(r"zero: step (\d+)/25 loss ", line).group(1))
             for line in lines]
    assert steps == [2, 10, 20, 25], lines
    assert f"loss {losses[-1]:.4f} |" in lines[-1], (lines, losses)
    assert "steps/s" in lines[0] and "ETA 0:00:" in lines[0], lines
    assert trainer.total_steps is None
    print(f"ok: arena_bytes is the report's, rss_bytes <= peak_rss_bytes; "
          f"no progress line by default off a terminal; progress=True: "
          f"{lines[-1].split(' |')[0]!r} at steps {steps}")
    try:
        import tqdm  # noqa: F401
    except ImportError:
        print("ok: tqdm not installed: its bar not tried")
        return
    captured = io.StringIO()
    stderr, sys.stderr = sys.stderr, captured
    try:
        fresh = zero.Trainer(compiled, seed=3, progress=True, total_steps=3)
        for _ in range(3):
            fresh.step(batch())
    finally:
        sys.stderr = stderr
    text = captured.getvalue()
    assert "3/3" in text and "loss=" in text, text
    print("ok: with tqdm installed, its bar: 3/3 steps with the loss")


def ranks(path):
    """Stage 3 on 2 ranks: each rank's norm is the whole model's, the one
    rank's norm within rounding (the squares are summed per shard)."""
    expected = float(open(path).read())
    trainer = zero.Trainer(mlp(clip=1e6, stage=3), seed=3)
    trainer.step(batch())
    norm = trainer.metrics["grad_norm"]
    assert close(norm, expected, 1e-5), (norm, expected)
    print(f"rank {zero.rank()}: ok: grad_norm at stage 3 is the one-rank "
          "norm", flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "ranks":
        ranks(sys.argv[2])
    else:
        norm = single()
        memory_and_progress()
        if len(sys.argv) == 3 and sys.argv[1] == "write":
            with open(sys.argv[2], "w") as out:
                out.write(repr(norm))
    zero.shutdown()
