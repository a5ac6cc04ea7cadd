//===- TrainAutodiff.cpp - Reverse-mode backward of a forward-only step ---===//
//
// Turns a `train.step` function whose loss is named by `train.minimize` into
// a complete step: the backward pass built from each op's
// `train::GradientOpInterface` rule, and one `train.apply_gradient` per
// trainable parameter. The later passes then see exactly what a hand-written
// backward would give them.
//
// With `recompute=true`, the backward recomputes the results of forward ops
// marked `train.recompute` (activation checkpointing): it uses clones of
// those ops, emitted just before the first backward use, so the forward
// values die at their last forward use instead of living until the
// backward reaches them.
//
//===----------------------------------------------------------------------===//

#include "zero/passes/Passes.h"

#include "zero/dialects/train/TrainGradients.h"
#include "zero/dialects/train/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"

namespace zero {
#define GEN_PASS_DEF_TRAINAUTODIFF
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

/// Float tensors and scalars: the values a gradient can flow through.
bool isDifferentiableType(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    type = shaped.getElementType();
  return isa<FloatType>(type);
}

/// Builds the backward of one step function.
class Differentiator {
public:
  Differentiator(func::FuncOp step, train::MinimizeOp minimize,
                 train::OptimizerOp optimizer, SymbolTableCollection &symbols,
                 bool recompute)
      : step(step), minimize(minimize), optimizer(optimizer), symbols(symbols),
        recomputeMarked(recompute) {}

  LogicalResult run();

private:
  LogicalResult checkShape();
  /// The trainable parameter `op` loads, or null.
  train::ParamOp getTrainableParam(Operation *op);
  /// Marks the values on a path from a trainable parameter to the loss.
  void findActiveValues();
  LogicalResult differentiate(Operation *op, OpBuilder &builder);
  /// The gradient of `value`: its contributions summed in forward order.
  Value takeGradient(Value value, OpBuilder &builder);
  /// The sum of `terms` as one concat when each is a pad of its own part of
  /// one dimension and together they cover it (the gradient of a value read
  /// only by slices that tile it: a fused query/key/value projection split
  /// three ways), or null. Exact, and a third of the sum's traffic.
  Value concatTiledPads(ArrayRef<Value> terms, OpBuilder &builder);
  void applyGradients(OpBuilder &builder);
  /// The optimizer that updates `param`: its group's (`with @name`), or the
  /// step's default.
  FlatSymbolRefAttr optimizerOf(train::ParamOp param) {
    if (FlatSymbolRefAttr group = param.getOptimizerAttr())
      return group;
    return FlatSymbolRefAttr::get(optimizer.getSymNameAttr());
  }
  /// Dynamic loss scaling (the optimizer's `loss_scale`): declares the
  /// scaler's state and loads the current scale, the backward's seed.
  FailureOr<Value> loadLossScale(OpBuilder &builder);
  /// Unscales `grads` (one per parameter), applies them unless they
  /// overflowed, and steps the scaler.
  void applyScaledGradients(OpBuilder &builder,
                            ArrayRef<std::pair<train::ParamOp, Value>> grads);
  void eraseUnusedGradients(Operation *first);
  /// Whether `op` is a forward op whose results the backward recomputes.
  bool isRecomputed(Operation *op) const;
  LogicalResult checkRecomputeMarks();
  /// Makes the backward from `first` on use recomputed clones instead of the
  /// results of marked forward ops.
  void recompute(Operation *first);
  /// Clones `op` before `builder`'s insertion point, after the clones of
  /// the marked ops it depends on that are not cloned yet.
  void cloneForBackward(Operation *op, OpBuilder &builder);
  InFlightDiagnostic emitNoRule(Operation *op);

