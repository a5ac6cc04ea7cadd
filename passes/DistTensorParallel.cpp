//===- DistTensorParallel.cpp - Tensor parallelism by SBP propagation ----===//
//
// The parameters' tensor-parallel plans (`dist.sbp` on `train.param`) become
// splits of their storage, and the SBP they start with flows through the
// step op by op, as OneFlow's SBP inference and Shardy's propagation do: each
// op runs by the signature its operands already fit, or by the one whose
// operands are cheapest to box, and a `dist.reshard` boxes what disagrees.
// Megatron's f and g fall out of the rules rather than being written in: a
// row-parallel matmul contracts a split dimension, so its result is partial
// and the next op that needs it whole all-reduces it; the input gradient of a
// column-parallel matmul is partial the same way.
//
// Program order is a sound order for a greedy choice here: the step is one
// block, every operand is known before its op, and the choice of a result's
// SBP is final. Where the greedy choice is not the cheapest plan, the plan is
// still exact, only its communication is larger.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/SbpRules.h"
#include "zero/analysis/TrainingStep.h"
#include "zero/passes/Passes.h"

#include "zero/dialects/dist/DistOps.h"
#include "zero/dialects/train/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <limits>

namespace zero {
#define GEN_PASS_DEF_DISTTENSORPARALLEL
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using dist::SbpDim;

namespace {

constexpr StringLiteral kPass = "dist-tensor-parallel";

int64_t bytesOf(RankedTensorType type) {
  return type.getNumElements() *
         llvm::divideCeil(type.getElementTypeBitWidth(), 8);
}

/// Whether `sbp` can describe a tensor of type `logical` over `ranks` ranks:
/// a split needs a dimension that divides exactly.
bool fits(RankedTensorType logical, SbpDim sbp, int64_t ranks) {
  if (!sbp.isSplit())
    return true;
  return sbp.dim < logical.getRank() &&
         logical.getDimSize(sbp.dim) % ranks == 0;
}

RankedTensorType localTypeOf(RankedTensorType logical, SbpDim sbp,
                             int64_t ranks) {
  if (!sbp.isSplit())
    return logical;
  SmallVector<int64_t> shape(logical.getShape());
  shape[sbp.dim] /= ranks;
  return logical.clone(shape);
}

/// Bytes each rank moves to box a tensor of `bytes` from `from` to `to`, for
/// choosing a signature; std::nullopt where the choice may not box so.
/// Partial to split is sequence parallelism's reduce-scatter, not chosen
/// yet except where the op itself asks for the split (an update of a split
/// parameter); nothing makes a partial value from a whole one.
std::optional<double> choiceCost(SbpDim from, SbpDim to, double bytes,
                                 bool scatterAllowed) {
  if (from == to)
    return 0.0;
  if (from.isBroadcast() && to.isSplit())
    // A local slice moves nothing; the tiny cost keeps whole values whole
    // where nothing asks for a split.
    return 1e-6 * bytes;
  if (from.isSplit() && !to.isPartial())
    return bytes;
  if (from.isPartial() && to.isBroadcast())
    return 2.0 * bytes;
  if (from.isPartial() && to.isSplit() && scatterAllowed)
    return bytes;
  return std::nullopt;
}

std::string describeSbp(SbpDim sbp) { return dist::formatSbpDim(sbp); }

class Propagation {
public:
  Propagation(int64_t ranks, SymbolTable &symbols)
      : ranks(ranks), symbols(symbols) {}

  LogicalResult run(func::FuncOp function);

private:
  LogicalResult visit(Operation *op);
  LogicalResult visitGeneric(Operation *op);
  void sinkSlices(func::FuncOp function);
  /// The op's signatures; the rules read shapes (a reshape's), so they get
  /// the operands' logical types, not the local ones they now have.
  std::optional<SmallVector<dist::SbpSignature>> signaturesOf(Operation *op) {
    SmallVector<Type> operandTypes;
    for (Value operand : op->getOperands())
      operandTypes.push_back(logicalOf(operand) ? Type(logicalOf(operand))
                                                : operand.getType());
    return dist::getSbpSignatures(op, operandTypes);
  }

  SbpDim sbpOf(Value value) const {
    auto it = sbp.find(value);
    return it == sbp.end() ? SbpDim::broadcast() : it->second;
  }
  RankedTensorType logicalOf(Value value) const {
    auto it = logical.find(value);
    return it == logical.end() ? dyn_cast<RankedTensorType>(value.getType())
                               : it->second;
  }
  /// Gives `value` (of logical type `full`) the SBP `to` and its local type.
  void record(Value value, RankedTensorType full, SbpDim to) {
    logical[value] = full;
    sbp[value] = to;
    value.setType(localTypeOf(full, to, ranks));
  }
  /// `value` with SBP `to`: itself, or a dist.reshard of it before `user`.
  Value box(Operation *user, Value value, SbpDim to);
  SbpDim stateSbp(train::ParamOp state) const {
    if (!state.isSplit())
      return SbpDim::broadcast();
    return SbpDim::split(*state.getSplitDim());
  }

