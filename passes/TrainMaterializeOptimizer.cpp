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
  LogicalResult countLabelsPerStep(func::FuncOp step);
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
  LogicalResult emitAccumulatorReset(OpBuilder &builder, Location loc,
                                     train::ParamOp accumulator);
  LogicalResult unscaleAccumulated(Value step);
  /// With loss scaling and accumulation: each update, with the averaged
  /// accumulator it applies, left for unscaleAccumulated.
  SmallVector<std::pair<train::ApplyGradientOp, Value>> scaledUpdates;
  /// The micro-step's scaler update, unscale and good-steps load, which
  /// unscaleAccumulated replaced in the apply step.
  SmallVector<Operation *, 3> movedScaling;
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
      train::StorageLayoutKind::replicated, /*shard_axes=*/nullptr,
      /*local_type=*/nullptr, init, /*optimizer=*/nullptr,
      param.getSplitDimAttr(), param.getSplitAxisAttr());
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
    return builder.create<train::LoadOp>(loc, state.getLocalTensorType(),
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
    newParam = builder.create<train::CastOp>(loc, param.getLocalTensorType(),
                                             newParam);
  }
  builder.create<train::StoreOp>(loc, newParam, param.getSymName());
  return success();
}

/// Under accumulation a loss that ignores labels must divide by the labels
/// kept in the whole step, PyTorch's mean over the real tokens of the global
/// batch, not by each micro-batch's own count (which would weigh the
/// micro-batches equally). A micro-step sees only its micro-batch, so each
/// `train.count_labels` of a step input becomes an input itself, which the
/// runtime fills from every micro-batch of the step before the first
/// (TrainDialect::getLabelCountAttrName).
LogicalResult Materializer::countLabelsPerStep(func::FuncOp step) {
  SmallVector<train::CountLabelsOp> counts;
  step.walk([&](train::CountLabelsOp count) { counts.push_back(count); });
  for (train::CountLabelsOp count : counts) {
    // The labels counted are a box of a step input: slices of it (a
    // causal-LM loss drops the first position), then any reshapes.
    SmallVector<Operation *> chain;
    Value value = count.getLabels();
    while (Operation *def = value.getDefiningOp()) {
      if (!isa<train::SliceOp, train::ReshapeOp>(def))
        break;
      chain.push_back(def);
      value = def->getOperand(0);
    }
    auto labels = dyn_cast<BlockArgument>(value);
    auto refuse = [&]() {
      return count.emitOpError()
             << "counts labels computed within the step; with accumulate-steps="
             << accumulateSteps
             << " the count of the whole step is taken from its micro-batches "
                "before the first, so the labels must be an input of the step "
                "or slices of one";
    };
    if (!labels || labels.getOwner() != &step.front())
      return refuse();
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(labels.getType()).getShape();
    SmallVector<int64_t> begin(shape.size(), 0), end(shape);
    bool reshaped = false;
    for (Operation *op : llvm::reverse(chain)) {
      auto slice = dyn_cast<train::SliceOp>(op);
      if (!slice) {
        reshaped = true;
        continue;
      }
      if (reshaped)
        return refuse();
      int64_t dim = slice.getDim();
      begin[dim] += slice.getOffset();
      end[dim] = begin[dim] + slice.getType().getDimSize(dim);
    }
    OpBuilder builder(count);
    NamedAttrList described;
    described.append("labels",
                     builder.getI64IntegerAttr(labels.getArgNumber()));
    described.append("ignore_index", count.getIgnoreIndexAttr());
    described.append("begin", builder.getDenseI64ArrayAttr(begin));
    described.append("end", builder.getDenseI64ArrayAttr(end));
    unsigned index = step.getNumArguments();
    step.insertArgument(index, count.getType(),
                        builder.getDictionaryAttr(builder.getNamedAttr(
                            train::TrainDialect::getLabelCountAttrName(),
                            described.getDictionary(builder.getContext()))),
                        count.getLoc());
    count.replaceAllUsesWith(step.getArgument(index));
    count.erase();
  }
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
  // Under loss scaling the micro-steps accumulate the scaled gradients (the
  // scale only changes in the apply step), which the apply step unscales
  // and checks once: an overflow in any micro-step leaves an infinity or a
  // NaN in the sum, so the whole step is skipped.
  Value microGrad = apply.getGrad();
  if (Value skip = apply.getSkipIf()) {
    auto unscale = microGrad.getDefiningOp<train::UnscaleOp>();
    if (!unscale || unscale.getFoundInf() != skip)
      return apply.emitOpError()
             << "skips its update on overflow but applies a gradient that "
                "the train.unscale computing the flag does not produce; "
                "gradient accumulation needs the unscale train-autodiff "
                "writes";
    microGrad = unscale.getGrads()[cast<OpResult>(microGrad).getResultNumber()];
  }

  // The micro-step adds the gradient into its accumulator, in f32 for a
  // 16-bit gradient (as Megatron's main_grad and DeepSpeed's bf16
  // optimizer do): K additions rounded to bf16's 8 bits would cost more
  // accuracy than the accumulator saves memory ...
  auto microType = cast<RankedTensorType>(microGrad.getType());
  RankedTensorType gradType = microType;
  if (isSixteenBit(microType.getElementType()))
    gradType = microType.clone(Float32Type::get(module.getContext()));
  FailureOr<train::ParamOp> accumulator = declareState(
      param, "grad", train::Role::grad_accum,
      param.getLogicalTensorType().clone(gradType.getElementType()),
      /*zeroInit=*/true);
  if (failed(accumulator))
    return failure();
  builder.setInsertionPoint(apply);
  Value addend = microGrad;
  if (gradType != microType)
    addend = builder.create<train::CastOp>(loc, gradType, microGrad);
  Value sum =
      builder.create<train::LoadOp>(loc, gradType, accumulator->getSymName());
  sum = builder.create<train::AddOp>(loc, sum, addend);
  builder.create<train::StoreOp>(loc, sum, accumulator->getSymName());

  // ... and the apply function averages it, updates, and resets it.
  builder.setInsertionPoint(applyFunction.front().getTerminator());
  Value grad =
      builder.create<train::LoadOp>(loc, gradType, accumulator->getSymName());
  grad = builder.create<train::ScaleOp>(
      loc, grad, builder.getF64FloatAttr(1.0 / accumulateSteps));
  if (apply.getSkipIf()) {
    // Updated once every gradient is averaged: see unscaleAccumulated.
    scaledUpdates.push_back({apply, grad});
    return success();
  }
  if (failed(emitUpdate(builder, loc, param, optimizer, grad, step,
                        /*skip=*/nullptr)))
    return failure();
  return emitAccumulatorReset(builder, loc, *accumulator);
}

