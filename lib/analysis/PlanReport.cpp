//===- PlanReport.cpp - What every rank holds and sends -------------------===//

#include "zero/analysis/PlanReport.h"

#include "zero/analysis/GatheredParameters.h"
#include "zero/analysis/TrainingStep.h"
#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/dist/DistOps.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/support/ShardLayout.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <functional>
#include <numeric>

using namespace mlir;

namespace zero {
namespace {

int64_t bytesOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !tensor.getElementType().isIntOrFloat())
    return 0;
  return getTensorBytes(tensor);
}

/// Positions and last uses of the values in one block; uses inside nested
/// regions count at their ancestor in the block.
struct BlockLiveness {
  explicit BlockLiveness(Block &block) {
    for (auto [index, op] : llvm::enumerate(block))
      position[&op] = index;
    for (Operation &op : block) {
      int64_t at = position[&op];
      op.walk([&](Operation *nested) {
        for (Value operand : nested->getOperands()) {
          auto [it, inserted] = lastUse.try_emplace(operand, at);
          if (!inserted)
            it->second = std::max(it->second, at);
        }
      });
    }
  }
  DenseMap<Operation *, int64_t> position;
  DenseMap<Value, int64_t> lastUse;
};

/// The largest sum of live transient tensors in `function`'s body. Loads
/// alias persistent state and are not transient.
int64_t computePeakTransient(func::FuncOp function) {
  Block &block = function.front();
  BlockLiveness liveness(block);
  std::vector<int64_t> dying(block.getOperations().size() + 1, 0);
  int64_t live = 0;
  for (BlockArgument arg : block.getArguments()) {
    auto use = liveness.lastUse.find(arg);
    if (use == liveness.lastUse.end())
      continue;
    live += bytesOf(arg.getType());
    dying[use->second] += bytesOf(arg.getType());
  }
  int64_t peak = live;
  for (auto [index, op] : llvm::enumerate(block)) {
    int64_t created = 0;
    if (!isa<train::LoadOp>(op))
      for (Value result : op.getResults()) {
        int64_t bytes = bytesOf(result.getType());
        created += bytes;
        auto use = liveness.lastUse.find(result);
        dying[use == liveness.lastUse.end() ? index : use->second] += bytes;
      }
    peak = std::max(peak, live + created);
    live += created - dying[index];
  }
  return peak;
}

/// One value a gradient passes through on its way to the optimizer, and the
/// bytes of it that belong to this gradient (a bucket holds several).
struct GradientStage {
  Value value;
  int64_t bytes;
};

/// Walks back from the gradient an update consumes through the collectives,
/// buckets and reshapes that carried it, to the op that produced it.
SmallVector<GradientStage> traceGradient(Value grad) {
  SmallVector<GradientStage> stages;
  Value value = grad;
  int64_t bytes = bytesOf(grad.getType());
  std::optional<unsigned> member;
  while (value) {
    stages.push_back({value, bytes});
    Operation *def = value.getDefiningOp();
    if (!def)
      break;
    Value next;
    if (auto unpack = dyn_cast<dist::UnpackOp>(def)) {
      member = cast<OpResult>(value).getResultNumber();
      next = unpack.getInput();
    } else if (auto pack = dyn_cast<dist::PackOp>(def)) {
      if (!member)
        break;
      next = pack.getInputs()[*member];
      member.reset();
      bytes = bytesOf(next.getType());
    } else if (isa<dist::AllReduceOp, dist::ReduceScatterOp>(def)) {
      next = def->getOperand(0);
      auto pack = next.getDefiningOp<dist::PackOp>();
      if (member && pack)
        bytes = bytesOf(pack.getInputs()[*member].getType());
      else if (!member)
        bytes = bytesOf(next.getType());
    } else if (isa<train::ClipByGlobalNormOp, train::ScaleByNormOp>(def)) {
      // Clipping maps gradient i to result i.
      next = def->getOperand(cast<OpResult>(value).getResultNumber());
    } else if (isa<train::ReshapeOp, train::ScaleOp>(def)) {
      next = def->getOperand(0);
      bytes = bytesOf(next.getType());
    }
    value = next;
  }
  return stages;
}

ByteCount persistentCount(train::ParamOp state, int64_t ranks) {
  ByteCount count;
  count.bytes = state.getLocalBytes();
  if (state.isSharded())
    count.padding = static_cast<double>(state.getLocalBytes()) -
                    static_cast<double>(state.getLogicalBytes()) / ranks;
  return count;
}

