//===- TrainGradients.cpp - Reverse-mode gradient rules -------------------===//
//
// One `buildGradients` per differentiable train compute op, and external
// models for the arith ops a step may use. Every rule builds train ops only,
// so that the backward it produces runs wherever the forward runs. Rules
// build the gradient of every differentiable operand; `train-autodiff`
// erases the ones no parameter needs.
//
//===----------------------------------------------------------------------===//

#include "zero/dialects/train/TrainGradients.h"
#include "zero/dialects/train/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <numeric>

using namespace mlir;
using namespace zero::train;

#include "zero/dialects/train/TrainGradientInterface.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {

/// The elementwise binary operations, shared by train and arith ops.
enum class BinaryKind { add, sub, mul, div };

Value buildScale(OpBuilder &b, Location loc, Value x, double factor) {
  return b.create<ScaleOp>(loc, x.getType(), x, b.getF64FloatAttr(factor));
}

Value buildMul(OpBuilder &b, Location loc, Value x, Value y) {
  return b.create<MulOp>(loc, x.getType(), x, y);
}

Value buildDiv(OpBuilder &b, Location loc, Value x, Value y) {
  return b.create<DivOp>(loc, x.getType(), x, y);
}

Value buildNeg(OpBuilder &b, Location loc, Value x) {
  return b.create<NegOp>(loc, x.getType(), x);
}

/// `type` with its last two dimensions swapped.
RankedTensorType getSwappedType(RankedTensorType type) {
  SmallVector<int64_t> shape(type.getShape());
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  return type.clone(shape);
}

/// `x` with its last two dimensions swapped.
Value buildSwapLastTwo(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> permutation(type.getRank());
  std::iota(permutation.begin(), permutation.end(), 0);
  std::swap(permutation[type.getRank() - 1], permutation[type.getRank() - 2]);
  return b.create<TransposeOp>(loc, getSwappedType(type), x, permutation);
}

/// `x` ([..., R, C], static) with its leading dimensions merged: [P*R, C].
Value buildMergeLeading(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rows = type.getNumElements() / type.getShape().back();
  return b.create<ReshapeOp>(loc, type.clone({rows, type.getShape().back()}),
                             x);
}

void binaryGradients(OpBuilder &b, Location loc, BinaryKind kind, Value lhs,
                     Value rhs, Value result, Value dy,
                     SmallVectorImpl<Value> &grads) {
  switch (kind) {
  case BinaryKind::add:
    grads.append({dy, dy});
    return;
  case BinaryKind::sub:
    grads.append({dy, buildNeg(b, loc, dy)});
    return;
  case BinaryKind::mul:
    grads.append({buildMul(b, loc, dy, rhs), buildMul(b, loc, dy, lhs)});
    return;
  case BinaryKind::div:
    // d(a/b)/db = -(a/b)/b: reuses the quotient instead of squaring b.
    grads.append(
        {buildDiv(b, loc, dy, rhs),
         buildNeg(b, loc,
                  buildDiv(b, loc, buildMul(b, loc, dy, result), rhs))});
    return;
  }
}

/// The ranked f32/bf16/f16 tensors the train ops that build gradients take.
bool isTrainFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor &&
         (tensor.getElementType().isF32() || tensor.getElementType().isBF16() ||
          tensor.getElementType().isF16());
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult NegOp::buildGradients(OpBuilder &b, ValueRange dys,
                                    SmallVectorImpl<Value> &grads) {
  grads.push_back(buildNeg(b, getLoc(), dys[0]));
  return success();
}

LogicalResult ExpOp::buildGradients(OpBuilder &b, ValueRange dys,
                                    SmallVectorImpl<Value> &grads) {
  grads.push_back(buildMul(b, getLoc(), dys[0], getResult()));
  return success();
}

LogicalResult LogOp::buildGradients(OpBuilder &b, ValueRange dys,
                                    SmallVectorImpl<Value> &grads) {
  grads.push_back(buildDiv(b, getLoc(), dys[0], getInput()));
  return success();
}

