//===- ZeroVerify.cpp - Every rank issues the same collectives ------------===//
//
// A collective that only some ranks reach waits forever for the others: the
// hang DeepSpeed and FSDP users meet when a branch depends on the local batch.
// This pass finds the values that can differ between ranks and rejects
// collectives under control flow that depends on them, unless every path
// issues the same collective sequence anyway.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/TrainingStep.h"
#include "zero/passes/Passes.h"

#include "zero/dialects/dist/DistOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"

#include "llvm/Support/raw_ostream.h"

namespace zero {
#define GEN_PASS_DEF_ZEROVERIFY
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;

namespace {

bool isCollective(Operation *op) {
  return isa<dist::CollectiveOpInterface>(op) && !isa<dist::SliceOp>(op);
}

/// For `dist.wait`, the `*_start` op whose result it waits for.
Operation *getStartedCollective(Operation *op) {
  if (auto wait = dyn_cast<dist::WaitOp>(op))
    return wait.getToken().getDefiningOp();
  return op;
}

/// Collectives whose result is the same on every rank.
bool producesReplicated(Operation *op) {
  op = getStartedCollective(op);
  return op && isa<dist::AllReduceOp, dist::AllGatherOp, dist::BroadcastOp,
                   dist::AllReduceStartOp, dist::AllGatherStartOp,
                   dist::BroadcastStartOp>(op);
}

/// Collectives whose result is this rank's own shard.
bool producesRankLocal(Operation *op) {
  op = getStartedCollective(op);
  return op && isa<dist::ReduceScatterOp, dist::SliceOp, dist::AllToAllOp,
                   dist::ReduceScatterStartOp, dist::AllToAllStartOp>(op);
}

/// The operands of a branch that decide where it goes (not those it
/// forwards to a successor's arguments).
SmallVector<Value> getBranchControlOperands(Operation *terminator) {
  auto branch = dyn_cast<BranchOpInterface>(terminator);
  if (!branch)
    return llvm::to_vector(terminator->getOperands());
  DenseSet<unsigned> forwarded;
  for (unsigned i = 0, e = terminator->getNumSuccessors(); i < e; ++i) {
    OperandRange operands =
        branch.getSuccessorOperands(i).getForwardedOperands();
    if (operands.empty())
      continue;
    for (OpOperand &operand : terminator->getOpOperands())
      if (operands.getBeginOperandIndex() <= operand.getOperandNumber() &&
          operand.getOperandNumber() <
              operands.getBeginOperandIndex() + operands.size())
        forwarded.insert(operand.getOperandNumber());
  }
  SmallVector<Value> control;
  for (OpOperand &operand : terminator->getOpOperands())
    if (!forwarded.contains(operand.getOperandNumber()))
      control.push_back(operand.get());
  return control;
}

class UniformityChecker {
public:
  explicit UniformityChecker(ModuleOp module) : module(module) {}
  LogicalResult check(func::FuncOp function);

private:
  void seed(func::FuncOp function);
  /// Marks rank-local values in program order; returns whether any changed.
  bool propagate(Operation *op);
  bool markLocal(Value value) { return rankLocal.insert(value).second; }
  bool isLocal(Value value) const { return rankLocal.contains(value); }
  LogicalResult checkRegionOp(Operation *op);
  LogicalResult reportDivergence(Operation *controlFlow, Value condition,
                                 StringRef what);
  /// The collectives `region` issues, in order, as one comparable string.
  std::string describeCollectives(Region &region);