  func::FuncOp step;
  train::MinimizeOp minimize;
  train::OptimizerOp optimizer;
  SymbolTableCollection &symbols;
  /// The pass option: honor the `train.recompute` marks.
  bool recomputeMarked;
  /// The forward ops, in order: those before the train.minimize.
  SmallVector<Operation *> forward;
  DenseSet<Value> active;
  /// Gradient contributions of each active value, in the order the reverse
  /// sweep produced them (reverse order of the uses).
  DenseMap<Value, SmallVector<Value, 2>> contributions;
  DenseSet<Operation *> forwardOps;
  /// Forward values of marked ops -> their recomputed clones.
  IRMapping recomputed;
  /// With loss scaling: the loaded scale and the scaler's state.
  Value lossScale;
  train::ParamOp scaleState, goodStepsState;
};

train::ParamOp Differentiator::getTrainableParam(Operation *op) {
  auto load = dyn_cast<train::LoadOp>(op);
  if (!load)
    return nullptr;
  auto param = symbols.lookupNearestSymbolFrom<train::ParamOp>(
      load, load.getStateAttr());
  if (!param || param.getRole() != train::Role::param)
    return nullptr;
  return param;
}

LogicalResult Differentiator::checkShape() {
  if (minimize->getBlock() != &step.getBody().front())
    return minimize.emitOpError()
           << "is nested in control flow; train-autodiff needs the loss to "
              "be minimized at the top level of @"
           << step.getSymName();
  if (!step.getBody().hasOneBlock())
    return step.emitOpError()
           << "has several blocks; train-autodiff differentiates a step "
              "whose body is one block";
  for (auto apply : step.getOps<train::ApplyGradientOp>())
    return apply.emitOpError()
           << "is in a step with a train.minimize; train-autodiff generates "
              "every apply_gradient of such a step, remove the hand-written "
              "ones";
  for (Operation &op : step.getBody().front()) {
    if (&op == minimize.getOperation())
      break;
    // Shards have no gradient of their own: the step must still be the
    // single-device one.
    if (train::ParamOp param = getTrainableParam(&op);
        param && param.isSharded())
      return op.emitOpError()
             << "loads " << param.getSymName()
             << ", which is stored sharded; run train-autodiff before "
                "zero-shard";
    forward.push_back(&op);
  }
  return success();
}

void Differentiator::findActiveValues() {
  DenseSet<Value> varied;
  for (Operation *op : forward) {
    bool fromParam = getTrainableParam(op) != nullptr;
    // Values captured by a region count as operands.
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        fromParam |= varied.contains(operand);
    });
    if (fromParam)
      for (Value result : op->getResults())
        if (isDifferentiableType(result.getType()))
          varied.insert(result);
  }
  DenseSet<Value> useful{minimize.getLoss()};
  for (Operation *op : llvm::reverse(forward)) {
    if (llvm::none_of(op->getResults(),
                      [&](Value v) { return useful.contains(v); }))
      continue;
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        useful.insert(operand);
    });
  }
  for (Value value : varied)
    if (useful.contains(value))
      active.insert(value);
}

InFlightDiagnostic Differentiator::emitNoRule(Operation *op) {
  InFlightDiagnostic diag =
      op->emitOpError()
      << "is on the path from a trainable parameter to the loss but has no "
         "gradient rule; train-autodiff differentiates ops that implement "
         "train::GradientOpInterface (the train compute ops, and arith.addf, "
         "subf, mulf, divf and negf on tensors)";
  diag.attachNote(minimize.getLoc()) << "the loss is minimized here";
  return diag;
}

Value Differentiator::takeGradient(Value value, OpBuilder &builder) {
  auto it = contributions.find(value);
  if (it == contributions.end())
    return nullptr;
  // Summing in forward order of the uses, as a hand-written backward does,
  // gives the same rounding.
  SmallVector<Value, 2> terms(llvm::reverse(it->second));
  contributions.erase(it);
  if (Value joined = concatTiledPads(terms, builder))
    return joined;
  Value sum = terms.front();
  for (Value term : llvm::drop_begin(terms))
    sum =
        builder.create<train::AddOp>(value.getLoc(), sum.getType(), sum, term);
  return sum;
}

Value Differentiator::concatTiledPads(ArrayRef<Value> terms,
                                      OpBuilder &builder) {
  if (terms.size() < 2)
    return nullptr;
  SmallVector<train::PadOp> pads;
  for (Value term : terms) {
    auto pad = term.getDefiningOp<train::PadOp>();
    if (!pad || !pad->use_empty() ||
        (!pads.empty() && pad.getDim() != pads.front().getDim()))
      return nullptr;
    pads.push_back(pad);
  }
  llvm::sort(pads, [](train::PadOp a, train::PadOp b) {
    return a.getOffset() < b.getOffset();
  });
  int64_t dim = pads.front().getDim(), covered = 0;
  SmallVector<Value> pieces;
  for (train::PadOp pad : pads) {
    if (static_cast<int64_t>(pad.getOffset()) != covered)
      return nullptr;
    covered += cast<RankedTensorType>(pad.getInput().getType()).getDimSize(dim);
    pieces.push_back(pad.getInput());
  }
  auto type = cast<RankedTensorType>(terms.front().getType());
  if (covered != type.getDimSize(dim))
    return nullptr;
  Value joined =
      builder.create<train::ConcatOp>(pads.front().getLoc(), type, pieces, dim);
  for (train::PadOp pad : pads)
    pad.erase();
  return joined;
}