LogicalResult Materializer::emitAccumulatorReset(OpBuilder &builder,
                                                 Location loc,
                                                 train::ParamOp accumulator) {
  auto gradType = accumulator.getLocalTensorType();
  Value zeros = builder.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(
               gradType, builder.getFloatAttr(gradType.getElementType(), 0.0)));
  builder.create<train::StoreOp>(loc, zeros, accumulator.getSymName());
  return success();
}

/// Dynamic loss scaling with accumulation: the apply step unscales the
/// averaged accumulators with one `train.unscale`, updates each parameter
/// unless it found an overflow, updates the scaler, and resets the
/// accumulators. The micro-step keeps only the scaled backward: its
/// unscale, and the scaler update that read its overflow flag, move here.
LogicalResult Materializer::unscaleAccumulated(Value step) {
  if (scaledUpdates.empty())
    return success();
  train::ApplyGradientOp first = scaledUpdates.front().first;
  auto unscale = first.getSkipIf().getDefiningOp<train::UnscaleOp>();
  if (!unscale)
    return first.emitOpError()
           << "skips its update on a flag that no train.unscale computes; "
              "gradient accumulation moves the unscale train-autodiff writes "
              "into the apply step, and needs it";
  train::UpdateLossScaleOp scaler;
  for (Operation *user : unscale.getFoundInf().getUsers())
    if (auto update = dyn_cast<train::UpdateLossScaleOp>(user))
      scaler = update;
  auto scaleLoad = unscale.getScale().getDefiningOp<train::LoadOp>();
  auto goodLoad =
      scaler ? scaler.getGoodSteps().getDefiningOp<train::LoadOp>() : nullptr;
  if (!scaler || !scaleLoad || !goodLoad ||
      scaler.getScale() != unscale.getScale())
    return unscale.emitOpError()
           << "is not followed by the train.update_loss_scale of the loaded "
              "scale that train-autodiff writes; gradient accumulation "
              "cannot move the scaler update into the apply step";
  SmallVector<train::StoreOp> scalerStores;
  for (Operation *user : scaler->getUsers()) {
    auto store = dyn_cast<train::StoreOp>(user);
    if (!store)
      return scaler.emitOpError()
             << "has a result used by '" << user->getName()
             << "'; gradient accumulation moves it into the apply step, "
                "where only stores of the scaler may read it";
    scalerStores.push_back(store);
  }

  Location loc = unscale.getLoc();
  OpBuilder builder(applyFunction.front().getTerminator());
  SmallVector<Value> averaged;
  for (auto &[apply, grad] : scaledUpdates) {
    if (apply.getSkipIf() != unscale.getFoundInf())
      return apply.emitOpError()
             << "skips on another overflow flag than the other updates; "
                "the step must be unscaled by one train.unscale";
    averaged.push_back(grad);
  }
  auto scalar = scaleLoad.getType();
  Value scale =
      builder.create<train::LoadOp>(loc, scalar, scaleLoad.getState());
  auto unscaled = builder.create<train::UnscaleOp>(loc, averaged, scale);
  Value found = unscaled.getFoundInf();
  for (auto [index, entry] : llvm::enumerate(scaledUpdates)) {
    train::ApplyGradientOp apply = entry.first;
    auto param = symbols.lookup<train::ParamOp>(apply.getParam());
    auto optimizer = symbols.lookup<train::OptimizerOp>(apply.getOptimizer());
    if (failed(emitUpdate(builder, apply.getLoc(), param, optimizer,
                          unscaled.getResults()[index], step, found)))
      return failure();
  }
  Value good = builder.create<train::LoadOp>(loc, scalar, goodLoad.getState());
  auto next = builder.create<train::UpdateLossScaleOp>(
      scaler.getLoc(), scale, good, found, scaler.getGrowthInterval());
  for (train::StoreOp store : scalerStores) {
    Value value = store.getValue() == scaler.getNewScale()
                      ? next.getNewScale()
                      : next.getNewGoodSteps();
    builder.create<train::StoreOp>(store.getLoc(), value, store.getState());
    store.erase();
  }
  for (auto &[apply, grad] : scaledUpdates) {
    auto param = symbols.lookup<train::ParamOp>(apply.getParam());
    auto accumulator =
        symbols.lookup<train::ParamOp>((param.getSymName() + ".grad").str());
    if (failed(emitAccumulatorReset(builder, apply.getLoc(), accumulator)))
      return failure();
  }
  // The micro-step's own unscale and scaler update go once the
  // apply_gradients that read them are erased (by run()).
  movedScaling = {scaler, unscale, goodLoad};
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
    if (accumulateSteps > 1 && failed(countLabelsPerStep(function)))
      return failure();
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
    scaledUpdates.clear();
    movedScaling.clear();
    for (train::ApplyGradientOp apply : applies)
      if (failed(materialize(apply, builder, step)))
        return failure();
    if (failed(unscaleAccumulated(step)))
      return failure();
    for (train::ApplyGradientOp apply : applies)
      apply.erase();
    for (Operation *op : movedScaling)
      if (op->use_empty())
        op->erase();
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
