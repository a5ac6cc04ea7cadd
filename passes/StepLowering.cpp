//===- StepLowering.cpp - One training step as a zrt program
//---------------===//
//
// Declarations, memory, compute and state of zero-lower-to-runtime: the
// buffers of the program, the arena buffers and views every tensor lives in,
// kernel launches and copies, and when a load or an update can use the
// state's buffer directly.
//
//===----------------------------------------------------------------------===//

#include "StepLowering.h"

using namespace mlir;
using namespace zero;
using namespace zero::lowering;

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

MemRefType zero::lowering::toMemRef(Type tensorType) {
  auto tensor = cast<RankedTensorType>(tensorType);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

static zrt::BufferRole getBufferRole(train::Role role) {
  switch (role) {
  case train::Role::param:
    return zrt::BufferRole::param;
  case train::Role::frozen:
    return zrt::BufferRole::frozen;
  case train::Role::master:
    return zrt::BufferRole::master;
  case train::Role::slot:
    return zrt::BufferRole::slot;
  case train::Role::grad_accum:
    return zrt::BufferRole::grad_accum;
  case train::Role::scaler:
    return zrt::BufferRole::scaler;
  }
  llvm_unreachable("unknown role");
}

zrt::BufferOp StepLowering::createBuffer(Location loc, StringRef name,
                                         zrt::BufferRole role,
                                         Type tensorType) {
  return builder.create<zrt::BufferOp>(
      loc, builder.getStringAttr(name),
      zrt::BufferRoleAttr::get(builder.getContext(), role),
      TypeAttr::get(toMemRef(tensorType)),
      zrt::MemorySpaceAttr::get(builder.getContext(),
                                zrt::MemorySpace::device));
}

void StepLowering::declareState() {
  for (auto param : module.getOps<train::ParamOp>()) {
    auto buffer = createBuffer(param.getLoc(), param.getSymName(),
                               getBufferRole(param.getRole()),
                               param.getLocalTensorType());
    // What the runtime needs to draw the logical tensor from a seed and keep
    // its own shard of it.
    buffer->setAttr(zrt::ZrtDialect::getLogicalTypeAttrName(),
                    param.getLogicalTypeAttr());
    buffer->setAttr(
        zrt::ZrtDialect::getLayoutAttrName(),
        builder.getStringAttr(stringifyStorageLayoutKind(param.getLayout())));
    // On a mesh, the axes whose ranks hold the shards, the major one first
    // (the ranks along the others hold copies of them).
    if (param.isSharded() &&
        ArrayRef<int64_t>(param.getShardAxisList()) != ArrayRef<int64_t>{0})
      buffer->setAttr(zrt::ZrtDialect::getShardAxesAttrName(),
                      builder.getDenseI64ArrayAttr(param.getShardAxisList()));
    if (param.isSplit())
      buffer->setAttr(zrt::ZrtDialect::getSplitAttrName(),
                      builder.getDenseI64ArrayAttr(
                          {static_cast<int64_t>(*param.getSplitDim()),
                           static_cast<int64_t>(*param.getSplitAxis())}));
    if (auto init = param.getInitAttr())
      buffer->setAttr(zrt::ZrtDialect::getInitAttrName(), init);
    // A master copy starts as its parameter's value, in f32.
    StringRef initName = param.getSymName();
    if (param.getRole() == train::Role::master && param.getOwner())
      initName = *param.getOwner();
    buffer->setAttr(zrt::ZrtDialect::getInitNameAttrName(),
                    builder.getStringAttr(initName));
  }
}

/// What an integer input indexes, when an op of the step says so: rows of an
/// embedding table or classes of a loss, how many, and the label a loss
/// ignores, so that the runtime can draw valid synthetic ids and check a
/// file's.
struct IndexUse {
  StringRef kind;
  int64_t bound;
  std::optional<int64_t> ignored;
};

static std::optional<IndexUse> getIndexUse(Value input) {
  for (Operation *user : input.getUsers()) {
    if (auto embedding = dyn_cast<train::EmbeddingOp>(user))
      return IndexUse{"embedding", embedding.getTable().getType().getDimSize(0),
                      std::nullopt};
    if (auto loss = dyn_cast<train::SoftmaxCrossEntropyOp>(user))
      return IndexUse{"labels", loss.getLogits().getType().getShape().back(),
                      loss.getIgnoreIndex()};
    if (auto grad = dyn_cast<train::SoftmaxCrossEntropyGradOp>(user))
      return IndexUse{"labels", grad.getLogits().getType().getShape().back(),
                      grad.getIgnoreIndex()};
  }
  return std::nullopt;
}

void StepLowering::declareInterface() {
  for (auto [index, argument] : llvm::enumerate(step.getArguments())) {
    std::string name = "input" + std::to_string(index);
    auto buffer = createBuffer(step.getLoc(), name, zrt::BufferRole::input,
                               argument.getType());
    if (auto sbp = step.getArgAttr(index, "dist.sbp"))
      buffer->setAttr(zrt::ZrtDialect::getSbpAttrName(), sbp);
    // A count of the step's kept labels, which the runtime computes from
    // the labels input rather than reading from the batch.
    if (auto count = step.getArgAttrOfType<DictionaryAttr>(
            index, train::TrainDialect::getLabelCountAttrName())) {
      // Written by train-materialize-optimizer with every entry.
      auto labels = count.getAs<IntegerAttr>("labels");
      auto ignored = count.getAs<IntegerAttr>("ignore_index");
      auto begin = count.getAs<DenseI64ArrayAttr>("begin");
      auto end = count.getAs<DenseI64ArrayAttr>("end");
      if (labels && ignored && begin && end) {
        buffer->setAttr(
            zrt::ZrtDialect::getLabelCountOfAttrName(),
            builder.getStringAttr("input" + std::to_string(labels.getInt())));
        buffer->setAttr(zrt::ZrtDialect::getLabelCountIgnoredAttrName(),
                        ignored);
        buffer->setAttr(zrt::ZrtDialect::getLabelCountBeginAttrName(), begin);
        buffer->setAttr(zrt::ZrtDialect::getLabelCountEndAttrName(), end);
      }
    }
    if (std::optional<IndexUse> use = getIndexUse(argument)) {
      buffer->setAttr(zrt::ZrtDialect::getIndexOfAttrName(),
                      builder.getStringAttr(use->kind));
      buffer->setAttr(zrt::ZrtDialect::getIndexBoundAttrName(),
                      builder.getI64IntegerAttr(use->bound));
      if (use->ignored)
        buffer->setAttr(zrt::ZrtDialect::getIndexIgnoredAttrName(),
                        builder.getI64IntegerAttr(*use->ignored));
    }
  }
  for (auto [index, type] : llvm::enumerate(step.getResultTypes()))
    createBuffer(step.getLoc(), "output" + std::to_string(index),
                 zrt::BufferRole::output, type);
}

FlatSymbolRefAttr StepLowering::declareEvent(StringRef prefix) {
  OpBuilder::InsertionGuard guard(builder);
  // With the declarations, before the first step body.
  builder.setInsertionPoint(*declarations->getOps<zrt::StepOp>().begin());
  std::string name = (prefix + Twine(eventCount++)).str();
  builder.create<zrt::EventOp>(step.getLoc(), name);
  return FlatSymbolRefAttr::get(builder.getContext(), name);
}

Value StepLowering::getBufferRef(StringRef symbol) {
  if (Value ref = bufferRefs.lookup(symbol))
    return ref;
  auto buffer = symbols.lookupNearestSymbolFrom<zrt::BufferOp>(
      program, builder.getStringAttr(symbol));
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(firstInstruction);
  Value ref = builder.create<zrt::BufferRefOp>(buffer.getLoc(),
                                               buffer.getMemRefType(), symbol);
  bufferRefs[symbol] = ref;
  persistentBufferOf[ref] = builder.getStringAttr(symbol);
  return ref;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

Value StepLowering::newArenaBuffer(MemRefType type) {
  // Offsets are placeholders until planMemory() has seen every lifetime.
  auto view = builder.create<zrt::ArenaViewOp>(step.getLoc(), type, 0,
                                               zrt::MemorySpace::device);
  arenaBufferOf[view] = arenaBuffers.size();
  arenaBuffers.push_back({view, position, position});
  return view;
}

Value StepLowering::getView(Value memref, int64_t elementOffset,
                            MemRefType type) {
  if (elementOffset == 0 && memref.getType() == type)
    return memref;
  // A view of a view is a view of the underlying buffer.
  if (auto outer = memref.getDefiningOp<zrt::ViewOp>()) {
    elementOffset += static_cast<int64_t>(outer.getOffset());
    memref = outer.getSource();
    if (elementOffset == 0 && memref.getType() == type)
      return memref;
  }
  Value view =
      builder.create<zrt::ViewOp>(step.getLoc(), type, memref, elementOffset);
  // Copy the mapped value out before inserting: an insertion may grow the
  // map and free the bucket an iterator into it points at.
  if (auto it = arenaBufferOf.find(memref); it != arenaBufferOf.end()) {
    int64_t arenaIndex = it->second;
    arenaBufferOf[view] = arenaIndex;
  }
  if (auto it = persistentBufferOf.find(memref);
      it != persistentBufferOf.end()) {
    StringAttr symbol = it->second;
    persistentBufferOf[view] = symbol;
  }
  return view;
}

Value StepLowering::getFlatView(Value memref, int64_t elementOffset,
                                int64_t count) {
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  return getView(memref, elementOffset, MemRefType::get({count}, element));
}

void StepLowering::touch(Value memref) {
  auto it = arenaBufferOf.find(memref);
  if (it == arenaBufferOf.end())
    return;
  ArenaBuffer &buffer = arenaBuffers[it->second];
  if (!buffer.used)
    buffer.begin = position;
  buffer.used = true;
  buffer.end = std::max(buffer.end, position);
}

bool StepLowering::sameMemory(Value a, Value b) {
  auto arenaA = arenaBufferOf.find(a), arenaB = arenaBufferOf.find(b);
  if (arenaA != arenaBufferOf.end() && arenaB != arenaBufferOf.end())
    return arenaA->second == arenaB->second;
  auto bufferA = persistentBufferOf.find(a),
       bufferB = persistentBufferOf.find(b);
  return bufferA != persistentBufferOf.end() &&
         bufferB != persistentBufferOf.end() &&
         bufferA->second == bufferB->second;
}

//===----------------------------------------------------------------------===//
// Instructions
//===----------------------------------------------------------------------===//

void StepLowering::finishInstruction(Operation *op, ValueRange memrefs) {
  (void)op;
  for (Value memref : memrefs)
    touch(memref);
  ++position;
}

void StepLowering::emitLaunch(StringRef kernel, ValueRange ins, ValueRange outs,
                              DictionaryAttr params) {
  waitForCollectives(ins, outs);
  auto launch = builder.create<zrt::LaunchOp>(
      step.getLoc(), builder.getStringAttr(kernel), computeStream, ins, outs,
      params && !params.empty() ? params : DictionaryAttr());
  SmallVector<Value> memrefs(ins);
  memrefs.append(outs.begin(), outs.end());
  finishInstruction(launch, memrefs);
  computeSinceLastHandoff = true;
}

void StepLowering::emitCopy(Value source, Value target) {
  waitForCollectives(source, target);
  auto copy =
      builder.create<zrt::CopyOp>(step.getLoc(), computeStream, source, target);
  finishInstruction(copy, {source, target});
  computeSinceLastHandoff = true;
}

void StepLowering::emitFill(Value target, double value) {
  emitLaunch("zrt.fill", {}, target,
             builder.getDictionaryAttr(builder.getNamedAttr(
                 "value", builder.getF64FloatAttr(value))));
}

//===----------------------------------------------------------------------===//
// Ops of the step
//===----------------------------------------------------------------------===//

int64_t StepLowering::getLastUse(Value value) {
  if (auto it = lastUses.find(value); it != lastUses.end())
    return it->second;
  int64_t last = opIndex.lookup(value.getDefiningOp());
  for (Operation *user : value.getUsers()) {
    last = std::max(last, opIndex.lookup(user));
    bool aliases =
        isa<train::ReshapeOp>(user) ||
        (isa<dist::UnpackOp>(user) && !cast<dist::UnpackOp>(user).getShards());
    if (aliases)
      for (Value result : user->getResults())
        last = std::max(last, getLastUse(result));
  }
  lastUses[value] = last;
  return last;
}

bool StepLowering::loadNeedsCopy(train::LoadOp load) {
  int64_t begin = opIndex.lookup(load), end = getLastUse(load.getResult());
  for (train::StoreOp store : storesOf.lookup(load.getState())) {
    int64_t at = opIndex.lookup(store);
    if (at > begin && at < end)
      return true;
  }
  return false;
}

/// A store of `value`, directly or through reshapes, if any.
static train::StoreOp findStore(Value value) {
  for (Operation *user : value.getUsers()) {
    if (auto store = dyn_cast<train::StoreOp>(user))
      return store;
    if (auto reshape = dyn_cast<train::ReshapeOp>(user))
      if (train::StoreOp store = findStore(reshape.getResult()))
        return store;
  }
  return {};
}

std::optional<StringRef> StepLowering::getInPlaceState(Operation *update,
                                                       Value result) {
  train::StoreOp store = findStore(result);
  if (!store)
    return std::nullopt;
  // Nothing may read the state's old value after the update writes it.
  int64_t at = opIndex.lookup(update), storedAt = opIndex.lookup(store);
  for (train::LoadOp load : loadsOf.lookup(store.getState()))
    if (getLastUse(load) > at)
      return std::nullopt;
  // And the state must hold the new value from the update until the last
  // read of it (a cast of a new master copy reads it after the store).
  int64_t readUntil = std::max(storedAt, getLastUse(result));
  for (train::StoreOp other : storesOf.lookup(store.getState())) {
    int64_t otherAt = opIndex.lookup(other);
    if (other != store && otherAt > at && otherAt < readUntil)
      return std::nullopt;
  }
  return store.getState();
}

Value StepLowering::getInPlaceTarget(Operation *op, Value result) {
  std::optional<StringRef> state = getInPlaceState(op, result);
  if (!state)
    return {};
  Value buffer = getBufferRef(*state);
  auto bufferType = cast<MemRefType>(buffer.getType());
  MemRefType type = toMemRef(result.getType());
  if (bufferType.getNumElements() != type.getNumElements() ||
      bufferType.getElementType() != type.getElementType())
    return {};
  return getView(buffer, 0, type);
}

LogicalResult StepLowering::lowerLoad(train::LoadOp load) {
  Value ref = getBufferRef(load.getState());
  if (!loadNeedsCopy(load)) {
    memrefOf[load] = ref;
    return success();
  }
  // The step overwrites the state while this value is still read: keep a
  // copy of the value as loaded.
  Value copy = newArenaBuffer(cast<MemRefType>(ref.getType()));
  emitCopy(ref, copy);
  memrefOf[load] = copy;
  return success();
}

void StepLowering::lowerStore(train::StoreOp store) {
  Value target = getBufferRef(store.getState());
  Value source = lookup(store.getValue());
  if (source == target)
    return;
  emitCopy(source, target);
}

LogicalResult StepLowering::lowerConstant(arith::ConstantOp constant) {
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense || !dense.isSplat())
    return constant.emitOpError()
           << "cannot be lowered to the runtime: only splat tensor constants "
              "are supported";
  double value = isa<FloatType>(dense.getElementType())
                     ? dense.getSplatValue<APFloat>().convertToDouble()
                     : static_cast<double>(
                           dense.getElementType().isInteger(1)
                               ? dense.getSplatValue<APInt>().getZExtValue()
                               : dense.getSplatValue<APInt>().getSExtValue());
  Value target = newArenaBuffer(toMemRef(constant.getType()));
  emitFill(target, value);
  memrefOf[constant] = target;
  return success();
}

void StepLowering::lowerCompute(Operation *op, StringRef kernel,
                                DictionaryAttr params) {
  SmallVector<Value> ins, outs;
  for (Value operand : op->getOperands())
    ins.push_back(lookup(operand));
  for (Value result : op->getResults()) {
    Value out = isUpdateOp(op) ? getInPlaceTarget(op, result) : Value();
    if (!out)
      out = newArenaBuffer(toMemRef(result.getType()));
    memrefOf[result] = out;
    outs.push_back(out);
  }
  emitLaunch(kernel, ins, outs, params);
}

void StepLowering::lowerScaleByNorm(train::ScaleByNormOp op) {
  lowerCompute(op, op->getName().getStringRef(), op->getAttrDictionary());
  // The gradients' global squared norm is kept in an output buffer for the
  // trainer's metrics (its grad_norm, as clip_grad_norm_ returns it).
  // Declared here rather than with the interface: under accumulation the
  // clipping is in the apply step, lowered into the program later.
  StringRef name = zrt::kGradSquaredNormBuffer;
  if (!symbols.lookupNearestSymbolFrom<zrt::BufferOp>(
          program, builder.getStringAttr(name))) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(*declarations->getOps<zrt::StepOp>().begin());
    zrt::BufferOp buffer = createBuffer(
        op.getLoc(), name, zrt::BufferRole::output, op.getTotal().getType());
    symbols.getSymbolTable(program).insert(buffer);
  }
  emitCopy(lookup(op.getTotal()), getBufferRef(name));
}

