//===- Llama.h - Llama's layers: RMSNorm, rotary GQA, SwiGLU ----*- C++ -*-===//
//
// The Llama family with Hugging Face's parameter names and layouts
// (`model.layers.0.self_attn.q_proj.weight` [out, in], ...), so that a
// LlamaForCausalLM state dict is an initial state as it is. The ops are
// those of examples/llama/llama.py, which test/torch/llama-by-hand.test
// holds to Hugging Face's Llama; test/python/llama-builder.test holds this
// family to that example, loss for loss.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_FRONTEND_LLAMA_H
#define ZERO_FRONTEND_LLAMA_H

#include "zero/frontend/Layers.h"

#include <optional>
#include <string>
#include <vector>

namespace zero::frontend {

/// PyTorch's nn.Linear(in, out, bias=False) as PyTorch stores it: y = x W^T
/// with W [out, in] named "<name>.weight".
class Projection {
public:
  Projection(Graph &graph, const std::string &name, int64_t in, int64_t out);
  /// x [..., in] -> [..., out].
  Tensor operator()(const Tensor &x) const;
  Parameter weight;

private:
  std::string name;
  int64_t in;
};

/// Llama's RMSNorm over the last dimension: x / sqrt(mean(x^2) + eps) times
/// the weight "<name>" [dim] (ones). A 16-bit x is normalized in f32 and
/// cast back before the weight, as Hugging Face's LlamaRMSNorm computes.
class RMSNorm {
public:
  RMSNorm(Graph &graph, const std::string &name, int64_t dim, double eps);
  Tensor operator()(const Tensor &x) const;
  Parameter weight;

private:
  std::string name;
  double eps;
};

/// Llama's self-attention on the [batch * seq, dim] residual stream:
/// "<name>.q_proj" [heads * head_dim, dim], ".k_proj" and ".v_proj"
/// [kv_heads * head_dim, dim], ".o_proj" [dim, heads * head_dim]. Queries
/// and keys are rotated by the rotary tables `cos` and `sin` [batch, seq,
/// head_dim] (Hugging Face's `position_embeddings`, inputs of the step);
/// each key and value head serves heads / kv_heads query heads (grouped-
/// query attention); the attention is causal. `fused` as
/// CausalSelfAttention's.
class LlamaAttention {
public:
  LlamaAttention(Graph &graph, const std::string &name, int64_t dim,
                 int64_t heads, int64_t kvHeads, bool fused = false);
  Tensor operator()(const Tensor &x, const Tensor &cos,
                    const Tensor &sin) const;
  Projection q, k, v, o;

private:
  std::string name;
  int64_t dim, numHeads, numKvHeads;
  bool fused;
};

/// Llama's SwiGLU feed-forward: "<name>.down_proj"(silu("<name>.gate_proj"
/// (x)) * "<name>.up_proj"(x)), hidden the gate's width.
class LlamaMLP {
public:
  LlamaMLP(Graph &graph, const std::string &name, int64_t dim, int64_t hidden);
  Tensor operator()(const Tensor &x) const;
  Projection gate, up, down;
};

/// Llama's decoder layer: x + self_attn(input_layernorm(x)), then +
/// mlp(post_attention_layernorm(.)). `checkpoint` and `policy` as
/// GPT2Block's.
class LlamaBlock {
public:
  LlamaBlock(Graph &graph, const std::string &name, int64_t dim, int64_t heads,
             int64_t kvHeads, int64_t hidden, double eps,
             bool checkpoint = false, bool fusedAttention = false,
             RecomputePolicy policy = RecomputePolicy::everything);
  Tensor operator()(const Tensor &x, const Tensor &cos,
                    const Tensor &sin) const;
  RMSNorm inputNorm;
  LlamaAttention attn;
  RMSNorm postNorm;
  LlamaMLP mlp;
  bool checkpoint;
  RecomputePolicy policy;
};

/// LlamaConfig's fields that shape the model, Hugging Face's defaults where
/// it has them (untied head).
struct LlamaConfig {
  int64_t layers = 2;
  int64_t vocab = 256;
  int64_t seq = 16;
  int64_t dim = 64;
  int64_t heads = 4;
  int64_t kvHeads = 2;
  /// The SwiGLU's hidden width (`intermediate_size`).
  int64_t hidden = 128;
  /// RMSNorm's epsilon (`rms_norm_eps`).
  double eps = 1e-6;
  /// The LM head is the embedding table (`tie_word_embeddings`).
  bool tiedEmbeddings = false;
  /// Activation checkpointing per layer, as GPT2Config's.
  bool checkpoint = false;
  bool fusedAttention = false;
  RecomputePolicy checkpointPolicy = RecomputePolicy::everything;
};

/// LlamaForCausalLM: "model.embed_tokens.weight" [vocab, dim], layers
/// "model.layers.<i>", "model.norm.weight" and, untied, "lm_head.weight"
/// [vocab, dim].
class Llama {
public:
  Llama(Graph &graph, const LlamaConfig &config);
  /// Logits [batch, seq, vocab] of integer tokens [batch, seq] and the
  /// rotary tables cos and sin [batch, seq, head_dim] of their positions.
  Tensor logits(const Tensor &tokens, const Tensor &cos,
                const Tensor &sin) const;
  /// Mean cross-entropy of the logits against integer targets [batch, seq]
  /// (the next tokens: shifted by the caller, as GPT2::loss takes them).
  Tensor loss(const Tensor &tokens, const Tensor &cos, const Tensor &sin,
              const Tensor &targets) const;
  LlamaConfig config;
  Embedding embed;
  std::vector<LlamaBlock> layers;
  RMSNorm norm;
  /// Absent when tied.
  std::optional<Projection> lmHead;
};

} // namespace zero::frontend

#endif // ZERO_FRONTEND_LLAMA_H
