"""Gradients averaged in f32 (config.zero.reduce_dtype = "f32", FSDP's
MixedPrecision(reduce_dtype=torch.float32)) for a bf16 GPT-2
(reduce-dtype.test).

Two bf16 gradients widened to f32 add exactly, and halving is exact, so
averaging rank 0's and rank 1's gradients in f32 gives what one rank gets by
accumulating the same two micro-batches in its f32 accumulator. So:

  reference (1 rank): 2 micro-batches a step, accumulated; writes the
      parameters after STEPS AdamW steps;
  check (2 ranks): the same global batches, one micro-batch a rank, no
      accumulation, at stages 0-3 with reduce_dtype "f32": every parameter
      bitwise the reference's. With the default ("gradient": averaged in
      bf16) the parameters differ from it. The plan's gradient reduction
      carries twice the bytes.

    check_reduce_dtype.py reference FILE   (mpirun -n 1)
    check_reduce_dtype.py check FILE       (mpirun -n 2)
"""

import sys

import numpy as np

import zero

B, S, D, H, V, L = 2, 16, 32, 4, 64, 2
STEPS = 3


def compile_gpt(ranks, stage, reduce_dtype="gradient", accumulate=1):
    graph = zero.Graph("gpt")
    graph.config.precision("bf16")
    inputs = [graph.input(name, [B, S], "i32")
              for name in ("tokens", "positions", "targets")]
    model = zero.nn.GPT2(graph, layers=L, vocab=V, seq=S, dim=D, heads=H)
    graph.minimize(model.loss(*inputs))
    graph.config.optimizer(zero.AdamW(lr=1e-2)).enable_zero(stage > 0, stage)
    if accumulate > 1:
        graph.config.gradient_accumulation_steps(accumulate)
    graph.config.zero.reduce_dtype = reduce_dtype
    return graph.compile(ranks)


def planned_peak(stage, reduce_dtype, accumulate):
    """The planned peak transient bytes of a model whose gradients dominate
    it (8 x 4096, checkpointed, fused attention) on 8 ranks: planned, not
    run."""
    graph = zero.Graph("wide")
    graph.config.precision("bf16")
    inputs = [graph.input(name, [2, 512], "i32")
              for name in ("tokens", "positions", "targets")]
    model = zero.nn.GPT2(graph, layers=8, vocab=512, seq=512, dim=4096,
                         heads=32, checkpoint=True, fused_attention=True)
    graph.minimize(model.loss(*inputs))
    graph.config.optimizer(zero.AdamW(lr=1e-4)).enable_zero(True, stage)
    graph.config.activation_checkpointing(True)
    if accumulate > 1:
        graph.config.gradient_accumulation_steps(accumulate)
    graph.config.zero.reduce_dtype = reduce_dtype
    return graph.compile(8).report["peak_transient"]


def batches():
    rng = np.random.default_rng(7)
    positions = np.tile(np.arange(S, dtype=np.int32), (2 * B, 1))
    for _ in range(STEPS):
        tokens = rng.integers(0, V, (2 * B, S + 1)).astype(np.int32)
        yield [np.ascontiguousarray(tokens[:, :-1]), positions,
               np.ascontiguousarray(tokens[:, 1:])]


def train(compiled):
    trainer = zero.Trainer(compiled, seed=5)
    losses = [trainer.step(batch) for batch in batches()]
    return losses, trainer.state_dict()


def traffic(compiled):
    return {kind: entry["bytes"]
            for kind, entry in compiled.report["traffic"].items()}


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "reference":
        losses, state = train(compile_gpt(1, 0, accumulate=2))
        np.savez(path, **state)
        print(f"ok: reference: 1 rank, 2 accumulated micro-batches, "
              f"{STEPS} steps (loss {losses[0]:.4f} -> {losses[-1]:.4f})")
        return
    reference = dict(np.load(path))
    planned = {dtype: traffic(compile_gpt(2, 3, dtype))
               for dtype in ("gradient", "f32")}
    if (planned["f32"]["reduce_scatter"]
            != 2 * planned["gradient"]["reduce_scatter"]
            or planned["f32"]["all_gather"]
            != planned["gradient"]["all_gather"]):
        raise AssertionError(f"planned traffic: {planned}")
    if zero.rank() == 0:
        print(f"ok: the plan's reduce-scatters carry "
              f"{planned['f32']['reduce_scatter']} bytes in f32, "
              f"{planned['gradient']['reduce_scatter']} in bf16; the "
              f"gathers the same", flush=True)
    # What reducing in f32 adds to the planned peak (the widened copy of a
    # gradient in flight) must not grow with accumulation: each micro-step
    # reduces each gradient where it is complete, as a step without
    # accumulation does (the widening once kept every unsharded bf16
    # gradient to the backward's end: +0.23 GB at stage 2, +1.8 GB at stage
    # 3 on this plan).
    for stage in (2, 3):
        extra = [planned_peak(stage, "f32", accumulate)
                 - planned_peak(stage, "gradient", accumulate)
                 for accumulate in (1, 2)]
        if extra[1] > extra[0] * 1.01:
            raise AssertionError(
                f"stage {stage}: reducing in f32 adds {extra[1]} B to the "
                f"peak at accumulation 2, {extra[0]} B without")
    if zero.rank() == 0:
        print("ok: reduce_dtype f32 adds no more to the planned peak at "
              "accumulation 2 than without, at stages 2 and 3", flush=True)
    for stage in range(4):
        _, state = train(compile_gpt(2, stage, "f32"))
        if sorted(state) != sorted(reference):
            raise AssertionError(f"stage {stage}: parameter names differ")
        differ = [n for n in state if not np.array_equal(state[n],
                                                         reference[n])]
        if differ:
            raise AssertionError(f"stage {stage}, reduce_dtype f32: "
                                 f"{differ} differ from the reference")
        if zero.rank() == 0:
            print(f"ok: stage {stage}: reduce_dtype f32 on 2 ranks trains "
                  f"bitwise as 2 accumulated micro-batches on 1 rank "
                  f"({len(state)} tensors)", flush=True)
    _, state = train(compile_gpt(2, 3))
    differ = [n for n in state if not np.array_equal(state[n], reference[n])]
    if not differ:
        raise AssertionError("reduce_dtype 'gradient' (bf16) trains as f32 "
                             "does; the option changes nothing")
    if zero.rank() == 0:
        print(f"ok: reduce_dtype gradient: {len(differ)} of {len(state)} "
              f"tensors differ (averaged in bf16)", flush=True)


if __name__ == "__main__":
    main()
