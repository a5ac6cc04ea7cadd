//===- PlanReport.cpp - What every rank holds and sends -------------------===//

#include "zero/analysis/PlanReport.h"

#include "zero/analysis/GatheredParameters.h"
#include "zero/analysis/TrainingStep.h"
#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/dist/DistOps.h"
#include "zero/dialects/train/TrainDialect.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

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

/// The formula on `grid`: one axis of N ranks, or a mesh [R, S], where
/// stages 1-3 shard within a node (hybrid sharding: N is S in the memory
/// formula) and the shards' average across nodes adds 2Ψ/S to the volume.
ZeroFormula computeFormula(ModuleOp module, int64_t stage,
                           ArrayRef<int64_t> grid) {
  ZeroFormula formula;
  formula.stage = stage;
  int64_t ranks = grid.back();
  int64_t axes = static_cast<int64_t>(grid.size());
  formula.ranks = ranks;
  // G is the gradient's bytes: the parameter's type, or with accumulation
  // the persistent accumulator's (f32 for a 16-bit parameter).
  double params = 0, grads = 0, accumulators = 0, optimizer = 0;
  bool accumulates = false;
  for (auto state : module.getOps<train::ParamOp>()) {
    RankedTensorType logical = state.getLogicalTensorType();
    switch (state.getRole()) {
    case train::Role::param:
      formula.trainableElements += logical.getNumElements();
      params += state.getLogicalBytes();
      grads += state.getLogicalBytes();
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
  else
    formula.trafficElements =
        (stage == 3 ? 3.0 : 2.0) * psiElements +
        (axes > 1 ? 2.0 * psiElements / static_cast<double>(ranks) : 0.0);
  return formula;
}

} // namespace

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

  for (auto state : module.getOps<train::ParamOp>()) {
    ByteCount count = persistentCount(state, report.grid.back());
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
      report.gradients +=
          measureHeldGradients(function, report.grid.back(), symbols);
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
  return report;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

/// llvm::format takes pointers, not arrays.
static const char *cstr(const char *text) { return text; }

static void printRow(llvm::raw_ostream &os, StringRef name,
                     const ByteCount &count) {
  os << llvm::format("  %-18s %14lld B", name.str().c_str(),
                     static_cast<long long>(count.bytes));
  if (count.padding > 0.0)
    os << llvm::format("   (padding %.1f B)", count.padding);
  os << "\n";
}

static StringRef formulaText(int64_t stage) {
  switch (stage) {
  case 1:
    return "(P+G)Ψ + KΨ/N";
  case 2:
    return "PΨ + (G+K)Ψ/N";
  case 3:
    return "(P+G+K)Ψ/N";
  default:
    return "(P+G+K)Ψ";
  }
}

static void printTrainingPlan(const PlanReport &report, llvm::raw_ostream &os) {
  os << "ZeRO plan: ";
  if (report.stage < 0)
    os << "not data parallel";
  else
    os << "stage " << report.stage;
  os << ", " << report.ranks << " rank(s)";
  if (!report.placement.empty())
    os << " on " << report.placement;
  os << "\nPer rank (every rank holds the same):\n";
  printRow(os, "parameters", report.parameters);
  printRow(os, "gradients", report.gradients);
  printRow(os, "optimizer slots", report.slots);
  printRow(os, "master copies", report.masters);
  ByteCount state = report.modelState();
  printRow(os, "model state", state);
  os << llvm::format("  %-18s %14lld B   (in %s)\n", cstr("peak transient"),
                     static_cast<long long>(report.peakTransientBytes),
                     report.peakFunction.c_str());
  // Stage 3 only: the other stages gather no parameters for compute.
  if (report.stage == 3)
    os << llvm::format("  %-18s %14lld B   (gathered parameters alive at "
                       "once, within the peak transient)\n",
                       cstr("peak gathered"),
                       static_cast<long long>(report.peakGatheredBytes));
  os << llvm::format("  %-18s %14lld B\n", cstr("total"),
                     static_cast<long long>(report.persistentBytes +
                                            report.peakTransientBytes));

  if (report.groups.size() > 1) {
    os << "Parameter groups (each its own optimizer):\n";
    for (const OptimizerGroup &group : report.groups)
      os << llvm::format("  %-18s %6lld parameters %14lld elements   lr "
                         "%-10g weight decay %g\n",
                         ("@" + group.optimizer).c_str(),
                         static_cast<long long>(group.parameters),
                         static_cast<long long>(group.elements), group.lr,
                         group.weightDecay);
  }

  const ZeroFormula &f = report.formula;
  os << "Formula (P=" << llvm::format("%.3g", f.paramBytesPerElement)
     << ", G=" << llvm::format("%.3g", f.gradBytesPerElement)
     << ", K=" << llvm::format("%.3g", f.optimizerBytesPerElement)
     << ", Ψ=" << f.trainableElements
     << (report.grid.size() > 1 ? ", S=" : ", N=") << f.ranks;
  if (f.frozenElements)
    os << ", frozen " << f.frozenElements << " elements";
  os << "):\n";
  double unpadded = state.bytes - state.padding;
  os << llvm::format("  %-18s %16.1f B   ", cstr("model state"),
                     f.modelStateBytes)
     << formulaText(report.stage < 0 ? 0 : report.stage);
  if (f.frozenElements)
    os << (report.stage == 3 ? " + frozen/N" : " + frozen");
  double gap = unpadded - f.modelStateBytes;
  if (std::abs(gap) < 0.5)
    os << "; the plan matches it up to padding\n";
  else
    os << llvm::format("; the plan differs by %.1f B beyond padding\n", gap);

  os << "Per step traffic (ring: each rank sends (N-1)/N of the payload):\n";
  os << llvm::format("  %-16s %6s %14s %14s %16s\n", cstr("collective"),
                     cstr("count"), cstr("elements"), cstr("bytes"),
                     cstr("sent per rank"));
  int64_t volume = 0;
  for (const auto &[kind, count] : report.traffic) {
    os << llvm::format("  %-16s %6lld %14lld %14lld %14.1f B\n", kind.c_str(),
                       static_cast<long long>(count.count),
                       static_cast<long long>(count.elements),
                       static_cast<long long>(count.bytes),
                       count.sentBytesPerRank);
    volume += count.volumeElements;
  }
  if (report.stage < 0) {
    os << llvm::format("  %-16s %14lld elements (all-reduce counted twice); "
                       "no formula: the step is not data parallel\n",
                       cstr("volume"), static_cast<long long>(volume));
    return;
  }
  std::string formula = report.stage == 3 ? "3Ψ" : "2Ψ";
  if (report.grid.size() > 1)
    formula +=
        report.stage == 0
            ? " on each of the " + std::to_string(report.grid.size()) + " axes"
            : " within a node + 2Ψ/S across nodes";
  os << llvm::format("  %-16s %14lld elements (all-reduce counted twice); "
                     "formula %s = %.0f\n",
                     cstr("volume"), static_cast<long long>(volume),
                     formula.c_str(), f.trafficElements);
  if (report.grid.size() < 2)
    return;
  // The same collectives by the axis they run over: what each level of
  // the mesh carries.
  for (const auto &[axis, kinds] : report.axisTraffic) {
    TrafficCount total;
    for (const auto &entry : kinds) {
      total.count += entry.second.count;
      total.elements += entry.second.elements;
      total.bytes += entry.second.bytes;
      total.sentBytesPerRank += entry.second.sentBytesPerRank;
    }
    std::string name = "axis " + std::to_string(axis);
    os << llvm::format("  %-16s %6lld %14lld %14lld %14.1f B   (%lld ranks, "
                       "%s)\n",
                       name.c_str(), static_cast<long long>(total.count),
                       static_cast<long long>(total.elements),
                       static_cast<long long>(total.bytes),
                       total.sentBytesPerRank,
                       static_cast<long long>(report.grid[axis]),
                       cstr(axis == 0 ? "across nodes" : "within a node"));
  }
}

static llvm::json::Object toJson(const ByteCount &count) {
  return llvm::json::Object{{"bytes", count.bytes},
                            {"padding_bytes", count.padding}};
}

static llvm::json::Object
trafficToJson(const std::map<std::string, TrafficCount> &kinds) {
  llvm::json::Object traffic;
  for (const auto &[kind, count] : kinds)
    traffic[kind] =
        llvm::json::Object{{"count", count.count},
                           {"elements", count.elements},
                           {"bytes", count.bytes},
                           {"volume_elements", count.volumeElements},
                           {"sent_bytes_per_rank", count.sentBytesPerRank}};
  return traffic;
}

static llvm::json::Value trainingPlanToJson(const PlanReport &report) {
  llvm::json::Object traffic = trafficToJson(report.traffic);
  llvm::json::Array axes;
  for (size_t axis = 0; axis < report.grid.size(); ++axis) {
    auto found = report.axisTraffic.find(static_cast<int64_t>(axis));
    axes.push_back(
        llvm::json::Object{{"axis", static_cast<int64_t>(axis)},
                           {"ranks", report.grid[axis]},
                           {"traffic", found == report.axisTraffic.end()
                                           ? llvm::json::Object()
                                           : trafficToJson(found->second)}});
  }
  llvm::json::Array groups;
  for (const OptimizerGroup &group : report.groups)
    groups.push_back(llvm::json::Object{{"optimizer", group.optimizer},
                                        {"kind", group.kind},
                                        {"lr", group.lr},
                                        {"weight_decay", group.weightDecay},
                                        {"parameters", group.parameters},
                                        {"elements", group.elements}});
  const ZeroFormula &f = report.formula;
  ByteCount state = report.modelState();
  return llvm::json::Object{
      {"stage", report.stage},
      {"ranks", report.ranks},
      {"placement", report.placement},
      {"per_rank",
       llvm::json::Object{{"parameters", toJson(report.parameters)},
                          {"gradients", toJson(report.gradients)},
                          {"optimizer_slots", toJson(report.slots)},
                          {"master_copies", toJson(report.masters)},
                          {"model_state", toJson(state)},
                          {"persistent_bytes", report.persistentBytes},
                          {"peak_transient_bytes", report.peakTransientBytes},
                          {"peak_function", report.peakFunction},
                          {"peak_gathered_bytes", report.peakGatheredBytes},
                          {"total_bytes", report.persistentBytes +
                                              report.peakTransientBytes}}},
      {"traffic", std::move(traffic)},
      {"axes", std::move(axes)},
      {"parameter_groups", std::move(groups)},
      {"formula",
       llvm::json::Object{
           {"trainable_elements", f.trainableElements},
           {"frozen_elements", f.frozenElements},
           {"param_bytes_per_element", f.paramBytesPerElement},
           {"grad_bytes_per_element", f.gradBytesPerElement},
           {"optimizer_bytes_per_element", f.optimizerBytesPerElement},
           {"model_state_bytes", f.modelStateBytes},
           {"traffic_elements", f.trafficElements}}}};
}

//===----------------------------------------------------------------------===//
// The memory plan of a lowered program
//===----------------------------------------------------------------------===//

DictionaryAttr MemoryPlan::toAttr(MLIRContext *context) const {
  Builder builder(context);
  auto bytes = [&](int64_t value) { return builder.getI64IntegerAttr(value); };
  SmallVector<Attribute> lines;
  for (const std::string &line : decisions)
    lines.push_back(builder.getStringAttr(line));
  return builder.getDictionaryAttr(
      {builder.getNamedAttr("offload", builder.getStringAttr(offload)),
       builder.getNamedAttr("budget", bytes(budget)),
       builder.getNamedAttr("device_persistent", bytes(devicePersistent)),
       builder.getNamedAttr("device_arena", bytes(deviceArena)),
       builder.getNamedAttr("host_persistent", bytes(hostPersistent)),
       builder.getNamedAttr("host_arena", bytes(hostArena)),
       builder.getNamedAttr("host_link_bytes", bytes(hostLinkBytes)),
       builder.getNamedAttr("decisions", builder.getArrayAttr(lines))});
}

MemoryPlan MemoryPlan::fromAttr(DictionaryAttr attr) {
  MemoryPlan plan;
  auto bytes = [&](StringRef name) -> int64_t {
    auto value = attr.getAs<IntegerAttr>(name);
    return value ? value.getInt() : 0;
  };
  if (auto offload = attr.getAs<StringAttr>("offload"))
    plan.offload = offload.str();
  plan.budget = bytes("budget");
  plan.devicePersistent = bytes("device_persistent");
  plan.deviceArena = bytes("device_arena");
  plan.hostPersistent = bytes("host_persistent");
  plan.hostArena = bytes("host_arena");
  plan.hostLinkBytes = bytes("host_link_bytes");
  if (auto lines = attr.getAs<ArrayAttr>("decisions"))
    for (auto line : lines.getAsRange<StringAttr>())
      plan.decisions.push_back(line.str());
  return plan;
}

/// How much larger the planned arena is than the tensor-level peak transient
/// bytes (what the training plan counts): padding, buckets and collectives
/// in flight, and offsets that do not pack perfectly. 0 when there is none.
static double arenaOverTensorPeak(const MemoryPlan &plan,
                                  int64_t peakTransientBytes) {
  return peakTransientBytes > 0 ? static_cast<double>(plan.deviceArena) /
                                      static_cast<double>(peakTransientBytes)
                                : 0.0;
}

static void printMemoryPlan(const MemoryPlan &plan, int64_t peakTransientBytes,
                            llvm::raw_ostream &os) {
  os << "Memory plan of the lowered program (offload=" << plan.offload;
  if (plan.budget > 0)
    os << ", device budget " << plan.budget << " B";
  os << "):\n";
  auto row = [&](const char *name, int64_t value) {
    os << llvm::format("  %-18s %14lld B\n", name,
                       static_cast<long long>(value));
  };
  row("device persistent", plan.devicePersistent);
  row("device arena", plan.deviceArena);
  if (peakTransientBytes > 0)
    os << llvm::format("  %-18s %14.3f x the tensor-level peak transient\n",
                       static_cast<const char *>("arena / peak"),
                       arenaOverTensorPeak(plan, peakTransientBytes));
  row("device total", plan.deviceBytes());
  row("host persistent", plan.hostPersistent);
  row("host arena", plan.hostArena);
  row("host total", plan.hostBytes());
  row("host link / step", plan.hostLinkBytes);
  for (const std::string &line : plan.decisions)
    os << "  " << line << "\n";
}

void printPlanReport(const PlanReport &report, llvm::raw_ostream &os) {
  printTrainingPlan(report, os);
  if (report.memory)
    printMemoryPlan(*report.memory, report.peakTransientBytes, os);
  if (report.prediction)
    printPrediction(*report.prediction, os);
}

llvm::json::Object memoryPlanToJson(const MemoryPlan &plan) {
  llvm::json::Array decisions;
  for (const std::string &line : plan.decisions)
    decisions.push_back(line);
  return llvm::json::Object{{"offload", plan.offload},
                            {"device_budget_bytes", plan.budget},
                            {"device_persistent_bytes", plan.devicePersistent},
                            {"device_arena_bytes", plan.deviceArena},
                            {"device_bytes", plan.deviceBytes()},
                            {"host_persistent_bytes", plan.hostPersistent},
                            {"host_arena_bytes", plan.hostArena},
                            {"host_bytes", plan.hostBytes()},
                            {"host_link_bytes_per_step", plan.hostLinkBytes},
                            {"decisions", std::move(decisions)}};
}

llvm::json::Value planReportToJson(const PlanReport &report) {
  llvm::json::Value value = trainingPlanToJson(report);
  if (report.memory) {
    llvm::json::Object plan = memoryPlanToJson(*report.memory);
    plan["arena_over_tensor_peak"] =
        arenaOverTensorPeak(*report.memory, report.peakTransientBytes);
    (*value.getAsObject())["memory_plan"] = std::move(plan);
  }
  if (report.prediction)
    (*value.getAsObject())["prediction"] = predictionToJson(*report.prediction);
  return value;
}

LogicalResult writePlanReport(const PlanReport &report, StringRef format,
                              StringRef output, Location loc) {
  if (format == "timeline") {
    if (!report.prediction)
      return mlir::emitError(loc)
             << "zero-report: a timeline is the predicted step: it needs "
                "machine=";
    return writePrediction(*report.prediction, format, output, loc);
  }
  return writeReportOutput(output, loc, [&](llvm::raw_ostream &os) {
    if (format == "json")
      os << llvm::formatv("{0:2}", planReportToJson(report)) << "\n";
    else
      printPlanReport(report, os);
  });
}

LogicalResult
writeReportOutput(StringRef output, Location loc,
                  llvm::function_ref<void(llvm::raw_ostream &)> write) {
  if (output == "-") {
    write(llvm::errs());
    llvm::errs().flush();
    return success();
  }
  std::error_code error;
  llvm::raw_fd_ostream file(output, error, llvm::sys::fs::OF_Text);
  if (error)
    return mlir::emitError(loc) << "zero-report: cannot write '" << output
                                << "': " << error.message();
  write(file);
  file.flush();
  return success();
}

} // namespace zero
