"""examples/llama/llama.py, the Llama written by hand with the builder,
against Hugging Face's LlamaForCausalLM of the same config and weights
(llama-by-hand.test): 10 AdamW steps on this job's ranks at stages 0 and 3,
every loss within 1e-5 of PyTorch's, the two stages bitwise equal.
"""

import os
import sys
import tempfile

import numpy as np
import torch

import zero

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "examples", "llama"))
import llama  # noqa: E402

STEPS, LR = 10, 1e-3


def main():
    torch.set_num_threads(1)
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = llama.Config()
    state = llama.initial_state(cfg, seed=3)
    hf = LlamaForCausalLM(LlamaConfig(
        hidden_size=cfg.dim, intermediate_size=cfg.hidden,
        num_hidden_layers=cfg.layers, num_attention_heads=cfg.heads,
        num_key_value_heads=cfg.kv_heads, vocab_size=cfg.vocab,
        max_position_embeddings=cfg.seq, rms_norm_eps=cfg.eps,
        rope_theta=cfg.theta, tie_word_embeddings=True, bos_token_id=0,
        eos_token_id=0))
    weights = {name: torch.from_numpy(value) for name, value in state.items()
               if not name.startswith("rope.")}
    missing, unexpected = hf.load_state_dict(weights, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (
        missing, unexpected)

    rows = 2 * zero.world_size()
    rng = np.random.default_rng(5)
    batches = [rng.integers(0, cfg.vocab, (rows, cfg.seq))
               for _ in range(STEPS)]
    optimizer = torch.optim.AdamW(hf.parameters(), lr=LR)
    want = []
    for ids in batches:
        ids = torch.from_numpy(ids)
        optimizer.zero_grad()
        logits = hf(ids, use_cache=False).logits
        loss = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, cfg.vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        want.append(loss.item())

    path = os.path.join(tempfile.gettempdir(),
                        f"llama-by-hand-{os.getpid()}.safetensors")
    llama.write_state(state, path)
    runs = []
    for stage in (0, 3):
        graph = llama.build(cfg, 2)
        graph.config.optimizer(zero.AdamW(lr=LR)).enable_zero(stage > 0,
                                                               stage)
        trainer = zero.Trainer(graph.compile(zero.world_size()), init=path)
        losses = [trainer.step([ids, ids]) for ids in batches]
        for step, (got, ref) in enumerate(zip(losses, want), 1):
            if not abs(got - ref) <= 1e-5 * abs(ref):
                raise AssertionError(f"stage {stage} step {step}: loss "
                                     f"{got!r}, Hugging Face {ref!r}")
        runs.append((losses, trainer.state_dict()))
        if zero.rank() == 0:
            print(f"ok: stage {stage} N={zero.world_size()}: {STEPS} losses "
                  "equal Hugging Face's LlamaForCausalLM to 1e-5", flush=True)
    os.remove(path)
    (a, sa), (b, sb) = runs
    if a != b or any(sa[n].tobytes() != sb[n].tobytes() for n in sa):
        raise AssertionError("stage 3 is not stage 0 bitwise")
    if zero.rank() == 0:
        print("ok: stages 0 and 3 bitwise identical", flush=True)


if __name__ == "__main__":
    main()
