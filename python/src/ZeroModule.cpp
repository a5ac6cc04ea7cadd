//===- ZeroModule.cpp - zero._zero, the builder and trainer for Python ----===//
//
// The C++ graph builder (docs/frontend.md) as the extension module behind
// `import zero` (docs/python.md). The Python package (python/zero/) adds the
// nn.Graph-style class, the launcher and the numpy conveniences; this file
// only converts: absl::Status to Python exceptions, numpy arrays to and from
// host tensors.
//
//===----------------------------------------------------------------------===//

#include "zero/frontend/CompiledGraph.h"
#include "zero/frontend/Graph.h"
#include "zero/frontend/Layers.h"
#include "zero/runtime/Communicator.h"
#include "zero/support/ByteSize.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cctype>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace py = pybind11;
using namespace zero::frontend;
namespace rt = zero::rt;

namespace {

/// Raises the Python exception that says what `status` says: ValueError for
/// a bad argument, FileNotFoundError for a missing file, RuntimeError else.
/// `text` with every byte that is not part of valid UTF-8 replaced by '?':
/// a message carrying bytes from a failing library must still reach Python
/// as a str, not as a UnicodeDecodeError in its place.
std::string validUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    auto byte = static_cast<unsigned char>(text[i]);
    size_t length = byte < 0x80           ? 1
                    : (byte >> 5) == 0x6  ? 2
                    : (byte >> 4) == 0xe  ? 3
                    : (byte >> 3) == 0x1e ? 4
                                          : 0;
    bool valid = length > 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k)
      valid = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    if (!valid) {
      out.push_back('?');
      ++i;
      continue;
    }
    out.append(text.data() + i, length);
    i += length;
  }
  return out;
}

[[noreturn]] void raise(const absl::Status &status) {
  std::string message = validUtf8(status.message());
  switch (status.code()) {
  case absl::StatusCode::kInvalidArgument:
  case absl::StatusCode::kOutOfRange:
    throw py::value_error(message);
  case absl::StatusCode::kNotFound:
    PyErr_SetString(PyExc_FileNotFoundError, message.c_str());
    throw py::error_already_set();
  default:
    throw std::runtime_error(message);
  }
}

template <typename T> T unwrap(absl::StatusOr<T> value) {
  if (!value.ok())
    raise(value.status());
  return std::move(*value);
}

void check(const absl::Status &status) {
  if (!status.ok())
    raise(status);
}

//===----------------------------------------------------------------------===//
// The communicator: one per process, created on first use.
//===----------------------------------------------------------------------===//

std::unique_ptr<rt::Communicator> &communicatorSlot() {
  static std::unique_ptr<rt::Communicator> comm;
  return comm;
}

/// `status`'s message with the program's slot names (input0, 'input1')
/// replaced by the names the trainer was given, which the user knows.
std::string withInputNames(const absl::Status &status,
                           const std::vector<std::string> &names) {
  std::string message(status.message());
  for (size_t i = 0; i < names.size(); ++i) {
    std::string slot = "input" + std::to_string(i);
    for (size_t at = message.find(slot); at != std::string::npos;
         at = message.find(slot, at)) {
      size_t end = at + slot.size();
      bool word = (at == 0 || !std::isalnum(message[at - 1])) &&
                  (end == message.size() || !std::isalnum(message[end]));
      if (!word) {
        at = end;
        continue;
      }
      message.replace(at, slot.size(), names[i]);
      at += names[i].size();
    }
  }
  return message;
}

/// Set by zero.shutdown(): MPI cannot be initialized again in this
/// process, and a trainer's communicator is gone.
bool &mpiFinalized() {
  static bool finalized = false;
  return finalized;
}

/// Raises (instead of touching a finalized MPI, which aborts or crashes)
/// once zero.shutdown() has run.
void requireMpi(const char *what) {
  if (mpiFinalized())
    throw std::runtime_error(
        std::string(what) +
        ": zero.shutdown() has finalized MPI in this process; nothing that "
        "communicates can run after it (it runs by itself at exit)");
}

/// The options the communicator is created with (zero.set_collective_timeout
/// changes them before that).
rt::CommOptions &communicatorOptions() {
  static rt::CommOptions options;
  return options;
}

