//===- ZrtOps.cpp - The lowered runtime program ---------------------------===//

#include "zero/dialects/zrt/ZrtOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace zero;
using namespace zero::zrt;

#include "zero/dialects/zrt/ZrtDialect.cpp.inc"
#include "zero/dialects/zrt/ZrtEnums.cpp.inc"

void ZrtDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "zero/dialects/zrt/ZrtOps.cpp.inc"
      >();
}

static int64_t bytesOf(MemRefType type) {
  return type.getNumElements() *
         llvm::divideCeil(type.getElementTypeBitWidth(), 8);
}

//===----------------------------------------------------------------------===//
// Program structure
//===----------------------------------------------------------------------===//

LogicalResult ProgramOp::verify() {
  if (!llvm::isPowerOf2_64(getAlignment()))
    return emitOpError() << "needs a power-of-two alignment, got "
                         << getAlignment();
  SmallVector<StepKind> kinds;
  for (StepOp step : getBody().front().getOps<StepOp>())
    kinds.push_back(step.getKind());
  if (!getAccumulateSteps()) {
    if (kinds.size() != 1 || kinds.front() != StepKind::step)
      return emitOpError() << "needs exactly one plain zrt.step (micro and "
                              "apply steps need `accumulate K`), found "
                           << kinds.size() << " step bodies";
    return success();
  }
  if (kinds != SmallVector<StepKind>{StepKind::micro, StepKind::apply})
    return emitOpError() << "accumulates gradients over "
                         << *getAccumulateSteps()
                         << " micro-batches, so it needs a `zrt.step micro` "
                            "followed by a `zrt.step apply`";
  return success();
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

LogicalResult
BufferRefOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto buffer =
      symbolTable.lookupNearestSymbolFrom<BufferOp>(*this, getBufferAttr());
  if (!buffer)
    return emitOpError() << "refers to " << getBufferAttr()
                         << ", which is not a zrt.buffer";
  if (buffer.getMemRefType() != getResult().getType())
    return emitOpError() << "views " << getBufferAttr() << " as "
                         << getResult().getType() << ", but it is declared "
                         << buffer.getMemRefType();
  return success();
}

void BufferRefOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), getBuffer());
}

int64_t ArenaViewOp::getSizeInBytes() { return bytesOf(getResult().getType()); }

LogicalResult ArenaViewOp::verify() {
  auto program = (*this)->getParentOfType<ProgramOp>();
  if (!program)
    return emitOpError() << "must be inside a zrt.program";
  int64_t offset = getOffset();
  if (offset % static_cast<int64_t>(program.getAlignment()) != 0)
    return emitOpError() << "starts at offset " << offset
                         << ", which is not a multiple of the program's "
                            "alignment "
                         << program.getAlignment();
  // Compared without adding, so that huge offsets cannot wrap around.
  int64_t arena = program.getArenaBytes(getSpace()), size = getSizeInBytes();
  if (offset > arena || size > arena - offset)
    return emitOpError() << "covers " << size << " bytes from offset " << offset
                         << ", past the end of the " << arena << "-byte "
                         << (getSpace() == MemorySpace::host ? "host " : "")
                         << "arena";
  return success();
}

void ArenaViewOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "t");
}

//===----------------------------------------------------------------------===//
// Symbol uses of stream work
//===----------------------------------------------------------------------===//

template <typename DeclOp>
static LogicalResult verifyDeclared(Operation *user,
                                    SymbolTableCollection &symbolTable,
                                    FlatSymbolRefAttr symbol, StringRef what) {
  if (!symbolTable.lookupNearestSymbolFrom<DeclOp>(user, symbol))
    return user->emitOpError() << "refers to " << symbol << ", which is not a "
                               << what << " of this program";
  return success();
}

static LogicalResult verifyStream(Operation *user, SymbolTableCollection &table,
                                  FlatSymbolRefAttr stream) {
  return verifyDeclared<StreamOp>(user, table, stream, "zrt.stream");
}

