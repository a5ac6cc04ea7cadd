//===- ArenaPlanner.cpp - Static offsets for transient buffers
//-------------===//

#include "zero/analysis/ArenaPlanner.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"

#include <algorithm>
#include <limits>
#include <map>

using namespace zero;

static int64_t alignTo(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

static bool overlaps(const ArenaRequest &a, const ArenaRequest &b) {
  return a.begin <= b.end && b.begin <= a.end;
}

static int64_t computeLiveLowerBound(llvm::ArrayRef<ArenaRequest> requests,
                                     int64_t alignment) {
  // Sweep the lifetimes: +bytes at begin, -bytes after end.
  std::map<int64_t, int64_t> delta;
  for (const ArenaRequest &request : requests) {
    int64_t bytes = alignTo(request.bytes, alignment);
    delta[request.begin] += bytes;
    delta[request.end + 1] -= bytes;
  }
  int64_t live = 0, peak = 0;
  for (const auto &[instruction, change] : delta) {
    live += change;
    peak = std::max(peak, live);
  }
  return peak;
}

ArenaPlan zero::planArena(llvm::ArrayRef<ArenaRequest> requests,
                          int64_t alignment) {
  ArenaPlan plan;
  plan.offsets.assign(requests.size(), 0);
  auto indices = llvm::seq<size_t>(0, requests.size());
  llvm::SmallVector<size_t> order(indices.begin(), indices.end());
  // Largest first, earlier first among equals, so the result is stable.
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    if (requests[a].bytes != requests[b].bytes)
      return requests[a].bytes > requests[b].bytes;
    return requests[a].begin < requests[b].begin;
  });

  struct Placed {
    int64_t offset, end;
  };
  llvm::SmallVector<size_t> placed;
  for (size_t index : order) {
    const ArenaRequest &request = requests[index];
    int64_t size = alignTo(request.bytes, alignment);
    llvm::SmallVector<Placed> conflicts;
    for (size_t other : placed)
      if (overlaps(request, requests[other]))
        conflicts.push_back(
            {plan.offsets[other],
             plan.offsets[other] + alignTo(requests[other].bytes, alignment)});
    llvm::sort(conflicts, [](const Placed &a, const Placed &b) {
      return a.offset < b.offset;
    });

    int64_t bestOffset = -1, bestGap = std::numeric_limits<int64_t>::max();
    int64_t cursor = 0;
    for (const Placed &conflict : conflicts) {
      int64_t gap = conflict.offset - cursor;
      if (gap >= size && gap < bestGap) {
        bestGap = gap;
        bestOffset = cursor;
      }
      cursor = std::max(cursor, conflict.end);
    }
    plan.offsets[index] = bestOffset >= 0 ? bestOffset : cursor;
    plan.arenaBytes = std::max(plan.arenaBytes, plan.offsets[index] + size);
    placed.push_back(index);
  }
  plan.liveBytesLowerBound = computeLiveLowerBound(requests, alignment);
  return plan;
}
