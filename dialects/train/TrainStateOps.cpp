//===- TrainStateOps.cpp - Persistent state, optimizer, updates -----------===//

#include "zero/dialects/train/TrainOps.h"

#include "zero/dialects/dist/DistDialect.h"
#include "zero/support/ShardLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace zero;
using namespace zero::train;

static StorageLayout toStorageLayout(StorageLayoutKind kind) {
  switch (kind) {
  case StorageLayoutKind::replicated:
    return StorageLayout::Replicated;
  case StorageLayoutKind::flat:
    return StorageLayout::Flat;
  case StorageLayoutKind::dim0:
    return StorageLayout::Dim0;
  }
  return StorageLayout::Replicated;
}

static int64_t bytesOf(RankedTensorType type) {
  return type.getNumElements() *
         llvm::divideCeil(type.getElementTypeBitWidth(), 8);
}

/// Resolves `symbol` to a train.param or emits "'@x' does not name ...".
static FailureOr<ParamOp> lookupParam(Operation *user,
                                      SymbolTableCollection &symbolTable,
                                      FlatSymbolRefAttr symbol) {
  auto param = symbolTable.lookupNearestSymbolFrom<ParamOp>(user, symbol);
  if (!param)
    return user->emitOpError()
           << "refers to " << symbol << ", which is not a train.param";
  return param;
}

static FailureOr<OptimizerOp>
lookupOptimizer(Operation *user, SymbolTableCollection &symbolTable,
                FlatSymbolRefAttr symbol) {
  auto optimizer =
      symbolTable.lookupNearestSymbolFrom<OptimizerOp>(user, symbol);
  if (!optimizer)
    return user->emitOpError()
           << "refers to " << symbol << ", which is not a train.optimizer";
  return optimizer;
}

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

RankedTensorType ParamOp::getLocalTensorType() {
  if (std::optional<Type> local = getLocalType())
    return cast<RankedTensorType>(*local);
  return getSplitTensorType();
}

RankedTensorType ParamOp::getSplitTensorType() {
  RankedTensorType logical = getLogicalTensorType();
  if (!isSplit())
    return logical;
  dist::PlacementAttr placement = dist::lookupPlacement(*this);
  int64_t dim = *getSplitDim();
  int64_t axis = getSplitAxis().value_or(0);
  if (!placement || !placement.hasAxis(axis) || dim >= logical.getRank() ||
      logical.getDimSize(dim) % placement.getGroupSize(axis) != 0)
    return nullptr;
  SmallVector<int64_t> shape(logical.getShape());
  shape[dim] /= placement.getGroupSize(axis);
  return RankedTensorType::get(shape, logical.getElementType());
}

/// The tensor-parallel split of a parameter: on the placement's axis, of a
/// dimension the tensor has, exactly.
static LogicalResult verifySplit(ParamOp param) {
  if (param.getSplitDim().has_value() != param.getSplitAxis().has_value())
    return param.emitOpError()
           << "names a split dimension without its axis or the reverse; "
              "write 'split dim D over A'";
  if (!param.isSplit())
    return success();
  RankedTensorType logical = param.getLogicalTensorType();
  int64_t dim = *param.getSplitDim();
  int64_t axis = *param.getSplitAxis();
  if (dim >= logical.getRank())
    return param.emitOpError()
           << "is split along dimension " << dim << ", but " << logical
           << " has " << logical.getRank() << " dimension(s)";
  dist::PlacementAttr placement = dist::lookupPlacement(param);
  if (!placement)
    return param.emitOpError() << "is split over placement axis " << axis
                               << " but no 'dist.placement' encloses it";
  if (!placement.hasAxis(axis))
    return param.emitOpError()
           << "is split over placement axis " << axis << ", but " << placement
           << " has only " << placement.getNumAxes() << " axis(es)";
  int64_t ranks = placement.getGroupSize(axis);
  if (logical.getDimSize(dim) % ranks != 0)
    return param.emitOpError()
           << "splits dimension " << dim << " of " << logical << " over the "
           << ranks << " ranks of axis " << axis << ", which does not divide "
           << logical.getDimSize(dim)
           << "; tensor-parallel shards are exact (no padding)";
  if (param.isSharded() && llvm::is_contained(param.getShardAxisList(), axis))
    return param.emitOpError()
           << "is split over axis " << axis
           << " and sharded over it too; ZeRO shards over the other axes";
  return success();
}

