"""The reprs a user sees at the prompt (test/python/reprs.test): the
optimizers, schedules and loss scaling print as the calls that make them
(eval of the repr gives an object with the same repr), the layers as
PyTorch's do, the config and the trainer with what they hold."""

import zero


def main():
    made = [
        zero.SGD(lr=0.1), zero.Momentum(lr=0.1, momentum=0.8,
                                       weight_decay=1e-4),
        zero.Adam(lr=3e-4, betas=(0.9, 0.95)), zero.AdamW(),
        zero.Schedule.cosine(100, 10000, 3e-5), zero.Schedule.constant(5),
        zero.Schedule.linear(0, 50), zero.LossScaling.dynamic(1024.0, 10),
        zero.LossScaling.none(),
    ]
    for value in made:
        text = repr(value)
        again = eval(text, {"zero": zero})  # noqa: S307 (our own reprs)
        assert repr(again) == text, (text, repr(again))
        print(text)

    graph = zero.Graph("mlp")
    x = graph.input("x", [8, 16], "f32")
    labels = graph.input("labels", [8], "i32")
    fc1 = zero.nn.Linear(graph, "fc1", 16, 32)
    fc2 = zero.nn.Linear(graph, "fc2", 32, 4, bias=False)
    norm = zero.nn.LayerNorm(graph, "ln", 32)
    table = zero.nn.Embedding(graph, "wte", 11, 16)
    print(fc1, fc2, norm, table, sep="\n")
    graph.minimize(zero.softmax_cross_entropy(
        fc2(norm(zero.relu(fc1(x)))), labels))
    graph.config.optimizer(zero.AdamW(lr=0.01)).enable_zero(True, 3)
    graph.config.learning_rate_schedule(zero.Schedule.cosine(2, 10))
    graph.config.clip_grad_norm(1.0)
    graph.config.parameter_group("no_decay", ["fc1.b"], weight_decay=0.0)
    print(graph.config)
    trainer = zero.Trainer(graph.compile(1), input_names=["x", "labels"])
    trainer.step()
    print(trainer)


if __name__ == "__main__":
    main()
