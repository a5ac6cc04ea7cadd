//===- BindGraph.cpp - zero._zero's builder: Graph, Tensor, ops, layers ---===//
//
// The C++ graph builder (docs/frontend.md) as Python sees it
// (docs/python.md): each op raises its build error where it is called.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "absl/strings/str_cat.h"

#include "zero/frontend/CompiledGraph.h"
#include "zero/frontend/Graph.h"
#include "zero/frontend/Layers.h"
#include "zero/frontend/Llama.h"
#include "zero/runtime/Communicator.h"
#include "zero/support/ByteSize.h"

#include <cmath>
#include <memory>
#include <optional>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

using namespace zero::frontend;
namespace rt = zero::rt;

namespace {

/// A layer's name from one of its parameters' ('fc1' of 'fc1.w').
std::string layerName(const Parameter &parameter) {
  const std::string &name = parameter.name();
  return name.substr(0, name.rfind('.'));
}

} // namespace

namespace zero::python {
namespace {

/// "f32[32, 784]", as the reprs show a tensor's type.
std::string typeText(const Tensor &t) {
  std::string shape;
  for (int64_t extent : t.shape())
    shape += (shape.empty() ? "" : ", ") + std::to_string(extent);
  return std::string(rt::dtypeName(t.dtype())) + "[" + shape + "]";
}

} // namespace

DType parseDtype(const std::string &name) {
  absl::StatusOr<DType> dtype = rt::parseDType(name);
  if (!dtype.ok())
    throw py::value_error("unknown dtype '" + name +
                          "': use f32, bf16, f16, i32 or i64");
  return *dtype;
}

std::pair<bool, RecomputePolicy> parseCheckpoint(const py::object &checkpoint) {
  if (py::isinstance<py::bool_>(checkpoint))
    return {checkpoint.cast<bool>(), RecomputePolicy::everything};
  const char *modes = "False, True, 'none', 'full', 'selective' or "
                      "'selective_op'";
  if (!py::isinstance<py::str>(checkpoint))
    throw py::type_error(std::string("checkpoint must be ") + modes);
  std::string mode = checkpoint.cast<std::string>();
  if (mode == "none" || mode == "full")
    return {mode == "full", RecomputePolicy::everything};
  if (mode == "selective")
    return {true, RecomputePolicy::exceptMatmuls};
  if (mode == "selective_op")
    return {true, RecomputePolicy::everyOtherMatmul};
  throw py::value_error(std::string("checkpoint must be ") + modes + ", got '" +
                        mode + "'");
}

/// `with graph.checkpoint(mode):` — the ops added inside are marked for
/// recomputation as RecomputeScope marks them; mode "none" marks nothing.
class CheckpointContext {
public:
  CheckpointContext(Graph &graph, bool marked, RecomputePolicy policy)
      : graph(&graph), marked(marked), policy(policy) {}