rt::Communicator &communicator() {
  requireMpi("zero");
  std::unique_ptr<rt::Communicator> &comm = communicatorSlot();
  if (!comm)
    comm = unwrap(rt::createMpiCommunicator(communicatorOptions()));
  return *comm;
}

//===----------------------------------------------------------------------===//
// numpy <-> host tensors
//===----------------------------------------------------------------------===//

// Arrays cross through Python's buffer protocol and numpy's Python API,
// never numpy's C structs, so that the module works with numpy 1.x and 2.x
// whatever numpy headers pybind11 was built against.

const char *numpyName(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "float32";
  case DType::i32:
    return "int32";
  case DType::i64:
    return "int64";
  case DType::f16:
    return "float16";
  case DType::bf16:
    // numpy has no bfloat16: the raw 16-bit patterns.
    return "uint16";
  }
  return "float32";
}

rt::HostTensor fromNumpy(const py::buffer &value, const std::string &what) {
  py::buffer_info info = value.request();
  rt::HostTensor tensor;
  // Struct-module codes; 'l' is 64-bit on the LP64 platforms we run on.
  const std::string &format = info.format;
  char code = format.empty() ? '?' : format.back();
  bool native = format.size() == 1 || format[0] == '<' || format[0] == '=' ||
                format[0] == '@';
  if (native && code == 'f' && info.itemsize == 4)
    tensor.dtype = DType::f32;
  else if (native && code == 'e' && info.itemsize == 2)
    tensor.dtype = DType::f16;
  else if (native && (code == 'i' || code == 'l') && info.itemsize == 4)
    tensor.dtype = DType::i32;
  else if (native && (code == 'l' || code == 'q') && info.itemsize == 8)
    tensor.dtype = DType::i64;
  else
    throw py::type_error(what + ": arrays of format '" + format + "' (" +
                         std::to_string(info.itemsize) +
                         "-byte items) are not accepted; use float32, "
                         "float16, int32 or int64");
  tensor.shape.assign(info.shape.begin(), info.shape.end());
  int64_t elements = tensor.numElements();
  // Strides in bytes; a C-contiguous array has each one the product of the
  // extents after it.
  int64_t expected = info.itemsize;
  bool contiguous = true;
  for (int64_t dim = info.ndim - 1; dim >= 0; --dim) {
    if (info.shape[dim] > 1 && info.strides[dim] != expected)
      contiguous = false;
    expected *= info.shape[dim];
  }
  if (!contiguous)
    throw py::value_error(what + ": the array is not C-contiguous; pass "
                                 "numpy.ascontiguousarray(array)");
  tensor.data.resize(static_cast<size_t>(elements * info.itemsize));
  if (!tensor.data.empty())
    std::memcpy(tensor.data.data(), info.ptr, tensor.data.size());
  return tensor;
}

py::object toNumpy(const rt::HostTensor &tensor) {
  py::module_ numpy = py::module_::import("numpy");
  // One copy, straight into the array numpy allocates.
  py::object array = numpy.attr("empty")(py::tuple(py::cast(tensor.shape)),
                                         numpy.attr(numpyName(tensor.dtype)));
  py::buffer_info info = py::reinterpret_borrow<py::buffer>(array).request(
      /*writable=*/true);
  if (!tensor.data.empty())
    std::memcpy(info.ptr, tensor.data.data(), tensor.data.size());
  return array;
}

py::dict reportDict(const MemoryReport &report) {
  py::dict traffic;
  for (const auto &[kind, figures] : report.traffic) {
    py::dict entry;
    entry["count"] = figures.count;
    entry["bytes"] = figures.bytes;
    entry["sent_bytes_per_rank"] = figures.sentBytesPerRank;
    traffic[py::str(kind)] = entry;
  }
  py::dict dict;
  dict["stage"] = report.stage;
  dict["ranks"] = report.ranks;
  dict["parameters"] = report.parameters;
  dict["gradients"] = report.gradients;
  dict["optimizer_slots"] = report.slots;
  dict["masters"] = report.masters;
  dict["model_state"] = report.modelState;
  dict["persistent"] = report.persistent;
  dict["peak_transient"] = report.peakTransient;
  dict["peak_gathered"] = report.peakGathered;
  dict["arena_bytes"] = report.arenaBytes;
  dict["traffic"] = traffic;
  if (report.hasMemoryPlan) {
    py::dict memory;
    memory["offload"] = report.offload;
    memory["device_bytes"] = report.deviceBytes;
    memory["host_bytes"] = report.hostBytes;
    memory["host_link_bytes"] = report.hostLinkBytes;
    memory["decisions"] = report.offloadDecisions;
    dict["memory_plan"] = memory;
  }
  return dict;
}