  ModuleOp module;
  SymbolTableCollection symbols;
  DenseSet<Value> rankLocal;
};

void UniformityChecker::seed(func::FuncOp function) {
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i) {
    auto sbp = function.getArgAttrOfType<dist::SbpAttr>(
        i, dist::DistDialect::getSbpAttrName());
    if (sbp && !sbp.isFullyBroadcast())
      markLocal(function.getArgument(i));
  }
}

bool UniformityChecker::propagate(Operation *op) {
  bool changed = false;
  bool localOperand =
      llvm::any_of(op->getOperands(), [&](Value v) { return isLocal(v); });
  if (auto load = dyn_cast<train::LoadOp>(op)) {
    auto state = symbols.lookupNearestSymbolFrom<train::ParamOp>(
        load, load.getStateAttr());
    localOperand = state && state.isSharded();
  }
  if (producesRankLocal(op))
    localOperand = true;
  if (producesReplicated(op))
    localOperand = false;
  // A value yielded inside a region can flow into the region's arguments
  // (loop-carried values) and into the results.
  bool localYield = false;
  for (Region &region : op->getRegions())
    for (Block &block : region)
      if (!block.empty() && block.back().hasTrait<OpTrait::IsTerminator>() &&
          block.back().getNumSuccessors() == 0)
        localYield |= llvm::any_of(block.back().getOperands(),
                                   [&](Value v) { return isLocal(v); });
  for (Region &region : op->getRegions())
    for (Block &block : region) {
      if (localOperand || localYield)
        for (BlockArgument arg : block.getArguments())
          changed |= markLocal(arg);
      for (Operation &nested : block)
        changed |= propagate(&nested);
    }
  // Unstructured control flow forwards values into successor arguments.
  if (auto branch = dyn_cast<BranchOpInterface>(op))
    for (unsigned i = 0, e = op->getNumSuccessors(); i < e; ++i) {
      OperandRange forwarded =
          branch.getSuccessorOperands(i).getForwardedOperands();
      Block *successor = op->getSuccessor(i);
      unsigned produced =
          branch.getSuccessorOperands(i).getProducedOperandCount();
      for (auto [index, value] : llvm::enumerate(forwarded))
        if (isLocal(value) && produced + index < successor->getNumArguments())
          changed |= markLocal(successor->getArgument(produced + index));
    }
  if (localOperand || (localYield && op->getNumRegions()))
    for (Value result : op->getResults())
      changed |= markLocal(result);
  return changed;
}

/// Whether `op` is or contains a collective.
bool issuesCollectives(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        return isCollective(nested) ? WalkResult::interrupt()
                                    : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The collectives `region` issues, in order and with the loops and branches
/// around them, as one comparable string.
std::string UniformityChecker::describeCollectives(Region &region) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (Block &block : region)
    for (Operation &op : block) {
      if (isCollective(&op)) {
        os << op.getName() << "(";
        llvm::interleaveComma(op.getOperandTypes(), os);
        os << ") ";
        op.getAttrDictionary().print(os);
        os << "; ";
      } else if (op.getNumRegions() && issuesCollectives(&op)) {
        os << op.getName() << " " << op.getNumOperands() << " {";
        for (Region &nested : op.getRegions())
          os << describeCollectives(nested) << "|";
        os << "}; ";
      }
    }
  return text;
}

LogicalResult UniformityChecker::reportDivergence(Operation *controlFlow,
                                                  Value condition,
                                                  StringRef what) {
  Operation *collective = nullptr;
  controlFlow->walk([&](Operation *op) {
    if (!collective && isCollective(op))
      collective = op;
  });
  InFlightDiagnostic diag =
      collective->emitError()
      << "'" << collective->getName() << "' is issued under '"
      << controlFlow->getName() << "' whose " << what
      << " depends on rank-local values; ranks that decide differently "
         "issue different collectives and hang";
  diag.attachNote(controlFlow->getLoc()) << "the control flow is here";
  if (condition) {
    auto arg = dyn_cast<BlockArgument>(condition);
    if (Operation *def = condition.getDefiningOp())
      diag.attachNote(def->getLoc()) << "the rank-local value comes from here";
    else if (arg && arg.getOwner()->isEntryBlock() &&
             isa<func::FuncOp>(arg.getOwner()->getParentOp()))
      diag.attachNote(condition.getLoc())
          << "the rank-local value is a split input of the step";
    else
      diag.attachNote(condition.getLoc())
          << "the rank-local value is carried in here from rank-local data";
  }
  return diag;
}

LogicalResult UniformityChecker::checkRegionOp(Operation *op) {
  if (!issuesCollectives(op))
    return success();
  if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
    if (!isLocal(ifOp.getCondition()))
      return success();
    // Both branches issue the same collectives: every rank still matches.
    if (describeCollectives(ifOp.getThenRegion()) ==
        describeCollectives(ifOp.getElseRegion()))
      return success();
    return reportDivergence(op, ifOp.getCondition(), "condition");
  }
  if (auto forOp = dyn_cast<scf::ForOp>(op)) {
    for (Value bound :
         {forOp.getLowerBound(), forOp.getUpperBound(), forOp.getStep()})
      if (isLocal(bound))
        return reportDivergence(op, bound, "trip count");
    return success();
  }
  if (auto whileOp = dyn_cast<scf::WhileOp>(op)) {
    Value condition = whileOp.getConditionOp().getCondition();
    if (isLocal(condition))
      return reportDivergence(op, condition, "loop condition");
    return success();
  }
  for (Value operand : op->getOperands())
    if (isLocal(operand))
      return reportDivergence(op, operand, "control");
  return success();
}

LogicalResult UniformityChecker::check(func::FuncOp function) {
  seed(function);
  // Loops carry values around; a few rounds reach the fixpoint.
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    for (Block &block : function.getBody())
      for (Operation &op : block)
        changed |= propagate(&op);
    if (!changed)
      break;
  }

  WalkResult result = function.walk([&](Operation *op) {
    if (op->getNumRegions() == 0 || op == function.getOperation())
      return WalkResult::advance();
    return failed(checkRegionOp(op)) ? WalkResult::interrupt()
                                     : WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();

  // Unstructured control flow: a branch on a rank-local value.
  if (function.getBody().hasOneBlock())
    return success();
  bool hasCollective = issuesCollectives(function);
  for (Block &block : function.getBody()) {
    Operation *terminator = block.getTerminator();
    if (!hasCollective || terminator->getNumSuccessors() < 2)
      continue;
    for (Value operand : getBranchControlOperands(terminator))
      if (isLocal(operand)) {
        InFlightDiagnostic diag =
            terminator->emitError()
            << "branches on a rank-local value in a step that issues "
               "collectives; ranks that branch differently hang";
        if (Operation *def = operand.getDefiningOp())
          diag.attachNote(def->getLoc())
              << "the rank-local value comes from here";
        return diag;
      }
  }
  return success();
}

struct ZeroVerifyPass : zero::impl::ZeroVerifyBase<ZeroVerifyPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    UniformityChecker checker(module);
    for (func::FuncOp function : module.getOps<func::FuncOp>())
      if (failed(checker.check(function)))
        return signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