LogicalResult SqrtOp::buildGradients(OpBuilder &b, ValueRange dys,
                                     SmallVectorImpl<Value> &grads) {
  // d sqrt(x) = dy / (2 sqrt(x)).
  Value quotient = buildDiv(b, getLoc(), dys[0], getResult());
  grads.push_back(buildScale(b, getLoc(), quotient, 0.5));
  return success();
}

LogicalResult RsqrtOp::buildGradients(OpBuilder &b, ValueRange dys,
                                      SmallVectorImpl<Value> &grads) {
  // d x^(-1/2) = -1/2 x^(-3/2) dy = -1/2 (y / x) dy.
  Value product = buildMul(b, getLoc(), dys[0], getResult());
  Value quotient = buildDiv(b, getLoc(), product, getInput());
  grads.push_back(buildScale(b, getLoc(), quotient, -0.5));
  return success();
}

LogicalResult TanhOp::buildGradients(OpBuilder &b, ValueRange dys,
                                     SmallVectorImpl<Value> &grads) {
  grads.push_back(
      b.create<TanhGradOp>(getLoc(), getType(), getResult(), dys[0]));
  return success();
}

LogicalResult ReluOp::buildGradients(OpBuilder &b, ValueRange dys,
                                     SmallVectorImpl<Value> &grads) {
  grads.push_back(
      b.create<ReluGradOp>(getLoc(), getType(), getInput(), dys[0]));
  return success();
}

LogicalResult GeluOp::buildGradients(OpBuilder &b, ValueRange dys,
                                     SmallVectorImpl<Value> &grads) {
  grads.push_back(b.create<GeluGradOp>(getLoc(), getType(), getInput(), dys[0],
                                       getExactAttr()));
  return success();
}

LogicalResult SigmoidOp::buildGradients(OpBuilder &b, ValueRange dys,
                                        SmallVectorImpl<Value> &grads) {
  grads.push_back(
      b.create<SigmoidGradOp>(getLoc(), getType(), getResult(), dys[0]));
  return success();
}

LogicalResult SiluOp::buildGradients(OpBuilder &b, ValueRange dys,
                                     SmallVectorImpl<Value> &grads) {
  grads.push_back(
      b.create<SiluGradOp>(getLoc(), getType(), getInput(), dys[0]));
  return success();
}

LogicalResult AddOp::buildGradients(OpBuilder &b, ValueRange dys,
                                    SmallVectorImpl<Value> &grads) {
  binaryGradients(b, getLoc(), BinaryKind::add, getLhs(), getRhs(), getResult(),
                  dys[0], grads);
  return success();
}

LogicalResult SubOp::buildGradients(OpBuilder &b, ValueRange dys,
                                    SmallVectorImpl<Value> &grads) {
  binaryGradients(b, getLoc(), BinaryKind::sub, getLhs(), getRhs(), getResult(),
                  dys[0], grads);
  return success();
}

LogicalResult MulOp::buildGradients(OpBuilder &b, ValueRange dys,
                                    SmallVectorImpl<Value> &grads) {
  binaryGradients(b, getLoc(), BinaryKind::mul, getLhs(), getRhs(), getResult(),
                  dys[0], grads);
  return success();
}

LogicalResult DivOp::buildGradients(OpBuilder &b, ValueRange dys,
                                    SmallVectorImpl<Value> &grads) {
  binaryGradients(b, getLoc(), BinaryKind::div, getLhs(), getRhs(), getResult(),
                  dys[0], grads);
  return success();
}

LogicalResult ScaleOp::buildGradients(OpBuilder &b, ValueRange dys,
                                      SmallVectorImpl<Value> &grads) {
  grads.push_back(
      buildScale(b, getLoc(), dys[0], getFactor().convertToDouble()));
  return success();
}

LogicalResult BiasAddOp::buildGradients(OpBuilder &b, ValueRange dys,
                                        SmallVectorImpl<Value> &grads) {
  // The bias is broadcast over every leading dimension: sum them out.
  SmallVector<int64_t> leading(getInput().getType().getRank() - 1);
  std::iota(leading.begin(), leading.end(), 0);
  grads.push_back(dys[0]);
  grads.push_back(
      b.create<ReduceSumOp>(getLoc(), getBias().getType(), dys[0], leading));
  return success();
}

