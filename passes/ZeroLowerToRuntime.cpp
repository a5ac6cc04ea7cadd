//===- ZeroLowerToRuntime.cpp - A step as a zrt program
//--------------------===//
//
// Bufferizes a (ZeRO-rewritten) training step into the zrt program the
// runtime replays: persistent buffers at their shard sizes, one arena whose
// offsets come from a liveness-based planner, kernel launches, copies,
// collectives on a communication stream, and the events that order them.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/ArenaPlanner.h"
#include "zero/analysis/PlanReport.h"
#include "zero/analysis/TrainingStep.h"
#include "zero/dialects/dist/DistOps.h"
#include "zero/dialects/train/TrainOps.h"
#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace zero {
#define GEN_PASS_DEF_ZEROLOWERTORUNTIME
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

/// A transient buffer: its arena view and the instructions it lives across.
struct ArenaBuffer {
  zrt::ArenaViewOp view;
  int64_t begin = 0;
  int64_t end = 0;
};

/// A collective issued on the communication stream whose completion the
/// compute stream has not waited for yet.
struct PendingCollective {
  FlatSymbolRefAttr done;
  SmallVector<Value> reads, writes;
};

class StepLowering {
public:
  StepLowering(ModuleOp module, func::FuncOp step, int64_t alignment,
               bool asyncCollectives)
      : module(module), step(step), alignment(alignment),
        asyncCollectives(asyncCollectives), builder(module.getContext()) {}

  /// Builds the program at the end of the module. Fails with a diagnostic
  /// on the first op it cannot lower.
  LogicalResult lower(DictionaryAttr report);

private:
  // Declarations.
  void declareState();
  void declareInterface();
  FlatSymbolRefAttr declareEvent(StringRef prefix);
  Value getBufferRef(StringRef symbol);
  zrt::BufferOp createBuffer(Location loc, StringRef name, zrt::BufferRole role,
                             Type tensorType);

  // Memory.
  Value newArenaBuffer(MemRefType type);
  Value getView(Value memref, int64_t elementOffset, MemRefType type);
  Value getFlatView(Value memref, int64_t elementOffset, int64_t count);
  void touch(Value memref);
  bool sameMemory(Value a, Value b);
  Value lookup(Value tensor) { return memrefOf.lookup(tensor); }

  // Instructions.
  void waitForCollectives(ValueRange reads, ValueRange writes);
  void emitLaunch(StringRef kernel, ValueRange ins, ValueRange outs,
                  DictionaryAttr params);
  void emitCopy(Value source, Value target);
  void emitFill(Value target, double value);
  template <typename OpTy, typename... Args>
  void emitCollective(Value input, Value output, Args &&...args);
  void finishInstruction(Operation *op, ValueRange memrefs);

  // Ops of the step.
  LogicalResult lowerOp(Operation *op);
  LogicalResult lowerLoad(train::LoadOp load);
  void lowerStore(train::StoreOp store);
  LogicalResult lowerConstant(arith::ConstantOp constant);
  void lowerCompute(Operation *op, StringRef kernel, DictionaryAttr params);
  LogicalResult lowerUpdate(Operation *op);
  LogicalResult lowerCollective(Operation *op);
  void lowerPack(dist::PackOp pack);
  void lowerUnpack(dist::UnpackOp unpack);
  void lowerReturn(func::ReturnOp ret);

  void planMemory();
  /// The last op (by index in the step) that reads `value` or a view of it.
  int64_t getLastUse(Value value);
  bool loadNeedsCopy(train::LoadOp load);
  /// The state an update's result may be written to directly (the kernels
  /// update in place), instead of through the arena and a copy.
  std::optional<StringRef> getInPlaceState(Operation *update, Value result);
  /// `result` written directly into that state's buffer, or null.
  Value getInPlaceTarget(Operation *op, Value result);

  ModuleOp module;
  func::FuncOp step;
  int64_t alignment;
  bool asyncCollectives;
  OpBuilder builder;
  SymbolTableCollection symbols;

