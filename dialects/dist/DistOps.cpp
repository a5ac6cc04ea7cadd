//===- DistOps.cpp - Collectives of the dist dialect ----------------------===//

#include "zero/dialects/dist/DistOps.h"
#include "zero/dialects/dist/DistSbpParsing.h"
#include "zero/support/ShardLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace zero;
using namespace zero::dist;

#include "zero/dialects/dist/DistInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared verification
//===----------------------------------------------------------------------===//

static LogicalResult verifySameElementType(Operation *op, ShapedType input,
                                           ShapedType result) {
  if (input.getElementType() != result.getElementType())
    return op->emitOpError()
           << "changes the element type from " << input.getElementType()
           << " to " << result.getElementType()
           << "; collectives move data, they do not convert it";
  return success();
}

static LogicalResult verifyDimInRange(Operation *op, int64_t dim,
                                      RankedTensorType type, StringRef role) {
  if (dim >= type.getRank())
    return op->emitOpError() << role << " " << dim << " is out of range for "
                             << type << " of rank " << type.getRank();
  return success();
}

/// Checks that `result` equals `input` except along `dim`.
static LogicalResult verifyOtherDimsEqual(Operation *op, RankedTensorType input,
                                          RankedTensorType result,
                                          ArrayRef<int64_t> exemptDims) {
  if (input.getRank() != result.getRank())
    return op->emitOpError() << "changes the rank from " << input.getRank()
                             << " to " << result.getRank();
  for (int64_t d = 0; d < input.getRank(); ++d) {
    if (llvm::is_contained(exemptDims, d))
      continue;
    if (input.getDimSize(d) != result.getDimSize(d))
      return op->emitOpError()
             << "changes dimension " << d << " from " << input.getDimSize(d)
             << " to " << result.getDimSize(d) << "; only the exchanged "
             << "dimension may change";
  }
  return success();
}

static LogicalResult verifyStaticAlong(Operation *op, RankedTensorType type,
                                       int64_t dim) {
  if (type.isDynamicDim(dim))
    return op->emitOpError() << "needs a static extent along dimension " << dim
                             << " to cut it into shards, got " << type;
  return success();
}

/// `full` cut along `dim` into `group` padded shards gives `shard`
/// (reduce_scatter, slice).
static LogicalResult verifyShardCut(Operation *op, int64_t axis,
                                    RankedTensorType full,
                                    RankedTensorType shard, int64_t dim,
                                    StringRef verb) {
  FailureOr<int64_t> group = verifyGroupSize(op, axis);
  if (failed(group) || failed(verifySameElementType(op, full, shard)) ||
      failed(verifyDimInRange(op, dim, full, "dim")) ||
      failed(verifyOtherDimsEqual(op, full, shard, {dim})) ||
      failed(verifyStaticAlong(op, full, dim)) ||
      failed(verifyStaticAlong(op, shard, dim)))
    return failure();
  int64_t extent = full.getDimSize(dim);
  int64_t expected = shardSize(extent, *group);
  if (shard.getDimSize(dim) != expected) {
    auto diag = op->emitOpError()
                << verb << " of extent " << extent << " along dimension " << dim
                << " over " << *group << " ranks gives shards of " << expected;
    if (paddingOf(extent, *group) != 0)
      diag << " (padded to " << paddedSize(extent, *group) << ")";
    return diag << ", but the result has " << shard.getDimSize(dim);
  }
  return success();
}