LogicalResult StepLowering::lowerUpdate(Operation *op) {
  auto symbol = op->getAttrOfType<FlatSymbolRefAttr>("optimizer");
  auto optimizer =
      symbols.lookupNearestSymbolFrom<train::OptimizerOp>(module, symbol);
  if (!optimizer)
    return op->emitOpError()
           << "names " << symbol << ", which is not a train.optimizer";
  // Kernels get every hyper-parameter with the documented defaults applied.
  SmallVector<NamedAttribute> params = {
      builder.getNamedAttr("lr",
                           builder.getF64FloatAttr(optimizer.getLrValue())),
      builder.getNamedAttr("beta1",
                           builder.getF64FloatAttr(optimizer.getBeta1Value())),
      builder.getNamedAttr("beta2",
                           builder.getF64FloatAttr(optimizer.getBeta2Value())),
      builder.getNamedAttr("eps",
                           builder.getF64FloatAttr(optimizer.getEpsValue())),
      builder.getNamedAttr(
          "weight_decay",
          builder.getF64FloatAttr(optimizer.getWeightDecayValue()))};
  if (std::optional<double> momentum = optimizer.getMomentumValue())
    params.push_back(
        builder.getNamedAttr("momentum", builder.getF64FloatAttr(*momentum)));
  // A varying rate goes to the kernels as its schedule; they compute the
  // step's rate from the runtime's step. A constant rate adds nothing, so
  // such updates stay what they were.
  if (optimizer.hasVaryingLr()) {
    train::ScheduleKind kind = optimizer.getScheduleValue();
    params.push_back(builder.getNamedAttr(
        "schedule", builder.getStringAttr(train::stringifyScheduleKind(kind))));
    params.push_back(builder.getNamedAttr(
        "warmup", builder.getI64IntegerAttr(optimizer.getWarmupValue())));
    if (kind != train::ScheduleKind::constant) {
      params.push_back(builder.getNamedAttr(
          "total", builder.getI64IntegerAttr(*optimizer.getTotalValue())));
      params.push_back(builder.getNamedAttr(
          "min_lr", builder.getF64FloatAttr(optimizer.getMinLrValue())));
    }
  }
  lowerCompute(op, op->getName().getStringRef(),
               builder.getDictionaryAttr(params));
  return success();
}