std::optional<MemorySpace>
zero::zrt::getMemorySpace(Value memref, SymbolTableCollection &symbols) {
  while (auto view = memref.getDefiningOp<ViewOp>())
    memref = view.getSource();
  if (auto arenaView = memref.getDefiningOp<ArenaViewOp>())
    return arenaView.getSpace();
  if (auto ref = memref.getDefiningOp<BufferRefOp>())
    if (auto buffer =
            symbols.lookupNearestSymbolFrom<BufferOp>(ref, ref.getBufferAttr()))
      return buffer.getSpace();
  return std::nullopt;
}

/// Work on `stream` touches only memory of the stream's space; a copy on a
/// device stream (a transfer) is the one instruction that may cross.
static LogicalResult verifyMemorySpaces(Operation *user,
                                        SymbolTableCollection &table,
                                        FlatSymbolRefAttr streamRef,
                                        ValueRange memrefs) {
  if (failed(verifyStream(user, table, streamRef)))
    return failure();
  auto stream = table.lookupNearestSymbolFrom<StreamOp>(user, streamRef);
  bool transfer = isa<CopyOp>(user) && stream.getSpace() == MemorySpace::device;
  bool collective = !isa<CopyOp, LaunchOp>(user);
  for (Value memref : memrefs) {
    std::optional<MemorySpace> space = getMemorySpace(memref, table);
    if (!space || transfer)
      continue;
    if (collective && *space == MemorySpace::host)
      return user->emitOpError()
             << "communicates a buffer in host memory; collectives run on "
                "device memory, so copy it to the device first";
    if (*space != stream.getSpace())
      return user->emitOpError()
             << "runs on " << streamRef << ", a "
             << stringifyMemorySpace(stream.getSpace())
             << " stream, but touches a buffer in "
             << stringifyMemorySpace(*space)
             << " memory; data crosses between the spaces only by a zrt.copy "
                "on a device stream";
  }
  if (collective && stream.getSpace() == MemorySpace::host)
    return user->emitOpError() << "runs on " << streamRef
                               << ", a host stream; collectives run on device "
                                  "streams";
  return success();
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &table) {
  SmallVector<Value> memrefs(getIns());
  llvm::append_range(memrefs, getOuts());
  return verifyMemorySpaces(*this, table, getStreamAttr(), memrefs);
}

LogicalResult CopyOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyMemorySpaces(*this, table, getStreamAttr(),
                            {getSource(), getTarget()});
}

#define ZERO_ZRT_COLLECTIVE_USER(OpName)                                       \
  LogicalResult OpName::verifySymbolUses(SymbolTableCollection &table) {       \
    return verifyMemorySpaces(*this, table, getStreamAttr(),                   \
                              {getInput(), getOutput()});                      \
  }
ZERO_ZRT_COLLECTIVE_USER(AllReduceOp)
ZERO_ZRT_COLLECTIVE_USER(ReduceScatterOp)
ZERO_ZRT_COLLECTIVE_USER(AllGatherOp)
ZERO_ZRT_COLLECTIVE_USER(BroadcastOp)
ZERO_ZRT_COLLECTIVE_USER(AllToAllOp)
#undef ZERO_ZRT_COLLECTIVE_USER

LogicalResult RecordOp::verifySymbolUses(SymbolTableCollection &table) {
  return failure(failed(verifyDeclared<EventOp>(*this, table, getEventAttr(),
                                                "zrt.event")) ||
                 failed(verifyStream(*this, table, getStreamAttr())));
}

LogicalResult WaitOp::verifySymbolUses(SymbolTableCollection &table) {
  return failure(failed(verifyDeclared<EventOp>(*this, table, getEventAttr(),
                                                "zrt.event")) ||
                 failed(verifyStream(*this, table, getStreamAttr())));
}

//===----------------------------------------------------------------------===//
// Work
//===----------------------------------------------------------------------===//

