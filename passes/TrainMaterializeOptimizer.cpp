//===- TrainMaterializeOptimizer.cpp - Explicit optimizer state -----------===//
//
// Rewrites each `train.apply_gradient` into persistent slots, an optional
// fp32 master copy and an explicit update op, so that the later passes (and
// the report) see every byte of optimizer state as a `train.param`.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/TrainingStep.h"
#include "zero/passes/Passes.h"

#include "zero/dialects/train/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/SetVector.h"

namespace zero {
#define GEN_PASS_DEF_TRAINMATERIALIZEOPTIMIZER
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

/// Slot names per optimizer kind, in the order the update op takes them.
SmallVector<StringRef, 2> getSlotSuffixes(train::OptimizerKind kind) {
  switch (kind) {
  case train::OptimizerKind::sgd:
    return {};
  case train::OptimizerKind::momentum:
    return {"momentum"};
  case train::OptimizerKind::adam:
  case train::OptimizerKind::adamw:
    return {"m", "v"};
  }
  return {};
}

bool isSixteenBit(Type elementType) {
  return elementType.isBF16() || elementType.isF16();
}

class Materializer {
public:
  Materializer(ModuleOp module, int64_t accumulateSteps)
      : module(module), symbols(module), accumulateSteps(accumulateSteps) {}

  LogicalResult run();

private:
  /// Declares `@<param>.<suffix>` right after the declarations of `param`.
  FailureOr<train::ParamOp> declareState(train::ParamOp param, StringRef suffix,
                                         train::Role role,
                                         RankedTensorType type, bool zeroInit);
  LogicalResult materialize(train::ApplyGradientOp apply, OpBuilder &builder,
                            Value step);
  /// Emits loads, the update op and stores for `param` with gradient `grad`.
  LogicalResult emitUpdate(OpBuilder &builder, Location loc,
                           train::ParamOp param, train::OptimizerOp optimizer,
                           Value grad, Value step, Value skip);
  func::FuncOp createApplyFunction(func::FuncOp step);
  Value getStepIndex(func::FuncOp function);