void StepLowering::lowerReturn(func::ReturnOp ret) {
  for (auto [index, operand] : llvm::enumerate(ret.getOperands()))
    emitCopy(lookup(operand), getBufferRef("output" + std::to_string(index)));
}

LogicalResult StepLowering::lowerOp(Operation *op) {
  Dialect *dialect = op->getDialect();
  if (!isa_and_nonnull<train::TrainDialect, dist::DistDialect>(dialect) &&
      !isa<arith::ConstantOp, func::ReturnOp>(op))
    return op->emitOpError()
           << "has no runtime kernel: the runtime executes train and dist ops "
              "and splat arith.constant (the ZeRO passes accept other compute, "
              "the runtime does not run it)";
  if (op->getNumRegions() != 0)
    return op->emitOpError()
           << "holds regions; zero-lower-to-runtime lowers straight-line steps "
              "only";
  if (auto load = dyn_cast<train::LoadOp>(op))
    return lowerLoad(load);
  if (auto store = dyn_cast<train::StoreOp>(op))
    return lowerStore(store), success();
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return lowerConstant(constant);
  if (auto ret = dyn_cast<func::ReturnOp>(op))
    return lowerReturn(ret), success();
  if (auto reshape = dyn_cast<train::ReshapeOp>(op)) {
    memrefOf[reshape] =
        getView(lookup(reshape.getOperand()), 0, toMemRef(reshape.getType()));
    return success();
  }
  if (auto pack = dyn_cast<dist::PackOp>(op))
    return lowerPack(pack), success();
  if (auto unpack = dyn_cast<dist::UnpackOp>(op))
    return lowerUnpack(unpack), success();
  if (isa<dist::QuantizeOp, dist::DequantizeOp>(op)) {
    lowerCompute(op, op->getName().getStringRef(), op->getAttrDictionary());
    return success();
  }
  if (isa<dist::SliceOp>(op)) {
    // Which rows a rank keeps depends on the rank: a kernel, not a view. On
    // a mesh, on the rank's coordinate along the axis, which the kernel
    // computes from the grid.
    SmallVector<NamedAttribute> params{
        builder.getNamedAttr("axis", op->getAttr("axis")),
        builder.getNamedAttr("dim", op->getAttr("dim"))};
    dist::PlacementAttr placement = dist::lookupPlacement(op);
    if (placement && placement.getNumAxes() > 1)
      params.push_back(builder.getNamedAttr(
          "grid", builder.getI64ArrayAttr(placement.getGrid())));
    lowerCompute(op, op->getName().getStringRef(),
                 builder.getDictionaryAttr(params));
    return success();
  }
  if (isa<dist::AllReduceOp, dist::ReduceScatterOp, dist::AllGatherOp,
          dist::BroadcastOp, dist::AllToAllOp>(op))
    return lowerCollective(op);
  if (isUpdateOp(op))
    return lowerUpdate(op);
  if (auto scale = dyn_cast<train::ScaleByNormOp>(op))
    return lowerScaleByNorm(scale), success();
  if (isa<train::ApplyGradientOp>(op))
    return op->emitOpError()
           << "must be materialized first: run train-materialize-optimizer "
              "(zero-pipeline does)";
  if (isa<train::StepIndexOp>(op) ||
      (isa<train::TrainDialect>(op->getDialect()) && op->getNumResults() > 0)) {
    lowerCompute(op, op->getName().getStringRef(), op->getAttrDictionary());
    return success();
  }
  if (isa<dist::DistDialect>(op->getDialect()))
    return op->emitOpError()
           << "is not lowered to the runtime: reshards and asynchronous "
              "collectives must be turned into the synchronous collectives "
              "first";
  return op->emitOpError() << "has no runtime kernel";
}

