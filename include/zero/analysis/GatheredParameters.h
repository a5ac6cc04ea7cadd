//===- GatheredParameters.h - Stage-3 gathered bytes ------------*- C++ -*-===//
//
// At stage 3 every full parameter a step computes with is an all-gather of
// shards; how many of those are alive at once is what prefetching trades for
// overlap, and what `max-live-gathered-bytes` bounds. zero-schedule moves
// the gathers and keeps the bound; zero-report prints the peak. Both count
// the same way, here.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_ANALYSIS_GATHEREDPARAMETERS_H
#define ZERO_ANALYSIS_GATHEREDPARAMETERS_H

#include "zero/dialects/dist/DistOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace zero {

/// One all-gather of parameter shards: the gather, the `dist.pack` that
/// fills its bucket and the `dist.unpack` that splits it, when it is one.
struct ParameterGather {
  dist::AllGatherOp gather;
  dist::PackOp pack;
  dist::UnpackOp unpack;
  /// Bytes of the gathered tensor (the whole bucket).
  int64_t bytes = 0;
  /// With the state cut over two mesh axes (`mesh-scheme=full`), a
  /// parameter is gathered across nodes first, then within the node: for
  /// the second gather, the first, whose result (or its unpack's members)
  /// this one gathers further. Null for a gather of shards.
  dist::AllGatherOp priorGather;
};

/// The parameter gather `gather` belongs to, or nullopt when it gathers
/// something other than parameter shards read by `train.load` or, one level
/// on, what a gather of them gathered (the stage 1-2 gathers of updated
/// shards, say).
std::optional<ParameterGather> getParameterGather(dist::AllGatherOp gather);

/// `@a`, or `the bucket of @a, @b, ...` for a bucket: what `gather` holds,
/// in the user's names.
std::string describeGather(ParameterGather gather);

/// Gathered parameter bytes alive at each operation of one block: a gathered
/// tensor (and each tensor unpacked from a gathered bucket) is alive from
/// the operation that makes it to its last use, through the views
/// (`train.reshape`, an unsharded `dist.unpack`) that alias it. At an unpack
/// both the bucket and its members count: the copy-out holds both.
struct GatheredLiveness {
  explicit GatheredLiveness(mlir::Block &block);

  /// Bytes alive during the operation at `index` in the block's order.
  llvm::SmallVector<int64_t> liveAt;
  /// The gathered values and their [first, last] operation indices.
  struct Interval {
    mlir::Value value;
    int64_t bytes, first, last;
    /// The parameter it is (`@w`), or the bucket's (`the bucket of @a, @b`).
    std::string name;
  };
  llvm::SmallVector<Interval> intervals;
  llvm::DenseMap<mlir::Operation *, int64_t> position;

  int64_t getPeak() const;
  /// The first operation where the peak is reached; null when nothing is
  /// gathered.
  mlir::Operation *getPeakOp() const;
  /// The gathered values alive at `index`, largest first.
  llvm::SmallVector<Interval> getLiveAt(int64_t index) const;

private:
  mlir::Block *block;
};

/// The largest number of gathered parameter bytes alive at once in
/// `function`, nested blocks counted on top of what is alive around them.
int64_t computePeakGatheredBytes(mlir::func::FuncOp function);

} // namespace zero

#endif // ZERO_ANALYSIS_GATHEREDPARAMETERS_H
