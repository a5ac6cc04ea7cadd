//===- ZeroBucket.cpp - Fuse small collectives into buckets ---------------===//
//
// Many small collectives cost a launch and a latency each; one collective over
// a flat bucket costs one. Reductions are delayed to the bucket's last member
// (a bucket is flushed before any of its results is used, as DDP's buckets
// are); gathers are issued at the first member (a prefetch). The plan is made
// for a whole block before anything moves, so the pass is linear in the
// number of operations.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/TrainingStep.h"
#include "zero/passes/Passes.h"

#include "zero/dialects/dist/DistOps.h"

#include "mlir/IR/Builders.h"

namespace zero {
#define GEN_PASS_DEF_ZEROBUCKET
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

enum class BucketKind { AllReduce, ReduceScatter, AllGather };

struct Bucket {
  BucketKind kind;
  dist::ReduceKind reduce;
  int64_t axis;
  Type elementType;
  int64_t bytes = 0;
  bool open = true;
  /// A gather bucket some member's result has been used since: only small
  /// tensors still join.
  bool used = false;
  SmallVector<Operation *> members;
};

/// The reduction that carries reduction `op`'s result on to the next
/// placement axis: `op`'s only user, a reduction of the same kind over
/// another axis. Either an all-reduce of `op`'s result type (on a mesh,
/// dist-data-parallel averages within the node, then across; hybrid
/// sharding reduce-scatters within the node, then averages the shard
/// across) or a reduce-scatter of it along dim 0 (a full 2-D cut
/// reduce-scatters within the node, then across). It rides in its
/// producer's bucket: the bucket's fused reduction is followed by one fused
/// reduction over the next axis, so that a mesh's reductions fuse as a
/// one-axis step's do.
Operation *getRider(Operation *op) {
  if (!isa<dist::AllReduceOp, dist::ReduceScatterOp>(op) || !op->hasOneUse())
    return nullptr;
  auto reduceKind = [](Operation *reduction) {
    if (auto reduce = dyn_cast<dist::AllReduceOp>(reduction))
      return reduce.getReduce();
    return cast<dist::ReduceScatterOp>(reduction).getReduce();
  };
  Operation *user = *op->user_begin();
  auto reduce = dyn_cast<dist::AllReduceOp>(user);
  auto scatter = dyn_cast<dist::ReduceScatterOp>(user);
  if ((!reduce && !scatter) || reduceKind(user) != reduceKind(op) ||
      cast<dist::CollectiveOpInterface>(user).getPlacementAxis() ==
          cast<dist::CollectiveOpInterface>(op).getPlacementAxis())
    return nullptr;
  if (reduce && reduce.getType() != op->getResult(0).getType())
    return nullptr;
  if (scatter && (scatter.getDim() != 0 ||
                  !cast<RankedTensorType>(scatter.getType()).hasStaticShape()))
    return nullptr;
  return user;
}

/// The bucket kind of a collective that can join a bucket, if any.
std::optional<BucketKind> classify(Operation *op) {
  auto staticInput = [](Value value) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    return type && type.hasStaticShape();
  };
  if (auto reduce = dyn_cast<dist::AllReduceOp>(op))
    return staticInput(reduce.getInput()) ? std::optional(BucketKind::AllReduce)
                                          : std::nullopt;
  auto rankedInput = [&](Value value) {
    return staticInput(value) &&
           cast<RankedTensorType>(value.getType()).getRank() > 0;
  };
  if (auto scatter = dyn_cast<dist::ReduceScatterOp>(op))
    return scatter.getDim() == 0 && rankedInput(scatter.getInput())
               ? std::optional(BucketKind::ReduceScatter)
               : std::nullopt;
  if (auto gather = dyn_cast<dist::AllGatherOp>(op))
    return gather.getDim() == 0 && rankedInput(gather.getInput()) &&
                   cast<RankedTensorType>(gather.getType()).hasStaticShape()
               ? std::optional(BucketKind::AllGather)
               : std::nullopt;
  return std::nullopt;
}

class BucketPlanner {
public:
  BucketPlanner(int64_t reduceBucketBytes, int64_t allgatherBucketBytes,
                int64_t allgatherAcrossUsesBytes)
      : reduceBucketBytes(reduceBucketBytes),
        allgatherBucketBytes(allgatherBucketBytes),
        allgatherAcrossUsesBytes(allgatherAcrossUsesBytes) {}