  static int64_t encode(SbpDim sbp) {
    return (static_cast<int64_t>(sbp.kind) << 40) | (sbp.dim << 8) |
           static_cast<int64_t>(sbp.reduce);
  }

  int64_t ranks;
  SymbolTable &symbols;
  DenseMap<std::pair<Value, int64_t>, Value> reshards;
  DenseMap<Value, SbpDim> sbp;
  DenseMap<Value, RankedTensorType> logical;
};

Value Propagation::box(Operation *user, Value value, SbpDim to) {
  SbpDim from = sbpOf(value);
  if (from == to)
    return value;
  // One collective per value and SBP, however many ops want it so: ops are
  // visited in program order, so the first reshard dominates later users.
  Value &boxed = reshards[{value, encode(to)}];
  if (boxed)
    return boxed;
  RankedTensorType full = logicalOf(value);
  OpBuilder builder(user);
  MLIRContext *context = user->getContext();
  auto reshard = builder.create<dist::ReshardOp>(
      user->getLoc(), localTypeOf(full, to, ranks), value,
      dist::SbpAttr::get(context, {from}), dist::SbpAttr::get(context, {to}));
  record(reshard.getResult(), full, to);
  boxed = reshard.getResult();
  return boxed;
}

LogicalResult Propagation::run(func::FuncOp function) {
  for (BlockArgument argument : function.getArguments())
    sbp[argument] = SbpDim::broadcast();
  for (Operation &op : llvm::make_early_inc_range(function.front()))
    if (failed(visit(&op)))
      return failure();
  sinkSlices(function);
  return success();
}

/// A whole value that is only ever sliced (a column-parallel weight's
/// gradient computed from a whole output gradient, then cut to the
/// parameter's split) is computed split instead where its op can take its
/// operands as they are or sliced: the slices move to the operands, and
/// each rank does 1/tp of the op. Program order cannot see that a value
/// will be sliced; this backward walk can, and it repeats up the chain of
/// producers (the last slices first, each new one pushed to be sunk too).
void Propagation::sinkSlices(func::FuncOp function) {
  SmallVector<dist::ReshardOp> worklist;
  function.walk([&](dist::ReshardOp reshard) { worklist.push_back(reshard); });
  while (!worklist.empty()) {
    dist::ReshardOp reshard = worklist.pop_back_val();
    SbpDim to = reshard.getTo().getDims()[0];
    if (!reshard.getFrom().getDims()[0].isBroadcast() || !to.isSplit())
      continue;
    Value whole = reshard.getInput();
    Operation *producer = whole.getDefiningOp();
    if (!producer || producer->getNumResults() != 1 ||
        isa<train::LoadOp, dist::ReshardOp>(producer) ||
        llvm::any_of(whole.getUsers(), [&](Operation *user) {
          auto other = dyn_cast<dist::ReshardOp>(user);
          return !other || other.getTo() != reshard.getTo();
        }))
      continue;
    std::optional<SmallVector<dist::SbpSignature>> signatures =
        signaturesOf(producer);
    if (!signatures)
      continue;
    const dist::SbpSignature *split = nullptr;
    for (const dist::SbpSignature &signature : *signatures) {
      if (signature.results[0] != to)
        continue;
      bool free = true;
      for (auto [operand, wanted] :
           llvm::zip_equal(producer->getOperands(), signature.operands)) {
        SbpDim have = sbpOf(operand);
        RankedTensorType full = logicalOf(operand);
        free = free && full && fits(full, wanted, ranks) &&
               (have == wanted || (have.isBroadcast() && wanted.isSplit()));
      }
      if (free) {
        split = &signature;
        break;
      }
    }
    if (!split)
      continue;
    dist::SbpSignature chosen = *split;
    for (auto [index, wanted] : llvm::enumerate(chosen.operands)) {
      Value operand = producer->getOperand(index);
      Value boxed = box(producer, operand, wanted);
      producer->setOperand(index, boxed);
      if (auto slice = boxed.getDefiningOp<dist::ReshardOp>();
          slice && boxed != operand)
        worklist.push_back(slice);
    }
    record(whole, logicalOf(whole), to);
    for (Operation *user : llvm::make_early_inc_range(whole.getUsers())) {
      auto other = cast<dist::ReshardOp>(user);
      reshards.erase({whole, encode(to)});
      other.getResult().replaceAllUsesWith(whole);
      llvm::erase(worklist, other);
      other.erase();
    }
  }
}

LogicalResult Propagation::visit(Operation *op) {
  if (op->getNumRegions() != 0)
    return op->emitOpError() << "has regions; " << kPass
                             << " propagates through a straight-line step only";
  if (auto load = dyn_cast<train::LoadOp>(op)) {
    auto state = symbols.lookup<train::ParamOp>(load.getState());
    record(load.getResult(), state.getLogicalTensorType(), stateSbp(state));
    return success();
  }
  if (auto store = dyn_cast<train::StoreOp>(op)) {
    auto state = symbols.lookup<train::ParamOp>(store.getState());
    store.getValueMutable().assign(box(op, store.getValue(), stateSbp(state)));
    return success();
  }
  if (auto apply = dyn_cast<train::ApplyGradientOp>(op)) {
    // The gradient is the parameter's own split (a whole parameter's
    // gradient whole: partial contributions all-reduced, exactly once).
    auto state = symbols.lookup<train::ParamOp>(apply.getParam());
    apply.getGradMutable().assign(box(op, apply.getGrad(), stateSbp(state)));
    return success();
  }
  if (isa<func::ReturnOp>(op)) {
    // What the step returns (the loss, per-position outputs) is whole on
    // every rank, as at tp = 1.
    for (OpOperand &operand : op->getOpOperands())
      if (isa<RankedTensorType>(operand.get().getType()))
        operand.set(box(op, operand.get(), SbpDim::broadcast()));
    return success();
  }
  if (isa<train::ClipByGlobalNormOp, train::SumSquaresOp, train::ScaleByNormOp>(
          op))
    return op->emitOpError()
           << "clips gradients by their global norm; with tensor "
              "parallelism the norm must count each split gradient's "
              "shards and each whole one once, which "
           << kPass << " does not do yet: train with tp=1 or without clipping";
  if (isa<train::UnscaleOp, train::UpdateLossScaleOp>(op))
    return op->emitOpError() << "scales the loss dynamically, which " << kPass
                             << " does not support yet: use bf16 or f32";
  return visitGeneric(op);
}

LogicalResult Propagation::visitGeneric(Operation *op) {
  std::optional<SmallVector<dist::SbpSignature>> signatures = signaturesOf(op);
  if (!signatures)
    return op->emitOpError() << "has no SBP signature, so " << kPass
                             << " cannot place it on the tensor-parallel ranks";
  bool scatterAllowed = isUpdateOp(op);
  const dist::SbpSignature *best = nullptr;
  double bestCost = std::numeric_limits<double>::infinity();
  for (const dist::SbpSignature &signature : *signatures) {
    double cost = 0.0;
    bool feasible = true;
    for (auto [operand, wanted] :
         llvm::zip_equal(op->getOperands(), signature.operands)) {
      RankedTensorType full = logicalOf(operand);
      if (!full || !fits(full, wanted, ranks)) {
        feasible = false;
        break;
      }
      std::optional<double> step =
          choiceCost(sbpOf(operand), wanted, bytesOf(full), scatterAllowed);
      if (!step) {
        feasible = false;
        break;
      }
      cost += *step;
    }
    for (auto [result, given] :
         llvm::zip_equal(op->getResults(), signature.results)) {
      auto full = dyn_cast<RankedTensorType>(result.getType());
      feasible = feasible && full && fits(full, given, ranks);
    }
    if (feasible && cost < bestCost) {
      best = &signature;
      bestCost = cost;
    }
  }
  if (!best) {
    // The all-broadcast signature is always feasible for tensor operands,
    // so this is an operand that is not a ranked tensor.
    return op->emitOpError() << "has an operand " << kPass
                             << " cannot place (not a ranked tensor)";
  }
  dist::SbpSignature chosen = *best;
  for (auto [index, wanted] : llvm::enumerate(chosen.operands))
    op->setOperand(index, box(op, op->getOperand(index), wanted));
  for (auto [result, given] : llvm::zip_equal(op->getResults(), chosen.results))
    record(result, cast<RankedTensorType>(result.getType()), given);
  return success();
}

struct DistTensorParallelPass
    : zero::impl::DistTensorParallelBase<DistTensorParallelPass> {
  using DistTensorParallelBase::DistTensorParallelBase;

  void runOnOperation() override;
  LogicalResult checkModule(ModuleOp module);
  LogicalResult applyPlans(ModuleOp module, SymbolTable &symbols);
};

LogicalResult DistTensorParallelPass::checkModule(ModuleOp module) {
  if (tp < 1)
    return mlir::emitError(module.getLoc())
           << kPass << ": tp must be at least 1, got "
           << static_cast<int64_t>(tp);
  if (module->hasAttr(dist::DistDialect::getTensorParallelAxisAttrName()))
    return mlir::emitError(module.getLoc())
           << kPass << ": the module is already tensor parallel ('"
           << dist::DistDialect::getTensorParallelAxisAttrName() << "' is set)";
  if (module->hasAttr(dist::DistDialect::getZeroStageAttrName()))
    return mlir::emitError(module.getLoc())
           << kPass
           << ": the module is already data parallel; run "
              "dist-tensor-parallel before dist-data-parallel, which puts "
              "the data-parallel axes in front of the tensor-parallel one";
  // Clipping and loss scaling are materialized after this pass from the
  // optimizer's declaration; refused here, before they could reduce over
  // the wrong ranks.
  for (auto optimizer : module.getOps<train::OptimizerOp>()) {
    if (optimizer.getClipNorm())
      return optimizer.emitOpError()
             << "clips gradients by their global norm (clip_norm); with "
                "tensor parallelism the norm must count each split "
                "gradient's shards and each whole one once, which "
             << kPass << " does not do yet: train with tp=1 or without "
             << "clipping";
    if (optimizer.getLossScale())
      return optimizer.emitOpError()
             << "scales the loss dynamically (loss_scale), which " << kPass
             << " does not support yet: use bf16 or f32";
  }
  dist::PlacementAttr placement = dist::lookupPlacement(module);
  if (placement && placement.getNumRanks() != 1)
    return mlir::emitError(module.getLoc())
           << kPass << ": the module is placed on " << placement
           << "; tensor parallelism starts from a single-device step "
              "(#dist.placement<cpu, [1]> or none)";
  return success();
}

LogicalResult DistTensorParallelPass::applyPlans(ModuleOp module,
                                                 SymbolTable &symbols) {
  StringRef planName = dist::DistDialect::getSbpAttrName();
  // The plans first, so that slots can follow their parameter whatever the
  // declaration order.
  DenseMap<StringAttr, SbpDim> plans;
  for (auto state : module.getOps<train::ParamOp>()) {
    auto plan = state->getAttrOfType<dist::SbpAttr>(planName);
    if (!plan)
      continue;
    if (state.getOwner())
      return state.emitOpError()
             << "has its own tensor-parallel plan; a "
             << "master copy, slot or accumulator is split as its parameter "
             << state.getOwnerAttr() << " is: drop '" << planName << "'";
    SbpDim entry = plan.getDims()[0];
    RankedTensorType type = state.getLogicalTensorType();
    if (entry.isSplit() && entry.dim >= type.getRank())
      return state.emitOpError()
             << "plans " << describeSbp(entry) << ", but " << type << " has "
             << type.getRank() << " dimension(s)";
    if (!fits(type, entry, tp))
      return state.emitOpError()
             << "plans " << describeSbp(entry)
             << " over tp=" << static_cast<int64_t>(tp) << ", but dimension "
             << entry.dim << " of " << type << " ("
             << type.getDimSize(entry.dim) << ") does not divide by "
             << static_cast<int64_t>(tp)
             << "; tensor-parallel shards are exact";
    if (state.isSharded())
      return state.emitOpError()
             << "is sharded already; run " << kPass << " before zero-shard";
    plans[state.getSymNameAttr()] = entry;
  }
  Builder builder(module.getContext());
  for (auto state : module.getOps<train::ParamOp>()) {
    StringAttr key = state.getOwner() ? state.getOwnerAttr().getAttr()
                                      : state.getSymNameAttr();
    state->removeAttr(planName);
    auto plan = plans.find(key);
    if (plan == plans.end() || !plan->second.isSplit())
      continue;
    state.setSplitDimAttr(builder.getI64IntegerAttr(plan->second.dim));
    state.setSplitAxisAttr(builder.getI64IntegerAttr(0));
  }
  return success();
}

void DistTensorParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (failed(checkModule(module)))
    return signalPassFailure();
  SmallVector<func::FuncOp> functions = getStepFunctions(module);
  if (functions.empty()) {
    mlir::emitError(module.getLoc())
        << kPass << ": no function is marked 'train.step'; nothing to split";
    return signalPassFailure();
  }
  MLIRContext *context = module.getContext();
  dist::PlacementAttr placement = dist::lookupPlacement(module);
  dist::DeviceKind device =
      placement ? placement.getDevice() : dist::DeviceKind::cpu;
  int64_t ranks = tp;
  module->setAttr(dist::DistDialect::getPlacementAttrName(),
                  dist::PlacementAttr::get(context, device, ranks));
  module->setAttr(dist::DistDialect::getTensorParallelAxisAttrName(),
                  IntegerAttr::get(IntegerType::get(context, 64), 0));
  SymbolTable symbols(module);
  if (failed(applyPlans(module, symbols)))
    return signalPassFailure();
  for (func::FuncOp function : functions) {
    Propagation propagation(tp, symbols);
    if (failed(propagation.run(function)))
      return signalPassFailure();
  }
}

} // namespace