/// Gradient bytes held when the backward ends. Whether a gradient is held
/// full-size or as a shard depends on where its reduction runs: stage 2
/// reduces each gradient as soon as it is produced, stage 1 only after the
/// whole backward. So the end of the backward is taken after the reduction
/// chains that immediately follow their gradients when every gradient is
/// reduced eagerly, and right after the last gradient is produced otherwise.
ByteCount measureHeldGradients(func::FuncOp step, int64_t ranks,
                               SymbolTableCollection &symbols) {
  ByteCount count;
  Block &block = step.front();
  SmallVector<Operation *> updates;
  step.walk([&](Operation *op) {
    if (isUpdateOp(op))
      updates.push_back(op);
  });
  if (updates.empty())
    return count;
  BlockLiveness liveness(block);
  auto positionOf = [&](Value value) -> int64_t {
    Operation *def = value.getDefiningOp();
    if (!def)
      return -1;
    Operation *anchor = block.findAncestorOpInBlock(*def);
    return anchor ? liveness.position.lookup(anchor) : -1;
  };

  struct Gradient {
    SmallVector<GradientStage> stages;
    int64_t logicalBytes;
    int64_t produced;
    int64_t firstReduction;
    int64_t immediateEnd;
  };
  SmallVector<Gradient> gradients;
  int64_t lastProduced = -1;
  for (Operation *update : updates) {
    UpdateView view(update);
    Gradient gradient;
    gradient.stages = traceGradient(view.getGrad());
    gradient.logicalBytes = 0;
    for (const GradientStage &stage : gradient.stages)
      gradient.logicalBytes = std::max(gradient.logicalBytes, stage.bytes);
    if (train::ParamOp state = getLoadedState(view.getParam(), symbols)) {
      auto gradType = cast<RankedTensorType>(view.getGrad().getType());
      gradient.logicalBytes = state.getLogicalTensorType().getNumElements() *
                              getElementBytes(gradType.getElementType());
    }
    gradient.produced = positionOf(gradient.stages.back().value);
    DenseSet<int64_t> chainPositions;
    gradient.firstReduction = std::numeric_limits<int64_t>::max();
    for (const GradientStage &stage : ArrayRef(gradient.stages).drop_back()) {
      int64_t at = positionOf(stage.value);
      chainPositions.insert(at);
      gradient.firstReduction = std::min(gradient.firstReduction, at);
    }
    gradient.immediateEnd = gradient.produced;
    while (chainPositions.contains(gradient.immediateEnd + 1))
      ++gradient.immediateEnd;
    lastProduced = std::max(lastProduced, gradient.produced);
    gradients.push_back(std::move(gradient));
  }

  bool eager = true;
  int64_t point = lastProduced;
  for (const Gradient &gradient : gradients) {
    bool reducedEarly = gradient.stages.size() == 1 ||
                        gradient.immediateEnd > gradient.produced ||
                        gradient.firstReduction < lastProduced;
    eager &= reducedEarly;
    point = std::max(point, gradient.immediateEnd);
  }
  if (!eager)
    point = lastProduced;

  for (const Gradient &gradient : gradients)
    for (const GradientStage &stage : gradient.stages) {
      // Held across the end of the backward: defined by then, used after.
      int64_t defined = positionOf(stage.value);
      auto use = liveness.lastUse.find(stage.value);
      if (defined > point || use == liveness.lastUse.end() ||
          use->second <= point)
        continue;
      count.bytes += stage.bytes;
      if (stage.bytes < gradient.logicalBytes)
        count.padding +=
            stage.bytes - static_cast<double>(gradient.logicalBytes) / ranks;
    }
  return count;
}

void addTraffic(PlanReport &report, Operation *op, int64_t repeat) {
  if (!isa<dist::CollectiveOpInterface>(op) || isa<dist::SliceOp>(op))
    return;
  StringRef kind = op->getName().stripDialect();
  kind.consume_back("_start");
  Value input = op->getOperand(0);
  int64_t axis = 0;
  if (auto attr = op->getAttrOfType<IntegerAttr>("axis"))
    axis = attr.getInt();
  int64_t ranks = dist::getGroupSize(op, axis);
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t elements = inputType.getNumElements();
  if (kind == "reduce_scatter")
    elements =
        cast<RankedTensorType>(op->getResult(0).getType()).getNumElements() *
        ranks;
  else if (kind == "all_gather")
    elements *= ranks;
  int64_t bytes = elements * getElementBytes(inputType.getElementType());
  int64_t factor = kind == "all_reduce" ? 2 : 1;
  for (TrafficCount *count :
       {&report.traffic[kind.str()], &report.axisTraffic[axis][kind.str()]}) {
    count->count += repeat;
    count->elements += elements * repeat;
    count->bytes += bytes * repeat;
    count->volumeElements += factor * elements * repeat;
    count->sentBytesPerRank +=
        repeat * factor * static_cast<double>(bytes) * (ranks - 1) / ranks;
  }
}