LogicalResult Differentiator::differentiate(Operation *op, OpBuilder &builder) {
  SmallVector<Value> resultGradients;
  bool any = false;
  for (Value result : op->getResults()) {
    resultGradients.push_back(
        active.contains(result) ? takeGradient(result, builder) : Value());
    any |= resultGradients.back() != nullptr;
  }
  if (!any)
    return success();
  auto rule = dyn_cast<train::GradientOpInterface>(op);
  if (!rule)
    return emitNoRule(op);
  SmallVector<Value> operandGradients;
  if (failed(rule.buildGradients(builder, resultGradients, operandGradients)))
    return failure();
  if (operandGradients.size() != op->getNumOperands())
    return op->emitOpError()
           << "gradient rule built " << operandGradients.size()
           << " gradients for " << op->getNumOperands() << " operands";
  for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGradients)) {
    if (!grad || !active.contains(operand))
      continue;
    if (grad.getType() != operand.getType())
      return op->emitOpError()
             << "gradient rule built a " << grad.getType()
             << " gradient for an operand of type " << operand.getType();
    contributions[operand].push_back(grad);
  }
  return success();
}

void Differentiator::applyGradients(OpBuilder &builder) {
  // One summed gradient per parameter, however many loads tie it.
  llvm::MapVector<Operation *, SmallVector<Value>> perParam;
  for (Operation *op : forward)
    if (train::ParamOp param = getTrainableParam(op))
      if (Value grad = takeGradient(op->getResult(0), builder))
        perParam[param].push_back(grad);
  SmallVector<std::pair<train::ParamOp, Value>> summed;
  for (auto &[paramOp, grads] : perParam) {
    auto param = cast<train::ParamOp>(paramOp);
    Value sum = grads.front();
    for (Value grad : llvm::drop_begin(grads))
      sum = builder.create<train::AddOp>(minimize.getLoc(), sum.getType(), sum,
                                         grad);
    summed.push_back({param, sum});
  }
  if (lossScale)
    return applyScaledGradients(builder, summed);
  for (auto [param, grad] : summed)
    builder.create<train::ApplyGradientOp>(
        minimize.getLoc(), grad, FlatSymbolRefAttr::get(param.getSymNameAttr()),
        optimizerOf(param), /*skip_if=*/nullptr);
}

FailureOr<Value> Differentiator::loadLossScale(OpBuilder &builder) {
  MLIRContext *context = step.getContext();
  auto module = step->getParentOfType<ModuleOp>();
  SymbolTable &table = symbols.getSymbolTable(module);
  auto scalar = RankedTensorType::get({}, Float32Type::get(context));
  auto declare = [&](StringRef name, double initial) -> train::ParamOp {
    if (table.lookup(name)) {
      optimizer.emitOpError()
          << "scales the loss, which needs the symbol @" << name
          << " for the loss scaler's state, but it is already taken";
      return nullptr;
    }
    OpBuilder declBuilder(optimizer);
    declBuilder.setInsertionPointAfter(optimizer);
    auto init = initial == 0.0
                    ? train::InitAttr::get(context, train::InitKind::zeros,
                                           APFloat(0.0), APFloat(0.0))
                    : train::InitAttr::get(context, train::InitKind::constant,
                                           APFloat(initial), APFloat(0.0));
    auto state = declBuilder.create<train::ParamOp>(
        optimizer.getLoc(), name, train::Role::scaler,
        /*owner=*/nullptr, scalar, train::StorageLayoutKind::replicated,
        /*shard_axes=*/nullptr, /*local_type=*/nullptr, init,
        /*optimizer=*/nullptr, /*split_dim=*/nullptr, /*split_axis=*/nullptr);
    table.insert(state);
    return state;
  };
  // Declared counter first, so that the scale (inserted after the
  // optimizer last) prints before it.
  goodStepsState = declare("loss_scale.good_steps", 0.0);
  if (!goodStepsState)
    return failure();
  scaleState =
      declare("loss_scale", optimizer.getLossScale()->convertToDouble());
  if (!scaleState)
    return failure();
  Value scale = builder.create<train::LoadOp>(minimize.getLoc(), scalar,
                                              scaleState.getSymName());
  lossScale = scale;
  Type lossType = minimize.getLoss().getType();
  if (lossType != scalar)
    scale = builder.create<train::CastOp>(minimize.getLoc(), lossType, scale);
  return scale;
}

