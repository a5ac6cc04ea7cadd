"""The module stays the truth and the ranks agree (test/torch/module-truth.test).

  check_module_truth.py CHECKPOINT_ROOT

Each check is a mistake users make between their PyTorch code and ours,
which used to train another model than the one their code describes
without a word; each must now be done as PyTorch does it, or refused,
naming what:

- ranks seed torch differently before building the module: every rank
  starts from rank 0's weights, as DDP and FSDP's sync_module_states do (the
  trainer's state equals rank 0's module exactly, at stages 0 and 3), and
  rank 0 warns, naming the first tensor that differed;
- the module's weights change after from_torch (an in-place edit, a
  load_state_dict): the trainer starts from them as they are;
  requires_grad_(False) after the import, or a buffer the import folded
  into constants changed, is refused, naming the tensor;
- graph.config changed after compile: a trainer from the earlier compile is
  refused; compiling again takes the change;
- model.eval() before the import trains without dropout (the module's own
  mode), and the report says so; model.train() imports it;
- ranks passing different global batches to step are refused, naming it;
- a checkpoint saved under another clip_grad_norm, or another gradient
  accumulation count (another global batch), is refused at load.
"""

import sys
import warnings

import numpy as np
import torch

import zero

VOCAB, DIM, ROWS, SEQ = 32, 16, 4, 8


def ok(what):
    if zero.rank() == 0:
        print("ok:", what, flush=True)


class Tiny(torch.nn.Module):
    def __init__(self, p=0.0):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, DIM)
        self.drop = torch.nn.Dropout(p)
        self.proj = torch.nn.Linear(DIM, DIM)
        self.head = torch.nn.Linear(DIM, VOCAB, bias=False)
        self.register_buffer("scale", torch.full((DIM,), 0.5))

    def forward(self, ids):
        h = self.drop(self.emb(ids)) * self.scale
        return self.head(torch.tanh(self.proj(h)))


def built(seed, p=0.0):
    torch.manual_seed(seed)
    return Tiny(p)


def ids(seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, VOCAB, (ROWS * zero.world_size(), SEQ))


def example():
    return (torch.zeros(ROWS, SEQ, dtype=torch.int64),)


def compiled(graph, stage, lr=0.1, clip=None, accumulate=1):
    config = graph.config.optimizer(zero.SGD(lr=lr))
    config.enable_zero(stage > 0, max(stage, 1))
    if clip is not None:
        config.clip_grad_norm(clip)
    if accumulate > 1:
        config.set_gradient_accumulation_steps(accumulate)
    return graph.compile(zero.world_size())


def trainer_state(graph, trainer):
    return graph.state_dict(trainer)


def expect_refused(what, needle, call, kind=Exception):
    try:
        call()
    except kind as error:
        if needle not in str(error):
            raise AssertionError(f"{what}: refused, but not naming "
                                 f"{needle!r}: {error}") from error
        return str(error)
    raise AssertionError(f"{what}: not refused")


def ranks_seed_differently():
    reference = built(0).state_dict()
    for stage in (0, 3):
        module = built(zero.rank())  # each rank its own weights
        graph = zero.from_torch(module, example())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trainer = graph.trainer(compiled(graph, stage))
        state = trainer_state(graph, trainer)
        for name, value in reference.items():
            if not torch.equal(state[name], value):
                raise AssertionError(f"stage {stage}: '{name}' is not rank "
                                     "0's weights")
        said = [str(w.message) for w in caught]
        if zero.world_size() > 1 and zero.rank() == 0 and not any(
                "first 'emb.weight'" in text and "rank 0's" in text
                for text in said):
            raise AssertionError(f"stage {stage}: no warning naming the "
                                 f"first differing tensor: {said}")
    ok(f"ranks seeded differently start from rank 0's weights at stages 0 "
       f"and 3 ({zero.world_size()} rank(s)), rank 0 warning about "
       "'emb.weight' first")


def module_changed_after_import():
    module = built(0)
    graph = zero.from_torch(module, example())
    with torch.no_grad():
        module.proj.weight.mul_(2.0)
        module.load_state_dict({"head.weight": torch.ones(VOCAB, DIM)},
                               strict=False)
    trainer = graph.trainer(compiled(graph, 3))
    state = trainer_state(graph, trainer)
    for name in ("proj.weight", "head.weight", "emb.weight"):
        if not torch.equal(state[name], module.state_dict()[name]):
            raise AssertionError(f"'{name}': the trainer did not start from "
                                 "the module as it is now")
    ok("weights edited and loaded after from_torch are what the trainer "
       "starts from")

    module.proj.bias.requires_grad_(False)
    text = expect_refused("requires_grad_(False) after the import",
                          "parameter 'proj.bias' was frozen",
                          lambda: graph.trainer(compiled(graph, 3)),
                          RuntimeError)
    module.proj.bias.requires_grad_(True)
    with torch.no_grad():
        module.scale.fill_(2.0)
    expect_refused("a buffer changed after the import", "buffer 'scale'",
                   lambda: graph.trainer(compiled(graph, 3)), RuntimeError)
    ok(f"refused: {text.split(':')[0]}; and a changed buffer")