  void enter() {
    if (open)
      throw py::value_error("graph.checkpoint: this scope is already open");
    open = true;
    if (marked)
      scope = std::make_unique<RecomputeScope>(*graph, policy);
  }
  void exit() {
    scope.reset();
    open = false;
  }

private:
  Graph *graph;
  bool marked;
  RecomputePolicy policy;
  bool open = false;
  // Held while the scope is open and marks.
  std::unique_ptr<RecomputeScope> scope;
};

void bindGraph(py::module_ &m) {
  py::class_<CheckpointContext>(
      m, "CheckpointScope",
      "A context (graph.checkpoint(mode)) whose ops are marked for "
      "recomputation in the backward.")
      .def("__enter__",
           [](CheckpointContext &context) -> CheckpointContext & {
             context.enter();
             return context;
           })
      .def("__exit__",
           [](CheckpointContext &context, const py::object &,
              const py::object &, const py::object &) { context.exit(); });
  py::class_<Tensor>(m, "Tensor",
                     "A value of the step being built: a graph input, a "
                     "parameter's value or an op's result. `+ - * /` are the "
                     "elementwise ops on two tensors of one shape and type.")
      .def_property_readonly("shape", &Tensor::shape,
                             "The shape, a list of extents (an input's "
                             "dimension 0 is the per-rank batch).")
      .def_property_readonly(
          "dtype",
          [](const Tensor &t) { return std::string(rt::dtypeName(t.dtype())); },
          "The element type's name: 'f32', 'bf16', 'f16', 'i32' or 'i64'.")
      .def(
          "__add__",
          [](const Tensor &a, const Tensor &b) {
            return checkedResult(a + b, a, b);
          },
          py::keep_alive<0, 1>())
      .def(
          "__sub__",
          [](const Tensor &a, const Tensor &b) {
            return checkedResult(a - b, a, b);
          },
          py::keep_alive<0, 1>())
      .def(
          "__mul__",
          [](const Tensor &a, const Tensor &b) {
            return checkedResult(a * b, a, b);
          },
          py::keep_alive<0, 1>())
      .def(
          "__truediv__",
          [](const Tensor &a, const Tensor &b) {
            return checkedResult(div(a, b), a, b);
          },
          py::keep_alive<0, 1>())
      .def(
          "__neg__", [](const Tensor &a) { return neg(a); },
          py::keep_alive<0, 1>())
      .def("__repr__",
           [](const Tensor &t) { return "zero.Tensor(" + typeText(t) + ")"; });

  py::class_<Parameter>(
      m, "Parameter",
      "A persistent trainable (or frozen) tensor of a graph, declared by "
      "Graph.parameter or a layer. It stands for the Tensor of its value "
      "wherever an op takes one; using it several times (a tied LM head) is "
      "one parameter whose gradients are summed.")
      .def_property_readonly("name", &Parameter::name,
                             "Its unique name in the graph, e.g. 'fc1.w' "
                             "(the key state_dict gives it under).")
      .def_property_readonly("value", &Parameter::value,
                             "The Tensor of its value in the step (.shape, "
                             ".dtype).")
      .def_property(
          "requires_grad", [](const Parameter &p) { return p.requiresGrad(); },
          [](Parameter &p, bool trainable) { p.requiresGrad(trainable); },
          "Whether it is trained (True by default). Set False to freeze it: "
          "a frozen parameter gets no gradient, no optimizer state and no "
          "update.")
      .def("__repr__", [](const Parameter &p) {
        return "zero.Parameter('" + p.name() + "', " + typeText(p.value()) +
               (p.requiresGrad() ? "" : ", requires_grad=False") + ")";
      });
  py::implicitly_convertible<Parameter, Tensor>();

  py::class_<Init>(m, "Init",
                   "How a parameter's initial value is drawn from the run's "
                   "seed (Graph.parameter, the layers' init).")
      .def_static("zeros", &Init::zeros, "Every element 0.")
      .def_static("ones", &Init::ones, "Every element 1.")
      .def_static("constant", &Init::constant, py::arg("value"),
                  "Every element `value`.")
      .def_static("normal", &Init::normal, py::arg("mean") = 0.0,
                  py::arg("std") = 0.02,
                  "Drawn from the normal distribution of mean `mean` and "
                  "standard deviation `std`.")
      .def_static("uniform", &Init::uniform, py::arg("low"), py::arg("high"),
                  "Drawn uniformly between `low` and `high`.");

  // The optimizers, schedules and GraphConfig (BindConfig.cpp).
  bindConfig(m);

  py::class_<Graph>(
      m, "Graph",
      "A training step being built: declare inputs and parameters, apply "
      "ops and layers, minimize a loss, configure, then compile for a number "
      "of ranks. A building mistake raises ValueError at the call that made "
      "it.")
      .def(py::init<std::string>(), py::arg("name"))
      .def_property_readonly("name", &Graph::name,
                             "The name given at construction.")
      .def(
          "checkpoint",
          [](Graph &graph, const py::object &mode) {
            auto [marked, policy] = parseCheckpoint(mode);
            return CheckpointContext(graph, marked, policy);
          },
          py::arg("mode") = "full", py::keep_alive<0, 1>(),
          "A context: the ops added inside it are recomputed in the "
          "backward when config.activation_checkpointing is on, as a "
          "block of GPT2 checkpoint= marks them: 'full' (or True) every "
          "op, 'selective' all but the matmul and attention results, "
          "'selective_op' (torchtitan's op-level policy) all but the "
          "attention and every other matmul, the first kept; 'none' (or "
          "False) nothing. Leave the block's output outside it: the "
          "backward recomputes from kept values.")
      .def("__repr__",
           [](const Graph &graph) {
             int64_t trainable = 0;
             std::vector<Parameter> parameters = graph.parameters();
             for (const Parameter &param : parameters)
               trainable += param.requiresGrad();
             return "zero.Graph('" + graph.name() + "', " +
                    std::to_string(parameters.size()) + " parameters (" +
                    std::to_string(trainable) + " trainable))";
           })
      .def(
          "input",
          [](Graph &graph, const std::string &name, const Shape &shape,
             const std::string &dtype) {
            int64_t failures = graph.failures();
            Tensor input = graph.input(name, shape, parseDtype(dtype));
            raiseNewFailure(graph, failures);
            return input;
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype") = "f32",
          py::keep_alive<0, 1>(),
          "An input of the step (a Tensor), batch-major: dimension 0 is the "
          "per-rank batch, each rank taking its rows of the global batch. A "
          "float input declared f32 takes the configured precision.")
      .def(
          "parameter",
          [](Graph &graph, const std::string &name, const Shape &shape,
             const Init &init) {
            int64_t failures = graph.failures();
            Parameter param = graph.parameter(name, shape, init);
            raiseNewFailure(graph, failures);
            return param;
          },
          py::arg("name"), py::arg("shape"), py::arg("init"),
          py::keep_alive<0, 1>(),
          "A new Parameter named `name` (unique; dots group names, as in "
          "'h0.attn.q.w'), drawn as `init` (an Init). It is f32, or the "
          "configured precision.")
      .def(
          "full",
          [](Graph &graph, const Shape &shape, double value,
             const std::string &dtype, bool exactType) {
            int64_t failures = graph.failures();
            Tensor full =
                graph.full(shape, value, parseDtype(dtype), exactType);
            raiseNewFailure(graph, failures);
            return full;
          },
          py::arg("shape"), py::arg("value"), py::arg("dtype") = "f32",
          py::arg("exact_type") = false, py::keep_alive<0, 1>(),
          "A tensor whose every element is `value`: a constant of the step "
          "(a scalar operand, an epsilon), with no gradient, not a "
          "parameter. An f32 constant takes the configured precision, "
          "unless `exact_type`: then it is `dtype` as given (the operand of "
          "a value a 16-bit model widened to f32).")
      .def(
          "named_parameters",
          [](py::object self) {
            py::list named;
            for (const Parameter &param :
                 self.cast<const Graph &>().parameters()) {
              // Each handle keeps its graph alive, as the ops' results do.
              py::object handle = py::cast(param);
              py::detail::keep_alive_impl(handle, self);
              named.append(py::make_tuple(param.name(), handle));
            }
            return named;
          },
          "Every parameter as (name, Parameter), in declaration order, frozen "
          "ones included.")
      .def("minimize", &Graph::minimize, py::arg("loss"),
           "The scalar f32 loss the training step minimizes.")
      .def(
          "output",
          [](Graph &graph, const std::string &name, const Tensor &value) {
            int64_t before = graph.failures();
            graph.output(name, value);
            if (graph.failures() > before)
              raise(graph.error(before));
          },
          py::arg("name"), py::arg("value"),
          "A value Trainer.evaluate(batch, outputs=True) gives back by name "
          "(e.g. the logits): a scalar f32 or a batch-major tensor computed "
          "from the inputs. Training steps do not compute it.")
      .def_property_readonly("output_names", &Graph::outputNames,
                             "The names given to output(), in order.")
      .def_property_readonly("config", py::overload_cast<>(&Graph::config),
                             py::return_value_policy::reference_internal,
                             "The graph's GraphConfig: optimizer, ZeRO "
                             "stage, precision, ...")
      .def(
          "check", [](const Graph &graph) { check(graph.status()); },
          "Raises the first error met while building (ValueError), if any.")
      .def(
          "compile",
          [](const Graph &graph, int ranks) {
            if (ranks < 1)
              throw py::value_error("ranks must be at least 1, got " +
                                    std::to_string(ranks));
            return std::make_shared<CompiledGraph>(
                unwrap(graph.compile(ranks)));
          },
          py::arg("ranks"),
          "Differentiates the step and compiles it for `ranks` data-parallel "
          "ranks at the configured ZeRO stage: a CompiledGraph. Compiling "
          "needs no running ranks, and the graph can be compiled again "
          "(other ranks, other config). A bad graph or config raises "
          "ValueError.");

  m.def("add", checked(&zero::frontend::add), py::arg("a"), py::arg("b"),
        py::keep_alive<0, 1>(),
        "Elementwise a + b of two tensors of one shape and type.");
  m.def("sub", checked(&zero::frontend::sub), py::arg("a"), py::arg("b"),
        py::keep_alive<0, 1>(),
        "Elementwise a - b of two tensors of one shape and type.");
  m.def("mul", checked(&zero::frontend::mul), py::arg("a"), py::arg("b"),
        py::keep_alive<0, 1>(),
        "Elementwise a * b of two tensors of one shape and type.");
  m.def("div", checked(&zero::frontend::div), py::arg("a"), py::arg("b"),
        py::keep_alive<0, 1>(),
        "Elementwise a / b of two tensors of one shape and type.");
  m.def("neg", checked(&zero::frontend::neg), py::arg("x"),
        py::keep_alive<0, 1>(), "Elementwise negation, -x.");
  m.def("exp", checked(&zero::frontend::exp), py::arg("x"),
        py::keep_alive<0, 1>(), "Elementwise exponential, e^x.");
  m.def("log", checked(&zero::frontend::log), py::arg("x"),
        py::keep_alive<0, 1>(), "Elementwise natural logarithm, ln x.");
  m.def("sqrt", checked(&zero::frontend::sqrt), py::arg("x"),
        py::keep_alive<0, 1>(), "Elementwise square root.");
  m.def("rsqrt", checked(&rsqrt), py::arg("x"), py::keep_alive<0, 1>(),
        "Elementwise reciprocal square root, 1 / sqrt(x).");
  m.def("tanh", checked(&zero::frontend::tanh), py::arg("x"),
        py::keep_alive<0, 1>(), "Elementwise hyperbolic tangent.");
  m.def("relu", checked(&relu), py::arg("x"), py::keep_alive<0, 1>(),
        "Elementwise rectified linear unit, max(x, 0).");
  m.def("gelu", checked(&gelu), py::arg("x"), py::arg("exact") = false,
        py::keep_alive<0, 1>(),
        "Elementwise GELU: the tanh approximation of GPT-2, 0.5 x (1 + "
        "tanh(sqrt(2/pi) (x + 0.044715 x^3))), or with exact=True 0.5 x (1 + "
        "erf(x / sqrt(2))), PyTorch's default.");
  m.def("sigmoid", checked(&sigmoid), py::arg("x"), py::keep_alive<0, 1>(),
        "Elementwise logistic function, 1 / (1 + e^-x).");
  m.def(
      "silu", checked(&silu), py::arg("x"), py::keep_alive<0, 1>(),
      "Elementwise SiLU (swish), x / (1 + e^-x), the gate of Llama's SwiGLU.");
  m.def("softmax", checked(&softmax), py::arg("x"), py::arg("safe") = false,
        py::keep_alive<0, 1>(),
        "Softmax over the last dimension; with safe=True a row of only -inf "
        "gives zeros (PyTorch's scaled_dot_product_attention) instead of "
        "NaN (torch.softmax).");
  m.def("scale", checked(&scale), py::arg("x"), py::arg("factor"),
        py::keep_alive<0, 1>(), "Every element times the constant `factor`.");
  m.def("causal_mask", checked(&causalMask), py::arg("x"), py::arg("fill"),
        py::keep_alive<0, 1>(),
        "x with element [..., i, j], j > i, of the last two dimensions set to "
        "`fill` (e.g. -inf before a softmax over attention scores).");
  m.def(
      "attention",
      [](const Tensor &q, const Tensor &k, const Tensor &v,
         std::optional<double> scale, bool causal) {
        double factor =
            scale
                ? *scale
                : (q.rank() > 0 && q.shape().back() > 0
                       ? 1.0 / std::sqrt(static_cast<double>(q.shape().back()))
                       : 1.0);
        return checkedResult(attention(q, k, v, factor, causal), q, k, v);
      },
      py::arg("q"), py::arg("k"), py::arg("v"), py::arg("scale") = py::none(),
      py::arg("causal") = true, py::keep_alive<0, 1>(),
      "softmax(q k^T * scale) v over q, k, v [..., seq, head_dim] of one "
      "type (scale defaults to 1/sqrt(head_dim), causal leaves out keys "
      "after the query, as PyTorch's scaled_dot_product_attention with "
      "is_causal): one fused op, FlashAttention's algorithm, so the "
      "[seq, seq] scores are never a tensor of the step and take no memory "
      "between forward and backward.");
  m.def("dropout", checked(&dropout), py::arg("x"), py::arg("p"),
        py::keep_alive<0, 1>(),
        "PyTorch's dropout in training: each element kept with probability "
        "1 - p and scaled by 1 / (1 - p), else 0; the first dimension is the "
        "batch. The mask depends on the trainer's seed, the step and each "
        "element's place in the global batch only, so a run is the same at "
        "every ZeRO stage and rank count; evaluate runs without it.");
  m.def("key_mask", checked(&keyMask), py::arg("x"), py::arg("keep"),
        py::arg("fill"), py::keep_alive<0, 1>(), py::keep_alive<0, 2>(),
        "x with element [b, ..., j] set to `fill` where the integer "
        "keep[b, j] is 0: a tokenizer's attention_mask [batch, keys] on "
        "attention scores [batch, ..., queries, keys].");
  m.def("bias_add", checked(&biasAdd), py::arg("x"), py::arg("bias"),
        py::keep_alive<0, 1>(),
        "x + bias, the 1-D `bias` broadcast along the last dimension of x.");
  m.def(
      "matmul",
      [](const Tensor &a, const Tensor &b, bool transposeA, bool transposeB) {
        Transpose t = transposeA
                          ? (transposeB ? Transpose::both : Transpose::a)
                          : (transposeB ? Transpose::b : Transpose::none);
        return checkedResult(matmul(a, b, t), a, b);
      },
      py::arg("a"), py::arg("b"), py::arg("transpose_a") = false,
      py::arg("transpose_b") = false, py::keep_alive<0, 1>(),
      "The matrix product [..., M, K] x [..., K, N] -> [..., M, N], after "
      "transposing the last two dimensions of `a` and `b` as asked; `b` may be "
      "2-D and shared by every batch.");
  m.def(
      "layer_norm", checked(&layerNorm), py::arg("x"), py::arg("gamma"),
      py::arg("beta"), py::arg("eps") = 1e-5, py::keep_alive<0, 1>(),
      "Layer normalization over the last dimension, scaled by `gamma` and "
      "shifted by `beta` (both of its size); `eps` is added to the variance.");
  m.def("embedding", checked(&embedding), py::arg("table"), py::arg("ids"),
        py::arg("padding_idx") = py::none(), py::keep_alive<0, 1>(),
        "The rows of `table` [V, D] picked by the integer `ids`: a tensor of "
        "shape ids.shape + [D]. Row `padding_idx`, where given, gets no "
        "gradient from the lookup (PyTorch's nn.Embedding(padding_idx=...)).");
  m.def("softmax_cross_entropy", checked(&softmaxCrossEntropy),
        py::arg("logits"), py::arg("labels"),
        py::arg("ignore_index") = py::none(), py::arg("label_smoothing") = 0.0,
        py::keep_alive<0, 1>(),
        "The mean cross-entropy of softmax(logits) against integer `labels` of "
        "shape logits.shape[:-1]: a scalar f32 (16-bit logits are cast to f32 "
        "first). Labels equal to `ignore_index`, where given, take no part: "
        "the mean is over the other labels of the global batch, as PyTorch's "
        "cross_entropy(ignore_index=...) on one process (NaN where every "
        "label is ignored). `label_smoothing` e in [0, 1] is PyTorch's: the "
        "target is 1 - e on the label and e / C on every class.");
  m.def("reduce_sum", checked(&reduceSum), py::arg("x"), py::arg("dims"),
        py::keep_alive<0, 1>(),
        "The sum over the dimensions `dims`, which the result drops.");
  m.def("reduce_mean", checked(&reduceMean), py::arg("x"), py::arg("dims"),
        py::keep_alive<0, 1>(),
        "The mean over the dimensions `dims`, which the result drops.");
  m.def("reshape", checked(&reshape), py::arg("x"), py::arg("shape"),
        py::keep_alive<0, 1>(),
        "x with another shape of the same number of elements.");
  m.def("transpose", checked(&zero::frontend::transpose), py::arg("x"),
        py::arg("permutation"), py::keep_alive<0, 1>(),
        "x with its dimensions permuted: the result's dimension i is x's "
        "dimension permutation[i].");
  // torch.narrow's name and arguments; `slice` would shadow the builtin.
  m.def("narrow", checked(&zero::frontend::slice), py::arg("x"), py::arg("dim"),
        py::arg("start"), py::arg("length"), py::keep_alive<0, 1>(),
        "Positions [start, start + length) of dimension `dim`, as "
        "torch.narrow; also of integer tensors (shifted labels).");
  // The list keeps its tensors, and so their graph, alive.
  m.def(
      "concat",
      [](const std::vector<Tensor> &xs, int64_t dim) {
        if (xs.empty())
          throw py::value_error("concat needs at least one tensor");
        return checkedResult(concat(xs, dim), xs);
      },
      py::arg("xs"), py::arg("dim"), py::keep_alive<0, 1>(),
      "The tensors `xs` end to end along `dim`; they agree in every other "
      "dimension and in type.");
  m.def("expand", checked(&zero::frontend::expand), py::arg("x"),
        py::arg("shape"), py::arg("dims"), py::keep_alive<0, 1>(),
        "x broadcast to `shape` by repeating it along the new dimensions "
        "`dims` of `shape` (ascending): removing them from `shape` gives x's "
        "shape. Broadcast a size-1 dimension by reshaping it away first.");
  m.def(
      "cast",
      [](const Tensor &x, const std::string &dtype) {
        return checkedResult(cast(x, parseDtype(dtype)), x);
      },
      py::arg("x"), py::arg("dtype"), py::keep_alive<0, 1>(),
      "x converted to `dtype` ('f32', 'bf16' or 'f16'), rounding to nearest "
      "even.");

  // Layers hold their parameters; the Python objects keep the graph alive.
  py::class_<Linear>(
      m, "Linear",
      "y = x W + b, x of shape [..., in_features]: declares the parameters "
      "'<name>.w' [in_features, out_features], drawn as `init`, and, with "
      "`bias`, '<name>.b' [out_features] (zeros). Call it on x.")
      .def(py::init([](Graph &graph, const std::string &name, int64_t in,
                       int64_t out, bool bias, const Init &init) {
             int64_t failures = graph.failures();
             Linear layer(graph, name, in, out, bias, init);
             raiseNewFailure(graph, failures);
             return layer;
           }),
           py::arg("graph"), py::arg("name"), py::arg("in_features"),
           py::arg("out_features"), py::arg("bias") = true,
           py::arg("init") = Init::normal(0.0, 0.02), py::keep_alive<1, 2>())
      .def(
          "__call__",
          [](const Linear &layer, const Tensor &x) {
            return checkedResult(layer(x), x);
          },
          py::arg("x"), py::keep_alive<0, 1>(), "x W + b.")
      .def_readonly("weight", &Linear::weight,
                    "The Parameter W, '<name>.w' [in_features, out_features].")
      .def_readonly("bias", &Linear::bias,
                    "The Parameter b, '<name>.b' [out_features]; with "
                    "bias=False, a handle to no parameter (its name is '').")
      .def("__repr__", [](const Linear &layer) {
        const Shape &shape = layer.weight.value().shape();
        return absl::StrCat(
            "Linear(name='", layerName(layer.weight),
            "', in_features=", shape[0], ", out_features=", shape[1],
            ", bias=", layer.bias.defined() ? "True" : "False", ")");
      });
  py::class_<Embedding>(
      m, "Embedding",
      "Rows of a [vocab, dim] table picked by integer ids: declares the "
      "parameter `name` [vocab, dim], drawn as `init`. Call it on the ids.")
      .def(py::init([](Graph &graph, const std::string &name, int64_t vocab,
                       int64_t dim, const Init &init) {
             int64_t failures = graph.failures();
             Embedding layer(graph, name, vocab, dim, init);
             raiseNewFailure(graph, failures);
             return layer;
           }),
           py::arg("graph"), py::arg("name"), py::arg("vocab"), py::arg("dim"),
           py::arg("init") = Init::normal(0.0, 0.02), py::keep_alive<1, 2>())
      .def(
          "__call__",
          [](const Embedding &layer, const Tensor &x) {
            return checkedResult(layer(x), x);
          },
          py::arg("ids"), py::keep_alive<0, 1>(),
          "The rows of the table picked by `ids`: ids.shape + [dim].")
      .def(
          "attend",
          [](const Embedding &layer, const Tensor &x) {
            return checkedResult(layer.attend(x), x);
          },
          py::arg("x"), py::keep_alive<0, 1>(),
          "The tied LM head: x [N, dim] -> logits [N, vocab] = x table^T, "
          "the same parameter as the lookup (one parameter, two uses).")
      .def_readonly("table", &Embedding::table,
                    "The Parameter of the table, [vocab, dim].")
      .def("__repr__", [](const Embedding &layer) {
        const Shape &shape = layer.table.value().shape();
        return absl::StrCat("Embedding(name='", layer.table.name(),
                            "', vocab=", shape[0], ", dim=", shape[1], ")");
      });
  py::class_<LayerNorm>(
      m, "LayerNorm",
      "Layer normalization over the last dimension, of size `dim`: declares "
      "the gain '<name>.g' (ones) and the bias '<name>.b' (zeros), both "
      "[dim]. Call it on x.")
      .def(py::init([](Graph &graph, const std::string &name, int64_t dim,
                       double eps) {
             int64_t failures = graph.failures();
             LayerNorm layer(graph, name, dim, eps);
             raiseNewFailure(graph, failures);
             return layer;
           }),
           py::arg("graph"), py::arg("name"), py::arg("dim"),
           py::arg("eps") = 1e-5, py::keep_alive<1, 2>())
      .def(
          "__call__",
          [](const LayerNorm &layer, const Tensor &x) {
            return checkedResult(layer(x), x);
          },
          py::arg("x"), py::keep_alive<0, 1>(),
          "x normalized over its last dimension, times the gain plus the "
          "bias.")
      .def_readonly("gain", &LayerNorm::gain,
                    "The Parameter of the gain, '<name>.g' [dim].")
      .def_readonly("bias", &LayerNorm::bias,
                    "The Parameter of the bias, '<name>.b' [dim].")
      .def("__repr__", [](const LayerNorm &layer) {
        return absl::StrCat("LayerNorm(name='", layerName(layer.gain),
                            "', dim=", layer.gain.value().shape()[0], ")");
      });
  py::class_<CausalSelfAttention>(
      m, "CausalSelfAttention",
      "Causal multi-head self-attention on the [batch * seq, dim] residual "
      "stream, with `heads` heads (which must divide `dim`): declares the "
      "Linear projections '<name>.q', '.k', '.v' and '.proj', each [dim, "
      "dim]. With `fused_attention`, the scores, mask, softmax and product "
      "with the values are one fused op (zero.attention).")
      .def(py::init([](Graph &graph, const std::string &name, int64_t dim,
                       int64_t heads, bool fused) {
             int64_t failures = graph.failures();
             CausalSelfAttention layer(graph, name, dim, heads, fused);
             raiseNewFailure(graph, failures);
             return layer;
           }),
           py::arg("graph"), py::arg("name"), py::arg("dim"), py::arg("heads"),
           py::arg("fused_attention") = false, py::keep_alive<1, 2>())
      .def(
          "__call__",
          [](const CausalSelfAttention &layer, const Tensor &x, int64_t batch) {
            return checkedResult(layer(x, batch), x);
          },
          py::keep_alive<0, 1>(), py::arg("x"), py::arg("batch"),
          "The attention's output [batch * seq, dim] for x [batch * seq, "
          "dim] holding `batch` sequences.");
  py::class_<GPT2Block>(
      m, "GPT2Block",
      "GPT-2's pre-LN transformer block: x + attn(ln_1(x)), then + "
      "mlp(ln_2(.)), with '<name>.ln_1', '.attn', '.ln_2' and '.mlp' (a "
      "4 * dim GELU feed-forward). With `checkpoint` (True or 'full'), "
      "every op but the block's output is recomputed in the backward when "
      "config.activation_checkpointing is on; with 'selective', the "
      "matmul and attention results are kept and only the ops between "
      "them recomputed; with 'selective_op' (torchtitan's op-level "
      "selective checkpointing), the attention and every other matmul of "
      "the block, the first kept. `fused_attention` as "
      "CausalSelfAttention's.")
      .def(
          py::init([](Graph &graph, const std::string &name, int64_t dim,
                      int64_t heads, const py::object &checkpoint, bool fused) {
            auto [marked, policy] = parseCheckpoint(checkpoint);
            int64_t failures = graph.failures();
            GPT2Block layer(graph, name, dim, heads, marked, fused, policy);
            raiseNewFailure(graph, failures);
            return layer;
          }),
          py::arg("graph"), py::arg("name"), py::arg("dim"), py::arg("heads"),
          py::arg("checkpoint") = false, py::arg("fused_attention") = false,
          py::keep_alive<1, 2>())
      .def(
          "__call__",
          [](const GPT2Block &layer, const Tensor &x, int64_t batch) {
            return checkedResult(layer(x, batch), x);
          },
          py::keep_alive<0, 1>(), py::arg("x"), py::arg("batch"),
          "The block's output [batch * seq, dim] for x [batch * seq, dim] "
          "holding `batch` sequences.");
  py::class_<GPT2>(
      m, "GPT2",
      "GPT-2 with the parameter names of gen_gpt2.py: 'wte' [vocab, dim], "
      "'wpe' [seq, dim], `layers` GPT2Blocks 'h0', 'h1', ... and 'ln_f'; the "
      "LM head is tied to wte. `checkpoint` and `fused_attention` as "
      "GPT2Block's.")
      .def(py::init([](Graph &graph, int64_t layers, int64_t vocab, int64_t seq,
                       int64_t dim, int64_t heads, const py::object &checkpoint,
                       bool fused) {
             auto [marked, policy] = parseCheckpoint(checkpoint);
             int64_t failures = graph.failures();
             GPT2 model(graph, GPT2Config{layers, vocab, seq, dim, heads,
                                          marked, fused, policy});
             raiseNewFailure(graph, failures);
             return model;
           }),
           py::arg("graph"), py::arg("layers") = 2, py::arg("vocab") = 256,
           py::arg("seq") = 16, py::arg("dim") = 64, py::arg("heads") = 4,
           py::arg("checkpoint") = false, py::arg("fused_attention") = false,
           py::keep_alive<1, 2>())
      .def(
          "logits",
          [](const GPT2 &model, const Tensor &tokens, const Tensor &positions) {
            return checkedResult(model.logits(tokens, positions), tokens,
                                 positions);
          },
          py::arg("tokens"), py::arg("positions"), py::keep_alive<0, 1>(),
          "The logits [batch, seq, vocab] of integer `tokens` and "
          "`positions`, both [batch, seq].")
      .def(
          "loss",
          [](const GPT2 &model, const Tensor &tokens, const Tensor &positions,
             const Tensor &targets) {
            return checkedResult(model.loss(tokens, positions, targets), tokens,
                                 positions, targets);
          },
          py::arg("tokens"), py::arg("positions"), py::arg("targets"),
          py::keep_alive<0, 1>(),
          "The mean next-token cross-entropy of the logits against integer "
          "`targets` [batch, seq]: a scalar f32 to minimize.");
  bindLlama(m);
}

} // namespace zero::python
