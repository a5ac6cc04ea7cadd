//===- ZeroSchedule.cpp - Prefetch stage-3 gathers under a live bound -----===//
//
// zero-shard gathers each parameter right before its use, so the compute
// stream waits for every gather in full. Moving a gather up lets it run
// while earlier layers compute, and keeps its tensor alive longer: the
// prefetch window says how far ahead to go, the live bound how much
// gathered memory that may cost. Both are decided here, over the whole
// block at once, the same way on every rank; the runtime only follows.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/GatheredParameters.h"
#include "zero/analysis/TrainingStep.h"
#include "zero/passes/Passes.h"

namespace zero {
#define GEN_PASS_DEF_ZEROSCHEDULE
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

/// The first operation of `block` that computes with `value`, looking
/// through the views that alias it; -1 when nothing in the block does.
int64_t getFirstUse(Value value, Block &block,
                    const DenseMap<Operation *, int64_t> &position) {
  int64_t first = -1;
  for (Operation *user : value.getUsers()) {
    Operation *inBlock = block.findAncestorOpInBlock(*user);
    if (!inBlock)
      continue;
    int64_t at = position.lookup(inBlock);
    bool isView = inBlock == user && isa<train::ReshapeOp>(user);
    if (isView)
      for (Value result : user->getResults())
        if (int64_t viewUse = getFirstUse(result, block, position);
            viewUse >= 0)
          at = viewUse;
    if (first < 0 || at < first)
      first = at;
  }
  return first;
}

/// One parameter gather of a block, with where it is and where it is
/// needed.
struct Unit {
  ParameterGather gather;
  /// Index of its first operation (the pack, else the gather).
  int64_t issue;
  int64_t gatherAt;
  /// Index of the first operation that computes with what it gathers.
  int64_t need;
  /// Index of the operation it is moved in front of; -1 when it stays.
  int64_t target = -1;
};

class BlockScheduler {
public:
  BlockScheduler(Block &block, int64_t prefetchBytes, int64_t bound)
      : block(block), prefetchBytes(prefetchBytes), bound(bound) {}

  LogicalResult run();

private:
  void sinkUnpacks();
  void collectUnits();
  LogicalResult checkBound(const GatheredLiveness &liveness);
  void planMoves(SmallVector<int64_t> live);
  void materialize();
  void putPacksFirst();

