"""Outputs of evaluation (graph.output, trainer.evaluate(batch,
outputs=True)), test/python/outputs.test.

An MLP declares its logits and the batch mean of its logits as outputs.
Prints one `ok:` line per property that must hold, then one `refused:` line
per mistake. Run on 1 rank, and on 2 (stage 3) with `ranks`, where it checks
that every rank gets the whole batch's logits in the batch's order, equal to
a 1-rank evaluation of the same parameters.
"""

import sys

import numpy as np

import zero


def mlp(stage=0, precision="f32", with_outputs=True):
    graph = zero.Graph("mlp")
    graph.config.precision(precision)
    x = graph.input("x", [4, 16], "f32")
    labels = graph.input("labels", [4], "i32")
    fc1 = zero.nn.Linear(graph, "fc1", 16, 32)
    fc2 = zero.nn.Linear(graph, "fc2", 32, 5)
    logits = fc2(zero.relu(fc1(x)))
    graph.minimize(zero.softmax_cross_entropy(logits, labels))
    graph.config.optimizer(zero.AdamW(lr=1e-2))
    if stage:
        graph.config.enable_zero(True, stage=stage)
    if with_outputs:
        graph.output("logits", logits)
        graph.output("mean_logit", zero.reduce_mean(logits, [0, 1]))
    return graph, graph.compile(zero.world_size())


def batch(rows, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, 16)).astype(np.float32)
    y = (np.arange(rows) % 5).astype(np.int32)
    return [x, y]


def numpy_logits(state, x):
    hidden = np.maximum(x.astype(np.float64) @ state["fc1.w"] + state["fc1.b"],
                        0)
    return hidden @ state["fc2.w"] + state["fc2.b"]


def cross_entropy(logits, labels):
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -log_probs[np.arange(len(labels)), labels].mean()


def single():
    graph, compiled = mlp()
    assert graph.output_names == ["logits", "mean_logit"]
    trainer = zero.Trainer(compiled, seed=3)
    plain = zero.Trainer(mlp(with_outputs=False)[1], seed=3)
    data = batch(4)
    for step in range(3):
        assert trainer.step(batch(4, step)) == plain.step(batch(4, step))
    print("ok: a graph with outputs trains bitwise as one without")

    loss, outputs = trainer.evaluate(data, outputs=True)
    assert sorted(outputs) == ["logits", "mean_logit"], sorted(outputs)
    logits = outputs["logits"]
    assert logits.shape == (4, 5) and logits.dtype == np.float32
    assert loss == trainer.evaluate(data)
    reference = numpy_logits(trainer.state_dict(), data[0])
    assert np.allclose(logits, reference, rtol=1e-5, atol=1e-5)
    assert abs(cross_entropy(logits.astype(np.float64), data[1]) - loss) < 1e-5
    assert outputs["mean_logit"].shape == ()
    assert abs(float(outputs["mean_logit"]) - logits.mean()) < 1e-5
    print("ok: the logits equal numpy's forward of the state dict, their "
          "cross-entropy the loss, the scalar output their mean")

    three = [np.concatenate([batch(4, s)[i] for s in range(3)])
             for i in range(2)]
    loss3, outputs3 = trainer.evaluate(three, outputs=True)
    assert outputs3["logits"].shape == (12, 5)
    for s in range(3):
        part = trainer.evaluate(batch(4, s), outputs=True)[1]["logits"]
        assert np.array_equal(outputs3["logits"][4 * s:4 * s + 4], part)
    print("ok: three global batches give 12 rows of logits in the batch's "
          "order")

    bf16 = zero.Trainer(mlp(precision="bf16")[1], seed=3)
    _, half = bf16.evaluate(data, outputs=True)
    assert half["logits"].dtype == np.float32, half["logits"].dtype
    print("ok: bf16 logits come back as float32")

    g = zero.Graph("bad")
    x = g.input("x", [4, 16], "f32")
    labels = g.input("labels", [4], "i32")
    fc = zero.nn.Linear(g, "fc", 16, 5)
    logits = fc(x)
    g.minimize(zero.softmax_cross_entropy(logits, labels))
    g.output("logits", logits)
    mistakes = {
        "the same name twice": lambda: g.output("logits", logits),
        "a parameter": lambda: g.output("w", fc.weight.value),
        "a transposed value": lambda: g.output(
            "t", zero.transpose(logits, [1, 0])),
        "not a tensor": lambda: g.output("x", 1.5),
    }
    for what, mistake in mistakes.items():
        try:
            mistake()
        except (ValueError, TypeError) as error:
            print(f"refused {what}: {type(error).__name__}: {error}")
        else:
            raise AssertionError(f"{what} was accepted")


def ranks():
    _, compiled = mlp(stage=3)
    trainer = zero.Trainer(compiled, seed=3)
    for step in range(2):
        trainer.step(batch(8, step))
    data = batch(16, 7)  # two global batches of 8 rows
    loss, outputs = trainer.evaluate(data, outputs=True)
    state = trainer.state_dict()
    logits = outputs["logits"]
    assert logits.shape == (16, 5)
    reference = numpy_logits(state, data[0])
    assert np.allclose(logits, reference, rtol=1e-5, atol=1e-5)
    checksum = float(np.abs(logits).sum())
    print(f"rank {zero.rank()}: ok: 16 rows of logits, numpy's forward of "
          f"the state dict, checksum {checksum:.4f}")


if __name__ == "__main__":
    ranks() if sys.argv[1:] == ["ranks"] else single()