LogicalResult CausalMaskOp::buildGradients(OpBuilder &b, ValueRange dys,
                                           SmallVectorImpl<Value> &grads) {
  // Masked positions are constants: their gradient is 0.
  grads.push_back(b.create<CausalMaskOp>(getLoc(), getType(), dys[0],
                                         b.getF64FloatAttr(0.0)));
  return success();
}

LogicalResult DropoutOp::buildGradients(OpBuilder &b, ValueRange dys,
                                        SmallVectorImpl<Value> &grads) {
  // The same stream draws the same mask: the gradient goes through the
  // elements the forward kept, scaled alike.
  grads.push_back(b.create<DropoutOp>(getLoc(), getType(), dys[0],
                                      getRateAttr(), getStreamAttr()));
  return success();
}

LogicalResult KeyMaskOp::buildGradients(OpBuilder &b, ValueRange dys,
                                        SmallVectorImpl<Value> &grads) {
  // Masked positions are constants: their gradient is 0.
  grads.push_back(b.create<KeyMaskOp>(getLoc(), getType(), dys[0], getKeep(),
                                      b.getF64FloatAttr(0.0)));
  grads.push_back(Value()); // The integer mask has no gradient.
  return success();
}

//===----------------------------------------------------------------------===//
// Matmul, normalization, softmax
//===----------------------------------------------------------------------===//

/// Gradient of the 2-D right operand shared by every batch: the batches are
/// merged into rows so that one 2-D matmul sums over them.
static Value buildSharedRhsGradient(OpBuilder &b, Location loc, MatmulOp op,
                                    Value dy) {
  Value lhs = op.getLhs();
  if (op.getTransposeA())
    lhs = buildSwapLastTwo(b, loc, lhs);
  Value lhsRows = buildMergeLeading(b, loc, lhs);
  Value dyRows = buildMergeLeading(b, loc, dy);
  Type type = op.getRhs().getType();
  if (op.getTransposeB())
    return b.create<MatmulOp>(loc, type, dyRows, lhsRows, true, false);
  return b.create<MatmulOp>(loc, type, lhsRows, dyRows, true, false);
}

LogicalResult MatmulOp::buildGradients(OpBuilder &b, ValueRange dys,
                                       SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value dy = dys[0];
  TypedValue<RankedTensorType> lhs = getLhs(), rhs = getRhs();
  auto dyType = cast<RankedTensorType>(dy.getType());
  bool ta = getTransposeA(), tb = getTransposeB();
  bool sharedRhs = rhs.getType().getRank() == 2 && lhs.getType().getRank() > 2;
  if (sharedRhs &&
      (!lhs.getType().hasStaticShape() || !dyType.hasStaticShape()))
    return emitOpError() << "has a 2-D right operand shared by batches of "
                            "dynamic shape; train-autodiff needs static "
                            "shapes to sum its gradient over the batches";
  // With C = op(A) op(B): dA = dC op(B)^T and dB = op(A)^T dC, each
  // transposed back when its operand was used transposed.
  Type lhsType = lhs.getType(), rhsType = rhs.getType();
  if (!ta)
    grads.push_back(b.create<MatmulOp>(loc, lhsType, dy, rhs, false, !tb));
  else if (!sharedRhs)
    grads.push_back(b.create<MatmulOp>(loc, lhsType, rhs, dy, tb, true));
  else // A 2-D left operand cannot meet batched ones: transpose dA^T.
    grads.push_back(
        buildSwapLastTwo(b, loc,
                         b.create<MatmulOp>(loc, getSwappedType(lhs.getType()),
                                            dy, rhs, false, !tb)));
  if (sharedRhs)
    grads.push_back(buildSharedRhsGradient(b, loc, *this, dy));
  else if (!tb)
    grads.push_back(b.create<MatmulOp>(loc, rhsType, lhs, dy, !ta, false));
  else
    grads.push_back(b.create<MatmulOp>(loc, rhsType, dy, lhs, true, ta));
  return success();
}

