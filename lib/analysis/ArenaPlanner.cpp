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

/// Best-fit placement of `requests` in `order`: each goes to the smallest
/// gap between the requests already placed that overlap it in time, or
/// above them all.
static ArenaPlan placeInOrder(llvm::ArrayRef<ArenaRequest> requests,
                              llvm::ArrayRef<size_t> order, int64_t alignment) {
  ArenaPlan plan;
  plan.offsets.assign(requests.size(), 0);
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
  return plan;
}

ArenaPlan zero::planArena(llvm::ArrayRef<ArenaRequest> requests,
                          int64_t alignment) {
  auto indices = llvm::seq<size_t>(0, requests.size());
  llvm::SmallVector<size_t> bySize(indices.begin(), indices.end());
  // Largest first, earlier first among equals, so the result is stable.
  llvm::stable_sort(bySize, [&](size_t a, size_t b) {
    if (requests[a].bytes != requests[b].bytes)
      return requests[a].bytes > requests[b].bytes;
    return requests[a].begin < requests[b].begin;
  });
  ArenaPlan plan = placeInOrder(requests, bySize, alignment);
  plan.liveBytesLowerBound = computeLiveLowerBound(requests, alignment);
  if (plan.arenaBytes <= plan.liveBytesLowerBound)
    return plan;

  // Largest first leaves holes where large buffers of disjoint lifetimes
  // interleave with long-lived small ones (a third of GPT-2's arena at
  // stages 1-2 in the e2e models). Other orders, tried only while the plan
  // is above the lower bound, keeping the smallest arena (the first among
  // equals, so plans stay deterministic): the requests of the busiest
  // instruction first (TFLite's greedy by breadth), then ties by lifetime;
  // by start; by lifetime; by bytes x lifetime; by end.
  std::map<int64_t, int64_t> delta;
  for (const ArenaRequest &request : requests) {
    int64_t bytes = alignTo(request.bytes, alignment);
    delta[request.begin] += bytes;
    delta[request.end + 1] -= bytes;
  }
  std::map<int64_t, int64_t> liveAt;
  int64_t live = 0;
  for (const auto &[at, change] : delta)
    liveAt[at] = live += change;
  llvm::SmallVector<int64_t> breadths;
  for (const ArenaRequest &request : requests) {
    // The most bytes live at any instruction of the request's lifetime.
    int64_t most = 0;
    for (auto it = std::prev(liveAt.upper_bound(request.begin));
         it != liveAt.end() && it->first <= request.end; ++it)
      most = std::max(most, it->second);
    breadths.push_back(most);
  }
  auto length = [&](size_t index) {
    return requests[index].end - requests[index].begin + 1;
  };
  auto sortedBy = [&](auto before) {
    llvm::SmallVector<size_t> order(bySize);
    llvm::stable_sort(order, before);
    return order;
  };
  llvm::SmallVector<size_t> orders[] = {
      sortedBy([&](size_t a, size_t b) { return breadths[a] > breadths[b]; }),
      sortedBy([&](size_t a, size_t b) {
        if (breadths[a] != breadths[b])
          return breadths[a] > breadths[b];
        return length(a) > length(b);
      }),
      sortedBy([&](size_t a, size_t b) {
        return requests[a].begin < requests[b].begin;
      }),
      sortedBy([&](size_t a, size_t b) { return length(a) > length(b); }),
      sortedBy([&](size_t a, size_t b) {
        return requests[a].bytes * length(a) > requests[b].bytes * length(b);
      }),
      sortedBy([&](size_t a, size_t b) {
        return requests[a].end > requests[b].end;
      }),
  };
  for (llvm::ArrayRef<size_t> order : orders) {
    if (plan.arenaBytes <= plan.liveBytesLowerBound)
      break;
    ArenaPlan other = placeInOrder(requests, order, alignment);
    if (other.arenaBytes < plan.arenaBytes) {
      other.liveBytesLowerBound = plan.liveBytesLowerBound;
      plan = std::move(other);
    }
  }
  return plan;
}