def config_after_compile():
    graph = zero.from_torch(built(0), example())
    first = compiled(graph, 1)
    graph.config.optimizer(zero.SGD(lr=0.5))
    text = expect_refused("config.optimizer after compile",
                          "graph.config changed after this graph was compiled",
                          lambda: graph.trainer(first), ValueError)
    if "lr=0.5" not in text:
        raise AssertionError(f"the refusal does not show the change: {text}")
    graph.config.optimizer(zero.SGD(lr=0.1)).enable_zero(True, 3)
    expect_refused("enable_zero after compile", "zero_stage=3",
                   lambda: graph.trainer(first), ValueError)
    graph.config.enable_zero(True, 1)
    graph.config.zero.prefetch_bytes = 1 << 20
    expect_refused("config.zero after compile", "ZeRO options",
                   lambda: graph.trainer(first), ValueError)
    trainer = graph.trainer(graph.compile(zero.world_size()))
    if trainer.learning_rate != 0.1:
        raise AssertionError("the second compile did not take the config")
    ok("config.optimizer, enable_zero and config.zero after compile are "
       "refused at trainer(); compiling again takes them")


def dropout_follows_the_module():
    module = built(0, p=0.5)
    module.eval()
    graph = zero.from_torch(module, example())
    plan = graph.compile(zero.world_size())
    if "train.dropout" in plan.ir("forward") or \
            plan.report["dropout"]["ops"] != 0 or \
            "no dropout" not in plan.report_text().splitlines()[0]:
        raise AssertionError("model.eval() imported dropout")
    if not all(not m.training for m in module.modules()):
        raise AssertionError("the import changed the module's mode")
    module.train()
    graph = zero.from_torch(module, example())
    plan = graph.compile(zero.world_size())
    if plan.report["dropout"] != {"ops": 1, "rates": [0.5]} or \
            "dropout on in training steps (1 op(s), p 0.5)" not in \
            plan.report_text().splitlines()[0]:
        raise AssertionError(f"model.train(): {plan.report['dropout']}, "
                             f"{plan.report_text().splitlines()[0]}")
    ok("model.eval() imports without dropout, model.train() with it, and "
       "the report says which")


def ranks_pass_different_batches():
    graph = zero.from_torch(built(0), example())
    trainer = graph.trainer(compiled(graph, 2))
    batch = ids(1)
    trainer.step([batch, batch])
    mine = ids(1 + zero.rank())
    if zero.world_size() > 1:
        expect_refused("different global batches", "different batches",
                       lambda: trainer.step([mine, mine]), RuntimeError)
        expect_refused("different evaluation batches", "different batches",
                       lambda: trainer.evaluate([mine, mine]), RuntimeError)
    trainer.step([batch, batch])  # the trainer goes on after the refusal
    ok("ranks given different global batches are refused, and the trainer "
       "goes on")


def checkpoints_under_other_settings(root):
    graph = zero.from_torch(built(0), example())
    trainer = graph.trainer(compiled(graph, 2, clip=1.0))
    trainer.step([ids(2), ids(2)])
    path = trainer.save(root)
    other = zero.from_torch(built(0), example())
    text = expect_refused(
        "another clip_grad_norm",
        "train.scale_by_norm's max_norm is 1 in the checkpoint and 0.5 here",
        lambda: other.trainer(compiled(other, 2, clip=0.5)).load(path))
    same = zero.from_torch(built(0), example())
    same.trainer(compiled(same, 2, clip=1.0)).load(path)
    accumulated = zero.from_torch(built(0), example())
    expect_refused("another accumulation count",
                   "the checkpoint accumulated 1 micro-batch(es)",
                   lambda: accumulated.trainer(
                       compiled(accumulated, 2, clip=1.0,
                                accumulate=2)).load(path))
    said = text[text.index("train.scale_by_norm"):].split(" (")[0]
    ok(f"refused: {said}; and another accumulation count; the same settings "
       "load")


def main(argv):
    ranks_seed_differently()
    module_changed_after_import()
    config_after_compile()
    dropout_follows_the_module()
    ranks_pass_different_batches()
    checkpoints_under_other_settings(argv[0])


if __name__ == "__main__":
    main(sys.argv[1:])