  zrt::ProgramOp program;
  Block *declarations = nullptr;
  Block *body = nullptr;
  /// Where buffer_refs go: before the first instruction, so that a
  /// reference made at any later point dominates every use.
  Operation *firstInstruction = nullptr;

  DenseMap<Value, Value> memrefOf;
  /// The arena buffer (index) or persistent buffer a memref lives in.
  DenseMap<Value, int64_t> arenaBufferOf;
  DenseMap<Value, StringAttr> persistentBufferOf;
  llvm::StringMap<Value> bufferRefs;
  SmallVector<ArenaBuffer> arenaBuffers;
  SmallVector<PendingCollective> pending;
  /// Index of the next instruction (launch, copy, collective, record, wait).
  int64_t position = 0;
  bool computeSinceLastHandoff = true;
  int64_t eventCount = 0;
  FlatSymbolRefAttr computeStream, commStream;
  /// Original op -> index, to decide when a load must be copied, and what
  /// the step loads and stores of each state, so that deciding is linear.
  DenseMap<Operation *, int64_t> opIndex;
  DenseMap<Value, int64_t> lastUses;
  llvm::StringMap<SmallVector<train::LoadOp>> loadsOf;
  llvm::StringMap<SmallVector<train::StoreOp>> storesOf;
};

} // namespace

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

static MemRefType toMemRef(Type tensorType) {
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
  }
  llvm_unreachable("unknown role");
}

zrt::BufferOp StepLowering::createBuffer(Location loc, StringRef name,
                                         zrt::BufferRole role,
                                         Type tensorType) {
  return builder.create<zrt::BufferOp>(
      loc, builder.getStringAttr(name),
      zrt::BufferRoleAttr::get(builder.getContext(), role),
      TypeAttr::get(toMemRef(tensorType)));
}

void StepLowering::declareState() {
  for (auto param : module.getOps<train::ParamOp>()) {
    auto buffer = createBuffer(param.getLoc(), param.getSymName(),
                               getBufferRole(param.getRole()),
                               param.getLocalTensorType());
    // What the runtime needs to draw the logical tensor from a seed and keep
    // its own shard of it.
    buffer->setAttr("zrt.logical_type", param.getLogicalTypeAttr());
    buffer->setAttr(
        "zrt.layout",
        builder.getStringAttr(stringifyStorageLayoutKind(param.getLayout())));
    if (auto init = param.getInitAttr())
      buffer->setAttr("zrt.init", init);
    // A master copy starts as its parameter's value, in f32.
    StringRef initName = param.getSymName();
    if (param.getRole() == train::Role::master && param.getOwner())
      initName = *param.getOwner();
    buffer->setAttr("zrt.init_name", builder.getStringAttr(initName));
  }
}

/// What an integer input indexes, when an op of the step says so: rows of an
/// embedding table or classes of a loss, and how many, so that the runtime
/// can draw valid synthetic ids.
static std::optional<std::pair<StringRef, int64_t>> getIndexUse(Value input) {
  for (Operation *user : input.getUsers()) {
    if (auto embedding = dyn_cast<train::EmbeddingOp>(user))
      return std::make_pair(
          StringRef("embedding"),
          cast<RankedTensorType>(embedding->getOperand(0).getType())
              .getDimSize(0));
    if (isa<train::SoftmaxCrossEntropyOp, train::SoftmaxCrossEntropyGradOp>(
            user))
      return std::make_pair(
          StringRef("labels"),
          cast<RankedTensorType>(user->getOperand(0).getType())
              .getShape()
              .back());
  }
  return std::nullopt;
}

