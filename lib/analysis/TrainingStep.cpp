//===- TrainingStep.cpp - What the passes know about a training step ------===//

#include "zero/analysis/TrainingStep.h"

#include "zero/dialects/dist/DistOps.h"
#include "zero/dialects/train/TrainDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace zero {

SmallVector<func::FuncOp> getStepFunctions(ModuleOp module) {
  SmallVector<func::FuncOp> functions;
  for (auto function : module.getOps<func::FuncOp>())
    if (function->hasAttr(train::TrainDialect::getStepAttrName()) ||
        function->hasAttr(train::TrainDialect::getApplyStepAttrName()))
      functions.push_back(function);
  return functions;
}

bool isUpdateOp(Operation *op) {
  return isa<train::SgdOp, train::SgdMomentumOp, train::AdamOp, train::AdamWOp>(
      op);
}

Value getRawGradient(Value grad) {
  if (auto clip = grad.getDefiningOp<train::ClipByGlobalNormOp>())
    return clip.getOperand(cast<OpResult>(grad).getResultNumber());
  return grad;
}

OpOperand &getRawGradientOperand(const UpdateView &update) {
  Value grad = update.getGrad();
  if (auto clip = grad.getDefiningOp<train::ClipByGlobalNormOp>())
    return clip->getOpOperand(cast<OpResult>(grad).getResultNumber());
  return update.getGradOperand();
}

void expandClipping(Operation *root, function_ref<bool(Value)> isShard) {
  SmallVector<train::ClipByGlobalNormOp> clips;
  root->walk([&](train::ClipByGlobalNormOp clip) { clips.push_back(clip); });
  for (train::ClipByGlobalNormOp clip : clips) {
    OpBuilder builder(clip);
    Location loc = clip.getLoc();
    auto scalar = RankedTensorType::get({}, builder.getF32Type());
    SmallVector<Value> shards, whole;
    for (Value grad : clip.getGrads()) {
      bool shard = isShard ? isShard(grad) : clip.getSharded();
      (shard ? shards : whole).push_back(grad);
    }
    Value total;
    // Shards partition each gradient (padding is zero), so the squares of
    // the whole gradients are the sum of every rank's partial sum.
    if (!shards.empty())
      total = builder.create<dist::AllReduceOp>(
          loc, builder.create<train::SumSquaresOp>(loc, scalar, shards),
          dist::ReduceKind::sum, /*axis=*/0);
    if (!whole.empty()) {
      Value squares = builder.create<train::SumSquaresOp>(loc, scalar, whole);
      total =
          total ? builder.create<train::AddOp>(loc, total, squares) : squares;
    }
    auto scaled = builder.create<train::ScaleByNormOp>(
        loc, clip.getGrads(), total, clip.getMaxNorm().convertToDouble());
    clip.replaceAllUsesWith(scaled.getResults());
    clip.erase();
  }
}

train::ParamOp getLoadedState(Value value, SymbolTableCollection &symbols) {
  auto load = value.getDefiningOp<train::LoadOp>();
  if (!load)
    return nullptr;
  return symbols.lookupNearestSymbolFrom<train::ParamOp>(load,
                                                         load.getStateAttr());
}

int64_t getElementBytes(Type elementType) {
  return llvm::divideCeil(elementType.getIntOrFloatBitWidth(), 8);
}

int64_t getTensorBytes(RankedTensorType type) {
  return type.getNumElements() * getElementBytes(type.getElementType());
}

RankedTensorType getFlatType(RankedTensorType type) {
  return RankedTensorType::get({type.getNumElements()}, type.getElementType());
}

RankedTensorType getShardType(RankedTensorType logical,
                              train::StorageLayoutKind layout,
                              int64_t groupSize) {
  StorageLayout storage = StorageLayout::Replicated;
  if (layout == train::StorageLayoutKind::flat)
    storage = StorageLayout::Flat;
  else if (layout == train::StorageLayoutKind::dim0)
    storage = StorageLayout::Dim0;
  std::optional<SmallVector<int64_t>> shape =
      localShapeOf(logical.getShape(), storage, groupSize);
  if (!shape)
    return nullptr;
  return RankedTensorType::get(*shape, logical.getElementType());
}

} // namespace zero
