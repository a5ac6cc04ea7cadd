//===- ArenaPlannerTest.cpp - Static offsets for transient buffers --------===//
//
// planArena on lifetimes small enough to place by hand: the cases name the
// rule they pin down (disjoint lifetimes share bytes, best fit beats first
// fit, sizes round up to the alignment, equal sizes place in a stable
// order). A randomized sweep then checks on 1000 inputs the properties every
// plan must have: no two buffers that are live at the same instruction
// share a byte, offsets are aligned, the arena holds every buffer and is
// never below the live-bytes lower bound, which is the largest sum of
// aligned live bytes at any instruction, computed here by brute force.
// test/passes/zero-lower-to-runtime-arena.mlir checks the same planner
// through the pass.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/ArenaPlanner.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace zero;

namespace {

int64_t aligned(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

bool liveTogether(const ArenaRequest &a, const ArenaRequest &b) {
  return a.begin <= b.end && b.begin <= a.end;
}

/// The largest sum of aligned bytes live at one instruction, instruction by
/// instruction.
int64_t bruteForceLowerBound(const std::vector<ArenaRequest> &requests,
                             int64_t alignment) {
  int64_t last = 0;
  for (const ArenaRequest &request : requests)
    last = std::max(last, request.end);
  int64_t peak = 0;
  for (int64_t at = 0; at <= last; ++at) {
    int64_t live = 0;
    for (const ArenaRequest &request : requests)
      if (request.begin <= at && at <= request.end)
        live += aligned(request.bytes, alignment);
    peak = std::max(peak, live);
  }
  return peak;
}

/// Every property a plan must have, whatever the heuristic. Returns a
/// description of the first violation, or "" when there is none.
std::string checkPlan(const std::vector<ArenaRequest> &requests,
                      int64_t alignment, const ArenaPlan &plan) {
  if (plan.offsets.size() != requests.size())
    return "one offset per request";
  int64_t top = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    int64_t offset = plan.offsets[i];
    if (offset < 0 || offset % alignment != 0)
      return "offset " + std::to_string(offset) + " of request " +
             std::to_string(i) + " is not a non-negative multiple of " +
             std::to_string(alignment);
    top = std::max(top, offset + aligned(requests[i].bytes, alignment));
  }
  if (plan.arenaBytes != top)
    return "arena " + std::to_string(plan.arenaBytes) +
           " is not the end of the highest buffer, " + std::to_string(top);
  for (size_t i = 0; i < requests.size(); ++i)
    for (size_t j = i + 1; j < requests.size(); ++j) {
      if (!liveTogether(requests[i], requests[j]))
        continue;
      int64_t beginI = plan.offsets[i],
              endI = beginI + aligned(requests[i].bytes, alignment);
      int64_t beginJ = plan.offsets[j],
              endJ = beginJ + aligned(requests[j].bytes, alignment);
      if (beginI < endJ && beginJ < endI)
        return "requests " + std::to_string(i) + " and " + std::to_string(j) +
               " are live together but share bytes [" +
               std::to_string(std::max(beginI, beginJ)) + ", " +
               std::to_string(std::min(endI, endJ)) + ")";
    }
  int64_t bound = bruteForceLowerBound(requests, alignment);
  if (plan.liveBytesLowerBound != bound)
    return "lower bound " + std::to_string(plan.liveBytesLowerBound) +
           ", brute force says " + std::to_string(bound);
  if (plan.arenaBytes < plan.liveBytesLowerBound)
    return "arena below the lower bound";
  return "";
}

ArenaPlan plan(const std::vector<ArenaRequest> &requests, int64_t alignment) {
  ArenaPlan result = planArena(requests, alignment);
  std::string problem = checkPlan(requests, alignment, result);
  EXPECT_EQ(problem, "");
  return result;
}

} // namespace