int64_t ParamOp::getLogicalBytes() { return bytesOf(getLogicalTensorType()); }
int64_t ParamOp::getLocalBytes() { return bytesOf(getLocalTensorType()); }

/// The role as a noun phrase for diagnostics: "a frozen parameter".
static StringRef describeRole(Role role) {
  switch (role) {
  case Role::param:
    return "a trainable parameter";
  case Role::frozen:
    return "a frozen parameter";
  case Role::master:
    return "a master copy";
  case Role::slot:
    return "an optimizer slot";
  case Role::grad_accum:
    return "a gradient accumulator";
  case Role::scaler:
    return "loss-scaler state";
  }
  return "a persistent tensor";
}

static bool roleHasOwner(Role role) {
  return role == Role::master || role == Role::slot || role == Role::grad_accum;
}

LogicalResult ParamOp::verify() {
  if (failed(verifySplit(*this)))
    return failure();
  // What ZeRO shards is the tensor-parallel shard (the logical tensor when
  // nothing splits it).
  RankedTensorType logical = getSplitTensorType();
  Role role = getRole();
  if (roleHasOwner(role) && !getOwner())
    return emitOpError() << "is " << describeRole(role)
                         << " and must name its parameter with 'of @param'";
  if (!roleHasOwner(role) && getOwner())
    return emitOpError() << "is " << describeRole(role)
                         << " and belongs to no other tensor; drop 'of "
                         << getOwnerAttr() << "'";
  if ((role == Role::master || role == Role::slot) &&
      !logical.getElementType().isF32())
    return emitOpError() << "is " << describeRole(role)
                         << " and must be f32, got "
                         << logical.getElementType();
  if (getOptimizer() && role != Role::param)
    return emitOpError() << "is " << describeRole(role)
                         << ", which no optimizer updates; drop 'with "
                         << getOptimizerAttr() << "'";
  if (role == Role::master && getInit())
    return emitOpError() << "is a master copy, which starts as a copy of its "
                            "parameter; drop the initializer";
  if (role == Role::scaler &&
      (logical.getRank() != 0 || !logical.getElementType().isF32()))
    return emitOpError() << "is " << describeRole(role)
                         << ", a tensor<f32> scalar, got " << logical;
  if (role == Role::scaler && isSharded())
    return emitOpError() << "is " << describeRole(role)
                         << ", which every rank holds whole; it cannot be "
                            "sharded";

  if (!isSharded()) {
    if (getLocalType())
      return emitOpError() << "is replicated, so each rank holds the logical "
                              "type; drop the local type";
    if (getShardAxes())
      return emitOpError() << "is replicated, so it has no shard axes; drop "
                              "shard_axes = "
                           << getShardAxesAttr();
    return success();
  }

  if (!getLocalType())
    return emitOpError()
           << "is sharded and must give the local type each rank holds";
  dist::PlacementAttr placement = dist::lookupPlacement(*this);
  if (!placement)
    return emitOpError() << "is sharded but no 'dist.placement' encloses it; "
                            "place the module, e.g. #dist.placement<cpu, [4]>";
  SmallVector<int64_t, 2> axes = getShardAxisList();
  if (axes.empty())
    return emitOpError() << "is sharded over no placement axis; name one, "
                            "e.g. 'over 0'";
  int64_t group = 1;
  for (auto [index, axis] : llvm::enumerate(axes)) {
    if (!placement.hasAxis(axis))
      return emitOpError() << "is sharded over placement axis " << axis
                           << ", but " << placement << " has only "
                           << placement.getNumAxes() << " axis(es)";
    if (llvm::is_contained(ArrayRef(axes).take_front(index), axis))
      return emitOpError() << "is sharded over placement axis " << axis
                           << " twice; each axis cuts the tensor once";
    group *= placement.getGroupSize(axis);
  }
  std::optional<SmallVector<int64_t>> expectedShape =
      localShapeOf(logical.getShape(), toStorageLayout(getLayout()), group);
  if (!expectedShape)
    return emitOpError() << "cannot shard a rank-0 tensor along dimension 0; "
                            "use the flat layout or keep it replicated";
  RankedTensorType expected =
      RankedTensorType::get(*expectedShape, logical.getElementType());
  if (getLocalTensorType() != expected) {
    auto diag = emitOpError()
                << "stores " << logical << " "
                << stringifyStorageLayoutKind(getLayout()) << "-sharded over "
                << group << " ranks, so each rank holds " << expected;
    int64_t extent = getLayout() == StorageLayoutKind::flat
                         ? logical.getNumElements()
                         : logical.getDimSize(0);
    if (paddingOf(extent, group) != 0)
      diag << " (" << paddingOf(extent, group) << " padding "
           << (getLayout() == StorageLayoutKind::flat ? "elements" : "rows")
           << ")";
    return diag << ", but the local type is " << getLocalTensorType();
  }
  return success();
}