void StepLowering::declareInterface() {
  for (auto [index, argument] : llvm::enumerate(step.getArguments())) {
    std::string name = "input" + std::to_string(index);
    auto buffer = createBuffer(step.getLoc(), name, zrt::BufferRole::input,
                               argument.getType());
    if (auto sbp = step.getArgAttr(index, "dist.sbp"))
      buffer->setAttr("zrt.sbp", sbp);
    if (auto use = getIndexUse(argument)) {
      buffer->setAttr("zrt.index_of", builder.getStringAttr(use->first));
      buffer->setAttr("zrt.index_bound",
                      builder.getI64IntegerAttr(use->second));
    }
  }
  for (auto [index, type] : llvm::enumerate(step.getResultTypes()))
    createBuffer(step.getLoc(), "output" + std::to_string(index),
                 zrt::BufferRole::output, type);
}

FlatSymbolRefAttr StepLowering::declareEvent(StringRef prefix) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(body->getParentOp());
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
  auto view = builder.create<zrt::ArenaViewOp>(step.getLoc(), type, 0);
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
  if (auto it = arenaBufferOf.find(memref); it != arenaBufferOf.end())
    arenaBufferOf[view] = it->second;
  if (auto it = persistentBufferOf.find(memref); it != persistentBufferOf.end())
    persistentBufferOf[view] = it->second;
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

