//===- Graph.cpp - Inputs, parameters, the loss and the configuration -----===//

#include "GraphState.h"

#include "zero/frontend/CompiledGraph.h"
#include "zero/passes/PipelineOptions.h"
#include "zero/support/ZeroStage.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cmath>
#include <set>

using namespace zero::frontend;
using namespace zero::frontend::detail;

std::string detail::shapeText(const Shape &shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::string detail::describe(const Tensor &tensor) {
  return absl::StrCat(shapeText(tensor.shape()), " ",
                      dtypeName(tensor.dtype()));
}

//===----------------------------------------------------------------------===//
// Tensor and Parameter
//===----------------------------------------------------------------------===//

static const Shape kNoShape;

const Shape &Tensor::shape() const {
  return valid() ? state->nodes[id].shape : kNoShape;
}

int64_t Tensor::numElements() const {
  int64_t count = 1;
  for (int64_t extent : shape())
    count *= extent;
  return count;
}

DType Tensor::dtype() const {
  return valid() ? state->nodes[id].dtype : DType::f32;
}

const std::string &Parameter::name() const {
  static const std::string none;
  return state ? state->parameters[index].name : none;
}

Tensor Parameter::value() const {
  if (!state)
    return Tensor();
  return state->tensorOf(state->parameters[index].node);
}

Parameter &Parameter::requiresGrad(bool trainable) {
  if (state)
    state->parameters[index].trainable = trainable;
  return *this;
}

bool Parameter::requiresGrad() const {
  return state && state->parameters[index].trainable;
}

Tensor GraphState::fail(const std::string &message) {
  lastError =
      absl::InvalidArgumentError(absl::StrCat("graph '", name, "': ", message));
  errors.push_back(lastError);
  if (firstError.ok())
    firstError = lastError;
  return Tensor();
}

DType GraphState::declaredType(DType dtype) {
  if (!precisionRead)
    precisionRead = config.precision();
  return dtype == DType::f32 && isFloat(*precisionRead) ? *precisionRead
                                                        : dtype;
}

Tensor GraphState::add(Node node) {
  bool matmul = node.opName == "train.matmul";
  bool attention = node.opName == "train.attention";
  bool kept = keepMatmulsDepth > 0 && (matmul || attention);
  if (!kept && alternateMatmulsDepth > 0)
    kept = attention || (matmul && matmulsInScope++ % 2 == 0);
  if (node.kind == Node::Kind::op && recomputeDepth > 0 && !kept)
    node.unitAttrs.push_back("train.recompute");
  nodes.push_back(std::move(node));
  return Tensor(this, static_cast<int>(nodes.size()) - 1);
}

//===----------------------------------------------------------------------===//
// GraphConfig
//===----------------------------------------------------------------------===//

GraphConfig &GraphConfig::learning_rate_schedule(const Schedule &schedule) {
  scheduleChoice = schedule;
  return *this;
}

GraphConfig &GraphConfig::parameter_group(
    const std::string &name, const std::vector<std::string> &parameters,
    std::optional<double> weightDecay, double lrScale) {
  groups.push_back({name, parameters, weightDecay, lrScale});
  return *this;
}

GraphConfig &GraphConfig::clip_grad_norm(double maxNorm) {
  clipNormChoice = maxNorm;
  return *this;
}

GraphConfig &GraphConfig::activation_checkpointing(bool enabled) {
  recompute = enabled;
  return *this;
}

GraphConfig &GraphConfig::optimizer(const SGD &sgd) {
  optimizerChoice = OptimizerSpec{
      OptimizerSpec::Kind::sgd, sgd.lr,    0.0, {0.9, 0.999}, 1e-8,
      sgd.weightDecay,          Schedule{}};
  return *this;
}

GraphConfig &GraphConfig::optimizer(const Momentum &momentum) {
  optimizerChoice = OptimizerSpec{OptimizerSpec::Kind::momentum,
                                  momentum.lr,
                                  momentum.momentum,
                                  {0.9, 0.999},
                                  1e-8,
                                  momentum.weightDecay,
                                  Schedule{}};
  return *this;
}

GraphConfig &GraphConfig::optimizer(const Adam &adam) {
  optimizerChoice = OptimizerSpec{
      OptimizerSpec::Kind::adam, adam.lr,   0.0, adam.betas, adam.eps,
      adam.weightDecay,          Schedule{}};
  return *this;
}

GraphConfig &GraphConfig::optimizer(const AdamW &adamw) {
  optimizerChoice = OptimizerSpec{
      OptimizerSpec::Kind::adamw, adamw.lr,  0.0, adamw.betas, adamw.eps,
      adamw.weightDecay,          Schedule{}};
  return *this;
}

GraphConfig &GraphConfig::enable_zero(bool enabled, int zeroStage) {
  zeroOn = enabled;
  stage = zeroStage;
  return *this;
}

GraphConfig &GraphConfig::mesh(int64_t nodes, int64_t ranksPerNode) {
  meshExtents = {nodes, ranksPerNode};
  return *this;
}

GraphConfig &GraphConfig::set_gradient_accumulation_steps(int steps) {
  accumulateSteps = steps;
  return *this;
}

GraphConfig &GraphConfig::offload(Offload what) {
  offloadWhat = what;
  return *this;
}

GraphConfig &GraphConfig::device_memory_budget(int64_t bytes) {
  budgetBytes = bytes;
  return *this;
}

const char *GraphConfig::offloadName() const {
  // The generated spellings are string literals, so null-terminated.
  return stringifyOffloadPlacement(offloadWhat).data();
}

GraphConfig &GraphConfig::precision(DType dtype) {
  precisionChoice = dtype;
  return *this;
}

GraphConfig &GraphConfig::loss_scaling(const LossScaling &scaling) {
  lossScalingChoice = scaling;
  return *this;
}

absl::Status GraphConfig::validate() const {
  if (!isFloat(precisionChoice))
    return absl::InvalidArgumentError(
        absl::StrCat("precision: must be a float type (f32, bf16 or f16), "
                     "got ",
                     dtypeName(precisionChoice)));
  if (zeroOn && !zero::isZeroStage(stage, /*plainAllowed=*/false))
    return absl::InvalidArgumentError(
        absl::StrCat("enable_zero: ", zero::zeroStageRangeError(stage, false),
                     " (enable_zero(false) trains plain data parallel)"));
  if (accumulateSteps < 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "set_gradient_accumulation_steps: must be at least 1, got ",
        accumulateSteps));
  if (budgetBytes < 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "device_memory_budget: must be a number of bytes (0 for none), got ",
        budgetBytes));
  if (offloadWhat == Offload::automatic && budgetBytes == 0)
    return absl::InvalidArgumentError(
        "offload(Offload::automatic): needs a device_memory_budget to fit");
  OptimizerSpec o = optimizerSpec();
  if (!(o.lr > 0))
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer: the learning rate must be positive, got ", o.lr));
  if (o.weightDecay < 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer: weight decay must not be negative, got ", o.weightDecay));
  bool adamLike = o.kind == OptimizerSpec::Kind::adam ||
                  o.kind == OptimizerSpec::Kind::adamw;
  if (adamLike && !(o.betas.first >= 0 && o.betas.first < 1 &&
                    o.betas.second >= 0 && o.betas.second < 1))
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer: betas must lie in [0, 1), got (",
                     o.betas.first, ", ", o.betas.second, ")"));
  if (adamLike && !(o.eps > 0))
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer: eps must be positive, got ", o.eps));
  // Infinity is PyTorch's way to measure the norm without clipping:
  // clip_grad_norm_(parameters, float("inf")) multiplies by
  // min(1, inf / (norm + 1e-6)), 1 for a finite norm and NaN for an
  // infinite or NaN one, as the kernels do.
  if (clipNormChoice && !(*clipNormChoice > 0))
    return absl::InvalidArgumentError(absl::StrCat(
        "clip_grad_norm: the maximum gradient norm must be positive (or "
        "infinity, to measure the norm without clipping, as PyTorch's "
        "clip_grad_norm_(parameters, float(\"inf\"))), got ",
        *clipNormChoice));
  if (LossScaling scaling = lossScaling(); scaling.enabled) {
    if (!(scaling.initialScale >= 1 && std::isfinite(scaling.initialScale)))
      return absl::InvalidArgumentError(absl::StrCat(
          "loss_scaling: the initial scale must be a finite number >= 1, got ",
          scaling.initialScale));
    if (scaling.growthInterval < 1 ||
        scaling.growthInterval > (int64_t{1} << 24))
      return absl::InvalidArgumentError(
          absl::StrCat("loss_scaling: the growth interval must be in [1, "
                       "2^24] steps, got ",
                       scaling.growthInterval));
  }
  const Schedule &schedule = o.schedule;
  if (schedule.warmup < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer schedule: warmup must not be negative, got ",
                     schedule.warmup));
  if (schedule.kind != Schedule::Kind::constant) {
    if (schedule.total <= schedule.warmup)
      return absl::InvalidArgumentError(absl::StrCat(
          "optimizer schedule: the decay must end after the warmup (total > "
          "warmup), got total ",
          schedule.total, " and warmup ", schedule.warmup));
    if (!(schedule.minLr >= 0 && schedule.minLr <= o.lr))
      return absl::InvalidArgumentError(
          absl::StrCat("optimizer schedule: minLr must lie in [0, lr] = [0, ",
                       o.lr, "], got ", schedule.minLr));
  }
  if (!meshExtents.empty() && (meshExtents[0] < 1 || meshExtents[1] < 1))
    return absl::InvalidArgumentError(
        absl::StrCat("mesh: nodes and ranks per node must be at least 1, got ",
                     meshExtents[0], " x ", meshExtents[1]));
  std::set<std::string> groupNames;
  for (const ParameterGroup &group : groups) {
    bool identifier = !group.name.empty();
    for (char c : group.name)
      identifier &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (!identifier)
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter_group: the name '", group.name,
          "' must be letters, digits and '_' (it names the group's "
          "optimizer, @<kind>.<name>)"));
    if (group.name == "default")
      return absl::InvalidArgumentError(
          "parameter_group: the name 'default' is reserved for the "
          "parameters in no group (Trainer::learningRates)");
    if (!groupNames.insert(group.name).second)
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter_group: two groups are named '", group.name, "'"));
    if (!(group.lrScale > 0 && std::isfinite(group.lrScale)))
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter_group '", group.name,
          "': the learning-rate scale must be a positive finite number, got ",
          group.lrScale));
    if (group.weightDecay &&
        !(*group.weightDecay >= 0 && std::isfinite(*group.weightDecay)))
      return absl::InvalidArgumentError(
          absl::StrCat("parameter_group '", group.name,
                       "': weight decay must be a finite number >= 0, got ",
                       *group.weightDecay));
  }
  // The ZeRO options' rules are the pipeline's (PipelineOptions.h), worded
  // for the builder.
  if (std::optional<std::string> error =
          findZeroOptionsError(pipelineOptionsOf(*this, /*ranks=*/0),
                               !meshExtents.empty(), OptionSpelling::builder()))
    return absl::InvalidArgumentError(absl::StrCat("zero options: ", *error));
  return absl::OkStatus();
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

