"""train.dropout against PyTorch's dropout for the same mask
(test/torch/dropout-mask.test).

The masks cannot be the same draws (PyTorch's generator is its own), so
ours is read back and fed to PyTorch: a step of w -> sum(dropout(x + w) *
c) with w = 0 and SGD at lr 1 leaves w = -mask * scale * c, whose non-zero
elements are the mask the gradient went through; the loss went through the
forward's (the same, if the gradient draws as the forward does). PyTorch then computes the same function
with that mask (native_dropout's `input * mask * scale`, its backward
`grad * mask * scale`): the gradient must be the same bits, the loss the
same to rounding, the kept fraction within binomial bounds of 1 - p, and
the scale float32's 1 / (1 - p), as PyTorch's.
"""

import math
import sys

import numpy as np
import torch

import zero

D = 8192


def ours(p, x, c):
    graph = zero.Graph("dropout")
    xs = graph.input("x", [1, D], "f32")
    cs = graph.input("c", [1, D], "f32")
    w = graph.parameter("w", [D], zero.Init.zeros())
    h = zero.add(xs, zero.expand(w.value, [1, D], [0]))
    graph.minimize(zero.reduce_sum(zero.mul(zero.dropout(h, p), cs), [0, 1]))
    graph.config.optimizer(zero.SGD(lr=1.0, weight_decay=0.0))
    trainer = zero.Trainer(graph.compile(1), seed=7)
    loss = trainer.step([x, c])
    # w was 0: it is now minus the gradient, exactly.
    return loss, -trainer.state_dict()["w"]


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, D)).astype(np.float32) + 3.0
    c = rng.standard_normal((1, D)).astype(np.float32) + 3.0
    for p in (0.1, 0.5):
        loss, grad = ours(p, x, c)
        mask = torch.from_numpy(grad != 0).reshape(1, D)
        kept = float(mask.float().mean())
        bound = 5 * math.sqrt(p * (1 - p) / D)
        assert abs(kept - (1 - p)) <= bound, (p, kept, bound)
        w = torch.zeros(D, requires_grad=True)
        h = torch.from_numpy(x) + w
        scale = 1.0 / (1.0 - p)
        y = h * mask * scale  # native_dropout's forward, on CPU
        ref = (y * torch.from_numpy(c)).sum()
        ref.backward()
        want = w.grad.numpy()
        # Bit for bit where kept; the dropped are zeros (of either sign:
        # ours are read back as 0 - w).
        keep = mask.numpy()[0]
        assert np.array_equal(grad[keep].view(np.uint32),
                              want[keep].view(np.uint32)), (
            p, int((grad != want).sum()))
        assert not want[~keep].any() and not grad[~keep].any()
        ref = float(ref.detach())
        assert abs(loss - ref) <= 1e-6 * max(1.0, abs(ref)), \
            (loss, ref)
        # The kept elements carry c * float32(1 / (1 - p)).
        kept_grad = grad[keep] / c[0][keep]
        assert np.allclose(kept_grad, np.float32(scale), rtol=1e-6)
        print(f"ok: p={p}: kept {kept:.4f} (1 - p within {bound:.4f}); "
              f"the gradient with our mask fed to PyTorch is the same bits; "
              f"the loss within 1e-6", flush=True)
    zero.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
