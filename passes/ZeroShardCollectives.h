//===- ZeroShardCollectives.h - How zero-shard cuts state ------*- C++ -*-===//
//
// The cut zero-shard applies to persistent state on a placement, and the
// collectives that move a tensor between whole and cut: one axis, hybrid
// sharding on a mesh (cut within the node, copies across nodes) and full
// 2-D sharding (cut over both axes).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_PASSES_ZEROSHARDCOLLECTIVES_H
#define ZERO_PASSES_ZEROSHARDCOLLECTIVES_H

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/support/OptionEnums.h"

#include "mlir/IR/Builders.h"

namespace zero {

/// ZeRO++'s quantized communication under full 2-D sharding: int8 codes in
/// blocks of `block` with one f32 scale each (dist.quantize).
struct Quantization {
  /// qwZ: the parameters' gather across nodes moves codes.
  bool weights = false;
  /// qgZ: each level of the gradients' reduce-scatter is an all-to-all of
  /// codes, dequantized and averaged in full precision.
  bool gradients = false;
  /// Bits per code (8 or 4) of the weights' and the gradients' codes.
  int64_t weightBits = 8;
  int64_t gradientBits = 4;
  int64_t block = 4096;
  /// Pieces smaller than this move in full precision (a compile-time
  /// fallback the report lists).
  int64_t minElements = 4096;
};

class ShardCut {
public:
  /// Cuts over the first `numAxes` axes of `placement` (the data-parallel
  /// ones; a tensor-parallel axis after them is left whole).
  ShardCut(dist::PlacementAttr placement, int64_t numAxes, MeshScheme scheme,
           Quantization quantization = {});

  /// Whether the gathers and reductions of a tensor whose shard has
  /// `shardElements` elements move codes across nodes.
  bool quantizesAcrossNodes(int64_t shardElements) const {
    return (quantization.weights || quantization.gradients) &&
           shardElements >= quantization.minElements;
  }

  /// The axes the state is cut over, the major one first: the shard of a
  /// rank is numbered by its coordinates along them in mixed radix.
  llvm::ArrayRef<int64_t> getShardAxes() const { return shardAxes; }

  /// The tensor one rank holds of `logical` stored with `kind`.
  mlir::RankedTensorType getShardType(mlir::RankedTensorType logical,
                                      train::StorageLayoutKind kind) const;

  /// `full` (flattened for flat shards) averaged over every rank and cut:
  /// a reduce-scatter per shard axis, the major one first, then an average
  /// over each replica axis.
  mlir::Value reduceScatter(mlir::OpBuilder &builder, mlir::Location loc,
                            mlir::Value full) const;
  /// This rank's shard of `full` (flattened for flat shards), which every
  /// rank holds alike: no traffic.
  mlir::Value slice(mlir::OpBuilder &builder, mlir::Location loc,
                    mlir::Value full) const;
  /// `shard` gathered into the extent `extent` along dimension 0: a gather
  /// per shard axis, the minor one (across nodes) first. `secondary`, when
  /// given, receives the value before the last gather (the one within the
  /// node): with several shard axes, ZeRO++'s secondary shard.
  mlir::Value allGather(mlir::OpBuilder &builder, mlir::Location loc,
                        mlir::Value shard, int64_t extent,
                        mlir::Value *secondary = nullptr) const;
  /// The last gather of allGather, from its `secondary`.
  mlir::Value allGatherFromSecondary(mlir::OpBuilder &builder,
                                     mlir::Location loc, mlir::Value secondary,
                                     int64_t extent) const;

private:
  /// The shards' extent along dimension 0 for a whole extent `extent`.
  int64_t shardExtent(int64_t extent) const;
  /// The gather over shardAxes[level]; the last one (level 0) yields
  /// `extent`, the padding dropped.
  mlir::Value gatherOver(mlir::OpBuilder &builder, mlir::Location loc,
                         mlir::Value value, size_t level, int64_t extent) const;
  /// The reduce-scatter (mean) of `value` over `axis` into `type`, as an
  /// all-to-all of codes under qgZ.
  mlir::Value reduceScatterOver(mlir::OpBuilder &builder, mlir::Location loc,
                                mlir::Value value, int64_t axis,
                                mlir::RankedTensorType type) const;

  dist::PlacementAttr placement;
  llvm::SmallVector<int64_t, 2> shardAxes;
  llvm::SmallVector<int64_t, 2> replicaAxes;
  int64_t groupSize = 1;
  Quantization quantization;
};

} // namespace zero

#endif // ZERO_PASSES_ZEROSHARDCOLLECTIVES_H