LogicalResult SoftmaxOp::buildGradients(OpBuilder &b, ValueRange dys,
                                        SmallVectorImpl<Value> &grads) {
  grads.push_back(
      b.create<SoftmaxGradOp>(getLoc(), getType(), getResult(), dys[0]));
  return success();
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &b, ValueRange dys,
                                          SmallVectorImpl<Value> &grads) {
  if (dys[1] || dys[2])
    return emitOpError() << "has its row mean or reciprocal standard "
                            "deviation on the path to the loss; "
                            "train-autodiff differentiates train.layer_norm "
                            "through its normalized result only";
  auto grad = b.create<LayerNormGradOp>(getLoc(), dys[0], getInput(),
                                        getGamma(), getMean(), getRstd());
  grads.append({grad.getInputGrad(), grad.getGammaGrad(), grad.getBetaGrad()});
  return success();
}

LogicalResult AttentionOp::buildGradients(OpBuilder &b, ValueRange dys,
                                          SmallVectorImpl<Value> &grads) {
  if (dys[1])
    return emitOpError() << "has its log-sum-exp on the path to the loss; "
                            "train-autodiff differentiates train.attention "
                            "through its result only";
  auto grad = b.create<AttentionGradOp>(
      getLoc(), dys[0], getQuery(), getKey(), getValue(), getResult(),
      getLogsumexp(), getScaleAttr(), getCausalAttr(), getSeqMajorAttr());
  grads.append({grad.getQueryGrad(), grad.getKeyGrad(), grad.getValueGrad()});
  return success();
}

//===----------------------------------------------------------------------===//
// Embedding and loss
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::buildGradients(OpBuilder &b, ValueRange dys,
                                          SmallVectorImpl<Value> &grads) {
  grads.push_back(b.create<EmbeddingGradOp>(
      getLoc(), getTable().getType(), dys[0], getIds(), getPaddingIdxAttr()));
  grads.push_back(Value()); // Integer ids have no gradient.
  return success();
}