TEST(ArenaPlanner, EmptyPlanHasNoArena) {
  ArenaPlan result = plan({}, 64);
  EXPECT_TRUE(result.offsets.empty());
  EXPECT_EQ(result.arenaBytes, 0);
  EXPECT_EQ(result.liveBytesLowerBound, 0);
  EXPECT_DOUBLE_EQ(result.efficiency(), 1.0);
}

TEST(ArenaPlanner, SingleBufferStartsAtZeroAndIsRoundedUp) {
  ArenaPlan result = plan({{100, 3, 7}}, 64);
  ASSERT_EQ(result.offsets.size(), 1u);
  EXPECT_EQ(result.offsets[0], 0);
  EXPECT_EQ(result.arenaBytes, 128);
  EXPECT_EQ(result.liveBytesLowerBound, 128);
  EXPECT_DOUBLE_EQ(result.efficiency(), 1.0);
}

TEST(ArenaPlanner, DisjointLifetimesShareOffsetZero) {
  // Three buffers, each dead before the next is born: one slot for all.
  ArenaPlan result = plan({{256, 0, 1}, {192, 2, 4}, {256, 5, 5}}, 64);
  EXPECT_EQ(result.offsets, (llvm::SmallVector<int64_t>{0, 0, 0}));
  EXPECT_EQ(result.arenaBytes, 256);
  EXPECT_EQ(result.liveBytesLowerBound, 256);
}

TEST(ArenaPlanner, LifetimesAreInclusiveAtBothEnds) {
  // The first buffer's last instruction is the second one's first: both
  // are live there, so they cannot share bytes.
  ArenaPlan result = plan({{64, 0, 2}, {64, 2, 4}}, 64);
  EXPECT_EQ(result.offsets, (llvm::SmallVector<int64_t>{0, 64}));
  EXPECT_EQ(result.arenaBytes, 128);
  EXPECT_EQ(result.liveBytesLowerBound, 128);
}

TEST(ArenaPlanner, NestedLifetimesStackOnTheOuterBuffer) {
  // An outer buffer live throughout, two inner ones live one after the
  // other: the inner ones share the slot above the outer one.
  ArenaPlan result = plan({{512, 0, 10}, {128, 2, 3}, {64, 5, 6}}, 64);
  EXPECT_EQ(result.offsets, (llvm::SmallVector<int64_t>{0, 512, 512}));
  EXPECT_EQ(result.arenaBytes, 640);
  EXPECT_EQ(result.liveBytesLowerBound, 640);
}

TEST(ArenaPlanner, LargestIsPlacedFirst) {
  // The small buffer comes first in the list but is placed last, on top of
  // the large one it overlaps in time.
  ArenaPlan result = plan({{64, 0, 5}, {1024, 1, 2}}, 64);
  EXPECT_EQ(result.offsets, (llvm::SmallVector<int64_t>{1024, 0}));
  EXPECT_EQ(result.arenaBytes, 1088);
}

TEST(ArenaPlanner, EqualSizesPlaceEarlierLifetimeFirst) {
  // Same size: the one born earlier gets the lower offset, wherever it is in
  // the list, so the plan does not depend on how the requests were
  // collected.
  ArenaPlan result = plan({{64, 5, 6}, {64, 0, 9}}, 64);
  EXPECT_EQ(result.offsets, (llvm::SmallVector<int64_t>{64, 0}));
}

// With alignment 1, after the four buffers live at instruction 0 are placed
// (largest first, S2 before W2 by position, each on top of the others):
//
//   [0, 100) S1, dies at 0   [100, 150) W1, lives to 9
//   [150, 190) S2, dies at 0 [190, 230) W2, lives to 9
//
// a buffer of at most 40 bytes born at 5 is placed last, conflicts only with
// W1 and W2, and sees two gaps: [0, 100) (100 bytes) and [150, 190) (40
// bytes).
static std::vector<ArenaRequest> withTwoGaps(int64_t bytes) {
  return {{100, 0, 0}, {50, 0, 9}, {40, 0, 0}, {40, 0, 9}, {bytes, 5, 6}};
}

