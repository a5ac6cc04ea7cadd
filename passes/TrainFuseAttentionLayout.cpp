//===- TrainFuseAttentionLayout.cpp - Attention on seq-major heads --------===//
//
// A transformer splits a linear layer's [batch, seq, features] output into
// heads as [batch, seq, heads, head_dim], then transposes it to [batch,
// heads, seq, head_dim] for attention, and transposes the result back: four
// copies of an activation a layer in the forward, four more in the
// backward (GPT-2 124M: 96 a step). The attention kernels can read a head
// by strides instead (train.attention's `seq_major`), as cuDNN's SDPA and
// FlashAttention do, so this pass drops those transposes.
//
// A group is one train.attention and the train.attention_grads that read its
// log-sum-exp. It is folded where every query, key, value and result
// gradient operand of the group is a transpose that swaps the two
// dimensions before head_dim, and every reader of the group's results is
// such a transpose or the group's own gradient (which reads the forward's
// result). Anything else, a rotary embedding or grouped-query heads applied
// after the transpose, leaves the group as it is: the transposes are then
// the copies that op needs anyway.
//
// The same bits on every backend: the kernels compute each row as before,
// only where they read and write it moves.
//
//===----------------------------------------------------------------------===//

#include "zero/dialects/train/TrainOps.h"
#include "zero/passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace zero {
#define GEN_PASS_DEF_TRAINFUSEATTENTIONLAYOUT
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using namespace zero::train;

namespace {

/// Whether `op` swaps the two dimensions before the last and keeps the
/// rest: [..., a, b, d] to [..., b, a, d].
bool isHeadSwap(TransposeOp op) {
  ArrayRef<int64_t> permutation = op.getPermutation();
  int64_t rank = static_cast<int64_t>(permutation.size());
  if (rank < 3)
    return false;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t expected = i == rank - 3 ? rank - 2 : i == rank - 2 ? rank - 3 : i;
    if (permutation[i] != expected)
      return false;
  }
  return true;
}

/// The seq-major tensor `value` is the head swap of, or null.
Value getSwapInput(Value value) {
  auto swap = value.getDefiningOp<TransposeOp>();
  return swap && isHeadSwap(swap) ? swap.getInput() : Value();
}

/// The head swaps that read `value`, where every reader but those in
/// `allowed` is one; nothing otherwise.
std::optional<SmallVector<TransposeOp>>
getSwapUsers(Value value, ArrayRef<Operation *> allowed) {
  SmallVector<TransposeOp> swaps;
  for (Operation *user : value.getUsers()) {
    if (llvm::is_contained(allowed, user))
      continue;
    auto swap = dyn_cast<TransposeOp>(user);
    if (!swap || !isHeadSwap(swap))
      return std::nullopt;
    swaps.push_back(swap);
  }
  return swaps;
}

/// Replaces every use of the swaps' results with `value` and erases them.
void replaceSwaps(ArrayRef<TransposeOp> swaps, Value value) {
  for (TransposeOp swap : swaps) {
    swap.getResult().replaceAllUsesWith(value);
    swap.erase();
  }
}

/// Erases the head swaps `values` were read from, where nothing else reads
/// them now. A swap may feed several operands (the key and the value of
/// one tensor), so each is looked at once, before any is erased.
void eraseDeadSwaps(ArrayRef<Value> values) {
  llvm::SetVector<Operation *> swaps;
  for (Value value : values)
    if (auto swap = value.getDefiningOp<TransposeOp>())
      swaps.insert(swap);
  for (Operation *swap : swaps)
    if (swap->use_empty())
      swap->erase();
}

struct Group {
  AttentionOp forward;
  SmallVector<AttentionGradOp> grads;
};

/// The gradients that read `forward`'s log-sum-exp, where every reader of it
/// is one; nothing otherwise.
std::optional<Group> getGroup(AttentionOp forward) {
  Group group{forward, {}};
  for (Operation *user : forward.getLogsumexp().getUsers()) {
    auto grad = dyn_cast<AttentionGradOp>(user);
    if (!grad || grad.getLogsumexp() != forward.getLogsumexp() ||
        grad.getResult() != forward.getResult())
      return std::nullopt;
    group.grads.push_back(grad);
  }
  return group;
}

