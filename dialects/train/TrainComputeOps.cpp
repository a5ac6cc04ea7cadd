//===- TrainComputeOps.cpp - Compute of a training step -------------------===//

#include "zero/dialects/train/TrainOps.h"

#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace zero::train;

static LogicalResult verifySameElementType(Operation *op, ShapedType a,
                                           ShapedType b, StringRef what) {
  if (a.getElementType() != b.getElementType())
    return op->emitOpError()
           << what << " have element types " << a.getElementType() << " and "
           << b.getElementType() << "; insert a train.cast";
  return success();
}

/// `shape` without its last dimension: the row shape of a last-dim op.
static SmallVector<int64_t> dropLastDim(ArrayRef<int64_t> shape) {
  return SmallVector<int64_t>(shape.drop_back());
}

/// A 1-D tensor whose size is the last dimension of `input` (bias, LN scale).
static LogicalResult verifyPerFeature(Operation *op, RankedTensorType input,
                                      RankedTensorType vector, StringRef what) {
  if (input.getRank() < 1)
    return op->emitOpError() << "needs an input of rank >= 1, got " << input;
  int64_t features = input.getShape().back();
  if (vector.getRank() != 1 || vector.getDimSize(0) != features)
    return op->emitOpError() << "needs " << what << " of shape [" << features
                             << "] to match the last dimension of " << input
                             << ", got " << vector;
  return verifySameElementType(op, input, vector,
                               "the input and " + what.str());
}

/// Per-row statistics have the input's shape without its last dimension.
static LogicalResult verifyRowShape(Operation *op, RankedTensorType input,
                                    ShapedType rows, StringRef what) {
  if (rows.getShape() != ArrayRef<int64_t>(dropLastDim(input.getShape())))
    return op->emitOpError()
           << "needs " << what << " of shape "
           << RankedTensorType::get(dropLastDim(input.getShape()),
                                    rows.getElementType())
           << " (one per row of " << input << "), got " << rows;
  return success();
}

LogicalResult BiasAddOp::verify() {
  return verifyPerFeature(*this, getInput().getType(), getBias().getType(),
                          "a bias");
}

LogicalResult CausalMaskOp::verify() {
  RankedTensorType type = getInput().getType();
  if (type.getRank() < 2)
    return emitOpError() << "masks the last two dimensions, but " << type
                         << " has rank " << type.getRank();
  return success();
}

LogicalResult DropoutOp::verify() {
  RankedTensorType type = getInput().getType();
  double rate = getRate().convertToDouble();
  if (!(rate >= 0.0 && rate < 1.0))
    return emitOpError() << "needs a rate in [0, 1) (PyTorch's p), got "
                         << rate;
  if (type.getRank() < 1)
    return emitOpError() << "draws its mask along the batch, the first "
                            "dimension, but "
                         << type << " has none";
  if (getStreamAttr().getInt() < 0)
    return emitOpError() << "needs a stream >= 0, got "
                         << getStreamAttr().getInt();
  return success();
}

