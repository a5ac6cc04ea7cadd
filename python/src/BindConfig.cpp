//===- BindConfig.cpp - zero._zero's optimizers and GraphConfig -----------===//
//
// What `graph.config` configures (docs/python.md): the optimizers, the
// learning-rate schedules, loss scaling, the ZeRO options and GraphConfig
// itself, a mesh included.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "zero/frontend/CompiledGraph.h"
#include "zero/frontend/Graph.h"
#include "zero/support/ByteSize.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

using namespace zero::frontend;

namespace zero::python {

namespace {

/// A float as Python writes it (0.01, 1e-08, 65536.0).
std::string floatRepr(double value) {
  return py::repr(py::float_(value)).cast<std::string>();
}

std::string scheduleRepr(const Schedule &s) {
  switch (s.kind) {
  case Schedule::Kind::constant:
    return absl::StrCat("zero.Schedule.constant(warmup=", s.warmup, ")");
  case Schedule::Kind::linear:
  case Schedule::Kind::cosine:
    return absl::StrCat("zero.Schedule.",
                        s.kind == Schedule::Kind::linear ? "linear" : "cosine",
                        "(warmup=", s.warmup, ", total=", s.total,
                        ", min_lr=", floatRepr(s.minLr), ")");
  }
  return "zero.Schedule";
}

std::string lossScalingRepr(const LossScaling &l) {
  if (!l.enabled)
    return "zero.LossScaling.none()";
  return absl::StrCat(
      "zero.LossScaling.dynamic(initial_scale=", floatRepr(l.initialScale),
      ", growth_interval=", l.growthInterval, ")");
}

std::string betasRepr(std::pair<double, double> betas) {
  return absl::StrCat("(", floatRepr(betas.first), ", ",
                      floatRepr(betas.second), ")");
}

/// The optimizer as the call that makes it: zero.AdamW(lr=..., ...).
std::string optimizerRepr(const OptimizerSpec &o) {
  switch (o.kind) {
  case OptimizerSpec::Kind::sgd:
    return absl::StrCat("zero.SGD(lr=", floatRepr(o.lr),
                        ", weight_decay=", floatRepr(o.weightDecay), ")");
  case OptimizerSpec::Kind::momentum:
    return absl::StrCat("zero.Momentum(lr=", floatRepr(o.lr),
                        ", momentum=", floatRepr(o.momentum),
                        ", weight_decay=", floatRepr(o.weightDecay), ")");
  case OptimizerSpec::Kind::adam:
  case OptimizerSpec::Kind::adamw:
    return absl::StrCat(o.kind == OptimizerSpec::Kind::adam ? "zero.Adam"
                                                            : "zero.AdamW",
                        "(lr=", floatRepr(o.lr), ", betas=", betasRepr(o.betas),
                        ", eps=", floatRepr(o.eps),
                        ", weight_decay=", floatRepr(o.weightDecay), ")");
  }
  return "optimizer";
}

std::string configRepr(const GraphConfig &c) {
  std::vector<std::string> groups;
  for (const GraphConfig::ParameterGroup &group : c.parameterGroups())
    groups.push_back(absl::StrCat("'", group.name, "'"));
  std::string text =
      absl::StrCat("GraphConfig(optimizer=", optimizerRepr(c.optimizerSpec()),
                   ", schedule=", scheduleRepr(c.optimizerSpec().schedule),
                   ", zero_stage=", c.zeroStage(), ", precision='",
                   dtypeName(c.precision()), "'");
  if (c.clipGradNorm())
    absl::StrAppend(&text, ", clip_grad_norm=", floatRepr(*c.clipGradNorm()));
  if (c.lossScaling().enabled)
    absl::StrAppend(&text, ", loss_scaling=", lossScalingRepr(c.lossScaling()));
  if (c.accumulationSteps() != 1)
    absl::StrAppend(&text,
                    ", gradient_accumulation_steps=", c.accumulationSteps());
  if (c.activationCheckpointing())
    absl::StrAppend(&text, ", activation_checkpointing=True");
  if (c.offloadChoice() != GraphConfig::Offload::none)
    absl::StrAppend(&text, ", offload='", c.offloadName(), "'");
  if (!c.meshShape().empty())
    absl::StrAppend(&text, ", mesh=(", absl::StrJoin(c.meshShape(), ", "), ")");
  if (!groups.empty())
    absl::StrAppend(&text, ", parameter_groups=[", absl::StrJoin(groups, ", "),
                    "]");
  return text + ")";
}

/// Everything a compile reads of a config, as text: configRepr, then what
/// it leaves out (the groups' members and settings, the budget, every ZeRO
/// option). zero.Trainer compares it with the one at compile.
std::string configFingerprint(const GraphConfig &c) {
  std::string text = configRepr(c);
  for (const GraphConfig::ParameterGroup &group : c.parameterGroups())
    absl::StrAppend(&text, "; group ", group.name, " [",
                    absl::StrJoin(group.parameters, ","), "] decay ",
                    group.weightDecay ? floatRepr(*group.weightDecay) : "-",
                    " lr_scale ", floatRepr(group.lrScale));
  const ZeroOptions &z = c.zero();
  absl::StrAppend(
      &text, "; budget ", c.deviceMemoryBudget(), "; layout ",
      z.layout == ZeroOptions::Layout::flat ? "flat" : "dim0", " min_shard ",
      z.minShardElements, " buckets ", z.reduceBucketBytes, ",",
      z.allgatherBucketBytes, " regather ", z.regatherInBackward, " scheme ",
      zero::stringifyMeshScheme(z.meshScheme).str(), " reduce ",
      zero::stringifyReduceDtype(z.reduceDtype).str(), " hpz ", z.hpz, " qwz ",
      z.qwz, "/", z.qwzBits, " qgz ", z.qgz, "/", z.qgzBits, " block ",
      z.quantizeBlock, "/", z.quantizeMinElements, " reuse ",
      z.maxReuseDistance, " prefetch ", z.prefetchBytes, " live ",
      z.maxLiveGatheredBytes, " machine ", z.machine, " fuse ",
      z.fuseEpilogues);
  return text;
}

OptimizerSpec specOf(const SGD &o) {
  OptimizerSpec spec;
  spec.kind = OptimizerSpec::Kind::sgd;
  spec.lr = o.lr;
  spec.weightDecay = o.weightDecay;
  return spec;
}

OptimizerSpec specOf(const Momentum &o) {
  OptimizerSpec spec = specOf(SGD{o.lr, o.weightDecay});
  spec.kind = OptimizerSpec::Kind::momentum;
  spec.momentum = o.momentum;
  return spec;
}

template <typename AdamLike>
OptimizerSpec adamSpecOf(const AdamLike &o, OptimizerSpec::Kind kind) {
  OptimizerSpec spec;
  spec.kind = kind;
  spec.lr = o.lr;
  spec.betas = o.betas;
  spec.eps = o.eps;
  spec.weightDecay = o.weightDecay;
  return spec;
}

} // namespace

void bindConfig(py::module_ &m) {
  m.def(
      "machine",
      [](const std::string &spec) {
        absl::StatusOr<std::string> text = machineModelJson(spec);
        if (!text.ok())
          throw py::value_error(std::string(text.status().message()));
        return py::module_::import("json").attr("loads")(*text);
      },
      py::arg("spec"),
      "The machine model a preset name or a .json machine file gives, as a "
      "dict in the machine file's format (docs/zero-opt.md, \"Machine "
      "files\"): read a preset's constants, or change some and write the "
      "dict to a file for config.zero.machine. Raises ValueError naming "
      "the problem with an unknown preset or a bad file.");
  py::class_<SGD>(m, "SGD",
                  "Stochastic gradient descent, for graph.config.optimizer: "
                  "param -= lr * (grad + weight_decay * param) (L2 weight "
                  "decay).")
      .def(py::init([](double lr, double weightDecay) {
             return SGD{lr, weightDecay};
           }),
           py::arg("lr") = 1e-2, py::arg("weight_decay") = 0.0)
      .def("__repr__", [](const SGD &o) { return optimizerRepr(specOf(o)); });
  py::class_<Momentum>(
      m, "Momentum",
      "SGD with momentum, for graph.config.optimizer: buf = momentum * buf + "
      "grad; param -= lr * buf, with L2 weight decay (weight_decay * param) "
      "added to grad.")
      .def(py::init([](double lr, double momentum, double weightDecay) {
             return Momentum{lr, momentum, weightDecay};
           }),
           py::arg("lr") = 1e-2, py::arg("momentum") = 0.9,
           py::arg("weight_decay") = 0.0)
      .def("__repr__",
           [](const Momentum &o) { return optimizerRepr(specOf(o)); });
  py::class_<Adam>(m, "Adam",
                   "Adam, for graph.config.optimizer: f32 moments with the "
                   "decay rates `betas`, bias correction, and L2 weight decay "
                   "added to the gradient.")
      .def(py::init([](double lr, std::pair<double, double> betas, double eps,
                       double weightDecay) {
             return Adam{lr, betas, eps, weightDecay};
           }),
           py::arg("lr") = 1e-3, py::arg("betas") = std::make_pair(0.9, 0.999),
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0)
      .def("__repr__", [](const Adam &o) {
        return optimizerRepr(adamSpecOf(o, OptimizerSpec::Kind::adam));
      });
  py::class_<AdamW>(m, "AdamW",
                    "AdamW, for graph.config.optimizer: Adam with weight "
                    "decay applied to the parameter, decoupled from the "
                    "moments (default 0.01).")
      .def(py::init([](double lr, std::pair<double, double> betas, double eps,
                       double weightDecay) {
             return AdamW{lr, betas, eps, weightDecay};
           }),
           py::arg("lr") = 1e-3, py::arg("betas") = std::make_pair(0.9, 0.999),
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 1e-2)
      .def("__repr__", [](const AdamW &o) {
        return optimizerRepr(adamSpecOf(o, OptimizerSpec::Kind::adamw));
      });
  py::class_<Schedule>(
      m, "Schedule",
      "How the learning rate varies with the 1-based optimizer step t, for "
      "graph.config.learning_rate_schedule; the optimizer's lr is the peak.")
      .def_static("constant", &Schedule::constant, py::arg("warmup") = 0,
                  "A linear warmup from 0 over `warmup` steps (lr * t / "
                  "warmup), then lr.")
      .def_static("linear", &Schedule::linear, py::arg("warmup"),
                  py::arg("total"), py::arg("min_lr") = 0.0,
                  "A linear warmup over `warmup` steps, then a linear decay "
                  "to `min_lr` at step `total`, and `min_lr` after it.")
      .def_static("cosine", &Schedule::cosine, py::arg("warmup"),
                  py::arg("total"), py::arg("min_lr") = 0.0,
                  "A linear warmup over `warmup` steps, then a cosine decay "
                  "to `min_lr` at step `total`, and `min_lr` after it.")
      .def("__repr__", &scheduleRepr);
  py::class_<LossScaling>(
      m, "LossScaling",
      "Loss scaling for f16 training, for graph.config.loss_scaling "
      "(PyTorch's GradScaler).")
      .def_static("dynamic", &LossScaling::dynamic,
                  py::arg("initial_scale") = 65536.0,
                  py::arg("growth_interval") = 2000,
                  "The backward starts from the loss times the scale; a step "
                  "whose gradients overflow (on any rank) is skipped and "
                  "halves the scale (not below 1), and `growth_interval` "
                  "good steps in a row double it.")
      .def_static("none", &LossScaling::none,
                  "No loss scaling (what f32 and bf16 use by default).")
      .def("__repr__", &lossScalingRepr);

  py::class_<ZeroOptions> zeroOptions(
      m, "ZeroOptions",
      "ZeRO's knobs beyond the stage, as zero-pipeline takes them: "
      "graph.config.zero, whose attributes are set in place.");
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
          },
          "How tensors are sharded: 'flat' (the default: flat shards padded "
          "to a multiple of the ranks, as DeepSpeed) or 'dim0' (dimension 0 "
          "split with padding, as FSDP2).")
      .def_readwrite("min_shard_elements", &ZeroOptions::minShardElements,
                     "Tensors with fewer elements stay replicated (default "
                     "0).")
      .def_readwrite("reduce_bucket_bytes", &ZeroOptions::reduceBucketBytes,
                     "The largest fused gradient-reduction bucket, in bytes "
                     "(default 25 MiB); 0 leaves every collective on its "
                     "own.")
      .def_readwrite("allgather_bucket_bytes",
                     &ZeroOptions::allgatherBucketBytes,
                     "The largest fused parameter all-gather bucket, in bytes "
                     "(default 25 MiB); 0 leaves every collective on its "
                     "own.")
      .def_property(
          "mesh_scheme",
          [](const ZeroOptions &o) {
            return zero::stringifyMeshScheme(o.meshScheme).str();
          },
          [](ZeroOptions &o, const std::string &scheme) {
            std::optional<zero::MeshScheme> parsed =
                zero::symbolizeMeshScheme(scheme);
            if (!parsed)
              throw py::value_error(
                  "mesh_scheme must be 'hybrid' or 'full', got '" + scheme +
                  "'");
            o.meshScheme = *parsed;
          },
          "On a mesh, stages 1-3: 'hybrid' (the default) shards "
          "within a node and keeps a copy per node; 'full' shards "
          "over all ranks, gathering across nodes first.")
      .def_property(
          "reduce_dtype",
          [](const ZeroOptions &o) {
            return zero::stringifyReduceDtype(o.reduceDtype).str();
          },
          [](ZeroOptions &o, const std::string &dtype) {
            std::optional<zero::ReduceDtype> parsed =
                zero::symbolizeReduceDtype(dtype);
            if (!parsed)
              throw py::value_error(
                  "reduce_dtype must be 'gradient' or 'f32', got '" + dtype +
                  "'");
            o.reduceDtype = *parsed;
          },
          "The type gradients are averaged in: 'gradient' (the default: "
          "each in its own type, a bf16 gradient in bf16) or 'f32' (16-bit "
          "gradients widened to f32 first, as FSDP's "
          "MixedPrecision(reduce_dtype=torch.float32)).")
      .def_readwrite("hpz", &ZeroOptions::hpz,
                     "Stage 3 with mesh_scheme 'full': later gathers of a "
                     "parameter start from the secondary shard its forward "
                     "gather left within the node (ZeRO++ hpZ).")
      .def_readwrite("qwz", &ZeroOptions::qwz,
                     "mesh_scheme 'full', stage 3: gather parameters across "
                     "nodes as block-quantized codes with block scales "
                     "(ZeRO++ qwZ).")
      .def_readwrite("qgz", &ZeroOptions::qgz,
                     "mesh_scheme 'full': reduce gradients by all-to-alls of "
                     "block-quantized codes, averaged in full precision "
                     "(ZeRO++ qgZ).")
      .def_readwrite("qwz_bits", &ZeroOptions::qwzBits,
                     "qwz: bits per weight code, 8 (int8, the default) or 4 "
                     "(int4).")
      .def_readwrite("qgz_bits", &ZeroOptions::qgzBits,
                     "qgz: bits per gradient code, 4 (int4, the default, as "
                     "ZeRO++) or 8 (int8).")
      .def_readwrite("quantize_block", &ZeroOptions::quantizeBlock,
                     "qwz/qgz: elements per block, one f32 scale each "
                     "(default 4096).")
      .def_readwrite("quantize_min_elements", &ZeroOptions::quantizeMinElements,
                     "qwz/qgz: pieces with fewer elements cross nodes in "
                     "full precision (default 4096); compile().report lists "
                     "them.")
      .def_readwrite("regather_in_backward", &ZeroOptions::regatherInBackward,
                     "Stage 3: gather parameters again for their backward "
                     "uses (default True); False keeps the forward's gathers "
                     "alive until the backward.")
      .def_readwrite("fuse_epilogues", &ZeroOptions::fuseEpilogues,
                     "Fuse linear layers' bias, GELU and bias gradient into "
                     "their matmuls, take a 16-bit model's cross-entropy on "
                     "its logits without an f32 copy, fuse residual adds "
                     "into the layer norms that read them, and let attention "
                     "read its heads without transposes (default True): "
                     "one cuBLASLt call or one pass each on a GPU, the same "
                     "bits on the CPU.")
      .def_readwrite("max_reuse_distance", &ZeroOptions::maxReuseDistance,
                     "Stage 3: gather again when a parameter's uses are more "
                     "than this many ops apart (default 0: no re-gather for "
                     "distance alone).")
      .def_readwrite("prefetch_bytes", &ZeroOptions::prefetchBytes,
                     "Stage 3 (zero-schedule): gathered bytes issued ahead of "
                     "the compute that will use them (default 0: each gather "
                     "right before its first use).")
      .def_readwrite("max_live_gathered_bytes",
                     &ZeroOptions::maxLiveGatheredBytes,
                     "Stage 3 (zero-schedule): the most gathered parameter "
                     "bytes alive at once (default 0: no bound); the report's "
                     "peak_gathered.")
      .def_readwrite("machine", &ZeroOptions::machine,
                     "The machine the step is compiled for: a preset "
                     "('h100-nvlink-8', 'h200-nvlink-8', 'cpu') or a JSON "
                     "machine file, by which zero-schedule places the "
                     "gathers and updates; '' (the default) places them by "
                     "prefetch_bytes alone.");

  // Every setter returns the config, so that calls chain as in OneFlow.
  py::class_<GraphConfig>(
      m, "GraphConfig",
      "How a graph is trained and compiled (graph.config, as OneFlow's "
      "nn.Graph config). Every setter returns the config, so calls chain; "
      "compile checks the settings.")
      .def("__repr__", &configRepr)
      .def("_fingerprint", &configFingerprint,
           "Everything compile reads of the config, as text (zero.Trainer "
           "compares it with the one at compile)")
      .def("optimizer", py::overload_cast<const SGD &>(&GraphConfig::optimizer),
           py::arg("optimizer"), py::return_value_policy::reference_internal,
           "Updates the parameters with SGD.")
      .def("optimizer",
           py::overload_cast<const Momentum &>(&GraphConfig::optimizer),
           py::arg("optimizer"), py::return_value_policy::reference_internal,
           "Updates the parameters with SGD with momentum.")
      .def("optimizer",
           py::overload_cast<const Adam &>(&GraphConfig::optimizer),
           py::arg("optimizer"), py::return_value_policy::reference_internal,
           "Updates the parameters with Adam.")
      .def("optimizer",
           py::overload_cast<const AdamW &>(&GraphConfig::optimizer),
           py::arg("optimizer"), py::return_value_policy::reference_internal,
           "Updates the parameters with AdamW.")
      .def("learning_rate_schedule", &GraphConfig::learning_rate_schedule,
           py::arg("schedule"), py::return_value_policy::reference_internal,
           "How the optimizer's learning rate varies with the step, e.g. "
           "Schedule.cosine(100, 10000, 3e-5); without one it is constant. "
           "Applies to whichever optimizer is chosen.")
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
          py::return_value_policy::reference_internal,
          "A parameter group, as PyTorch's param_groups: the trainable "
          "`parameters` (Parameter objects or names) are updated by their "
          "own copy of the optimizer, with `weight_decay` instead of its own "
          "(None keeps it) and the learning rate and the schedule's min_lr "
          "times `lr_scale`. Names are letters, digits and '_'; a parameter "
          "belongs to one group; compile checks.")
      .def("clip_grad_norm", &GraphConfig::clip_grad_norm, py::arg("max_norm"),
           py::return_value_policy::reference_internal,
           "Clips the gradients by their global L2 norm before every update, "
           "as PyTorch's clip_grad_norm_: each is multiplied by min(1, "
           "max_norm / (norm + 1e-6)). max_norm must be positive; "
           "float('inf') measures the norm (Trainer.metrics['grad_norm']) "
           "without clipping a finite one and, as PyTorch, makes every "
           "gradient NaN where the norm is not finite.")
      .def("activation_checkpointing", &GraphConfig::activation_checkpointing,
           py::arg("enabled") = true,
           py::return_value_policy::reference_internal,
           "Recomputes in the backward the forward results marked for it "
           "(GPT2Block and GPT2 with checkpoint=True) instead of keeping "
           "them alive; without it the marks are ignored.")
      .def("enable_zero", &GraphConfig::enable_zero, py::arg("enabled") = true,
           py::arg("stage") = 2, py::return_value_policy::reference_internal,
           "ZeRO: partitions the optimizer state (stage 1), plus the "
           "gradients (2), plus the parameters (3) over the ranks; "
           "enable_zero(False) is plain data parallelism. The stage must be "
           "1, 2 or 3.")
      .def("mesh", &GraphConfig::mesh, py::arg("nodes"),
           py::arg("ranks_per_node"),
           py::return_value_policy::reference_internal,
           "A two-level mesh of nodes x ranks_per_node ranks (a node's ranks "
           "consecutive, as mpirun places them): averages are taken within "
           "a node, then across nodes, and ZeRO stages 1-3 shard as "
           "zero.mesh_scheme says: by default within a node, with a "
           "copy per node (hybrid sharding, FSDP2's HSDP). "
           "compile() must be given nodes * ranks_per_node.")
      .def_property_readonly(
          "mesh_shape", &GraphConfig::meshShape,
          "[nodes, ranks per node] after mesh(), else [] (one axis)")
      .def("set_gradient_accumulation_steps",
           &GraphConfig::set_gradient_accumulation_steps, py::arg("steps"),
           py::return_value_policy::reference_internal,
           "Micro-batches per optimizer step (default 1): the forward and "
           "backward run on `steps` consecutive micro-batches, accumulating "
           "the gradients, then one update (OneFlow's name).")
      .def("gradient_accumulation_steps",
           &GraphConfig::gradient_accumulation_steps, py::arg("steps"),
           py::return_value_policy::reference_internal,
           "set_gradient_accumulation_steps, named as DeepSpeed's "
           "gradient_accumulation_steps.")
      .def(
          "precision",
          [](GraphConfig &config, const std::string &dtype) -> GraphConfig & {
            return config.precision(parseDtype(dtype));
          },
          py::arg("dtype"), py::return_value_policy::reference_internal,
          "The model's float type: 'f32' (the default), 'bf16' or 'f16'. "
          "Parameters and inputs declared f32 take it, with fp32 master "
          "copies; layer-norm statistics and the loss stay f32. Set it "
          "right after making the graph: it is read at the first parameter "
          "or input.")
      .def("loss_scaling", &GraphConfig::loss_scaling, py::arg("scaling"),
           py::return_value_policy::reference_internal,
           "Dynamic loss scaling (LossScaling.dynamic()) or none "
           "(LossScaling.none()); precision('f16') turns on "
           "LossScaling.dynamic() unless this chose otherwise.")
      .def(
          "offload",
          [](GraphConfig &config, const std::string &what) -> GraphConfig & {
            std::optional<GraphConfig::Offload> choice =
                zero::symbolizeOffloadPlacement(what);
            if (!choice)
              throw py::value_error("offload must be 'none', 'optimizer', "
                                    "'optimizer+params' or 'auto', got '" +
                                    what + "'");
            return config.offload(*choice);
          },
          py::arg("what"), py::return_value_policy::reference_internal,
          "What lives in host memory (ZeRO-Offload, docs/offload.md): "
          "'none' (the default), 'optimizer' (the optimizer state), "
          "'optimizer+params' (and the parameter shards, stage 3) or 'auto' "
          "(the least offload that fits device_memory_budget).")
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
          py::arg("bytes"), py::return_value_policy::reference_internal,
          "The device bytes per rank the compiled plan must fit, as an int "
          "or a string such as '80GiB' or '512MB'; compile fails, with the "
          "shortfall, when it cannot. 0 (the default) sets no budget.")
      .def_property_readonly("zero", py::overload_cast<>(&GraphConfig::zero),
                             py::return_value_policy::reference_internal,
                             "ZeRO's knobs beyond the stage (a ZeroOptions), "
                             "set in place: config.zero.layout = 'dim0'.")
      .def_property_readonly("stage", &GraphConfig::zeroStage,
                             "The ZeRO stage: 1, 2 or 3, or 0 when ZeRO is "
                             "off.")
      .def_property_readonly("accumulation_steps",
                             &GraphConfig::accumulationSteps,
                             "Micro-batches per optimizer step (1 without "
                             "gradient accumulation).")
      .def_property_readonly("offload_choice", &GraphConfig::offloadName,
                             "What offload() chose: 'none', 'optimizer', "
                             "'optimizer+params' or 'auto'.");
}

} // namespace zero::python
