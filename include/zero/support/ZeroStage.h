//===- ZeroStage.h - The range of ZeRO stages -------------------*- C++ -*-===//
//
// The one owner of which stages exist: the builder's enable_zero, the
// zero-pipeline and zero-shard passes check a stage here and word the
// refusal alike.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_SUPPORT_ZEROSTAGE_H
#define ZERO_SUPPORT_ZEROSTAGE_H

#include <cstdint>
#include <string>

namespace zero {

/// ZeRO's stages: 1 shards the optimizer state, 2 the gradients too, 3 the
/// parameters too; 0 is plain data parallelism, where a caller takes it.
inline constexpr int64_t kLowestShardingStage = 1;
inline constexpr int64_t kHighestZeroStage = 3;

/// Whether `stage` is one: 1-3, or 0-3 where `plainAllowed`.
inline bool isZeroStage(int64_t stage, bool plainAllowed) {
  return stage >= (plainAllowed ? 0 : kLowestShardingStage) &&
         stage <= kHighestZeroStage;
}

/// "stage must be 1, 2 or 3, got 5" (0, 1, 2 or 3 where `plainAllowed`):
/// the refusal of a stage isZeroStage rejects, for the caller to prefix
/// with where it was given.
inline std::string zeroStageRangeError(int64_t stage, bool plainAllowed) {
  return std::string("stage must be ") + (plainAllowed ? "0, " : "") +
         "1, 2 or 3, got " + std::to_string(stage);
}

} // namespace zero

#endif // ZERO_SUPPORT_ZEROSTAGE_H
