//===- Graph.h - The C++ graph builder of a training step -------*- C++ -*-===//
//
// Users describe the forward pass and the loss of a one-device training step
// with typed tensors, pick an optimizer and a ZeRO stage, and compile: the
// builder emits the `train` dialect step (parameters, optimizer, loads,
// compute ops, `train.minimize`), and `compile` runs `train-autodiff` and
// `zero-pipeline` on it. Nobody writes IR or a backward pass by hand.
//
//   zero::frontend::Graph graph("mlp");
//   Tensor x = graph.input("x", {32, 784}, DType::f32);
//   ...
//   graph.minimize(softmaxCrossEntropy(logits, labels));
//   graph.config().optimizer(Adam{1e-3}).enable_zero(true, 3);
//   absl::StatusOr<CompiledGraph> compiled = graph.compile(ranks);
//
// Shape errors do not throw or abort: the first one is recorded in the graph
// (later ops on its result are skipped) and `compile` returns it, naming the
// layer or op in the user's terms.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_FRONTEND_GRAPH_H
#define ZERO_FRONTEND_GRAPH_H

#include "zero/runtime/DType.h"
#include "zero/support/OptionEnums.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zero::frontend {

class CompiledGraph;

namespace detail {
struct GraphState;
} // namespace detail

// The runtime's element types: what the builder declares is what runs.
using ::zero::rt::DType;
using ::zero::rt::dtypeName;
using ::zero::rt::isFloat;

using Shape = std::vector<int64_t>;

/// A value of the step: a graph input, a parameter's value, or an op result.
/// Cheap to copy; it refers to its graph, which must outlive it.
class Tensor {
public:
  Tensor() = default;
  /// False for a default-constructed tensor and for the result of an op that
  /// failed (the graph holds the error).
  bool valid() const { return state != nullptr && id >= 0; }
  const Shape &shape() const;
  int64_t rank() const { return static_cast<int64_t>(shape().size()); }
  int64_t numElements() const;
  DType dtype() const;

private:
  friend struct detail::GraphState;
  Tensor(detail::GraphState *state, int id) : state(state), id(id) {}
  detail::GraphState *state = nullptr;
  int id = -1;
};

/// How a parameter's logical value is first drawn (from the run's seed).
struct Init {
  enum class Kind { zeros, ones, constant, normal, uniform };
  Kind kind = Kind::zeros;
  double first = 0.0;  // value, mean or low
  double second = 0.0; // std or high

  static Init zeros() { return {Kind::zeros, 0.0, 0.0}; }
  static Init ones() { return {Kind::ones, 0.0, 0.0}; }
  static Init constant(double value) { return {Kind::constant, value, 0.0}; }
  static Init normal(double mean, double std) {
    return {Kind::normal, mean, std};
  }
  static Init uniform(double low, double high) {
    return {Kind::uniform, low, high};
  }
};

/// OK, or the error of the op that failed last in the graph `tensor`
/// belongs to (OK for a tensor of no graph): after an op returned an
/// invalid tensor, why, for a frontend that reports it at that op (the
/// Python package raises it there). Graph::status() keeps the first.
absl::Status buildStatus(const Tensor &tensor);

/// A persistent trainable tensor. Converts to the Tensor of its value in the
/// step; using it several times (a tied LM head) is one parameter with
/// several uses, and its gradients are summed.
class Parameter {
public:
  Parameter() = default;
  /// False for a default-constructed handle (a Linear without bias).
  bool defined() const { return state != nullptr && index >= 0; }
  const std::string &name() const;
  Tensor value() const;
  operator Tensor() const { return value(); }
  /// A frozen parameter gets no gradient, no optimizer state, no update.
  Parameter &requiresGrad(bool trainable);
  bool requiresGrad() const;

private:
  friend struct detail::GraphState;
  Parameter(detail::GraphState *state, int index)
      : state(state), index(index) {}
  detail::GraphState *state = nullptr;
  int index = -1;
};

//===----------------------------------------------------------------------===//
// Optimizers (what `train.optimizer` declares)
//===----------------------------------------------------------------------===//

