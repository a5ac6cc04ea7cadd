//===- CastLoopsTest.cpp - Vectorized f32 <-> bf16 / f16 conversions ------===//
//
// On every instruction set this CPU and the build have, the Highway
// conversions give exactly the bits of the scalar ones in DType.h: every
// one of the 65536 bf16 and f16 values widened, and narrowed a sample of
// 17 million f32 bit patterns spread over the whole range plus every tie,
// its neighbours and the special values (NaNs with payloads, infinities,
// zeros, subnormals, the f16 overflow threshold), at odd offsets.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/CastLoops.h"

#include "zero/runtime/CpuKernels.h"
#include "zero/runtime/DType.h"

#include "hwy/targets.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace zero::rt;
using namespace zero::rt::cpu;

namespace {

uint32_t bitsOf(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

float fromBits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

/// Runs `body` once per Highway target the CPU supports and the library
/// was compiled for, with the dispatch forced to it.
void forEachTarget(const std::function<void()> &body) {
  std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    std::string name = castLoopsTarget();
    EXPECT_EQ(name, hwy::TargetName(target));
    SCOPED_TRACE(name);
    body();
  }
  hwy::SetSupportedTargetsForTest(0);
}

std::vector<uint16_t> allHalves() {
  std::vector<uint16_t> halves(65536);
  for (uint32_t h = 0; h < 65536; ++h)
    halves[h] = static_cast<uint16_t>(h);
  return halves;
}

/// Widens all 16-bit patterns with `block` at offsets 0, 1 and 5 (lengths
/// that leave a partial last vector) and compares with `scalar`.
void checkWidening(void (*block)(int64_t, const uint16_t *, float *),
                   float (*scalar)(uint16_t)) {
  std::vector<uint16_t> halves = allHalves();
  for (int64_t offset : {0, 1, 5}) {
    SCOPED_TRACE(offset);
    int64_t n = static_cast<int64_t>(halves.size()) - offset;
    std::vector<float> got(n);
    block(n, halves.data() + offset, got.data());
    int64_t mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h = halves[offset + i];
      if (bitsOf(got[i]) != bitsOf(scalar(h)) && mismatches++ < 5)
        ADD_FAILURE() << "0x" << std::hex << h << ": 0x" << bitsOf(got[i])
                      << " instead of 0x" << bitsOf(scalar(h));
    }
    EXPECT_EQ(mismatches, 0);
  }
}

/// The f32 patterns to narrow: every 251st bit pattern, and around every
/// value and tie of both 16-bit formats, and the special values.
std::vector<float> narrowingInputs() {
  std::vector<uint32_t> words;
  for (uint64_t w = 0; w <= 0xffffffffu; w += 251)
    words.push_back(static_cast<uint32_t>(w));
  for (uint32_t h = 0; h < 65536; ++h) {
    // bf16: the value, the tie above it and their neighbours.
    for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      words.push_back((h << 16) | low);
    // f16: the value, the midpoint to the next (exact in f32) and their
    // neighbours.
    float value = f16ToFloat(static_cast<uint16_t>(h));
    if (!std::isfinite(value))
      continue;
    float next = f16ToFloat(static_cast<uint16_t>(h + 1));
    if (!std::isfinite(next) || (h & 0x7fffu) == 0x7fffu)
      next = std::copysign(65520.0f, value); // the tie to infinity
    float mid = static_cast<float>((static_cast<double>(value) + next) / 2);
    for (float x : {value, mid})
      for (int32_t step : {-1, 0, 1})
        words.push_back(bitsOf(x) + static_cast<uint32_t>(step));
  }
  std::vector<float> values;
  for (uint32_t w : words)
    values.push_back(fromBits(w));
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::max(),
                  -std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::min(), 65504.0f, 65519.996f,
                  65520.0f, -65520.0f, 0x1p-24f, 0x1p-25f, 0x3p-25f, 0x1.8p-25f,
                  0x1p-14f, 0x1.ff8p-15f, 0x1.ffcp-15f})
    values.push_back(x);
  for (uint32_t nan :
       {0x7f800001u, 0x7fc00000u, 0xffc00000u, 0x7fbfffffu, 0xff800001u,
        0x7fffffffu, 0xffffffffu, 0x7f812345u, 0x7fa00000u, 0xffa0a0a0u})
    values.push_back(fromBits(nan));
  return values;
}

