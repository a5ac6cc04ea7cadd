//===- ZeroShardSharder.h - zero-shard's rewriter --------------*- C++ -*-===//
//
// The state of one zero-shard run, shared by ZeroShard.cpp (the updates,
// the gradient reductions, the accumulators) and ZeroShardGathers.cpp
// (where parameters are gathered back: after the stage 1-2 updates and
// before each stage-3 use).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_PASSES_ZEROSHARDSHARDER_H
#define ZERO_PASSES_ZEROSHARDSHARDER_H

#include "ZeroShardCollectives.h"

#include "zero/analysis/TrainingStep.h"
#include "zero/dialects/dist/DistOps.h"
#include "zero/dialects/train/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

namespace zero::sharding {

using mlir::Block;
using mlir::cast;
using mlir::DenseMap;
using mlir::DenseSet;
using mlir::dyn_cast;
using mlir::FailureOr;
using mlir::isa;
using mlir::Location;
using mlir::LogicalResult;
using mlir::ModuleOp;
using mlir::OpBuilder;
using mlir::Operation;
using mlir::RankedTensorType;
using mlir::SmallVector;
using mlir::SymbolTableCollection;
using mlir::Value;
namespace func = mlir::func;
using train::StorageLayoutKind;

/// `full` as the collectives of `kind` cut it: flattened for flat shards,
/// unchanged for dim-0 shards and 1-D tensors.
inline Value flattenForLayout(OpBuilder &builder, Location loc, Value full,
                              StorageLayoutKind kind) {
  auto type = cast<RankedTensorType>(full.getType());
  if (kind == StorageLayoutKind::flat && type.getRank() != 1)
    return builder.create<train::ReshapeOp>(loc, getFlatType(type), full);
  return full;
}

/// `value` (a gathered flat tensor) reshaped back to `logical` if needed.
inline Value restoreLogicalShape(OpBuilder &builder, Location loc, Value value,
                                 RankedTensorType logical) {
  if (value.getType() == logical)
    return value;
  return builder.create<train::ReshapeOp>(loc, logical, value);
}

/// The extent along dimension 0 of `logical` as the collectives of `kind`
/// see it: all its elements for flat shards, its rows for dim-0 shards.
inline int64_t gatheredExtent(RankedTensorType logical,
                              StorageLayoutKind kind) {
  return kind == StorageLayoutKind::flat || logical.getRank() == 0
             ? logical.getNumElements()
             : logical.getDimSize(0);
}

/// One optimizer update as train-materialize-optimizer and
/// dist-data-parallel left it.
struct UpdateSite {
  Operation *update;
  /// The average of the local gradient: on a mesh the first of a chain of
  /// averages, one per axis (`averages`, innermost first).
  dist::AllReduceOp average;
  SmallVector<dist::AllReduceOp> averages;
  train::ParamOp param;
  /// The fp32 master copy the update writes, under mixed precision.
  train::ParamOp master;
  SmallVector<train::ParamOp> slots;
  /// Stage 1: the reduce-scatter emitted ahead of the update.
  Value gradShard = nullptr;
};

/// One run of zero-shard over a module: the options, the cut, and what the
/// rewrite has learned so far (fresh loads, reduced shards, pending
/// gathers, filters).
class Sharder {
public:
  Sharder(ModuleOp module, int64_t stage, StorageLayoutKind layout,
          int64_t minShardElements, bool regatherInBackward,
          int64_t maxReuseDistance, MeshScheme scheme, bool secondaryShards,
          Quantization quantization)
      : module(module), stage(stage), layout(layout),
        minShardElements(minShardElements),
        regatherInBackward(regatherInBackward),
        maxReuseDistance(maxReuseDistance), scheme(scheme),
        secondaryShards(secondaryShards), quantization(quantization) {}

  LogicalResult run();

private:
  bool shouldShard(train::ParamOp param) {
    return param.getSplitTensorType().getNumElements() >= minShardElements;
  }
  StorageLayoutKind layoutOf(train::ParamOp param) {
    return param.getSplitTensorType().getRank() == 0 ? StorageLayoutKind::flat
                                                     : layout;
  }
  RankedTensorType shardTypeOf(RankedTensorType logical,
                               StorageLayoutKind kind) {
    return cut->getShardType(logical, kind);
  }
  void shardDeclaration(train::ParamOp state, StorageLayoutKind kind);

  FailureOr<UpdateSite> analyzeUpdate(Operation *update);
  LogicalResult shardAccumulator(train::ParamOp accumulator,
                                 train::ParamOp param);
  LogicalResult rewriteUpdate(UpdateSite &site);
  void gatherParameterLoads(func::FuncOp function,
                            const DenseSet<train::ParamOp> &sharded);

  /// `full` reduce-scattered (mean) into the shard of a tensor of `kind`.
  Value emitReduceScatter(OpBuilder &builder, Location loc, Value full,
                          StorageLayoutKind kind);
  /// `shard` all-gathered: the flat tensor for flat shards, `logical` for
  /// dim-0 shards. `secondary` as in ShardCut::allGather.
  Value emitGather(OpBuilder &builder, Location loc, Value shard,
                   RankedTensorType logical, StorageLayoutKind kind,
                   Value *secondary = nullptr);
  Value emitLoad(OpBuilder &builder, Location loc, train::ParamOp state) {
    auto load = builder.create<train::LoadOp>(loc, state.getLocalTensorType(),
                                              state.getSymName());
    freshLoads.insert(load);
    return load;
  }
  void eraseIfDead(Operation *op) {
    if (op && op->use_empty())
      op->erase();
  }

  ModuleOp module;
  SymbolTableCollection symbols;
  int64_t stage;
  StorageLayoutKind layout;
  int64_t minShardElements;
  bool regatherInBackward;
  int64_t maxReuseDistance;
  MeshScheme scheme;
  /// Stage 3 cut over several axes: later gathers of a parameter start from
  /// the secondary shard its first gather left (ZeRO++'s hpZ).
  bool secondaryShards;
  Quantization quantization;
  int64_t numAxes = 1;
  std::optional<ShardCut> cut;
  /// Loads this pass wrote; they already read shards.
  DenseSet<Operation *> freshLoads;
  /// Averaged gradients that are already this rank's shard (stage 2
  /// accumulators), keyed by the full-size value they replace.
  DenseMap<Value, Value> reducedShards;
  /// Stages 1-2: updated shards to gather back into replicated parameters.
  struct PendingGather {
    Value shard;
    train::ParamOp param;
    StorageLayoutKind kind;
    Location loc;
  };
  llvm::MapVector<Block *, SmallVector<PendingGather>> pendingGathers;
  void emitPendingGathers();
  /// Gradient filters (unscales, clips) whose operands became shards, each
  /// after the filters it reads.
  llvm::SetVector<Operation *> filters;
  /// The gradient shards that filters read.
  DenseSet<Value> gradShards;
  /// Moves each filter after its operands (stage 1 reduces just before the
  /// first update, after the filters) and marks the clips that read only
  /// shards.
  void placeFilters();
  /// dist.quantization: the block, and the sharded tensors whose shards are
  /// too small to quantize (they cross nodes in full precision).
  void recordQuantization();
};

} // namespace zero::sharding

#endif // ZERO_PASSES_ZEROSHARDSHARDER_H
