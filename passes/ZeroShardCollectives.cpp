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

ShardCut::ShardCut(dist::PlacementAttr placement, int64_t numAxes,
                   MeshScheme scheme, Quantization quantization)
    : placement(placement), quantization(quantization) {
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

/// `value` as the 1-D tensor quantization reads, and back.
static Value flatten(OpBuilder &builder, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() == 1)
    return value;
  return builder.create<train::ReshapeOp>(loc, getFlatType(type), value);
}
static Value unflatten(OpBuilder &builder, Location loc, Value value,
                       RankedTensorType type) {
  if (value.getType() == type)
    return value;
  return builder.create<train::ReshapeOp>(loc, type, value);
}

Value ShardCut::reduceScatterOver(OpBuilder &builder, Location loc, Value value,
                                  int64_t axis, RankedTensorType type) const {
  int64_t group = placement.getGroupSize(axis);
  if (!quantization.gradients || group == 1 ||
      type.getNumElements() < quantization.minElements)
    return builder.create<dist::ReduceScatterOp>(
        loc, type, value, dist::ReduceKind::mean, axis, /*dim=*/0);
  // qgZ: each rank's piece for every peer is quantized on its own, the
  // codes and scales are exchanged, and the pieces each rank receives are
  // dequantized and averaged in full precision (quantized data is never
  // summed).
  MLIRContext *context = builder.getContext();
  Value flat = flatten(builder, loc, value);
  auto flatType = cast<RankedTensorType>(flat.getType());
  int64_t elements = flatType.getNumElements();
  int64_t bits = quantization.gradientBits;
  int64_t scales = group * shardSize(elements / group, quantization.block);
  auto codesType = RankedTensorType::get(
      {group * quantizedSegmentBytes(elements / group, bits)},
      IntegerType::get(context, 8));
  auto scalesType = RankedTensorType::get({scales}, Float32Type::get(context));
  auto quantize = builder.create<dist::QuantizeOp>(
      loc, codesType, scalesType, flat, quantization.block, group, bits);
  Value codes = builder.create<dist::AllToAllOp>(
      loc, codesType, quantize.getResult(), axis, /*split_dim=*/0,
      /*concat_dim=*/0);
  Value received = builder.create<dist::AllToAllOp>(
      loc, scalesType, quantize.getScales(), axis, /*split_dim=*/0,
      /*concat_dim=*/0);
  Value pieces = builder.create<dist::DequantizeOp>(
      loc, flatType, codes, received, quantization.block, group, bits);
  auto byPeer = RankedTensorType::get({group, elements / group},
                                      flatType.getElementType());
  Value mean = builder.create<train::ReduceMeanOp>(
      loc, getFlatType(type),
      builder.create<train::ReshapeOp>(loc, byPeer, pieces),
      builder.getDenseI64ArrayAttr({0}));
  return unflatten(builder, loc, mean, type);
}

Value ShardCut::reduceScatter(OpBuilder &builder, Location loc,
                              Value full) const {
  Value shard =
      cutLevels(builder, loc, full, placement, shardAxes, groupSize,
                [&](Value value, int64_t axis, RankedTensorType type) -> Value {
                  return reduceScatterOver(builder, loc, value, axis, type);
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
  RankedTensorType resultType = withExtent(value, direct ? extent : gathered);
  Value result;
  // qwZ: the gather across nodes (the first, over the minor axis) moves
  // codes and scales; the node position's part is dequantized before the
  // gather within the node, so hpZ's secondary shard is the dequantized
  // value and the backward reads the forward's weights.
  auto shardType = cast<RankedTensorType>(value.getType());
  if (quantization.weights && !last && level == shardAxes.size() - 1 &&
      quantizesAcrossNodes(shardType.getNumElements())) {
    MLIRContext *context = builder.getContext();
    Value flat = flatten(builder, loc, value);
    int64_t elements = shardType.getNumElements();
    int64_t bits = quantization.weightBits;
    int64_t bytes = quantizedSegmentBytes(elements, bits);
    int64_t scales = shardSize(elements, quantization.block);
    auto i8 = IntegerType::get(context, 8);
    auto f32 = Float32Type::get(context);
    auto quantize = builder.create<dist::QuantizeOp>(
        loc, RankedTensorType::get({bytes}, i8),
        RankedTensorType::get({scales}, f32), flat, quantization.block,
        /*segments=*/1, bits);
    Value codes = builder.create<dist::AllGatherOp>(
        loc, RankedTensorType::get({bytes * group}, i8), quantize.getResult(),
        axis, /*dim=*/0);
    Value gatheredScales = builder.create<dist::AllGatherOp>(
        loc, RankedTensorType::get({scales * group}, f32), quantize.getScales(),
        axis, /*dim=*/0);
    result = unflatten(builder, loc,
                       builder.create<dist::DequantizeOp>(
                           loc, getFlatType(resultType), codes, gatheredScales,
                           quantization.block, group, bits),
                       resultType);
  } else {
    result = builder.create<dist::AllGatherOp>(loc, resultType, value, axis,
                                               /*dim=*/0);
  }
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
