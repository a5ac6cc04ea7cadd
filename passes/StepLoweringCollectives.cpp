//===- StepLoweringCollectives.cpp - Collectives, buckets, streams --------===//
//
// The communication side of zero-lower-to-runtime: collectives on the
// communication stream with the events that order them, padded buffers for
// collectives whose rows do not divide by N, and bucket packing.
//
//===----------------------------------------------------------------------===//

#include "StepLowering.h"

using namespace mlir;
using namespace zero;
using namespace zero::lowering;

void StepLowering::waitForCollectives(ValueRange reads, ValueRange writes,
                                      bool all) {
  waitForCollectives([&](PendingCollective &collective) {
    if (all)
      return true;
    for (Value write : writes)
      for (Value other :
           llvm::concat<Value>(collective.reads, collective.writes))
        if (sameMemory(write, other))
          return true;
    for (Value read : reads)
      for (Value other : collective.writes)
        if (sameMemory(read, other))
          return true;
    return false;
  });
}

void StepLowering::waitForCollectives(
    function_ref<bool(PendingCollective &)> mustWait) {
  // The collectives run in issue order on the one communication stream:
  // once the compute stream has waited for the last one that must be
  // waited for, every earlier one is complete too. One wait retires them
  // all, and their buffers are free from it on, not from later waits of
  // their own.
  int64_t last = -1;
  for (auto [index, collective] : llvm::enumerate(pending))
    if (mustWait(collective))
      last = static_cast<int64_t>(index);
  if (last < 0)
    return;
  auto wait = builder.create<zrt::WaitOp>(step.getLoc(), pending[last].done,
                                          computeStream);
  // The collectives' buffers stay reserved until this wait.
  SmallVector<Value> memrefs;
  for (const PendingCollective &collective :
       ArrayRef(pending).take_front(last + 1)) {
    memrefs.append(collective.reads);
    memrefs.append(collective.writes);
  }
  finishInstruction(wait, memrefs);
  pending.erase(pending.begin(), pending.begin() + last + 1);
}

void StepLowering::releaseCollectiveInputs() {
  // Only the compute stream reuses arena bytes, and only once it has waited
  // for the collective that read them. Without this wait a gradient bucket's
  // reduction input stays reserved until its result is used by the update at
  // the end of the step, and every bucket of the backward is live at once.
  // Waiting at the next hand-off keeps one group of collectives in flight:
  // each still overlaps the compute that produces the next bucket.
  waitForCollectives([&](PendingCollective &collective) {
    return llvm::any_of(collective.reads, [&](Value read) {
      return arenaBufferOf.contains(read);
    });
  });
}

template <typename OpTy, typename... Args>
void StepLowering::emitCollective(Value input, Value output, Args &&...args) {
  if (!asyncCollectives) {
    waitForCollectives(input, output);
    auto op = builder.create<OpTy>(step.getLoc(), computeStream,
                                   std::forward<Args>(args)..., input, output);
    finishInstruction(op, {input, output});
    return;
  }
  // The communication stream starts once the compute stream has produced the
  // input; consecutive collectives need no new hand-off.
  if (computeSinceLastHandoff) {
    releaseCollectiveInputs();
    FlatSymbolRefAttr ready = declareEvent("ready");
    finishInstruction(
        builder.create<zrt::RecordOp>(step.getLoc(), ready, computeStream), {});
    finishInstruction(
        builder.create<zrt::WaitOp>(step.getLoc(), ready, commStream), {});
    computeSinceLastHandoff = false;
  }
  auto op = builder.create<OpTy>(step.getLoc(), commStream,
                                 std::forward<Args>(args)..., input, output);
  finishInstruction(op, {input, output});
  FlatSymbolRefAttr done = declareEvent("done");
  finishInstruction(
      builder.create<zrt::RecordOp>(step.getLoc(), done, commStream), {});
  pending.push_back({done, {input}, {output}});
}

/// Elements of one row along dimension 0, and rows.
std::pair<int64_t, int64_t> zero::lowering::getRowsAndRowElements(Type type) {
  auto shaped = cast<ShapedType>(type);
  if (shaped.getRank() == 0)
    return {1, 1};
  int64_t rows = shaped.getDimSize(0);
  return {rows, rows == 0 ? 0 : shaped.getNumElements() / rows};
}

static MemRefType withRows(MemRefType type, int64_t rows) {
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = rows;
  return MemRefType::get(shape, type.getElementType());
}

