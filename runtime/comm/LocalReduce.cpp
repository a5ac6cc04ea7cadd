//===- LocalReduce.cpp - Fixed-order reduction of rank contributions ------===//

#include "LocalReduce.h"

#include <algorithm>
#include <cmath>

namespace zero::rt {
namespace {

// Small enough that the accumulator and one source chunk stay in L1, large
// enough that the per-chunk dispatch on the element type does not show.
constexpr int64_t kChunk = 1024;

void loadChunk(const void *source, DType dtype, int64_t begin, int64_t length,
               float *into) {
  switch (dtype) {
  case DType::f32:
    std::copy_n(static_cast<const float *>(source) + begin, length, into);
    return;
  case DType::bf16: {
    const uint16_t *bits = static_cast<const uint16_t *>(source) + begin;
    for (int64_t i = 0; i < length; ++i)
      into[i] = bf16ToFloat(bits[i]);
    return;
  }
  case DType::f16: {
    const uint16_t *bits = static_cast<const uint16_t *>(source) + begin;
    for (int64_t i = 0; i < length; ++i)
      into[i] = f16ToFloat(bits[i]);
    return;
  }
  default:
    std::fill_n(into, length, 0.0f);
    return;
  }
}

void storeChunk(const float *from, int64_t length, void *out, DType dtype,
                int64_t begin) {
  switch (dtype) {
  case DType::f32:
    std::copy_n(from, length, static_cast<float *>(out) + begin);
    return;
  case DType::bf16: {
    uint16_t *bits = static_cast<uint16_t *>(out) + begin;
    for (int64_t i = 0; i < length; ++i)
      bits[i] = floatToBf16(from[i]);
    return;
  }
  case DType::f16: {
    uint16_t *bits = static_cast<uint16_t *>(out) + begin;
    for (int64_t i = 0; i < length; ++i)
      bits[i] = floatToF16(from[i]);
    return;
  }
  default:
    return;
  }
}

} // namespace

void reduceInOrder(const void *const *sources, int numSources, void *out,
                   int64_t count, DType dtype, ReduceKind kind) {
  float accumulator[kChunk];
  float incoming[kChunk];
  for (int64_t begin = 0; begin < count; begin += kChunk) {
    int64_t length = std::min(kChunk, count - begin);
    loadChunk(sources[0], dtype, begin, length, accumulator);
    for (int source = 1; source < numSources; ++source) {
      loadChunk(sources[source], dtype, begin, length, incoming);
      if (kind == ReduceKind::max) {
        // A NaN anywhere wins, whatever its rank, so that a diverged
        // gradient is not hidden by the order of the ranks.
        for (int64_t i = 0; i < length; ++i) {
          float a = accumulator[i], b = incoming[i];
          accumulator[i] = (std::isnan(a) || a >= b) ? a : b;
        }
      } else {
        for (int64_t i = 0; i < length; ++i)
          accumulator[i] += incoming[i];
      }
    }
    if (kind == ReduceKind::mean) {
      float divisor = static_cast<float>(numSources);
      for (int64_t i = 0; i < length; ++i)
        accumulator[i] /= divisor;
    }
    storeChunk(accumulator, length, out, dtype, begin);
  }
}

void divideInPlace(float *data, int64_t count, int divisor) {
  float by = static_cast<float>(divisor);
  for (int64_t i = 0; i < count; ++i)
    data[i] /= by;
}

} // namespace zero::rt
