"""zero.from_torch in bf16 mixed precision against PyTorch (bf16.test).

  check_torch_bf16.py [--cast] MODEL STEPS

MODEL is gpt2 or llama (check_torch_import.py's). Three trainings of the
same module on the same batches, AdamW:

- PyTorch in float32: the reference;
- PyTorch under torch.autocast("cpu", dtype=torch.bfloat16): PyTorch's own
  mixed precision (float32 weights, bf16 matrix products);
- ours, imported with precision="bf16": bf16 weights and activations with
  float32 master copies (docs/python.md), at stages 0 and 3; with --cast,
  the module cast to bf16 first (`model.to(torch.bfloat16)`, as a
  bf16 checkpoint is loaded), imported as it is: its own upcasts (Llama's
  RMSNorm computes in float32) stay float32.

bf16 keeps 8 bits of mantissa, so neither mixed-precision training follows
the float32 one closely; the check is that ours stays as near it as a
bound derived from PyTorch's own: every loss within 4 times autocast's
largest relative distance from float32, or 1e-3 where that is larger
(measured over 20 steps: ours 1.4e-4 and 1.5e-4 for GPT-2 and Llama,
autocast 1.3e-4; docs/torch.md), and stages 0 and 3 bitwise identical.
"""

import sys

import torch

import check_torch_import as common
import zero


def ok(what):
    if zero.rank() == 0:
        print("ok:", what, flush=True)


def autocast_losses(kind, model, data):
    import copy
    model = copy.deepcopy(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=common.LR,
                                  betas=common.BETAS, eps=common.EPS,
                                  weight_decay=common.WEIGHT_DECAY)
    losses = []
    for batch in data:
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = common.torch_loss(kind, model, batch)
        loss.float().backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def ours(kind, model, data, stage, cast):
    ids = data[0][0][:2]
    if cast:
        import copy
        model = copy.deepcopy(model).to(torch.bfloat16)
        graph = zero.from_torch(model, (ids,))
        if "precision='bf16'" not in repr(graph.config):
            raise AssertionError(f"a bf16 module imported as "
                                 f"{graph.config!r}")
    else:
        graph = zero.from_torch(model, (ids,), precision="bf16")
    graph.config.optimizer(
        zero.AdamW(lr=common.LR, betas=common.BETAS, eps=common.EPS,
                   weight_decay=common.WEIGHT_DECAY)).enable_zero(
                       stage > 0, stage)
    trainer = graph.trainer(graph.compile(zero.world_size()))
    losses = [trainer.step([b[0].numpy(), b[0].numpy()]) for b in data]
    return losses, trainer.state_dict()


def main():
    torch.set_num_threads(1)
    cast = "--cast" in sys.argv
    kind, steps = [a for a in sys.argv[1:] if a != "--cast"]
    steps = int(steps)
    model = common.build(kind)
    data = common.batches(kind, steps, zero.world_size())
    exact, _ = common.train_torch(kind, model, data, "adamw")
    peer = autocast_losses(kind, model, data)
    distance = lambda losses: max(
        abs(a - b) / abs(b) for a, b in zip(losses, exact))
    peer_distance = distance(peer)
    bound = max(4 * peer_distance, 1e-3)
    runs = {}
    for stage in (0, 3):
        losses, state = ours(kind, model, data, stage, cast)
        runs[stage] = (losses, state)
        mine = distance(losses)
        if zero.rank() == 0:
            print(f"{kind} stage {stage}: largest relative distance from "
                  f"float32: ours {mine:.2e}, autocast {peer_distance:.2e}",
                  flush=True)
        if not mine <= bound:
            raise AssertionError(
                f"{kind} bf16 stage {stage}: a loss is {mine:.3g} from the "
                f"float32 training; bound {bound:.3g} (autocast: "
                f"{peer_distance:.3g})")
        ok(f"{kind} bf16{' cast' if cast else ''} stage {stage}: {steps} "
           "losses within the bound of PyTorch's autocast")
    (a, sa), (b, sb) = runs[0], runs[3]
    if a != b or any(sa[n].tobytes() != sb[n].tobytes() for n in sa):
        raise AssertionError(f"{kind} bf16: stage 3 is not stage 0 bitwise")
    ok(f"{kind} bf16{' cast' if cast else ''}: stages 0 and 3 bitwise "
       "identical")


if __name__ == "__main__":
    main()