/// How the learning rate varies with the 1-based optimizer step t (the
/// optimizer's `lr` is the peak): a linear warmup from 0 over `warmup` steps
/// (lr * t / warmup), then constant, or a linear or cosine decay to `minLr`
/// at step `total`, and `minLr` after it. `train.optimizer ... schedule`.
struct Schedule {
  enum class Kind { constant, linear, cosine };
  Kind kind = Kind::constant;
  int64_t warmup = 0;
  int64_t total = 0;  // linear and cosine only
  double minLr = 0.0; // linear and cosine only

  static Schedule constant(int64_t warmup = 0) {
    return {Kind::constant, warmup, 0, 0.0};
  }
  static Schedule linear(int64_t warmup, int64_t total, double minLr = 0.0) {
    return {Kind::linear, warmup, total, minLr};
  }
  static Schedule cosine(int64_t warmup, int64_t total, double minLr = 0.0) {
    return {Kind::cosine, warmup, total, minLr};
  }
  /// The same rate at every step (what an optimizer without one does).
  bool isConstant() const { return kind == Kind::constant && warmup == 0; }
};

struct SGD {
  double lr = 1e-2;
  double weightDecay = 0.0; // L2
};
struct Momentum {
  double lr = 1e-2;
  double momentum = 0.9;
  double weightDecay = 0.0; // L2
};
struct Adam {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weightDecay = 0.0; // L2
};
struct AdamW {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weightDecay = 1e-2; // decoupled
};

struct OptimizerSpec {
  enum class Kind { sgd, momentum, adam, adamw };
  Kind kind = Kind::adamw;
  double lr = 1e-3;
  double momentum = 0.0;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weightDecay = 0.0;
  Schedule schedule;
  /// Gradient clipping by global norm (`clip_norm`); 0 leaves it off.
  double clipNorm = 0.0;
  /// Dynamic loss scaling (`loss_scale`, `growth_interval`); an initial
  /// scale of 0 leaves it off.
  double lossScale = 0.0;
  int64_t growthInterval = 2000;
};

/// Dynamic loss scaling, for f16 training (PyTorch's GradScaler, DeepSpeed's
/// fp16 `loss_scale: 0`): the backward starts from the loss times `scale`,
/// the gradients are unscaled in f32, and a step whose gradients overflow
/// (on any rank) is skipped and halves the scale (not below 1); after
/// `growthInterval` good steps in a row the scale doubles.
struct LossScaling {
  bool enabled = false;
  double initialScale = 65536.0;
  int64_t growthInterval = 2000;

  static LossScaling dynamic(double initialScale = 65536.0,
                             int64_t growthInterval = 2000) {
    return {true, initialScale, growthInterval};
  }
  static LossScaling none() { return {false, 0.0, 0}; }
};

//===----------------------------------------------------------------------===//
// Configuration (OneFlow's nn.Graph config)
//===----------------------------------------------------------------------===//