/// How zero-shard used a mesh (dist.mesh_scheme), empty on one axis.
StringRef getMeshScheme(ModuleOp module) {
  auto scheme = module->getAttrOfType<StringAttr>(
      dist::DistDialect::getMeshSchemeAttrName());
  return scheme ? scheme.getValue() : StringRef();
}

/// The ranks a sharded tensor is cut over: all of them on one axis and
/// under full 2-D sharding, a node's under hybrid sharding.
int64_t getShardRanks(ModuleOp module, ArrayRef<int64_t> grid) {
  StringRef scheme = getMeshScheme(module);
  if (grid.size() > 1 && (scheme == "full" || scheme == "hpz"))
    return std::accumulate(grid.begin(), grid.end(), int64_t{1},
                           std::multiplies<int64_t>());
  return grid.back();
}

/// The formula on `grid`: one axis of N ranks, or a mesh [R, S]. Hybrid
/// sharding shards within a node (N is S in the memory formula) and the
/// shards' average across nodes adds 2Ψ/S to the volume; full 2-D sharding
/// shards over all R * S ranks and moves Ψ/S across nodes for each of the
/// reduce-scatter and the gathers (hpZ: the forward's gather only).
ZeroFormula computeFormula(ModuleOp module, int64_t stage,
                           ArrayRef<int64_t> grid) {
  ZeroFormula formula;
  formula.stage = stage;
  int64_t ranks = getShardRanks(module, grid);
  int64_t axes = static_cast<int64_t>(grid.size());
  formula.ranks = ranks;
  formula.meshScheme = getMeshScheme(module).str();
  // G is the gradient's bytes: the parameter's type (f32 where the module
  // averages gradients in f32, dist.reduce_type), or with accumulation the
  // persistent accumulator's (f32 for a 16-bit parameter).
  double params = 0, grads = 0, accumulators = 0, optimizer = 0;
  bool accumulates = false;
  bool reducesInF32 =
      module->hasAttr(dist::DistDialect::getReduceTypeAttrName());
  for (auto state : module.getOps<train::ParamOp>()) {
    RankedTensorType logical = state.getLogicalTensorType();
    switch (state.getRole()) {
    case train::Role::param:
      formula.trainableElements += logical.getNumElements();
      params += state.getLogicalBytes();
      grads +=
          reducesInF32 ? 4 * logical.getNumElements() : state.getLogicalBytes();
      break;
    case train::Role::frozen:
      formula.frozenElements += logical.getNumElements();
      formula.frozenBytes += state.getLogicalBytes();
      break;
    case train::Role::slot:
    case train::Role::master:
      optimizer += state.getLogicalBytes();
      break;
    case train::Role::grad_accum:
      accumulates = true;
      accumulators += state.getLogicalBytes();
      break;
    // Eight replicated bytes, whatever the model: not part of the formula.
    case train::Role::scaler:
      break;
    }
  }
  if (accumulates)
    grads = accumulators;
  double psi = std::max<int64_t>(formula.trainableElements, 1);
  formula.paramBytesPerElement = params / psi;
  formula.gradBytesPerElement = grads / psi;
  formula.optimizerBytesPerElement = optimizer / psi;
  double frozen = formula.frozenBytes;
  double n = ranks;
  switch (stage) {
  case 1:
    formula.modelStateBytes = params + frozen + grads + optimizer / n;
    break;
  case 2:
    formula.modelStateBytes = params + frozen + (grads + optimizer) / n;
    break;
  case 3:
    formula.modelStateBytes = (params + frozen + grads + optimizer) / n;
    break;
  default:
    formula.modelStateBytes = params + frozen + grads + optimizer;
    break;
  }
  // Every axis of a mesh carries the whole volume of plain data
  // parallelism (each gradient is averaged within the node, then across);
  // hybrid sharding moves the ZeRO volume within the node and averages
  // only the shards (2Ψ/S) across nodes.
  double psiElements = static_cast<double>(formula.trainableElements);
  if (stage < 0)
    formula.trafficElements = 0;
  else if (stage == 0)
    formula.trafficElements = 2.0 * psiElements * axes;
  else {
    if (axes > 1)
      formula.acrossNodesShards =
          stage == 3 && formula.meshScheme == "full" ? 3 : 2;
    formula.trafficElements = (stage == 3 ? 3.0 : 2.0) * psiElements +
                              formula.acrossNodesShards * psiElements /
                                  static_cast<double>(grid.back());
  }
  return formula;
}