Graph::Graph(std::string name) : state(std::make_unique<GraphState>()) {
  state->name = std::move(name);
}

Graph::~Graph() = default;
Graph::Graph(Graph &&) noexcept = default;
Graph &Graph::operator=(Graph &&) noexcept = default;

const std::string &Graph::name() const { return state->name; }

std::vector<Parameter> Graph::parameters() const {
  std::vector<Parameter> all;
  for (size_t index = 0; index < state->parameters.size(); ++index)
    all.push_back(state->parameterHandle(static_cast<int>(index)));
  return all;
}
GraphConfig &Graph::config() { return state->config; }
const GraphConfig &Graph::config() const { return state->config; }
absl::Status Graph::status() const { return state->firstError; }
int64_t Graph::failures() const {
  return static_cast<int64_t>(state->errors.size());
}
absl::Status Graph::error(int64_t index) const {
  if (index < 0 || index >= failures())
    return absl::OutOfRangeError(
        absl::StrCat("graph '", state->name, "' has ", failures(),
                     " errors, not one numbered ", index));
  return state->errors[index];
}

absl::Status zero::frontend::buildStatus(const Tensor &tensor) {
  GraphState *state = GraphState::of(tensor);
  return state ? state->lastError : absl::OkStatus();
}

/// Whether `name` is taken by an input or a parameter.
static bool nameTaken(const GraphState &state, const std::string &name) {
  return std::any_of(state.inputs.begin(), state.inputs.end(),
                     [&](const InputDecl &d) { return d.name == name; }) ||
         std::any_of(state.parameters.begin(), state.parameters.end(),
                     [&](const ParameterDecl &d) { return d.name == name; });
}

