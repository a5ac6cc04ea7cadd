"""The ops a Llama adds, trained end to end (test/python/llama-ops.test).

A causal LM of one block written with them: an embedding, a fused
projection split by `narrow` (train.slice) into a SwiGLU's gate and up and a
rotary-style input, RMSNorm from reduce_mean, rsqrt and a `full` epsilon
broadcast with `expand`, the rotate-half `concat` of two slices, a sigmoid,
and the causal-LM loss over logits[:, :-1] against ids[:, 1:] (a slice of
the integer ids).

  check_llama_ops.py   trains 4 steps at each ZeRO stage 0-3, in one
                       process (one MPI start for the four)

For each stage rank 0 checks the step-1 loss against a numpy float64
forward of the initial state (an independent reference for the forward
composition; the gradients are checked against finite differences in the
unit tests) and that the loss falls; then that the four stages gave
bitwise-identical losses and final states.
"""

import sys

import numpy as np

import zero

B, S, D, V = 2, 8, 8, 16  # per-rank batch, sequence, width, vocabulary
EPS = 1e-5


def build(stage):
    graph = zero.Graph("llama_ops")
    ids = graph.input("ids", [B, S], "i32")
    table = graph.parameter("wte", [V, D], zero.Init.normal(0.0, 0.5))
    proj = zero.nn.Linear(graph, "proj", D, 3 * D)
    head = zero.nn.Linear(graph, "head", D, V)
    h = proj(zero.embedding(table.value, ids))  # [B, S, 3D]
    gate = zero.narrow(h, 2, 0, D)
    up = zero.narrow(h, 2, D, D)
    rot = zero.narrow(h, 2, 2 * D, D)
    glu = zero.silu(gate) * up
    # RMSNorm over the last dim: x / sqrt(mean(x^2) + eps).
    ms = zero.reduce_mean(glu * glu, [2]) + graph.full([B, S], EPS)
    norm = glu * zero.expand(zero.rsqrt(ms), [B, S, D], [2])
    half = D // 2
    rotated = zero.concat(
        [zero.neg(zero.narrow(rot, 2, half, half)),
         zero.narrow(rot, 2, 0, half)], 2)
    logits = head(norm + zero.sigmoid(rotated))  # [B, S, V]
    shifted = zero.narrow(logits, 1, 0, S - 1)
    targets = zero.narrow(ids, 1, 1, S - 1)
    graph.minimize(zero.softmax_cross_entropy(shifted, targets))
    graph.config.optimizer(zero.AdamW(lr=1e-2)).enable_zero(stage > 0, stage)
    return graph


def reference_loss(state, ids):
    """The forward in numpy float64 from the state_dict."""
    f = {name: value.astype(np.float64) for name, value in state.items()}
    sigmoid = lambda x: 1.0 / (1.0 + np.exp(-x))
    e = f["wte"][ids]
    h = e @ f["proj.w"] + f["proj.b"]
    gate, up, rot = h[..., :D], h[..., D:2 * D], h[..., 2 * D:]
    glu = gate * sigmoid(gate) * up
    norm = glu / np.sqrt(np.mean(glu * glu, axis=-1, keepdims=True) + EPS)
    half = D // 2
    rotated = np.concatenate([-rot[..., half:], rot[..., :half]], axis=-1)
    logits = (norm + sigmoid(rotated)) @ f["head.w"] + f["head.b"]
    logits, targets = logits[:, :-1], ids[:, 1:]
    shifted = logits - logits.max(axis=-1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(logp, targets[..., None], axis=-1)
    return -picked.mean()


def train(stage):
    """Losses and final state of 4 steps at `stage`."""
    trainer = zero.Trainer(build(stage).compile(zero.world_size()), seed=3)
    rng = np.random.default_rng(7)
    # One global batch, fitted four times: the loss must fall.
    batches = [rng.integers(0, V, (B * zero.world_size(), S)).astype(np.int32)
               ] * 4
    initial = trainer.state_dict()
    losses = [trainer.step([batch]) for batch in batches]
    final = trainer.state_dict()
    want = reference_loss(initial, batches[0])
    error = abs(losses[0] - want) / abs(want)
    if not error <= 1e-5:
        raise AssertionError(f"stage {stage}: step-1 loss {losses[0]!r} is not "
                             f"the numpy reference {want!r} (relative error "
                             f"{error:.2e})")
    if not losses[-1] < losses[0]:
        raise AssertionError(f"stage {stage}: the loss did not fall: {losses}")
    ok(f"stage {stage}, N={zero.world_size()}: step-1 loss matches the numpy "
       "reference, and the loss falls")
    return losses, final


def ok(what):
    if zero.rank() == 0:
        print("ok:", what, flush=True)


def main():
    runs = [train(stage) for stage in range(4)]
    losses, state = runs[0]
    for stage, (other_losses, other_state) in enumerate(runs[1:], 1):
        if other_losses != losses:
            raise AssertionError(f"stage {stage} losses {other_losses} differ "
                                 f"from stage 0's {losses}")
        for name, value in state.items():
            if value.tobytes() != other_state[name].tobytes():
                raise AssertionError(f"stage {stage}: {name} differs from "
                                     "stage 0's")
    ok(f"N={zero.world_size()}: stages 0-3 bitwise identical "
       f"({len(state)} tensors)")


if __name__ == "__main__":
    main()