/// Shards of `shard` along `dim` concatenated over `group` ranks, padding
/// dropped, give `full` (all_gather).
static LogicalResult verifyShardGather(Operation *op, int64_t axis,
                                       RankedTensorType shard,
                                       RankedTensorType full, int64_t dim) {
  FailureOr<int64_t> group = verifyGroupSize(op, axis);
  if (failed(group) || failed(verifySameElementType(op, shard, full)) ||
      failed(verifyDimInRange(op, dim, shard, "dim")) ||
      failed(verifyOtherDimsEqual(op, shard, full, {dim})) ||
      failed(verifyStaticAlong(op, shard, dim)) ||
      failed(verifyStaticAlong(op, full, dim)))
    return failure();
  int64_t shardExtent = shard.getDimSize(dim);
  int64_t fullExtent = full.getDimSize(dim);
  if (shardSize(fullExtent, *group) != shardExtent) {
    int64_t most = shardExtent * *group;
    int64_t least = shardExtent == 0 ? 0 : most - *group + 1;
    return op->emitOpError()
           << "all-gather of shards of " << shardExtent << " along dimension "
           << dim << " over " << *group << " ranks gives an extent between "
           << least << " and " << most << " (padding dropped), but the result "
           << "has " << fullExtent;
  }
  return success();
}

static LogicalResult verifyAllToAll(Operation *op, int64_t axis,
                                    RankedTensorType input,
                                    RankedTensorType result, int64_t splitDim,
                                    int64_t concatDim) {
  FailureOr<int64_t> group = verifyGroupSize(op, axis);
  if (failed(group) || failed(verifySameElementType(op, input, result)) ||
      failed(verifyDimInRange(op, splitDim, input, "split dimension")) ||
      failed(verifyDimInRange(op, concatDim, input, "concat dimension")) ||
      failed(verifyOtherDimsEqual(op, input, result, {splitDim, concatDim})) ||
      failed(verifyStaticAlong(op, input, splitDim)) ||
      failed(verifyStaticAlong(op, input, concatDim)))
    return failure();
  int64_t splitExtent = input.getDimSize(splitDim);
  if (splitExtent % *group != 0)
    return op->emitOpError()
           << "splits extent " << splitExtent << " of dimension " << splitDim
           << " over " << *group << " ranks, which does not divide "
           << "evenly; pad the tensor first";
  SmallVector<int64_t> expected(input.getShape());
  if (splitDim != concatDim) {
    expected[splitDim] = splitExtent / *group;
    expected[concatDim] *= *group;
  }
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError()
           << "all-to-all over " << *group << " ranks turns " << input
           << " into "
           << RankedTensorType::get(expected, input.getElementType())
           << ", but the result is " << result;
  return success();
}

static LogicalResult verifyRoot(Operation *op, int64_t axis, int64_t root) {
  FailureOr<int64_t> group = verifyGroupSize(op, axis);
  if (failed(group))
    return failure();
  if (root >= *group)
    return op->emitOpError()
           << "has root " << root << ", but the group along "
           << "axis " << axis << " has only " << *group << " ranks";
  return success();
}

static LogicalResult verifyTokenCarries(Operation *op, Type input,
                                        TokenType token) {
  if (token.getValueType() != input)
    return op->emitOpError() << "returns " << token << ", but the result of "
                             << "this collective has type " << input;
  return success();
}

/// Collectives over a single rank return their input unchanged.
static OpFoldResult foldTrivialGroup(Operation *op, int64_t axis, Value input) {
  if (getGroupSize(op, axis) != 1 ||
      input.getType() != op->getResult(0).getType())
    return {};
  return input;
}

//===----------------------------------------------------------------------===//
// Synchronous collectives
//===----------------------------------------------------------------------===//

/// Whether `value` holds block-quantized data: a dist.quantize result,
/// possibly moved by collectives or packed since.
static bool isQuantized(Value value) {
  SmallVector<Value> worklist{value};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    if (!seen.insert(current).second)
      continue;
    Operation *def = current.getDefiningOp();
    if (!def)
      continue;
    if (isa<QuantizeOp>(def))
      return true;
    if (isa<AllGatherOp, AllToAllOp, SliceOp, UnpackOp, PackOp, BroadcastOp>(
            def))
      llvm::append_range(worklist, def->getOperands());
  }
  return false;
}

/// Every system reduces in full precision: quantized data is moved, never
/// summed (a sum of int8 codes with different scales means nothing).
static LogicalResult verifyNotQuantized(Operation *op, Value input) {
  if (isQuantized(input))
    return op->emitOpError()
           << "reduces block-quantized data from 'dist.quantize': quantized "
              "values are moved (all_gather, all_to_all), never summed; "
              "dequantize them first";
  return success();
}