LogicalResult ParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (FlatSymbolRefAttr optimizer = getOptimizerAttr();
      optimizer && !symbolTable.lookupNearestSymbolFrom<OptimizerOp>(
                       *this, optimizer.getAttr()))
    return emitOpError() << "is updated 'with " << optimizer
                         << "', but no train.optimizer of the module is named "
                         << optimizer;
  if (!getOwner())
    return success();
  FailureOr<ParamOp> owner = lookupParam(*this, symbolTable, getOwnerAttr());
  if (failed(owner))
    return failure();
  if (owner->getRole() != Role::param)
    return emitOpError() << "belongs to " << getOwnerAttr() << ", which is "
                         << describeRole(owner->getRole())
                         << ", not a trainable parameter";
  if (owner->getLogicalTensorType().getShape() !=
      getLogicalTensorType().getShape())
    return emitOpError() << "has logical type " << getLogicalTensorType()
                         << ", but its parameter " << getOwnerAttr() << " is "
                         << owner->getLogicalTensorType()
                         << "; they must have the same shape";
  if (owner->getSplitDim() != getSplitDim() ||
      owner->getSplitAxis() != getSplitAxis()) {
    auto diag = emitOpError() << "must be split as its parameter "
                              << getOwnerAttr() << " is (its update is "
                              << "elementwise): ";
    if (owner->isSplit())
      return diag << "'split dim " << *owner->getSplitDim() << " over "
                  << *owner->getSplitAxis() << "'";
    return diag << "not split";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// LoadOp / StoreOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyLocalAccess(Operation *op,
                                       SymbolTableCollection &symbolTable,
                                       FlatSymbolRefAttr symbol, Type accessed,
                                       StringRef verb) {
  FailureOr<ParamOp> param = lookupParam(op, symbolTable, symbol);
  if (failed(param))
    return failure();
  RankedTensorType local = param->getLocalTensorType();
  if (accessed != local) {
    auto diag = op->emitOpError() << verb << " " << symbol << " as " << accessed
                                  << ", but each rank holds " << local;
    if (param->isSharded())
      diag << " (its shard of " << param->getLogicalTensorType() << ")";
    return diag;
  }
  return success();
}

LogicalResult LoadOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyLocalAccess(*this, symbolTable, getStateAttr(),
                           getResult().getType(), "loads");
}

void LoadOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), getState());
}

LogicalResult StoreOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyLocalAccess(*this, symbolTable, getStateAttr(),
                           getValue().getType(), "stores");
}

void StepIndexOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "step");
}

//===----------------------------------------------------------------------===//
// OptimizerOp
//===----------------------------------------------------------------------===//

int64_t OptimizerOp::getNumSlots() {
  switch (getKind()) {
  case OptimizerKind::sgd:
    return 0;
  case OptimizerKind::momentum:
    return 1;
  case OptimizerKind::adam:
  case OptimizerKind::adamw:
    return 2;
  }
  return 0;
}

static std::optional<double> toDouble(std::optional<APFloat> value) {
  if (!value)
    return std::nullopt;
  return value->convertToDouble();
}

std::optional<double> OptimizerOp::getMomentumValue() {
  return toDouble(getMomentum());
}
double OptimizerOp::getBeta1Value() {
  return toDouble(getBeta1()).value_or(0.9);
}
double OptimizerOp::getBeta2Value() {
  return toDouble(getBeta2()).value_or(0.999);
}
double OptimizerOp::getEpsValue() { return toDouble(getEps()).value_or(1e-8); }
double OptimizerOp::getWeightDecayValue() {
  return toDouble(getWeightDecay()).value_or(0.0);
}

