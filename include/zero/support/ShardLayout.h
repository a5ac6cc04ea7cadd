//===- ShardLayout.h - Shard shapes and padding ------------------*- C++
//-*-===//
//
// The arithmetic every part of the project agrees on: how a tensor of a given
// logical shape is cut into shards over a group of ranks, and how much padding
// that takes. Shards are ceil-divided, so every rank holds the same number of
// elements and the last shard carries the padding (DeepSpeed and ColossalAI's
// flat buckets; FSDP2's dim-0 shards).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_SUPPORT_SHARDLAYOUT_H
#define ZERO_SUPPORT_SHARDLAYOUT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>

namespace zero {

/// ceil(value / divisor) for value >= 0, divisor > 0.
int64_t ceilDiv(int64_t value, int64_t divisor);

/// Number of elements (or rows) each of `groupSize` ranks holds when `size`
/// is split evenly with padding.
int64_t shardSize(int64_t size, int64_t groupSize);

/// Bytes of `length` block-quantized codes of `bits` bits (8 or 4) that
/// start on a byte of their own: one segment of dist.quantize's codes.
int64_t quantizedSegmentBytes(int64_t length, int64_t bits);

/// `size` rounded up to a multiple of `groupSize`.
int64_t paddedSize(int64_t size, int64_t groupSize);

/// Padding elements (or rows) added so that `size` splits evenly.
int64_t paddingOf(int64_t size, int64_t groupSize);

/// Number of elements of a static shape (1 for rank 0).
int64_t numElements(llvm::ArrayRef<int64_t> shape);

/// Whether a tensor of `size` along one dimension, split `splitFactor` ways,
/// can be the source of a local size `localIn` (split `factorIn` ways) and of
/// `localOut` (split `factorOut` ways). Used to check reshard-like ops whose
/// logical size is not written down: some logical size must explain both.
bool localSizesAgree(int64_t localIn, int64_t factorIn, int64_t localOut,
                     int64_t factorOut);

/// How a tensor's storage is laid out across the ranks of one placement axis.
enum class StorageLayout {
  /// Every rank holds the whole tensor.
  Replicated,
  /// The tensor is flattened, padded to a multiple of the group size, and each
  /// rank holds one contiguous 1-D chunk.
  Flat,
  /// The first dimension is split (padded); the other dimensions are whole.
  Dim0,
};

/// The shape one rank holds of a tensor with `logicalShape` stored with
/// `layout` over `groupSize` ranks. Returns std::nullopt when the layout does
/// not apply (dim-0 sharding of a rank-0 tensor).
std::optional<llvm::SmallVector<int64_t>>
localShapeOf(llvm::ArrayRef<int64_t> logicalShape, StorageLayout layout,
             int64_t groupSize);

} // namespace zero

#endif // ZERO_SUPPORT_SHARDLAYOUT_H
