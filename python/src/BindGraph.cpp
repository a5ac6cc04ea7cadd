//===- BindGraph.cpp - zero._zero's builder: Graph, Tensor, ops, layers ---===//
//
// The C++ graph builder (docs/frontend.md) as Python sees it
// (docs/python.md): each op raises its build error where it is called.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "zero/frontend/CompiledGraph.h"
#include "zero/frontend/Graph.h"
#include "zero/frontend/Layers.h"
#include "zero/runtime/Communicator.h"
#include "zero/support/ByteSize.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

using namespace zero::frontend;
namespace rt = zero::rt;

namespace zero::python {
namespace {

/// "f32[32, 784]", as the reprs show a tensor's type.
std::string typeText(const Tensor &t) {
  std::string shape;
  for (int64_t extent : t.shape())
    shape += (shape.empty() ? "" : ", ") + std::to_string(extent);
  return std::string(rt::dtypeName(t.dtype())) + "[" + shape + "]";
}

DType parseDtype(const std::string &name) {
  absl::StatusOr<DType> dtype = rt::parseDType(name);
  if (!dtype.ok())
    throw py::value_error("unknown dtype '" + name +
                          "': use f32, bf16, f16, i32 or i64");
  return *dtype;
}

} // namespace

void bindGraph(py::module_ &m) {
  py::class_<Tensor>(m, "Tensor", "A value of the graph being built")
      .def_property_readonly("shape", &Tensor::shape)
      .def_property_readonly(
          "dtype",
          [](const Tensor &t) { return std::string(rt::dtypeName(t.dtype())); })
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

  py::class_<Parameter>(m, "Parameter", "A trainable (or frozen) tensor")
      .def_property_readonly("name", &Parameter::name)
      .def_property_readonly("value", &Parameter::value)
      .def_property(
          "requires_grad", [](const Parameter &p) { return p.requiresGrad(); },
          [](Parameter &p, bool trainable) { p.requiresGrad(trainable); })
      .def("__repr__", [](const Parameter &p) {
        return "zero.Parameter('" + p.name() + "', " + typeText(p.value()) +
               (p.requiresGrad() ? "" : ", requires_grad=False") + ")";
      });
  py::implicitly_convertible<Parameter, Tensor>();

  py::class_<Init>(m, "Init", "How a parameter's initial value is drawn")
      .def_static("zeros", &Init::zeros)
      .def_static("ones", &Init::ones)
      .def_static("constant", &Init::constant, py::arg("value"))
      .def_static("normal", &Init::normal, py::arg("mean") = 0.0,
                  py::arg("std") = 0.02)
      .def_static("uniform", &Init::uniform, py::arg("low"), py::arg("high"));

  py::class_<SGD>(m, "SGD").def(py::init([](double lr, double weightDecay) {
                                  return SGD{lr, weightDecay};
                                }),
                                py::arg("lr") = 1e-2,
                                py::arg("weight_decay") = 0.0);
  py::class_<Momentum>(m, "Momentum")
      .def(py::init([](double lr, double momentum, double weightDecay) {
             return Momentum{lr, momentum, weightDecay};
           }),
           py::arg("lr") = 1e-2, py::arg("momentum") = 0.9,
           py::arg("weight_decay") = 0.0);
  py::class_<Adam>(m, "Adam").def(
      py::init([](double lr, std::pair<double, double> betas, double eps,
                  double weightDecay) {
        return Adam{lr, betas, eps, weightDecay};
      }),
      py::arg("lr") = 1e-3, py::arg("betas") = std::make_pair(0.9, 0.999),
      py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0);
  py::class_<AdamW>(m, "AdamW")
      .def(py::init([](double lr, std::pair<double, double> betas, double eps,
                       double weightDecay) {
             return AdamW{lr, betas, eps, weightDecay};
           }),
           py::arg("lr") = 1e-3, py::arg("betas") = std::make_pair(0.9, 0.999),
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 1e-2);
  py::class_<Schedule>(m, "Schedule", "A learning-rate schedule")
      .def_static("constant", &Schedule::constant, py::arg("warmup") = 0)
      .def_static("linear", &Schedule::linear, py::arg("warmup"),
                  py::arg("total"), py::arg("min_lr") = 0.0)
      .def_static("cosine", &Schedule::cosine, py::arg("warmup"),
                  py::arg("total"), py::arg("min_lr") = 0.0);
  py::class_<LossScaling>(m, "LossScaling")
      .def_static("dynamic", &LossScaling::dynamic,
                  py::arg("initial_scale") = 65536.0,
                  py::arg("growth_interval") = 2000)
      .def_static("none", &LossScaling::none);

  py::class_<ZeroOptions> zeroOptions(
      m, "ZeroOptions", "ZeRO's knobs beyond the stage (graph.config.zero)");
  zeroOptions
      .def_property(
          "layout",
          [](const ZeroOptions &o) {
            return o.layout == ZeroOptions::Layout::flat ? "flat" : "dim0";
          },
          [](ZeroOptions &o, const std::string &layout) {
            if (layout != "flat" && layout != "dim0")
              throw py::value_error("layout must be 'flat' or 'dim0', not '" +
                                    layout + "'");
            o.layout = layout == "flat" ? ZeroOptions::Layout::flat
                                        : ZeroOptions::Layout::dim0;
          })
      .def_readwrite("min_shard_elements", &ZeroOptions::minShardElements)
      .def_readwrite("reduce_bucket_bytes", &ZeroOptions::reduceBucketBytes)
      .def_readwrite("allgather_bucket_bytes",
                     &ZeroOptions::allgatherBucketBytes)
      .def_readwrite("regather_in_backward", &ZeroOptions::regatherInBackward)
      .def_readwrite("max_reuse_distance", &ZeroOptions::maxReuseDistance)
      .def_readwrite("prefetch_bytes", &ZeroOptions::prefetchBytes)
      .def_readwrite("max_live_gathered_bytes",
                     &ZeroOptions::maxLiveGatheredBytes)
      .def_readwrite("machine", &ZeroOptions::machine);

  // Every setter returns the config, so that calls chain as in OneFlow.
  py::class_<GraphConfig>(m, "GraphConfig", "nn.Graph's config")
      .def("optimizer", py::overload_cast<const SGD &>(&GraphConfig::optimizer),
           py::return_value_policy::reference_internal)
      .def("optimizer",
           py::overload_cast<const Momentum &>(&GraphConfig::optimizer),
           py::return_value_policy::reference_internal)
      .def("optimizer",
           py::overload_cast<const Adam &>(&GraphConfig::optimizer),
           py::return_value_policy::reference_internal)
      .def("optimizer",
           py::overload_cast<const AdamW &>(&GraphConfig::optimizer),
           py::return_value_policy::reference_internal)
      .def("learning_rate_schedule", &GraphConfig::learning_rate_schedule,
           py::return_value_policy::reference_internal)
      .def(
          "parameter_group",
          [](GraphConfig &config, const std::string &name,
             const py::iterable &parameters, std::optional<double> weightDecay,
             double lrScale) -> GraphConfig & {
            std::vector<std::string> names;
            for (py::handle item : parameters) {
              if (py::isinstance<py::str>(item))
                names.push_back(item.cast<std::string>());
              else if (py::isinstance<Parameter>(item))
                names.push_back(item.cast<Parameter>().name());
              else
                throw py::type_error(
                    "parameter_group: parameters are given as Parameter "
                    "objects or names, not " +
                    std::string(py::str(item.get_type().attr("__name__"))));
            }
            return config.parameter_group(name, names, weightDecay, lrScale);
          },
          py::arg("name"), py::arg("parameters"),
          py::arg("weight_decay") = py::none(), py::arg("lr_scale") = 1.0,
          py::return_value_policy::reference_internal)
      .def("clip_grad_norm", &GraphConfig::clip_grad_norm, py::arg("max_norm"),
           py::return_value_policy::reference_internal)
      .def("activation_checkpointing", &GraphConfig::activation_checkpointing,
           py::arg("enabled") = true,
           py::return_value_policy::reference_internal)
      .def("enable_zero", &GraphConfig::enable_zero, py::arg("enabled") = true,
           py::arg("stage") = 2, py::return_value_policy::reference_internal)
      .def("set_gradient_accumulation_steps",
           &GraphConfig::set_gradient_accumulation_steps, py::arg("steps"),
           py::return_value_policy::reference_internal)
      .def("gradient_accumulation_steps",
           &GraphConfig::gradient_accumulation_steps, py::arg("steps"),
           py::return_value_policy::reference_internal)
      .def(
          "precision",
          [](GraphConfig &config, const std::string &dtype) -> GraphConfig & {
            return config.precision(parseDtype(dtype));
          },
          py::arg("dtype"), py::return_value_policy::reference_internal)
      .def("loss_scaling", &GraphConfig::loss_scaling,
           py::return_value_policy::reference_internal)
      .def(
          "offload",
          [](GraphConfig &config, const std::string &what) -> GraphConfig & {
            std::optional<GraphConfig::Offload> choice =
                GraphConfig::parseOffload(what);
            if (!choice)
              throw py::value_error("offload must be 'none', 'optimizer', "
                                    "'optimizer+params' or 'auto', got '" +
                                    what + "'");
            return config.offload(*choice);
          },
          py::arg("what"), py::return_value_policy::reference_internal)
      .def(
          "device_memory_budget",
          [](GraphConfig &config, py::object bytes) -> GraphConfig & {
            if (py::isinstance<py::str>(bytes)) {
              std::string text = bytes.cast<std::string>();
              std::optional<int64_t> parsed = zero::parseByteSize(text);
              if (!parsed)
                throw py::value_error(
                    "device_memory_budget: '" + text +
                    "' is not a number of bytes (write e.g. '80GiB', "
                    "'512MB' or 1000000)");
              return config.device_memory_budget(*parsed);
            }
            return config.device_memory_budget(bytes.cast<int64_t>());
          },
          py::arg("bytes"), py::return_value_policy::reference_internal)
      .def_property_readonly("zero", py::overload_cast<>(&GraphConfig::zero),
                             py::return_value_policy::reference_internal)
      .def_property_readonly("stage", &GraphConfig::zeroStage)
      .def_property_readonly("accumulation_steps",
                             &GraphConfig::accumulationSteps)
      .def_property_readonly("offload_choice", &GraphConfig::offloadName);

  py::class_<Graph>(m, "Graph", "A training step being built")
      .def(py::init<std::string>(), py::arg("name"))
      .def_property_readonly("name", &Graph::name)
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
          py::keep_alive<0, 1>())
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
          py::keep_alive<0, 1>())
      .def(
          "full",
          [](Graph &graph, const Shape &shape, double value,
             const std::string &dtype) {
            int64_t failures = graph.failures();
            Tensor full = graph.full(shape, value, parseDtype(dtype));
            raiseNewFailure(graph, failures);
            return full;
          },
          py::arg("shape"), py::arg("value"), py::arg("dtype") = "f32",
          py::keep_alive<0, 1>())
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
          "Every parameter as (name, Parameter), in declaration order")
      .def("minimize", &Graph::minimize, py::arg("loss"),
           "The scalar f32 loss the training step minimizes")
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
                             "The names given to output(), in order")
      .def_property_readonly("config", py::overload_cast<>(&Graph::config),
                             py::return_value_policy::reference_internal)
      .def("check", [](const Graph &graph) { check(graph.status()); })
      .def(
          "compile",
          [](const Graph &graph, int ranks) {
            if (ranks < 1)
              throw py::value_error("ranks must be at least 1, got " +
                                    std::to_string(ranks));
            return std::make_shared<CompiledGraph>(
                unwrap(graph.compile(ranks)));
          },
          py::arg("ranks"));

  m.def("add", checked(&zero::frontend::add), py::keep_alive<0, 1>());
  m.def("sub", checked(&zero::frontend::sub), py::keep_alive<0, 1>());
  m.def("mul", checked(&zero::frontend::mul), py::keep_alive<0, 1>());
  m.def("div", checked(&zero::frontend::div), py::keep_alive<0, 1>());
  m.def("neg", checked(&zero::frontend::neg), py::keep_alive<0, 1>());
  m.def("exp", checked(&zero::frontend::exp), py::keep_alive<0, 1>());
  m.def("log", checked(&zero::frontend::log), py::keep_alive<0, 1>());
  m.def("sqrt", checked(&zero::frontend::sqrt), py::keep_alive<0, 1>());
  m.def("rsqrt", checked(&rsqrt), py::keep_alive<0, 1>());
  m.def("tanh", checked(&zero::frontend::tanh), py::keep_alive<0, 1>());
  m.def("relu", checked(&relu), py::keep_alive<0, 1>());
  m.def("gelu", checked(&gelu), py::keep_alive<0, 1>());
  m.def("sigmoid", checked(&sigmoid), py::keep_alive<0, 1>());
  m.def("silu", checked(&silu), py::keep_alive<0, 1>());
  m.def("softmax", checked(&softmax), py::keep_alive<0, 1>());
  m.def("scale", checked(&scale), py::arg("x"), py::arg("factor"),
        py::keep_alive<0, 1>());
  m.def("causal_mask", checked(&causalMask), py::arg("x"), py::arg("fill"),
        py::keep_alive<0, 1>());
  m.def("bias_add", checked(&biasAdd), py::arg("x"), py::arg("bias"),
        py::keep_alive<0, 1>());
  m.def(
      "matmul",
      [](const Tensor &a, const Tensor &b, bool transposeA, bool transposeB) {
        Transpose t = transposeA
                          ? (transposeB ? Transpose::both : Transpose::a)
                          : (transposeB ? Transpose::b : Transpose::none);
        return checkedResult(matmul(a, b, t), a, b);
      },
      py::arg("a"), py::arg("b"), py::arg("transpose_a") = false,
      py::arg("transpose_b") = false, py::keep_alive<0, 1>());
  m.def("layer_norm", checked(&layerNorm), py::arg("x"), py::arg("gamma"),
        py::arg("beta"), py::arg("eps") = 1e-5, py::keep_alive<0, 1>());
  m.def("embedding", checked(&embedding), py::arg("table"), py::arg("ids"),
        py::keep_alive<0, 1>());
  m.def("softmax_cross_entropy", checked(&softmaxCrossEntropy),
        py::arg("logits"), py::arg("labels"), py::keep_alive<0, 1>());
  m.def("reduce_sum", checked(&reduceSum), py::arg("x"), py::arg("dims"),
        py::keep_alive<0, 1>());
  m.def("reduce_mean", checked(&reduceMean), py::arg("x"), py::arg("dims"),
        py::keep_alive<0, 1>());
  m.def("reshape", checked(&reshape), py::arg("x"), py::arg("shape"),
        py::keep_alive<0, 1>());
  m.def("transpose", checked(&zero::frontend::transpose), py::arg("x"),
        py::arg("permutation"), py::keep_alive<0, 1>());
  // torch.narrow's name and arguments; `slice` would shadow the builtin.
  m.def("narrow", checked(&zero::frontend::slice), py::arg("x"), py::arg("dim"),
        py::arg("start"), py::arg("length"), py::keep_alive<0, 1>());
  // The list keeps its tensors, and so their graph, alive.
  m.def(
      "concat",
      [](const std::vector<Tensor> &xs, int64_t dim) {
        if (xs.empty())
          throw py::value_error("concat needs at least one tensor");
        return checkedResult(concat(xs, dim), xs);
      },
      py::arg("xs"), py::arg("dim"), py::keep_alive<0, 1>());
  m.def("expand", checked(&zero::frontend::expand), py::arg("x"),
        py::arg("shape"), py::arg("dims"), py::keep_alive<0, 1>());
  m.def(
      "cast",
      [](const Tensor &x, const std::string &dtype) {
        return checkedResult(cast(x, parseDtype(dtype)), x);
      },
      py::arg("x"), py::arg("dtype"), py::keep_alive<0, 1>());

  // Layers hold their parameters; the Python objects keep the graph alive.
  py::class_<Linear>(m, "Linear")
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
          py::keep_alive<0, 1>())
      .def_readonly("weight", &Linear::weight)
      .def_readonly("bias", &Linear::bias);
  py::class_<Embedding>(m, "Embedding")
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
          py::keep_alive<0, 1>())
      .def(
          "attend",
          [](const Embedding &layer, const Tensor &x) {
            return checkedResult(layer.attend(x), x);
          },
          py::keep_alive<0, 1>())
      .def_readonly("table", &Embedding::table);
  py::class_<LayerNorm>(m, "LayerNorm")
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
          py::keep_alive<0, 1>())
      .def_readonly("gain", &LayerNorm::gain)
      .def_readonly("bias", &LayerNorm::bias);
  py::class_<CausalSelfAttention>(m, "CausalSelfAttention")
      .def(py::init([](Graph &graph, const std::string &name, int64_t dim,
                       int64_t heads) {
             int64_t failures = graph.failures();
             CausalSelfAttention layer(graph, name, dim, heads);
             raiseNewFailure(graph, failures);
             return layer;
           }),
           py::arg("graph"), py::arg("name"), py::arg("dim"), py::arg("heads"),
           py::keep_alive<1, 2>())
      .def(
          "__call__",
          [](const CausalSelfAttention &layer, const Tensor &x, int64_t batch) {
            return checkedResult(layer(x, batch), x);
          },
          py::keep_alive<0, 1>(), py::arg("x"), py::arg("batch"));
  py::class_<GPT2Block>(m, "GPT2Block")
      .def(py::init([](Graph &graph, const std::string &name, int64_t dim,
                       int64_t heads, bool checkpoint) {
             int64_t failures = graph.failures();
             GPT2Block layer(graph, name, dim, heads, checkpoint);
             raiseNewFailure(graph, failures);
             return layer;
           }),
           py::arg("graph"), py::arg("name"), py::arg("dim"), py::arg("heads"),
           py::arg("checkpoint") = false, py::keep_alive<1, 2>())
      .def(
          "__call__",
          [](const GPT2Block &layer, const Tensor &x, int64_t batch) {
            return checkedResult(layer(x, batch), x);
          },
          py::keep_alive<0, 1>(), py::arg("x"), py::arg("batch"));
  py::class_<GPT2>(m, "GPT2")
      .def(py::init([](Graph &graph, int64_t layers, int64_t vocab, int64_t seq,
                       int64_t dim, int64_t heads, bool checkpoint) {
             int64_t failures = graph.failures();
             GPT2 model(graph,
                        GPT2Config{layers, vocab, seq, dim, heads, checkpoint});
             raiseNewFailure(graph, failures);
             return model;
           }),
           py::arg("graph"), py::arg("layers") = 2, py::arg("vocab") = 256,
           py::arg("seq") = 16, py::arg("dim") = 64, py::arg("heads") = 4,
           py::arg("checkpoint") = false, py::keep_alive<1, 2>())
      .def(
          "logits",
          [](const GPT2 &model, const Tensor &tokens, const Tensor &positions) {
            return checkedResult(model.logits(tokens, positions), tokens,
                                 positions);
          },
          py::arg("tokens"), py::arg("positions"), py::keep_alive<0, 1>())
      .def(
          "loss",
          [](const GPT2 &model, const Tensor &tokens, const Tensor &positions,
             const Tensor &targets) {
            return checkedResult(model.loss(tokens, positions, targets), tokens,
                                 positions, targets);
          },
          py::arg("tokens"), py::arg("positions"), py::arg("targets"),
          py::keep_alive<0, 1>());
}

} // namespace zero::python
