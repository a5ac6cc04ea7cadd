//===- ZeroSchedule.cpp - Prefetch stage-3 gathers under a live bound -----===//
//
// zero-shard gathers each parameter right before its use, so the compute
// stream waits for every gather in full. Moving a gather up lets it run
// while earlier layers compute, and keeps its tensor alive longer: the
// prefetch window says how far ahead to go, the live bound how much
// gathered memory that may cost. Both are decided here, over the whole
// block at once, the same way on every rank; the runtime only follows.
// Given the machine the step is compiled for, the pass needs no window: it
// predicts each gather's time and the compute before its use, and issues
// the gather just early enough to be hidden, which costs the least memory.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/GatheredParameters.h"
#include "zero/analysis/MachineModel.h"
#include "zero/analysis/TrainingStep.h"
#include "zero/dialects/train/TrainOps.h"
#include "zero/passes/Passes.h"

#include "llvm/ADT/SetVector.h"

#include <limits>

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

/// Bytes of every tensor `op` reads and writes, and of the largest of them.
std::pair<double, double> getOperandAndResultBytes(Operation *op) {
  double total = 0, largest = 0;
  auto count = [&](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return;
    double bytes = static_cast<double>(getTensorBytes(tensor));
    total += bytes;
    largest = std::max(largest, bytes);
  };
  llvm::for_each(op->getOperandTypes(), count);
  llvm::for_each(op->getResultTypes(), count);
  return {total, largest};
}

/// Predicted seconds of each operation of a block on the compute stream and
/// on the link, the way zero-report predicts the lowered step: a kernel per
/// computing op, a copy per bucket pack and copy-out, nothing for loads,
/// stores and views.
struct BlockCosts {
  BlockCosts(ArrayRef<Operation *> ops, const MachineModel &machine) {
    compute.push_back(0);
    communication.push_back(0);
    for (Operation *op : ops) {
      auto [computeSeconds, linkSeconds] = predict(op, machine);
      compute.push_back(compute.back() + computeSeconds);
      communication.push_back(communication.back() + linkSeconds);
    }
  }

  /// Seconds of compute, and of communication, of the operations in
  /// [from, to).
  double getCompute(int64_t from, int64_t to) const {
    return compute[to] - compute[from];
  }
  double getCommunication(int64_t from, int64_t to) const {
    return communication[to] - communication[from];
  }

private:
  static std::pair<double, double> predict(Operation *op,
                                           const MachineModel &machine) {
    if (auto collective = dyn_cast<dist::CollectiveOpInterface>(op)) {
      if (isa<dist::SliceOp>(op))
        return {0.0, 0.0};
      StringRef kind = op->getName().stripDialect();
      kind.consume_back("_start");
      // Like the runtime's, a collective's size is its full buffer.
      return {0.0,
              machine.collectiveSeconds(kind, collective.getPlacementAxis(),
                                        collective.getGroupSize(),
                                        getOperandAndResultBytes(op).second)};
    }
    // Packing a bucket and copying a rank-major one out copy the bucket; an
    // unpack without shards is a view.
    auto unpack = dyn_cast<dist::UnpackOp>(op);
    if (isa<dist::PackOp>(op) || (unpack && unpack.getShards()))
      return {machine.copySeconds(getOperandAndResultBytes(op).second, false),
              0.0};
    if (!isa<train::TrainDialect>(op->getDialect()) ||
        isa<train::LoadOp, train::StoreOp, train::ReshapeOp,
            train::StepIndexOp>(op))
      return {0.0, 0.0};
    double bytes = getOperandAndResultBytes(op).first;
    if (auto matmul = dyn_cast<train::MatmulOp>(op))
      return {machine.matmulSeconds(cast<ShapedType>(matmul.getLhs().getType()),
                                    cast<ShapedType>(matmul.getRhs().getType()),
                                    cast<ShapedType>(matmul.getType()),
                                    matmul.getTransposeA(), bytes, false),
              0.0};
    // Fused attention, as zero-report's simulation counts it.
    auto attention = dyn_cast<train::AttentionOp>(op);
    auto attentionGrad = dyn_cast<train::AttentionGradOp>(op);
    if (attention || attentionGrad) {
      auto query =
          cast<ShapedType>(attention ? attention.getQuery().getType()
                                     : attentionGrad.getQuery().getType());
      bool causal =
          attention ? attention.getCausal() : attentionGrad.getCausal();
      bool seqMajor =
          attention ? attention.getSeqMajor() : attentionGrad.getSeqMajor();
      return {machine.kernelSeconds(
                  bytes, getAttentionFlops(query, causal, !attention, seqMajor),
                  query.getElementType(), false, machine.attentionEfficiency),
              0.0};
    }
    return {machine.kernelSeconds(bytes, 0.0, Type(), false), 0.0};
  }

