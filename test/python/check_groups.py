"""Parameter groups (graph.config.parameter_group), test/python/groups.test.

Trains a small MLP with AdamW for 5 steps, with and without groups, and
prints one `ok:` line per equivalence that must hold bit for bit:

- a group that changes nothing (the biases, with the optimizer's own weight
  decay) trains as no group;
- every parameter in a group without weight decay trains as weight_decay=0;
- every parameter in a group with lr_scale 0.5 trains as half the rate;
- biases without weight decay change every parameter (the group acts).

Then one `refused:` line per mistake, with the message.
"""

import numpy as np

import zero


def train(groups, lr=1e-2, weight_decay=0.1, steps=5):
    graph = zero.Graph("mlp")
    x = graph.input("x", [8, 16], "f32")
    labels = graph.input("labels", [8], "i32")
    fc1 = zero.nn.Linear(graph, "fc1", 16, 32)
    fc2 = zero.nn.Linear(graph, "fc2", 32, 4)
    graph.minimize(zero.softmax_cross_entropy(fc2(zero.relu(fc1(x))), labels))
    graph.config.optimizer(zero.AdamW(lr=lr, weight_decay=weight_decay))
    for name, members, options in groups:
        graph.config.parameter_group(name, members(graph), **options)
    compiled = graph.compile(1)
    trainer = zero.Trainer(compiled, seed=3)
    losses = [trainer.step() for _ in range(steps)]
    return losses, trainer.state_dict(), compiled.report["parameter_groups"]


def biases(graph):
    return [p for _, p in graph.named_parameters() if len(p.value.shape) < 2]


def everything(graph):
    return [name for name, _ in graph.named_parameters()]


def frozen(graph):
    param = dict(graph.named_parameters())["fc1.b"]
    param.requires_grad = False
    return [param]


def same(a, b):
    return a[0] == b[0] and all(np.array_equal(a[1][k], b[1][k]) for k in a[1])


def main():
    base = train([])
    unchanged = train([("same", biases, {"weight_decay": 0.1})])
    assert same(base, unchanged), "a group that changes nothing changed it"
    print("ok: a group with the optimizer's own settings trains as no group")
    assert [(g["optimizer"], g["parameters"], g["elements"])
            for g in unchanged[2]] == [("adamw", 2, 640),
                                       ("adamw.same", 2, 36)], unchanged[2]
    print("ok: the report lists @adamw (2 parameters, 640 elements) and "
          "@adamw.same (2, 36)")
    assert same(train([("no_decay", everything, {"weight_decay": 0.0})]),
                train([], weight_decay=0.0))
    print("ok: every parameter without weight decay trains as "
          "weight_decay=0")
    assert same(train([("half", everything, {"lr_scale": 0.5})]),
                train([], lr=0.5e-2))
    print("ok: every parameter at lr_scale 0.5 trains at half the rate")
    no_decay = train([("no_decay", biases, {"weight_decay": 0.0})])
    changed = [k for k in base[1]
               if not np.array_equal(base[1][k], no_decay[1][k])]
    assert changed == ["fc1.b", "fc1.w", "fc2.b", "fc2.w"], changed
    print("ok: biases without weight decay change the training")
    # The no-decay recipe on a model without 1-D parameters gives an empty
    # group; PyTorch's optimizers accept one, and it changes nothing.
    empty = train([("no_decay", lambda g: [], {"weight_decay": 0.0})])
    assert same(base, empty), "an empty group changed the training"
    assert [g["optimizer"] for g in empty[2]] == ["adamw"], empty[2]
    print("ok: an empty group trains as no group and makes no optimizer")

    mistakes = {
        "unknown parameter": [("g", lambda g: ["fc3.w"], {})],
        "in two groups": [("a", biases, {}), ("b", biases, {})],
        "bad name": [("no decay", biases, {})],
        "same name twice": [("a", lambda g: ["fc1.b"], {}),
                            ("a", lambda g: ["fc2.b"], {})],
        "zero lr scale": [("g", biases, {"lr_scale": 0.0})],
        "negative weight decay": [("g", biases, {"weight_decay": -0.1})],
        "not a parameter": [("g", lambda g: [1.5], {})],
        "frozen parameter": [("g", frozen, {})],
    }
    for what, groups in mistakes.items():
        try:
            train(groups, steps=0)
        except (ValueError, TypeError) as error:
            print(f"refused {what}: {type(error).__name__}: {error}")
        else:
            raise AssertionError(f"{what} was accepted")


if __name__ == "__main__":
    main()