/// The ZeRO options, as `zero-pipeline` takes them.
struct ZeroOptions {
  enum class Layout { flat, dim0 };
  /// Tensor-parallel ranks (zero-pipeline's tp): the parameters' dist.sbp
  /// plans split them over a last placement axis of this many ranks, the
  /// data-parallel axes in front. Compile ranks count both.
  int64_t tensorParallel = 1;
  /// Flat shards padded to a multiple of the ranks (DeepSpeed), or dimension
  /// 0 split with padding (FSDP2).
  Layout layout = Layout::flat;
  /// Tensors with fewer elements stay replicated.
  int64_t minShardElements = 0;
  /// Largest fused gradient-reduction and parameter all-gather buckets; 0
  /// leaves every collective on its own.
  int64_t reduceBucketBytes = 25 << 20;
  int64_t allgatherBucketBytes = 25 << 20;
  /// Stage 3: gather parameters again for their backward uses (otherwise
  /// the forward gathers stay alive until the backward).
  bool regatherInBackward = true;
  /// Fuse linear layers' bias, GELU and bias gradient into their matmuls,
  /// take a 16-bit model's cross-entropy on its logits without an f32 copy,
  /// and fuse residual adds into the layer norms that read them
  /// (zero-pipeline's fuse-epilogues): one cuBLASLt call or one pass each
  /// on a GPU, the same bits on the CPU.
  bool fuseEpilogues = true;
  /// On a mesh (GraphConfig::mesh), stages 1-3: hybrid shards within a
  /// node and keeps a copy per node; full shards over all ranks, gathering
  /// across nodes first (zero-shard's mesh-scheme).
  MeshScheme meshScheme = MeshScheme::hybrid;
  /// The type gradients are averaged in: each in its own (a bf16
  /// gradient in bf16), or 16-bit ones widened to f32 first, as FSDP's
  /// MixedPrecision(reduce_dtype=torch.float32) (dist-data-parallel's
  /// reduce-dtype).
  ReduceDtype reduceDtype = ReduceDtype::gradient;
  /// Stage 3 with meshScheme "full": later gathers of a parameter start
  /// from the secondary shard its forward gather left within the node
  /// (ZeRO++ hpZ).
  bool hpz = false;
  /// meshScheme "full": ZeRO++'s quantized communication across nodes:
  /// qwz gathers parameters as codes of qwzBits bits and block scales
  /// (stage 3), qgz reduces gradients by all-to-alls of codes of qgzBits
  /// bits averaged in full precision; 8 (int8) or 4 (int4) bits, blocks of
  /// quantizeBlock elements, pieces under quantizeMinElements in full
  /// precision.
  bool qwz = false;
  bool qgz = false;
  int64_t qwzBits = 8;
  int64_t qgzBits = 4;
  int64_t quantizeBlock = 4096;
  int64_t quantizeMinElements = 4096;
  /// Stage 3: re-gather when uses are more than this many ops apart (0: no
  /// re-gather for distance alone).
  int64_t maxReuseDistance = 0;
  /// Stage 3 (zero-schedule): gathered bytes issued ahead of the compute
  /// that will use them (0: each gather right before its first use), and
  /// the most gathered parameter bytes alive at once (0: no bound).
  int64_t prefetchBytes = 0;
  int64_t maxLiveGatheredBytes = 0;
  /// The machine the step is compiled for: a preset (`h100-nvlink-8`,
  /// `h200-nvlink-8`, `cpu`) or a JSON machine file (docs/zero-opt.md). At
  /// stage 3 zero-schedule issues each gather just early enough to be
  /// hidden behind the compute on it, at stages 1-2 it moves the updates
  /// and their gathers into the backward, and on a machine whose
  /// collectives do not overlap compute (`cpu`) it moves nothing. Empty: the
  /// gathers are placed by prefetchBytes alone.
  std::string machine;
};