void StepLowering::planMemory() {
  SmallVector<ArenaRequest> requests;
  for (ArenaBuffer &buffer : arenaBuffers)
    requests.push_back(
        {buffer.view.getSizeInBytes(), buffer.begin, buffer.end});
  ArenaPlan plan = planArena(requests, alignment);
  // The bodies of a program run one after the other: each plans its own
  // offsets from the start of the arena, which is as large as the largest.
  int64_t liveBytes = plan.liveBytesLowerBound;
  if (auto earlier = program->getAttrOfType<IntegerAttr>(
          zrt::ZrtDialect::getLiveBytesAttrName()))
    liveBytes = std::max(liveBytes, earlier.getInt());
  program.setArenaBytesAttr(builder.getI64IntegerAttr(
      std::max<int64_t>(program.getArenaBytes(), plan.arenaBytes)));
  for (auto [buffer, offset] : llvm::zip(arenaBuffers, plan.offsets))
    buffer.view.setOffsetAttr(builder.getI64IntegerAttr(offset));
  program->setAttr(zrt::ZrtDialect::getLiveBytesAttrName(),
                   builder.getI64IntegerAttr(liveBytes));
  // The plan, apart from the header the runtime allocates by: zero-run
  // --check-memory holds what the instructions really write against it.
  program->setAttr(zrt::ZrtDialect::getPlannedArenaAttrName(),
                   builder.getI64IntegerAttr(program.getArenaBytes()));
}

