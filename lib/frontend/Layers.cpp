//===- Layers.cpp - Layers as sequences of train ops ----------------------===//
//
// The op sequences follow examples/gen_gpt2.py op for op (a 2-D residual
// stream, attention through reshape/transpose to [B, H, T, Dh]), so that a
// GPT-2 built here and the generated one are the same step.
//
//===----------------------------------------------------------------------===//

#include "zero/frontend/Layers.h"

#include "GraphState.h"

#include "absl/strings/str_cat.h"

#include <cmath>
#include <limits>

using namespace zero::frontend;
using namespace zero::frontend::detail;

Tensor detail::layerError(const Tensor &x, const char *kind,
                          const std::string &name, const std::string &message) {
  return GraphState::of(x)->fail(
      absl::StrCat(kind, " '", name, "': ", message));
}

Linear::Linear(Graph &graph, const std::string &name, int64_t in, int64_t out,
               bool withBias, const Init &weightInit)
    : weight(graph.parameter(name + ".w", {in, out}, weightInit)), name(name),
      in(in) {
  if (withBias)
    bias = graph.parameter(name + ".b", {out}, Init::zeros());
}

Tensor Linear::operator()(const Tensor &x) const {
  if (!x.valid())
    return Tensor();
  if (x.rank() < 2 || x.shape().back() != in)
    return layerError(
        x, "Linear", name,
        absl::StrCat("expects inputs [..., ", in, "], got ", describe(x)));
  Tensor y = matmul(x, weight);
  return bias.defined() ? biasAdd(y, bias) : y;
}

Embedding::Embedding(Graph &graph, const std::string &name, int64_t vocab,
                     int64_t dim, const Init &init)
    : table(graph.parameter(name, {vocab, dim}, init)), name(name) {}

Tensor Embedding::operator()(const Tensor &ids) const {
  return embedding(table, ids);
}

Tensor Embedding::attend(const Tensor &x) const {
  Tensor weights = table;
  if (x.valid() && weights.valid() &&
      (x.rank() != 2 || x.shape()[1] != weights.shape()[1]))
    return layerError(x, "Embedding", name,
                      absl::StrCat("the tied head expects inputs [N, ",
                                   weights.shape()[1], "], got ", describe(x)));
  return matmul(x, weights, Transpose::b);
}

LayerNorm::LayerNorm(Graph &graph, const std::string &name, int64_t dim,
                     double eps)
    : gain(graph.parameter(name + ".g", {dim}, Init::ones())),
      bias(graph.parameter(name + ".b", {dim}, Init::zeros())), name(name),
      eps(eps) {}

Tensor LayerNorm::operator()(const Tensor &x) const {
  Tensor g = gain;
  if (x.valid() && g.valid() &&
      (x.rank() < 1 || x.shape().back() != g.shape()[0]))
    return layerError(x, "LayerNorm", name,
                      absl::StrCat("expects inputs [..., ", g.shape()[0],
                                   "], got ", describe(x)));
  return layerNorm(x, gain, bias, eps);
}

MLP::MLP(Graph &graph, const std::string &name, int64_t dim, int64_t hidden)
    : fc(graph, name + ".fc", dim, hidden),
      proj(graph, name + ".proj", hidden, dim) {}

Tensor MLP::operator()(const Tensor &x) const { return proj(gelu(fc(x))); }

CausalSelfAttention::CausalSelfAttention(Graph &graph, const std::string &name,
                                         int64_t dim, int64_t heads, bool fused)
    : q(graph, name + ".q", dim, dim), k(graph, name + ".k", dim, dim),
      v(graph, name + ".v", dim, dim), proj(graph, name + ".proj", dim, dim),
      name(name), dim(dim), numHeads(heads), fused(fused) {}

/// [B*T, D] -> projection -> [B, T, H, Dh] -> [B, H, T, Dh].
Tensor CausalSelfAttention::heads(const Linear &projection, const Tensor &x,
                                  int64_t batch, int64_t seq) const {
  Tensor split = reshape(projection(x), {batch, seq, numHeads, dim / numHeads});
  return transpose(split, {0, 2, 1, 3});
}

