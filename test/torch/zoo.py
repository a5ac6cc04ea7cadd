"""The architecture zoo of test/torch/zoo.test: Hugging Face models built
from small configs (2 layers, width 64, 4 heads, vocabulary 256), each with
a pad token set (PAD, id 1) that the batches hold, left padding with the
tokenizer's attention_mask (but for NO_ATTENTION_MASK), and every dropout 0
(PyTorch trains in training mode; the importer exports in eval mode).

ZOO maps a name to (a function making the model, the loss): "causal_lm"
models train on the importer's causal-LM loss, "masked_lm" ones on the
cross-entropy of every position against given labels, -100 (PyTorch's
ignore_index) where a position is not masked, as Hugging Face's
DataCollatorForLanguageModeling labels them.
"""

import torch

VOCAB, PAD = 256, 1
WIDTH, LAYERS, HEADS = 64, 2, 4

# The config fields each family spells its dropouts with.
_NO_DROPOUT = dict(
    attention_dropout=0.0, hidden_dropout=0.0, dropout=0.0,
    attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0,
    resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, activation_dropout=0.0,
    embed_dropout=0.0, residual_dropout=0.0, summary_first_dropout=0.0)


def _decoder(config_name, model_name, **fields):
    def make():
        import transformers
        base = dict(hidden_size=WIDTH, intermediate_size=2 * WIDTH,
                    num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                    vocab_size=VOCAB, max_position_embeddings=64,
                    pad_token_id=PAD, bos_token_id=0, eos_token_id=0)
        base.update(_NO_DROPOUT)
        base.update(fields)
        config = getattr(transformers, config_name)(**base)
        return getattr(transformers, model_name)(config)
    return make


ZOO = {
    "gpt2": (_decoder("GPT2Config", "GPT2LMHeadModel", n_embd=WIDTH,
                      n_layer=LAYERS, n_head=HEADS, n_positions=64),
             "causal_lm"),
    "llama": (_decoder("LlamaConfig", "LlamaForCausalLM",
                       num_key_value_heads=2), "causal_lm"),
    "qwen2": (_decoder("Qwen2Config", "Qwen2ForCausalLM",
                       num_key_value_heads=2), "causal_lm"),
    "qwen3": (_decoder("Qwen3Config", "Qwen3ForCausalLM",
                       num_key_value_heads=2, head_dim=16), "causal_lm"),
    "mistral": (_decoder("MistralConfig", "MistralForCausalLM",
                         num_key_value_heads=2, sliding_window=None),
                "causal_lm"),
    "gemma": (_decoder("GemmaConfig", "GemmaForCausalLM",
                       num_key_value_heads=2, head_dim=16), "causal_lm"),
    "phi": (_decoder("PhiConfig", "PhiForCausalLM"), "causal_lm"),
    "stablelm": (_decoder("StableLmConfig", "StableLmForCausalLM",
                          num_key_value_heads=2), "causal_lm"),
    "olmo": (_decoder("OlmoConfig", "OlmoForCausalLM"), "causal_lm"),
    # Its default hidden_act, the exact (erf) GELU.
    "gpt-neox": (_decoder("GPTNeoXConfig", "GPTNeoXForCausalLM"),
                 "causal_lm"),
    # Learned positions from the attention mask's cumulative sum: a
    # constant at export, the same for every row of the batch.
    "opt": (_decoder("OPTConfig", "OPTForCausalLM", ffn_dim=2 * WIDTH,
                     word_embed_proj_dim=WIDTH), "causal_lm"),
    # Interleaved rotary: x[..., ::2] and x[..., 1::2] (strided slices).
    "gptj": (_decoder("GPTJConfig", "GPTJForCausalLM", n_embd=WIDTH,
                      n_layer=LAYERS, n_head=HEADS, n_positions=64,
                      rotary_dim=8), "causal_lm"),
    "cohere": (_decoder("CohereConfig", "CohereForCausalLM",
                        num_key_value_heads=2), "causal_lm"),
    # ALiBi from constant positions (x.select along the heads).
    "bloom": (_decoder("BloomConfig", "BloomForCausalLM", n_layer=LAYERS,
                       n_head=HEADS), "causal_lm"),
    # Token-type ids of zeros (constant rows), exact GELU, a masked-LM head.
    "bert": (_decoder("BertConfig", "BertForMaskedLM"), "masked_lm"),
    # Multi-query attention (one key/value head broadcast to every query
    # head), fused query/key/value split by indexing (fused_qkv[..., [-2],
    # :]), parallel attention and MLP.
    "falcon": (_decoder("FalconConfig", "FalconForCausalLM",
                        new_decoder_architecture=False, multi_query=True,
                        alibi=False), "causal_lm"),
    # Falcon's new decoder architecture: grouped key/value heads, two
    # layer norms.
    "falcon-new": (_decoder("FalconConfig", "FalconForCausalLM",
                            new_decoder_architecture=True, num_kv_heads=2,
                            alibi=False), "causal_lm"),
}


# Architectures trained without the attention_mask input, and why.
NO_ATTENTION_MASK = {
    # Its learned positions are the attention mask's cumulative sum: with
    # the mask an input, position ids computed from an input, which the
    # importer refuses (aten.cumsum).
    "opt": "positions from the mask's cumulative sum",
    # Its ALiBi positions likewise (aten.cumsum).
    "bloom": "ALiBi positions from the mask's cumulative sum",
}


def left_pad(ids, labels):
    """Left padding of varied lengths with PAD, as batches for generation
    are padded: rows start with 1, 3, 5 or 7 pad tokens, so a padded query
    attends to no key at all. Returns the tokenizer's attention_mask (1
    real, 0 padding); the labels of the padding become -100."""
    rows = ids.shape[0]
    mask = torch.ones_like(ids)
    for row in range(rows):
        padding = 1 + (row % 4) * 2
        ids[row, :padding] = PAD
        mask[row, :padding] = 0
        labels[row, :padding] = -100
    return mask


def masked_lm_loss(logits, labels):
    """The cross-entropy of every position's logits against its label,
    positions labelled -100 ignored (cross_entropy's default)."""
    return torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB),
                                             labels.reshape(-1))


def mask_labels(labels, generator, rate=0.15):
    """Labels -100 except at about `rate` of the positions, drawn per
    position: the ranks hold different numbers of real labels."""
    keep = torch.rand(labels.shape, generator=generator) < rate
    return torch.where(keep, labels, torch.full_like(labels, -100))


def pad_rows(ids):
    """Right padding of varied lengths with PAD: rows end with 1, 3, 5 or 7
    pad tokens, so the pad row is looked up in every batch."""
    rows, seq = ids.shape
    for row in range(rows):
        ids[row, seq - 1 - (row % 4) * 2:] = PAD
    return ids
