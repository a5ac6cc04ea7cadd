"""A small Llama from a config, for import-cli.test."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def make_model():
    torch.manual_seed(0)
    return LlamaForCausalLM(
        LlamaConfig(hidden_size=64, intermediate_size=128,
                    num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, vocab_size=256,
                    max_position_embeddings=64, bos_token_id=0,
                    eos_token_id=0))