  Block &block;
  int64_t prefetchBytes, bound;
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> position;
  SmallVector<Unit> units;
};

void BlockScheduler::sinkUnpacks() {
  DenseMap<Operation *, int64_t> order;
  for (auto [index, op] : llvm::enumerate(block))
    order[&op] = index;
  for (auto gatherOp : llvm::to_vector(block.getOps<dist::AllGatherOp>())) {
    std::optional<ParameterGather> gather = getParameterGather(gatherOp);
    if (!gather || !gather->unpack || gather->unpack->getBlock() != &block)
      continue;
    int64_t firstUse = -1;
    for (Value member : gather->unpack.getResults())
      if (int64_t at = getFirstUse(member, block, order);
          at >= 0 && (firstUse < 0 || at < firstUse))
        firstUse = at;
    if (firstUse <= order.lookup(gather->unpack))
      continue;
    // The members' views (reshapes of flat members) follow the unpack.
    Operation *firstUser = &*std::next(block.begin(), firstUse);
    gather->unpack->moveBefore(firstUser);
    for (Value member : gather->unpack.getResults())
      for (Operation *user : llvm::to_vector(member.getUsers()))
        if (isa<train::ReshapeOp>(user) && user->getBlock() == &block &&
            order.lookup(user) < firstUse)
          user->moveBefore(firstUser);
  }
}

void BlockScheduler::collectUnits() {
  for (auto [index, op] : llvm::enumerate(block)) {
    ops.push_back(&op);
    position[&op] = index;
  }
  for (auto gatherOp : block.getOps<dist::AllGatherOp>()) {
    std::optional<ParameterGather> gather = getParameterGather(gatherOp);
    if (!gather || (gather->pack && gather->pack->getBlock() != &block))
      continue;
    Unit unit{*gather,
              position.lookup(gather->pack ? gather->pack.getOperation()
                                           : gatherOp.getOperation()),
              position.lookup(gatherOp), 0};
    unit.need = gather->unpack && gather->unpack->getBlock() == &block
                    ? position.lookup(gather->unpack)
                    : getFirstUse(gatherOp.getResult(), block, position);
    if (unit.need < 0)
      continue;
    units.push_back(unit);
  }
  llvm::stable_sort(
      units, [](const Unit &a, const Unit &b) { return a.need < b.need; });
}

LogicalResult BlockScheduler::checkBound(const GatheredLiveness &liveness) {
  if (bound == 0 || liveness.getPeak() <= bound)
    return success();
  Unit *largest = nullptr;
  for (Unit &unit : units)
    if (!largest || unit.gather.bytes > largest->gather.bytes)
      largest = &unit;
  if (largest && largest->gather.bytes > bound)
    return largest->gather.gather.emitError()
           << "zero-schedule: max-live-gathered-bytes is " << bound
           << " bytes, smaller than " << describeGather(largest->gather)
           << ", which gathers " << largest->gather.bytes
           << " bytes at once; raise the bound"
           << (largest->gather.pack ? " or lower allgather-bucket-bytes" : "");
  Operation *peakOp = liveness.getPeakOp();
  int64_t index = liveness.position.lookup(peakOp);
  InFlightDiagnostic diag =
      peakOp->emitError()
      << "zero-schedule: max-live-gathered-bytes is " << bound
      << " bytes, but the step holds " << liveness.getPeak()
      << " bytes of gathered parameters alive here before any prefetch; "
         "raise the bound, keep regather-in-backward on, or lower "
         "allgather-bucket-bytes (a bucket and its members are alive "
         "together while it is unpacked)";
  for (const GatheredLiveness::Interval &interval : liveness.getLiveAt(index))
    diag.attachNote(interval.value.getLoc())
        << interval.name << ": " << interval.bytes
        << " gathered bytes alive from here";
  return failure();
}

void BlockScheduler::planMoves(SmallVector<int64_t> live) {
  if (prefetchBytes == 0)
    return;
  for (size_t i = 0; i < units.size(); ++i) {
    Unit &unit = units[i];
    // The earliest unit at whose use this one may be issued: the gathers
    // issued ahead of the compute, this one included, fit the window.
    size_t earliest = i;
    int64_t ahead = 0;
    while (earliest > 0 &&
           ahead + units[earliest].gather.bytes <= prefetchBytes)
      ahead += units[earliest--].gather.bytes;
    for (size_t j = earliest; j < i; ++j) {
      int64_t target = units[j].need;
      if (target >= unit.issue)
        break;
      // Its inputs (shards loaded at the top of the step) must exist there.
      Operation *first = ops[unit.issue];
      bool inputsReady = llvm::all_of(first->getOperands(), [&](Value input) {
        Operation *def = input.getDefiningOp();
        return !def || def->getBlock() != &block ||
               position.lookup(def) < target;
      });
      if (!inputsReady)
        continue;
      int64_t bytes = unit.gather.bytes;
      if (bound != 0 && *std::max_element(live.begin() + target,
                                          live.begin() + unit.gatherAt) +
                                bytes >
                            bound)
        continue;
      for (int64_t at = target; at < unit.gatherAt; ++at)
        live[at] += bytes;
      unit.target = target;
      break;
    }
  }
}

void BlockScheduler::materialize() {
  // Units are in order of need: those moved in front of one operation
  // keep that order, so the communication stream runs them as needed.
  for (const Unit &unit : units) {
    if (unit.target < 0)
      continue;
    Operation *before = ops[unit.target];
    if (unit.gather.pack)
      unit.gather.pack->moveBefore(before);
    unit.gather.gather->moveBefore(before);
  }
}

void BlockScheduler::putPacksFirst() {
  // A pack between two gathers is compute: the lowering would hand the
  // second gather to the communication stream separately, after waiting for
  // the first. Packs read shards only, so they can go first; gathers and
  // the views of what they gather keep their order.
  DenseSet<Operation *> unitOps;
  for (const Unit &unit : units) {
    unitOps.insert(unit.gather.gather);
    if (unit.gather.pack)
      unitOps.insert(unit.gather.pack);
    for (Operation *user : unit.gather.gather->getUsers())
      if (isa<train::ReshapeOp>(user))
        unitOps.insert(user);
  }
  Operation *firstOfRun = nullptr;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (!unitOps.contains(&op))
      firstOfRun = nullptr;
    else if (!isa<dist::PackOp>(op))
      firstOfRun = firstOfRun ? firstOfRun : &op;
    else if (firstOfRun)
      op.moveBefore(firstOfRun);
  }
}

LogicalResult BlockScheduler::run() {
  sinkUnpacks();
  collectUnits();
  if (units.empty())
    return success();
  GatheredLiveness liveness(block);
  if (failed(checkBound(liveness)))
    return failure();
  planMoves(liveness.liveAt);
  materialize();
  putPacksFirst();
  return success();
}

struct ZeroSchedulePass : zero::impl::ZeroScheduleBase<ZeroSchedulePass> {
  using ZeroScheduleBase::ZeroScheduleBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto [name, bytes] :
         {std::pair<StringRef, int64_t>{"prefetch-bytes", prefetchBytes},
          {"max-live-gathered-bytes", maxLiveGatheredBytes}})
      if (bytes < 0) {
        mlir::emitError(module.getLoc())
            << "zero-schedule: " << name << " must not be negative, got "
            << bytes;
        return signalPassFailure();
      }
    for (func::FuncOp function : getStepFunctions(module)) {
      SmallVector<Block *> blocks;
      function.walk([&](Block *block) { blocks.push_back(block); });
      for (Block *block : blocks)
        if (failed(BlockScheduler(*block, prefetchBytes, maxLiveGatheredBytes)
                       .run()))
          return signalPassFailure();
    }
  }
};

} // namespace
