//===- TrainFuseLossCast.cpp - Cross-entropy on 16-bit logits, no copy ----===//
//
// A 16-bit model's loss is taken in f32, as PyTorch's autocast takes it:
// the frontends write `softmax_cross_entropy(cast(logits -> f32))`, and
// train-autodiff gives the gradient back through `cast(dlogits -> bf16)`.
// For GPT-2 124M at 8,192 tokens that is 1.6 GB of f32 logits and as much
// again of f32 gradient, written, held and read once more for nothing: the
// loss kernels widen each element to f32 as they load it and round it as
// they store it, the very conversions the casts do. This pass lets them read
// the 16-bit logits and write the 16-bit gradient themselves.
//
// Bit for bit the same on every backend: widening bf16 or f16 to f32 is
// exact, and the gradient kernel rounds its f32 result to nearest even as
// the cast does (the CPU through the same conversion loops).
//
//===----------------------------------------------------------------------===//

#include "zero/dialects/train/TrainOps.h"
#include "zero/passes/Passes.h"

namespace zero {
#define GEN_PASS_DEF_TRAINFUSELOSSCAST
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::train;

namespace {

bool isWidening(CastOp op) {
  Type from = op.getInput().getType().getElementType();
  Type to = op.getType().getElementType();
  return to.isF32() && (from.isBF16() || from.isF16());
}

/// The casts that take `grad` back to `narrow`, every use of `grad` being
/// one; nothing otherwise (the gradient is needed in f32).
std::optional<SmallVector<CastOp>> getNarrowingUsers(Value grad, Type narrow) {
  SmallVector<CastOp> casts;
  for (Operation *user : grad.getUsers()) {
    auto back = dyn_cast<CastOp>(user);
    if (!back || back.getType() != narrow)
      return std::nullopt;
    casts.push_back(back);
  }
  return casts;
}

struct TrainFuseLossCastPass
    : zero::impl::TrainFuseLossCastBase<TrainFuseLossCastPass> {
  /// Folds `widen` into the losses and gradients that read it, where those
  /// are all that read it and each gradient is only cast back.
  void fold(CastOp widen) {
    Value narrowLogits = widen.getInput();
    Type narrow = narrowLogits.getType();
    SmallVector<SoftmaxCrossEntropyOp> losses;
    SmallVector<std::pair<SoftmaxCrossEntropyGradOp, SmallVector<CastOp>>>
        grads;
    for (OpOperand &use : widen->getUses()) {
      Operation *user = use.getOwner();
      if (auto loss = dyn_cast<SoftmaxCrossEntropyOp>(user);
          loss && use.get() == loss.getLogits()) {
        losses.push_back(loss);
        continue;
      }
      auto grad = dyn_cast<SoftmaxCrossEntropyGradOp>(user);
      if (!grad || use.get() != grad.getLogits())
        return;
      std::optional<SmallVector<CastOp>> casts =
          getNarrowingUsers(grad.getResult(), narrow);
      if (!casts)
        return;
      grads.emplace_back(grad, std::move(*casts));
    }
    if (losses.empty() && grads.empty())
      return;
    for (SoftmaxCrossEntropyOp loss : losses)
      loss.getLogitsMutable().assign(narrowLogits);
    for (auto &[grad, casts] : grads) {
      grad.getLogitsMutable().assign(narrowLogits);
      grad.getResult().setType(cast<RankedTensorType>(narrow));
      for (CastOp back : casts) {
        back.replaceAllUsesWith(grad.getResult());
        back.erase();
      }
    }
    widen.erase();
  }

  void runOnOperation() override {
    SmallVector<CastOp> widenings;
    getOperation().walk([&](CastOp op) {
      if (isWidening(op))
        widenings.push_back(op);
    });
    for (CastOp widen : widenings)
      fold(widen);
  }
};

} // namespace