Form parseForm(const std::string &form) {
  if (form == "forward")
    return Form::forward;
  if (form == "step")
    return Form::step;
  if (form == "program")
    return Form::program;
  throw py::value_error("form must be 'forward', 'step' or 'program', not '" +
                        form + "'");
}

DType parseDtype(const std::string &name) {
  absl::StatusOr<DType> dtype = rt::parseDType(name);
  if (!dtype.ok())
    throw py::value_error("unknown dtype '" + name +
                          "': use f32, bf16, f16, i32 or i64");
  return *dtype;
}

//===----------------------------------------------------------------------===//
// Build errors at the line that made them
//===----------------------------------------------------------------------===//

/// A builder op that fails records why in its operands' graph and returns
/// an invalid tensor; Python raises that error at the op, not at compile().
void raiseBuildError(const std::vector<const Tensor *> &operands) {
  for (const Tensor *operand : operands)
    check(buildStatus(*operand));
  throw py::value_error("the op's operands belong to no graph");
}

template <typename T>
void collectTensors(std::vector<const Tensor *> &, const T &) {}
void collectTensors(std::vector<const Tensor *> &out, const Tensor &tensor) {
  out.push_back(&tensor);
}
void collectTensors(std::vector<const Tensor *> &out,
                    const std::vector<Tensor> &tensors) {
  for (const Tensor &tensor : tensors)
    out.push_back(&tensor);
}

/// Raises the graph's last error when a declaration failed since
/// `failuresBefore` (a layer's parameters, an input).
void raiseNewFailure(const Graph &graph, int64_t failuresBefore) {
  if (graph.failures() > failuresBefore)
    check(graph.error(failuresBefore));
}

/// `result`, or the build error raised when it is invalid.
template <typename... Operands>
Tensor checkedResult(Tensor result, const Operands &...operands) {
  if (!result.valid()) {
    std::vector<const Tensor *> tensors;
    (collectTensors(tensors, operands), ...);
    raiseBuildError(tensors);
  }
  return result;
}

/// `op` as a Python function that raises its build error where it is
/// called.
template <typename... Args> auto checked(Tensor (*op)(Args...)) {
  return [op](Args... args) { return checkedResult(op(args...), args...); };
}

/// A Python-owned trainer: keeps the compiled graph it runs alive.
struct PyTrainer {
  std::shared_ptr<CompiledGraph> compiled;
  std::unique_ptr<Trainer> trainer;
  std::vector<std::string> inputNames;
  uint64_t seed = 0;
  /// Whether the last step ran on arrays the caller passed, so that a step
  /// without a batch must switch back to the seed's synthetic batches.
  bool callerBatches = false;
};

/// The collective Trainer methods, for agreeOnCall.
enum class Call : int64_t { step = 1, stateDict, save, load };

std::string describeCall(int64_t call, int64_t step) {
  switch (static_cast<Call>(call)) {
  case Call::step:
    return "Trainer.step (step " + std::to_string(step + 1) + ")";
  case Call::stateDict:
    return "Trainer.state_dict (after step " + std::to_string(step) + ")";
  case Call::save:
    return "Trainer.save (after step " + std::to_string(step) + ")";
  case Call::load:
    return "Trainer.load (after step " + std::to_string(step) + ")";
  }
  return "call " + std::to_string(call);
}