/// QuantizationPlan::acrossNodesBytes and its full-precision twin: the
/// layouts ShardCut gives the gathers (qwZ) and reductions (qgZ) across
/// nodes under hpZ, from each sharded parameter's shard: gathered across
/// nodes once per step (the backward gathers from the secondary shard) and
/// its gradient reduced once.
void computeAcrossNodesBytes(ModuleOp module, int64_t nodes,
                             QuantizationPlan &plan) {
  int64_t quantized = 0, unquantized = 0;
  for (auto state : module.getOps<train::ParamOp>()) {
    train::Role role = state.getRole();
    if (!state.isSharded() ||
        (role != train::Role::param && role != train::Role::frozen))
      continue;
    int64_t shard = state.getLocalTensorType().getNumElements();
    int64_t whole = nodes * state.getLocalBytes();
    // A piece below min_elements crosses in full precision either way.
    bool coded = shard >= plan.minElements;
    auto codes = [&](bool quantizes, int64_t bits) {
      if (!quantizes || !coded)
        return whole;
      return nodes * (quantizedSegmentBytes(shard, bits) +
                      4 * ceilDiv(shard, plan.block));
    };
    // Frozen parameters are gathered, never reduced.
    int64_t reductions = role == train::Role::param ? 1 : 0;
    quantized += codes(plan.weights, plan.weightBits) +
                 reductions * codes(plan.gradients, plan.gradientBits);
    unquantized += (1 + reductions) * whole;
  }
  plan.acrossNodesBytes = quantized;
  plan.acrossNodesBytesUnquantized = unquantized;
}

} // namespace

std::optional<QuantizationPlan> getQuantizationPlan(ModuleOp module) {
  auto entries = module->getAttrOfType<DictionaryAttr>(
      dist::DistDialect::getQuantizationAttrName());
  if (!entries)
    return std::nullopt;
  QuantizationPlan plan;
  auto flag = [&](StringRef name) {
    auto value = entries.getAs<BoolAttr>(name);
    return value && value.getValue();
  };
  plan.weights = flag("weights");
  plan.gradients = flag("gradients");
  if (auto block = entries.getAs<IntegerAttr>("block"))
    plan.block = block.getInt();
  if (auto least = entries.getAs<IntegerAttr>("min_elements"))
    plan.minElements = least.getInt();
  if (auto bits = entries.getAs<IntegerAttr>("weight_bits"))
    plan.weightBits = bits.getInt();
  if (auto bits = entries.getAs<IntegerAttr>("gradient_bits"))
    plan.gradientBits = bits.getInt();
  if (auto names = entries.getAs<ArrayAttr>("full_precision"))
    for (auto name : names.getAsRange<StringAttr>())
      plan.fullPrecision.push_back(name.str());
  return plan;
}

std::vector<OptimizerGroup> computeOptimizerGroups(ModuleOp module) {
  std::vector<OptimizerGroup> groups;
  llvm::StringMap<size_t> index;
  for (auto optimizer : module.getOps<train::OptimizerOp>()) {
    OptimizerGroup group;
    group.optimizer = optimizer.getSymName().str();
    group.kind = train::stringifyOptimizerKind(optimizer.getKind()).str();
    group.lr = optimizer.getLr().convertToDouble();
    if (auto decay = optimizer.getWeightDecay())
      group.weightDecay = decay->convertToDouble();
    index[group.optimizer] = groups.size();
    groups.push_back(group);
  }
  // The default optimizer is the one no parameter names, as train-autodiff
  // chooses it.
  llvm::StringSet<> named;
  for (auto param : module.getOps<train::ParamOp>())
    if (FlatSymbolRefAttr group = param.getOptimizerAttr())
      named.insert(group.getValue());
  SmallVector<size_t> unnamed;
  for (size_t i = 0; i < groups.size(); ++i)
    if (!named.contains(groups[i].optimizer))
      unnamed.push_back(i);
  std::optional<size_t> fallback;
  if (unnamed.size() == 1)
    fallback = unnamed.front();
  for (auto param : module.getOps<train::ParamOp>()) {
    if (param.getRole() != train::Role::param)
      continue;
    std::optional<size_t> at = fallback;
    if (FlatSymbolRefAttr group = param.getOptimizerAttr())
      if (auto it = index.find(group.getValue()); it != index.end())
        at = it->second;
    if (!at)
      continue;
    groups[*at].parameters += 1;
    groups[*at].elements += param.getLogicalTensorType().getNumElements();
  }
  return groups;
}