LogicalResult ViewOp::verify() {
  MemRefType source = getSource().getType(), result = getResult().getType();
  if (source.getElementType() != result.getElementType())
    return emitOpError() << "views " << source << " as " << result
                         << "; a view cannot change the element type";
  int64_t end = static_cast<int64_t>(getOffset()) + result.getNumElements();
  if (end > source.getNumElements())
    return emitOpError() << "views elements [" << getOffset() << ", " << end
                         << ") of " << source << ", which has only "
                         << source.getNumElements();
  return success();
}

void ViewOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getResult(), "view");
}

LogicalResult LaunchOp::verify() {
  if (getKernel().empty())
    return emitOpError() << "needs a kernel name, such as \"train.matmul\"";
  if (getOuts().empty())
    return emitOpError() << "launches " << getKernel()
                         << " with no outputs; a kernel must write something";
  return success();
}

LogicalResult CopyOp::verify() {
  MemRefType source = getSource().getType(), target = getTarget().getType();
  if (source.getElementType() != target.getElementType() ||
      source.getNumElements() != target.getNumElements())
    return emitOpError() << "copies " << source << " into " << target
                         << "; a copy needs the same element type and count";
  return success();
}

/// `many` has exactly `factor` times the rows of `few`, other dims equal.
static LogicalResult verifyRowMultiple(Operation *op, MemRefType few,
                                       MemRefType many, int64_t factor,
                                       StringRef verb) {
  if (few.getRank() < 1 || few.getRank() != many.getRank() ||
      few.getShape().drop_front() != many.getShape().drop_front() ||
      few.getDimSize(0) * factor != many.getDimSize(0))
    return op->emitOpError() << verb << " over " << factor << " ranks needs "
                             << factor << " times the rows of " << few
                             << " (padding included), got " << many;
  return success();
}

template <typename CollectiveOp>
static LogicalResult
verifyCollectiveBuffers(CollectiveOp op,
                        llvm::function_ref<LogicalResult(int64_t)> rule) {
  FailureOr<int64_t> group = dist::verifyGroupSize(op, op.getAxis());
  if (failed(group))
    return failure();
  MemRefType input = op.getInput().getType(), output = op.getOutput().getType();
  if (input.getElementType() != output.getElementType())
    return op.emitOpError()
           << "moves " << input.getElementType() << " into "
           << output.getElementType() << "; collectives do not convert";
  return rule(*group);
}

LogicalResult AllReduceOp::verify() {
  return verifyCollectiveBuffers(*this, [&](int64_t) -> LogicalResult {
    if (getInput().getType() != getOutput().getType())
      return emitOpError() << "needs input and output of one type";
    return success();
  });
}

LogicalResult ReduceScatterOp::verify() {
  return verifyCollectiveBuffers(*this, [&](int64_t group) {
    return verifyRowMultiple(*this, getOutput().getType(), getInput().getType(),
                             group, "reduce-scatter");
  });
}

LogicalResult AllGatherOp::verify() {
  return verifyCollectiveBuffers(*this, [&](int64_t group) {
    return verifyRowMultiple(*this, getInput().getType(), getOutput().getType(),
                             group, "all-gather");
  });
}

LogicalResult BroadcastOp::verify() {
  return verifyCollectiveBuffers(*this, [&](int64_t group) -> LogicalResult {
    if (getInput().getType() != getOutput().getType())
      return emitOpError() << "needs input and output of one type";
    if (static_cast<int64_t>(getRoot()) >= group)
      return emitOpError() << "has root " << getRoot() << " in a group of "
                           << group << " ranks";
    return success();
  });
}

LogicalResult AllToAllOp::verify() {
  return verifyCollectiveBuffers(*this, [&](int64_t group) -> LogicalResult {
    MemRefType input = getInput().getType();
    if (input != getOutput().getType())
      return emitOpError() << "needs input and output of one type";
    if (input.getRank() < 1 || input.getDimSize(0) % group != 0)
      return emitOpError() << "exchanges row blocks of " << input
                           << ", whose rows do not divide by " << group;
    return success();
  });
}

#define GET_OP_CLASSES
#include "zero/dialects/zrt/ZrtOps.cpp.inc"
