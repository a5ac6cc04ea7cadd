"""GPT-2 with fused attention (zero.nn.GPT2(fused_attention=True), one
train.attention per block) against the same model with attention as
separate ops (test/python/fused-attention.test).

  check_fused_attention.py   trains a small GPT-2 4 steps both ways at
                             ZeRO stages 0-3, in one process

Both start from the same parameters (the same names and initializers) and
see the same batches, under SGD (Adam's normalization would blow the
rounding noise of gradients that are 0 in exact arithmetic, the key bias's,
up to a full step). Rank 0 checks that:
  - the fused step holds train.attention and no softmax, the other the
    reverse;
  - every step's loss agrees to 2e-5 relative and the final parameters to
    1e-4: the two compute one function in a different order of f32
    rounding (the fused kernel never stores the scores);
  - the fused runs at stages 0-3 are bitwise identical;
  - the lowered fused step reads the heads in place (train.attention's
    seq_major, train-fuse-attention-layout): no transpose is launched,
    where the step lowered without the fusion passes (fuse_epilogues off)
    launches 8 a block, and both train bitwise the same, also with
    activation checkpointing (the recomputed forward folds too);
  - at 256 positions the fused plan's arena is smaller: no [seq, seq]
    scores or probabilities are kept for the backward.
"""

import re

import numpy as np

import zero

B, S, D, H, V, LAYERS = 2, 16, 32, 4, 64, 2


def build(stage, fused, seq=S, fuse=True, checkpoint=False):
    graph = zero.Graph("gpt_fused" if fused else "gpt")
    graph.config.zero.fuse_epilogues = fuse
    inputs = [graph.input(name, [B, seq], "i32")
              for name in ("tokens", "positions", "targets")]
    model = zero.nn.GPT2(graph, layers=LAYERS, vocab=V, seq=seq, dim=D,
                         heads=H, fused_attention=fused, checkpoint=checkpoint)
    if checkpoint:
        graph.config.activation_checkpointing(True)
    graph.minimize(model.loss(*inputs))
    graph.config.optimizer(zero.SGD(lr=0.2)).enable_zero(stage > 0, stage)
    return graph.compile(zero.world_size())


def train(stage, fused, fuse=True, checkpoint=False):
    compiled = build(stage, fused, fuse=fuse, checkpoint=checkpoint)
    ir = compiled.ir()
    softmax = re.search(r"train\.softmax(?![_a-z])", ir) is not None
    if fused != ("train.attention" in ir) or fused == softmax:
        raise AssertionError(f"fused={fused}: the step's attention ops are "
                             "not the expected ones")
    if fused:
        # Launches of transposes, and attentions reading heads in place.
        transposes = ir.count('"train.transpose"')
        seq_major = len(re.findall(r'"train\.attention(?:_grad)?" .*seq_major',
                                   ir))
        # Recomputed for the backward, each block runs its forward twice:
        # the recomputed attention and its transposes fold too.
        forwards = 2 if checkpoint else 1
        want = ((0, (1 + forwards) * LAYERS) if fuse else
                ((4 + 4 * forwards) * LAYERS, 0))
        if (transposes, seq_major) != want:
            raise AssertionError(
                f"fuse_epilogues={fuse}: {transposes} transposes and "
                f"{seq_major} seq-major attention launches, not {want}")
    trainer = zero.Trainer(compiled, seed=5)
    rng = np.random.default_rng(11)
    ranks = zero.world_size()
    tokens = rng.integers(0, V, (B * ranks, S)).astype(np.int32)
    positions = np.tile(np.arange(S, dtype=np.int32), (B * ranks, 1))
    targets = np.roll(tokens, -1, axis=1)
    losses = [trainer.step([tokens, positions, targets]) for _ in range(4)]
    return losses, trainer.state_dict()


def ok(what):
    if zero.rank() == 0:
        print("ok:", what, flush=True)


def main():
    n = zero.world_size()
    fused = {stage: train(stage, True) for stage in range(4)}
    for stage in range(4):
        losses, state = train(stage, False)
        got, got_state = fused[stage]
        for step, (a, b) in enumerate(zip(got, losses), 1):
            if not abs(a - b) <= 2e-5 * abs(b):
                raise AssertionError(f"stage {stage} step {step}: fused loss "
                                     f"{a!r}, separate ops {b!r}")
        for name, value in state.items():
            if not np.allclose(got_state[name], value, rtol=1e-4, atol=1e-5):
                worst = np.max(np.abs(got_state[name] - value))
                raise AssertionError(f"stage {stage}: {name} differs by "
                                     f"{worst:.3g}")
        ok(f"stage {stage}, N={n}: fused attention trains as the separate "
           f"ops do (4 losses, {len(state)} tensors)")
    losses, state = fused[0]
    for stage in range(1, 4):
        other_losses, other_state = fused[stage]
        if other_losses != losses or any(
                value.tobytes() != other_state[name].tobytes()
                for name, value in state.items()):
            raise AssertionError(f"fused attention: stage {stage} differs "
                                 "from stage 0")
    ok(f"N={n}: fused attention at stages 0-3 bitwise identical")
    for stage in range(4):
        losses, state = train(stage, True, fuse=False)
        got, got_state = fused[stage]
        if got != losses or any(value.tobytes() != got_state[name].tobytes()
                                for name, value in state.items()):
            raise AssertionError(f"stage {stage}: attention on seq-major "
                                 "heads differs from the transposed step")
    ok(f"N={n}: attention on seq-major heads, no transposes, bitwise as the "
       "transposed step at stages 0-3")
    # With activation checkpointing the recomputed forward folds as well.
    folded = train(3, True, checkpoint=True)
    transposed = train(3, True, fuse=False, checkpoint=True)
    if folded[0] != transposed[0] or any(
            value.tobytes() != folded[1][name].tobytes()
            for name, value in transposed[1].items()):
        raise AssertionError("checkpointed: attention on seq-major heads "
                             "differs from the transposed step")
    ok(f"N={n}: checkpointed, the recomputed attention folds too, bitwise")
    long_fused = build(3, True, seq=256).report["arena_bytes"]
    long_separate = build(3, False, seq=256).report["arena_bytes"]
    if not long_fused < long_separate:
        raise AssertionError(f"fused arena {long_fused} B is not below the "
                             f"separate ops' {long_separate} B")
    ok(f"N={n}: at 256 positions the fused plan's arena is "
       f"{long_fused / long_separate:.2f} of the separate ops'")


if __name__ == "__main__":
    main()