void StepLowering::waitForCollectives(ValueRange reads, ValueRange writes) {
  auto conflicts = [&](PendingCollective &collective) {
    for (Value write : writes)
      for (Value other :
           llvm::concat<Value>(collective.reads, collective.writes))
        if (sameMemory(write, other))
          return true;
    for (Value read : reads)
      for (Value other : collective.writes)
        if (sameMemory(read, other))
          return true;
    return false;
  };
  SmallVector<PendingCollective> stillPending;
  for (PendingCollective &collective : pending) {
    if (!conflicts(collective)) {
      stillPending.push_back(std::move(collective));
      continue;
    }
    // The collective's buffers stay reserved until this wait.
    auto wait = builder.create<zrt::WaitOp>(step.getLoc(), collective.done,
                                            computeStream);
    SmallVector<Value> memrefs(collective.reads);
    memrefs.append(collective.writes);
    finishInstruction(wait, memrefs);
  }
  pending = std::move(stillPending);
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

template <typename OpTy, typename... Args>
void StepLowering::emitCollective(Value input, Value output, Args &&...args) {
  if (!asyncCollectives) {
    waitForCollectives(input, output);
    auto op = builder.create<OpTy>(step.getLoc(), computeStream,
                                   std::forward<Args>(args)..., input, output);
    finishInstruction(op, {input, output});
    return;
  }
  // The communication stream starts once the compute stream has produced the
  // input; consecutive collectives need no new hand-off.
  if (computeSinceLastHandoff) {
    FlatSymbolRefAttr ready = declareEvent("ready");
    finishInstruction(
        builder.create<zrt::RecordOp>(step.getLoc(), ready, computeStream), {});
    finishInstruction(
        builder.create<zrt::WaitOp>(step.getLoc(), ready, commStream), {});
    computeSinceLastHandoff = false;
  }
  auto op = builder.create<OpTy>(step.getLoc(), commStream,
                                 std::forward<Args>(args)..., input, output);
  finishInstruction(op, {input, output});
  FlatSymbolRefAttr done = declareEvent("done");
  finishInstruction(
      builder.create<zrt::RecordOp>(step.getLoc(), done, commStream), {});
  pending.push_back({done, {input}, {output}});
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

/// The store `value` reaches through single-use reshapes, if any.
static train::StoreOp getStoreThroughReshapes(Value value) {
  while (value.hasOneUse()) {
    Operation *user = *value.getUsers().begin();
    if (auto store = dyn_cast<train::StoreOp>(user))
      return store;
    auto reshape = dyn_cast<train::ReshapeOp>(user);
    if (!reshape)
      return {};
    value = reshape.getResult();
  }
  return {};
}

std::optional<StringRef> StepLowering::getInPlaceState(Operation *update,
                                                       Value result) {
  train::StoreOp store = getStoreThroughReshapes(result);
  if (!store)
    return std::nullopt;
  // Nothing may read the state's old value after the update writes it.
  int64_t at = opIndex.lookup(update), storedAt = opIndex.lookup(store);
  for (train::LoadOp load : loadsOf.lookup(store.getState()))
    if (getLastUse(load) > at)
      return std::nullopt;
  for (train::StoreOp other : storesOf.lookup(store.getState())) {
    int64_t otherAt = opIndex.lookup(other);
    if (other != store && otherAt > at && otherAt < storedAt)
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

/// Elements of one row along dimension 0, and rows.
static std::pair<int64_t, int64_t> getRowsAndRowElements(Type type) {
  auto shaped = cast<ShapedType>(type);
  if (shaped.getRank() == 0)
    return {1, 1};
  int64_t rows = shaped.getDimSize(0);
  return {rows, rows == 0 ? 0 : shaped.getNumElements() / rows};
}

static MemRefType withRows(MemRefType type, int64_t rows) {
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = rows;
  return MemRefType::get(shape, type.getElementType());
}

LogicalResult StepLowering::lowerCollective(Operation *op) {
  if (auto dim = op->getAttrOfType<IntegerAttr>("dim"); dim && dim.getInt())
    return op->emitOpError()
           << "splits dimension " << dim.getInt()
           << "; the runtime's collectives split dimension 0 (use layout=flat "
              "or dim0)";
  if (auto allToAll = dyn_cast<dist::AllToAllOp>(op);
      allToAll && (allToAll.getSplitDim() != 0 || allToAll.getConcatDim() != 0))
    return op->emitOpError()
           << "exchanges along dimensions " << allToAll.getSplitDim() << " -> "
           << allToAll.getConcatDim()
           << "; the runtime's all_to_all splits and concatenates dimension 0";
  Value input = lookup(op->getOperand(0));
  Type resultType = op->getResult(0).getType();
  auto axis = op->getAttrOfType<IntegerAttr>("axis");
  int64_t groupSize = dist::getGroupSize(op, axis.getInt());

  if (auto allReduce = dyn_cast<dist::AllReduceOp>(op)) {
    Value output = newArenaBuffer(toMemRef(resultType));
    emitCollective<zrt::AllReduceOp>(input, output, allReduce.getReduceAttr(),
                                     axis);
    memrefOf[op->getResult(0)] = output;
    return success();
  }
  if (auto reduceScatter = dyn_cast<dist::ReduceScatterOp>(op)) {
    MemRefType outType = toMemRef(resultType);
    auto [shardRows, rowElements] = getRowsAndRowElements(resultType);
    auto [inputRows, inputRowElements] =
        getRowsAndRowElements(op->getOperand(0).getType());
    (void)inputRowElements;
    // The runtime reduces whole padded buffers: zero rows up to N shards.
    if (inputRows != shardRows * groupSize) {
      Value padded = newArenaBuffer(
          withRows(cast<MemRefType>(input.getType()), shardRows * groupSize));
      int64_t used = inputRows * rowElements;
      emitCopy(input, getView(padded, 0, cast<MemRefType>(input.getType())));
      emitFill(
          getFlatView(padded, used, shardRows * groupSize * rowElements - used),
          0.0);
      input = padded;
    }
    Value output = newArenaBuffer(outType);
    emitCollective<zrt::ReduceScatterOp>(input, output,
                                         reduceScatter.getReduceAttr(), axis);
    memrefOf[op->getResult(0)] = output;
    return success();
  }
  if (isa<dist::AllGatherOp>(op)) {
    auto [shardRows, rowElements] =
        getRowsAndRowElements(op->getOperand(0).getType());
    (void)rowElements;
    Value padded =
        newArenaBuffer(withRows(toMemRef(resultType), shardRows * groupSize));
    emitCollective<zrt::AllGatherOp>(input, padded, axis);
    // Consumers see the logical rows; the padding rows stay unread.
    memrefOf[op->getResult(0)] = getView(padded, 0, toMemRef(resultType));
    return success();
  }
  if (auto broadcast = dyn_cast<dist::BroadcastOp>(op)) {
    Value output = newArenaBuffer(toMemRef(resultType));
    emitCollective<zrt::BroadcastOp>(input, output, axis,
                                     broadcast.getRootAttr());
    memrefOf[op->getResult(0)] = output;
    return success();
  }
  if (isa<dist::AllToAllOp>(op)) {
    Value output = newArenaBuffer(toMemRef(resultType));
    emitCollective<zrt::AllToAllOp>(input, output, axis);
    memrefOf[op->getResult(0)] = output;
    return success();
  }
  return op->emitOpError() << "has no runtime lowering";
}

void StepLowering::lowerPack(dist::PackOp pack) {
  Value bucket = newArenaBuffer(toMemRef(pack.getType()));
  memrefOf[pack] = bucket;
  int64_t total = pack.getType().getNumElements();
  int64_t shards = pack.getShards() ? *pack.getShards() : 1;
  // Each input contributes `chunk` elements per shard, rows padded.
  SmallVector<int64_t> chunks, offsets;
  int64_t perShard = 0;
  for (Value input : pack.getInputs()) {
    auto [rows, rowElements] = getRowsAndRowElements(input.getType());
    int64_t chunk = pack.getShards()
                        ? (rows + shards - 1) / shards * rowElements
                        : cast<ShapedType>(input.getType()).getNumElements();
    offsets.push_back(perShard);
    chunks.push_back(chunk);
    perShard += chunk;
  }
  for (int64_t shard = 0; shard < shards; ++shard) {
    for (auto [index, input] : llvm::enumerate(pack.getInputs())) {
      int64_t elements = cast<ShapedType>(input.getType()).getNumElements();
      int64_t begin = shard * chunks[index];
      int64_t length = std::clamp<int64_t>(elements - begin, 0, chunks[index]);
      int64_t target = shard * perShard + offsets[index];
      if (length > 0)
        emitCopy(getFlatView(lookup(input), begin, length),
                 getFlatView(bucket, target, length));
      if (length < chunks[index])
        emitFill(getFlatView(bucket, target + length, chunks[index] - length),
                 0.0);
    }
  }
  if (shards * perShard < total)
    emitFill(getFlatView(bucket, shards * perShard, total - shards * perShard),
             0.0);
}

void StepLowering::lowerUnpack(dist::UnpackOp unpack) {
  Value bucket = lookup(unpack.getInput());
  if (!unpack.getShards()) {
    // Members lie end to end: views, no copies.
    int64_t offset = 0;
    for (Value result : unpack.getResults()) {
      memrefOf[result] = getView(bucket, offset, toMemRef(result.getType()));
      offset += cast<ShapedType>(result.getType()).getNumElements();
    }
    return;
  }
  int64_t shards = *unpack.getShards();
  SmallVector<int64_t> chunks, offsets;
  int64_t perShard = 0;
  for (Value result : unpack.getResults()) {
    auto [rows, rowElements] = getRowsAndRowElements(result.getType());
    offsets.push_back(perShard);
    chunks.push_back((rows + shards - 1) / shards * rowElements);
    perShard += chunks.back();
  }
  for (auto [index, result] : llvm::enumerate(unpack.getResults())) {
    // Gathered parameters go straight into their buffers when nothing reads
    // the old values afterwards (stages 1 and 2 end this way).
    Value out = getInPlaceTarget(unpack, result);
    if (!out)
      out = newArenaBuffer(toMemRef(result.getType()));
    memrefOf[result] = out;
    int64_t elements = cast<ShapedType>(result.getType()).getNumElements();
    for (int64_t shard = 0; shard < shards; ++shard) {
      int64_t begin = shard * chunks[index];
      int64_t length = std::clamp<int64_t>(elements - begin, 0, chunks[index]);
      if (length > 0)
        emitCopy(getFlatView(bucket, shard * perShard + offsets[index], length),
                 getFlatView(out, begin, length));
    }
  }
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
  if (isa<dist::SliceOp>(op)) {
    // Which rows a rank keeps depends on the rank: a kernel, not a view.
    lowerCompute(op, op->getName().getStringRef(),
                 builder.getDictionaryAttr(
                     {builder.getNamedAttr("axis", op->getAttr("axis")),
                      builder.getNamedAttr("dim", op->getAttr("dim"))}));
    return success();
  }
  if (isa<dist::AllReduceOp, dist::ReduceScatterOp, dist::AllGatherOp,
          dist::BroadcastOp, dist::AllToAllOp>(op))
    return lowerCollective(op);
  if (isUpdateOp(op))
    return lowerUpdate(op);
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
  program.setArenaBytesAttr(builder.getI64IntegerAttr(plan.arenaBytes));
  for (auto [buffer, offset] : llvm::zip(arenaBuffers, plan.offsets))
    buffer.view.setOffsetAttr(builder.getI64IntegerAttr(offset));
  program->setAttr("zrt.live_bytes",
                   builder.getI64IntegerAttr(plan.liveBytesLowerBound));
}

LogicalResult StepLowering::lower(DictionaryAttr report) {
  auto placement = module->getAttrOfType<dist::PlacementAttr>("dist.placement");
  if (!placement)
    return mlir::emitError(module.getLoc())
           << "zero-lower-to-runtime: the module needs a dist.placement";
  int64_t index = 0;
  step.walk([&](Operation *op) {
    opIndex[op] = index++;
    if (auto load = dyn_cast<train::LoadOp>(op))
      loadsOf[load.getState()].push_back(load);
    if (auto store = dyn_cast<train::StoreOp>(op))
      storesOf[store.getState()].push_back(store);
  });

  builder.setInsertionPointToEnd(module.getBody());
  program = builder.create<zrt::ProgramOp>(step.getLoc(), step.getSymName(),
                                           placement, 0, alignment);
  declarations = builder.createBlock(&program.getBody());
  builder.setInsertionPointToEnd(declarations);
  builder.create<zrt::StreamOp>(step.getLoc(), "compute");
  if (asyncCollectives)
    builder.create<zrt::StreamOp>(step.getLoc(), "comm");
  computeStream = FlatSymbolRefAttr::get(builder.getContext(), "compute");
  commStream = FlatSymbolRefAttr::get(builder.getContext(), "comm");
  declareState();
  declareInterface();
  auto stepOp = builder.create<zrt::StepOp>(step.getLoc());
  zrt::StepOp::ensureTerminator(stepOp.getBody(), builder, step.getLoc());
  body = &stepOp.getBody().front();
  firstInstruction = body->getTerminator();
  builder.setInsertionPoint(body->getTerminator());
  if (report)
    program->setAttr("zrt.report", report);
  if (auto stage = module->getAttr("dist.zero_stage"))
    program->setAttr("zrt.zero_stage", stage);

  for (auto [index, argument] : llvm::enumerate(step.getArguments()))
    memrefOf[argument] = getBufferRef("input" + std::to_string(index));
  for (Operation &op : step.front())
    if (failed(lowerOp(&op)))
      return failure();
  waitForCollectives({}, {});
  for (PendingCollective &collective : pending) {
    auto wait = builder.create<zrt::WaitOp>(step.getLoc(), collective.done,
                                            computeStream);
    SmallVector<Value> memrefs(collective.reads);
    memrefs.append(collective.writes);
    finishInstruction(wait, memrefs);
  }
  pending.clear();
  planMemory();
  // Views made along the way that no instruction reads (a flat view whose
  // pieces were taken, a reference to a state stored in place) only clutter
  // the program.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
    if (isa<zrt::ViewOp, zrt::BufferRefOp>(op) && op.use_empty())
      op.erase();
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// zero-report's figures as an attribute, for the runtime to print beside
/// its measurements.
static DictionaryAttr getReportAttr(ModuleOp module, Builder &builder) {
  FailureOr<PlanReport> report = computePlanReport(module);
  if (failed(report))
    return {};
  auto bytes = [&](const ByteCount &count) {
    return builder.getI64IntegerAttr(count.bytes);
  };
  SmallVector<NamedAttribute> traffic;
  for (const auto &[kind, count] : report->traffic)
    traffic.push_back(builder.getNamedAttr(
        kind, builder.getDictionaryAttr(
                  {builder.getNamedAttr("count",
                                        builder.getI64IntegerAttr(count.count)),
                   builder.getNamedAttr("bytes",
                                        builder.getI64IntegerAttr(count.bytes)),
                   builder.getNamedAttr(
                       "sent_bytes_per_rank",
                       builder.getF64FloatAttr(count.sentBytesPerRank))})));
  return builder.getDictionaryAttr(
      {builder.getNamedAttr("parameters", bytes(report->parameters)),
       builder.getNamedAttr("gradients", bytes(report->gradients)),
       builder.getNamedAttr("slots", bytes(report->slots)),
       builder.getNamedAttr("masters", bytes(report->masters)),
       builder.getNamedAttr("model_state", bytes(report->modelState())),
       builder.getNamedAttr("persistent",
                            builder.getI64IntegerAttr(report->persistentBytes)),
       builder.getNamedAttr("peak_transient", builder.getI64IntegerAttr(
                                                  report->peakTransientBytes)),
       builder.getNamedAttr("traffic", builder.getDictionaryAttr(traffic))});
}

namespace {

struct ZeroLowerToRuntimePass
    : zero::impl::ZeroLowerToRuntimeBase<ZeroLowerToRuntimePass> {
  using ZeroLowerToRuntimeBase::ZeroLowerToRuntimeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      mlir::emitError(module.getLoc())
          << "zero-lower-to-runtime: alignment must be a power of two, got "
          << static_cast<int64_t>(alignment);
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> steps = getStepFunctions(module);
    if (steps.size() != 1) {
      mlir::emitError(module.getLoc())
          << "zero-lower-to-runtime: expected one train.step function, found "
          << steps.size()
          << (steps.size() > 1 ? " (gradient accumulation is not supported "
                                 "by the runtime yet)"
                               : "");
      return signalPassFailure();
    }
    func::FuncOp step = steps.front();
    if (auto k = step->getAttrOfType<IntegerAttr>("train.accumulate_steps");
        k && k.getInt() > 1) {
      step.emitOpError() << "accumulates gradients over " << k.getInt()
                         << " micro-steps, which the runtime does not run yet";
      return signalPassFailure();
    }
    for (auto func : module.getOps<func::FuncOp>())
      if (func != step) {
        func.emitOpError() << "is not the training step; inline it first "
                              "(--inline) before zero-lower-to-runtime";
        return signalPassFailure();
      }
    for (Type type : llvm::concat<const Type>(step.getArgumentTypes(),
                                              step.getResultTypes())) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor || !tensor.hasStaticShape()) {
        step.emitOpError() << "takes or returns " << type
                           << "; the runtime's inputs and outputs are "
                              "statically shaped tensors";
        return signalPassFailure();
      }
    }
    if (!step.getBody().hasOneBlock()) {
      step.emitOpError() << "has several blocks; zero-lower-to-runtime lowers "
                            "straight-line steps only";
      return signalPassFailure();
    }

    Builder builder(module.getContext());
    DictionaryAttr report = getReportAttr(module, builder);
    StepLowering lowering(module, step, alignment, asyncCollectives);
    if (failed(lowering.lower(report))) {
      // Leave the module as it was, not half lowered.
      for (auto program :
           llvm::make_early_inc_range(module.getOps<zrt::ProgramOp>()))
        program.erase();
      return signalPassFailure();
    }
    // Only the program remains: the state and the step are now in it.
    for (Operation &op : llvm::make_early_inc_range(module.getOps()))
      if (!isa<zrt::ProgramOp>(op))
        op.erase();
  }
};

} // namespace
