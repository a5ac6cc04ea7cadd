//===- Llama.cpp - Llama's layers as sequences of train ops ---------------===//
//
// The op sequences follow examples/llama/llama.py (which is held to Hugging
// Face's Llama), on GPT2's 2-D residual stream [batch * seq, dim]: the same
// arithmetic, so the two train to the same losses.
//
//===----------------------------------------------------------------------===//

#include "zero/frontend/Llama.h"

#include "GraphState.h"

#include "absl/strings/str_cat.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace zero::frontend;
using namespace zero::frontend::detail;

Projection::Projection(Graph &graph, const std::string &name, int64_t in,
                       int64_t out)
    : weight(graph.parameter(name + ".weight", {out, in},
                             Init::normal(0.0, 0.02))),
      name(name), in(in) {}

Tensor Projection::operator()(const Tensor &x) const {
  if (!x.valid())
    return Tensor();
  if (x.rank() < 2 || x.shape().back() != in)
    return layerError(
        x, "Projection", name,
        absl::StrCat("expects inputs [..., ", in, "], got ", describe(x)));
  return matmul(x, weight, Transpose::b);
}

RMSNorm::RMSNorm(Graph &graph, const std::string &name, int64_t dim, double eps)
    : weight(graph.parameter(name, {dim}, Init::ones())), name(name), eps(eps) {
}

Tensor RMSNorm::operator()(const Tensor &x) const {
  Tensor w = weight;
  if (!x.valid() || !w.valid())
    return Tensor();
  if (x.rank() < 2 || x.shape().back() != w.shape()[0])
    return layerError(x, "RMSNorm", name,
                      absl::StrCat("expects inputs [..., ", w.shape()[0],
                                   "], got ", describe(x)));
  Shape shape = x.shape();
  Shape rows(shape.begin(), shape.end() - 1);
  auto last = static_cast<int64_t>(rows.size());
  std::vector<int64_t> leading(rows.size());
  std::iota(leading.begin(), leading.end(), 0);
  // Hugging Face normalizes a 16-bit x in f32, epsilon included.
  bool narrow = x.dtype() != DType::f32;
  Tensor wide = narrow ? cast(x, DType::f32) : x;
  Tensor meanSquare = reduceMean(wide * wide, {last});
  Tensor epsilon = GraphState::of(x)->constant(rows, eps, DType::f32);
  Tensor normed = wide * expand(rsqrt(meanSquare + epsilon), shape, {last});
  if (narrow)
    normed = cast(normed, x.dtype());
  return normed * expand(weight, shape, leading);
}

LlamaAttention::LlamaAttention(Graph &graph, const std::string &name,
                               int64_t dim, int64_t heads, int64_t kvHeads,
                               bool fused)
    : q(graph, name + ".q_proj", dim, dim),
      k(graph, name + ".k_proj", dim, heads > 0 ? dim / heads * kvHeads : 0),
      v(graph, name + ".v_proj", dim, heads > 0 ? dim / heads * kvHeads : 0),
      o(graph, name + ".o_proj", dim, dim), name(name), dim(dim),
      numHeads(heads), numKvHeads(kvHeads), fused(fused) {}

/// Hugging Face's rotate_half: the last dimension's halves swapped, the
/// first negated.
static Tensor rotateHalf(const Tensor &x) {
  int64_t last = x.rank() - 1, half = x.shape().back() / 2;
  return concat({neg(slice(x, last, half, half)), slice(x, last, 0, half)},
                last);
}

Tensor LlamaAttention::operator()(const Tensor &x, const Tensor &cos,
                                  const Tensor &sin) const {
  if (!x.valid() || !cos.valid() || !sin.valid())
    return Tensor();
  if (numHeads <= 0 || numKvHeads <= 0 || dim % numHeads != 0 ||
      numHeads % numKvHeads != 0 || (dim / numHeads) % 2 != 0)
    return layerError(x, "LlamaAttention", name,
                      absl::StrCat("needs heads dividing the width and "
                                   "kv_heads dividing heads with an even head "
                                   "width; got width ",
                                   dim, ", ", numHeads, " heads, ", numKvHeads,
                                   " kv_heads"));
  int64_t headDim = dim / numHeads;
  if (cos.rank() != 3 || cos.shape()[2] != headDim ||
      sin.shape() != cos.shape() || x.rank() != 2 || x.shape()[1] != dim ||
      x.shape()[0] != cos.shape()[0] * cos.shape()[1])
    return layerError(x, "LlamaAttention", name,
                      absl::StrCat("expects inputs [batch * seq, ", dim,
                                   "] and rotary tables [batch, seq, ", headDim,
                                   "], got ", describe(x), ", ", describe(cos),
                                   " and ", describe(sin)));
  int64_t batch = cos.shape()[0], seq = cos.shape()[1];
  // [B*S, count * Dh] -> [B, count, S, Dh].
  auto heads = [&](const Projection &projection, int64_t count) {
    Tensor split = reshape(projection(x), {batch, seq, count, headDim});
    return transpose(split, {0, 2, 1, 3});
  };
  auto rotary = [&](const Tensor &t) {
    Shape shape = t.shape();
    Tensor c = expand(cos, shape, {1});
    Tensor s = expand(sin, shape, {1});
    return t * c + rotateHalf(t) * s;
  };
  // [B, kv, S, Dh] -> [B, kv, H / kv, S, Dh] -> [B, H, S, Dh].
  int64_t group = numHeads / numKvHeads;
  auto repeatKv = [&](const Tensor &t) {
    Tensor wide = expand(t, {batch, numKvHeads, group, seq, headDim}, {2});
    return reshape(wide, {batch, numHeads, seq, headDim});
  };
  Tensor qh = rotary(heads(q, numHeads));
  Tensor kh = repeatKv(rotary(heads(k, numKvHeads)));
  Tensor vh = repeatKv(heads(v, numKvHeads));
  double factor = 1.0 / std::sqrt(static_cast<double>(headDim));
  Tensor context;
  if (fused) {
    context = attention(qh, kh, vh, factor, /*causal=*/true);
  } else {
    Tensor scores = scale(matmul(qh, kh, Transpose::b), factor);
    Tensor probs =
        softmax(causalMask(scores, -std::numeric_limits<double>::infinity()));
    context = matmul(probs, vh);
  }
  return o(reshape(transpose(context, {0, 2, 1, 3}), {batch * seq, dim}));
}

