//===- DType.h - Element types the runtime stores ---------------*- C++ -*-===//
//
// The runtime works on raw buffers; a DType says how to read one. Kernels
// store f32, bf16 or f16 and accumulate in f32; ids are i32 or i64.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_DTYPE_H
#define ZERO_RUNTIME_DTYPE_H

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include <cstdint>
#include <cstring>

namespace zero::rt {

/// i8 holds quantized data (dist.quantize): moved by collectives, never
/// reduced, stored or read from files.
enum class DType { f32, bf16, f16, i32, i64, i8 };

inline int64_t dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::f32:
  case DType::i32:
    return 4;
  case DType::bf16:
  case DType::f16:
    return 2;
  case DType::i64:
    return 8;
  case DType::i8:
    return 1;
  }
  return 0;
}

inline bool isFloat(DType dtype) {
  return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16;
}

/// "f32", "bf16", ... as MLIR spells them.
absl::string_view dtypeName(DType dtype);
absl::StatusOr<DType> parseDType(absl::string_view name);

/// Round-to-nearest-even conversions between f32 and the 16-bit formats.
inline float bf16ToFloat(uint16_t bits) {
  uint32_t word = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof(value));
  return value;
}

inline uint16_t floatToBf16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof(word));
  if ((word & 0x7fffffffu) > 0x7f800000u) // NaN stays a quiet NaN.
    return static_cast<uint16_t>((word >> 16) | 0x40);
  uint32_t roundingBias = 0x7fffu + ((word >> 16) & 1u);
  return static_cast<uint16_t>((word + roundingBias) >> 16);
}

float f16ToFloat(uint16_t bits);
uint16_t floatToF16(float value);

/// Reads element `index` of a float buffer of `dtype` as f32.
inline float loadAsFloat(const void *data, DType dtype, int64_t index) {
  switch (dtype) {
  case DType::f32:
    return static_cast<const float *>(data)[index];
  case DType::bf16:
    return bf16ToFloat(static_cast<const uint16_t *>(data)[index]);
  case DType::f16:
    return f16ToFloat(static_cast<const uint16_t *>(data)[index]);
  default:
    return 0.0f;
  }
}

/// Writes f32 `value` into element `index` of a float buffer, rounding.
inline void storeFromFloat(void *data, DType dtype, int64_t index,
                           float value) {
  switch (dtype) {
  case DType::f32:
    static_cast<float *>(data)[index] = value;
    return;
  case DType::bf16:
    static_cast<uint16_t *>(data)[index] = floatToBf16(value);
    return;
  case DType::f16:
    static_cast<uint16_t *>(data)[index] = floatToF16(value);
    return;
  default:
    return;
  }
}

} // namespace zero::rt

#endif // ZERO_RUNTIME_DTYPE_H
