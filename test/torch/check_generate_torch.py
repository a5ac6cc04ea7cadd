"""Trainer.generate on an imported Hugging Face model (test/torch/
generate.test): zero.from_torch declares the causal LM's logits as the
output `logits`, and greedy sampling gives the tokens of Hugging Face's own
`generate` (do_sample=False, its KV cache) from the same weights, after a
few training steps, at the stage and rank count given.

  check_generate_torch.py gpt2|llama STAGE
"""

import sys

import numpy as np
import torch

import zero

VOCAB, SEQ, ROWS = 96, 24, 4


def build(kind):
    torch.manual_seed(0)
    if kind == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        return GPT2LMHeadModel(
            GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB,
                       n_positions=SEQ, resid_pdrop=0.0, embd_pdrop=0.0,
                       attn_pdrop=0.0, bos_token_id=0, eos_token_id=0))
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(
        LlamaConfig(hidden_size=64, intermediate_size=128,
                    num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, vocab_size=VOCAB,
                    max_position_embeddings=SEQ, bos_token_id=0,
                    eos_token_id=0))


def main():
    kind, stage = sys.argv[1], int(sys.argv[2])
    ranks = zero.world_size()
    model = build(kind)
    local = ROWS // ranks
    graph = zero.from_torch(model, (torch.zeros(local, SEQ,
                                                dtype=torch.long),))
    graph.config.optimizer(zero.AdamW(lr=1e-2))
    graph.config.enable_zero(stage > 0, stage)
    compiled = graph.compile(ranks)
    assert list(compiled.output_names) == ["logits"], compiled.output_names
    trainer = graph.trainer(compiled, seed=5)
    # Counting text, as test/python/generate.test: a trained model continues
    # a count, so greedy sampling has a sequence to follow.
    text = (np.arange(SEQ)[None, :] + 3 * np.arange(ROWS)[:, None]) % 10 + 1
    for _ in range(20):
        trainer.step([text, text])
    prompt = np.array([[4, 5, 6], [9, 10, 1]])
    new = SEQ - prompt.shape[1]  # Hugging Face's context ends there
    ours = trainer.generate(prompt, new, temperature=0,
                            inputs={"labels": -100})
    model.load_state_dict(graph.state_dict(trainer))
    model.eval()
    with torch.no_grad():
        theirs = model.generate(torch.tensor(prompt), do_sample=False,
                                max_new_tokens=new, min_new_tokens=new,
                                pad_token_id=0,
                                attention_mask=torch.ones_like(
                                    torch.tensor(prompt)))
    assert ours.tolist() == theirs.tolist(), (ours.tolist(), theirs.tolist())
    assert len(set(ours[0, 3:].tolist())) > 3, ours  # not one repeated token
    if zero.rank() == 0:
        print(f"ok: {kind} stage {stage} N={ranks}: {new} greedy tokens "
              "after 2 prompts, Hugging Face generate's: "
              f"{ours[0, 3:9].tolist()} ...", flush=True)


if __name__ == "__main__":
    main()