class GraphConfig {
public:
  GraphConfig &optimizer(const SGD &sgd);
  GraphConfig &optimizer(const Momentum &momentum);
  GraphConfig &optimizer(const Adam &adam);
  GraphConfig &optimizer(const AdamW &adamw);
  /// How the optimizer's learning rate varies with the step, e.g.
  /// `learning_rate_schedule(Schedule::cosine(100, 10000, 3e-5))`; without
  /// one it is constant. Applies to whichever optimizer is chosen.
  GraphConfig &learning_rate_schedule(const Schedule &schedule);
  /// Clips the gradients by their global norm before every update, as
  /// PyTorch's `clip_grad_norm_(parameters, max_norm)`: with `norm` the
  /// L2 norm of all gradients together, each is multiplied by
  /// `min(1, maxNorm / (norm + 1e-6))`. Emitted as `train.optimizer ...
  /// clip_norm maxNorm`; under ZeRO stages 1-3 the norm is the all-reduced
  /// sum of the ranks' shard partial sums. maxNorm must be positive (compile
  /// checks); infinity measures the norm (the step's metrics) without
  /// clipping a finite one, and makes every gradient NaN where the norm is
  /// not finite, as PyTorch's `clip_grad_norm_(parameters, inf)` does.
  GraphConfig &clip_grad_norm(double maxNorm);
  /// Activation checkpointing: compile differentiates the step with
  /// `train-autodiff recompute=true`, so that the results of forward ops
  /// marked `train.recompute` (by a RecomputeScope, or by
  /// `GPT2Config::checkpoint`) are recomputed in the backward instead of
  /// kept alive from the forward. Without it the marks are ignored.
  GraphConfig &activation_checkpointing(bool enabled = true);
  /// `enable_zero(true, stage)` partitions optimizer state (stage 1), plus
  /// gradients (2), plus parameters (3) over the ranks; `enable_zero(false)`
  /// is plain data parallelism. Named as in OneFlow's GraphConfig.
  GraphConfig &enable_zero(bool enabled = true, int stage = 2);
  /// Compiles for a two-level mesh of `nodes` x `ranksPerNode` ranks (a
  /// node's ranks consecutive): averages are taken within a node, then
  /// across nodes, and ZeRO stages 1-3 shard as zero().meshScheme says
  /// (by default within a node, replicated across nodes: hybrid
  /// sharding). compile(ranks) must be given
  /// nodes * ranksPerNode. (FSDP2's 2-D device mesh, torchtitan's
  /// data_parallel_replicate_degree x data_parallel_shard_degree.)
  GraphConfig &mesh(int64_t nodes, int64_t ranksPerNode);
  /// Micro-batches per optimizer step: the trainer runs the forward and
  /// backward on K consecutive micro-batches, accumulating the gradients,
  /// then one update (OneFlow's `set_gradient_accumulation_steps`).
  GraphConfig &set_gradient_accumulation_steps(int steps);
  /// The same, named like DeepSpeed's `gradient_accumulation_steps`.
  GraphConfig &gradient_accumulation_steps(int steps) {
    return set_gradient_accumulation_steps(steps);
  }
  /// The model's float type: f32 (the default), bf16 or f16. Every
  /// parameter and input declared f32 (what the layers declare) is of this
  /// type, and so is every float activation computed from them; layer-norm
  /// statistics and the loss stay f32 (softmaxCrossEntropy casts 16-bit
  /// logits), and train-materialize-optimizer gives each 16-bit trainable
  /// parameter an fp32 master copy. It is read when the graph declares its
  /// first parameter or input, so set it right after constructing the
  /// graph; compile rejects a precision changed after that.
  GraphConfig &precision(DType dtype);
  /// Dynamic loss scaling; `precision(DType::f16)` turns on
  /// `LossScaling::dynamic()` unless this chose otherwise, e.g.
  /// `loss_scaling(LossScaling::none())`. With gradient accumulation the
  /// micro-batches' scaled gradients are summed and checked once: an
  /// overflow in any of them skips the whole step.
  GraphConfig &loss_scaling(const LossScaling &scaling);
  /// What lives in host memory (ZeRO-Offload, decided by the compiler's
  /// zero-offload pass): nothing; the optimizer state (stages 1-3); the
  /// optimizer state and the parameter shards (stage 3); or the least
  /// offload that fits `device_memory_budget` (automatic).
  using Offload = ::zero::OffloadPlacement;
  GraphConfig &offload(Offload what);
  /// Device bytes per rank the compiled plan must fit; compile fails, with
  /// the shortfall, when it cannot. 0 (the default) sets no budget.
  GraphConfig &device_memory_budget(int64_t bytes);
  /// A parameter group, as in PyTorch's `optimizer(param_groups)`: the named
  /// trainable parameters are updated by their own copy of the optimizer,
  /// with `weightDecay` (when given) instead of the optimizer's and the
  /// learning rate (and the schedule's floor) times `lrScale`. Emitted as a
  /// `train.optimizer @<kind>.<name>` that each member's `train.param` names
  /// with `with`; the report lists the groups. Parameters in no group use
  /// the optimizer itself. Names are [A-Za-z0-9_]+; a parameter belongs to
  /// one group at most (compile checks).
  GraphConfig &parameter_group(const std::string &name,
                               const std::vector<std::string> &parameters,
                               std::optional<double> weightDecay,
                               double lrScale = 1.0);
  struct ParameterGroup {
    std::string name;
    std::vector<std::string> parameters;
    std::optional<double> weightDecay;
    double lrScale = 1.0;
  };
  const std::vector<ParameterGroup> &parameterGroups() const { return groups; }
  ZeroOptions &zero() { return zeroOptions; }

