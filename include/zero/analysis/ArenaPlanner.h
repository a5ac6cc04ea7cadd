//===- ArenaPlanner.h - Static offsets for transient buffers ----*- C++ -*-===//
//
// Every transient value of a lowered step lives in one arena at an offset
// fixed at compile time. Values whose lifetimes do not overlap may share
// bytes; the planner picks offsets so the arena stays close to the largest
// sum of simultaneously live bytes, which no placement can beat.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_ANALYSIS_ARENAPLANNER_H
#define ZERO_ANALYSIS_ARENAPLANNER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace zero {

/// A transient buffer of `bytes`, live from instruction `begin` through
/// instruction `end` (both inclusive).
struct ArenaRequest {
  int64_t bytes = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

struct ArenaPlan {
  /// One offset per request, each a multiple of the alignment.
  llvm::SmallVector<int64_t> offsets;
  int64_t arenaBytes = 0;
  /// The largest sum of (aligned) live bytes at any instruction: no plan
  /// can use less arena than this.
  int64_t liveBytesLowerBound = 0;

  /// lower bound / arena, in (0, 1]; 1 for an empty arena.
  double efficiency() const {
    return arenaBytes == 0 ? 1.0
                           : static_cast<double>(liveBytesLowerBound) /
                                 static_cast<double>(arenaBytes);
  }
};

/// Places the largest buffers first, each in the best-fitting gap (the
/// smallest one it fits) left by already placed buffers whose lifetimes
/// overlap its own, or on top of them when no gap fits.
ArenaPlan planArena(llvm::ArrayRef<ArenaRequest> requests, int64_t alignment);

} // namespace zero

#endif // ZERO_ANALYSIS_ARENAPLANNER_H
