//===- ArenaLiveness.cpp - The arenas' liveness, from the instructions ----===//
//
// What zero-run --check-memory holds a placement against, derived here from
// the program's instructions alone and not from the intervals the
// compiler's planner placed by (docs/runtime.md, "What is measured"): a
// lifetime bug in the planner grows its arena and its own lower bound alike,
// but not this one.
//
// A view is live from the first instruction that names it (through views of
// it) to the last. In the device arena, whose bytes only the compute stream
// reuses (zero-lower-to-runtime's contract), a use on another stream lasts
// until the compute stream has waited for it: the streams' happens-before
// order is followed through the program's records and waits, however many
// streams an event passes. The host arena's staging is ordered by program
// position (zero-offload's contract), and the device staging zero-offload
// stacks above the lowering's arena (zrt.staging_base) is a tier of its own.
// Views that share bytes while both are
// live in program order are refused whatever the streams: one overwrites
// the other.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/ArenaWriteCheck.h"

#include "zero/dialects/zrt/ZrtOps.h"

#include "absl/strings/str_cat.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <map>

using namespace zero;
using namespace zero::rt;

namespace {

/// One arena view's bytes and the instructions it is live across, both
/// ends included: to its last use in program order (`lastUse`), and to the
/// instruction that orders the compute stream after that use (`end`).
struct LiveView {
  int64_t offset = 0, bytes = 0, begin = 0, lastUse = 0, end = 0;
};

/// The instructions of one step body and the streams' order among them.
class BodyOrder {
public:
  BodyOrder(zrt::StepOp step, mlir::StringAttr compute) : compute(compute) {
    for (mlir::Operation &op : step.getBody().front()) {
      if (mlir::isa<zrt::ViewOp, zrt::ArenaViewOp, zrt::BufferRefOp,
                    zrt::YieldOp>(op))
        continue;
      position[&op] = instructions.size();
      instructions.push_back(&op);
    }
    // known[s][t]: the last instruction of stream t that stream s's next
    // instruction is ordered after. Each record carries its stream's, each
    // wait takes the event's.
    using Clock = llvm::DenseMap<mlir::StringAttr, int64_t>;
    llvm::DenseMap<mlir::StringAttr, Clock> known;
    llvm::DenseMap<mlir::StringAttr, Clock> recorded;
    for (auto [at, op] : llvm::enumerate(instructions)) {
      int64_t now = static_cast<int64_t>(at);
      mlir::StringAttr stream = streamOf(op);
      if (auto record = mlir::dyn_cast<zrt::RecordOp>(op)) {
        Clock clock = known[stream];
        clock[stream] = now;
        recorded[record.getEventAttr().getAttr()] = std::move(clock);
      } else if (auto wait = mlir::dyn_cast<zrt::WaitOp>(op)) {
        Clock &clock = known[stream];
        for (auto [other, last] :
             recorded.lookup(wait.getEventAttr().getAttr()))
          if (!clock.count(other) || clock[other] < last) {
            clock[other] = last;
            if (stream == compute)
              computeLearns[other].push_back({now, last});
          }
      }
    }
  }

  int64_t size() const { return instructions.size(); }
  int64_t positionOf(mlir::Operation *op) const { return position.lookup(op); }

  /// The stream an instruction is issued on.
  mlir::StringAttr streamOf(mlir::Operation *op) const {
    if (auto stream = op->getAttrOfType<mlir::FlatSymbolRefAttr>("stream"))
      return stream.getAttr();
    return compute;
  }