/// The shape rules shared by quantize and dequantize: `values` (floats)
/// cut into `segments` segments of blocks of `block`, with one scale per
/// block, and `codes` holding each segment's codes of `bits` bits in whole
/// bytes.
static LogicalResult
verifyQuantizedLayout(Operation *op, RankedTensorType values,
                      RankedTensorType codes, RankedTensorType scales,
                      int64_t block, int64_t segments, int64_t bits) {
  if (bits != 8 && bits != 4)
    return op->emitOpError() << "has " << bits
                             << "-bit codes; int8 (bits 8) and int4 (bits 4) "
                                "are supported";
  if (values.isDynamicDim(0) || codes.isDynamicDim(0) || scales.isDynamicDim(0))
    return op->emitOpError() << "needs static extents";
  int64_t extent = values.getDimSize(0);
  if (extent % segments != 0)
    return op->emitOpError()
           << "cuts " << extent << " elements into " << segments
           << " segments, which does not divide evenly";
  int64_t length = extent / segments;
  int64_t perSegment = shardSize(length, block);
  if (scales.getDimSize(0) != perSegment * segments)
    return op->emitOpError()
           << "has " << segments << " segment(s) of " << length
           << " elements in blocks of " << block << ", so " << perSegment
           << " scale(s) per segment and " << perSegment * segments
           << " in all, but the scales have " << scales.getDimSize(0);
  int64_t bytes = segments * quantizedSegmentBytes(length, bits);
  if (codes.getDimSize(0) != bytes)
    return op->emitOpError() << "has " << segments << " segment(s) of "
                             << length << " " << bits << "-bit codes, " << bytes
                             << " bytes in all, but the codes are " << codes;
  return success();
}

LogicalResult QuantizeOp::verify() {
  return verifyQuantizedLayout(*this, getInput().getType(),
                               getResult().getType(), getScales().getType(),
                               getBlock(), getSegments(), getBits());
}

void QuantizeOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "quantized");
  setName(getScales(), "scales");
}

void DequantizeOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "dequantized");
}

LogicalResult DequantizeOp::verify() {
  return verifyQuantizedLayout(*this, getResult().getType(),
                               getInput().getType(), getScales().getType(),
                               getBlock(), getSegments(), getBits());
}

LogicalResult AllReduceOp::verify() {
  if (failed(verifyNotQuantized(*this, getInput())))
    return failure();
  return verifyGroupSize(*this, getAxis());
}
OpFoldResult AllReduceOp::fold(FoldAdaptor) {
  return foldTrivialGroup(*this, getAxis(), getInput());
}
void AllReduceOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "reduced");
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyNotQuantized(*this, getInput())))
    return failure();
  return verifyShardCut(*this, getAxis(), getInput().getType(),
                        getResult().getType(), getDim(), "reduce-scatter");
}
OpFoldResult ReduceScatterOp::fold(FoldAdaptor) {
  return foldTrivialGroup(*this, getAxis(), getInput());
}
void ReduceScatterOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "shard");
}

LogicalResult AllGatherOp::verify() {
  return verifyShardGather(*this, getAxis(), getInput().getType(),
                           getResult().getType(), getDim());
}
OpFoldResult AllGatherOp::fold(FoldAdaptor) {
  return foldTrivialGroup(*this, getAxis(), getInput());
}
void AllGatherOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "gathered");
}

LogicalResult BroadcastOp::verify() {
  return verifyRoot(*this, getAxis(), getRoot());
}
OpFoldResult BroadcastOp::fold(FoldAdaptor) {
  return foldTrivialGroup(*this, getAxis(), getInput());
}
void BroadcastOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "bcast");
}

