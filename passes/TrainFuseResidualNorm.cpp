//===- TrainFuseResidualNorm.cpp - A residual add with its layer norm -----===//
//
// A pre-norm transformer block adds each sublayer's output to the residual
// stream and normalizes the sum for the next sublayer: unfused, the sum is
// written by the add and read back by the layer norm. `add_layer_norm`
// normalizes it while it is in registers and still writes it, for the
// stream, so the step makes one pass fewer over the widest activations
// (GPT-2: two a block, plus the final norm's).
//
// Like the other fusions it runs on the rewritten step, after the ZeRO
// passes, so that sharding, bucketing and scheduling see only the unfused
// ops, and the CPU backend runs the fused op as the chain it replaces.
//
//===----------------------------------------------------------------------===//

#include "FusionSupport.h"

#include "zero/dialects/train/TrainOps.h"
#include "zero/passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace zero {
#define GEN_PASS_DEF_TRAINFUSERESIDUALNORM
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::train;

namespace {

struct TrainFuseResidualNormPass
    : zero::impl::TrainFuseResidualNormBase<TrainFuseResidualNormPass> {
  void fuse(LayerNormOp norm) {
    auto add = norm.getInput().getDefiningOp<AddOp>();
    // train.add's operands have the sum's type (a residual connection, not
    // a broadcast). In the norm's block, both recomputed for the backward
    // or neither.
    if (!add || add->getBlock() != norm->getBlock() ||
        add->getDiscardableAttrDictionary() !=
            norm->getDiscardableAttrDictionary())
      return;
    Operation *point =
        findFusionPoint({add, norm}, {add.getLhs(), add.getRhs(),
                                      norm.getGamma(), norm.getBeta()});
    if (!point)
      return;
    OpBuilder builder(point);
    auto fused = builder.create<AddLayerNormOp>(
        norm.getLoc(), add.getType(), norm.getResult().getType(),
        norm.getMean().getType(), norm.getRstd().getType(), add.getLhs(),
        add.getRhs(), norm.getGamma(), norm.getBeta(), norm.getEpsAttr());
    fused->setDiscardableAttrs(norm->getDiscardableAttrDictionary());
    norm->replaceAllUsesWith(SmallVector<Value>{
        fused.getResult(), fused.getMean(), fused.getRstd()});
    add.replaceAllUsesWith(fused.getSum());
    norm.erase();
    add.erase();
  }

  void runOnOperation() override {
    // Collected first: each rewrite erases the ops it fuses.
    SmallVector<LayerNormOp> norms;
    getOperation().walk([&](LayerNormOp norm) { norms.push_back(norm); });
    for (LayerNormOp norm : norms)
      fuse(norm);
  }
};

} // namespace
