//===- ZeroShardGathers.cpp - Where zero-shard gathers parameters ---------===//
//
// The parameters' gathers: at stages 1-2 the updated shards gathered back
// into the replicated parameter, at stage 3 a gather before each use
// region of a sharded parameter (with hpZ, from its secondary shard).
//
//===----------------------------------------------------------------------===//

#include "ZeroShardSharder.h"

using namespace mlir;
using namespace zero;
using namespace zero::sharding;

/// All gathers first, then the stores, so that the gathers are adjacent and
/// zero-bucket can fuse them. They go at the end of the step, after every
/// update, unless the step reads a parameter again after its update: then
/// that parameter's gather and store go just before that read.
void Sharder::emitPendingGathers() {
  for (auto &[block, gathers] : pendingGathers) {
    // Numbered once, before anything is inserted.
    DenseMap<Operation *, int64_t> position;
    llvm::StringMap<SmallVector<Operation *>> readsAfterUpdate;
    for (auto [index, op] : llvm::enumerate(*block)) {
      position[&op] = index;
      if (auto load = dyn_cast<train::LoadOp>(op))
        if (!freshLoads.contains(load))
          readsAfterUpdate[load.getState()].push_back(&op);
    }
    llvm::MapVector<Operation *, SmallVector<PendingGather *>> byPoint;
    for (PendingGather &pending : gathers) {
      Operation *point = block->getTerminator();
      int64_t updated = position.lookup(
          block->findAncestorOpInBlock(*pending.shard.getDefiningOp()));
      for (Operation *read :
           readsAfterUpdate.lookup(pending.param.getSymName()))
        if (position.lookup(read) > updated) {
          point = read;
          break;
        }
      byPoint[point].push_back(&pending);
    }
    for (auto &[point, group] : byPoint) {
      OpBuilder builder(point);
      SmallVector<Value> gathered;
      for (PendingGather *pending : group)
        gathered.push_back(emitGather(builder, pending->loc, pending->shard,
                                      pending->param.getSplitTensorType(),
                                      pending->kind));
      for (auto [pending, value] : llvm::zip(group, gathered))
        builder.create<train::StoreOp>(
            pending->loc,
            restoreLogicalShape(builder, pending->loc, value,
                                pending->param.getSplitTensorType()),
            pending->param.getSymName());
    }
  }
}

void Sharder::gatherParameterLoads(func::FuncOp function,
                                   const DenseSet<train::ParamOp> &sharded) {
  Block &body = function.front();
  // Positions of the operations of every block that loads a parameter,
  // numbered once before anything is inserted.
  DenseMap<Operation *, int64_t> position;
  DenseSet<Block *> numbered;
  auto number = [&](Block *block) {
    if (numbered.insert(block).second)
      for (auto [index, op] : llvm::enumerate(*block))
        position[&op] = index;
  };

  // The forward is what the step's results (the loss) depend on.
  DenseSet<Operation *> forward;
  SmallVector<Operation *> worklist;
  for (Value result : body.getTerminator()->getOperands())
    if (Operation *def = result.getDefiningOp())
      worklist.push_back(def);
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!forward.insert(op).second)
      continue;
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (Operation *inBody = body.findAncestorOpInBlock(*def))
            worklist.push_back(inBody);
    });
  }

  SmallVector<train::LoadOp> loads;
  function.walk([&](train::LoadOp load) {
    if (freshLoads.contains(load))
      return;
    auto state = symbols.lookupNearestSymbolFrom<train::ParamOp>(
        load, load.getStateAttr());
    if (state && sharded.contains(state))
      loads.push_back(load);
  });

  for (train::LoadOp load : loads)
    number(load->getBlock());
  for (train::LoadOp load : loads) {
    auto state = symbols.lookupNearestSymbolFrom<train::ParamOp>(
        load, load.getStateAttr());
    Block *block = load->getBlock();
    auto isForward = [&](Operation *op) {
      Operation *inBody = body.findAncestorOpInBlock(*op);
      return inBody && forward.contains(inBody);
    };
    RankedTensorType logical = state.getSplitTensorType();
    StorageLayoutKind kind = layoutOf(state);
    load.getResult().setType(state.getLocalTensorType());

    struct Use {
      Operation *anchor;
      OpOperand *operand;
    };
    SmallVector<Use> uses;
    for (OpOperand &use : load->getUses())
      uses.push_back({block->findAncestorOpInBlock(*use.getOwner()), &use});
    llvm::sort(uses, [&](const Use &a, const Use &b) {
      return position.lookup(a.anchor) < position.lookup(b.anchor);
    });

    Value gathered, secondary;
    Operation *previous = nullptr;
    for (const Use &use : uses) {
      bool newRegion = !gathered;
      if (previous && previous != use.anchor) {
        if (regatherInBackward && isForward(previous) && !isForward(use.anchor))
          newRegion = true;
        if (maxReuseDistance > 0 &&
            position.lookup(use.anchor) - position.lookup(previous) >
                maxReuseDistance)
          newRegion = true;
      }
      if (newRegion) {
        OpBuilder builder(use.anchor);
        Location loc = load.getLoc();
        // hpZ: the secondary shard is the first gather's value after the
        // gather across nodes, so every later gather stays within the node
        // and reads exactly the values the forward read.
        if (secondary)
          gathered = cut->allGatherFromSecondary(builder, loc, secondary,
                                                 gatheredExtent(logical, kind));
        else
          gathered = emitGather(builder, loc, load, logical, kind,
                                secondaryShards ? &secondary : nullptr);
        gathered = restoreLogicalShape(builder, loc, gathered, logical);
      }
      use.operand->set(gathered);
      previous = use.anchor;
    }
  }
}
