//===- TrainRebatch.cpp - The step at a smaller micro-batch ---------------===//
//
// The same training with `factor` times the accumulation runs the step on a
// `factor`-th of the rows. Shapes are static, so the step is rewritten: the
// batch (dimension 0 of every ranked argument) is divided, and so is
// dimension 0 of every value computed from a divided one. Each rewritten op
// is verified on the spot, so an op that does not carry the batch in
// dimension 0 stops the rewrite with its own diagnostic rather than being
// given a shape it does not compute.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/TrainingStep.h"
#include "zero/passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"

namespace zero {
#define GEN_PASS_DEF_TRAINREBATCH
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

/// `type` with dimension 0 divided by `factor`, or null when it has no
/// dimension 0 or `factor` does not divide it.
RankedTensorType divided(Type type, int64_t factor) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || ranked.getRank() == 0 || ranked.isDynamicDim(0) ||
      ranked.getDimSize(0) % factor != 0)
    return nullptr;
  SmallVector<int64_t> shape(ranked.getShape());
  shape[0] /= factor;
  return ranked.clone(shape);
}

struct TrainRebatchPass : zero::impl::TrainRebatchBase<TrainRebatchPass> {
  using TrainRebatchBase::TrainRebatchBase;

  LogicalResult rebatch(func::FuncOp function);
  void runOnOperation() override;
};

LogicalResult TrainRebatchPass::rebatch(func::FuncOp function) {
  Block &body = function.front();
  // The batch: dimension 0 of every ranked argument, one extent for all.
  std::optional<int64_t> batch;
  for (BlockArgument argument : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(argument.getType());
    if (!type || type.getRank() == 0)
      continue;
    if (batch && *batch != type.getDimSize(0))
      return function.emitError()
             << "train-rebatch: the step's arguments disagree on the batch "
                "(dimension 0): "
             << *batch << " and " << type.getDimSize(0) << " (argument #"
             << argument.getArgNumber() << ")";
    batch = type.getDimSize(0);
  }
  if (!batch)
    return function.emitError()
           << "train-rebatch: the step has no batch-major argument";
  if (*batch % factor != 0)
    return function.emitError()
           << "train-rebatch: factor " << static_cast<int64_t>(factor)
           << " does not divide the batch of " << *batch;

  // Each divided value's dimension 0 before the rewrite.
  DenseMap<Value, int64_t> before;
  for (BlockArgument argument : body.getArguments())
    if (RankedTensorType type = divided(argument.getType(), factor)) {
      before[argument] =
          cast<RankedTensorType>(argument.getType()).getDimSize(0);
      argument.setType(type);
    }
  for (Operation &op : llvm::make_early_inc_range(body)) {
    // The return takes the new types; the function's type follows below.
    if (op.hasTrait<OpTrait::IsTerminator>())
      continue;
    SmallVector<int64_t> extents;
    for (Value operand : op.getOperands())
      if (auto it = before.find(operand); it != before.end())
        extents.push_back(it->second);
    if (extents.empty())
      continue;
    // A splat constant of the batch's extent beside a divided operand (an
    // epsilon, a fill): the op's own copy of it is divided too.
    for (OpOperand &operand : op.getOpOperands()) {
      auto constant = operand.get().getDefiningOp<arith::ConstantOp>();
      auto splat =
          constant ? dyn_cast<SplatElementsAttr>(constant.getValue()) : nullptr;
      RankedTensorType type =
          splat ? divided(splat.getType(), factor) : nullptr;
      if (!type || !llvm::is_contained(extents, splat.getType().getDimSize(0)))
        continue;
      OpBuilder builder(&op);
      operand.set(builder.create<arith::ConstantOp>(
          constant.getLoc(),
          SplatElementsAttr::get(type, splat.getSplatValue<Attribute>())));
      if (constant->use_empty())
        constant->erase();
    }
    for (OpResult result : op.getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || type.getRank() == 0)
        continue;
      RankedTensorType smaller = divided(type, factor);
      if (!smaller)
        return op.emitError()
               << "train-rebatch: result #" << result.getResultNumber()
               << " of type " << type << " reads the batch but factor "
               << static_cast<int64_t>(factor)
               << " does not divide its dimension 0";
      before[result] = type.getDimSize(0);
      result.setType(smaller);
    }
    if (failed(mlir::verify(&op, /*verifyRecursively=*/false)))
      return op.emitError() << "train-rebatch: this op does not keep the "
                               "batch in dimension 0, so the step cannot "
                               "run on 1/"
                            << static_cast<int64_t>(factor) << " of its rows";
  }
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  function.setFunctionType(FunctionType::get(function.getContext(),
                                             body.getArgumentTypes(),
                                             returnOp.getOperandTypes()));
  return success();
}

void TrainRebatchPass::runOnOperation() {
  if (factor < 1) {
    mlir::emitError(getOperation().getLoc())
        << "train-rebatch: factor must be at least 1, got "
        << static_cast<int64_t>(factor);
    return signalPassFailure();
  }
  if (factor == 1)
    return;
  SmallVector<func::FuncOp> functions = getStepFunctions(getOperation());
  if (functions.empty()) {
    mlir::emitError(getOperation().getLoc())
        << "train-rebatch: no function is marked 'train.step'";
    return signalPassFailure();
  }
  for (func::FuncOp function : functions)
    if (failed(rebatch(function)))
      return signalPassFailure();
}

} // namespace
