"""zero.from_torch from the installed wheel (scripts/test-wheel.sh).

A two-layer module with a cross-entropy loss, imported and trained three
steps with SGD, against torch.optim.SGD on a copy of the same module: the
same losses to float32 rounding, and the trained weights read back into
the module equal torch's. What this proves is that the wheel's extension
module, with LLVM and MLIR linked in and its own Open MPI, imports and runs
beside PyTorch in one interpreter; the importer's faithfulness itself is
test/torch's.
"""

import copy
import sys

import torch

import zero

torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Linear(8, 16)
        self.out = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)))


def cross_entropy(logits, y):
    return torch.nn.functional.cross_entropy(logits, y)


model = Net()
reference = copy.deepcopy(model)
x = torch.randn(6, 8)
y = torch.randint(0, 4, (6,))

graph = zero.from_torch(model, (x,), loss=cross_entropy, example_targets=(y,))
graph.config.optimizer(zero.SGD(lr=0.5, weight_decay=0.0))
compiled = graph.compile(zero.world_size())
trainer = graph.trainer(compiled)
ours = [trainer.step([x.numpy(), y.numpy()]) for _ in range(3)]

optimizer = torch.optim.SGD(reference.parameters(), lr=0.5)
theirs = []
for _ in range(3):
    optimizer.zero_grad()
    loss = cross_entropy(reference(x), y)
    loss.backward()
    optimizer.step()
    theirs.append(loss.item())

model.load_state_dict(graph.state_dict(trainer))
print("zero.from_torch losses:", ours)
print("torch.optim.SGD losses:", theirs)
failures = []
for step, (a, b) in enumerate(zip(ours, theirs)):
    if abs(a - b) > 1e-5 * max(1.0, abs(b)):
        failures.append(f"step {step}: loss {a} against torch's {b}")
for name, value in reference.state_dict().items():
    mine = model.state_dict()[name]
    if not torch.allclose(mine, value, rtol=1e-5, atol=1e-6):
        failures.append(f"{name}: differs from torch's by "
                        f"{(mine - value).abs().max().item()}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"zero {zero.__version__} beside torch {torch.__version__}: "
      f"3 steps as torch.optim.SGD")