/// Every collective method first checks that all ranks are in the same
/// one at the same step: ranks that call different methods (`if rank == 0:
/// save(...)`, one extra step) would otherwise feed one method's
/// collectives with another's data, or wait until the timeout. A mismatch
/// raises on every rank, naming what each rank was doing.
void agreeOnCall(PyTrainer &self, Call call) {
  rt::Communicator &comm = communicator();
  if (comm.size() < 2)
    return;
  int64_t mine[2] = {static_cast<int64_t>(call), self.trainer->stepsDone()};
  std::vector<int64_t> all(2 * static_cast<size_t>(comm.size()));
  check(comm.allGather(mine, all.data(), 2, rt::DType::i64));
  bool same = true;
  for (int rank = 1; rank < comm.size(); ++rank)
    same &= all[2 * rank] == all[0] && all[2 * rank + 1] == all[1];
  if (same)
    return;
  std::string message = "the ranks are in different calls:";
  for (int rank = 0; rank < comm.size(); ++rank)
    message += std::string(rank ? "," : "") + " rank " + std::to_string(rank) +
               " in " + describeCall(all[2 * rank], all[2 * rank + 1]);
  message += "; every rank must make the same Trainer calls in the same "
             "order (step, state_dict, save and load are collective: call "
             "them on every rank, not only on rank 0)";
  throw std::runtime_error(message);
}

void bindGraph(py::module_ &m);
void bindTraining(py::module_ &m);

} // namespace

PYBIND11_MODULE(_zero, m) {
  m.doc() = "The ZeRO compiler's graph builder and trainer (docs/python.md)";
  bindGraph(m);
  bindTraining(m);
}

namespace {

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
      .def("__repr__", [](const Tensor &t) {
        std::string shape;
        for (int64_t extent : t.shape())
          shape += (shape.empty() ? "" : ", ") + std::to_string(extent);
        return "zero.Tensor(" + std::string(rt::dtypeName(t.dtype())) + "[" +
               shape + "])";
      });