  SmallVector<double> compute, communication;
};

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
  BlockScheduler(Block &block, int64_t prefetchBytes, int64_t bound,
                 const MachineModel *machine)
      : block(block), prefetchBytes(prefetchBytes), bound(bound),
        machine(machine) {}

  LogicalResult run();

private:
  void sinkUnpacks();
  void collectUnits();
  LogicalResult checkBound(const GatheredLiveness &liveness);
  void planMoves(SmallVector<int64_t> live);
  void placeUnit(size_t i, const BlockCosts *costs,
                 SmallVectorImpl<int64_t> &live, int64_t latest);
  void placeFirstLevel(size_t i, const BlockCosts *costs,
                       SmallVectorImpl<int64_t> &live);
  size_t getHidingUnit(const BlockCosts &costs, size_t i,
                       size_t earliest) const;
  void materialize();
  void putPacksFirst();

  Block &block;
  int64_t prefetchBytes, bound;
  const MachineModel *machine;
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> position;
  SmallVector<Unit> units;
  /// For the first gather of a two-level one (across nodes), the units of
  /// the gathers that continue it within the node, by its gather op.
  DenseMap<Operation *, SmallVector<size_t>> continuations;
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
    // The members' views follow the unpack: reshapes of flat members, and
    // reshapes of those (an imported module's [1, 1, S, D] table viewed as
    // [1, S, D]), each after the view it reads.
    Operation *firstUser = &*std::next(block.begin(), firstUse);
    gather->unpack->moveBefore(firstUser);
    SmallVector<Value> viewed(gather->unpack.getResults());
    while (!viewed.empty()) {
      Value value = viewed.pop_back_val();
      SmallVector<Operation *> views;
      for (Operation *user : value.getUsers())
        if (isa<train::ReshapeOp>(user) && user->getBlock() == &block &&
            order.lookup(user) < firstUse)
          views.push_back(user);
      llvm::sort(views, [&](Operation *a, Operation *b) {
        return order.lookup(a) < order.lookup(b);
      });
      for (Operation *view : views) {
        view->moveBefore(firstUser);
        viewed.push_back(view->getResult(0));
      }
    }
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
  for (auto [index, unit] : llvm::enumerate(units))
    if (unit.gather.priorGather)
      continuations[unit.gather.priorGather].push_back(index);
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

/// The latest unit in [earliest, i) at whose use unit `i` can be issued and
/// still be done before its own use: the compute from there covers this
/// gather and every collective the link has to run before it. When none
/// does, the link is the bottleneck: one gather ahead keeps it busy, and
/// going further would only hold more memory.
size_t BlockScheduler::getHidingUnit(const BlockCosts &costs, size_t i,
                                     size_t earliest) const {
  int64_t need = units[i].need;
  for (size_t j = i; j-- > earliest;) {
    int64_t target = units[j].need;
    if (target >= units[i].issue)
      continue;
    if (costs.getCompute(target, need) >= costs.getCommunication(target, need))
      return j;
  }
  return i > earliest ? i - 1 : i;
}

