//===- DType.cpp - Element types the runtime stores -----------------------===//

#include "zero/runtime/DType.h"

#include "absl/strings/str_cat.h"

#include <cmath>

namespace zero::rt {

absl::string_view dtypeName(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "f32";
  case DType::bf16:
    return "bf16";
  case DType::f16:
    return "f16";
  case DType::i32:
    return "i32";
  case DType::i64:
    return "i64";
  case DType::i8:
    return "i8";
  }
  return "?";
}

absl::StatusOr<DType> parseDType(absl::string_view name) {
  for (DType dtype :
       {DType::f32, DType::bf16, DType::f16, DType::i32, DType::i64, DType::i8})
    if (dtypeName(dtype) == name)
      return dtype;
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported element type '", name,
                   "' (expected f32, bf16, f16, i32, i64 or i8)"));
}

float f16ToFloat(uint16_t bits) {
  uint32_t sign = (bits >> 15) & 1u;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    magnitude = mantissa ? NAN : INFINITY;
  else
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u),
                           static_cast<int>(exponent) - 25);
  return sign ? -magnitude : magnitude;
}

uint16_t floatToF16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof(word));
  uint16_t sign = static_cast<uint16_t>((word >> 16) & 0x8000u);
  float magnitude = std::fabs(value);
  if (std::isnan(value))
    return sign | 0x7e00u;
  if (magnitude >= 65520.0f) // Rounds to infinity.
    return sign | 0x7c00u;
  if (magnitude < std::ldexp(1.0f, -14)) {
    // Subnormal: units of 2^-24, round to nearest even.
    float units = magnitude * std::ldexp(1.0f, 24);
    return sign | static_cast<uint16_t>(std::nearbyint(units));
  }
  int exponent;
  float fraction = std::frexp(magnitude, &exponent); // in [0.5, 1)
  // 11 significant bits: scale to [1024, 2048) and round to nearest even.
  float scaled = std::nearbyint(fraction * 2048.0f);
  if (scaled >= 2048.0f) {
    scaled /= 2.0f;
    ++exponent;
  }
  uint32_t biased = static_cast<uint32_t>(exponent - 1 + 15);
  if (biased >= 31)
    return sign | 0x7c00u;
  return sign | static_cast<uint16_t>((biased << 10) |
                                      (static_cast<uint32_t>(scaled) & 0x3ffu));
}

} // namespace zero::rt