LogicalResult KeyMaskOp::verify() {
  RankedTensorType type = getInput().getType(), keep = getKeep().getType();
  if (type.getRank() < 2)
    return emitOpError() << "masks keys along the last dimension of a batch, "
                            "but "
                         << type << " has rank " << type.getRank();
  if (keep.getRank() != 2 || keep.getDimSize(0) != type.getDimSize(0) ||
      keep.getDimSize(1) != type.getShape().back())
    return emitOpError() << "needs keep of shape [batch, keys] = ["
                         << type.getDimSize(0) << ", " << type.getShape().back()
                         << "] for " << type << ", got " << keep;
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

/// The shape rules of `train.matmul`, which the fused matmuls share.
static LogicalResult verifyMatmul(Operation *op, RankedTensorType lhs,
                                  RankedTensorType rhs, RankedTensorType result,
                                  bool transposeA, bool transposeB) {
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return op->emitOpError()
           << "needs operands of rank >= 2, got " << lhs << " and " << rhs;
  if (failed(verifySameElementType(op, lhs, rhs, "the operands")) ||
      failed(verifySameElementType(op, lhs, result, "the operands and result")))
    return failure();
  bool sharedRhs = rhs.getRank() == 2 && lhs.getRank() > 2;
  if (!sharedRhs && lhs.getRank() != rhs.getRank())
    return op->emitOpError() << "needs operands of equal rank, or a 2-D right "
                                "operand shared by every batch; got "
                             << lhs << " and " << rhs;
  ArrayRef<int64_t> lhsShape = lhs.getShape(), rhsShape = rhs.getShape();
  ArrayRef<int64_t> batch = lhsShape.drop_back(2);
  if (!sharedRhs && rhsShape.drop_back(2) != batch)
    return op->emitOpError()
           << "has mismatched batch dimensions in " << lhs << " and " << rhs;
  int64_t lr = lhs.getRank(), rr = rhs.getRank();
  int64_t m = transposeA ? lhsShape[lr - 1] : lhsShape[lr - 2];
  int64_t k = transposeA ? lhsShape[lr - 2] : lhsShape[lr - 1];
  int64_t k2 = transposeB ? rhsShape[rr - 1] : rhsShape[rr - 2];
  int64_t n = transposeB ? rhsShape[rr - 2] : rhsShape[rr - 1];
  if (k != k2 && !ShapedType::isDynamic(k) && !ShapedType::isDynamic(k2))
    return op->emitOpError()
           << "contracts " << k << " elements of the left operand "
           << "with " << k2 << " of the right (" << lhs << ", " << rhs << ")";
  SmallVector<int64_t> expected(batch);
  expected.append({m, n});
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError()
           << "produces "
           << RankedTensorType::get(expected, lhs.getElementType())
           << ", but the result type is " << result;
  return success();
}

LogicalResult MatmulOp::verify() {
  return verifyMatmul(*this, getLhs().getType(), getRhs().getType(),
                      getResult().getType(), getTransposeA(), getTransposeB());
}

//===----------------------------------------------------------------------===//
// Fused matmuls
//===----------------------------------------------------------------------===//

/// A fused matmul is one GEMM on every backend: its right operand is a 2-D
/// weight, and a batched left operand is folded into rows (so it is not
/// transposed).
static LogicalResult verifyLinear(Operation *op, RankedTensorType lhs,
                                  RankedTensorType rhs, RankedTensorType result,
                                  bool transposeA, bool transposeB) {
  if (failed(verifyMatmul(op, lhs, rhs, result, transposeA, transposeB)))
    return failure();
  if (rhs.getRank() != 2)
    return op->emitOpError()
           << "fuses a linear layer, whose right operand is a 2-D weight; got "
           << rhs << " (a batched product stays train.matmul)";
  if (lhs.getRank() > 2 && transposeA)
    return op->emitOpError()
           << "folds the batch of " << lhs
           << " into rows, which a transposed left operand does not allow";
  return success();
}

LogicalResult MatmulBiasOp::verify() {
  RankedTensorType result = getResult().getType();
  if (failed(verifyLinear(*this, getLhs().getType(), getRhs().getType(), result,
                          getTransposeA(), getTransposeB())))
    return failure();
  return verifyPerFeature(*this, result, getBias().getType(), "a bias");
}

LogicalResult MatmulBiasGeluOp::verify() {
  RankedTensorType result = getResult().getType();
  if (failed(verifyLinear(*this, getLhs().getType(), getRhs().getType(), result,
                          getTransposeA(), getTransposeB())))
    return failure();
  return verifyPerFeature(*this, result, getBias().getType(), "a bias");
}

LogicalResult MatmulGeluGradOp::verify() {
  return verifyLinear(*this, getLhs().getType(), getRhs().getType(),
                      getResult().getType(), getTransposeA(), getTransposeB());
}

LogicalResult MatmulBiasGradOp::verify() {
  RankedTensorType lhs = getLhs().getType(), rhs = getRhs().getType();
  if (lhs.getRank() != 2 || rhs.getRank() != 2)
    return emitOpError() << "sums the bias gradient over the rows of a 2-D "
                            "output gradient against a 2-D input; got "
                         << lhs << " and " << rhs;
  if (failed(verifyLinear(*this, lhs, rhs, getResult().getType(),
                          getTransposeA(), /*transposeB=*/false)))
    return failure();
  RankedTensorType expected =
      RankedTensorType::get({rhs.getDimSize(1)}, rhs.getElementType());
  if (getBiasGrad().getType() != expected)
    return emitOpError() << "sums " << rhs << " over its rows into " << expected
                         << ", but bias_grad is " << getBiasGrad().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

/// A layer norm of `input` (train.layer_norm's, train.add_layer_norm's).
/// Beta has gamma's type (AllTypesMatch), so checking gamma covers both.
static LogicalResult verifyLayerNorm(Operation *op, RankedTensorType input,
                                     RankedTensorType gamma, ShapedType mean,
                                     double eps) {
  if (failed(verifyPerFeature(op, input, gamma, "a scale")) ||
      failed(verifyRowShape(op, input, mean, "mean and rstd")))
    return failure();
  if (!(eps > 0.0))
    return op->emitOpError() << "needs eps > 0, got " << eps;
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyLayerNorm(*this, getInput().getType(), getGamma().getType(),
                         getMean().getType(), getEps().convertToDouble());
}

LogicalResult AddLayerNormOp::verify() {
  return verifyLayerNorm(*this, getSum().getType(), getGamma().getType(),
                         getMean().getType(), getEps().convertToDouble());
}

/// Attention's operands are [..., seq, head_dim] ([..., seq, heads,
/// head_dim] with `seqMajor`) and its log-sum-exp has one f32 per query row,
/// [..., heads, seq] in either layout.
static LogicalResult verifyAttentionShapes(Operation *op,
                                           RankedTensorType query,
                                           ShapedType logsumexp, double scale,
                                           bool seqMajor) {
  if (!seqMajor && query.getRank() < 2)
    return op->emitOpError()
           << "attends over the last two dimensions [..., seq, head_dim], "
              "but "
           << query << " has rank " << query.getRank();
  if (seqMajor && query.getRank() < 3)
    return op->emitOpError()
           << "with seq_major attends over [..., seq, heads, head_dim], but "
           << query << " has rank " << query.getRank();
  if (!(scale > 0.0))
    return op->emitOpError() << "needs scale > 0, got " << scale;
  if (!seqMajor)
    return verifyRowShape(op, query, logsumexp, "a log-sum-exp");
  ArrayRef<int64_t> shape = query.getShape();
  int64_t rank = query.getRank();
  SmallVector<int64_t> rows(shape.take_front(rank - 3));
  rows.append({shape[rank - 2], shape[rank - 3]});
  if (logsumexp.getShape() != ArrayRef<int64_t>(rows))
    return op->emitOpError()
           << "needs a log-sum-exp of shape "
           << RankedTensorType::get(rows, logsumexp.getElementType())
           << " ([..., heads, seq] of the seq_major " << query << "), got "
           << logsumexp;
  return success();
}

LogicalResult AttentionOp::verify() {
  return verifyAttentionShapes(*this, getQuery().getType(),
                               getLogsumexp().getType(),
                               getScale().convertToDouble(), getSeqMajor());
}

LogicalResult AttentionGradOp::verify() {
  return verifyAttentionShapes(*this, getQuery().getType(),
                               getLogsumexp().getType(),
                               getScale().convertToDouble(), getSeqMajor());
}

LogicalResult LayerNormGradOp::verify() {
  RankedTensorType input = getInput().getType();
  if (failed(verifyPerFeature(*this, input, getGamma().getType(), "a scale")))
    return failure();
  return verifyRowShape(*this, input, getMean().getType(), "mean and rstd");
}

//===----------------------------------------------------------------------===//
// Embedding and loss
//===----------------------------------------------------------------------===//

static LogicalResult verifyEmbeddingShapes(Operation *op,
                                           RankedTensorType table,
                                           RankedTensorType ids,
                                           RankedTensorType rows,
                                           std::optional<int64_t> paddingIdx) {
  if (table.getRank() != 2)
    return op->emitOpError()
           << "needs a 2-D [vocabulary, features] table, got " << table;
  // PyTorch's aten.embedding spells "no padding row" as -1; here it is the
  // attribute's absence, so a negative index is a mistake, not a choice.
  if (paddingIdx && (*paddingIdx < 0 || *paddingIdx >= table.getDimSize(0)))
    return op->emitOpError()
           << "padding_idx " << *paddingIdx << " is not a row of the "
           << table.getDimSize(0) << "-row table";
  SmallVector<int64_t> expected(ids.getShape());
  expected.push_back(table.getDimSize(1));
  if (rows.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError()
           << "looks up " << ids << " in " << table << ", which gives "
           << RankedTensorType::get(expected, table.getElementType())
           << ", not " << rows;
  return verifySameElementType(op, table, rows, "the table and rows");
}

LogicalResult EmbeddingOp::verify() {
  return verifyEmbeddingShapes(*this, getTable().getType(), getIds().getType(),
                               getResult().getType(), getPaddingIdx());
}

LogicalResult EmbeddingGradOp::verify() {
  return verifyEmbeddingShapes(*this, getResult().getType(), getIds().getType(),
                               getResultGrad().getType(), getPaddingIdx());
}

static LogicalResult verifyLabels(Operation *op, RankedTensorType logits,
                                  RankedTensorType labels) {
  if (logits.getRank() < 1)
    return op->emitOpError() << "needs logits of rank >= 1, got " << logits;
  return verifyRowShape(op, logits, labels, "labels");
}

/// `ignore_index` and `count` come together: a loss that ignores labels
/// must be told how many are not ignored over the whole batch, which one
/// rank cannot count alone.
static LogicalResult verifyIgnoredLabels(Operation *op, Value count,
                                         std::optional<int64_t> ignoreIndex,
                                         FloatAttr smoothing) {
  if (smoothing && !(smoothing.getValueAsDouble() >= 0.0 &&
                     smoothing.getValueAsDouble() <= 1.0))
    return op->emitOpError()
           << "needs a label_smoothing in [0, 1] (PyTorch's), got "
           << smoothing.getValueAsDouble();
  if (ignoreIndex && !count)
    return op->emitOpError() << "ignores label " << *ignoreIndex
                             << " but has no 'count' of the labels not ignored "
                                "(train.count_labels)";
  if (count && !ignoreIndex)
    return op->emitOpError()
           << "has a 'count' but no 'ignore_index': without ignored labels "
              "the mean is over every position";
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  if (failed(verifyLabels(*this, getLogits().getType(), getLabels().getType())))
    return failure();
  return verifyIgnoredLabels(*this, getCount(), getIgnoreIndex(),
                             getLabelSmoothingAttr());
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  if (failed(verifyLabels(*this, getLogits().getType(), getLabels().getType())))
    return failure();
  return verifyIgnoredLabels(*this, getCount(), getIgnoreIndex(),
                             getLabelSmoothingAttr());
}

//===----------------------------------------------------------------------===//
// Reductions and shape
//===----------------------------------------------------------------------===//

/// `dims` are distinct, ascending and below `rank`.
static LogicalResult verifyDimList(Operation *op, ArrayRef<int64_t> dims,
                                   int64_t rank, StringRef what) {
  for (auto [index, dim] : llvm::enumerate(dims)) {
    if (dim < 0 || dim >= rank)
      return op->emitOpError() << what << " dimension " << dim
                               << " is out of range for rank " << rank;
    if (index > 0 && dim <= dims[index - 1])
      return op->emitOpError() << "needs distinct dims in ascending order";
  }
  return success();
}

/// The shape left after removing `dims` from `shape`.
static SmallVector<int64_t> removeDims(ArrayRef<int64_t> shape,
                                       ArrayRef<int64_t> dims) {
  SmallVector<int64_t> kept;
  for (auto [dim, extent] : llvm::enumerate(shape))
    if (!llvm::is_contained(dims, static_cast<int64_t>(dim)))
      kept.push_back(extent);
  return kept;
}

/// `full` without `dims` is `reduced`. `expands` says which side is the
/// result, so that messages read in the op's direction.
static LogicalResult verifyReduction(Operation *op, RankedTensorType full,
                                     RankedTensorType reduced,
                                     ArrayRef<int64_t> dims, bool expands) {
  if (failed(verifyDimList(op, dims, full.getRank(),
                           expands ? "inserted" : "reduced")) ||
      failed(verifySameElementType(op, expands ? reduced : full,
                                   expands ? full : reduced,
                                   "the input and result")))
    return failure();
  SmallVector<int64_t> expected = removeDims(full.getShape(), dims);
  if (reduced.getShape() == ArrayRef<int64_t>(expected))
    return success();
  RankedTensorType expectedType =
      RankedTensorType::get(expected, full.getElementType());
  if (expands)
    return op->emitOpError() << "expands " << reduced << " into " << full
                             << ", but removing the inserted dims from the "
                                "result gives "
                             << expectedType;
  return op->emitOpError() << "reducing " << full << " over its dims gives "
                           << expectedType << ", not " << reduced;
}

LogicalResult ReduceSumOp::verify() {
  return verifyReduction(*this, getInput().getType(), getResult().getType(),
                         getDims(), /*expands=*/false);
}

LogicalResult ReduceMeanOp::verify() {
  return verifyReduction(*this, getInput().getType(), getResult().getType(),
                         getDims(), /*expands=*/false);
}

LogicalResult ExpandOp::verify() {
  return verifyReduction(*this, getResult().getType(), getInput().getType(),
                         getDims(), /*expands=*/true);
}

LogicalResult ReshapeOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (failed(
          verifySameElementType(*this, input, result, "the input and result")))
    return failure();
  if (input.getNumElements() != result.getNumElements())
    return emitOpError() << "reshapes " << input.getNumElements()
                         << " elements into " << result.getNumElements();
  return success();
}

LogicalResult TransposeOp::verify() {
  RankedTensorType input = getInput().getType(), result = getResult().getType();
  ArrayRef<int64_t> permutation = getPermutation();
  if (static_cast<int64_t>(permutation.size()) != input.getRank())
    return emitOpError() << "needs a permutation of " << input.getRank()
                         << " dimensions, got " << permutation.size();
  llvm::SmallSet<int64_t, 8> seen;
  SmallVector<int64_t> expected;
  for (int64_t dim : permutation) {
    if (dim < 0 || dim >= input.getRank() || !seen.insert(dim).second)
      return emitOpError() << "permutation must list each of 0.."
                           << input.getRank() - 1 << " once";
    expected.push_back(input.getDimSize(dim));
  }
  if (failed(
          verifySameElementType(*this, input, result, "the input and result")))
    return failure();
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "permutes " << input << " into "
                         << RankedTensorType::get(expected,
                                                  input.getElementType())
                         << ", not " << result;
  return success();
}

//===----------------------------------------------------------------------===//
// Slice, pad, concat
//===----------------------------------------------------------------------===//

/// `part` lies at `offset` of dimension `dim` of `whole`: the two agree in
/// every other dimension and in element type. `partName` names the smaller
/// side in messages ("result" for a slice, "input" for a pad).
static LogicalResult verifyWindow(Operation *op, RankedTensorType whole,
                                  RankedTensorType part, int64_t dim,
                                  int64_t offset, StringRef partName) {
  if (dim < 0 || dim >= whole.getRank())
    return op->emitOpError()
           << "dim " << dim << " is out of range for " << whole;
  if (failed(verifySameElementType(op, whole, part, "the input and result")))
    return failure();
  SmallVector<int64_t> expected(whole.getShape());
  expected[dim] = part.getRank() == whole.getRank() ? part.getDimSize(dim) : 0;
  if (part.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError()
           << "needs a " << partName << " that differs from " << whole
           << " only in dim " << dim << ", got " << part;
  int64_t extent = part.getDimSize(dim), available = whole.getDimSize(dim);
  if (offset < 0 || offset > available - extent)
    return op->emitOpError()
           << "positions [" << offset << ", " << offset + extent << ") of dim "
           << dim << " do not fit in its " << available;
  return success();
}

LogicalResult SliceOp::verify() {
  return verifyWindow(*this, getInput().getType(), getResult().getType(),
                      getDim(), getOffset(), "result");
}

LogicalResult PadOp::verify() {
  return verifyWindow(*this, getResult().getType(), getInput().getType(),
                      getDim(), getOffset(), "input");
}

LogicalResult ConcatOp::verify() {
  RankedTensorType result = getResult().getType();
  int64_t dim = getDim();
  if (getInputs().empty())
    return emitOpError() << "needs at least one operand";
  if (dim < 0 || dim >= result.getRank())
    return emitOpError() << "dim " << dim << " is out of range for " << result;
  int64_t offset = 0;
  for (auto [index, operand] : llvm::enumerate(getInputs())) {
    auto type = cast<RankedTensorType>(operand.getType());
    if (type.getRank() != result.getRank() ||
        type.getElementType() != result.getElementType())
      return emitOpError() << "operand " << index << " is " << type
                           << ", not a tensor of rank " << result.getRank()
                           << " and element type " << result.getElementType()
                           << " like the result";
    SmallVector<int64_t> expected(result.getShape());
    expected[dim] = type.getDimSize(dim);
    if (type.getShape() != ArrayRef<int64_t>(expected))
      return emitOpError() << "operand " << index << " is " << type
                           << "; operands must match the result " << result
                           << " in every dim but " << dim;
    offset += type.getDimSize(dim);
  }
  if (offset != result.getDimSize(dim))
    return emitOpError() << "operands add up to " << offset << " in dim " << dim
                         << ", but the result " << result << " has "
                         << result.getDimSize(dim);
  return success();
}

LogicalResult CastOp::verify() {
  if (getInput().getType().getShape() != getResult().getType().getShape())
    return emitOpError() << "changes the shape from " << getInput().getType()
                         << " to " << getResult().getType()
                         << "; a cast converts elements only";
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}