LogicalResult SliceOp::verify() {
  return verifyShardCut(*this, getAxis(), getInput().getType(),
                        getResult().getType(), getDim(), "slice");
}
OpFoldResult SliceOp::fold(FoldAdaptor) {
  return foldTrivialGroup(*this, getAxis(), getInput());
}
void SliceOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "slice");
}

LogicalResult AllToAllOp::verify() {
  return verifyAllToAll(*this, getAxis(), getInput().getType(),
                        getResult().getType(), getSplitDim(), getConcatDim());
}
OpFoldResult AllToAllOp::fold(FoldAdaptor) {
  return foldTrivialGroup(*this, getAxis(), getInput());
}
void AllToAllOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "exchanged");
}

//===----------------------------------------------------------------------===//
// ReshardOp
//===----------------------------------------------------------------------===//

static ParseResult parseSbpEntries(OpAsmParser &parser, SbpAttr &sbp) {
  SmallVector<SbpDim> dims;
  if (parseSbpDims(parser, dims))
    return failure();
  sbp = SbpAttr::get(parser.getContext(), dims);
  return success();
}

static void printSbpEntries(OpAsmPrinter &printer, Operation *, SbpAttr sbp) {
  printSbpDims(printer, sbp.getDims());
}

static LogicalResult verifySbpFits(Operation *op, SbpAttr sbp, StringRef side,
                                   PlacementAttr placement, int64_t rank) {
  if (static_cast<int64_t>(sbp.getDims().size()) != placement.getNumAxes())
    return op->emitOpError()
           << "'" << side << "' has " << sbp.getDims().size()
           << " SBP entries, but " << placement << " has "
           << placement.getNumAxes() << " axis(es); give one entry per axis";
  for (const SbpDim &entry : sbp.getDims())
    if (entry.isSplit() && entry.dim >= rank)
      return op->emitOpError()
             << "'" << side << "' splits dimension " << entry.dim
             << " of a rank-" << rank << " tensor";
  return success();
}

LogicalResult ReshardOp::verify() {
  PlacementAttr placement = lookupPlacement(*this);
  if (!placement)
    return emitOpError() << "has no placement: attach a 'dist.placement' "
                            "attribute to the enclosing function or module";
  RankedTensorType input = getInput().getType(), result = getResult().getType();
  if (failed(verifySameElementType(*this, input, result)))
    return failure();
  if (input.getRank() != result.getRank())
    return emitOpError() << "changes the rank from " << input.getRank()
                         << " to " << result.getRank();
  if (failed(verifySbpFits(*this, getFrom(), "from", placement,
                           input.getRank())) ||
      failed(verifySbpFits(*this, getTo(), "to", placement, input.getRank())))
    return failure();
  for (int64_t d = 0; d < input.getRank(); ++d) {
    if (input.isDynamicDim(d) || result.isDynamicDim(d)) {
      if (input.getDimSize(d) != result.getDimSize(d))
        return emitOpError()
               << "dimension " << d << " is dynamic on one side only";
      continue;
    }
    int64_t factorIn = getFrom().getSplitFactor(d, placement);
    int64_t factorOut = getTo().getSplitFactor(d, placement);
    if (!localSizesAgree(input.getDimSize(d), factorIn, result.getDimSize(d),
                         factorOut))
      return emitOpError() << "no logical extent of dimension " << d
                           << " is split " << factorIn << " way(s) into "
                           << input.getDimSize(d) << " and " << factorOut
                           << " way(s) into " << result.getDimSize(d);
  }
  return success();
}

OpFoldResult ReshardOp::fold(FoldAdaptor) {
  if (getInput().getType() != getResult().getType())
    return {};
  if (getFrom() == getTo())
    return getInput();
  PlacementAttr placement = lookupPlacement(*this);
  if (placement && placement.getNumRanks() == 1)
    return getInput();
  return {};
}

void ReshardOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "resharded");
}

//===----------------------------------------------------------------------===//
// Asynchronous collectives
//===----------------------------------------------------------------------===//

