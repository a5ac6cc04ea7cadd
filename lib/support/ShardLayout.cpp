//===- ShardLayout.cpp - Shard shapes and padding -------------------------===//

#include "zero/support/ShardLayout.h"

#include <algorithm>
#include <cassert>

namespace zero {

int64_t ceilDiv(int64_t value, int64_t divisor) {
  assert(value >= 0 && divisor > 0 &&
         "ceilDiv expects value >= 0, divisor > 0");
  return (value + divisor - 1) / divisor;
}

int64_t shardSize(int64_t size, int64_t groupSize) {
  return ceilDiv(size, groupSize);
}

int64_t quantizedSegmentBytes(int64_t length, int64_t bits) {
  return ceilDiv(length * bits, 8);
}

int64_t paddedSize(int64_t size, int64_t groupSize) {
  return shardSize(size, groupSize) * groupSize;
}

int64_t paddingOf(int64_t size, int64_t groupSize) {
  return paddedSize(size, groupSize) - size;
}

int64_t numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  return count;
}

bool localSizesAgree(int64_t localIn, int64_t factorIn, int64_t localOut,
                     int64_t factorOut) {
  // A logical size L gives local size ceil(L / f), so a local size l (l >= 1)
  // comes from L in ((l - 1) * f, l * f]. Both locals must share some L.
  // Zero-sized tensors only come from L = 0.
  if (localIn == 0 || localOut == 0)
    return localIn == 0 && localOut == 0;
  int64_t lowIn = (localIn - 1) * factorIn + 1, highIn = localIn * factorIn;
  int64_t lowOut = (localOut - 1) * factorOut + 1,
          highOut = localOut * factorOut;
  return std::max(lowIn, lowOut) <= std::min(highIn, highOut);
}

std::optional<llvm::SmallVector<int64_t>>
localShapeOf(llvm::ArrayRef<int64_t> logicalShape, StorageLayout layout,
             int64_t groupSize) {
  switch (layout) {
  case StorageLayout::Replicated:
    return llvm::SmallVector<int64_t>(logicalShape);
  case StorageLayout::Flat:
    return llvm::SmallVector<int64_t>{
        shardSize(numElements(logicalShape), groupSize)};
  case StorageLayout::Dim0: {
    if (logicalShape.empty())
      return std::nullopt;
    llvm::SmallVector<int64_t> local(logicalShape);
    local[0] = shardSize(local[0], groupSize);
    return local;
  }
  }
  return std::nullopt;
}

} // namespace zero