TEST(ArenaPlanner, BestFitPicksTheSmallestGapThatFits) {
  // 20 bytes fit both gaps; the 40-byte one is the tighter fit (first fit
  // would take offset 0).
  ArenaPlan result = plan(withTwoGaps(20), 1);
  EXPECT_EQ(result.offsets,
            (llvm::SmallVector<int64_t>{0, 100, 150, 190, 150}));
  EXPECT_EQ(result.arenaBytes, 230);
  EXPECT_EQ(result.liveBytesLowerBound, 230);
}

TEST(ArenaPlanner, ExactFitIsTheBestFit) {
  ArenaPlan result = plan(withTwoGaps(40), 1);
  EXPECT_EQ(result.offsets[4], 150);
  EXPECT_EQ(result.arenaBytes, 230);
}

// With alignment 1: X is live only at instruction 0 and W1 only from 1, so
// both start at 0; W2 (live throughout) goes above X, Y above W2, W3 above
// everything:
//
//   [0, 150) W1   [200, 320) W2   [320, 439) Y, dies at 0   [439, 549) W3
//   [0, 200) X, dies at 0
//
// A 100-byte buffer born at 5 conflicts with W1, W2 and W3 only, and sees a
// 50-byte gap [150, 200) and a 119-byte gap [320, 439).
static std::vector<ArenaRequest> withSmallAndLargeGap(int64_t bytes) {
  return {{200, 0, 0}, {150, 1, 9}, {120, 0, 9},
          {119, 0, 0}, {110, 0, 9}, {bytes, 5, 6}};
}

TEST(ArenaPlanner, BestFitSkipsGapsTooSmall) {
  ArenaPlan result = plan(withSmallAndLargeGap(100), 1);
  EXPECT_EQ(result.offsets,
            (llvm::SmallVector<int64_t>{0, 0, 200, 320, 439, 320}));
  EXPECT_EQ(result.arenaBytes, 549);
  EXPECT_EQ(result.liveBytesLowerBound, 549);
}

TEST(ArenaPlanner, AnotherOrderClosesTheHoleLargestFirstLeaves) {
  // Without Y and W3, largest first finds only the 50-byte gap for the new
  // buffer and puts it on top of W2 (420 bytes, a 50-byte hole). The
  // planner then tries other orders (the busiest instruction's buffers
  // first, by start, by lifetime, by bytes x lifetime, by end), and one of
  // them reaches the lower bound: W2 and the new buffer at the bottom, W1
  // above, X above W2 while it lives.
  ArenaPlan result =
      plan({{200, 0, 0}, {150, 1, 9}, {120, 0, 9}, {100, 5, 6}}, 1);
  EXPECT_EQ(result.arenaBytes, 370);
  // W1 + W2 + the new buffer at instruction 5.
  EXPECT_EQ(result.liveBytesLowerBound, 370);
  EXPECT_EQ(result.offsets, (llvm::SmallVector<int64_t>{120, 120, 0, 270}));
}

TEST(ArenaPlanner, SizesRoundUpToTheAlignment) {
  // Two 1-byte buffers live together take one alignment unit each.
  ArenaPlan result = plan({{1, 0, 1}, {1, 1, 2}}, 64);
  EXPECT_EQ(result.offsets, (llvm::SmallVector<int64_t>{0, 64}));
  EXPECT_EQ(result.arenaBytes, 128);
  EXPECT_EQ(result.liveBytesLowerBound, 128);

  // 65 bytes are two units of 64, one of 128.
  EXPECT_EQ(plan({{65, 0, 0}}, 64).arenaBytes, 128);
  EXPECT_EQ(plan({{65, 0, 0}}, 128).arenaBytes, 128);
  // An exact multiple is not rounded further.
  EXPECT_EQ(plan({{256, 0, 0}}, 128).arenaBytes, 256);
}

