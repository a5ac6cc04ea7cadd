//===- DistDataParallel.cpp - SPMD data parallelism -----------------------===//
//
// The single-device step becomes the step every rank runs on its own slice of
// the batch. Gradients are averaged right after they are produced (so the
// runtime can overlap the all-reduce with the rest of the backward), and the
// loss the step returns is the mean over ranks.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/TrainingStep.h"
#include "zero/passes/Passes.h"

#include "zero/dialects/dist/DistOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace zero {
#define GEN_PASS_DEF_DISTDATAPARALLEL
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

/// Inserts `dist.all_reduce mean` of `value` right after its definition and
/// returns it; the caller redirects the uses it wants averaged.
Value averageAfterDefinition(Value value) {
  OpBuilder builder(value.getContext());
  builder.setInsertionPointAfterValue(value);
  return builder.create<dist::AllReduceOp>(value.getLoc(), value,
                                           dist::ReduceKind::mean,
                                           /*axis=*/0);
}

/// The gradient operands that reach an optimizer in `function`.
SmallVector<OpOperand *> collectGradientOperands(func::FuncOp function) {
  SmallVector<OpOperand *> operands;
  function.walk([&](Operation *op) {
    // A clipped or unscaled gradient is averaged before the filter, so that
    // the norm and the overflow check see the averaged gradients.
    if (auto apply = dyn_cast<train::ApplyGradientOp>(op))
      operands.push_back(&getRawGradientOperand(apply.getGradMutable()));
    else if (isUpdateOp(op))
      operands.push_back(&getRawGradientOperand(UpdateView(op)));
  });
  return operands;
}

struct DistDataParallelPass
    : zero::impl::DistDataParallelBase<DistDataParallelPass> {
  using DistDataParallelBase::DistDataParallelBase;

  void runOnOperation() override;
  LogicalResult setPlacement(ModuleOp module);
};

LogicalResult DistDataParallelPass::setPlacement(ModuleOp module) {
  auto placement = module->getAttrOfType<dist::PlacementAttr>(
      dist::DistDialect::getPlacementAttrName());
  if (ranks < 0)
    return mlir::emitError(module.getLoc())
           << "dist-data-parallel: ranks must be positive, got "
           << static_cast<int64_t>(ranks);
  if (!placement && ranks == 0)
    return mlir::emitError(module.getLoc())
           << "dist-data-parallel: the module has no 'dist.placement'; "
              "place it (e.g. #dist.placement<cpu, [4]>) or pass ranks=N";
  if (ranks == 0 || (placement && placement.getGroupSize(0) == ranks))
    return success();
  if (placement && placement.getNumAxes() != 1)
    return mlir::emitError(module.getLoc())
           << "dist-data-parallel: ranks=" << static_cast<int64_t>(ranks)
           << " would resize " << placement << ", which has "
           << placement.getNumAxes()
           << " axes; set the placement in the module instead";
  WalkResult sharded = module.walk([](train::ParamOp param) {
    return param.isSharded() ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (sharded.wasInterrupted())
    return mlir::emitError(module.getLoc())
           << "dist-data-parallel: ranks=" << static_cast<int64_t>(ranks)
           << " differs from " << placement
           << ", but state is already sharded for it";
  dist::DeviceKind device =
      placement ? placement.getDevice() : dist::DeviceKind::cpu;
  module->setAttr(dist::DistDialect::getPlacementAttrName(),
                  dist::PlacementAttr::get(module.getContext(), device,
                                           {static_cast<int64_t>(ranks)}));
  return success();
}

void DistDataParallelPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (module->hasAttr(dist::DistDialect::getZeroStageAttrName())) {
    mlir::emitError(module.getLoc())
        << "dist-data-parallel: the module is already data "
           "parallel ('"
        << dist::DistDialect::getZeroStageAttrName() << "' is set)";
    return signalPassFailure();
  }
  if (failed(setPlacement(module)))
    return signalPassFailure();
  SmallVector<func::FuncOp> functions = getStepFunctions(module);
  if (functions.empty()) {
    mlir::emitError(module.getLoc())
        << "dist-data-parallel: no function is marked "
           "'train.step'; nothing to parallelize";
    return signalPassFailure();
  }

  MLIRContext *context = module.getContext();
  auto batchSplit = dist::SbpAttr::get(context, {dist::SbpDim::split(0)});
  for (func::FuncOp function : functions) {
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
      if (isa<RankedTensorType>(function.getArgument(i).getType()) &&
          cast<RankedTensorType>(function.getArgument(i).getType()).getRank())
        function.setArgAttr(i, dist::DistDialect::getSbpAttrName(), batchSplit);

    // A gradient shared by several optimizers is averaged once.
    DenseMap<Value, Value> averaged;
    for (OpOperand *operand : collectGradientOperands(function)) {
      Value &mean = averaged[operand->get()];
      if (!mean)
        mean = averageAfterDefinition(operand->get());
      operand->set(mean);
    }

    function.walk([&](func::ReturnOp ret) {
      OpBuilder builder(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        auto type = dyn_cast<RankedTensorType>(operand.get().getType());
        // A scalar (the loss) is averaged; a batch-shaped result stays this
        // rank's own.
        if (!type || type.getRank() != 0 ||
            !isa<FloatType>(type.getElementType()))
          continue;
        operand.set(builder.create<dist::AllReduceOp>(
            ret.getLoc(), operand.get(), dist::ReduceKind::mean, 0));
      }
    });
  }
  module->setAttr(dist::DistDialect::getZeroStageAttrName(),
                  IntegerAttr::get(IntegerType::get(context, 64), 0));
}

} // namespace
