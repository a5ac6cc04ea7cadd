"""A checkpoint of an imported module, consolidated, back in the module
(test/torch/checkpoint.test).

  check_checkpoint.py DIR   trains tiny_llama 3 steps at stage 3 on this
                            job's ranks, saves a checkpoint under DIR
  check_checkpoint.py DIR --load
                            loads DIR/model.safetensors (the checkpoint
                            consolidated by zero-ckpt) into the module
                            through graph.state_dict, and checks it equals
                            what the trainer held (saved by the first run)
"""

import os
import sys

import torch

import zero
import tiny_llama


def imported():
    model = tiny_llama.make_model()
    ids = torch.randint(0, 256, (2, 16), generator=torch.Generator()
                        .manual_seed(5))
    return model, ids, zero.from_torch(model, (ids,))


def main():
    root = sys.argv[1]
    model, ids, graph = imported()
    if sys.argv[2:] == ["--load"]:
        from safetensors.torch import load_file
        consolidated = os.path.join(root, "model.safetensors")
        model.load_state_dict(graph.state_dict(load_file(consolidated)))
        want = torch.load(os.path.join(root, "trained.pt"))
        for name, value in model.state_dict().items():
            if not torch.equal(value, want[name]):
                raise AssertionError(f"{name} differs from the trainer's")
        print(f"ok: the consolidated checkpoint loads into the module: "
              f"{len(want)} tensors equal the trainer's")
        return
    graph.config.optimizer(zero.AdamW(lr=1e-2)).enable_zero(True, 3)
    trainer = graph.trainer(graph.compile(zero.world_size()))
    batch = ids.repeat(zero.world_size(), 1).numpy()
    for _ in range(3):
        trainer.step([batch, batch])
    trainer.save(os.path.join(root, "ckpt"))
    state = graph.state_dict(trainer)
    if zero.rank() == 0:
        torch.save(state, os.path.join(root, "trained.pt"))
        print("ok: saved at step 3")


if __name__ == "__main__":
    main()
