//===- TrainingStep.cpp - What the passes know about a training step ------===//

#include "zero/analysis/TrainingStep.h"

#include "zero/dialects/train/TrainDialect.h"

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
