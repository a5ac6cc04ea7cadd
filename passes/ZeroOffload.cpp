//===- ZeroOffload.cpp - Optimizer state and parameters in host memory ----===//
//
// ZeRO-Offload as a rewrite of the lowered program. The runtime peers decide
// placement while training; here the compiler picks which persistent
// buffers live in host memory, moves the kernels that touch them to a host
// stream, makes every crossing an explicit copy on a transfer stream ordered
// by events, plans the staging memory, and records what each rank then
// holds on the device and on the host. The device arena's offsets are kept:
// a device instruction that touches bytes a transfer still reads or writes
// waits for that transfer instead.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/ArenaPlanner.h"
#include "zero/analysis/PlanReport.h"
#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

#include <functional>
#include <limits>

namespace zero {
#define GEN_PASS_DEF_ZEROOFFLOAD
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using zrt::MemorySpace;

namespace {

int64_t bytesOf(Type type) {
  auto memref = cast<MemRefType>(type);
  return memref.getNumElements() * static_cast<int64_t>(llvm::divideCeil(
                                       memref.getElementTypeBitWidth(), 8));
}

int64_t alignTo(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

bool isUpdateKernel(StringRef kernel) {
  return llvm::is_contained({StringRef("train.sgd"), StringRef("train.adam"),
                             StringRef("train.adamw"),
                             StringRef("train.sgd_momentum")},
                            kernel);
}

bool isWork(Operation *op) {
  return isa<zrt::LaunchOp, zrt::CopyOp, zrt::AllReduceOp, zrt::ReduceScatterOp,
             zrt::AllGatherOp, zrt::BroadcastOp, zrt::AllToAllOp>(op);
}

FlatSymbolRefAttr getStream(Operation *op) {
  return op->getAttrOfType<FlatSymbolRefAttr>("stream");
}

/// What an instruction reads and writes.
std::pair<SmallVector<Value>, SmallVector<Value>> getAccesses(Operation *op) {
  if (auto launch = dyn_cast<zrt::LaunchOp>(op))
    return {SmallVector<Value>(launch.getIns()),
            SmallVector<Value>(launch.getOuts())};
  if (auto copy = dyn_cast<zrt::CopyOp>(op))
    return {{copy.getSource()}, {copy.getTarget()}};
  // Collectives: input, then output.
  return {{op->getOperand(0)}, {op->getOperand(1)}};
}

/// The buffer_ref or arena_view a memref is a view of, and its element
/// offset into it.
std::pair<Operation *, int64_t> getRoot(Value memref) {
  int64_t offset = 0;
  while (auto view = memref.getDefiningOp<zrt::ViewOp>()) {
    offset += static_cast<int64_t>(view.getOffset());
    memref = view.getSource();
  }
  return {memref.getDefiningOp(), offset};
}

/// Bytes of device memory: of a persistent buffer, or of the device arena
/// (no buffer).
struct Region {
  StringAttr buffer;
  int64_t begin = 0;
  int64_t end = 0;
  bool overlaps(const Region &other) const {
    return buffer == other.buffer && begin < other.end && other.begin < end;
  }
};

/// Transfers issued and not yet waited for by some device stream.
struct PendingTransfer {
  FlatSymbolRefAttr done;
  SmallVector<Region> reads, writes;
  SmallVector<StringAttr> waitedBy;
};

/// What may move to host memory as one decision: the optimizer state of
/// one update, or one sharded parameter.
struct OffloadUnit {
  bool isParam = false;
  std::string tensor;
  SmallVector<StringAttr> buffers;
  int64_t bytes = 0;
};

/// Rewrites one program for a set of host buffers.
class Offloader {
public:
  explicit Offloader(zrt::ProgramOp program)
      : program(program), builder(program.getContext()) {}

  /// Places `hostBuffers` in host memory and legalizes every body.
  LogicalResult run(const llvm::StringSet<> &hostBuffers);

private:
  std::optional<Region> getDeviceRegion(Value memref);
  MemorySpace getSpace(Value memref) {
    return zrt::getMemorySpace(memref, symbols).value_or(MemorySpace::device);
  }
  FlatSymbolRefAttr newEvent(StringRef prefix);
  FlatSymbolRefAttr record(FlatSymbolRefAttr stream, StringRef prefix);
  void handOff(FlatSymbolRefAttr from, FlatSymbolRefAttr to, StringRef prefix);
  /// Orders the transfer stream after the host stream's work so far, before
  /// a transfer touches host memory that host work may still use.
  void syncHostToTransfer();
  FlatSymbolRefAttr declareStream(StringRef name, MemorySpace space);
  Value newStaging(Type type, MemorySpace space);

  void waitForTransfers(Operation *op);
  zrt::CopyOp getCopyToHost(Value value, Operation *writer);
  LogicalResult rewriteBody(zrt::StepOp step);
  void rewriteHostLaunch(zrt::LaunchOp launch);
  /// Moves the (pure) declaration of `value`, and of what it views, before
  /// `point` when it comes after it; `point` moves past a declaration that
  /// is `point` itself.
  void declareBefore(Value value, Operation *&point);
  /// Where the transfers into a host kernel and the kernel itself can go,
  /// earlier than the kernel was: right after the last instruction that
  /// writes one of its device inputs (with the event a collective there
  /// records, for the transfer stream to wait for), unless an instruction
  /// in between touches host memory the kernel writes, or writes host
  /// memory it reads. Null when it cannot move.
  Operation *findHoistPoint(zrt::LaunchOp launch, ArrayRef<Value> deviceReads,
                            ArrayRef<Value> hostTargets,
                            FlatSymbolRefAttr &collectiveDone);
  void rewriteCopy(zrt::CopyOp copy);
  LogicalResult rewriteCollective(Operation *op);
  void planStaging(zrt::StepOp step);

  zrt::ProgramOp program;
  OpBuilder builder;
  SymbolTableCollection symbols;
  FlatSymbolRefAttr compute, transfer, host;
  int64_t eventCount = 0;
  SmallVector<PendingTransfer> pending;
  bool hostUnsynced = false;
  /// Whether the transfer stream has work the host stream has not waited
  /// for.
  bool transferUnsynced = false;
  SmallVector<zrt::ArenaViewOp> hostStaging, deviceStaging;
  /// Work ops a rewrite removed before their turn came.
  DenseSet<Operation *> erased;
  int64_t hostArena = 0, deviceArena = 0;
};

std::optional<Region> Offloader::getDeviceRegion(Value memref) {
  auto [root, elementOffset] = getRoot(memref);
  auto type = cast<MemRefType>(memref.getType());
  int64_t elementBytes = bytesOf(MemRefType::get({1}, type.getElementType()));
  Region region;
  region.begin = elementOffset * elementBytes;
  if (auto view = dyn_cast_or_null<zrt::ArenaViewOp>(root)) {
    if (view.getSpace() != MemorySpace::device)
      return std::nullopt;
    region.begin += static_cast<int64_t>(view.getOffset());
  } else if (auto ref = dyn_cast_or_null<zrt::BufferRefOp>(root)) {
    if (getSpace(ref) != MemorySpace::device)
      return std::nullopt;
    region.buffer = ref.getBufferAttr().getAttr();
  } else {
    return std::nullopt;
  }
  region.end = region.begin + bytesOf(type);
  return region;
}

FlatSymbolRefAttr Offloader::newEvent(StringRef prefix) {
  std::string name;
  do
    name = (prefix + Twine(eventCount++)).str();
  while (SymbolTable::lookupSymbolIn(program, name));
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(
      *program.getBody().front().getOps<zrt::StepOp>().begin());
  builder.create<zrt::EventOp>(program.getLoc(), name);
  return FlatSymbolRefAttr::get(builder.getContext(), name);
}

FlatSymbolRefAttr Offloader::record(FlatSymbolRefAttr stream,
                                    StringRef prefix) {
  FlatSymbolRefAttr event = newEvent(prefix);
  builder.create<zrt::RecordOp>(program.getLoc(), event, stream);
  return event;
}

void Offloader::handOff(FlatSymbolRefAttr from, FlatSymbolRefAttr to,
                        StringRef prefix) {
  FlatSymbolRefAttr event = record(from, prefix);
  builder.create<zrt::WaitOp>(program.getLoc(), event, to);
}

void Offloader::syncHostToTransfer() {
  if (!hostUnsynced)
    return;
  handOff(host, transfer, "host_done");
  hostUnsynced = false;
}

FlatSymbolRefAttr Offloader::declareStream(StringRef name, MemorySpace space) {
  if (!SymbolTable::lookupSymbolIn(program, name)) {
    OpBuilder::InsertionGuard guard(builder);
    Block &declarations = program.getBody().front();
    auto streams = declarations.getOps<zrt::StreamOp>();
    if (streams.empty())
      builder.setInsertionPointToStart(&declarations);
    else
      builder.setInsertionPointAfter(*std::prev(streams.end()));
    builder.create<zrt::StreamOp>(program.getLoc(), name, space);
  }
  return FlatSymbolRefAttr::get(builder.getContext(), name);
}

Value Offloader::newStaging(Type type, MemorySpace space) {
  // Offsets are placeholders until planStaging() has seen every lifetime.
  auto view = builder.create<zrt::ArenaViewOp>(
      program.getLoc(), cast<MemRefType>(type), 0, space);
  (space == MemorySpace::host ? hostStaging : deviceStaging).push_back(view);
  return view;
}

void Offloader::waitForTransfers(Operation *op) {
  auto [reads, writes] = getAccesses(op);
  SmallVector<Region> readRegions, writeRegions;
  for (Value value : reads)
    if (std::optional<Region> region = getDeviceRegion(value))
      readRegions.push_back(*region);
  for (Value value : writes)
    if (std::optional<Region> region = getDeviceRegion(value))
      writeRegions.push_back(*region);
  auto overlapsAny = [](ArrayRef<Region> some, ArrayRef<Region> others) {
    return llvm::any_of(some, [&](const Region &region) {
      return llvm::any_of(
          others, [&](const Region &other) { return region.overlaps(other); });
    });
  };
  StringAttr stream = getStream(op).getAttr();
  for (PendingTransfer &transferDone : pending) {
    bool conflicts = overlapsAny(transferDone.writes, readRegions) ||
                     overlapsAny(transferDone.writes, writeRegions) ||
                     overlapsAny(transferDone.reads, writeRegions);
    if (!conflicts || llvm::is_contained(transferDone.waitedBy, stream))
      continue;
    builder.create<zrt::WaitOp>(op->getLoc(), transferDone.done, getStream(op));
    transferDone.waitedBy.push_back(stream);
  }
}

/// The copy of `value` into host memory, when that copy is all that reads
/// it: a kernel moved to the host can then write the target itself, instead
/// of sending its result to the device only for the copy to bring it back.
zrt::CopyOp Offloader::getCopyToHost(Value value, Operation *writer) {
  if (!isa_and_nonnull<zrt::ArenaViewOp>(value.getDefiningOp()) ||
      llvm::is_contained(cast<zrt::LaunchOp>(writer).getIns(), value))
    return {};
  zrt::CopyOp copy;
  for (Operation *user : value.getUsers()) {
    if (user == writer)
      continue;
    auto candidate = dyn_cast<zrt::CopyOp>(user);
    if (copy || !candidate || candidate.getSource() != value ||
        getSpace(candidate.getTarget()) != MemorySpace::host)
      return {};
    copy = candidate;
  }
  if (!copy || copy->getBlock() != writer->getBlock())
    return {};
  // Nothing between them may touch the target.
  Operation *target = getRoot(copy.getTarget()).first;
  if (!target)
    return {};
  for (Operation *op = writer->getNextNode(); op != copy;
       op = op->getNextNode())
    if (isWork(op) && llvm::any_of(op->getOperands(), [&](Value operand) {
          return getRoot(operand).first == target;
        }))
      return {};
  return copy;
}

void Offloader::declareBefore(Value value, Operation *&point) {
  Operation *definition = value.getDefiningOp();
  if (!definition || definition->getBlock() != point->getBlock() ||
      definition->isBeforeInBlock(point))
    return;
  for (Value operand : definition->getOperands())
    declareBefore(operand, point);
  // Already in place: what comes after it goes after it.
  if (definition == point)
    point = point->getNextNode();
  else
    definition->moveBefore(point);
}

Operation *Offloader::findHoistPoint(zrt::LaunchOp launch,
                                     ArrayRef<Value> deviceReads,
                                     ArrayRef<Value> hostTargets,
                                     FlatSymbolRefAttr &collectiveDone) {
  SmallVector<Region> readRegions;
  for (Value in : deviceReads)
    if (std::optional<Region> region = getDeviceRegion(in))
      readRegions.push_back(*region);
  DenseSet<Operation *> hostRead, hostWritten;
  for (Value in : launch.getIns())
    if (getSpace(in) == MemorySpace::host)
      hostRead.insert(getRoot(in).first);
  SmallVector<Value> written(launch.getOuts());
  llvm::append_range(written, hostTargets);
  for (Value out : written)
    if (getSpace(out) == MemorySpace::host)
      hostWritten.insert(getRoot(out).first);
  bool skippedWork = false;
  for (Operation *op = launch->getPrevNode(); op; op = op->getPrevNode()) {
    if (!isWork(op))
      continue;
    auto [reads, writes] = getAccesses(op);
    bool hostConflict =
        llvm::any_of(llvm::concat<Value>(reads, writes),
                     [&](Value value) {
                       return hostWritten.contains(getRoot(value).first);
                     }) ||
        llvm::any_of(writes, [&](Value value) {
          return hostRead.contains(getRoot(value).first);
        });
    bool writesInput = llvm::any_of(writes, [&](Value value) {
      std::optional<Region> region = getDeviceRegion(value);
      return region && llvm::any_of(readRegions, [&](const Region &read) {
               return region->overlaps(read);
             });
    });
    if (!hostConflict && !writesInput) {
      skippedWork = true;
      continue;
    }
    if (hostConflict || !skippedWork)
      return nullptr;
    if (getStream(op) == compute)
      return op;
    // A collective's output: the transfer stream waits for the event its
    // stream records after it.
    for (Operation *next = op->getNextNode(); next != launch;
         next = next->getNextNode())
      if (auto recordOp = dyn_cast<zrt::RecordOp>(next))
        if (recordOp.getStreamAttr() == getStream(op)) {
          collectiveDone = recordOp.getEventAttr();
          return recordOp;
        }
    return nullptr;
  }
  return nullptr;
}

void Offloader::rewriteHostLaunch(zrt::LaunchOp launch) {
  llvm::MapVector<Value, Value> staging;
  DenseSet<Value> writtenInPlace;
  // Results only copied into host memory are written there directly.
  for (Value out : launch.getOuts())
    if (getSpace(out) == MemorySpace::device)
      if (zrt::CopyOp copy = getCopyToHost(out, launch)) {
        Value target = copy.getTarget();
        if (target.getType() != out.getType())
          target = builder.create<zrt::ViewOp>(copy.getLoc(), out.getType(),
                                               target, 0);
        staging[out] = target;
        writtenInPlace.insert(out);
        erased.insert(copy);
        copy.erase();
      }
  SmallVector<Value> deviceReads, deviceWrites;
  for (Value in : launch.getIns())
    if (getSpace(in) == MemorySpace::device && !staging.count(in)) {
      staging[in] = Value();
      deviceReads.push_back(in);
    }
  for (Value out : launch.getOuts())
    if (getSpace(out) == MemorySpace::device && !writtenInPlace.count(out)) {
      if (!llvm::is_contained(deviceWrites, out))
        deviceWrites.push_back(out);
      staging.insert({out, Value()});
    }

  // The transfers in and the kernel go as early as their inputs allow: a
  // reduced gradient shard goes to the host as soon as its reduce-scatter
  // is done, and the update overlaps what the step still has to compute.
  // The copies back stay where the kernel was, where the device arena
  // holds their destination.
  SmallVector<Value> hostTargets;
  for (Value out : writtenInPlace)
    hostTargets.push_back(staging.lookup(out));
  FlatSymbolRefAttr collectiveDone;
  Operation *hoistAfter =
      findHoistPoint(launch, deviceReads, hostTargets, collectiveDone);
  OpBuilder::InsertPoint original = builder.saveInsertionPoint();
  bool transferUnsyncedHere = transferUnsynced;
  if (hoistAfter) {
    // The kernel's buffer references and views are declared where it was.
    Operation *anchor = hoistAfter->getNextNode();
    SmallVector<Value> operands(launch.getIns());
    llvm::append_range(operands, launch.getOuts());
    llvm::append_range(operands, hostTargets);
    for (Value value : operands)
      declareBefore(value, anchor);
    builder.setInsertionPoint(anchor);
    // What the host stream did before this point may still read the
    // staging memory the transfers below write.
    hostUnsynced = true;
  }
  // The compute stream has produced (and waited for) everything the kernel
  // reads: the transfer stream starts from there.
  if (!deviceReads.empty()) {
    handOff(compute, transfer, "to_transfer");
    if (collectiveDone)
      builder.create<zrt::WaitOp>(launch.getLoc(), collectiveDone, transfer);
    syncHostToTransfer();
    for (Value in : deviceReads) {
      staging[in] = newStaging(in.getType(), MemorySpace::host);
      builder.create<zrt::CopyOp>(launch.getLoc(), transfer, in, staging[in]);
    }
    transferUnsynced = true;
  }
  // The kernel runs after every transfer so far: its inputs, and host
  // memory (staging reused, offloaded buffers written) they may touch.
  FlatSymbolRefAttr readsDone;
  if (transferUnsynced || hoistAfter) {
    readsDone = record(transfer, "d2h_done");
    builder.create<zrt::WaitOp>(launch.getLoc(), readsDone, host);
    transferUnsynced = false;
  }
  for (auto &[value, stage] : staging)
    if (!stage)
      stage = newStaging(value.getType(), MemorySpace::host);
  auto mapped = [&](ValueRange values) {
    SmallVector<Value> result;
    for (Value value : values)
      result.push_back(staging.lookup(value) ? staging.lookup(value) : value);
    return result;
  };
  builder.create<zrt::LaunchOp>(
      launch.getLoc(), launch.getKernelAttr(), host, mapped(launch.getIns()),
      mapped(launch.getOuts()), launch.getParamsAttr());
  if (hoistAfter) {
    builder.restoreInsertionPoint(original);
    // The transfers issued between the two points are not ordered before
    // the kernel's host wait.
    transferUnsynced = transferUnsyncedHere;
  }
  // Insert before what follows the old launch, which is about to go.
  builder.setInsertionPoint(launch->getNextNode());
  launch.erase();
  hostUnsynced = true;

  if (!deviceReads.empty()) {
    PendingTransfer readDone{readsDone, {}, {}, {}};
    for (Value in : deviceReads)
      readDone.reads.push_back(*getDeviceRegion(in));
    pending.push_back(std::move(readDone));
  }
  if (deviceWrites.empty())
    return;
  syncHostToTransfer();
  for (Value out : deviceWrites)
    builder.create<zrt::CopyOp>(program.getLoc(), transfer, staging[out], out);
  transferUnsynced = true;
  PendingTransfer writeDone{record(transfer, "h2d_done"), {}, {}, {}};
  for (Value out : deviceWrites)
    writeDone.writes.push_back(*getDeviceRegion(out));
  pending.push_back(std::move(writeDone));
}

void Offloader::rewriteCopy(zrt::CopyOp copy) {
  // A copy between the spaces is a transfer: it moves to the transfer
  // stream, after the work its own stream issued before it.
  handOff(getStream(copy), transfer, "to_transfer");
  syncHostToTransfer();
  auto moved = builder.create<zrt::CopyOp>(copy.getLoc(), transfer,
                                           copy.getSource(), copy.getTarget());
  builder.setInsertionPoint(copy->getNextNode());
  transferUnsynced = true;
  PendingTransfer done{record(transfer, "copy_done"), {}, {}, {}};
  if (std::optional<Region> region = getDeviceRegion(moved.getSource()))
    done.reads.push_back(*region);
  if (std::optional<Region> region = getDeviceRegion(moved.getTarget()))
    done.writes.push_back(*region);
  pending.push_back(std::move(done));
  copy.erase();
}

LogicalResult Offloader::rewriteCollective(Operation *op) {
  auto [reads, writes] = getAccesses(op);
  if (getSpace(writes.front()) == MemorySpace::host)
    return op->emitOpError()
           << "writes a buffer zero-offload placed in host memory; only "
              "buffers a collective reads can be offloaded";
  // The gathered value's shard comes up to a device staging buffer first.
  Value input = reads.front();
  handOff(compute, transfer, "to_transfer");
  syncHostToTransfer();
  Value staged = newStaging(input.getType(), MemorySpace::device);
  builder.create<zrt::CopyOp>(op->getLoc(), transfer, input, staged);
  transferUnsynced = true;
  handOff(transfer, getStream(op), "h2d_done");
  op->setOperand(0, staged);
  return success();
}

LogicalResult Offloader::rewriteBody(zrt::StepOp step) {
  pending.clear();
  hostUnsynced = false;
  transferUnsynced = false;
  SmallVector<Operation *> work;
  for (Operation &op : step.getBody().front())
    if (isWork(&op))
      work.push_back(&op);
  for (Operation *op : work) {
    if (erased.contains(op))
      continue;
    builder.setInsertionPoint(op);
    auto [reads, writes] = getAccesses(op);
    bool touchesHost =
        llvm::any_of(llvm::concat<Value>(reads, writes), [&](Value value) {
          return getSpace(value) == MemorySpace::host;
        });
    // A kernel moved to the host and a copy moved to the transfer stream
    // reach device memory only through the transfer stream, which runs in
    // order after the transfers still pending: they need no wait.
    if (!touchesHost || !isa<zrt::LaunchOp, zrt::CopyOp>(op))
      waitForTransfers(op);
    if (!touchesHost)
      continue;
    if (auto launch = dyn_cast<zrt::LaunchOp>(op))
      rewriteHostLaunch(launch);
    else if (auto copy = dyn_cast<zrt::CopyOp>(op))
      rewriteCopy(copy);
    else if (failed(rewriteCollective(op)))
      return failure();
  }
  // The step ends with every transfer and host kernel complete.
  builder.setInsertionPoint(step.getBody().front().getTerminator());
  if (hostUnsynced)
    handOff(host, compute, "host_done");
  for (PendingTransfer &transferDone : pending)
    if (!llvm::is_contained(transferDone.waitedBy, compute.getAttr()))
      builder.create<zrt::WaitOp>(program.getLoc(), transferDone.done, compute);
  planStaging(step);
  return success();
}

void Offloader::planStaging(zrt::StepOp step) {
  // Positions of the instructions, and for each stream where the compute
  // stream learns that work issued on it so far is complete.
  DenseMap<Operation *, int64_t> position;
  SmallVector<Operation *> instructions;
  for (Operation &op : step.getBody().front())
    if (!isa<zrt::ViewOp, zrt::ArenaViewOp, zrt::BufferRefOp, zrt::YieldOp>(
            op)) {
      position[&op] = instructions.size();
      instructions.push_back(&op);
    }
  int64_t last = std::max<int64_t>(0, instructions.size() - 1);
  // Records per stream and waits per event, in program order.
  llvm::DenseMap<StringAttr, SmallVector<std::pair<int64_t, StringAttr>>>
      recordsOn;
  llvm::DenseMap<StringAttr, SmallVector<std::pair<int64_t, StringAttr>>>
      waitsFor;
  for (auto [at, op] : llvm::enumerate(instructions)) {
    if (auto recordOp = dyn_cast<zrt::RecordOp>(op))
      recordsOn[recordOp.getStreamAttr().getAttr()].push_back(
          {at, recordOp.getEventAttr().getAttr()});
    if (auto wait = dyn_cast<zrt::WaitOp>(op))
      waitsFor[wait.getEventAttr().getAttr()].push_back(
          {at, wait.getStreamAttr().getAttr()});
  }
  // Where the compute stream learns that `stream`'s work issued up to `from`
  // is done: it waits for an event recorded on that stream after it, or for
  // one recorded on a stream that waited for such an event (a staged shard
  // is written by the transfer stream and read by a gather the compute stream
  // waits for).
  std::function<int64_t(int64_t, StringAttr, int)> completionSeenByCompute =
      [&](int64_t from, StringAttr stream, int hops) -> int64_t {
    int64_t best = last;
    for (auto [recordedAt, event] : recordsOn.lookup(stream)) {
      if (recordedAt < from)
        continue;
      if (recordedAt >= best)
        break;
      for (auto [waitedAt, waiter] : waitsFor.lookup(event)) {
        if (waitedAt <= recordedAt || waitedAt >= best)
          continue;
        if (waiter == compute.getAttr())
          best = waitedAt;
        else if (hops > 0)
          best = std::min(best,
                          completionSeenByCompute(waitedAt, waiter, hops - 1));
      }
    }
    return best;
  };
  auto lifetime = [&](zrt::ArenaViewOp view) {
    int64_t begin = last, end = 0;
    SmallVector<Value> values{view};
    while (!values.empty()) {
      Value value = values.pop_back_val();
      for (Operation *user : value.getUsers()) {
        if (auto subview = dyn_cast<zrt::ViewOp>(user)) {
          values.push_back(subview);
          continue;
        }
        int64_t at = position.lookup(user);
        begin = std::min(begin, at);
        end = std::max(end, at);
        // Device staging is read by collectives on their own stream.
        StringAttr stream = getStream(user).getAttr();
        if (view.getSpace() == MemorySpace::device &&
            stream != compute.getAttr())
          end = std::max(end, completionSeenByCompute(at, stream, 2));
      }
    }
    return ArenaRequest{view.getSizeInBytes(), begin, std::max(begin, end)};
  };
  int64_t alignment = static_cast<int64_t>(program.getAlignment());
  for (auto [views, arenaBytes, base] :
       {std::make_tuple(&hostStaging, &hostArena, int64_t{0}),
        std::make_tuple(&deviceStaging, &deviceArena,
                        alignTo(static_cast<int64_t>(program.getArenaBytes()),
                                alignment))}) {
    SmallVector<ArenaRequest> requests;
    for (zrt::ArenaViewOp view : *views)
      requests.push_back(lifetime(view));
    ArenaPlan plan = planArena(requests, alignment);
    for (auto [view, offset] : llvm::zip(*views, plan.offsets))
      view.setOffsetAttr(builder.getI64IntegerAttr(base + offset));
    if (!views->empty())
      *arenaBytes = std::max(*arenaBytes, base + plan.arenaBytes);
    views->clear();
  }
}

LogicalResult Offloader::run(const llvm::StringSet<> &hostBuffers) {
  for (auto buffer : program.getBody().front().getOps<zrt::BufferOp>())
    if (hostBuffers.contains(buffer.getSymName()))
      buffer.setSpace(MemorySpace::host);
  compute = FlatSymbolRefAttr::get(builder.getContext(), "compute");
  // The compute stream is the one the first kernel runs on.
  program.walk([&](zrt::LaunchOp launch) {
    compute = launch.getStreamAttr();
    return WalkResult::interrupt();
  });
  transfer = declareStream("transfer", MemorySpace::device);
  host = declareStream("host", MemorySpace::host);
  for (auto step : program.getBody().front().getOps<zrt::StepOp>())
    if (failed(rewriteBody(step)))
      return failure();
  if (deviceArena > static_cast<int64_t>(program.getArenaBytes()))
    program.setArenaBytesAttr(builder.getI64IntegerAttr(deviceArena));
  if (hostArena > 0)
    program.setHostArenaBytesAttr(builder.getI64IntegerAttr(hostArena));
  return success();
}

/// What one rank of `program` holds where, and moves over the host link.
MemoryPlan measure(zrt::ProgramOp program) {
  MemoryPlan plan;
  for (auto buffer : program.getBody().front().getOps<zrt::BufferOp>())
    (buffer.getSpace() == MemorySpace::host ? plan.hostPersistent
                                            : plan.devicePersistent) +=
        bytesOf(buffer.getMemRefType());
  plan.deviceArena = program.getArenaBytes(MemorySpace::device);
  plan.hostArena = program.getArenaBytes(MemorySpace::host);
  SymbolTableCollection symbols;
  for (auto step : program.getBody().front().getOps<zrt::StepOp>()) {
    int64_t runs =
        step.getKind() == zrt::StepKind::micro ? program.getMicroSteps() : 1;
    step.walk([&](zrt::CopyOp copy) {
      if (zrt::getMemorySpace(copy.getSource(), symbols) !=
          zrt::getMemorySpace(copy.getTarget(), symbols))
        plan.hostLinkBytes += runs * bytesOf(copy.getSource().getType());
    });
  }
  return plan;
}

/// The buffer behind `memref`, if it is a view of one.
zrt::BufferOp getBuffer(Value memref, SymbolTableCollection &symbols) {
  auto ref = dyn_cast_or_null<zrt::BufferRefOp>(getRoot(memref).first);
  if (!ref)
    return {};
  return symbols.lookupNearestSymbolFrom<zrt::BufferOp>(ref,
                                                        ref.getBufferAttr());
}

bool isOptimizerState(zrt::BufferOp buffer) {
  return buffer && (buffer.getRole() == zrt::BufferRole::master ||
                    buffer.getRole() == zrt::BufferRole::slot);
}

/// The offload units of a program: optimizer state per update (largest
/// first), then, at stage 3, sharded parameters that only optimizer kernels
/// and transfers touch (largest first).
SmallVector<OffloadUnit> collectUnits(zrt::ProgramOp program, bool params) {
  SymbolTableCollection symbols;
  SmallVector<OffloadUnit> optimizer, parameters;
  llvm::StringSet<> seen;
  llvm::StringSet<> touchedByOtherKernels;
  program.walk([&](zrt::LaunchOp launch) {
    SmallVector<zrt::BufferOp> state, others;
    SmallVector<Value> operands(launch.getIns());
    llvm::append_range(operands, launch.getOuts());
    for (Value value : operands)
      if (zrt::BufferOp buffer = getBuffer(value, symbols))
        (isOptimizerState(buffer) ? state : others).push_back(buffer);
    if (state.empty()) {
      for (zrt::BufferOp buffer : others)
        touchedByOtherKernels.insert(buffer.getSymName());
      return;
    }
    if (!isUpdateKernel(launch.getKernel()))
      return;
    OffloadUnit unit;
    for (zrt::BufferOp buffer : state) {
      if (llvm::is_contained(unit.buffers, buffer.getSymNameAttr()) ||
          !seen.insert(buffer.getSymName()).second)
        continue;
      unit.buffers.push_back(buffer.getSymNameAttr());
      unit.bytes += bytesOf(buffer.getMemRefType());
      if (auto owner = buffer->getAttrOfType<StringAttr>("zrt.init_name");
          owner && buffer.getRole() == zrt::BufferRole::master)
        unit.tensor = owner.str();
    }
    if (unit.buffers.empty())
      return;
    if (unit.tensor.empty())
      unit.tensor = unit.buffers.front().getValue().rsplit('.').first.str();
    optimizer.push_back(std::move(unit));
  });
  if (params)
    for (auto buffer : program.getBody().front().getOps<zrt::BufferOp>()) {
      auto layout = buffer->getAttrOfType<StringAttr>("zrt.layout");
      if (buffer.getRole() != zrt::BufferRole::param || !layout ||
          layout.getValue() == "replicated" ||
          touchedByOtherKernels.contains(buffer.getSymName()))
        continue;
      OffloadUnit unit;
      unit.isParam = true;
      unit.tensor = buffer.getSymName().str();
      unit.buffers.push_back(buffer.getSymNameAttr());
      unit.bytes = bytesOf(buffer.getMemRefType());
      parameters.push_back(std::move(unit));
    }
  auto largestFirst = [](const OffloadUnit &a, const OffloadUnit &b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.tensor < b.tensor;
  };
  llvm::stable_sort(optimizer, largestFirst);
  llvm::stable_sort(parameters, largestFirst);
  llvm::append_range(optimizer, parameters);
  return optimizer;
}

llvm::StringSet<> getHostBuffers(ArrayRef<OffloadUnit> units) {
  llvm::StringSet<> names;
  for (const OffloadUnit &unit : units)
    for (StringAttr buffer : unit.buffers)
      names.insert(buffer.getValue());
  return names;
}

/// The device bytes of `program` with `units` offloaded, from a scratch
/// copy; fails when the rewrite does.
FailureOr<MemoryPlan> tryOffload(zrt::ProgramOp program,
                                 ArrayRef<OffloadUnit> units) {
  auto scratch = cast<zrt::ProgramOp>(program->clone());
  LogicalResult rewritten = Offloader(scratch).run(getHostBuffers(units));
  MemoryPlan plan = measure(scratch);
  scratch->erase();
  if (failed(rewritten))
    return failure();
  return plan;
}

std::string describe(const OffloadUnit &unit) {
  std::string text = unit.tensor + ": ";
  text += unit.isParam ? "parameter shard" : "optimizer state";
  text += " (";
  for (auto [index, buffer] : llvm::enumerate(unit.buffers))
    text += (index ? ", @" : "@") + buffer.getValue().str();
  return text + ", " + std::to_string(unit.bytes) + " B) in host memory";
}

struct ZeroOffloadPass : zero::impl::ZeroOffloadBase<ZeroOffloadPass> {
  using ZeroOffloadBase::ZeroOffloadBase;

  void runOnOperation() override;

private:
  LogicalResult place(zrt::ProgramOp program);
};

LogicalResult ZeroOffloadPass::place(zrt::ProgramOp program) {
  Location loc = program.getLoc();
  int64_t budget = deviceMemoryBudget;
  int64_t stage = -1;
  if (auto attr = program->getAttrOfType<IntegerAttr>("zrt.zero_stage"))
    stage = attr.getInt();
  if (offload == "optimizer" && stage == 0)
    return emitError(loc) << "zero-offload: offload=optimizer needs ZeRO "
                             "stage 1, 2 or 3 (at stage 0 every rank would "
                             "hold and update the whole optimizer state on "
                             "its host)";
  if (offload == "optimizer+params" && stage != 3)
    return emitError(loc)
           << "zero-offload: offload=optimizer+params needs ZeRO stage 3, "
              "where parameters are sharded; this program is "
           << (stage < 0 ? std::string("not staged")
                         : "stage " + std::to_string(stage));
  SmallVector<OffloadUnit> units = collectUnits(program, /*params=*/stage == 3);
  int64_t optimizerUnits =
      llvm::count_if(units, [](const OffloadUnit &u) { return !u.isParam; });

  ArrayRef<OffloadUnit> chosen;
  std::string reason = "offload=" + offload;
  if (offload == "optimizer")
    chosen = ArrayRef(units).take_front(optimizerUnits);
  else if (offload == "optimizer+params")
    chosen = units;
  if (offload == "auto") {
    // Device bytes with the first `count` units in host memory.
    llvm::DenseMap<int64_t, int64_t> deviceBytes;
    auto evaluate = [&](int64_t count) -> FailureOr<int64_t> {
      if (auto it = deviceBytes.find(count); it != deviceBytes.end())
        return it->second;
      FailureOr<MemoryPlan> plan =
          tryOffload(program, ArrayRef(units).take_front(count));
      if (failed(plan))
        return failure();
      return deviceBytes[count] = plan->deviceBytes();
    };
    auto fits = [&](int64_t count) -> FailureOr<bool> {
      FailureOr<int64_t> bytes = evaluate(count);
      if (failed(bytes))
        return failure();
      return *bytes <= budget;
    };
    int64_t total = units.size();
    FailureOr<bool> fitsAsIs = fits(0);
    if (failed(fitsAsIs))
      return failure();
    std::optional<int64_t> found;
    if (*fitsAsIs)
      found = 0;
    FailureOr<bool> fitsOptimizer = fits(optimizerUnits);
    if (failed(fitsOptimizer))
      return failure();
    if (!found && *fitsOptimizer) {
      // Each optimizer tensor moved takes its bytes off the device and adds
      // nothing there, so the fewest that fit are found by bisection.
      int64_t low = 1, high = optimizerUnits;
      while (low < high) {
        int64_t middle = (low + high) / 2;
        FailureOr<bool> ok = fits(middle);
        if (failed(ok))
          return failure();
        if (*ok)
          high = middle;
        else
          low = middle + 1;
      }
      found = low;
    }
    // A parameter moved also needs device staging for its gathers, so the
    // device bytes need not fall with every one: they are tried in order.
    for (int64_t count = optimizerUnits + 1; !found && count <= total;
         ++count) {
      FailureOr<bool> ok = fits(count);
      if (failed(ok))
        return failure();
      if (*ok)
        found = count;
    }
    if (!found) {
      int64_t least = std::numeric_limits<int64_t>::max();
      for (auto [count, bytes] : deviceBytes)
        least = std::min(least, bytes);
      std::string tried =
          "nothing in host memory (" + std::to_string(deviceBytes[0]) + " B)";
      if (optimizerUnits > 0)
        tried += ", all optimizer state (" +
                 std::to_string(deviceBytes[optimizerUnits]) + " B)";
      if (total > optimizerUnits)
        tried += ", and then the sharded parameters one by one, largest "
                 "first (all of them: " +
                 std::to_string(deviceBytes[total]) + " B)";
      return emitError(loc)
             << "zero-offload: no placement fits a device-memory-budget of "
             << budget
             << " B per rank: the least device memory this program can use "
                "is "
             << least << " B, short by " << least - budget << " B; tried "
             << tried;
    }
    chosen = ArrayRef(units).take_front(*found);
    reason = "offload=auto, the device needs " +
             std::to_string(deviceBytes[0]) + " B without offload";
  }

  if (!chosen.empty() && failed(Offloader(program).run(getHostBuffers(chosen))))
    return failure();
  MemoryPlan plan = measure(program);
  plan.budget = budget;
  bool params =
      llvm::any_of(chosen, [](const OffloadUnit &u) { return u.isParam; });
  plan.offload = chosen.empty() ? "none"
                 : params       ? "optimizer+params"
                                : "optimizer";
  for (const OffloadUnit &unit : chosen)
    plan.decisions.push_back(describe(unit) + ": " + reason);
  if (offload == "auto" && chosen.size() < units.size())
    plan.decisions.push_back(
        (chosen.empty() ? "all " : "the other ") +
        std::to_string(units.size() - chosen.size()) + " of " +
        std::to_string(units.size()) +
        " offloadable tensors stay in device memory: the budget holds them");
  if (budget > 0 && plan.deviceBytes() > budget) {
    InFlightDiagnostic diag =
        emitError(loc) << "zero-offload: with offload=" << offload
                       << " the device needs " << plan.deviceBytes()
                       << " B per rank (" << plan.devicePersistent
                       << " B of buffers, " << plan.deviceArena
                       << " B of arena), over the device-memory-budget of "
                       << budget << " B by " << plan.deviceBytes() - budget
                       << " B";
    if (offload != "auto")
      diag << "; offload=auto finds the least offload that fits, if any";
    return diag;
  }
  program->setAttr("zrt.memory_plan", plan.toAttr(program.getContext()));
  return success();
}

void ZeroOffloadPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (!llvm::is_contained({StringRef("none"), StringRef("optimizer"),
                           StringRef("optimizer+params"), StringRef("auto")},
                          StringRef(offload))) {
    emitError(module.getLoc())
        << "zero-offload: offload must be none, optimizer, optimizer+params "
           "or auto, got '"
        << offload << "'";
    return signalPassFailure();
  }
  if (deviceMemoryBudget < 0) {
    emitError(module.getLoc())
        << "zero-offload: device-memory-budget must be a number of bytes "
           "(0 for none), got "
        << static_cast<int64_t>(deviceMemoryBudget);
    return signalPassFailure();
  }
  if (offload == "auto" && deviceMemoryBudget == 0) {
    emitError(module.getLoc())
        << "zero-offload: offload=auto needs a device-memory-budget to fit";
    return signalPassFailure();
  }
  if (offload == "none" && deviceMemoryBudget == 0)
    return markAllAnalysesPreserved();
  auto programs = module.getOps<zrt::ProgramOp>();
  if (programs.empty()) {
    emitError(module.getLoc())
        << "zero-offload: expected a zrt.program; run zero-lower-to-runtime "
           "first (zero-pipeline with lower-to-runtime does)";
    return signalPassFailure();
  }
  for (zrt::ProgramOp program : llvm::make_early_inc_range(programs))
    if (failed(place(program)))
      return signalPassFailure();
}

} // namespace