  py::class_<Parameter>(m, "Parameter", "A trainable (or frozen) tensor")
      .def_property_readonly("name", &Parameter::name)
      .def_property_readonly("value", &Parameter::value)
      .def_property(
          "requires_grad", [](const Parameter &p) { return p.requiresGrad(); },
          [](Parameter &p, bool trainable) { p.requiresGrad(trainable); });
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
      .def("minimize", &Graph::minimize, py::arg("loss"))
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

void bindTraining(py::module_ &m) {
  py::class_<CompiledGraph, std::shared_ptr<CompiledGraph>>(
      m, "CompiledGraph", "A graph compiled for a number of ranks")
      .def_property_readonly("ranks", &CompiledGraph::ranks)
      .def_property_readonly("stage", &CompiledGraph::stage)
      .def_property_readonly("report",
                             [](const CompiledGraph &compiled) {
                               return reportDict(compiled.report());
                             })
      .def(
          "ir",
          [](const CompiledGraph &compiled, const std::string &form) {
            return compiled.str(parseForm(form));
          },
          py::arg("form") = "program")
      .def(
          "save",
          [](const CompiledGraph &compiled, const std::string &path,
             const std::string &form) {
            check(compiled.save(path, parseForm(form)));
          },
          py::arg("path"), py::arg("form") = "program");

  m.def(
      "rank", []() { return communicator().rank(); },
      "This process's rank (0 outside mpirun)");
  m.def(
      "world_size", []() { return communicator().size(); },
      "The number of ranks (1 outside mpirun)");
  m.def(
      "shutdown",
      []() {
        if (communicatorSlot()) {
          communicatorSlot().reset();
          rt::finalizeMpi();
          mpiFinalized() = true;
        }
      },
      "Finalizes MPI; called at interpreter exit");

  m.def(
      "set_collective_timeout",
      [](double seconds) {
        if (communicatorSlot())
          throw py::value_error(
              "set_collective_timeout must come before the first call that "
              "communicates (rank(), world_size(), a Trainer): the "
              "communicator already exists");
        if (!(seconds >= 0))
          throw py::value_error(
              "the timeout is a number of seconds >= 0 (0: wait forever), "
              "got " +
              std::to_string(seconds));
        communicatorOptions().timeoutSeconds = seconds;
      },
      py::arg("seconds"),
      "How long one collective may wait for the other ranks before it "
      "raises (default 120 s; 0 waits forever). Call it before anything "
      "communicates.");
  m.def(
      "_end_job_after_uncaught",
      [](const std::string &what) {
        // Only a job of several ranks: the others may be waiting for this
        // one in a collective, and MPI_Finalize at exit would wait for them
        // (until the collective timeout). One rank has nothing to end.
        std::unique_ptr<rt::Communicator> &comm = communicatorSlot();
        if (!comm || comm->size() < 2)
          return;
        std::string line = "zero: rank " + std::to_string(comm->rank()) + ": " +
                           what +
                           "; ending the job (the other ranks would wait "
                           "for this one)\n";
        std::fwrite(line.data(), 1, line.size(), stderr);
        rt::abortMpiJob(1);
      },
      "Ends the MPI job after an uncaught exception on this rank (the "
      "package's sys.excepthook calls it)");

  py::class_<PyTrainer>(m, "Trainer", "Runs a compiled graph on the ranks")
      .def(py::init([](std::shared_ptr<CompiledGraph> compiled, uint64_t seed,
                       const std::string &init,
                       std::vector<std::string> inputNames) {
             rt::Communicator &comm = communicator();
             if (compiled->ranks() != comm.size())
               throw py::value_error(
                   "the graph was compiled for " +
                   std::to_string(compiled->ranks()) +
                   " ranks but this job has " + std::to_string(comm.size()) +
                   "; compile with graph.compile(zero.world_size())");
             auto trainer = std::make_unique<PyTrainer>();
             trainer->trainer =
                 unwrap(Trainer::create(*compiled, comm, seed, init));
             trainer->compiled = std::move(compiled);
             trainer->seed = seed;
             trainer->inputNames = std::move(inputNames);
             return trainer;
           }),
           py::arg("compiled"), py::arg("seed") = 1, py::arg("init") = "",
           py::arg("input_names") = std::vector<std::string>{})
      .def(
          "step",
          [](PyTrainer &self, const std::vector<py::buffer> &batch) {
            requireMpi("Trainer.step");
            agreeOnCall(self, Call::step);
            if (!batch.empty()) {
              rt::TensorMap arrays;
              std::string what = "the batch";
              for (size_t i = 0; i < batch.size(); ++i) {
                std::string slot = "input" + std::to_string(i);
                std::string name =
                    i < self.inputNames.size() ? self.inputNames[i] : slot;
                arrays[slot] = fromNumpy(batch[i], "input '" + name + "'");
              }
              absl::StatusOr<std::unique_ptr<rt::BatchSource>> batches =
                  rt::createArrayBatches(self.trainer->executor(),
                                         std::move(arrays), what);
              if (!batches.ok())
                raise(absl::Status(
                    batches.status().code(),
                    withInputNames(batches.status(), self.inputNames)));
              self.trainer->useBatches(*std::move(batches));
              self.callerBatches = true;
            } else if (self.callerBatches) {
              self.trainer->useBatches(unwrap(rt::createSyntheticBatches(
                  self.trainer->executor(), self.seed)));
              self.callerBatches = false;
            }
            py::gil_scoped_release release;
            return unwrap(self.trainer->step());
          },
          py::arg("batch") = std::vector<py::buffer>{})
      .def("state_dict",
           [](PyTrainer &self) {
             requireMpi("Trainer.state_dict");
             agreeOnCall(self, Call::stateDict);
             rt::TensorMap state = unwrap(self.trainer->gatherState());
             py::dict dict;
             for (const auto &[name, tensor] : state)
               dict[py::str(name)] = toNumpy(tensor);
             return dict;
           })
      .def(
          "save",
          [](PyTrainer &self, const std::string &root, int keep) {
            requireMpi("Trainer.save");
            agreeOnCall(self, Call::save);
            if (keep < 0)
              throw py::value_error(
                  "keep must be 0 (keep every checkpoint) or the number of "
                  "newest checkpoints to keep, got " +
                  std::to_string(keep));
            return unwrap(self.trainer->save(root, keep));
          },
          py::arg("root"), py::arg("keep") = 0)
      .def(
          "load",
          [](PyTrainer &self, const std::string &path) {
            requireMpi("Trainer.load");
            agreeOnCall(self, Call::load);
            check(self.trainer->load(path));
          },
          py::arg("path"))
      .def_property_readonly("steps_done", [](const PyTrainer &self) {
        return self.trainer->stepsDone();
      });
}

} // namespace
