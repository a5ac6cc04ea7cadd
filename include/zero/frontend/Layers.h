//===- Layers.h - Linear, Embedding, LayerNorm, attention, GPT-2 -*- C++
//-*-===//
//
// Layers are small classes: constructing one declares its parameters in the
// graph (named "<name>.w", "<name>.b", ...), calling it adds its ops. The
// GPT-2 layers emit exactly the ops of examples/gen_gpt2.py, so that a
// builder-made GPT-2 and the generated one train to the same losses.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_FRONTEND_LAYERS_H
#define ZERO_FRONTEND_LAYERS_H

#include "zero/frontend/Graph.h"

#include <string>
#include <vector>

namespace zero::frontend {

/// y = x W + b with W [in, out] and b [out]; x is [..., in].
class Linear {
public:
  Linear(Graph &graph, const std::string &name, int64_t in, int64_t out,
         bool bias = true, const Init &weightInit = Init::normal(0.0, 0.02));
  Tensor operator()(const Tensor &x) const;
  Parameter weight, bias;

private:
  std::string name;
  int64_t in;
};

/// Rows of a [vocab, dim] table picked by integer ids.
class Embedding {
public:
  Embedding(Graph &graph, const std::string &name, int64_t vocab, int64_t dim,
            const Init &init = Init::normal(0.0, 0.02));
  Tensor operator()(const Tensor &ids) const;
  /// The tied LM head: x [N, dim] -> logits [N, vocab] = x table^T, with the
  /// same parameter as the lookup (one parameter, two uses).
  Tensor attend(const Tensor &x) const;
  Parameter table;

private:
  std::string name;
};

/// Layer norm over the last dimension with gain ("<name>.g", ones) and bias
/// ("<name>.b", zeros).
class LayerNorm {
public:
  LayerNorm(Graph &graph, const std::string &name, int64_t dim,
            double eps = 1e-5);
  Tensor operator()(const Tensor &x) const;
  Parameter gain, bias;

private:
  std::string name;
  double eps;
};

/// GPT-2's feed-forward block: "<name>.fc" [dim, hidden], GELU,
/// "<name>.proj" [hidden, dim].
class MLP {
public:
  MLP(Graph &graph, const std::string &name, int64_t dim, int64_t hidden);
  Tensor operator()(const Tensor &x) const;
  Linear fc, proj;
};

/// Causal multi-head self-attention on the [batch * seq, dim] residual
/// stream, with separate q, k, v projections and an output projection.
/// With `fused`, the scores, mask, softmax and product with the values are
/// one `train.attention` (FlashAttention's algorithm: no [seq, seq] tensor
/// is kept for the backward); without, they are separate ops, as GPT-2's
/// reference code computes them.
class CausalSelfAttention {
public:
  CausalSelfAttention(Graph &graph, const std::string &name, int64_t dim,
                      int64_t heads, bool fused = false);
  Tensor operator()(const Tensor &x, int64_t batch) const;
  Linear q, k, v, proj;

private:
  Tensor heads(const Linear &projection, const Tensor &x, int64_t batch,
               int64_t seq) const;
  std::string name;
  int64_t dim, numHeads;
  bool fused;
};

/// Pre-LN transformer block: x + attn(ln_1(x)), then + mlp(ln_2(.)).
/// With `checkpoint`, every op of the block except its output (the last
/// residual add) is marked `train.recompute`, as `gen_gpt2.py --recompute`
/// marks it: with `config().activation_checkpointing(true)` only the
/// block's input and output stay alive for the backward. A `policy` other
/// than RecomputePolicy::everything is selective checkpointing: the
/// block's matmul and attention results it names are not marked and stay
/// alive as well.
class GPT2Block {
public:
  GPT2Block(Graph &graph, const std::string &name, int64_t dim, int64_t heads,
            bool checkpoint = false, bool fusedAttention = false,
            RecomputePolicy policy = RecomputePolicy::everything);
  Tensor operator()(const Tensor &x, int64_t batch) const;
  LayerNorm ln1;
  CausalSelfAttention attn;
  LayerNorm ln2;
  MLP mlp;
  bool checkpoint;
  /// With `checkpoint`: what the block keeps.
  RecomputePolicy policy;
};

struct GPT2Config {
  int64_t layers = 2;
  int64_t vocab = 256;
  int64_t seq = 16;
  int64_t dim = 64;
  int64_t heads = 4;
  /// Activation checkpointing per block (see GPT2Block); takes effect with
  /// `graph.config().activation_checkpointing(true)`.
  bool checkpoint = false;
  /// Each block's attention as one fused op (see CausalSelfAttention).
  bool fusedAttention = false;
  /// With `checkpoint`, what each block keeps: RecomputePolicy::everything
  /// (nothing but its output) or a selective policy.
  RecomputePolicy checkpointPolicy = RecomputePolicy::everything;
};

/// GPT-2 with the parameter names of gen_gpt2.py: wte, wpe, h{i}.*, ln_f.
class GPT2 {
public:
  GPT2(Graph &graph, const GPT2Config &config);
  /// Logits [batch, seq, vocab] of tokens and positions [batch, seq]; the LM
  /// head is tied to wte.
  Tensor logits(const Tensor &tokens, const Tensor &positions) const;
  /// Mean next-token cross-entropy against targets [batch, seq].
  Tensor loss(const Tensor &tokens, const Tensor &positions,
              const Tensor &targets) const;
  GPT2Config config;
  Embedding wte, wpe;
  std::vector<GPT2Block> blocks;
  LayerNorm lnF;
};

} // namespace zero::frontend

#endif // ZERO_FRONTEND_LAYERS_H