  ModuleOp module;
  SymbolTable symbols;
  int64_t accumulateSteps;
  /// Where the next declaration for a parameter goes (after its last one).
  DenseMap<Operation *, Operation *> lastDeclaration;
  DenseMap<Operation *, Value> stepIndex;
  func::FuncOp applyFunction;
  /// The updates of the current step whose optimizer clips, in order.
  SmallVector<std::pair<Operation *, train::OptimizerOp>> clipped;
  LogicalResult emitClipping();
};

FailureOr<train::ParamOp> Materializer::declareState(train::ParamOp param,
                                                     StringRef suffix,
                                                     train::Role role,
                                                     RankedTensorType type,
                                                     bool zeroInit) {
  std::string name = (param.getSymName() + "." + suffix).str();
  if (symbols.lookup(name))
    return param.emitOpError()
           << "needs the symbol @" << name << " for its "
           << train::stringifyRole(role) << ", but it is already taken (was "
           << "train-materialize-optimizer already run?)";
  Operation *&after = lastDeclaration[param];
  if (!after)
    after = param;
  OpBuilder builder(after->getContext());
  builder.setInsertionPointAfter(after);
  MLIRContext *context = module.getContext();
  train::InitAttr init;
  if (zeroInit)
    init = train::InitAttr::get(context, train::InitKind::zeros, APFloat(0.0),
                                APFloat(0.0));
  auto state = builder.create<train::ParamOp>(
      param.getLoc(), name, role,
      FlatSymbolRefAttr::get(param.getSymNameAttr()), type,
      train::StorageLayoutKind::replicated, /*shard_axis=*/0,
      /*local_type=*/nullptr, init);
  symbols.insert(state, builder.getInsertionPoint());
  after = state;
  return state;
}

Value Materializer::getStepIndex(func::FuncOp function) {
  Value &step = stepIndex[function];
  if (!step) {
    OpBuilder builder = OpBuilder::atBlockBegin(&function.front());
    step = builder.create<train::StepIndexOp>(function.getLoc());
  }
  return step;
}

LogicalResult Materializer::emitUpdate(OpBuilder &builder, Location loc,
                                       train::ParamOp param,
                                       train::OptimizerOp optimizer, Value grad,
                                       Value step, Value skip) {
  RankedTensorType paramType = param.getLogicalTensorType();
  auto f32Type = RankedTensorType::get(paramType.getShape(),
                                       Float32Type::get(module.getContext()));
  // Under mixed precision the optimizer updates an fp32 master copy.
  train::ParamOp updated = param;
  if (isSixteenBit(paramType.getElementType())) {
    FailureOr<train::ParamOp> master = declareState(
        param, "master", train::Role::master, f32Type, /*zeroInit=*/false);
    if (failed(master))
      return failure();
    updated = *master;
  }
  SmallVector<train::ParamOp> slots;
  for (StringRef suffix : getSlotSuffixes(optimizer.getKind())) {
    FailureOr<train::ParamOp> slot =
        declareState(param, suffix, train::Role::slot, f32Type, true);
    if (failed(slot))
      return failure();
    slots.push_back(*slot);
  }

  auto load = [&](train::ParamOp state) -> Value {
    return builder.create<train::LoadOp>(loc, state.getLogicalTensorType(),
                                         state.getSymName());
  };
  SmallVector<Value> operands{load(updated), grad};
  for (train::ParamOp slot : slots)
    operands.push_back(load(slot));
  FlatSymbolRefAttr optimizerRef =
      FlatSymbolRefAttr::get(optimizer.getSymNameAttr());
  Operation *update = nullptr;
  switch (optimizer.getKind()) {
  case train::OptimizerKind::sgd:
    update = builder.create<train::SgdOp>(loc, operands[0], operands[1], skip,
                                          optimizerRef);
    break;
  case train::OptimizerKind::momentum:
    update = builder.create<train::SgdMomentumOp>(
        loc, operands[0], operands[1], operands[2], skip, optimizerRef);
    break;
  case train::OptimizerKind::adam:
    update = builder.create<train::AdamOp>(loc, operands[0], operands[1],
                                           operands[2], operands[3], step, skip,
                                           optimizerRef);
    break;
  case train::OptimizerKind::adamw:
    update = builder.create<train::AdamWOp>(loc, operands[0], operands[1],
                                            operands[2], operands[3], step,
                                            skip, optimizerRef);
    break;
  }
  if (optimizer.getClipNorm())
    clipped.push_back({update, optimizer});
  UpdateView view(update);
  for (auto [index, slot] : llvm::enumerate(slots))
    builder.create<train::StoreOp>(loc, view.getNewSlot(index),
                                   slot.getSymName());
  Value newParam = view.getNewParam();
  if (updated != param) {
    builder.create<train::StoreOp>(loc, newParam, updated.getSymName());
    newParam = builder.create<train::CastOp>(loc, paramType, newParam);
  }
  builder.create<train::StoreOp>(loc, newParam, param.getSymName());
  return success();
}

func::FuncOp Materializer::createApplyFunction(func::FuncOp step) {
  OpBuilder builder(step);
  builder.setInsertionPointAfter(step);
  std::string name = (step.getSymName() + "_apply").str();
  auto function = builder.create<func::FuncOp>(step.getLoc(), name,
                                               builder.getFunctionType({}, {}));
  function->setAttr(train::TrainDialect::getApplyStepAttrName(),
                    builder.getUnitAttr());
  symbols.insert(function);
  Block *entry = function.addEntryBlock();
  OpBuilder::atBlockEnd(entry).create<func::ReturnOp>(step.getLoc());
  step->setAttr(train::TrainDialect::getAccumulateStepsAttrName(),
                builder.getI64IntegerAttr(accumulateSteps));
  return function;
}

LogicalResult Materializer::materialize(train::ApplyGradientOp apply,
                                        OpBuilder &builder, Value step) {
  auto param = symbols.lookup<train::ParamOp>(apply.getParam());
  auto optimizer = symbols.lookup<train::OptimizerOp>(apply.getOptimizer());
  Location loc = apply.getLoc();
  if (accumulateSteps == 1) {
    builder.setInsertionPoint(apply);
    return emitUpdate(builder, loc, param, optimizer, apply.getGrad(), step,
                      apply.getSkipIf());
  }
  if (apply.getSkipIf())
    return apply.emitOpError()
           << "skips its update on overflow (dynamic loss scaling), which "
              "gradient accumulation does not support yet; use "
              "accumulate-steps=1 or drop loss_scale";

  // The micro-step adds the gradient into its accumulator ...
  auto gradType = cast<RankedTensorType>(apply.getGrad().getType());
  FailureOr<train::ParamOp> accumulator = declareState(
      param, "grad", train::Role::grad_accum, gradType, /*zeroInit=*/true);
  if (failed(accumulator))
    return failure();
  builder.setInsertionPoint(apply);
  Value sum =
      builder.create<train::LoadOp>(loc, gradType, accumulator->getSymName());
  sum = builder.create<train::AddOp>(loc, sum, apply.getGrad());
  builder.create<train::StoreOp>(loc, sum, accumulator->getSymName());

  // ... and the apply function averages it, updates, and resets it.
  builder.setInsertionPoint(applyFunction.front().getTerminator());
  Value grad =
      builder.create<train::LoadOp>(loc, gradType, accumulator->getSymName());
  grad = builder.create<train::ScaleOp>(
      loc, grad, builder.getF64FloatAttr(1.0 / accumulateSteps));
  if (failed(emitUpdate(builder, loc, param, optimizer, grad, step,
                        /*skip=*/nullptr)))
    return failure();
  Value zeros = builder.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(
               gradType, builder.getFloatAttr(gradType.getElementType(), 0.0)));
  builder.create<train::StoreOp>(loc, zeros, accumulator->getSymName());
  return success();
}