namespace {
/// A `*_start` over a single rank is its input: forward it to the waits.
template <typename StartOp>
struct FoldTrivialStart : public OpRewritePattern<StartOp> {
  using OpRewritePattern<StartOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(StartOp start,
                                PatternRewriter &rewriter) const override {
    if (getGroupSize(start, start.getAxis()) != 1 ||
        start.getToken().getType().getValueType() != start.getInput().getType())
      return failure();
    for (Operation *user : llvm::make_early_inc_range(start->getUsers())) {
      auto wait = dyn_cast<WaitOp>(user);
      if (!wait)
        return failure();
      rewriter.replaceOp(wait, start.getInput());
    }
    rewriter.eraseOp(start);
    return success();
  }
};
} // namespace

#define ZERO_DIST_START_OP_COMMON(OpName, resultName)                          \
  void OpName::getCanonicalizationPatterns(RewritePatternSet &patterns,        \
                                           MLIRContext *context) {             \
    patterns.add<FoldTrivialStart<OpName>>(context);                           \
  }                                                                            \
  void OpName::getAsmResultNames(OpAsmSetValueNameFn setName) {                \
    setName(getToken(), resultName);                                           \
  }

ZERO_DIST_START_OP_COMMON(AllReduceStartOp, "reducing")
ZERO_DIST_START_OP_COMMON(ReduceScatterStartOp, "scattering")
ZERO_DIST_START_OP_COMMON(AllGatherStartOp, "gathering")
ZERO_DIST_START_OP_COMMON(BroadcastStartOp, "broadcasting")
ZERO_DIST_START_OP_COMMON(AllToAllStartOp, "exchanging")
#undef ZERO_DIST_START_OP_COMMON

LogicalResult AllReduceStartOp::verify() {
  if (failed(verifyNotQuantized(*this, getInput())) ||
      failed(verifyGroupSize(*this, getAxis())))
    return failure();
  return verifyTokenCarries(*this, getInput().getType(), getToken().getType());
}

LogicalResult ReduceScatterStartOp::verify() {
  if (failed(verifyNotQuantized(*this, getInput())))
    return failure();
  return verifyShardCut(*this, getAxis(), getInput().getType(),
                        getToken().getType().getValueType(), getDim(),
                        "reduce-scatter");
}

LogicalResult AllGatherStartOp::verify() {
  return verifyShardGather(*this, getAxis(), getInput().getType(),
                           getToken().getType().getValueType(), getDim());
}

LogicalResult BroadcastStartOp::verify() {
  if (failed(verifyRoot(*this, getAxis(), getRoot())))
    return failure();
  return verifyTokenCarries(*this, getInput().getType(), getToken().getType());
}

LogicalResult AllToAllStartOp::verify() {
  return verifyAllToAll(*this, getAxis(), getInput().getType(),
                        getToken().getType().getValueType(), getSplitDim(),
                        getConcatDim());
}

LogicalResult WaitOp::verify() {
  int64_t waits = llvm::count_if(
      getToken().getUsers(), [](Operation *user) { return isa<WaitOp>(user); });
  if (waits > 1)
    return emitOpError() << "waits on a token that is waited on " << waits
                         << " times; each started collective is waited on once";
  return success();
}

void WaitOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "ready");
}

//===----------------------------------------------------------------------===//
// Buckets
//===----------------------------------------------------------------------===//

static LogicalResult verifyBucketMembers(Operation *op, TypeRange members,
                                         Type elementType, StringRef what) {
  if (members.empty())
    return op->emitOpError() << what << " needs at least one tensor";
  for (auto [index, type] : llvm::enumerate(members)) {
    Type memberElement = cast<ShapedType>(type).getElementType();
    if (memberElement != elementType)
      return op->emitOpError()
             << "tensor #" << index << " has element type " << memberElement
             << ", but the bucket holds " << elementType;
  }
  return success();
}

static int64_t totalElements(TypeRange types) {
  int64_t total = 0;
  for (Type type : types)
    total += cast<ShapedType>(type).getNumElements();
  return total;
}

