//===- DistDataParallel.cpp - SPMD data parallelism -----------------------===//
//
// The single-device step becomes the step every rank runs on its own slice of
// the batch. Gradients are averaged right after they are produced (so the
// runtime can overlap the all-reduce with the rest of the backward), and the
// loss the step returns is the mean over ranks. A count of labels a loss
// divides by (`train.count_labels`) is averaged too, so that such a loss is
// the mean over the global batch.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/TrainingStep.h"
#include "zero/passes/Passes.h"

#include "zero/dialects/dist/DistOps.h"
#include "zero/dialects/train/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace zero {
#define GEN_PASS_DEF_DISTDATAPARALLEL
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

/// `value` averaged over every axis of a placement of `axes` axes, from the
/// last (the fastest links) to the first: one `dist.all_reduce mean` per
/// axis.
Value emitAverage(OpBuilder &builder, Location loc, Value value, int64_t axes) {
  for (int64_t axis = axes; axis-- > 0;)
    value = builder.create<dist::AllReduceOp>(loc, value,
                                              dist::ReduceKind::mean, axis);
  return value;
}

/// `value` averaged right after its definition; the caller redirects the
/// uses it wants averaged.
Value averageAfterDefinition(Value value, int64_t axes) {
  OpBuilder builder(value.getContext());
  builder.setInsertionPointAfterValue(value);
  return emitAverage(builder, value.getLoc(), value, axes);
}

/// `grad` widened to f32 right after its definition, when it is 16-bit.
Value widenAfterDefinition(Value grad) {
  auto type = cast<RankedTensorType>(grad.getType());
  Type element = type.getElementType();
  if (!element.isBF16() && !element.isF16())
    return grad;
  OpBuilder builder(grad.getContext());
  builder.setInsertionPointAfterValue(grad);
  return builder.create<train::CastOp>(grad.getLoc(),
                                       type.clone(builder.getF32Type()), grad);
}

/// A clip filter's result is its operand clipped, in the operand's type: an
/// operand widened for its reduction makes the clipped gradient f32 too.
/// (An unscale's results are f32 already.)
void retypeFilterResult(OpOperand &operand) {
  if (auto clip = dyn_cast<train::ClipByGlobalNormOp>(operand.getOwner()))
    clip->getResult(operand.getOperandNumber())
        .setType(operand.get().getType());
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
  LogicalResult setMesh(ModuleOp module, dist::PlacementAttr placement);
  /// Places the module on `grid`, unless its state is already sharded for
  /// `placement`; `what` names the option that asked.
  LogicalResult replacePlacement(ModuleOp module, dist::PlacementAttr placement,
                                 ArrayRef<int64_t> grid, StringRef what);
};

LogicalResult DistDataParallelPass::setMesh(ModuleOp module,
                                            dist::PlacementAttr placement) {
  int64_t product = 1;
  for (int64_t extent : mesh) {
    if (extent < 1)
      return mlir::emitError(module.getLoc())
             << "dist-data-parallel: every extent of mesh must be at least "
                "1, got "
             << extent;
    product *= extent;
  }
  if (ranks != 0 && ranks != product)
    return mlir::emitError(module.getLoc())
           << "dist-data-parallel: ranks=" << static_cast<int64_t>(ranks)
           << " but the mesh has " << product << " ranks";
  if (placement && placement.getGrid() == ArrayRef<int64_t>(mesh))
    return success();
  return replacePlacement(module, placement, mesh, "the mesh");
}