LogicalResult
SoftmaxCrossEntropyOp::buildGradients(OpBuilder &b, ValueRange dys,
                                      SmallVectorImpl<Value> &grads) {
  grads.push_back(b.create<SoftmaxCrossEntropyGradOp>(
      getLoc(), getLogits().getType(), getLogits(), getLabels(), dys[0],
      getCount(), getIgnoreIndexAttr(), getLabelSmoothingAttr()));
  grads.push_back(Value()); // Integer labels have no gradient.
  if (getCount())
    grads.push_back(Value()); // The count is a constant of the batch.
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and shape
//===----------------------------------------------------------------------===//

LogicalResult ReduceSumOp::buildGradients(OpBuilder &b, ValueRange dys,
                                          SmallVectorImpl<Value> &grads) {
  grads.push_back(
      b.create<ExpandOp>(getLoc(), getInput().getType(), dys[0], getDims()));
  return success();
}

LogicalResult ReduceMeanOp::buildGradients(OpBuilder &b, ValueRange dys,
                                           SmallVectorImpl<Value> &grads) {
  int64_t count = 1;
  for (int64_t dim : getDims()) {
    int64_t size = getInput().getType().getDimSize(dim);
    if (ShapedType::isDynamic(size))
      return emitOpError() << "averages over dynamic dimension " << dim
                           << "; train-autodiff needs its size to scale the "
                              "gradient";
    count *= size;
  }
  // Scaling before the expansion touches the fewer elements.
  Value scaled = buildScale(b, getLoc(), dys[0], 1.0 / double(count));
  grads.push_back(
      b.create<ExpandOp>(getLoc(), getInput().getType(), scaled, getDims()));
  return success();
}

LogicalResult ExpandOp::buildGradients(OpBuilder &b, ValueRange dys,
                                       SmallVectorImpl<Value> &grads) {
  grads.push_back(
      b.create<ReduceSumOp>(getLoc(), getInput().getType(), dys[0], getDims()));
  return success();
}

LogicalResult ReshapeOp::buildGradients(OpBuilder &b, ValueRange dys,
                                        SmallVectorImpl<Value> &grads) {
  grads.push_back(b.create<ReshapeOp>(getLoc(), getInput().getType(), dys[0]));
  return success();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &b, ValueRange dys,
                                          SmallVectorImpl<Value> &grads) {
  ArrayRef<int64_t> permutation = getPermutation();
  SmallVector<int64_t> inverse(permutation.size());
  for (auto [index, source] : llvm::enumerate(permutation))
    inverse[source] = index;
  grads.push_back(
      b.create<TransposeOp>(getLoc(), getInput().getType(), dys[0], inverse));
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &b, ValueRange dys,
                                      SmallVectorImpl<Value> &grads) {
  grads.push_back(b.create<PadOp>(getLoc(), getInput().getType(), dys[0],
                                  getDim(), getOffset()));
  return success();
}

LogicalResult PadOp::buildGradients(OpBuilder &b, ValueRange dys,
                                    SmallVectorImpl<Value> &grads) {
  grads.push_back(b.create<SliceOp>(getLoc(), getInput().getType(), dys[0],
                                    getDim(), getOffset()));
  return success();
}

LogicalResult ConcatOp::buildGradients(OpBuilder &b, ValueRange dys,
                                       SmallVectorImpl<Value> &grads) {
  int64_t offset = 0, dim = getDim();
  for (Value input : getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    grads.push_back(
        b.create<SliceOp>(getLoc(), type, dys[0], dim, offset).getResult());
    offset += type.getDimSize(dim);
  }
  return success();
}

LogicalResult CastOp::buildGradients(OpBuilder &b, ValueRange dys,
                                     SmallVectorImpl<Value> &grads) {
  grads.push_back(b.create<CastOp>(getLoc(), getInput().getType(), dys[0]));
  return success();
}

//===----------------------------------------------------------------------===//
// arith external models
//===----------------------------------------------------------------------===//

namespace {

template <typename ConcreteOp, BinaryKind kind>
struct ArithBinaryGradient
    : public GradientOpInterface::ExternalModel<
          ArithBinaryGradient<ConcreteOp, kind>, ConcreteOp> {
  LogicalResult buildGradients(Operation *op, OpBuilder &b, ValueRange dys,
                               SmallVectorImpl<Value> &grads) const {
    if (!isTrainFloatTensor(op->getResult(0).getType()))
      return op->emitOpError()
             << "computes " << op->getResult(0).getType()
             << "; train-autodiff differentiates arith ops on f32, bf16 and "
                "f16 tensors only";
    binaryGradients(b, op->getLoc(), kind, op->getOperand(0), op->getOperand(1),
                    op->getResult(0), dys[0], grads);
    return success();
  }
};

struct ArithNegGradient
    : public GradientOpInterface::ExternalModel<ArithNegGradient,
                                                arith::NegFOp> {
  LogicalResult buildGradients(Operation *op, OpBuilder &b, ValueRange dys,
                               SmallVectorImpl<Value> &grads) const {
    if (!isTrainFloatTensor(op->getResult(0).getType()))
      return op->emitOpError()
             << "computes " << op->getResult(0).getType()
             << "; train-autodiff differentiates arith ops on f32, bf16 and "
                "f16 tensors only";
    grads.push_back(buildNeg(b, op->getLoc(), dys[0]));
    return success();
  }
};

} // namespace

void zero::train::registerGradientInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, arith::ArithDialect *) {
    arith::AddFOp::attachInterface<
        ArithBinaryGradient<arith::AddFOp, BinaryKind::add>>(*context);
    arith::SubFOp::attachInterface<
        ArithBinaryGradient<arith::SubFOp, BinaryKind::sub>>(*context);
    arith::MulFOp::attachInterface<
        ArithBinaryGradient<arith::MulFOp, BinaryKind::mul>>(*context);
    arith::DivFOp::attachInterface<
        ArithBinaryGradient<arith::DivFOp, BinaryKind::div>>(*context);
    arith::NegFOp::attachInterface<ArithNegGradient>(*context);
  });
}