void BlockScheduler::planMoves(SmallVector<int64_t> live) {
  // A machine whose collectives progress only while the compute stream
  // waits (CPU ranks over Open MPI) hides nothing: an early gather would
  // cost memory for no time.
  if (machine ? !machine->asyncCollectives : prefetchBytes == 0)
    return;
  std::optional<BlockCosts> costs;
  if (machine)
    costs.emplace(ops, *machine);
  const BlockCosts *model = costs ? &*costs : nullptr;
  // The gathers within the node of a two-level gather are placed first,
  // each as a gather of its own; the gather across nodes they continue is
  // then issued early enough to be done where the earliest of them starts.
  for (size_t i = 0; i < units.size(); ++i)
    if (!continuations.contains(units[i].gather.gather))
      placeUnit(i, model, live, std::numeric_limits<int64_t>::max());
  for (size_t i = 0; i < units.size(); ++i)
    if (continuations.contains(units[i].gather.gather))
      placeFirstLevel(i, model, live);
}

void BlockScheduler::placeUnit(size_t i, const BlockCosts *costs,
                               SmallVectorImpl<int64_t> &live, int64_t latest) {
  Unit &unit = units[i];
  // The earliest unit at whose use this one may be issued: the gathers
  // issued ahead of the compute, this one included, fit the window.
  size_t earliest = i;
  int64_t ahead = 0;
  while (earliest > 0 &&
         (prefetchBytes == 0 ||
          ahead + units[earliest].gather.bytes <= prefetchBytes))
    ahead += units[earliest--].gather.bytes;
  size_t start = costs ? getHidingUnit(*costs, i, earliest) : earliest;
  // What the gather across nodes makes is ready where this gather within
  // the node goes: placeFirstLevel sees to it.
  Operation *prior = unit.gather.priorGather;
  Operation *priorUnpack = nullptr;
  if (prior)
    if (std::optional<ParameterGather> first =
            getParameterGather(unit.gather.priorGather))
      priorUnpack = first->unpack;
  for (size_t j = start; j < i; ++j) {
    int64_t target = units[j].need;
    if (target >= unit.issue || target > latest)
      break;
    // Its inputs (shards loaded at the top of the step) must exist there.
    Operation *first = ops[unit.issue];
    bool inputsReady = llvm::all_of(first->getOperands(), [&](Value input) {
      Operation *def = input.getDefiningOp();
      return !def || def->getBlock() != &block ||
             position.lookup(def) < target || def == prior ||
             def == priorUnpack;
    });
    if (!inputsReady)
      continue;
    int64_t bytes = unit.gather.bytes;
    if (bound != 0 &&
        *std::max_element(live.begin() + target, live.begin() + unit.gatherAt) +
                bytes >
            bound)
      continue;
    for (int64_t at = target; at < unit.gatherAt; ++at)
      live[at] += bytes;
    unit.target = target;
    break;
  }
}

void BlockScheduler::placeFirstLevel(size_t i, const BlockCosts *costs,
                                     SmallVectorImpl<int64_t> &live) {
  Unit &unit = units[i];
  SmallVector<size_t> seconds = continuations.lookup(unit.gather.gather);
  // Where the first gather within the node starts: this one's result is
  // needed there (by the copy out of its bucket, or the gather itself).
  int64_t needed = unit.need;
  for (size_t second : seconds)
    needed = std::min(needed, units[second].target >= 0 ? units[second].target
                                                        : units[second].issue);
  unit.need = needed;
  placeUnit(i, costs, live, needed);
  // Left where it is, past a gather within the node moved up, that one
  // cannot go there: it and the others in front of this one stay.
  if (unit.target < 0 && unit.gatherAt >= needed)
    for (size_t second : seconds)
      if (units[second].target >= 0 && units[second].target <= unit.gatherAt)
        units[second].target = -1;
}

