//===- TrainingStep.cpp - What the passes know about a training step ------===//

#include "zero/analysis/TrainingStep.h"

#include "zero/dialects/dist/DistOps.h"
#include "zero/dialects/train/TrainDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

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

/// The operand of a gradient filter (clip or unscale) that yields `grad`,
/// or null when `grad` is not a filter's result.
static OpOperand *getFilteredOperand(Value grad) {
  auto result = dyn_cast<OpResult>(grad);
  if (!result ||
      !isa<train::ClipByGlobalNormOp, train::UnscaleOp>(result.getOwner()))
    return nullptr;
  // Result i of both filters is operand i filtered (the unscale's trailing
  // found_inf is no gradient).
  if (result.getResultNumber() >= result.getOwner()->getNumOperands() ||
      (isa<train::UnscaleOp>(result.getOwner()) &&
       result.getResultNumber() + 1 == result.getOwner()->getNumResults()))
    return nullptr;
  return &result.getOwner()->getOpOperand(result.getResultNumber());
}

Value getRawGradient(Value grad) {
  while (OpOperand *operand = getFilteredOperand(grad))
    grad = operand->get();
  return grad;
}

OpOperand &getRawGradientOperand(OpOperand &use) {
  OpOperand *raw = &use;
  while (OpOperand *operand = getFilteredOperand(raw->get()))
    raw = operand;
  return *raw;
}

OpOperand &getRawGradientOperand(const UpdateView &update) {
  return getRawGradientOperand(update.getGradOperand());
}

SmallVector<Operation *> getGradientFilters(Value grad) {
  SmallVector<Operation *> filters;
  while (OpOperand *operand = getFilteredOperand(grad)) {
    filters.push_back(operand->getOwner());
    grad = operand->get();
  }
  return SmallVector<Operation *>(llvm::reverse(filters));
}

void agreeOnOverflow(Operation *root, function_ref<bool(Value)> isShard,
                     ArrayRef<int64_t> axes) {
  SmallVector<train::UnscaleOp> unscales;
  root->walk([&](train::UnscaleOp unscale) { unscales.push_back(unscale); });
  for (train::UnscaleOp unscale : unscales) {
    if (!llvm::any_of(unscale.getGrads(), isShard))
      continue;
    Value found = unscale.getFoundInf();
    if (llvm::any_of(found.getUsers(), [](Operation *user) {
          return isa<dist::AllReduceOp>(user);
        }))
      continue;
    OpBuilder builder(unscale->getContext());
    builder.setInsertionPointAfter(unscale);
    Value agreed = found;
    SmallPtrSet<Operation *, 2> reductions;
    for (int64_t axis : axes) {
      agreed = builder.create<dist::AllReduceOp>(unscale.getLoc(), agreed,
                                                 dist::ReduceKind::max, axis);
      reductions.insert(agreed.getDefiningOp());
    }
    found.replaceAllUsesExcept(agreed, reductions);
  }
}

void expandClipping(Operation *root, function_ref<bool(Value)> isShard,
                    ArrayRef<int64_t> axes) {
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
    if (!shards.empty()) {
      total = builder.create<train::SumSquaresOp>(loc, scalar, shards);
      for (int64_t axis : axes)
        total = builder.create<dist::AllReduceOp>(loc, total,
                                                  dist::ReduceKind::sum, axis);
    }
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
