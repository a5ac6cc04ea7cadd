//===- OffloadRewriter.cpp - Host memory in a lowered program -------------===//
//
// The device arena's offsets are kept: a device instruction that touches
// bytes a transfer still reads or writes waits for that transfer instead.
// The transfer stream runs in program order, and the host stream waits for
// it before every kernel and it for the host stream before touching host
// memory the host may still use, which is what lets staging memory be
// planned from program positions.
//
//===----------------------------------------------------------------------===//

#include "OffloadRewriter.h"

#include "zero/analysis/ArenaPlanner.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

#include <functional>

using namespace mlir;
using namespace zero;
using zrt::MemorySpace;

int64_t offload::bytesOf(Type type) {
  auto memref = cast<MemRefType>(type);
  return memref.getNumElements() * static_cast<int64_t>(llvm::divideCeil(
                                       memref.getElementTypeBitWidth(), 8));
}

bool offload::isUpdateKernel(StringRef kernel) {
  return llvm::is_contained({StringRef("train.sgd"), StringRef("train.adam"),
                             StringRef("train.adamw"),
                             StringRef("train.sgd_momentum")},
                            kernel);
}

std::pair<Operation *, int64_t> offload::getRoot(Value memref) {
  int64_t offset = 0;
  while (auto view = memref.getDefiningOp<zrt::ViewOp>()) {
    offset += static_cast<int64_t>(view.getOffset());
    memref = view.getSource();
  }
  return {memref.getDefiningOp(), offset};
}

namespace {

using offload::bytesOf;
using offload::getRoot;

int64_t alignTo(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
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
  /// The staging's bytes live at once (the most over the bodies), by arena.
  int64_t hostStagingLive = 0, deviceStagingLive = 0;
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
    // Transfers already rewritten after the hoist point were placed with no
    // host work before them, and planStaging may reuse staging this kernel
    // reads for theirs: they must wait for it.
    hostUnsynced = true;
    syncHostToTransfer();
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
  for (auto [views, arenaBytes, live, base] :
       {std::make_tuple(&hostStaging, &hostArena, &hostStagingLive, int64_t{0}),
        std::make_tuple(&deviceStaging, &deviceArena, &deviceStagingLive,
                        alignTo(static_cast<int64_t>(program.getArenaBytes()),
                                alignment))}) {
    SmallVector<ArenaRequest> requests;
    for (zrt::ArenaViewOp view : *views)
      requests.push_back(lifetime(view));
    ArenaPlan plan = planArena(requests, alignment);
    for (auto [view, offset] : llvm::zip(*views, plan.offsets))
      view.setOffsetAttr(builder.getI64IntegerAttr(base + offset));
    if (!views->empty()) {
      *arenaBytes = std::max(*arenaBytes, base + plan.arenaBytes);
      *live = std::max(*live, plan.liveBytesLowerBound);
    }
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
  int64_t loweredArena = static_cast<int64_t>(program.getArenaBytes());
  for (auto step : program.getBody().front().getOps<zrt::StepOp>())
    if (failed(rewriteBody(step)))
      return failure();
  if (deviceArena > static_cast<int64_t>(program.getArenaBytes()))
    program.setArenaBytesAttr(builder.getI64IntegerAttr(deviceArena));
  if (hostArena > 0)
    program.setHostArenaBytesAttr(builder.getI64IntegerAttr(hostArena));
  // As zero-lower-to-runtime records its arena: the plan beside the header.
  program->setAttr(zrt::ZrtDialect::getPlannedArenaAttrName(),
                   builder.getI64IntegerAttr(program.getArenaBytes()));
  program->setAttr(
      zrt::ZrtDialect::getPlannedHostArenaAttrName(),
      builder.getI64IntegerAttr(program.getArenaBytes(MemorySpace::host)));
  // The liveness figures zero-run --check-memory holds the writes against,
  // apart from the placement: the device staging sits above the arena
  // zero-lower-to-runtime planned, so its peak adds to that arena's.
  if (deviceStagingLive > 0) {
    program->setAttr(zrt::ZrtDialect::getStagingBaseAttrName(),
                     builder.getI64IntegerAttr(
                         alignTo(loweredArena, program.getAlignment())));
    int64_t live = 0;
    if (auto earlier = program->getAttrOfType<IntegerAttr>(
            zrt::ZrtDialect::getLiveBytesAttrName()))
      live = earlier.getInt();
    program->setAttr(zrt::ZrtDialect::getLiveBytesAttrName(),
                     builder.getI64IntegerAttr(live + deviceStagingLive));
  }
  if (hostStagingLive > 0)
    program->setAttr(zrt::ZrtDialect::getLiveHostBytesAttrName(),
                     builder.getI64IntegerAttr(hostStagingLive));
  return success();
}

} // namespace

LogicalResult offload::placeInHostMemory(zrt::ProgramOp program,
                                         const llvm::StringSet<> &hostBuffers) {
  return Offloader(program).run(hostBuffers);
}

MemoryPlan offload::measure(zrt::ProgramOp program) {
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