void BlockScheduler::materialize() {
  // Each operation gets a place in the new order: one that stays keeps its
  // index; one moved in front of the operation at index T goes between T-1
  // and T, after those moved there before it. Targets are indices of the
  // original order, so an operation that moves itself (a gather continued
  // within the node) is still a valid target.
  DenseMap<Operation *, std::pair<int64_t, int64_t>> place;
  int64_t moves = 0;
  auto moveBefore = [&](Operation *op, int64_t target) {
    place[op] = {2 * target - 1, moves++};
  };
  // A two-level gather's first gather goes where it was placed, and the
  // copy out of its bucket in front of the earliest gather that continues
  // it, so the compute stream waits for it there and no earlier.
  for (const Unit &unit : units) {
    auto seconds = continuations.find(unit.gather.gather);
    if (seconds == continuations.end())
      continue;
    if (unit.target >= 0) {
      if (unit.gather.pack)
        moveBefore(unit.gather.pack, unit.target);
      moveBefore(unit.gather.gather, unit.target);
    }
    int64_t earliest = -1;
    for (size_t second : seconds->second)
      if (int64_t target = units[second].target;
          target >= 0 && (earliest < 0 || target < earliest))
        earliest = target;
    if (earliest >= 0 && unit.gather.unpack)
      moveBefore(unit.gather.unpack, earliest);
  }
  // Units are in order of need: those moved in front of one operation
  // keep that order, so the communication stream runs them as needed.
  for (const Unit &unit : units) {
    if (unit.target < 0 || continuations.contains(unit.gather.gather))
      continue;
    if (unit.gather.pack)
      moveBefore(unit.gather.pack, unit.target);
    moveBefore(unit.gather.gather, unit.target);
  }
  if (place.empty())
    return;
  SmallVector<std::pair<std::pair<int64_t, int64_t>, Operation *>> order;
  for (auto [index, op] : llvm::enumerate(ops)) {
    auto moved = place.find(op);
    order.push_back(
        {moved == place.end()
             ? std::make_pair(2 * static_cast<int64_t>(index), int64_t{0})
             : moved->second,
         op});
  }
  llvm::sort(order, llvm::less_first());
  Operation *terminator = block.getTerminator();
  for (auto &[key, op] : order)
    if (op != terminator)
      op->moveBefore(terminator);
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

/// Whether `op` exchanges data with other ranks (`dist.slice`, a collective
/// by interface, only takes this rank's part).
bool isCommunication(Operation *op) {
  return isa<dist::CollectiveOpInterface>(op) && !isa<dist::SliceOp>(op);
}

/// Whether `gather` gathers the results of optimizer updates (through casts,
/// views and the pack of a bucket): the stage 1-2 gathers of updated shards.
bool gathersUpdatedShards(dist::AllGatherOp gather) {
  SmallVector<Value> inputs{gather.getInput()};
  DenseSet<Operation *> seen;
  while (!inputs.empty()) {
    Operation *def = inputs.pop_back_val().getDefiningOp();
    if (!def || !seen.insert(def).second)
      continue;
    if (isUpdateOp(def))
      return true;
    if (isa<dist::PackOp, train::CastOp, train::ReshapeOp>(def))
      llvm::append_range(inputs, def->getOperands());
  }
  return false;
}

/// Whether `op`'s results alias its first operand in the lowering.
bool isView(Operation *op) {
  auto unpack = dyn_cast<dist::UnpackOp>(op);
  return isa<train::ReshapeOp, dist::SliceOp>(op) ||
         (unpack && !unpack.getShards());
}

/// At stages 1-2 the optimizer runs after the whole backward and the
/// updated shards are gathered after every update, where nothing is left to
/// compute behind them. Each update needs only its own reduced gradient, so
/// on a machine whose collectives overlap compute the updates and the
/// gathers of their results move up into the backward, each as early as its
/// inputs allow, and the gathers run behind the rest of the backward. The
/// copies of the gathered parameters into place stay at the end, where the
/// compute stream waits for them.
class UpdateHoister {
public:
  UpdateHoister(Block &block, const MachineModel &machine)
      : block(block), machine(machine) {}

  void run();

private:
  /// The persistent tensors `op` (or an op nested in it) loads, stores or
  /// reads through a view of a load.
  SmallVector<StringAttr> getTouchedStates(Operation *op) const;
  /// The operations of the block that define what `op` uses.
  SmallVector<Operation *> getDefinitions(Operation *op) const;
  void recordViews(Operation *op);
  /// Moves `inputs` (and theirs, recursively) in front of `user` where they
  /// are after it.
  static void
  pullInFront(ArrayRef<Operation *> inputs, Operation *user,
              const DenseMap<Operation *, SmallVector<Operation *>> &floating);

  Block &block;
  const MachineModel &machine;
  /// The persistent tensor a value reads, for loads and their views.
  DenseMap<Value, StringAttr> stateOf;
};

SmallVector<StringAttr> UpdateHoister::getTouchedStates(Operation *op) const {
  SetVector<StringAttr> states;
  op->walk([&](Operation *nested) {
    if (auto load = dyn_cast<train::LoadOp>(nested))
      states.insert(load.getStateAttr().getAttr());
    if (auto store = dyn_cast<train::StoreOp>(nested))
      states.insert(store.getStateAttr().getAttr());
    for (Value operand : nested->getOperands())
      if (StringAttr state = stateOf.lookup(operand))
        states.insert(state);
  });
  return states.takeVector();
}

SmallVector<Operation *> UpdateHoister::getDefinitions(Operation *op) const {
  SetVector<Operation *> definitions;
  op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def && isa<BlockArgument>(operand))
        continue;
      Operation *inBlock = def ? block.findAncestorOpInBlock(*def) : nullptr;
      if (inBlock && inBlock != op)
        definitions.insert(inBlock);
    }
  });
  return definitions.takeVector();
}