ScheduleKind OptimizerOp::getScheduleValue() {
  return getSchedule().value_or(ScheduleKind::constant);
}
// I64Attr's getters are unsigned; read the signed value the user wrote.
int64_t OptimizerOp::getWarmupValue() {
  return getWarmupAttr() ? getWarmupAttr().getInt() : 0;
}
std::optional<int64_t> OptimizerOp::getTotalValue() {
  if (!getTotalAttr())
    return std::nullopt;
  return getTotalAttr().getInt();
}
double OptimizerOp::getMinLrValue() {
  return toDouble(getMinLr()).value_or(0.0);
}
int64_t OptimizerOp::getGrowthIntervalValue() {
  return getGrowthIntervalAttr() ? getGrowthIntervalAttr().getInt() : 2000;
}

bool OptimizerOp::hasVaryingLr() {
  return getScheduleValue() != ScheduleKind::constant || getWarmupValue() > 0;
}

/// The schedule's settings, in the user's terms.
static LogicalResult verifySchedule(OptimizerOp op) {
  if (!op.getSchedule()) {
    if (op.getWarmup() || op.getTotal() || op.getMinLr())
      return op.emitOpError()
             << "takes warmup, total and min_lr only after 'schedule <kind>' "
                "(constant, linear or cosine)";
    return success();
  }
  ScheduleKind kind = *op.getSchedule();
  int64_t warmup = op.getWarmupValue();
  if (warmup < 0)
    return op.emitOpError() << "needs warmup >= 0 steps, got " << warmup;
  if (kind == ScheduleKind::constant) {
    if (op.getTotal() || op.getMinLr())
      return op.emitOpError()
             << "with schedule constant keeps lr after the warmup, so it "
                "takes no total or min_lr; use linear or cosine to decay";
    return success();
  }
  StringRef name = stringifyScheduleKind(kind);
  std::optional<int64_t> total = op.getTotalValue();
  if (!total)
    return op.emitOpError() << "with schedule " << name
                            << " needs 'total <steps>', the step at which "
                               "the rate reaches min_lr";
  if (*total <= warmup)
    return op.emitOpError()
           << "with schedule " << name << " needs total > warmup, so that "
           << "there are steps to decay over; got total " << *total
           << " and warmup " << warmup;
  double minLr = op.getMinLrValue();
  if (minLr < 0.0 || minLr > op.getLrValue())
    return op.emitOpError() << "needs 0 <= min_lr <= lr (the schedule decays "
                               "from lr to min_lr), got min_lr "
                            << minLr << " and lr " << op.getLrValue();
  return success();
}

LogicalResult OptimizerOp::verify() {
  OptimizerKind kind = getKind();
  bool isAdam = kind == OptimizerKind::adam || kind == OptimizerKind::adamw;
  StringRef name = stringifyOptimizerKind(kind);
  if (!(getLrValue() > 0.0))
    return emitOpError() << "needs a positive learning rate, got "
                         << getLrValue();
  if (kind == OptimizerKind::momentum && !getMomentum())
    return emitOpError() << "of kind momentum needs 'momentum <value>'";
  if (kind != OptimizerKind::momentum && getMomentum())
    return emitOpError() << "of kind " << name
                         << " takes no momentum; use kind momentum";
  if (std::optional<double> momentum = getMomentumValue())
    if (*momentum < 0.0 || *momentum >= 1.0)
      return emitOpError() << "needs momentum in [0, 1), got " << *momentum;
  if (!isAdam && (getBeta1() || getBeta2() || getEps()))
    return emitOpError() << "of kind " << name
                         << " takes no betas or eps; they are Adam's";
  if (static_cast<bool>(getBeta1()) != static_cast<bool>(getBeta2()))
    return emitOpError() << "needs both betas or neither, as 'betas(beta1, "
                            "beta2)'";
  for (std::optional<double> beta :
       {toDouble(getBeta1()), toDouble(getBeta2())})
    if (beta && (*beta < 0.0 || *beta >= 1.0))
      return emitOpError() << "needs betas in [0, 1), got " << *beta;
  if (std::optional<double> eps = toDouble(getEps()); eps && !(*eps > 0.0))
    return emitOpError() << "needs eps > 0, got " << *eps;
  if (std::optional<double> decay = toDouble(getWeightDecay());
      decay && *decay < 0.0)
    return emitOpError() << "needs weight_decay >= 0, got " << *decay;
  if (std::optional<double> clip = toDouble(getClipNorm());
      clip && !(*clip > 0.0))
    return emitOpError() << "needs clip_norm > 0 (the largest global "
                            "gradient norm), got "
                         << *clip;
  if (std::optional<double> scale = toDouble(getLossScale());
      scale && !(*scale >= 1.0 && std::isfinite(*scale)))
    return emitOpError() << "needs a finite loss_scale >= 1 (the initial "
                            "dynamic loss scale), got "
                         << *scale;
  if (getGrowthInterval() && !getLossScale())
    return emitOpError() << "takes growth_interval only with loss_scale";
  if (getGrowthInterval() && (getGrowthIntervalValue() < 1 ||
                              getGrowthIntervalValue() > (int64_t{1} << 24)))
    return emitOpError() << "needs growth_interval in [1, 2^24] steps, got "
                         << getGrowthIntervalValue();
  return verifySchedule(*this);
}