void Differentiator::applyScaledGradients(
    OpBuilder &builder, ArrayRef<std::pair<train::ParamOp, Value>> grads) {
  Location loc = minimize.getLoc();
  SmallVector<Value> scaled;
  for (auto [param, grad] : grads)
    scaled.push_back(grad);
  auto unscale = builder.create<train::UnscaleOp>(loc, scaled, lossScale);
  Value found = unscale.getFoundInf();
  for (auto [index, entry] : llvm::enumerate(grads)) {
    train::ParamOp param = entry.first;
    builder.create<train::ApplyGradientOp>(
        loc, unscale.getResults()[index],
        FlatSymbolRefAttr::get(param.getSymNameAttr()), optimizerOf(param),
        found);
  }
  auto scalar = lossScale.getType();
  Value good =
      builder.create<train::LoadOp>(loc, scalar, goodStepsState.getSymName());
  auto next = builder.create<train::UpdateLossScaleOp>(
      loc, lossScale, good, found, optimizer.getGrowthIntervalValue());
  builder.create<train::StoreOp>(loc, next.getNewScale(),
                                 scaleState.getSymName());
  builder.create<train::StoreOp>(loc, next.getNewGoodSteps(),
                                 goodStepsState.getSymName());
}

void Differentiator::eraseUnusedGradients(Operation *first) {
  SmallVector<Operation *> backward;
  for (Operation *op = first; op; op = op->getNextNode())
    backward.push_back(op);
  for (Operation *op : llvm::reverse(backward))
    if (isOpTriviallyDead(op))
      op->erase();
}

bool Differentiator::isRecomputed(Operation *op) const {
  return recomputeMarked && forwardOps.contains(op) &&
         op->hasAttr(train::TrainDialect::getRecomputeAttrName());
}

LogicalResult Differentiator::checkRecomputeMarks() {
  for (Operation *op : forward) {
    if (!isRecomputed(op))
      continue;
    // Running an op twice is only the same as keeping its result when the
    // op does nothing but compute it: a second train.load could see
    // another value, a second store would store twice.
    if (!isMemoryEffectFree(op))
      return op->emitOpError()
             << "is marked " << train::TrainDialect::getRecomputeAttrName()
             << " but reads or writes state; train-autodiff recompute=true "
                "recomputes side-effect-free ops only, remove the mark";
  }
  return success();
}

void Differentiator::cloneForBackward(Operation *op, OpBuilder &builder) {
  // Operands of the op and values its regions capture alike.
  op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && isRecomputed(def) && !recomputed.contains(operand))
        cloneForBackward(def, builder);
    }
  });
  // clone() maps the results into `recomputed` for later uses; its mark
  // goes with the forward op's in run(). The clone says it repeats the
  // forward, so that the plan counts its FLOPs once in the model's.
  Operation *clone = builder.clone(*op, recomputed);
  clone->setAttr(train::TrainDialect::getRecomputedAttrName(),
                 builder.getUnitAttr());
}

void Differentiator::recompute(Operation *first) {
  SmallVector<Operation *> backward;
  for (Operation *op = first; op && !op->hasTrait<OpTrait::IsTerminator>();
       op = op->getNextNode())
    backward.push_back(op);
  OpBuilder builder(step.getContext());
  for (Operation *op : backward) {
    op->walk([&](Operation *nested) {
      for (OpOperand &use : nested->getOpOperands()) {
        Value value = use.get();
        Operation *def = value.getDefiningOp();
        if (!def || !isRecomputed(def))
          continue;
        // The first backward use recomputes; later uses share the clone.
        if (!recomputed.contains(value)) {
          builder.setInsertionPoint(op);
          cloneForBackward(def, builder);
        }
        use.set(recomputed.lookup(value));
      }
    });
  }
}

