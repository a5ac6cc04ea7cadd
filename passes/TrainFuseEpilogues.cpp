//===- TrainFuseEpilogues.cpp - Linear layers' matmuls with epilogues -----===//
//
// A linear layer costs a matmul and, unfused, one more pass over its output
// for the bias, one for the GELU, and in the backward one for the GELU's
// gradient and one for each bias gradient. cuBLASLt does each of those in
// the matmul's epilogue, while the output is still in registers; this pass
// writes the fused ops (TrainFusedOps.td) that the backends run that way.
//
// It runs on the rewritten step, after the ZeRO passes, so that sharding,
// bucketing and scheduling see only the unfused ops. Every pattern needs the
// matmul's result to feed the chain alone: a fused op does not materialize
// it.
//
//===----------------------------------------------------------------------===//

#include "FusionSupport.h"

#include "zero/dialects/train/TrainOps.h"
#include "zero/passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace zero {
#define GEN_PASS_DEF_TRAINFUSEEPILOGUES
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::train;

namespace {

/// A linear layer's matmul, whose result `user` alone reads: one GEMM with a
/// 2-D weight, its batch (if any) folded into rows.
MatmulOp getFusableMatmul(Value value, Operation *user) {
  auto matmul = value.getDefiningOp<MatmulOp>();
  if (!matmul || !matmul->hasOneUse() || matmul->getBlock() != user->getBlock())
    return nullptr;
  if (matmul.getRhs().getType().getRank() != 2 ||
      (matmul.getLhs().getType().getRank() > 2 && matmul.getTransposeA()))
    return nullptr;
  return matmul;
}

struct TrainFuseEpiloguesPass
    : zero::impl::TrainFuseEpiloguesBase<TrainFuseEpiloguesPass> {
  /// `bias_add(matmul)`, with the GELU that reads it where there is one.
  void fuseBias(BiasAddOp biasAdd) {
    MatmulOp matmul = getFusableMatmul(biasAdd.getInput(), biasAdd);
    if (!matmul)
      return;
    GeluOp gelu;
    for (Operation *user : biasAdd->getUsers())
      if (auto candidate = dyn_cast<GeluOp>(user);
          candidate && candidate->getBlock() == biasAdd->getBlock()) {
        gelu = candidate;
        break;
      }
    SmallVector<Operation *> chain{matmul, biasAdd};
    if (gelu)
      chain.push_back(gelu);
    Operation *point = findFusionPoint(
        chain, {matmul.getLhs(), matmul.getRhs(), biasAdd.getBias()});
    if (!point)
      return;
    OpBuilder builder(point);
    if (gelu) {
      auto fused = builder.create<MatmulBiasGeluOp>(
          gelu.getLoc(), biasAdd.getType(), biasAdd.getType(), matmul.getLhs(),
          matmul.getRhs(), biasAdd.getBias(), matmul.getTransposeA(),
          matmul.getTransposeB(), gelu.getExact());
      fused->setDiscardableAttrs(matmul->getDiscardableAttrDictionary());
      gelu.replaceAllUsesWith(fused.getResult());
      biasAdd.replaceAllUsesWith(fused.getPre());
      gelu.erase();
    } else {
      auto fused = builder.create<MatmulBiasOp>(
          biasAdd.getLoc(), biasAdd.getType(), matmul.getLhs(), matmul.getRhs(),
          biasAdd.getBias(), matmul.getTransposeA(), matmul.getTransposeB());
      fused->setDiscardableAttrs(matmul->getDiscardableAttrDictionary());
      biasAdd.replaceAllUsesWith(fused.getResult());
    }
    biasAdd.erase();
    matmul.erase();
  }

  /// `gelu_grad(pre, matmul)`.
  void fuseGeluGrad(GeluGradOp geluGrad) {
    MatmulOp matmul = getFusableMatmul(geluGrad.getResultGrad(), geluGrad);
    if (!matmul)
      return;
    Operation *point =
        findFusionPoint({matmul, geluGrad}, {matmul.getLhs(), matmul.getRhs(),
                                             geluGrad.getSaved()});
    if (!point)
      return;
    OpBuilder builder(point);
    auto fused = builder.create<MatmulGeluGradOp>(
        geluGrad.getLoc(), geluGrad.getType(), matmul.getLhs(), matmul.getRhs(),
        geluGrad.getSaved(), matmul.getTransposeA(), matmul.getTransposeB(),
        geluGrad.getExact());
    fused->setDiscardableAttrs(matmul->getDiscardableAttrDictionary());
    geluGrad.replaceAllUsesWith(fused.getResult());
    geluGrad.erase();
    matmul.erase();
  }

  /// A bias gradient, `reduce_sum(dy)` over every leading dimension, paired
  /// with the weight gradient `matmul(x, dy)` of the same `dy` (or of its
  /// reshape to rows).
  void fuseBiasGrad(ReduceSumOp reduce) {
    RankedTensorType dyType = reduce.getInput().getType();
    int64_t rank = dyType.getRank();
    if (rank < 2 || reduce.getDims().size() != static_cast<size_t>(rank - 1))
      return;
    for (auto [index, dim] : llvm::enumerate(reduce.getDims()))
      if (dim != static_cast<int64_t>(index))
        return;
    SmallVector<Value> rows{reduce.getInput()};
    for (Operation *user : reduce.getInput().getUsers())
      if (auto reshape = dyn_cast<ReshapeOp>(user)) {
        auto type = cast<RankedTensorType>(reshape.getType());
        if (type.getRank() == 2 &&
            type.getDimSize(1) == dyType.getShape().back())
          rows.push_back(reshape);
      }
    for (Value candidate : rows)
      for (Operation *user : candidate.getUsers()) {
        auto matmul = dyn_cast<MatmulOp>(user);
        if (!matmul || matmul.getRhs() != candidate || matmul.getTransposeB() ||
            matmul->getBlock() != reduce->getBlock() ||
            matmul.getLhs().getType().getRank() != 2 ||
            matmul.getRhs().getType().getRank() != 2)
          continue;
        if (fuseWeightAndBiasGrad(matmul, reduce))
          return;
      }
  }

  bool fuseWeightAndBiasGrad(MatmulOp matmul, ReduceSumOp reduce) {
    // Where no gradient lives longer than it did (the ZeRO passes counted
    // how long each is held before its reduction): a bias gradient computed
    // first moves to its weight gradient, which reads the same output
    // gradient, where nothing between reads it (its reduction does not
    // come first); a bias gradient computed after its weight gradient moves
    // up to it, made earlier by the width of one vector.
    Operation *point = matmul;
    if (reduce->isBeforeInBlock(matmul) &&
        !nothingBetween(reduce, matmul, {reduce}, /*noCollective=*/false))
      return false;
    OpBuilder builder(point);
    auto fused = builder.create<MatmulBiasGradOp>(
        matmul.getLoc(), matmul.getType(), reduce.getType(), matmul.getLhs(),
        matmul.getRhs(), matmul.getTransposeA());
    fused->setDiscardableAttrs(matmul->getDiscardableAttrDictionary());
    matmul.replaceAllUsesWith(fused.getResult());
    reduce.replaceAllUsesWith(fused.getBiasGrad());
    matmul.erase();
    reduce.erase();
    return true;
  }

  void runOnOperation() override {
    // Collected first: each rewrite erases the ops it fuses.
    SmallVector<BiasAddOp> biasAdds;
    SmallVector<GeluGradOp> geluGrads;
    SmallVector<ReduceSumOp> reductions;
    getOperation().walk([&](Operation *op) {
      if (auto biasAdd = dyn_cast<BiasAddOp>(op))
        biasAdds.push_back(biasAdd);
      else if (auto geluGrad = dyn_cast<GeluGradOp>(op))
        geluGrads.push_back(geluGrad);
      else if (auto reduce = dyn_cast<ReduceSumOp>(op))
        reductions.push_back(reduce);
    });
    for (BiasAddOp biasAdd : biasAdds)
      fuseBias(biasAdd);
    for (GeluGradOp geluGrad : geluGrads)
      fuseGeluGrad(geluGrad);
    for (ReduceSumOp reduce : reductions)
      fuseBiasGrad(reduce);
  }
};

} // namespace