  /// Plans the buckets of one block; returns those with two or more members.
  void planBlock(Block &block);
  void materialize();
  unsigned getNumFused() const { return numFused; }

private:
  void add(Operation *op, BucketKind kind);
  void close(unsigned index) {
    Bucket &bucket = buckets[index];
    if (bucket.open && bucket.members.size() > 1)
      ready.push_back(index);
    bucket.open = false;
  }
  void materialize(Bucket &bucket);

  int64_t reduceBucketBytes;
  int64_t allgatherBucketBytes;
  int64_t allgatherAcrossUsesBytes;
  std::vector<Bucket> buckets;
  SmallVector<unsigned> ready;
  DenseMap<Operation *, unsigned> bucketOf;
  /// Riders (getRider) and the bucket of their producer.
  DenseMap<Operation *, unsigned> riderBucket;
  SmallVector<unsigned> openBuckets;
  DenseMap<Operation *, int64_t> position;
  unsigned numFused = 0;
};

void BucketPlanner::add(Operation *op, BucketKind kind) {
  auto collective = cast<dist::CollectiveOpInterface>(op);
  auto inputType = cast<RankedTensorType>(op->getOperand(0).getType());
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t bytes =
      getTensorBytes(kind == BucketKind::AllGather ? resultType : inputType);
  int64_t limit =
      kind == BucketKind::AllGather ? allgatherBucketBytes : reduceBucketBytes;
  if (limit == 0)
    return;
  dist::ReduceKind reduce = dist::ReduceKind::sum;
  if (auto op2 = dyn_cast<dist::AllReduceOp>(op))
    reduce = op2.getReduce();
  else if (auto op2 = dyn_cast<dist::ReduceScatterOp>(op))
    reduce = op2.getReduce();
  int64_t axis = collective.getPlacementAxis();
  Type elementType = inputType.getElementType();

  for (unsigned index : openBuckets) {
    Bucket &bucket = buckets[index];
    if (!bucket.open || bucket.kind != kind || bucket.reduce != reduce ||
        bucket.axis != axis || bucket.elementType != elementType)
      continue;
    bool fits = bucket.bytes + bytes <= limit;
    // A gather moves up to the first member: its input must exist there.
    // An input gathered by another bucket (the gather within the node of a
    // full 2-D cut, after the gather across nodes) exists where that
    // bucket is issued, at its own first member.
    if (fits && kind == BucketKind::AllGather) {
      Operation *def = op->getOperand(0).getDefiningOp();
      Operation *first = bucket.members.front();
      if (auto producer = def ? bucketOf.find(def) : bucketOf.end();
          producer != bucketOf.end()) {
        const Bucket &issuing = buckets[producer->second];
        def = issuing.kind == BucketKind::AllGather ? issuing.members.front()
                                                    : nullptr;
        if (!def)
          fits = false;
      }
      if (def && def->getBlock() == first->getBlock() &&
          position.lookup(def) >= position.lookup(first))
        fits = false;
      // A second gather of a member's input is a re-gather (stage 3's
      // backward, or a use too far from the last): it exists to free the
      // gathered tensor in between, so it starts a bucket of its own.
      if (llvm::any_of(bucket.members, [&](Operation *member) {
            return member->getOperand(0) == op->getOperand(0);
          }))
        fits = false;
      // Across a use, fusing moves a gather ahead of compute and adds a copy
      // out of the bucket, cheap only while the bucket is in cache: worth it
      // for small buckets of latency-bound tensors only.
      if (bucket.used && bucket.bytes + bytes > allgatherAcrossUsesBytes)
        fits = false;
    }
    if (fits) {
      bucket.members.push_back(op);
      bucket.bytes += bytes;
      bucketOf[op] = index;
      return;
    }
    close(index);
  }
  buckets.push_back(
      Bucket{kind, reduce, axis, elementType, bytes, true, false, {op}});
  bucketOf[op] = buckets.size() - 1;
  openBuckets.push_back(buckets.size() - 1);
}