struct TrainFuseAttentionLayoutPass
    : zero::impl::TrainFuseAttentionLayoutBase<TrainFuseAttentionLayoutPass> {
  /// Folds the group's head swaps into seq-major attention where all of its
  /// layout changes are swaps (the file comment).
  void fold(Group &group) {
    AttentionOp forward = group.forward;
    Value query = getSwapInput(forward.getQuery()),
          key = getSwapInput(forward.getKey()),
          value = getSwapInput(forward.getValue());
    if (!query || !key || !value)
      return;
    SmallVector<Operation *> gradOps(group.grads.begin(), group.grads.end());
    std::optional<SmallVector<TransposeOp>> resultSwaps =
        getSwapUsers(forward.getResult(), gradOps);
    if (!resultSwaps)
      return;
    struct GradParts {
      Value resultGrad;
      SmallVector<TransposeOp> swaps[3];
    };
    SmallVector<GradParts> parts;
    for (AttentionGradOp grad : group.grads) {
      // The gradient must read the very tensors the forward read: a
      // recomputed query is a different value, and folded on its own.
      if (getSwapInput(grad.getQuery()) != query ||
          getSwapInput(grad.getKey()) != key ||
          getSwapInput(grad.getValue()) != value)
        return;
      GradParts part;
      part.resultGrad = getSwapInput(grad.getResultGrad());
      if (!part.resultGrad)
        return;
      Value results[3] = {grad.getQueryGrad(), grad.getKeyGrad(),
                          grad.getValueGrad()};
      for (int i = 0; i < 3; ++i) {
        std::optional<SmallVector<TransposeOp>> swaps =
            getSwapUsers(results[i], {});
        if (!swaps)
          return;
        part.swaps[i] = std::move(*swaps);
      }
      parts.push_back(std::move(part));
    }

    OpBuilder b(forward);
    SmallVector<Value> swapped = {forward.getQuery(), forward.getKey(),
                                  forward.getValue()};
    auto seqMajor = b.create<AttentionOp>(
        forward.getLoc(),
        TypeRange{query.getType(), forward.getLogsumexp().getType()}, query,
        key, value, forward.getScaleAttr(), forward.getCausalAttr(),
        b.getUnitAttr());
    // `train.recomputed` on a forward recomputed for the backward.
    seqMajor->setDiscardableAttrs(forward->getDiscardableAttrDictionary());
    replaceSwaps(*resultSwaps, seqMajor.getResult());
    for (auto [grad, part] : llvm::zip_equal(group.grads, parts)) {
      swapped.push_back(grad.getResultGrad());
      b.setInsertionPoint(grad);
      auto seqMajorGrad = b.create<AttentionGradOp>(
          grad.getLoc(),
          TypeRange{query.getType(), key.getType(), value.getType()},
          part.resultGrad, query, key, value, seqMajor.getResult(),
          seqMajor.getLogsumexp(), grad.getScaleAttr(), grad.getCausalAttr(),
          b.getUnitAttr());
      seqMajorGrad->setDiscardableAttrs(grad->getDiscardableAttrDictionary());
      replaceSwaps(part.swaps[0], seqMajorGrad.getQueryGrad());
      replaceSwaps(part.swaps[1], seqMajorGrad.getKeyGrad());
      replaceSwaps(part.swaps[2], seqMajorGrad.getValueGrad());
      grad.erase();
    }
    forward.erase();
    eraseDeadSwaps(swapped);
  }

  void runOnOperation() override {
    SmallVector<Group> groups;
    getOperation().walk([&](AttentionOp op) {
      if (op.getSeqMajor())
        return;
      if (std::optional<Group> group = getGroup(op))
        groups.push_back(std::move(*group));
    });
    for (Group &group : groups)
      fold(group);
  }
};

} // namespace