void UpdateHoister::recordViews(Operation *op) {
  if (auto load = dyn_cast<train::LoadOp>(op)) {
    stateOf[load.getResult()] = load.getStateAttr().getAttr();
    return;
  }
  if (!isView(op))
    return;
  if (StringAttr state = stateOf.lookup(op->getOperand(0)))
    for (Value result : op->getResults())
      stateOf[result] = state;
}

void UpdateHoister::run() {
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  SmallVector<dist::AllGatherOp> updatedGathers;
  for (auto gather : block.getOps<dist::AllGatherOp>())
    if (gathersUpdatedShards(gather))
      updatedGathers.push_back(gather);
  auto firstUpdate = llvm::find_if(ops, isUpdateOp);
  if (updatedGathers.empty() || firstUpdate == ops.end())
    return;
  // The optimizer's part of the step: from the loads right before the first
  // update to the end.
  auto tailBegin = firstUpdate;
  while (tailBegin != ops.begin() &&
         isa<train::LoadOp, train::ReshapeOp, dist::SliceOp>(
             *std::prev(tailBegin)))
    --tailBegin;
  // What reads the gathered parameters stays at the end, and so do the
  // other collectives there: at stage 1 the gradients are reduced after the
  // backward by design (full-size gradients until then), and moving their
  // reductions would make it stage 2.
  DenseSet<Operation *> staying;
  for (Operation *op : llvm::make_range(tailBegin, ops.end()))
    if (isCommunication(op) && !llvm::is_contained(updatedGathers, op))
      staying.insert(op);
  SmallVector<Value> gathered;
  for (dist::AllGatherOp gather : updatedGathers)
    gathered.push_back(gather.getResult());
  while (!gathered.empty())
    for (Operation *user : gathered.pop_back_val().getUsers())
      if (Operation *inBlock = block.findAncestorOpInBlock(*user);
          inBlock && staying.insert(inBlock).second)
        llvm::append_range(gathered, inBlock->getResults());

  // Every operation of the optimizer's part touching a persistent tensor
  // comes after every earlier one touching it: the backward's reads of a
  // parameter come before its update writes it (the lowering may update in
  // place), and stores keep their order.
  DenseMap<StringAttr, Operation *> lastToucher;
  for (Operation *op : llvm::make_range(ops.begin(), tailBegin)) {
    recordViews(op);
    for (StringAttr state : getTouchedStates(op))
      lastToucher[state] = op;
  }
  // What needs a reduced gradient lands in front of a later hand-off to the
  // communication stream, after enough compute that the reduction and a
  // gather queued before it are done: right after the reduction the compute
  // stream would wait for both at once.
  BlockCosts costs(ops, machine);
  double largestGather = 0;
  for (dist::AllGatherOp gather : updatedGathers) {
    int64_t at = llvm::find(ops, gather.getOperation()) - ops.begin();
    largestGather = std::max(largestGather, costs.getCommunication(at, at + 1));
  }
  DenseMap<Operation *, Operation *> landing;
  size_t tailIndex = std::distance(ops.begin(), tailBegin);
  for (size_t i = 0; i < tailIndex; ++i) {
    // A view of a reduction's result (a bucket split without a copy) lands
    // with it.
    if (ops[i]->getNumOperands() > 0 && isView(ops[i]))
      if (Operation *source = ops[i]->getOperand(0).getDefiningOp())
        if (Operation *landed = landing.lookup(source)) {
          landing[ops[i]] = landed;
          continue;
        }
    if (!isCommunication(ops[i]))
      continue;
    double needed = costs.getCommunication(i, i + 1) + largestGather;
    size_t next = i + 1;
    while (next < tailIndex && (!isCommunication(ops[next]) ||
                                costs.getCompute(i + 1, next) < needed))
      ++next;
    landing[ops[i]] = ops[next - 1];
  }
  DenseMap<Operation *, Operation *> lastPlacedAfter;
  // Operations placed nowhere yet, with their inputs of the same kind.
  DenseMap<Operation *, SmallVector<Operation *>> floating;
  for (Operation *op : llvm::make_range(tailBegin, ops.end())) {
    recordViews(op);
    SmallVector<Operation *> after = getDefinitions(op);
    SmallVector<StringAttr> states = getTouchedStates(op);
    for (StringAttr state : states)
      if (Operation *toucher = lastToucher.lookup(state))
        after.push_back(toucher);
    for (StringAttr state : states)
      lastToucher[state] = op;
    if (staying.contains(op))
      continue;
    Operation *anchor = nullptr;
    SmallVector<Operation *> floatingInputs;
    auto consider = [&](Operation *dependency) {
      if (!anchor || anchor->isBeforeInBlock(dependency))
        anchor = dependency;
    };
    for (Operation *dependency : after) {
      if (floating.contains(dependency)) {
        floatingInputs.push_back(dependency);
        continue;
      }
      consider(dependency);
      if (Operation *landed = landing.lookup(dependency))
        consider(landed);
    }
    // What depends on nothing (constants, loads of state nothing earlier
    // touches) goes right in front of its first dependent, not to the top,
    // where it would hold memory from the start of the step.
    if (!anchor) {
      floating[op] = std::move(floatingInputs);
      continue;
    }
    // Those placed after one operation keep their order.
    Operation *&last = lastPlacedAfter[anchor];
    op->moveAfter(last ? last : anchor);
    last = op;
    pullInFront(floatingInputs, op, floating);
  }
}

