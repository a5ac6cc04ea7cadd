//===- DistLowerReshard.cpp - dist.reshard to concrete collectives --------===//
//
// OneFlow's boxing table, one placement axis at a time: the generic reshard a
// propagation inserts becomes the one collective that changes the SBP along
// the axis where it differs. Several differing axes would need an order of
// collectives (and a cost model to pick it); no producer asks for that yet,
// so it is refused rather than guessed.
//
//===----------------------------------------------------------------------===//

#include "zero/passes/Passes.h"

#include "zero/dialects/dist/DistOps.h"

#include "mlir/IR/Builders.h"

namespace zero {
#define GEN_PASS_DEF_DISTLOWERRESHARD
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using dist::SbpDim;

namespace {

/// The collective that turns `from` into `to` along `axis`, or failure.
FailureOr<Value> lowerAxis(OpBuilder &builder, dist::ReshardOp reshard,
                           int64_t axis, SbpDim from, SbpDim to) {
  Location loc = reshard.getLoc();
  Value input = reshard.getInput();
  Type type = reshard.getType();
  if (from.isPartial() && to.isBroadcast())
    return builder.create<dist::AllReduceOp>(loc, input, from.reduce, axis)
        .getResult();
  if (from.isPartial() && to.isSplit())
    return builder
        .create<dist::ReduceScatterOp>(loc, type, input, from.reduce, axis,
                                       to.dim)
        .getResult();
  if (from.isSplit() && to.isBroadcast())
    return builder.create<dist::AllGatherOp>(loc, type, input, axis, from.dim)
        .getResult();
  if (from.isBroadcast() && to.isSplit())
    return builder.create<dist::SliceOp>(loc, type, input, axis, to.dim)
        .getResult();
  if (from.isSplit() && to.isSplit())
    return builder
        .create<dist::AllToAllOp>(loc, type, input, axis, to.dim, from.dim)
        .getResult();
  return reshard.emitOpError()
         << "asks for " << dist::formatSbpDim(to) << " from "
         << dist::formatSbpDim(from) << " along axis " << axis
         << "; no collective makes a partial value from a whole one";
}

struct DistLowerReshardPass
    : zero::impl::DistLowerReshardBase<DistLowerReshardPass> {
  void runOnOperation() override {
    SmallVector<dist::ReshardOp> reshards;
    getOperation().walk(
        [&](dist::ReshardOp reshard) { reshards.push_back(reshard); });
    for (dist::ReshardOp reshard : reshards) {
      ArrayRef<SbpDim> from = reshard.getFrom().getDims();
      ArrayRef<SbpDim> to = reshard.getTo().getDims();
      SmallVector<int64_t> differing;
      for (int64_t axis = 0, e = from.size(); axis < e; ++axis)
        if (from[axis] != to[axis])
          differing.push_back(axis);
      if (differing.empty()) {
        reshard.replaceAllUsesWith(reshard.getInput());
        reshard.erase();
        continue;
      }
      if (differing.size() != 1) {
        reshard.emitOpError()
            << "changes the SBP along " << differing.size()
            << " placement axes; dist-lower-reshard lowers a change along "
               "one axis at a time";
        return signalPassFailure();
      }
      int64_t axis = differing.front();
      OpBuilder builder(reshard);
      FailureOr<Value> lowered =
          lowerAxis(builder, reshard, axis, from[axis], to[axis]);
      if (failed(lowered))
        return signalPassFailure();
      reshard.replaceAllUsesWith(*lowered);
      reshard.erase();
    }
  }
};

} // namespace