//===----------------------------------------------------------------------===//
// ApplyGradientOp
//===----------------------------------------------------------------------===//

LogicalResult
ApplyGradientOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<ParamOp> param = lookupParam(*this, symbolTable, getParamAttr());
  if (failed(param) ||
      failed(lookupOptimizer(*this, symbolTable, getOptimizerAttr())))
    return failure();
  if (param->getRole() == Role::frozen)
    return emitOpError()
           << "applies a gradient to " << getParamAttr()
           << ", which is frozen; frozen parameters take no gradient";
  if (param->getRole() != Role::param)
    return emitOpError() << "applies a gradient to " << getParamAttr()
                         << ", which is " << describeRole(param->getRole())
                         << ", not a parameter";
  // A tensor-parallel parameter's gradient is this rank's split of it.
  RankedTensorType logical = param->getSplitTensorType();
  if (!logical)
    return emitOpError() << "applies a gradient to " << getParamAttr()
                         << ", whose split does not fit its placement";
  if (getGrad().getType().getShape() != logical.getShape())
    return emitOpError() << "has a gradient of type " << getGrad().getType()
                         << ", but " << getParamAttr() << " is " << logical
                         << (param->isSplit() ? " on each tensor-parallel rank"
                                              : "")
                         << "; the gradient has the parameter's logical shape";
  return success();
}

//===----------------------------------------------------------------------===//
// Update ops
//===----------------------------------------------------------------------===//

/// All tensors an update touches have one shape: whole tensors or shards.
static LogicalResult verifyUpdateShapes(Operation *op, ValueRange operands) {
  auto reference = cast<ShapedType>(operands.front().getType());
  for (Value operand : operands.drop_front()) {
    auto type = cast<ShapedType>(operand.getType());
    if (type.getShape() != reference.getShape())
      return op->emitOpError() << "updates " << reference << " with " << type
                               << "; the parameter, its gradient and its slots "
                                  "must have one shape";
  }
  return success();
}

template <typename UpdateOp>
static LogicalResult verifyUpdateOptimizer(UpdateOp op,
                                           SymbolTableCollection &symbolTable) {
  FailureOr<OptimizerOp> optimizer =
      lookupOptimizer(op, symbolTable, op.getOptimizerAttr());
  if (failed(optimizer))
    return failure();
  OptimizerKind required = UpdateOp::getRequiredOptimizerKind();
  if (optimizer->getKind() != required)
    return op.emitOpError()
           << "needs an optimizer of kind " << stringifyOptimizerKind(required)
           << ", but " << op.getOptimizerAttr() << " is "
           << stringifyOptimizerKind(optimizer->getKind());
  return success();
}

#define ZERO_TRAIN_UPDATE_OP(OpName, operandList)                              \
  LogicalResult OpName::verify() {                                             \
    return verifyUpdateShapes(*this, ValueRange operandList);                  \
  }                                                                            \
  LogicalResult OpName::verifySymbolUses(SymbolTableCollection &symbolTable) { \
    return verifyUpdateOptimizer(*this, symbolTable);                          \
  }                                                                            \
  void OpName::getAsmResultNames(OpAsmSetValueNameFn setName) {                \
    for (Value result : getOperation()->getResults())                          \
      setName(result, "updated");                                              \
  }

ZERO_TRAIN_UPDATE_OP(SgdOp, ({getParam(), getGrad()}))
ZERO_TRAIN_UPDATE_OP(SgdMomentumOp,
                     ({getParam(), getGrad(), getMomentumBuffer()}))
ZERO_TRAIN_UPDATE_OP(AdamOp, ({getParam(), getGrad(), getM()}))
ZERO_TRAIN_UPDATE_OP(AdamWOp, ({getParam(), getGrad(), getM()}))
#undef ZERO_TRAIN_UPDATE_OP