  /// The chosen optimizer with the learning-rate schedule.
  OptimizerSpec optimizerSpec() const {
    OptimizerSpec spec = optimizerChoice;
    spec.schedule = scheduleChoice;
    spec.clipNorm = clipNormChoice.value_or(0.0);
    LossScaling scaling = lossScaling();
    if (scaling.enabled) {
      spec.lossScale = scaling.initialScale;
      spec.growthInterval = scaling.growthInterval;
    }
    return spec;
  }
  /// The loss scaling in effect: the chosen one, else dynamic for f16.
  LossScaling lossScaling() const {
    if (lossScalingChoice)
      return *lossScalingChoice;
    return precisionChoice == DType::f16 ? LossScaling::dynamic()
                                         : LossScaling::none();
  }
  /// The maximum global gradient norm, if clipping is on.
  std::optional<double> clipGradNorm() const { return clipNormChoice; }
  bool activationCheckpointing() const { return recompute; }
  const ZeroOptions &zero() const { return zeroOptions; }
  bool zeroEnabled() const { return zeroOn; }
  int zeroStage() const { return zeroOn ? stage : 0; }
  /// [nodes, ranks per node], or empty for one axis of ranks.
  const std::vector<int64_t> &meshShape() const { return meshExtents; }
  int accumulationSteps() const { return accumulateSteps; }
  Offload offloadChoice() const { return offloadWhat; }
  /// The zero-offload option's spelling of offloadChoice() ("none",
  /// "optimizer", "optimizer+params", "auto"; symbolizeOffloadPlacement
  /// reads it back).
  const char *offloadName() const;
  int64_t deviceMemoryBudget() const { return budgetBytes; }
  DType precision() const { return precisionChoice; }
  /// The first invalid setting, in the user's terms (checked by compile).
  absl::Status validate() const;

private:
  OptimizerSpec optimizerChoice;
  Schedule scheduleChoice;
  std::optional<double> clipNormChoice;
  std::optional<LossScaling> lossScalingChoice;
  bool recompute = false;
  ZeroOptions zeroOptions;
  bool zeroOn = false;
  int stage = 0;
  int accumulateSteps = 1;
  Offload offloadWhat = Offload::none;
  int64_t budgetBytes = 0;
  DType precisionChoice = DType::f32;
  std::vector<ParameterGroup> groups;
  std::vector<int64_t> meshExtents;
};

//===----------------------------------------------------------------------===//
// The graph
//===----------------------------------------------------------------------===//

class Graph {
public:
  explicit Graph(std::string name);
  ~Graph();
  Graph(Graph &&) noexcept;
  Graph &operator=(Graph &&) noexcept;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  const std::string &name() const;

  /// An argument of the step, batch-major: dimension 0 is the per-rank
  /// batch (the step runs on each rank's slice of the global batch). A
  /// float input declared f32 takes the configured precision.
  Tensor input(const std::string &name, const Shape &shape, DType dtype);
  /// A parameter named `name` (names must be unique; dots group them, as in
  /// "h0.attn.q.w"). An f32 parameter (the default) takes the configured
  /// precision; an explicit bf16 or f16 one stays as declared.
  Parameter parameter(const std::string &name, const Shape &shape,
                      const Init &init, DType dtype = DType::f32);
  /// Every parameter declared so far, in declaration order (PyTorch's
  /// `named_parameters()`, frozen ones included).
  std::vector<Parameter> parameters() const;
  /// A tensor whose every element is `value`: a constant of the step (a
  /// PyTorch scalar operand, RMSNorm's epsilon), not a parameter. An f32
  /// constant takes the configured precision, as inputs do, unless
  /// `exactType`: then it is `dtype` as given, the operand of a value a
  /// 16-bit model widened to f32 (an importer's epsilon after an upcast).
  Tensor full(const Shape &shape, double value, DType dtype = DType::f32,
              bool exactType = false);
  /// The scalar f32 loss the training step minimizes.
  void minimize(const Tensor &loss);
  /// A value evaluation gives back by name (Trainer::evaluate's outputs:
  /// the logits, for generation or metrics): a float scalar (the mean over
  /// the ranks, as the loss) or a tensor whose dimension 0 is the batch and
  /// that depends on an input (each rank computes its rows, evaluate
  /// gathers the global batch's). Training steps do not compute it.
  void output(const std::string &name, const Tensor &value);
  /// The names given to output(), in order.
  std::vector<std::string> outputNames() const;