LogicalResult StepLowering::lower(DictionaryAttr report, zrt::StepKind kind) {
  auto placement = module->getAttrOfType<dist::PlacementAttr>("dist.placement");
  if (!placement)
    return mlir::emitError(module.getLoc())
           << "zero-lower-to-runtime: the module needs a dist.placement";
  builder.setInsertionPointToEnd(module.getBody());
  program = builder.create<zrt::ProgramOp>(
      step.getLoc(), step.getSymName(), placement, 0,
      /*host_arena_bytes=*/nullptr, alignment,
      /*accumulate_steps=*/nullptr);
  declarations = builder.createBlock(&program.getBody());
  builder.setInsertionPointToEnd(declarations);
  builder.create<zrt::StreamOp>(step.getLoc(), "compute",
                                zrt::MemorySpace::device);
  if (asyncCollectives)
    builder.create<zrt::StreamOp>(step.getLoc(), "comm",
                                  zrt::MemorySpace::device);
  declareState();
  declareInterface();
  if (report)
    program->setAttr(zrt::ZrtDialect::getReportAttrName(), report);
  if (auto stage = module->getAttr("dist.zero_stage"))
    program->setAttr(zrt::ZrtDialect::getZeroStageAttrName(), stage);
  return lowerBody(kind);
}