/// Elements one rank's group holds of a rank-major bucket over `shards`
/// ranks: ceil(d0 / shards) rows of every member. Fails on rank-0 members,
/// which have no dimension 0 to cut.
static FailureOr<int64_t> elementsPerShard(Operation *op, TypeRange members,
                                           int64_t shards) {
  int64_t total = 0;
  for (Type type : members) {
    auto shaped = cast<ShapedType>(type);
    if (shaped.getRank() == 0)
      return op->emitOpError()
             << "cannot cut a rank-0 tensor into " << shards
             << " shards along dimension 0; reshape it to tensor<1x...>";
    total +=
        shardSize(shaped.getDimSize(0), shards) *
        (shaped.getNumElements() / std::max<int64_t>(shaped.getDimSize(0), 1));
  }
  return total;
}

LogicalResult PackOp::verify() {
  RankedTensorType bucket = getResult().getType();
  if (failed(verifyBucketMembers(*this, getInputs().getTypes(),
                                 bucket.getElementType(), "pack")))
    return failure();
  if (bucket.isDynamicDim(0))
    return emitOpError() << "needs a static bucket size, got " << bucket;
  if (std::optional<int64_t> shards = getShards()) {
    if (getPadTo() != 1)
      return emitOpError() << "takes 'pad_to' or 'shards', not both: a "
                              "rank-major bucket is padded per shard";
    FailureOr<int64_t> perShard =
        elementsPerShard(*this, getInputs().getTypes(), *shards);
    if (failed(perShard))
      return failure();
    if (bucket.getDimSize(0) != *perShard * *shards)
      return emitOpError() << "packs " << *perShard << " elements per shard "
                           << "for " << *shards << " shards into a bucket of "
                           << *perShard * *shards << ", but the result has "
                           << bucket.getDimSize(0);
    return success();
  }
  int64_t total = totalElements(getInputs().getTypes());
  int64_t expected = paddedSize(total, getPadTo());
  if (bucket.getDimSize(0) != expected) {
    auto diag = emitOpError() << "packs " << total << " elements";
    if (getPadTo() != 1)
      diag << " padded to a multiple of " << getPadTo();
    return diag << " into a bucket of " << expected << ", but the result has "
                << bucket.getDimSize(0);
  }
  return success();
}

void PackOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "bucket");
}

LogicalResult UnpackOp::verify() {
  RankedTensorType bucket = getInput().getType();
  if (failed(verifyBucketMembers(*this, getResults().getTypes(),
                                 bucket.getElementType(), "unpack")))
    return failure();
  if (std::optional<int64_t> shards = getShards()) {
    FailureOr<int64_t> perShard =
        elementsPerShard(*this, getResults().getTypes(), *shards);
    if (failed(perShard))
      return failure();
    if (!bucket.isDynamicDim(0) && bucket.getDimSize(0) != *perShard * *shards)
      return emitOpError() << "reads " << *perShard << " elements per shard "
                           << "from " << *shards << " shards, "
                           << *perShard * *shards << " in all, but the bucket "
                           << "has " << bucket.getDimSize(0);
    return success();
  }
  int64_t total = totalElements(getResults().getTypes());
  if (!bucket.isDynamicDim(0) && total > bucket.getDimSize(0))
    return emitOpError() << "reads " << total << " elements from a bucket of "
                         << bucket.getDimSize(0);
  return success();
}

LogicalResult UnpackOp::fold(FoldAdaptor,
                             SmallVectorImpl<OpFoldResult> &results) {
  auto pack = getInput().getDefiningOp<PackOp>();
  if (!pack || pack.getInputs().getTypes() != getResults().getTypes() ||
      pack.getShards() != getShards())
    return failure();
  results.append(pack.getInputs().begin(), pack.getInputs().end());
  return success();
}

void UnpackOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  // Naming only the first result prints the group as `%unpacked:N`.
  if (!getResults().empty())
    setName(getResult(0), "unpacked");
}

#define GET_OP_CLASSES
#include "zero/dialects/dist/DistOps.cpp.inc"