//===----------------------------------------------------------------------===//
// Gradient clipping
//===----------------------------------------------------------------------===//

/// Results mirror the operands one for one, and the bound is positive.
static LogicalResult verifyClipping(Operation *op, ValueRange inputs,
                                    double maxNorm) {
  if (inputs.empty())
    return op->emitOpError() << "needs at least one gradient";
  if (inputs.getTypes() != op->getResultTypes())
    return op->emitOpError()
           << "needs one result per operand, of the operand's type";
  if (!(maxNorm > 0.0))
    return op->emitOpError() << "needs max_norm > 0, got " << maxNorm;
  return success();
}

// Result i has the type of gradient i; `train.scale_by_norm` ends with the
// total, which has no result.
LogicalResult ClipByGlobalNormOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &types) {
  llvm::append_range(types, operands.getTypes());
  return success();
}

LogicalResult ScaleByNormOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &types) {
  if (operands.empty())
    return failure();
  llvm::append_range(types, operands.drop_back().getTypes());
  return success();
}

LogicalResult ClipByGlobalNormOp::verify() {
  return verifyClipping(*this, getGrads(), getMaxNorm().convertToDouble());
}

LogicalResult ScaleByNormOp::verify() {
  return verifyClipping(*this, getInputs(), getMaxNorm().convertToDouble());
}

//===----------------------------------------------------------------------===//
// Dynamic loss scaling
//===----------------------------------------------------------------------===//

LogicalResult UnscaleOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location>,
                                          ValueRange operands, DictionaryAttr,
                                          OpaqueProperties, RegionRange,
                                          SmallVectorImpl<Type> &types) {
  if (operands.empty())
    return failure();
  auto f32 = Float32Type::get(context);
  for (Value grad : operands.drop_back()) {
    auto type = dyn_cast<RankedTensorType>(grad.getType());
    if (!type)
      return failure();
    types.push_back(RankedTensorType::get(type.getShape(), f32));
  }
  types.push_back(RankedTensorType::get({}, f32));
  return success();
}

LogicalResult UnscaleOp::verify() {
  if (getGrads().empty())
    return emitOpError() << "needs at least one gradient";
  for (auto [grad, result] : llvm::zip(getGrads(), getResults()))
    if (cast<ShapedType>(grad.getType()).getShape() !=
        cast<ShapedType>(result.getType()).getShape())
      return emitOpError() << "unscales " << grad.getType() << " into "
                           << result.getType()
                           << "; each result has its gradient's shape";
  return success();
}

void UnscaleOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  for (Value result : getResults())
    setName(result, "unscaled");
  setName(getFoundInf(), "found_inf");
}

LogicalResult UpdateLossScaleOp::verify() {
  if (getGrowthInterval() > (int64_t{1} << 24))
    return emitOpError() << "needs growth_interval <= 2^24 (the count of "
                            "good steps is an f32), got "
                         << getGrowthInterval();
  return success();
}

void UpdateLossScaleOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getNewScale(), "loss_scale");
  setName(getNewGoodSteps(), "good_steps");
}

//===----------------------------------------------------------------------===//
// MinimizeOp
//===----------------------------------------------------------------------===//

LogicalResult MinimizeOp::verify() {
  auto type = dyn_cast<RankedTensorType>(getLoss().getType());
  if (!type || type.getRank() != 0 || !isa<FloatType>(type.getElementType()))
    return emitOpError() << "minimizes a value of type " << getLoss().getType()
                         << ", but the loss must be a scalar: a 0-d float "
                            "tensor such as tensor<f32> (reduce it first, "
                            "e.g. with train.reduce_mean)";
  auto function = (*this)->getParentOfType<func::FuncOp>();
  if (!function || !function->hasAttr(TrainDialect::getStepAttrName()))
    return emitOpError() << "must be in a function marked 'train.step': the "
                            "loss belongs to a training step";
  // Two losses would need two backward passes and a rule to combine them;
  // the user adds them into one scalar instead.
  MinimizeOp first;
  function.walk([&](MinimizeOp op) {
    first = op;
    return WalkResult::interrupt();
  });
  if (first != *this)
    return emitOpError() << "is a second train.minimize in @"
                         << function.getSymName()
                         << "; a step minimizes one loss (add the losses into "
                            "one scalar first)";
  return success();
}