LogicalResult
DistDataParallelPass::replacePlacement(ModuleOp module,
                                       dist::PlacementAttr placement,
                                       ArrayRef<int64_t> grid, StringRef what) {
  WalkResult sharded = module.walk([](train::ParamOp param) {
    return param.isSharded() ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (sharded.wasInterrupted())
    return mlir::emitError(module.getLoc())
           << "dist-data-parallel: " << what << " differs from " << placement
           << ", but state is already sharded for it";
  dist::DeviceKind device =
      placement ? placement.getDevice() : dist::DeviceKind::cpu;
  module->setAttr(dist::DistDialect::getPlacementAttrName(),
                  dist::PlacementAttr::get(module.getContext(), device, grid));
  return success();
}

/// On a tensor-parallel module (`dist.tp_axis`, placed on its tp ranks by
/// dist-tensor-parallel) the data-parallel axes go in front of the
/// tensor-parallel one, so that tp ranks are consecutive (within a node):
/// every placement axis already named in the module moves back by the
/// number of data axes. Returns the number of data axes.
FailureOr<int64_t> prependDataAxes(ModuleOp module, ArrayRef<int64_t> data) {
  MLIRContext *context = module.getContext();
  auto tpAxis = module->getAttrOfType<IntegerAttr>(
      dist::DistDialect::getTensorParallelAxisAttrName());
  dist::PlacementAttr placement = dist::lookupPlacement(module);
  if (!placement || tpAxis.getInt() != placement.getNumAxes() - 1)
    return mlir::emitError(module.getLoc())
           << "dist-data-parallel: '"
           << dist::DistDialect::getTensorParallelAxisAttrName()
           << "' names the last axis of the placement dist-tensor-parallel "
              "made; got "
           << tpAxis << " on " << placement;
  int64_t shift = data.size();
  SmallVector<int64_t> grid(data);
  grid.append(placement.getGrid().begin(), placement.getGrid().end());
  module->setAttr(
      dist::DistDialect::getPlacementAttrName(),
      dist::PlacementAttr::get(context, placement.getDevice(), grid));
  module->setAttr(dist::DistDialect::getTensorParallelAxisAttrName(),
                  IntegerAttr::get(tpAxis.getType(), tpAxis.getInt() + shift));
  Builder builder(context);
  auto shifted = [&](int64_t axis) {
    return builder.getI64IntegerAttr(axis + shift);
  };
  module.walk([&](Operation *op) {
    if (auto state = dyn_cast<train::ParamOp>(op)) {
      if (state.isSplit())
        state.setSplitAxisAttr(shifted(*state.getSplitAxis()));
    } else if (auto collective = dyn_cast<dist::CollectiveOpInterface>(op)) {
      op->setAttr("axis", shifted(collective.getPlacementAxis()));
    } else if (auto reshard = dyn_cast<dist::ReshardOp>(op)) {
      auto widen = [&](dist::SbpAttr sbp) {
        SmallVector<dist::SbpDim> dims(shift, dist::SbpDim::broadcast());
        dims.append(sbp.getDims().begin(), sbp.getDims().end());
        return dist::SbpAttr::get(context, dims);
      };
      reshard.setFromAttr(widen(reshard.getFrom()));
      reshard.setToAttr(widen(reshard.getTo()));
    }
  });
  return shift;
}

LogicalResult DistDataParallelPass::setPlacement(ModuleOp module) {
  auto placement = module->getAttrOfType<dist::PlacementAttr>(
      dist::DistDialect::getPlacementAttrName());
  if (ranks < 0)
    return mlir::emitError(module.getLoc())
           << "dist-data-parallel: ranks must be positive, got "
           << static_cast<int64_t>(ranks);
  if (!mesh.empty())
    return setMesh(module, placement);
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
  int64_t size = ranks;
  return replacePlacement(module, placement, size,
                          "ranks=" + std::to_string(size));
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
  bool tensorParallel =
      module->hasAttr(dist::DistDialect::getTensorParallelAxisAttrName());
  int64_t axes = 0;
  if (tensorParallel) {
    if (ranks < 0 || llvm::any_of(mesh, [](int64_t e) { return e < 1; })) {
      mlir::emitError(module.getLoc())
          << "dist-data-parallel: ranks and every extent of mesh must be "
             "positive";
      return signalPassFailure();
    }
    SmallVector<int64_t> data(mesh.begin(), mesh.end());
    if (data.empty())
      data.push_back(ranks == 0 ? 1 : static_cast<int64_t>(ranks));
    FailureOr<int64_t> shift = prependDataAxes(module, data);
    if (failed(shift))
      return signalPassFailure();
    axes = *shift;
  } else {
    if (failed(setPlacement(module)))
      return signalPassFailure();
    axes = dist::lookupPlacement(module).getNumAxes();
  }
  SmallVector<func::FuncOp> functions = getStepFunctions(module);
  if (functions.empty()) {
    mlir::emitError(module.getLoc())
        << "dist-data-parallel: no function is marked "
           "'train.step'; nothing to parallelize";
    return signalPassFailure();
  }

  MLIRContext *context = module.getContext();
  // The batch in rank order: split over every data axis, outermost first;
  // whole on the tensor-parallel ranks, which share one slice of it.
  SmallVector<dist::SbpDim> split(axes, dist::SbpDim::split(0));
  if (tensorParallel)
    split.push_back(dist::SbpDim::broadcast());
  auto batchSplit = dist::SbpAttr::get(context, split);
  for (func::FuncOp function : functions) {
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
      if (isa<RankedTensorType>(function.getArgument(i).getType()) &&
          cast<RankedTensorType>(function.getArgument(i).getType()).getRank())
        function.setArgAttr(i, dist::DistDialect::getSbpAttrName(), batchSplit);

    // A gradient shared by several optimizers is averaged once.
    DenseMap<Value, Value> averaged;
    for (OpOperand *operand : collectGradientOperands(function)) {
      Value &mean = averaged[operand->get()];
      if (!mean) {
        Value grad = operand->get();
        if (reduceDtype == ReduceDtype::f32)
          grad = widenAfterDefinition(grad);
        mean = averageAfterDefinition(grad, axes);
      }
      operand->set(mean);
      retypeFilterResult(*operand);
    }

    // A loss that ignores labels divides by the labels it keeps over the
    // whole batch: every rank divides by the average count, so that the
    // mean over ranks of its loss (and gradient) is the global batch's
    // mean over its real tokens, whatever each rank holds.
    // Under accumulation the count is an input of the step (filled by the
    // runtime from the step's micro-batches), averaged the same way.
    SmallVector<Value> counts;
    function.walk([&](train::CountLabelsOp count) {
      counts.push_back(count.getResult());
    });
    for (BlockArgument argument : function.getArguments())
      if (function.getArgAttr(argument.getArgNumber(),
                              train::TrainDialect::getLabelCountAttrName()))
        counts.push_back(argument);
    for (Value count : counts) {
      SmallVector<OpOperand *> uses = llvm::to_vector(llvm::map_range(
          count.getUses(), [](OpOperand &use) { return &use; }));
      Value global = averageAfterDefinition(count, axes);
      for (OpOperand *use : uses)
        use->set(global);
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
        operand.set(emitAverage(builder, ret.getLoc(), operand.get(), axes));
      }
    });
  }
  module->setAttr(dist::DistDialect::getZeroStageAttrName(),
                  IntegerAttr::get(IntegerType::get(context, 64), 0));
  if (reduceDtype == ReduceDtype::f32)
    module->setAttr(dist::DistDialect::getReduceTypeAttrName(),
                    TypeAttr::get(Float32Type::get(context)));
}

} // namespace
