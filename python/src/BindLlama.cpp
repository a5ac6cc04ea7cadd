//===- BindLlama.cpp - zero._zero's Llama family --------------------------===//
//
// zero.nn.RMSNorm and zero.nn.Llama (include/zero/frontend/Llama.h):
// Hugging Face's parameter names, rotary tables as inputs of the step.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "zero/frontend/Llama.h"

#include <pybind11/stl.h>

using namespace zero::frontend;

namespace zero::python {

void bindLlama(py::module_ &m) {
  py::class_<RMSNorm>(
      m, "RMSNorm",
      "Llama's RMSNorm over the last dimension: x / sqrt(mean(x^2) + eps) "
      "times the parameter `name` [dim] (ones). A bf16 or f16 x is "
      "normalized in f32 and cast back before the weight, as Hugging "
      "Face's LlamaRMSNorm computes.")
      .def(py::init([](Graph &graph, const std::string &name, int64_t dim,
                       double eps) {
             int64_t failures = graph.failures();
             RMSNorm layer(graph, name, dim, eps);
             raiseNewFailure(graph, failures);
             return layer;
           }),
           py::arg("graph"), py::arg("name"), py::arg("dim"),
           py::arg("eps") = 1e-6, py::keep_alive<1, 2>())
      .def(
          "__call__",
          [](const RMSNorm &layer, const Tensor &x) {
            return checkedResult(layer(x), x);
          },
          py::arg("x"), py::keep_alive<0, 1>(),
          "The normalized x, of x's shape and type.")
      .def_readonly("weight", &RMSNorm::weight,
                    "The Parameter of the weight, [dim].");

  py::class_<Llama>(
      m, "Llama",
      "LlamaForCausalLM with Hugging Face's parameter names and layouts "
      "('model.embed_tokens.weight', 'model.layers.<i>.self_attn.q_proj."
      "weight' [out, in], ..., 'model.norm.weight', 'lm_head.weight' unless "
      "`tied_embeddings`), so a Hugging Face state dict is an initial state "
      "as it is: RMSNorm, rotary position embeddings, grouped-query "
      "attention over `kv_heads` key/value heads, a SwiGLU feed-forward of "
      "width `hidden`. The rotary tables are inputs of the step (Hugging "
      "Face's position_embeddings; zero.nn.rope_tables computes them). "
      "`checkpoint` and `fused_attention` as GPT2's.")
      .def(py::init([](Graph &graph, int64_t layers, int64_t vocab, int64_t seq,
                       int64_t dim, int64_t heads, int64_t kvHeads,
                       int64_t hidden, double eps, bool tied,
                       const py::object &checkpoint, bool fused) {
             auto [marked, policy] = parseCheckpoint(checkpoint);
             int64_t failures = graph.failures();
             Llama model(graph,
                         LlamaConfig{layers, vocab, seq, dim, heads, kvHeads,
                                     hidden, eps, tied, marked, fused, policy});
             raiseNewFailure(graph, failures);
             return model;
           }),
           py::arg("graph"), py::arg("layers") = 2, py::arg("vocab") = 256,
           py::arg("seq") = 16, py::arg("dim") = 64, py::arg("heads") = 4,
           py::arg("kv_heads") = 2, py::arg("hidden") = 128,
           py::arg("eps") = 1e-6, py::arg("tied_embeddings") = false,
           py::arg("checkpoint") = false, py::arg("fused_attention") = false,
           py::keep_alive<1, 2>())
      .def(
          "logits",
          [](const Llama &model, const Tensor &tokens, const Tensor &cos,
             const Tensor &sin) {
            return checkedResult(model.logits(tokens, cos, sin), tokens, cos,
                                 sin);
          },
          py::arg("tokens"), py::arg("cos"), py::arg("sin"),
          py::keep_alive<0, 1>(),
          "The logits [batch, seq, vocab] of integer `tokens` [batch, seq] "
          "and the rotary tables `cos` and `sin` [batch, seq, head_dim] of "
          "their positions.")
      .def(
          "loss",
          [](const Llama &model, const Tensor &tokens, const Tensor &cos,
             const Tensor &sin, const Tensor &targets) {
            return checkedResult(model.loss(tokens, cos, sin, targets), tokens,
                                 cos, sin, targets);
          },
          py::arg("tokens"), py::arg("cos"), py::arg("sin"), py::arg("targets"),
          py::keep_alive<0, 1>(),
          "The mean cross-entropy of the logits against the next tokens "
          "`targets` [batch, seq] (shifted by the caller): a scalar f32 to "
          "minimize.")
      .def_property_readonly(
          "head_dim",
          [](const Llama &model) {
            return model.config.heads > 0
                       ? model.config.dim / model.config.heads
                       : 0;
          },
          "dim / heads: the rotary tables' last extent.");
}

} // namespace zero::python