static bool validShape(const Shape &shape) {
  return std::all_of(shape.begin(), shape.end(),
                     [](int64_t extent) { return extent > 0; });
}

Tensor Graph::input(const std::string &name, const Shape &shape, DType dtype) {
  if (name.empty() || nameTaken(*state, name))
    return state->fail(
        absl::StrCat("input: the name '", name, "' is empty or already taken"));
  if (shape.empty() || !validShape(shape))
    return state->fail(
        absl::StrCat("input '", name,
                     "': needs a batch dimension and positive extents, got ",
                     shapeText(shape)));
  Node node;
  node.kind = Node::Kind::input;
  node.index = static_cast<int>(state->inputs.size());
  node.shape = shape;
  node.dtype = state->declaredType(dtype);
  Tensor value = state->add(std::move(node));
  state->inputs.push_back({name, GraphState::idOf(value)});
  return value;
}

Parameter Graph::parameter(const std::string &name, const Shape &shape,
                           const Init &init, DType dtype) {
  if (name.empty() || nameTaken(*state, name)) {
    state->fail(absl::StrCat("parameter: the name '", name,
                             "' is empty or already taken"));
    return Parameter();
  }
  if (!validShape(shape) || !isFloat(dtype)) {
    state->fail(absl::StrCat("parameter '", name,
                             "': needs positive extents and a float type, got ",
                             shapeText(shape), " ", dtypeName(dtype)));
    return Parameter();
  }
  dtype = state->declaredType(dtype);
  // `shape` may be another tensor's shape() (a reference into the node list
  // that add() may reallocate): copy it before adding.
  Shape declared = shape;
  Node node;
  node.kind = Node::Kind::parameter;
  node.index = static_cast<int>(state->parameters.size());
  node.shape = declared;
  node.dtype = dtype;
  Tensor value = state->add(std::move(node));
  state->parameters.push_back({name, std::move(declared), dtype, init,
                               /*trainable=*/true, GraphState::idOf(value)});
  return state->parameterHandle(static_cast<int>(state->parameters.size()) - 1);
}