void checkNarrowing(void (*block)(int64_t, const float *, uint16_t *),
                    uint16_t (*scalar)(float), const std::vector<float> &x,
                    const std::vector<uint16_t> &want) {
  for (int64_t offset : {0, 1, 3}) {
    SCOPED_TRACE(offset);
    int64_t n = static_cast<int64_t>(x.size()) - offset;
    std::vector<uint16_t> got(n);
    block(n, x.data() + offset, got.data());
    int64_t mismatches = 0;
    for (int64_t i = 0; i < n; ++i)
      if (got[i] != want[offset + i] && mismatches++ < 5)
        ADD_FAILURE() << "0x" << std::hex << bitsOf(x[offset + i]) << ": 0x"
                      << got[i] << " instead of 0x" << want[offset + i]
                      << " (scalar 0x" << scalar(x[offset + i]) << ")";
    EXPECT_EQ(mismatches, 0);
  }
}

TEST(CastLoopsTest, Bf16ToFloatIsExhaustivelyTheScalarConversion) {
  forEachTarget([] { checkWidening(bf16ToFloatBlock, bf16ToFloat); });
}

TEST(CastLoopsTest, F16ToFloatIsExhaustivelyTheScalarConversion) {
  forEachTarget([] { checkWidening(f16ToFloatBlock, f16ToFloat); });
}

TEST(CastLoopsTest, FloatToBf16IsTheScalarConversion) {
  std::vector<float> x = narrowingInputs();
  ASSERT_GT(x.size(), 17000000u);
  std::vector<uint16_t> want(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    want[i] = floatToBf16(x[i]);
  forEachTarget(
      [&] { checkNarrowing(floatToBf16Block, floatToBf16, x, want); });
}

TEST(CastLoopsTest, FloatToF16IsTheScalarConversion) {
  std::vector<float> x = narrowingInputs();
  std::vector<uint16_t> want(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    want[i] = floatToF16(x[i]);
  forEachTarget([&] { checkNarrowing(floatToF16Block, floatToF16, x, want); });
}

TEST(CastLoopsTest, RoundsTiesToEvenAndKeepsNaNsQuiet) {
  // Spot checks of the scalar contract itself, through the vector code.
  const float x[] = {
      fromBits(0x3f808000u), // bf16 tie, even below: 0x3f80
      fromBits(0x3f818000u), // bf16 tie, odd below: 0x3f82
      fromBits(0x7f800001u), // signaling NaN: quiet bf16 NaN
      65520.0f,              // f16: rounds to infinity
      0x1p-25f,              // f16: tie between 0 and 2^-24: 0
      0x3p-25f,              // f16: tie between 1 and 2 units: 2
  };
  uint16_t bf16[6], f16[6];
  floatToBf16Block(6, x, bf16);
  floatToF16Block(6, x, f16);
  EXPECT_EQ(bf16[0], 0x3f80u);
  EXPECT_EQ(bf16[1], 0x3f82u);
  EXPECT_EQ(bf16[2], 0x7fc0u);
  EXPECT_EQ(f16[3], 0x7c00u);
  EXPECT_EQ(f16[4], 0x0000u);
  EXPECT_EQ(f16[5], 0x0002u);
  float widened[2];
  const uint16_t nans[] = {0x7d01u, 0xfe00u};
  f16ToFloatBlock(2, nans, widened);
  EXPECT_EQ(bitsOf(widened[0]), 0x7fc00000u);
  EXPECT_EQ(bitsOf(widened[1]), 0xffc00000u);
}

TEST(CastLoopsTest, CastKernelNarrowsInPlace) {
  // train.cast f32 -> bf16 / f16 writing over its own input (one pass
  // through the conversion loops, which read each vector before writing
  // it), at a length that leaves a partial last vector.
  const int64_t n = 1001;
  for (DType to : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(std::string(dtypeName(to)));
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i)
      x[i] = std::ldexp(static_cast<float>(i) - 500.25f, -3);
    std::vector<float> buffer = x;
    absl::StatusOr<KernelFn> cast = bindCpuKernel(
        "train.cast", {}, {TensorSpec{DType::f32, {n}}}, {TensorSpec{to, {n}}});
    ASSERT_TRUE(cast.ok()) << cast.status();
    std::vector<const void *> ins = {buffer.data()};
    std::vector<void *> outs = {buffer.data()};
    ASSERT_TRUE((*cast)(ins, outs, KernelContext()).ok());
    std::vector<uint16_t> got(n);
    std::memcpy(got.data(), buffer.data(), n * sizeof(uint16_t));
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i],
                to == DType::bf16 ? floatToBf16(x[i]) : floatToF16(x[i]))
          << "at " << i;
  }
}

} // namespace