  /// The instruction after which the compute stream is ordered after the
  /// use of a buffer by `op`: `op` itself on the compute stream, the wait
  /// that orders it otherwise, the body's last instruction where none does
  /// (the step ends with every stream done).
  int64_t lastOrderedBy(mlir::Operation *op) const {
    int64_t at = positionOf(op);
    mlir::StringAttr stream = streamOf(op);
    if (stream == compute)
      return at;
    for (auto [waitedAt, last] : computeLearns.lookup(stream))
      if (last >= at)
        return waitedAt;
    return std::max<int64_t>(0, size() - 1);
  }

private:
  mlir::StringAttr compute;
  llvm::SmallVector<mlir::Operation *> instructions;
  llvm::DenseMap<mlir::Operation *, int64_t> position;
  /// Per stream, in order: (the compute stream's wait, the last instruction
  /// of that stream it orders the compute stream after).
  llvm::DenseMap<mlir::StringAttr,
                 llvm::SmallVector<std::pair<int64_t, int64_t>>>
      computeLearns;
};

/// The live views of one body, by space (device first).
std::pair<std::vector<LiveView>, std::vector<LiveView>>
liveViews(zrt::StepOp step, mlir::StringAttr compute) {
  BodyOrder order(step, compute);
  std::vector<LiveView> device, host;
  for (auto view : step.getBody().front().getOps<zrt::ArenaViewOp>()) {
    LiveView live{static_cast<int64_t>(view.getOffset()), view.getSizeInBytes(),
                  order.size(), -1, -1};
    llvm::SmallVector<mlir::Value> values{view.getResult()};
    while (!values.empty()) {
      mlir::Value value = values.pop_back_val();
      for (mlir::Operation *user : value.getUsers()) {
        if (auto subview = mlir::dyn_cast<zrt::ViewOp>(user)) {
          values.push_back(subview.getResult());
          continue;
        }
        live.begin = std::min(live.begin, order.positionOf(user));
        live.lastUse = std::max(live.lastUse, order.positionOf(user));
        live.end = std::max(live.end, order.lastOrderedBy(user));
      }
    }
    if (live.lastUse < live.begin)
      continue; // No instruction names it.
    (view.getSpace() == zrt::MemorySpace::host ? host : device).push_back(live);
  }
  return {std::move(device), std::move(host)};
}

/// Where a view's lifetime ends: where the compute stream is ordered after
/// its last use (device), or its last use (the host arena, whose staging
/// zero-offload orders by program position), or its last use alone (the
/// conflicts: bytes two views share while both are live in program order
/// are overwritten, whatever the streams).
enum class Until { computeOrdered, lastUse };

int64_t endOf(const LiveView &view, Until until) {
  return until == Until::computeOrdered ? view.end : view.lastUse;
}

/// The most bytes live at one instruction, each view's rounded up to the
/// program's alignment as every placement must.
int64_t peakLiveBytes(const std::vector<LiveView> &views, Until until,
                      int64_t alignment) {
  std::map<int64_t, int64_t> change;
  for (const LiveView &view : views) {
    int64_t bytes = llvm::alignTo(view.bytes, alignment);
    change[view.begin] += bytes;
    change[endOf(view, until) + 1] -= bytes;
  }
  int64_t live = 0, peak = 0;
  for (auto [at, delta] : change)
    peak = std::max(peak, live += delta);
  return peak;
}

/// Pairs of views live at one instruction in program order whose bytes
/// overlap: a placement that lets one overwrite the other.
void findConflicts(std::vector<LiveView> views, const char *arena, int64_t body,
                   std::vector<std::string> &conflicts) {
  llvm::sort(views, [](const LiveView &a, const LiveView &b) {
    return a.begin < b.begin;
  });
  for (size_t i = 0; i < views.size(); ++i)
    for (size_t j = i + 1;
         j < views.size() && views[j].begin <= views[i].lastUse; ++j) {
      const LiveView &a = views[i], &b = views[j];
      if (a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes)
        conflicts.push_back(absl::StrCat(
            "step body ", body, ": the ", arena, " bytes [", a.offset, ", ",
            a.offset + a.bytes, ") live across instructions ", a.begin, "-",
            a.lastUse, " overlap the bytes [", b.offset, ", ",
            b.offset + b.bytes, ") live across ", b.begin, "-", b.lastUse));
    }
}

} // namespace

ArenaLiveness zero::rt::deriveArenaLiveness(zrt::ProgramOp program) {
  // The compute stream is the one the first kernel runs on.
  mlir::StringAttr compute;
  program.walk([&](zrt::LaunchOp launch) {
    compute = launch.getStreamAttr().getAttr();
    return mlir::WalkResult::interrupt();
  });
  int64_t alignment = static_cast<int64_t>(program.getAlignment());
  int64_t stagingBase = 0;
  if (auto base = program->getAttrOfType<mlir::IntegerAttr>(
          zrt::ZrtDialect::getStagingBaseAttrName()))
    stagingBase = base.getInt();
  ArenaLiveness liveness;
  int64_t body = 0;
  // The bodies run one after the other, each from the start of the arenas.
  for (auto step : program.getBody().front().getOps<zrt::StepOp>()) {
    auto [device, host] = liveViews(step, compute);
    // zero-offload keeps the lowering's offsets and stacks its staging
    // above them: each tier's peak, added.
    std::vector<LiveView> lowered, staging;
    for (const LiveView &view : device)
      (stagingBase > 0 && view.offset >= stagingBase ? staging : lowered)
          .push_back(view);
    liveness.deviceBytes =
        std::max(liveness.deviceBytes,
                 peakLiveBytes(lowered, Until::computeOrdered, alignment) +
                     peakLiveBytes(staging, Until::computeOrdered, alignment));
    liveness.hostBytes = std::max(
        liveness.hostBytes, peakLiveBytes(host, Until::lastUse, alignment));
    findConflicts(std::move(device), "arena", body, liveness.conflicts);
    findConflicts(std::move(host), "host arena", body, liveness.conflicts);
    ++body;
  }
  return liveness;
}
