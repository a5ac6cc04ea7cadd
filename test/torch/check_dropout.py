"""GPT-2 with dropout 0.1 through zero.from_torch (test/torch/dropout.test).

  check_dropout.py STEPS

A GPT-2 from a small config with every dropout 0.1 (embeddings, attention
probabilities, residuals) is imported in training mode and trained STEPS
AdamW steps at ZeRO stage 3 on this job's ranks, on batches of the shipped
play (byte tokens), next to PyTorch's own training of the same module on
the same batches. The masks differ (PyTorch draws from its own generator),
so the losses are compared as PyTorch users compare runs: the mean of the
last 20 training losses and the final evaluation loss (in eval mode,
without dropout) within 2% of PyTorch's. That a dropout which did nothing
would also pass is checked exactly instead: the first step's loss, from
the same weights on the same batch, differs from that of the import in eval
mode (train=False), which has no dropout. (An earlier check asked the
losses to be nearer PyTorch's with dropout than its training without; but
those two part by only 0.6-0.9% at 200 steps, depending on the CPU's
kernels, and two dropout runs with different masks by about as much, so it
failed on some machines by chance.) Also checked: the import holds
train.dropout ops (the embeddings' one, and per block the attention probabilities', the attention output's and the MLP's), and an import in
eval mode (train=False) holds none.
"""

import copy
import os
import sys

import numpy as np
import torch

import zero

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "examples", "gpt2", "data",
                      "coriolanus.txt")
SEQ, ROWS, LR = 32, 8, 3e-3


def ok(what):
    if zero.rank() == 0:
        print("ok:", what, flush=True)


def model():
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(
        n_embd=64, n_layer=2, n_head=4, vocab_size=256, n_positions=SEQ,
        resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1, bos_token_id=0,
        eos_token_id=0))


def batches(steps):
    with open(CORPUS, "rb") as f:
        text = np.frombuffer(f.read(), dtype=np.uint8).astype(np.int64)
    rng = np.random.default_rng(5)
    starts = rng.integers(0, len(text) - SEQ, (steps + 1, ROWS))
    return [np.stack([text[s:s + SEQ] for s in row]) for row in starts]


def torch_run(module, data):
    module = copy.deepcopy(module)
    module.train()
    optimizer = torch.optim.AdamW(module.parameters(), lr=LR)
    losses = []
    for ids in data[:-1]:
        ids = torch.from_numpy(ids)
        logits = module(ids, use_cache=False).logits
        loss = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, 256), ids[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    module.eval()
    with torch.no_grad():
        ids = torch.from_numpy(data[-1])
        logits = module(ids, use_cache=False).logits
        final = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, 256), ids[:, 1:].reshape(-1)).item()
    return losses, final


def main():
    steps = int(sys.argv[1])
    ranks = zero.world_size()
    torch.set_num_threads(1)
    module = model()
    data = batches(steps)
    example = torch.from_numpy(data[0][:ROWS // ranks])
    graph = zero.from_torch(model(), (example,))
    graph.config.optimizer(zero.AdamW(lr=LR)).enable_zero(True, 3)
    compiled = graph.compile(ranks)
    dropouts = compiled.ir("forward").count("train.dropout")
    if dropouts != 1 + 3 * 2:
        raise AssertionError(f"{dropouts} train.dropout ops in the import")
    plain = zero.from_torch(model(), (example,), train=False)
    plain.config.optimizer(zero.AdamW(lr=LR)).enable_zero(True, 3)
    plain_compiled = plain.compile(ranks)
    if "train.dropout" in plain_compiled.ir("forward"):
        raise AssertionError("train=False imported dropout")
    ok(f"the import in training mode holds {dropouts} train.dropout ops, in "
       "eval mode none")
    first_without = plain.trainer(plain_compiled).step([data[0], data[0]])
    trainer = graph.trainer(compiled)
    ours = [trainer.step([ids, ids]) for ids in data[:-1]]
    final = trainer.evaluate([data[-1], data[-1]])
    want, want_final = torch_run(module, data)
    tail, want_tail = np.mean(ours[-20:]), np.mean(want[-20:])
    if zero.rank() == 0:
        print(f"gpt2-dropout N={ranks}: first loss {ours[0]:.4f} "
              f"(PyTorch {want[0]:.4f}; without dropout "
              f"{first_without:.4f}); mean of the last 20 {tail:.4f} "
              f"(PyTorch {want_tail:.4f}); evaluation {final:.4f} (PyTorch "
              f"{want_final:.4f})", flush=True)
    # The same weights and batch: only the masks can part the two.
    if not abs(ours[0] - first_without) > 1e-4 * first_without:
        raise AssertionError(
            f"the first loss with dropout, {ours[0]:.6f}, is that of the "
            f"import without it, {first_without:.6f}: dropout did nothing")
    # Within 2% of PyTorch (the bound).
    for what, got, ref in (("the last 20 losses' mean", tail, want_tail),
                           ("the evaluation loss", final, want_final)):
        if abs(got - ref) > 0.02 * ref:
            raise AssertionError(f"{what}: {got:.4f} against PyTorch's "
                                 f"{ref:.4f}")
    if not want_final < 0.8 * want[0]:
        raise AssertionError("the model did not learn: the check would "
                             "hold nothing")
    ok(f"{steps} steps with dropout 0.1 end within 2% of PyTorch's loss")


if __name__ == "__main__":
    main()