void BucketPlanner::planBlock(Block &block) {
  for (auto [index, op] : llvm::enumerate(block))
    position[&op] = index;
  for (Operation &op : block) {
    // A use of a member's result closes a reduction's bucket: the
    // reduction, issued at the bucket's last member, must come before it.
    // A gather bucket stays open: it is issued at its first member, ahead
    // of every member's uses, so gathers separated by compute still fuse.
    op.walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (Operation *def = operand.getDefiningOp()) {
          auto it = bucketOf.find(def);
          if (it == bucketOf.end()) {
            // A use of a rider's result must follow its producer's bucket.
            auto rider = riderBucket.find(def);
            if (rider != riderBucket.end())
              close(rider->second);
            continue;
          }
          // A rider moves with its producer's bucket: not a use that must
          // come after the bucket.
          if (getRider(def) == nested)
            continue;
          if (buckets[it->second].kind == BucketKind::AllGather) {
            // A gather of the result over another axis (the next level of
            // a full 2-D cut) is not compute the bucket moves ahead of.
            auto next = dyn_cast<dist::AllGatherOp>(nested);
            if (!next || static_cast<int64_t>(next.getAxis()) ==
                             buckets[it->second].axis)
              buckets[it->second].used = true;
          } else {
            close(it->second);
          }
        }
    });
    Operation *producer =
        op.getNumOperands() == 1 ? op.getOperand(0).getDefiningOp() : nullptr;
    bool rides =
        producer && bucketOf.count(producer) && getRider(producer) == &op;
    if (rides)
      riderBucket[&op] = bucketOf.lookup(producer);
    else if (std::optional<BucketKind> kind = classify(&op))
      add(&op, *kind);
    llvm::erase_if(openBuckets,
                   [&](unsigned index) { return !buckets[index].open; });
  }
  for (unsigned index : openBuckets)
    close(index);
  openBuckets.clear();
}

/// Elements of each shard of a bucket of `inputs` cut `groupSize` ways
/// along dim 0 (each input padded to a multiple of `groupSize` rows); all
/// of them for a `groupSize` of 1 (an all-reduce's or a gather's inputs,
/// scalars among them).
static int64_t bucketShardElements(ValueRange inputs, int64_t groupSize) {
  int64_t total = 0;
  for (Value input : inputs) {
    auto type = cast<RankedTensorType>(input.getType());
    if (groupSize == 1) {
      total += type.getNumElements();
      continue;
    }
    total += shardSize(type.getDimSize(0), groupSize) *
             (type.getNumElements() / std::max<int64_t>(type.getDimSize(0), 1));
  }
  return total;
}

/// The members' results, unpacked from the fused reduction `reduced`. When
/// every member has a rider of the same kind over the same axis, one fused
/// reduction over that axis replaces the riders: an all-reduce of the
/// bucket before it is unpacked, or a reduce-scatter of the unpacked
/// shards packed again, so that each rank's part holds its part of every
/// rider's input. A rider left alone is moved after its member's result,
/// which now comes from the bucket.
static ValueRange unpackWithRiders(OpBuilder &builder, Location loc,
                                   const Bucket &bucket,
                                   ArrayRef<Type> resultTypes, Value reduced) {
  SmallVector<Operation *> riders;
  for (Operation *member : bucket.members)
    riders.push_back(getRider(member));
  auto axisOf = [](Operation *rider) {
    return cast<dist::CollectiveOpInterface>(rider).getPlacementAxis();
  };
  bool fuseRiders =
      llvm::all_of(riders, [](Operation *rider) { return !!rider; }) &&
      llvm::all_equal(llvm::map_range(riders, axisOf)) &&
      llvm::all_equal(llvm::map_range(
          riders, [](Operation *rider) { return rider->getName(); }));
  if (!fuseRiders) {
    ValueRange results =
        builder.create<dist::UnpackOp>(loc, resultTypes, reduced).getResults();
    for (auto [rider, result] : llvm::zip(riders, results))
      if (rider)
        rider->moveAfter(result.getDefiningOp());
    return results;
  }
  int64_t axis = axisOf(riders.front());
  ValueRange results;
  SmallVector<Value> riderResults;
  if (isa<dist::AllReduceOp>(riders.front())) {
    reduced =
        builder.create<dist::AllReduceOp>(loc, reduced, bucket.reduce, axis);
    results =
        builder.create<dist::UnpackOp>(loc, resultTypes, reduced).getResults();
    riderResults.assign(results.begin(), results.end());
  } else {
    results =
        builder.create<dist::UnpackOp>(loc, resultTypes, reduced).getResults();
    int64_t groupSize = dist::getGroupSize(riders.front(), axis);
    int64_t total = bucketShardElements(results, groupSize);
    auto pack = builder.create<dist::PackOp>(
        loc, RankedTensorType::get({total * groupSize}, bucket.elementType),
        results);
    pack.setShardsAttr(builder.getI64IntegerAttr(groupSize));
    Value scattered = builder.create<dist::ReduceScatterOp>(
        loc, RankedTensorType::get({total}, bucket.elementType), pack,
        bucket.reduce, axis, /*dim=*/0);
    SmallVector<Type> riderTypes;
    for (Operation *rider : riders)
      riderTypes.push_back(rider->getResult(0).getType());
    auto unpack = builder.create<dist::UnpackOp>(loc, riderTypes, scattered);
    riderResults.assign(unpack.getResults().begin(), unpack.getResults().end());
  }
  for (auto [rider, result] : llvm::zip(riders, riderResults)) {
    rider->getResult(0).replaceAllUsesWith(result);
    rider->erase();
  }
  // The members' results now have no users; the caller erases them.
  return results;
}