void UpdateHoister::pullInFront(
    ArrayRef<Operation *> inputs, Operation *user,
    const DenseMap<Operation *, SmallVector<Operation *>> &floating) {
  for (Operation *input : inputs) {
    if (user->isBeforeInBlock(input))
      input->moveBefore(user);
    pullInFront(floating.lookup(input), input, floating);
  }
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
    std::optional<MachineModel> model;
    if (!machine.empty()) {
      FailureOr<MachineModel> loaded =
          loadMachineModel(machine, module.getLoc());
      if (failed(loaded))
        return signalPassFailure();
      model = std::move(*loaded);
      // A collective over an axis the machine has no link for would cost
      // nothing: the placement would be made on a wrong premise.
      WalkResult unknownAxis =
          module.walk([&](dist::CollectiveOpInterface collective) {
            int64_t axis = collective.getPlacementAxis();
            if (isa<dist::SliceOp>(collective.getOperation()) ||
                axis < static_cast<int64_t>(model->links.size()))
              return WalkResult::advance();
            collective->emitError()
                << "zero-schedule: machine '" << model->name
                << "' has links for " << model->links.size()
                << " placement axis(es); this collective runs over axis "
                << axis;
            return WalkResult::interrupt();
          });
      if (unknownAxis.wasInterrupted())
        return signalPassFailure();
    }
    for (func::FuncOp function : getStepFunctions(module)) {
      SmallVector<Block *> blocks;
      function.walk([&](Block *block) { blocks.push_back(block); });
      for (Block *block : blocks) {
        if (failed(BlockScheduler(*block, prefetchBytes, maxLiveGatheredBytes,
                                  model ? &*model : nullptr)
                       .run()))
          return signalPassFailure();
        if (model && model->asyncCollectives)
          UpdateHoister(*block, *model).run();
      }
    }
  }
};

} // namespace
