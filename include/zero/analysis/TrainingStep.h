//===- TrainingStep.h - What the passes know about a training step -*- C++
//-*-===//
//
// The vocabulary every ZeRO pass shares: which functions run each step, what
// an explicit optimizer update looks like, and the types of shards. The passes
// look only at persistent state, gradients and collectives, never at compute
// ops, so that steps written in upstream linalg/arith/tensor work too.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_ANALYSIS_TRAININGSTEP_H
#define ZERO_ANALYSIS_TRAININGSTEP_H

#include "zero/dialects/train/TrainOps.h"
#include "zero/support/ShardLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace zero {

/// The functions that run every step, in module order: the `train.step`
/// function and, with gradient accumulation, the `train.apply_step` one.
llvm::SmallVector<mlir::func::FuncOp> getStepFunctions(mlir::ModuleOp module);

/// Whether `op` is an explicit optimizer update (train.sgd, sgd_momentum,
/// adam, adamw). Their operands are (param, grad, slots..., [step]) and their
/// results (new param, new slots...), slot results in slot-operand order.
bool isUpdateOp(mlir::Operation *op);

/// Views an update op through that shared operand/result convention.
class UpdateView {
public:
  explicit UpdateView(mlir::Operation *op) : op(op) {}
  mlir::Operation *getOperation() const { return op; }
  mlir::Value getParam() const { return op->getOperand(0); }
  mlir::Value getGrad() const { return op->getOperand(1); }
  mlir::OpOperand &getGradOperand() const { return op->getOpOperand(1); }
  unsigned getNumSlots() const { return op->getNumResults() - 1; }
  mlir::Value getSlot(unsigned i) const { return op->getOperand(2 + i); }
  mlir::Value getNewParam() const { return op->getResult(0); }
  mlir::Value getNewSlot(unsigned i) const { return op->getResult(1 + i); }

private:
  mlir::Operation *op;
};

/// The gradient behind `grad`, through the gradient filters that read it:
/// `train.clip_by_global_norm` and `train.unscale` (result i filters
/// operand i). The passes that average and shard "the gradient of an
/// update" work on this value, so that clipping and unscaling see the
/// averaged (and sharded) gradients.
mlir::Value getRawGradient(mlir::Value grad);
/// The use to rewire when the gradient reaching `use` is replaced: the
/// innermost filter's operand when it is filtered, `use` itself otherwise.
mlir::OpOperand &getRawGradientOperand(mlir::OpOperand &use);
mlir::OpOperand &getRawGradientOperand(const UpdateView &update);
/// The filters between the raw gradient and `grad`, innermost first.
llvm::SmallVector<mlir::Operation *> getGradientFilters(mlir::Value grad);

/// Follows every `train.unscale` under `root` that reads a shard (per
/// `isShard`) with a `dist.all_reduce max` over `axes` (the axes the shards
/// partition, one all-reduce each) of its `found_inf`, which every other use
/// then reads: each rank checks only its shards, and all must skip the same
/// steps. Whole gradients are the same on every rank after their average, so an
/// unscale of only those needs none.
void agreeOnOverflow(mlir::Operation *root,
                     llvm::function_ref<bool(mlir::Value)> isShard,
                     llvm::ArrayRef<int64_t> axes = {0});

/// Replaces every `train.clip_by_global_norm` under `root` by
/// `train.sum_squares`, a `dist.all_reduce sum` over each of `axes` (the
/// axes the shards partition) of it when the
/// operands are shards (`sharded`), and `train.scale_by_norm`. With
/// `isShard`, it says which operands are shards instead: the whole ones'
/// squares are added after the all-reduce (they are the same on every rank).
/// Run once the gradients are final: zero-shard runs it at its end, and
/// zero-lower-to-runtime on whatever is left (stage 0: whole gradients).
void expandClipping(mlir::Operation *root,
                    llvm::function_ref<bool(mlir::Value)> isShard = nullptr,
                    llvm::ArrayRef<int64_t> axes = {0});

/// The persistent tensor a `train.load` reads, or null when `value` is not
/// the result of a load.
train::ParamOp getLoadedState(mlir::Value value,
                              mlir::SymbolTableCollection &symbols);

/// Bytes of one element (bf16: 2) and of a whole static tensor.
int64_t getElementBytes(mlir::Type elementType);
int64_t getTensorBytes(mlir::RankedTensorType type);

/// `type` flattened to one dimension.
mlir::RankedTensorType getFlatType(mlir::RankedTensorType type);

/// The type one of `groupSize` ranks holds of `logical` stored with `layout`.
mlir::RankedTensorType getShardType(mlir::RankedTensorType logical,
                                    train::StorageLayoutKind layout,
                                    int64_t groupSize);

} // namespace zero

#endif // ZERO_ANALYSIS_TRAININGSTEP_H