LogicalResult StepLowering::lowerCollective(Operation *op) {
  if (auto dim = op->getAttrOfType<IntegerAttr>("dim"); dim && dim.getInt())
    return op->emitOpError()
           << "splits dimension " << dim.getInt()
           << "; the runtime's collectives split dimension 0 (use layout=flat "
              "or dim0)";
  if (auto allToAll = dyn_cast<dist::AllToAllOp>(op);
      allToAll && (allToAll.getSplitDim() != 0 || allToAll.getConcatDim() != 0))
    return op->emitOpError()
           << "exchanges along dimensions " << allToAll.getSplitDim() << " -> "
           << allToAll.getConcatDim()
           << "; the runtime's all_to_all splits and concatenates dimension 0";
  Value input = lookup(op->getOperand(0));
  Type resultType = op->getResult(0).getType();
  auto axis = op->getAttrOfType<IntegerAttr>("axis");
  int64_t groupSize = dist::getGroupSize(op, axis.getInt());

  if (auto allReduce = dyn_cast<dist::AllReduceOp>(op)) {
    Value output = newArenaBuffer(toMemRef(resultType));
    emitCollective<zrt::AllReduceOp>(input, output, allReduce.getReduceAttr(),
                                     axis);
    memrefOf[op->getResult(0)] = output;
    return success();
  }
  if (auto reduceScatter = dyn_cast<dist::ReduceScatterOp>(op)) {
    MemRefType outType = toMemRef(resultType);
    auto [shardRows, rowElements] = getRowsAndRowElements(resultType);
    auto [inputRows, inputRowElements] =
        getRowsAndRowElements(op->getOperand(0).getType());
    (void)inputRowElements;
    // The runtime reduces whole padded buffers: zero rows up to N shards.
    if (inputRows != shardRows * groupSize) {
      Value padded = newArenaBuffer(
          withRows(cast<MemRefType>(input.getType()), shardRows * groupSize));
      int64_t used = inputRows * rowElements;
      emitCopy(input, getView(padded, 0, cast<MemRefType>(input.getType())));
      emitFill(
          getFlatView(padded, used, shardRows * groupSize * rowElements - used),
          0.0);
      input = padded;
    }
    Value output = newArenaBuffer(outType);
    emitCollective<zrt::ReduceScatterOp>(input, output,
                                         reduceScatter.getReduceAttr(), axis);
    memrefOf[op->getResult(0)] = output;
    return success();
  }
  if (isa<dist::AllGatherOp>(op)) {
    auto [shardRows, rowElements] =
        getRowsAndRowElements(op->getOperand(0).getType());
    (void)rowElements;
    Value padded =
        newArenaBuffer(withRows(toMemRef(resultType), shardRows * groupSize));
    emitCollective<zrt::AllGatherOp>(input, padded, axis);
    // Consumers see the logical rows; the padding rows stay unread.
    memrefOf[op->getResult(0)] = getView(padded, 0, toMemRef(resultType));
    return success();
  }
  if (auto broadcast = dyn_cast<dist::BroadcastOp>(op)) {
    Value output = newArenaBuffer(toMemRef(resultType));
    emitCollective<zrt::BroadcastOp>(input, output, axis,
                                     broadcast.getRootAttr());
    memrefOf[op->getResult(0)] = output;
    return success();
  }
  if (isa<dist::AllToAllOp>(op)) {
    Value output = newArenaBuffer(toMemRef(resultType));
    emitCollective<zrt::AllToAllOp>(input, output, axis);
    memrefOf[op->getResult(0)] = output;
    return success();
  }
  return op->emitOpError() << "has no runtime lowering";
}

void StepLowering::lowerPack(dist::PackOp pack) {
  Value bucket = newArenaBuffer(toMemRef(pack.getType()));
  memrefOf[pack] = bucket;
  int64_t total = pack.getType().getNumElements();
  int64_t shards = pack.getShards() ? *pack.getShards() : 1;
  // Each input contributes `chunk` elements per shard, rows padded.
  SmallVector<int64_t> chunks, offsets;
  int64_t perShard = 0;
  for (Value input : pack.getInputs()) {
    auto [rows, rowElements] = getRowsAndRowElements(input.getType());
    int64_t chunk = pack.getShards()
                        ? (rows + shards - 1) / shards * rowElements
                        : cast<ShapedType>(input.getType()).getNumElements();
    offsets.push_back(perShard);
    chunks.push_back(chunk);
    perShard += chunk;
  }
  for (int64_t shard = 0; shard < shards; ++shard) {
    for (auto [index, input] : llvm::enumerate(pack.getInputs())) {
      int64_t elements = cast<ShapedType>(input.getType()).getNumElements();
      int64_t begin = shard * chunks[index];
      int64_t length = std::clamp<int64_t>(elements - begin, 0, chunks[index]);
      int64_t target = shard * perShard + offsets[index];
      if (length > 0) {
        // Views are ops: make them in a fixed order (destination first), not
        // in the compiler's order of evaluating arguments.
        Value to = getFlatView(bucket, target, length);
        Value from = getFlatView(lookup(input), begin, length);
        emitCopy(from, to);
      }
      if (length < chunks[index])
        emitFill(getFlatView(bucket, target + length, chunks[index] - length),
                 0.0);
    }
  }
  if (shards * perShard < total)
    emitFill(getFlatView(bucket, shards * perShard, total - shards * perShard),
             0.0);
}

void StepLowering::lowerUnpack(dist::UnpackOp unpack) {
  Value bucket = lookup(unpack.getInput());
  if (!unpack.getShards()) {
    // Members lie end to end: views, no copies.
    int64_t offset = 0;
    for (Value result : unpack.getResults()) {
      memrefOf[result] = getView(bucket, offset, toMemRef(result.getType()));
      offset += cast<ShapedType>(result.getType()).getNumElements();
    }
    return;
  }
  int64_t shards = *unpack.getShards();
  SmallVector<int64_t> chunks, offsets;
  int64_t perShard = 0;
  for (Value result : unpack.getResults()) {
    auto [rows, rowElements] = getRowsAndRowElements(result.getType());
    offsets.push_back(perShard);
    chunks.push_back((rows + shards - 1) / shards * rowElements);
    perShard += chunks.back();
  }
  for (auto [index, result] : llvm::enumerate(unpack.getResults())) {
    // Gathered parameters go straight into their buffers when nothing reads
    // the old values afterwards (stages 1 and 2 end this way).
    Value out = getInPlaceTarget(unpack, result);
    if (!out)
      out = newArenaBuffer(toMemRef(result.getType()));
    memrefOf[result] = out;
    int64_t elements = cast<ShapedType>(result.getType()).getNumElements();
    for (int64_t shard = 0; shard < shards; ++shard) {
      int64_t begin = shard * chunks[index];
      int64_t length = std::clamp<int64_t>(elements - begin, 0, chunks[index]);
      if (length > 0) {
        Value to = getFlatView(out, begin, length);
        Value from =
            getFlatView(bucket, shard * perShard + offsets[index], length);
        emitCopy(from, to);
      }
    }
  }
}