LlamaMLP::LlamaMLP(Graph &graph, const std::string &name, int64_t dim,
                   int64_t hidden)
    : gate(graph, name + ".gate_proj", dim, hidden),
      up(graph, name + ".up_proj", dim, hidden),
      down(graph, name + ".down_proj", hidden, dim) {}

Tensor LlamaMLP::operator()(const Tensor &x) const {
  // The gate's matmul first, then the up projection's (torchtitan's
  // every-other-matmul checkpointing counts them in this order).
  Tensor g = gate(x);
  Tensor u = up(x);
  return down(silu(g) * u);
}

LlamaBlock::LlamaBlock(Graph &graph, const std::string &name, int64_t dim,
                       int64_t heads, int64_t kvHeads, int64_t hidden,
                       double eps, bool checkpoint, bool fusedAttention,
                       RecomputePolicy policy)
    : inputNorm(graph, name + ".input_layernorm.weight", dim, eps),
      attn(graph, name + ".self_attn", dim, heads, kvHeads, fusedAttention),
      postNorm(graph, name + ".post_attention_layernorm.weight", dim, eps),
      mlp(graph, name + ".mlp", dim, hidden), checkpoint(checkpoint),
      policy(policy) {}

Tensor LlamaBlock::operator()(const Tensor &x, const Tensor &cos,
                              const Tensor &sin) const {
  if (!x.valid())
    return Tensor();
  // As GPT2Block: checkpointed, all but the output is recomputed.
  GraphState *state = GraphState::of(x);
  if (checkpoint)
    state->openRecompute(policy);
  Tensor residual = x + attn(inputNorm(x), cos, sin);
  Tensor inner = mlp(postNorm(residual));
  if (checkpoint)
    state->closeRecompute(policy);
  return residual + inner;
}

static std::vector<LlamaBlock> makeLayers(Graph &graph,
                                          const LlamaConfig &config) {
  std::vector<LlamaBlock> layers;
  layers.reserve(config.layers);
  for (int64_t i = 0; i < config.layers; ++i)
    layers.emplace_back(graph, absl::StrCat("model.layers.", i), config.dim,
                        config.heads, config.kvHeads, config.hidden, config.eps,
                        config.checkpoint, config.fusedAttention,
                        config.checkpointPolicy);
  return layers;
}

static std::optional<Projection> makeHead(Graph &graph,
                                          const LlamaConfig &config) {
  if (config.tiedEmbeddings)
    return std::nullopt;
  return Projection(graph, "lm_head", config.dim, config.vocab);
}

Llama::Llama(Graph &graph, const LlamaConfig &config)
    : config(config),
      embed(graph, "model.embed_tokens.weight", config.vocab, config.dim),
      layers(makeLayers(graph, config)),
      norm(graph, "model.norm.weight", config.dim, config.eps),
      lmHead(makeHead(graph, config)) {}

Tensor Llama::logits(const Tensor &tokens, const Tensor &cos,
                     const Tensor &sin) const {
  if (!tokens.valid() || !cos.valid() || !sin.valid())
    return Tensor();
  if (tokens.rank() != 2 || tokens.shape()[1] != config.seq)
    return layerError(tokens, "Llama", "llama",
                      absl::StrCat("expects tokens [batch, ", config.seq,
                                   "], got ", describe(tokens)));
  int64_t batch = tokens.shape()[0];
  Tensor x = reshape(embed(tokens), {batch * config.seq, config.dim});
  for (const LlamaBlock &layer : layers)
    x = layer(x, cos, sin);
  Tensor normed = norm(x);
  Tensor logits2d = lmHead ? (*lmHead)(normed) : embed.attend(normed);
  return reshape(logits2d, {batch, config.seq, config.vocab});
}

Tensor Llama::loss(const Tensor &tokens, const Tensor &cos, const Tensor &sin,
                   const Tensor &targets) const {
  return softmaxCrossEntropy(logits(tokens, cos, sin), targets);
}