LogicalResult Differentiator::run() {
  if (failed(checkShape()))
    return failure();
  forwardOps.insert(forward.begin(), forward.end());
  if (failed(checkRecomputeMarks()))
    return failure();
  findActiveValues();
  if (!active.contains(minimize.getLoss()))
    return minimize.emitOpError()
           << "minimizes a loss that depends on no trainable parameter "
              "(every parameter it reads is frozen, or it reads none); "
              "there is nothing to train";
  for (Operation *op : forward)
    for (Value result : op->getResults())
      if (active.contains(result) && !isa<RankedTensorType>(result.getType()))
        return op->emitOpError()
               << "produces a " << result.getType()
               << " on the path from a parameter to the loss; "
                  "train-autodiff differentiates ranked tensors only";

  OpBuilder builder(step.getBody().front().getTerminator());
  Value loss = minimize.getLoss();
  // The backward starts at d loss = 1, or at the loss scale.
  Value seed;
  if (optimizer.getLossScale()) {
    FailureOr<Value> scale = loadLossScale(builder);
    if (failed(scale))
      return failure();
    seed = *scale;
  } else {
    seed = builder.create<arith::ConstantOp>(
        minimize.getLoc(),
        DenseElementsAttr::get(
            cast<ShapedType>(loss.getType()),
            builder.getFloatAttr(getElementTypeOrSelf(loss.getType()), 1.0)));
  }
  Operation *backwardStart =
      lossScale ? lossScale.getDefiningOp() : seed.getDefiningOp();
  contributions[loss].push_back(seed);
  for (Operation *op : llvm::reverse(forward)) {
    if (getTrainableParam(op))
      continue; // A gradient sink: applied below.
    if (op->getNumRegions() != 0 &&
        llvm::any_of(op->getResults(),
                     [&](Value v) { return active.contains(v); }))
      return emitNoRule(op);
    if (failed(differentiate(op, builder)))
      return failure();
  }
  applyGradients(builder);
  minimize.erase();
  eraseUnusedGradients(backwardStart);
  // After the erasure, so that no gradient left out recomputes anything.
  recompute(backwardStart);
  // The marks are consumed like train.minimize: the result is the same
  // step as one written without them (with recompute=false, the same as
  // an unmarked step), and later passes and tools need not know them.
  step.walk([](Operation *op) {
    op->removeAttr(train::TrainDialect::getRecomputeAttrName());
  });
  return success();
}

struct TrainAutodiffPass : zero::impl::TrainAutodiffBase<TrainAutodiffPass> {
  using TrainAutodiffBase::TrainAutodiffBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    TrainAutodiffBase::getDependentDialects(registry);
    // The arith gradient rules live outside the arith dialect.
    train::registerGradientInterfaceExternalModels(registry);
  }

  /// The optimizer named by the option, or the module's only one.
  FailureOr<train::OptimizerOp> getOptimizer(train::MinimizeOp minimize);

  void runOnOperation() override;
};

FailureOr<train::OptimizerOp>
TrainAutodiffPass::getOptimizer(train::MinimizeOp minimize) {
  ModuleOp module = getOperation();
  if (!optimizer.empty()) {
    if (auto named = SymbolTable(module).lookup<train::OptimizerOp>(optimizer))
      return named;
    minimize.emitError() << "train-autodiff: optimizer=" << optimizer
                         << " names no train.optimizer in the module";
    return failure();
  }
  auto optimizers = llvm::to_vector(module.getOps<train::OptimizerOp>());
  if (optimizers.size() == 1)
    return optimizers.front();
  // Parameter groups name their optimizers; the default is the one no
  // parameter names (it also holds the loss scaling), or, when every
  // trainable parameter names its own, the first.
  llvm::SmallDenseSet<StringRef> named;
  bool allNamed = true;
  for (auto param : module.getOps<train::ParamOp>()) {
    if (param.getRole() != train::Role::param)
      continue;
    if (FlatSymbolRefAttr group = param.getOptimizerAttr())
      named.insert(group.getValue());
    else
      allNamed = false;
  }
  SmallVector<train::OptimizerOp> unnamed;
  for (train::OptimizerOp op : optimizers)
    if (!named.contains(op.getSymName()))
      unnamed.push_back(op);
  if (unnamed.size() == 1)
    return unnamed.front();
  if (unnamed.empty() && allNamed && !optimizers.empty())
    return optimizers.front();
  if (optimizers.empty()) {
    minimize.emitError() << "train-autodiff: the module declares no "
                            "train.optimizer to apply the gradients with; "
                            "declare one";
    return failure();
  }
  InFlightDiagnostic diag = minimize.emitError()
                            << "train-autodiff: the module declares "
                            << optimizers.size() << " optimizers (";
  llvm::interleaveComma(optimizers, diag, [&](train::OptimizerOp op) {
    diag << "@" << op.getSymName();
  });
  diag << ") and no parameter group ('with @name' on a train.param) tells "
          "which is the default; choose one with the pass option "
          "optimizer=NAME";
  return failure();
}

void TrainAutodiffPass::runOnOperation() {
  SymbolTableCollection symbols;
  for (auto step : getOperation().getOps<func::FuncOp>()) {
    if (!step->hasAttr(train::TrainDialect::getStepAttrName()))
      continue;
    train::MinimizeOp minimize;
    step.walk([&](train::MinimizeOp op) { minimize = op; });
    if (!minimize)
      continue;
    FailureOr<train::OptimizerOp> chosen = getOptimizer(minimize);
    if (failed(chosen) ||
        failed(
            Differentiator(step, minimize, *chosen, symbols, recompute).run()))
      return signalPassFailure();
  }
}

} // namespace