Tensor CausalSelfAttention::operator()(const Tensor &x, int64_t batch) const {
  if (!x.valid())
    return Tensor();
  if (dim % numHeads != 0)
    return layerError(
        x, "CausalSelfAttention", name,
        absl::StrCat(numHeads, " heads do not divide width ", dim));
  if (x.rank() != 2 || x.shape()[1] != dim || batch <= 0 ||
      x.shape()[0] % batch != 0)
    return layerError(x, "CausalSelfAttention", name,
                      absl::StrCat("expects inputs [batch * seq, ", dim,
                                   "] with batch ", batch, ", got ",
                                   describe(x)));
  int64_t seq = x.shape()[0] / batch;
  int64_t headDim = dim / numHeads;
  Tensor qh = heads(q, x, batch, seq);
  Tensor kh = heads(k, x, batch, seq);
  Tensor vh = heads(v, x, batch, seq);
  double factor = 1.0 / std::sqrt(static_cast<double>(headDim));
  Tensor context;
  if (fused) {
    context = attention(qh, kh, vh, factor, /*causal=*/true);
  } else {
    Tensor scores = matmul(qh, kh, Transpose::b);
    Tensor masked = causalMask(scale(scores, factor),
                               -std::numeric_limits<double>::infinity());
    context = matmul(softmax(masked), vh);
  }
  Tensor merged = reshape(transpose(context, {0, 2, 1, 3}), {batch * seq, dim});
  return proj(merged);
}

GPT2Block::GPT2Block(Graph &graph, const std::string &name, int64_t dim,
                     int64_t heads, bool checkpoint, bool fusedAttention,
                     RecomputePolicy policy)
    : ln1(graph, name + ".ln_1", dim),
      attn(graph, name + ".attn", dim, heads, fusedAttention),
      ln2(graph, name + ".ln_2", dim), mlp(graph, name + ".mlp", dim, 4 * dim),
      checkpoint(checkpoint), policy(policy) {}

Tensor GPT2Block::operator()(const Tensor &x, int64_t batch) const {
  if (!x.valid())
    return Tensor();
  // Checkpointed, everything but the output is marked (gen_gpt2.py
  // --recompute): the backward recomputes it from the block's input.
  // Selective, the policy leaves matmuls and the attention unmarked.
  GraphState *state = GraphState::of(x);
  if (checkpoint)
    state->openRecompute(policy);
  Tensor residual = x + attn(ln1(x), batch);
  Tensor inner = mlp(ln2(residual));
  if (checkpoint)
    state->closeRecompute(policy);
  return residual + inner;
}

/// The blocks, declared between wpe and ln_f as gen_gpt2.py declares them.
static std::vector<GPT2Block> makeBlocks(Graph &graph,
                                         const GPT2Config &config) {
  std::vector<GPT2Block> blocks;
  blocks.reserve(config.layers);
  for (int64_t i = 0; i < config.layers; ++i)
    blocks.emplace_back(graph, absl::StrCat("h", i), config.dim, config.heads,
                        config.checkpoint, config.fusedAttention,
                        config.checkpointPolicy);
  return blocks;
}

GPT2::GPT2(Graph &graph, const GPT2Config &config)
    : config(config), wte(graph, "wte", config.vocab, config.dim),
      wpe(graph, "wpe", config.seq, config.dim),
      blocks(makeBlocks(graph, config)), lnF(graph, "ln_f", config.dim) {}

Tensor GPT2::logits(const Tensor &tokens, const Tensor &positions) const {
  if (!tokens.valid())
    return Tensor();
  if (tokens.rank() != 2 || tokens.shape()[1] != config.seq ||
      positions.shape() != tokens.shape())
    return layerError(tokens, "GPT2", "gpt2",
                      absl::StrCat("expects tokens and positions [batch, ",
                                   config.seq, "], got ", describe(tokens),
                                   " and ", describe(positions)));
  int64_t batch = tokens.shape()[0];
  // Sequenced: the op order (token, then position lookup) is the step's.
  Tensor tokenEmbedding = wte(tokens);
  Tensor positionEmbedding = wpe(positions);
  Tensor x = reshape(tokenEmbedding + positionEmbedding,
                     {batch * config.seq, config.dim});
  for (const GPT2Block &block : blocks)
    x = block(x, batch);
  Tensor logits2d = wte.attend(lnF(x));
  return reshape(logits2d, {batch, config.seq, config.vocab});
}

Tensor GPT2::loss(const Tensor &tokens, const Tensor &positions,
                  const Tensor &targets) const {
  return softmaxCrossEntropy(logits(tokens, positions), targets);
}