LogicalResult StepLowering::lowerInto(zrt::ProgramOp into, zrt::StepKind kind) {
  program = into;
  declarations = &program.getBody().front();
  eventCount = llvm::range_size(declarations->getOps<zrt::EventOp>());
  return lowerBody(kind);
}

LogicalResult StepLowering::lowerBody(zrt::StepKind kind) {
  int64_t index = 0;
  step.walk([&](Operation *op) {
    opIndex[op] = index++;
    if (auto load = dyn_cast<train::LoadOp>(op))
      loadsOf[load.getState()].push_back(load);
    if (auto store = dyn_cast<train::StoreOp>(op))
      storesOf[store.getState()].push_back(store);
  });
  computeStream = FlatSymbolRefAttr::get(builder.getContext(), "compute");
  commStream = FlatSymbolRefAttr::get(builder.getContext(), "comm");
  builder.setInsertionPointToEnd(declarations);
  auto stepOp = builder.create<zrt::StepOp>(step.getLoc(), kind);
  zrt::StepOp::ensureTerminator(stepOp.getBody(), builder, step.getLoc());
  body = &stepOp.getBody().front();
  firstInstruction = body->getTerminator();
  builder.setInsertionPoint(body->getTerminator());

  for (auto [index, argument] : llvm::enumerate(step.getArguments()))
    memrefOf[argument] = getBufferRef("input" + std::to_string(index));
  for (Operation &op : step.front())
    if (failed(lowerOp(&op)))
      return failure();
  // The step ends with every collective complete.
  waitForCollectives({}, {}, /*all=*/true);
  planMemory();
  // Views made along the way that no instruction reads (a flat view whose
  // pieces were taken, a reference to a state stored in place) only clutter
  // the program.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
    if (isa<zrt::ViewOp, zrt::BufferRefOp>(op) && op.use_empty())
      op.erase();
  return success();
}