TEST(ArenaPlanner, AlignmentChangesTheGapsThatFit) {
  // At alignment 64 every size is rounded up to a multiple of 64 (the order
  // still follows the requested bytes), so the layout moves, and every
  // offset is a multiple of 64.
  ArenaPlan result = plan(withTwoGaps(20), 64);
  for (int64_t offset : result.offsets)
    EXPECT_EQ(offset % 64, 0);
  // S1 takes 128 bytes, every other buffer 64: the gaps are [0, 128) and
  // [192, 256), and the tighter one still wins.
  EXPECT_EQ(result.offsets,
            (llvm::SmallVector<int64_t>{0, 128, 192, 256, 192}));
  EXPECT_EQ(result.liveBytesLowerBound, 320);
  EXPECT_EQ(result.arenaBytes, 320);
}

TEST(ArenaPlanner, ZeroByteBuffersCostNothing) {
  ArenaPlan result = plan({{0, 0, 9}, {64, 0, 9}, {0, 3, 4}}, 64);
  EXPECT_EQ(result.arenaBytes, 64);
  EXPECT_EQ(result.liveBytesLowerBound, 64);
}

TEST(ArenaPlanner, LowerBoundIsThePeakOfAlignedLiveBytes) {
  // Live sets: {a} at 0, {a, b} at 1, {b, c} at 2, {c} at 3. Aligned to 64:
  // a = 128, b = 64, c = 192; the peak is b + c = 256 at instruction 2.
  ArenaPlan result = plan({{100, 0, 1}, {10, 1, 2}, {130, 2, 3}}, 64);
  EXPECT_EQ(result.liveBytesLowerBound, 256);
  EXPECT_GE(result.arenaBytes, 256);
  EXPECT_GT(result.efficiency(), 0.0);
  EXPECT_LE(result.efficiency(), 1.0);
}

TEST(ArenaPlanner, RandomPlansNeverOverlapLiveBuffers) {
  std::mt19937_64 random(20261121);
  const int64_t alignments[] = {1, 8, 64, 256};
  for (int trial = 0; trial < 1000; ++trial) {
    int64_t alignment = alignments[random() % 4];
    size_t count = random() % 40;
    int64_t horizon = 1 + random() % 30;
    std::vector<ArenaRequest> requests;
    for (size_t i = 0; i < count; ++i) {
      ArenaRequest request;
      // Mostly small sizes, sometimes zero, sometimes large, so that gaps
      // of every kind appear.
      switch (random() % 4) {
      case 0:
        request.bytes = random() % 2 ? 0 : 1 + random() % 16;
        break;
      case 1:
      case 2:
        request.bytes = 1 + random() % 1024;
        break;
      default:
        request.bytes = 1 + random() % (1 << 20);
        break;
      }
      request.begin = random() % horizon;
      request.end = request.begin + random() % (horizon - request.begin + 1);
      requests.push_back(request);
    }
    ArenaPlan result = planArena(requests, alignment);
    std::string problem = checkPlan(requests, alignment, result);
    ASSERT_EQ(problem, "") << "trial " << trial << ", " << count
                           << " requests, alignment " << alignment;
    if (!requests.empty()) {
      EXPECT_LE(result.efficiency(), 1.0);
    }
  }
}

TEST(ArenaPlanner, PlansAreDeterministic) {
  std::mt19937_64 random(7);
  std::vector<ArenaRequest> requests;
  for (int i = 0; i < 50; ++i) {
    int64_t begin = random() % 20;
    requests.push_back({static_cast<int64_t>(64 * (1 + random() % 8)), begin,
                        begin + static_cast<int64_t>(random() % 5)});
  }
  ArenaPlan first = planArena(requests, 64), second = planArena(requests, 64);
  EXPECT_EQ(first.offsets, second.offsets);
  EXPECT_EQ(first.arenaBytes, second.arenaBytes);
}