  GraphConfig &config();
  const GraphConfig &config() const;

  /// OK, or the first error met while building (shapes, names, ...).
  absl::Status status() const;
  /// How many declarations and ops have failed so far, and the error of
  /// the one numbered `index` (0-based): a frontend that reports each error
  /// where it happens (Python) raises error(n) when failures() grows past n
  /// over a call.
  int64_t failures() const;
  absl::Status error(int64_t index) const;

  /// Builds the MLIR module, differentiates it and compiles it for `ranks`
  /// data-parallel ranks at the configured ZeRO stage, down to the runtime
  /// program. The graph can be compiled again (other ranks, other config).
  absl::StatusOr<CompiledGraph> compile(int ranks) const;

  detail::GraphState &internals() { return *state; }
  const detail::GraphState &internals() const { return *state; }

private:
  std::unique_ptr<detail::GraphState> state;
};

/// Marks every op added to `graph` while it is alive with the unit
/// attribute `train.recompute` (scopes nest), for activation checkpointing:
/// with `config().activation_checkpointing(true)` the backward recomputes
/// the marked results it needs instead of keeping them from the forward.
/// Leave a region's output outside the scope (it is what the backward
/// recomputes from), as GPT2Block does with its residual output:
///
///   Tensor inner;
///   {
///     RecomputeScope checkpoint(graph);
///     inner = mlp(ln(x));       // marked: recomputed in the backward
///   }
///   Tensor y = x + inner;       // unmarked: kept
///
/// Inputs and parameters are never marked (they are not ops).
///
/// With RecomputePolicy::exceptMatmuls the scope leaves `train.matmul` and
/// `train.attention` unmarked: their results are kept and only the cheap
/// ops between them (norms, activations, elementwise) are recomputed, as
/// PyTorch's selective activation checkpointing saves matmul and attention
/// outputs. While any such scope is open, matmuls stay unmarked.
///
/// RecomputePolicy::everyOtherMatmul is torchtitan's op-level selective
/// checkpointing (`selective_ac_option = "op"`): attention results are
/// kept, and of the matmuls added in the scope the first, third, ... are
/// kept and the others recomputed in the backward.
enum class RecomputePolicy { everything, exceptMatmuls, everyOtherMatmul };

class RecomputeScope {
public:
  explicit RecomputeScope(Graph &graph,
                          RecomputePolicy policy = RecomputePolicy::everything);
  ~RecomputeScope();
  RecomputeScope(const RecomputeScope &) = delete;
  RecomputeScope &operator=(const RecomputeScope &) = delete;

private:
  detail::GraphState *state;
  RecomputePolicy policy;
};

//===----------------------------------------------------------------------===//
// Ops: one function per `train` compute op, shapes checked as the op's
// verifier does. An invalid operand gives an invalid result, silently (the
// graph already holds the error).
//===----------------------------------------------------------------------===//

enum class Transpose { none, a, b, both };

Tensor add(const Tensor &lhs, const Tensor &rhs);
Tensor sub(const Tensor &lhs, const Tensor &rhs);
Tensor mul(const Tensor &lhs, const Tensor &rhs);
Tensor div(const Tensor &lhs, const Tensor &rhs);
inline Tensor operator+(const Tensor &lhs, const Tensor &rhs) {
  return add(lhs, rhs);
}
inline Tensor operator-(const Tensor &lhs, const Tensor &rhs) {
  return sub(lhs, rhs);
}
inline Tensor operator*(const Tensor &lhs, const Tensor &rhs) {
  return mul(lhs, rhs);
}

Tensor neg(const Tensor &x);
Tensor exp(const Tensor &x);
Tensor log(const Tensor &x);
Tensor sqrt(const Tensor &x);
Tensor rsqrt(const Tensor &x);
Tensor tanh(const Tensor &x);
Tensor relu(const Tensor &x);
/// GELU: GPT-2's tanh approximation, or with `exact` x Phi(x) by erf
/// (PyTorch's default gelu).
Tensor gelu(const Tensor &x, bool exact = false);
/// 1 / (1 + e^-x).
Tensor sigmoid(const Tensor &x);
/// x sigmoid(x), Llama's SwiGLU gate.
Tensor silu(const Tensor &x);
/// With `safe`, a row of only -inf gives zeros (PyTorch's attention), not
/// NaN (torch.softmax).
Tensor softmax(const Tensor &x, bool safe = false);

