//===- ZeroOffload.cpp - Optimizer state and parameters in host memory ----===//
//
// ZeRO-Offload decided on the lowered program. The runtime peers decide
// placement while training; here the compiler picks which persistent
// buffers live in host memory (all optimizer state, with the parameter
// shards at stage 3, or the least of it that fits a device budget), has
// OffloadRewriter make it so, and records what each rank then holds on the
// device and on the host, and why.
//
//===----------------------------------------------------------------------===//

#include "OffloadRewriter.h"

#include "zero/passes/Passes.h"

#include "llvm/ADT/DenseMap.h"

#include <limits>

namespace zero {
#define GEN_PASS_DEF_ZEROOFFLOAD
#include "zero/passes/Passes.h.inc"
} // namespace zero

using namespace mlir;
using namespace zero;
using zrt::MemorySpace;

namespace {

using offload::bytesOf;
using offload::getRoot;
using offload::isUpdateKernel;

/// What may move to host memory as one decision: the optimizer state of
/// one update, or one sharded parameter.
struct OffloadUnit {
  bool isParam = false;
  std::string tensor;
  SmallVector<StringAttr> buffers;
  int64_t bytes = 0;
};

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
      if (auto owner = buffer->getAttrOfType<StringAttr>(
              zrt::ZrtDialect::getInitNameAttrName());
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
      auto layout = buffer->getAttrOfType<StringAttr>(
          zrt::ZrtDialect::getLayoutAttrName());
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
  LogicalResult rewritten =
      offload::placeInHostMemory(scratch, getHostBuffers(units));
  MemoryPlan plan = offload::measure(scratch);
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
  if (auto attr = program->getAttrOfType<IntegerAttr>(
          zrt::ZrtDialect::getZeroStageAttrName()))
    stage = attr.getInt();
  if (offload == OffloadPlacement::optimizer && stage == 0)
    return emitError(loc) << "zero-offload: offload=optimizer needs ZeRO "
                             "stage 1, 2 or 3 (at stage 0 every rank would "
                             "hold and update the whole optimizer state on "
                             "its host)";
  if (offload == OffloadPlacement::optimizerAndParams && stage != 3)
    return emitError(loc)
           << "zero-offload: offload=optimizer+params needs ZeRO stage 3, "
              "where parameters are sharded; this program is "
           << (stage < 0 ? std::string("not staged")
                         : "stage " + std::to_string(stage));
  SmallVector<OffloadUnit> units = collectUnits(program, /*params=*/stage == 3);
  int64_t optimizerUnits =
      llvm::count_if(units, [](const OffloadUnit &u) { return !u.isParam; });

  ArrayRef<OffloadUnit> chosen;
  std::string reason = ("offload=" + stringifyOffloadPlacement(offload)).str();
  if (offload == OffloadPlacement::optimizer)
    chosen = ArrayRef(units).take_front(optimizerUnits);
  else if (offload == OffloadPlacement::optimizerAndParams)
    chosen = units;
  if (offload == OffloadPlacement::automatic) {
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

  if (!chosen.empty() &&
      failed(offload::placeInHostMemory(program, getHostBuffers(chosen))))
    return failure();
  MemoryPlan plan = offload::measure(program);
  plan.budget = budget;
  bool params =
      llvm::any_of(chosen, [](const OffloadUnit &u) { return u.isParam; });
  plan.offload =
      stringifyOffloadPlacement(chosen.empty() ? OffloadPlacement::none
                                : params ? OffloadPlacement::optimizerAndParams
                                         : OffloadPlacement::optimizer)
          .str();
  for (const OffloadUnit &unit : chosen)
    plan.decisions.push_back(describe(unit) + ": " + reason);
  if (offload == OffloadPlacement::automatic && chosen.size() < units.size())
    plan.decisions.push_back(
        (chosen.empty() ? "all " : "the other ") +
        std::to_string(units.size() - chosen.size()) + " of " +
        std::to_string(units.size()) +
        " offloadable tensors stay in device memory: the budget holds them");
  if (budget > 0 && plan.deviceBytes() > budget) {
    InFlightDiagnostic diag =
        emitError(loc) << "zero-offload: with offload="
                       << stringifyOffloadPlacement(offload)
                       << " the device needs " << plan.deviceBytes()
                       << " B per rank (" << plan.devicePersistent
                       << " B of buffers, " << plan.deviceArena
                       << " B of arena), over the device-memory-budget of "
                       << budget << " B by " << plan.deviceBytes() - budget
                       << " B";
    if (offload != OffloadPlacement::automatic)
      diag << "; offload=auto finds the least offload that fits, if any";
    return diag;
  }
  program->setAttr(zrt::ZrtDialect::getMemoryPlanAttrName(),
                   plan.toAttr(program.getContext()));
  return success();
}

void ZeroOffloadPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (deviceMemoryBudget < 0) {
    emitError(module.getLoc())
        << "zero-offload: device-memory-budget must be a number of bytes "
           "(0 for none), got "
        << static_cast<int64_t>(deviceMemoryBudget);
    return signalPassFailure();
  }
  if (offload == OffloadPlacement::automatic && deviceMemoryBudget == 0) {
    emitError(module.getLoc())
        << "zero-offload: offload=auto needs a device-memory-budget to fit";
    return signalPassFailure();
  }
  if (offload == OffloadPlacement::none && deviceMemoryBudget == 0)
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