Tensor Graph::full(const Shape &shape, double value, DType dtype,
                   bool exactType) {
  if (!std::all_of(shape.begin(), shape.end(),
                   [](int64_t extent) { return extent >= 0; }))
    return state->fail(
        absl::StrCat("full: needs extents >= 0, got ", shapeText(shape)));
  if (!isFloat(dtype) && std::trunc(value) != value)
    return state->fail(absl::StrCat("full: ", value, " is not a ",
                                    dtypeName(dtype), " value"));
  return state->constant(shape, value,
                         exactType ? dtype : state->declaredType(dtype));
}

void Graph::output(const std::string &name, const Tensor &value) {
  std::string what = absl::StrCat("output '", name, "'");
  if (!value.valid()) {
    state->fail(absl::StrCat(what, ": the value is not a valid tensor"));
    return;
  }
  if (GraphState::of(value) != state.get()) {
    state->fail(absl::StrCat(what, ": the value belongs to another graph"));
    return;
  }
  if (name.empty() ||
      std::any_of(state->outputs.begin(), state->outputs.end(),
                  [&](const auto &output) { return output.first == name; })) {
    state->fail(absl::StrCat("output: the name '", name,
                             "' is empty or already taken"));
    return;
  }
  int node = GraphState::idOf(value);
  bool scalar = value.rank() == 0;
  if (scalar && !isFloat(value.dtype())) {
    state->fail(absl::StrCat(what,
                             ": a scalar output is averaged over the "
                             "ranks and must be a float, got ",
                             describe(value)));
    return;
  }
  if (!scalar) {
    // The rows of the batch: what each rank computes on its slice.
    int64_t batch = state->inputs.empty()
                        ? -1
                        : state->nodes[state->inputs.front().node].shape[0];
    std::vector<bool> reached(state->nodes.size(), false);
    reached[node] = true;
    bool readsInput = false;
    for (size_t index = state->nodes.size(); index-- > 0;) {
      if (!reached[index])
        continue;
      readsInput |= state->nodes[index].kind == Node::Kind::input;
      for (int operand : state->nodes[index].operands)
        reached[operand] = true;
    }
    if (value.shape()[0] != batch || !readsInput) {
      state->fail(absl::StrCat(
          what, ": ", describe(value),
          " is not batch-major: an output is a float scalar or a tensor whose "
          "dimension 0 is the batch (",
          batch,
          " rows) computed from the inputs; parameters are read from the "
          "trained state (Trainer::gatherState, state_dict() in Python)"));
      return;
    }
  }
  state->outputs.emplace_back(name, node);
}

