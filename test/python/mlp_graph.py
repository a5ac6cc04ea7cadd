"""The MLP of examples/mlp/mlp_train.cpp as a zero.nn.Graph subclass; prints
`step N loss L` like mlp_train, on rank 0."""

import argparse

import zero


class MLP(zero.nn.Graph):
    def __init__(self, stage):
        super().__init__("mlp")
        self.fc1 = zero.nn.Linear(self, "fc1", 784, 128, True,
                                  zero.Init.normal(0.0, 0.036))
        self.fc2 = zero.nn.Linear(self, "fc2", 128, 10, True,
                                  zero.Init.normal(0.0, 0.088))
        self.config.optimizer(zero.Adam(lr=1e-3))
        self.config.enable_zero(stage > 0, stage)

    def build(self, x, labels):
        return zero.softmax_cross_entropy(self.fc2(zero.relu(self.fc1(x))),
                                          labels)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stage", type=int, default=0)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    graph = MLP(args.stage)
    compiled = graph.compile(zero.world_size(), x=([32, 784], "f32"),
                             labels=([32], "i32"))
    trainer = zero.Trainer(compiled, seed=1, input_names=graph.input_names)
    for step in range(1, args.steps + 1):
        loss = trainer.step()
        if zero.rank() == 0:
            print("step %d loss %.6f" % (step, loss))


if __name__ == "__main__":
    main()
