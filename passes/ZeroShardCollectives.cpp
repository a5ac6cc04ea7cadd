//===- ZeroShardCollectives.cpp - How zero-shard cuts state ---------------===//
//
// A tensor cut over several axes is cut as one flat N-way cut would be, the
// shard of the rank at (r, s) of an R x S mesh being number s * R + r: its
// checkpoints are those of a one-axis run of N ranks, and reshard between
// the two. Reduce-scatters run the major axis first and gathers the minor
// one first, each level exact; the tensor is padded to the full cut before
// the first cut and the padding dropped after the last gather, unless a
// level's own padding rule already agrees.
//
//===----------------------------------------------------------------------===//

#include "ZeroShardCollectives.h"

#include "zero/analysis/TrainingStep.h"
#include "zero/dialects/dist/DistOps.h"
#include "zero/dialects/train/TrainOps.h"
#include "zero/support/ShardLayout.h"

using namespace mlir;
using namespace zero;

static RankedTensorType withExtent(Value value, int64_t extent) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = extent;
  return RankedTensorType::get(shape, type.getElementType());
}

static int64_t extentOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getDimSize(0);
}

ShardCut::ShardCut(dist::PlacementAttr placement, MeshScheme scheme)
    : placement(placement) {
  int64_t numAxes = placement.getNumAxes();
  if (numAxes == 1 || scheme == MeshScheme::hybrid) {
    shardAxes.push_back(numAxes - 1);
    for (int64_t axis = numAxes - 1; axis-- > 0;)
      replicaAxes.push_back(axis);
  } else {
    for (int64_t axis = numAxes; axis-- > 0;)
      shardAxes.push_back(axis);
  }
  for (int64_t axis : shardAxes)
    groupSize *= placement.getGroupSize(axis);
}

int64_t ShardCut::shardExtent(int64_t extent) const {
  return shardSize(extent, groupSize);
}

RankedTensorType ShardCut::getShardType(RankedTensorType logical,
                                        train::StorageLayoutKind kind) const {
  return zero::getShardType(logical, kind, groupSize);
}

/// Cuts `full` level by level with `cut(value, axis, type)`.
template <typename CutFn>
static Value cutLevels(OpBuilder &builder, Location loc, Value full,
                       dist::PlacementAttr placement,
                       ArrayRef<int64_t> shardAxes, int64_t groupSize,
                       CutFn cut) {
  int64_t extent = extentOf(full);
  int64_t padded = shardSize(extent, groupSize) * groupSize;
  int64_t firstGroup = placement.getGroupSize(shardAxes.front());
  Value value = full;
  if (shardSize(extent, firstGroup) != padded / firstGroup)
    value = builder.create<train::PadOp>(loc, withExtent(full, padded), full,
                                         /*dim=*/0, /*offset=*/0);
  for (int64_t axis : shardAxes) {
    int64_t rest = shardSize(extentOf(value), placement.getGroupSize(axis));
    value = cut(value, axis, withExtent(value, rest));
  }
  return value;
}

Value ShardCut::reduceScatter(OpBuilder &builder, Location loc,
                              Value full) const {
  Value shard = cutLevels(
      builder, loc, full, placement, shardAxes, groupSize,
      [&](Value value, int64_t axis, RankedTensorType type) -> Value {
        return builder.create<dist::ReduceScatterOp>(
            loc, type, value, dist::ReduceKind::mean, axis, /*dim=*/0);
      });
  // Hybrid sharding: the nodes hold the same shards; each shard is
  // averaged across them.
  for (int64_t axis : replicaAxes)
    shard = builder.create<dist::AllReduceOp>(loc, shard,
                                              dist::ReduceKind::mean, axis);
  return shard;
}

Value ShardCut::slice(OpBuilder &builder, Location loc, Value full) const {
  return cutLevels(
      builder, loc, full, placement, shardAxes, groupSize,
      [&](Value value, int64_t axis, RankedTensorType type) -> Value {
        return builder.create<dist::SliceOp>(loc, type, value, axis, /*dim=*/0);
      });
}

Value ShardCut::gatherOver(OpBuilder &builder, Location loc, Value value,
                           size_t level, int64_t extent) const {
  int64_t axis = shardAxes[level];
  int64_t group = placement.getGroupSize(axis);
  int64_t gathered = extentOf(value) * group;
  bool last = level == 0;
  // The last gather drops the padding itself when its own rule allows it.
  bool direct = last && shardSize(extent, group) == extentOf(value);
  Value result = builder.create<dist::AllGatherOp>(
      loc, withExtent(value, direct ? extent : gathered), value, axis,
      /*dim=*/0);
  if (last && !direct && gathered != extent)
    result = builder.create<train::SliceOp>(loc, withExtent(value, extent),
                                            result, /*dim=*/0, /*offset=*/0);
  return result;
}

Value ShardCut::allGather(OpBuilder &builder, Location loc, Value shard,
                          int64_t extent, Value *secondary) const {
  Value value = shard;
  for (size_t level = shardAxes.size(); level-- > 1;)
    value = gatherOver(builder, loc, value, level, extent);
  if (secondary)
    *secondary = shardAxes.size() > 1 ? value : nullptr;
  return gatherOver(builder, loc, value, /*level=*/0, extent);
}

Value ShardCut::allGatherFromSecondary(OpBuilder &builder, Location loc,
                                       Value secondary, int64_t extent) const {
  return gatherOver(builder, loc, secondary, /*level=*/0, extent);
}