Tensor scale(const Tensor &x, double factor);
/// Sets the entries above the diagonal of the last two dimensions to `fill`.
Tensor causalMask(const Tensor &x, double fill);
/// softmax(q k^T * scale) v over q, k, v [..., seq, head_dim] of one type,
/// with `causal` key positions after the query's left out: one fused op
/// (train.attention, FlashAttention's algorithm), so the [seq, seq] scores
/// are never a tensor of the step.
Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v,
                 double scale, bool causal);
/// PyTorch's dropout in training: each element kept with probability
/// 1 - rate and scaled by 1 / (1 - rate), else 0; the first dimension is
/// the batch. The mask is drawn from the trainer's seed, the step and each
/// element's place in the global batch, so it is the same at every stage
/// and rank count; evaluation runs without it. A rate of 0 returns x.
Tensor dropout(const Tensor &x, double rate);
/// Sets x[b, ..., j] to `fill` where keep[b, j] is 0: a tokenizer's
/// attention_mask [batch, keys] applied to attention scores.
Tensor keyMask(const Tensor &x, const Tensor &keep, double fill);
/// x + bias broadcast along the last dimension.
Tensor biasAdd(const Tensor &x, const Tensor &bias);
/// [..., M, K] x [..., K, N] after the requested transposes of the last two
/// dimensions; `rhs` may be 2-D and shared by every batch.
Tensor matmul(const Tensor &lhs, const Tensor &rhs,
              Transpose transpose = Transpose::none);
/// Normalizes the last dimension; gamma and beta have its size.
Tensor layerNorm(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                 double eps = 1e-5);
/// Rows of `table` [V, D] picked by integer `ids`: ids.shape + [D]. With
/// `paddingIdx`, that row gets no gradient from the lookup (PyTorch's
/// `nn.Embedding(padding_idx=...)`); it must be a row of the table.
Tensor embedding(const Tensor &table, const Tensor &ids,
                 std::optional<int64_t> paddingIdx = std::nullopt);
/// Mean cross-entropy of softmax(logits) against integer labels of shape
/// logits.shape[:-1]; a scalar f32. 16-bit logits are cast to f32 first (a
/// `train.cast`), as the op computes on f32 logits. With `ignoreIndex`,
/// labels equal to it take no part, and the mean is over the others of the
/// global batch (PyTorch's `ignore_index`; NaN where every label is).
/// `labelSmoothing` e in [0, 1] is PyTorch's: the target is 1 - e on the
/// label and e / C on every class.
Tensor softmaxCrossEntropy(const Tensor &logits, const Tensor &labels,
                           std::optional<int64_t> ignoreIndex = std::nullopt,
                           double labelSmoothing = 0.0);
Tensor reduceSum(const Tensor &x, const std::vector<int64_t> &dims);
Tensor reduceMean(const Tensor &x, const std::vector<int64_t> &dims);
Tensor reshape(const Tensor &x, const Shape &shape);
Tensor transpose(const Tensor &x, const std::vector<int64_t> &permutation);
/// Positions [offset, offset + size) of dimension `dim`; also for integer
/// tensors (shifted labels).
Tensor slice(const Tensor &x, int64_t dim, int64_t offset, int64_t size);
/// The tensors end to end along `dim`; they agree in every other dimension
/// and in type.
Tensor concat(const std::vector<Tensor> &xs, int64_t dim);
/// Broadcasts `x` to `shape` by repeating it along the new dimensions
/// `dims` of `shape` (ascending): removing them from `shape` gives x's
/// shape. A PyTorch broadcast of a size-1 dimension is a reshape that drops
/// it, then this.
Tensor expand(const Tensor &x, const Shape &shape,
              const std::vector<int64_t> &dims);
Tensor cast(const Tensor &x, DType dtype);

} // namespace zero::frontend

#endif // ZERO_FRONTEND_GRAPH_H