DropoutSummary summarizeDropout(Operation *root) {
  DropoutSummary summary;
  llvm::SmallDenseSet<int64_t> streams;
  root->walk([&](train::DropoutOp dropout) {
    streams.insert(dropout.getStream());
    double rate = dropout.getRate().convertToDouble();
    if (!llvm::is_contained(summary.rates, rate))
      summary.rates.push_back(rate);
  });
  summary.ops = static_cast<int64_t>(streams.size());
  llvm::sort(summary.rates);
  return summary;
}

FailureOr<PlanReport> computePlanReport(ModuleOp module) {
  SmallVector<func::FuncOp> functions = getStepFunctions(module);
  if (functions.empty())
    return mlir::emitError(module.getLoc())
           << "zero-report: no function is marked 'train.step'";
  PlanReport report;
  if (dist::PlacementAttr placement = dist::lookupPlacement(module)) {
    report.grid.assign(placement.getGrid().begin(), placement.getGrid().end());
    report.ranks = 1;
    for (int64_t extent : report.grid)
      report.ranks *= extent;
    llvm::raw_string_ostream os(report.placement);
    Attribute(placement).print(os);
  }
  if (auto stage = module->getAttrOfType<IntegerAttr>(
          dist::DistDialect::getZeroStageAttrName()))
    report.stage = stage.getInt();
  report.groups = computeOptimizerGroups(module);
  report.quantization = getQuantizationPlan(module);
  report.dropout = summarizeDropout(module);
  int64_t shardRanks = getShardRanks(module, report.grid);

  for (auto state : module.getOps<train::ParamOp>()) {
    ByteCount count = persistentCount(state, shardRanks);
    report.persistentBytes += count.bytes;
    switch (state.getRole()) {
    case train::Role::param:
    case train::Role::frozen:
      report.parameters += count;
      break;
    case train::Role::slot:
    // The loss scaler's state counts as optimizer state (replicated).
    case train::Role::scaler:
      report.slots += count;
      break;
    case train::Role::master:
      report.masters += count;
      break;
    case train::Role::grad_accum:
      report.gradients += count;
      break;
    }
  }

  SymbolTableCollection symbols;
  for (func::FuncOp function : functions) {
    int64_t repeat = 1;
    if (auto steps = function->getAttrOfType<IntegerAttr>(
            train::TrainDialect::getAccumulateStepsAttrName()))
      repeat = steps.getInt();
    else if (function->hasAttr(train::TrainDialect::getStepAttrName()))
      report.gradients += measureHeldGradients(function, shardRanks, symbols);
    if (function.isExternal())
      continue;
    int64_t peak = computePeakTransient(function);
    if (peak > report.peakTransientBytes || report.peakFunction.empty()) {
      report.peakTransientBytes = std::max(peak, report.peakTransientBytes);
      report.peakFunction = function.getSymName().str();
    }
    report.peakGatheredBytes =
        std::max(report.peakGatheredBytes, computePeakGatheredBytes(function));
    function.walk([&](Operation *op) { addTraffic(report, op, repeat); });
  }
  report.formula = computeFormula(module, report.stage, report.grid);
  // With hpZ every sharded parameter crosses nodes in exactly one gather
  // per step; without it, whether the backward gathers a parameter again
  // or keeps the forward's copy is zero-schedule's choice, which no
  // closed formula knows.
  if (report.quantization && report.stage == 3 && report.grid.size() == 2 &&
      report.formula.meshScheme == "hpz")
    computeAcrossNodesBytes(module, report.grid[0], *report.quantization);
  return report;
}

} // namespace zero