std::vector<std::string> Graph::outputNames() const {
  std::vector<std::string> names;
  for (const auto &output : state->outputs)
    names.push_back(output.first);
  return names;
}

void GraphState::openRecompute(RecomputePolicy policy) {
  ++recomputeDepth;
  if (policy == RecomputePolicy::exceptMatmuls)
    ++keepMatmulsDepth;
  if (policy == RecomputePolicy::everyOtherMatmul) {
    // torchtitan counts the matmuls of each checkpointed block afresh.
    ++alternateMatmulsDepth;
    matmulsInScope = 0;
  }
}

void GraphState::closeRecompute(RecomputePolicy policy) {
  --recomputeDepth;
  if (policy == RecomputePolicy::exceptMatmuls)
    --keepMatmulsDepth;
  if (policy == RecomputePolicy::everyOtherMatmul)
    --alternateMatmulsDepth;
}

Tensor GraphState::constant(const Shape &shape, double value, DType dtype) {
  Node node;
  node.opName = "arith.constant";
  node.shape = shape;
  node.dtype = dtype;
  node.splatValue = value;
  return add(std::move(node));
}

RecomputeScope::RecomputeScope(Graph &graph, RecomputePolicy policy)
    : state(&graph.internals()), policy(policy) {
  state->openRecompute(policy);
}

RecomputeScope::~RecomputeScope() { state->closeRecompute(policy); }

void Graph::minimize(const Tensor &loss) {
  if (!loss.valid()) {
    state->fail("minimize: the loss is not a valid tensor");
    return;
  }
  if (GraphState::of(loss) != state.get()) {
    state->fail("minimize: the loss belongs to another graph");
    return;
  }
  if (loss.rank() != 0 || loss.dtype() != DType::f32) {
    state->fail(absl::StrCat(
        "minimize: the loss must be a scalar f32, got ", describe(loss),
        "; reduce it first (e.g. reduceMean over every dimension)"));
    return;
  }
  if (state->lossNode >= 0) {
    state->fail("minimize: called twice; a step minimizes one loss");
    return;
  }
  state->lossNode = GraphState::idOf(loss);
}