/// One `train.clip_by_global_norm` for every clipped update of the step, so
/// that they share one global norm. It goes just before the last of them (the
/// first point where every gradient exists); the earlier updates, with the
/// casts and stores that follow from them, move after it.
LogicalResult Materializer::emitClipping() {
  if (clipped.empty())
    return success();
  train::OptimizerOp first = clipped.front().second;
  for (auto &[update, optimizer] : clipped)
    if (*optimizer.getClipNorm() != *first.getClipNorm()) {
      InFlightDiagnostic diag =
          optimizer.emitOpError()
          << "clips with clip_norm "
          << optimizer.getClipNorm()->convertToDouble()
          << ", but another optimizer of the step clips with "
          << first.getClipNorm()->convertToDouble()
          << "; the step clips all gradients by one global norm, so use one "
             "clip_norm";
      diag.attachNote(first.getLoc()) << "the other optimizer";
      return diag;
    }
  Operation *last = clipped.back().first;
  SmallVector<Value> grads;
  for (auto &[update, optimizer] : clipped)
    grads.push_back(UpdateView(update).getGrad());
  OpBuilder builder(last);
  auto clip = builder.create<train::ClipByGlobalNormOp>(
      last->getLoc(), grads, first.getClipNorm()->convertToDouble());
  for (auto [index, entry] : llvm::enumerate(clipped))
    UpdateView(entry.first).getGradOperand().set(clip.getResult(index));

  Block *block = last->getBlock();
  llvm::SetVector<Operation *> moved;
  for (auto &[update, optimizer] : llvm::ArrayRef(clipped).drop_back()) {
    SmallVector<Operation *> worklist{update};
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (op->getBlock() != block || !moved.insert(op))
        continue;
      llvm::append_range(worklist, op->getUsers());
    }
  }
  SmallVector<Operation *> ordered(moved.begin(), moved.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (Operation *op : ordered)
    op->moveBefore(last);
  return success();
}

LogicalResult Materializer::run() {
  for (func::FuncOp function : getStepFunctions(module)) {
    if (!function->hasAttr(train::TrainDialect::getStepAttrName()))
      continue;
    SmallVector<train::ApplyGradientOp> applies;
    function.walk([&](train::ApplyGradientOp op) { applies.push_back(op); });
    if (applies.empty())
      continue;
    llvm::StringMap<train::ApplyGradientOp> byParam;
    for (train::ApplyGradientOp apply : applies) {
      if (apply->getParentOp() != function)
        return apply.emitOpError()
               << "sits in a nested region; apply gradients at the top level "
                  "of the step so that they run once per step";
      auto [it, inserted] = byParam.try_emplace(apply.getParam(), apply);
      if (!inserted) {
        InFlightDiagnostic diag =
            apply.emitOpError()
            << "applies a second gradient to " << apply.getParamAttr()
            << "; sum the gradients of a tied parameter and apply them once";
        diag.attachNote(it->second.getLoc()) << "first applied here";
        return diag;
      }
    }
    if (accumulateSteps > 1) {
      if (function->hasAttr(train::TrainDialect::getAccumulateStepsAttrName()))
        return function.emitOpError() << "already accumulates gradients; run "
                                         "train-materialize-optimizer once";
      applyFunction = createApplyFunction(function);
    }
    OpBuilder builder(module.getContext());
    Value step = accumulateSteps > 1 ? getStepIndex(applyFunction)
                                     : getStepIndex(function);
    clipped.clear();
    for (train::ApplyGradientOp apply : applies) {
      if (failed(materialize(apply, builder, step)))
        return failure();
      apply.erase();
    }
    if (failed(emitClipping()))
      return failure();
    // Only Adam reads the step index; drop it when nothing does.
    for (auto &[owner, index] : stepIndex)
      if (index && index.use_empty()) {
        index.getDefiningOp()->erase();
        index = nullptr;
      }
  }
  return success();
}

struct TrainMaterializeOptimizerPass
    : zero::impl::TrainMaterializeOptimizerBase<TrainMaterializeOptimizerPass> {
  using TrainMaterializeOptimizerBase::TrainMaterializeOptimizerBase;

  void runOnOperation() override {
    if (accumulateSteps < 1) {
      mlir::emitError(getOperation().getLoc())
          << "train-materialize-optimizer: accumulate-steps must be at least "
             "1, got "
          << static_cast<int64_t>(accumulateSteps);
      return signalPassFailure();
    }
    if (failed(Materializer(getOperation(), accumulateSteps).run()))
      signalPassFailure();
  }
};

} // namespace