void BucketPlanner::materialize(Bucket &bucket) {
  Operation *first = bucket.members.front();
  int64_t groupSize = dist::getGroupSize(first, bucket.axis);
  OpBuilder builder(first->getContext());
  if (bucket.kind == BucketKind::AllGather)
    builder.setInsertionPoint(first);
  else
    builder.setInsertionPointAfter(bucket.members.back());
  Location loc = builder.getFusedLoc(llvm::to_vector(llvm::map_range(
      bucket.members, [](Operation *op) { return op->getLoc(); })));

  SmallVector<Value> inputs;
  SmallVector<Type> resultTypes;
  for (Operation *member : bucket.members) {
    inputs.push_back(member->getOperand(0));
    resultTypes.push_back(member->getResult(0).getType());
  }
  int64_t total = bucketShardElements(
      inputs, bucket.kind == BucketKind::ReduceScatter ? groupSize : 1);
  auto shardBucket = RankedTensorType::get({total}, bucket.elementType);
  auto fullBucket =
      RankedTensorType::get({total * groupSize}, bucket.elementType);
  IntegerAttr shards = builder.getI64IntegerAttr(groupSize);
  ValueRange results;
  switch (bucket.kind) {
  case BucketKind::AllReduce: {
    Value packed = builder.create<dist::PackOp>(loc, shardBucket, inputs);
    Value reduced = builder.create<dist::AllReduceOp>(
        loc, packed, bucket.reduce, bucket.axis);
    results = unpackWithRiders(builder, loc, bucket, resultTypes, reduced);
    break;
  }
  case BucketKind::ReduceScatter: {
    auto pack = builder.create<dist::PackOp>(loc, fullBucket, inputs);
    pack.setShardsAttr(shards);
    Value reduced = builder.create<dist::ReduceScatterOp>(
        loc, shardBucket, pack, bucket.reduce, bucket.axis, /*dim=*/0);
    results = unpackWithRiders(builder, loc, bucket, resultTypes, reduced);
    break;
  }
  case BucketKind::AllGather: {
    Value packed = builder.create<dist::PackOp>(loc, shardBucket, inputs);
    Value gathered = builder.create<dist::AllGatherOp>(loc, fullBucket, packed,
                                                       bucket.axis, /*dim=*/0);
    auto unpack = builder.create<dist::UnpackOp>(loc, resultTypes, gathered);
    unpack.setShardsAttr(shards);
    results = unpack.getResults();
    break;
  }
  }
  for (auto [member, result] : llvm::zip(bucket.members, results)) {
    member->getResult(0).replaceAllUsesWith(result);
    member->erase();
  }
  numFused += bucket.members.size();
}

void BucketPlanner::materialize() {
  for (unsigned index : ready)
    materialize(buckets[index]);
}

struct ZeroBucketPass : zero::impl::ZeroBucketBase<ZeroBucketPass> {
  using ZeroBucketBase::ZeroBucketBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto [name, bytes] :
         {std::pair<StringRef, int64_t>{"reduce-bucket-bytes",
                                        reduceBucketBytes},
          {"allgather-bucket-bytes", allgatherBucketBytes},
          {"allgather-across-uses-bytes", allgatherAcrossUsesBytes}})
      if (bytes < 0) {
        mlir::emitError(module.getLoc())
            << "zero-bucket: bucket sizes must not be negative: " << name
            << " is " << bytes;
        return signalPassFailure();
      }
    BucketPlanner planner(reduceBucketBytes, allgatherBucketBytes,
                          allgatherAcrossUsesBytes);
    for (func::FuncOp function : getStepFunctions(module))
      function.walk([&](Block *block) { planner.planBlock(*block); });
    planner.materialize();
  }
};

} // namespace
