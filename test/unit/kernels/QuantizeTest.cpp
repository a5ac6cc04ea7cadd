//===- QuantizeTest.cpp - dist.quantize and dist.dequantize ---------------===//
//
// The block quantizer ZeRO++'s qwZ and qgZ move data with: each block's
// scale is its largest magnitude / 127 (int8) or / 7 (int4), every
// element's error after a round trip is within half its block's scale,
// blocks restart at every segment, int4 codes pack two to a byte with each
// segment on bytes of its own, and a block of zeros or one holding a NaN is
// handled without dividing by zero or losing the overflow.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <cmath>

namespace zero::rt::test {
namespace {

struct Layout {
  int64_t segments, length, block, bits = 8;
  int64_t blocksPerSegment() const { return (length + block - 1) / block; }
  int64_t scales() const { return segments * blocksPerSegment(); }
  int64_t codeBytes() const { return segments * ((length * bits + 7) / 8); }
  /// Code `i` of segment `segment`, unpacked.
  int code(const Tensor &codes, int64_t segment, int64_t i) const {
    if (bits == 8)
      return static_cast<int>(codes.at(segment * length + i));
    auto byte = static_cast<uint8_t>(
        static_cast<int8_t>(codes.at(segment * ((length + 1) / 2) + i / 2)));
    int nibble = (i % 2 ? byte >> 4 : byte) & 0x0f;
    return nibble >= 8 ? nibble - 16 : nibble;
  }
};

mlir::DictionaryAttr params(const Layout &layout) {
  return dict({{"block", i64(layout.block)},
               {"segments", i64(layout.segments)},
               {"bits", i64(layout.bits)}});
}

TEST(QuantizeTest, RoundTripIsWithinHalfAScale) {
  // Blocks that divide the segment and blocks that leave a short last one;
  // one segment and several.
  // Odd segment lengths and odd blocks put int4 blocks across bytes; long
  // ones (101, 1024) take the vector nibble loops, after an odd start too.
  std::vector<Layout> layouts;
  for (int64_t bits : {8, 4})
    for (Layout layout :
         {Layout{1, 256, 64}, Layout{3, 100, 64}, Layout{4, 7, 3},
          Layout{2, 2048, 2048}, Layout{3, 9, 5}, Layout{2, 301, 101},
          Layout{1, 4096, 1024}}) {
      layout.bits = bits;
      layouts.push_back(layout);
    }
  for (const Layout &layout : layouts)
    for (DType dtype : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(dtypeLabel(dtype) + " int" + std::to_string(layout.bits) +
                   " segments " + std::to_string(layout.segments) + " of " +
                   std::to_string(layout.length) + ", block " +
                   std::to_string(layout.block));
      int64_t n = layout.segments * layout.length;
      float largestCode = layout.bits == 8 ? 127.0f : 7.0f;
      Tensor x = randomTensor(dtype, {n}, 11, -3.0, 3.0);
      Tensor codes(DType::i8, {layout.codeBytes()}),
          scales(DType::f32, {layout.scales()});
      scales.poison();
      ASSERT_TRUE(
          runKernel("dist.quantize", params(layout), {&x}, {&codes, &scales})
              .ok());
      Tensor back(dtype, {n});
      back.poison();
      ASSERT_TRUE(runKernel("dist.dequantize", params(layout),
                            {&codes, &scales}, {&back})
                      .ok());
      int64_t scaleIndex = 0;
      for (int64_t segment = 0; segment < layout.segments; ++segment)
        for (int64_t begin = 0; begin < layout.length;
             begin += layout.block, ++scaleIndex) {
          int64_t first = segment * layout.length + begin;
          int64_t count = std::min(layout.block, layout.length - begin);
          float largest = 0.0f;
          for (int64_t i = first; i < first + count; ++i)
            largest = std::max(largest, std::fabs(static_cast<float>(x.at(i))));
          double scale = scales.at(scaleIndex);
          EXPECT_EQ(scale, largest / largestCode) << "block " << scaleIndex;
          for (int64_t i = first; i < first + count; ++i) {
            int code = layout.code(codes, segment, i - segment * layout.length);
            EXPECT_LE(std::abs(code), largestCode);
            // Half a step, plus the rounding of the two products and, for
            // bf16, of the result.
            double bound = 0.5 * scale * (1 + 1e-5) +
                           relativeTolerance(dtype) * std::fabs(x.at(i));
            // The bytes decoded here, independently of the kernel, hold the
            // element's code where the format says.
            EXPECT_LE(std::fabs(code * scale - x.at(i)), bound)
                << "element " << i << " has code " << code;
            EXPECT_LE(std::fabs(back.at(i) - x.at(i)), bound)
                << "element " << i << ": " << x.at(i) << " came back as "
                << back.at(i) << " with scale " << scale;
          }
        }
    }
}

TEST(QuantizeTest, LargestElementKeepsItsValue) {
  Tensor x = fromValues(DType::f32, {5}, {0.5, -2.0, 1.0, 0.25, 0.0});
  Tensor codes(DType::i8, {5}), scales(DType::f32, {1});
  Layout layout{1, 5, 8};
  ASSERT_TRUE(
      runKernel("dist.quantize", params(layout), {&x}, {&codes, &scales}).ok());
  EXPECT_EQ(codes.at(1), -127);
  EXPECT_EQ(codes.at(4), 0);
  EXPECT_EQ(codes.at(2), 64); // 63.5 rounds to the even 64.
}

TEST(QuantizeTest, Int4PacksTwoCodesPerByteAndSegmentsOnTheirOwnBytes) {
  // Scale 3/7 in each segment: codes 2, 5, 7 and -2, -5, -7; the even
  // element in the low nibble, and a zero high nibble after each odd
  // segment's last code.
  Tensor x = fromValues(DType::f32, {6}, {1, 2, 3, -1, -2, -3});
  Tensor codes(DType::i8, {4}), scales(DType::f32, {2});
  codes.poison();
  Layout layout{2, 3, 3, 4};
  ASSERT_TRUE(
      runKernel("dist.quantize", params(layout), {&x}, {&codes, &scales}).ok());
  const uint8_t expected[] = {0x52, 0x07, 0xbe, 0x09};
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_EQ(static_cast<uint8_t>(static_cast<int8_t>(codes.at(i))),
              expected[i])
        << "byte " << i;
  EXPECT_EQ(scales.at(0), 3.0f / 7.0f);
  Tensor back(DType::f32, {6});
  ASSERT_TRUE(
      runKernel("dist.dequantize", params(layout), {&codes, &scales}, {&back})
          .ok());
  EXPECT_EQ(back.at(2), 3.0f);
  EXPECT_EQ(back.at(4), -5 * (3.0f / 7.0f));
}

TEST(QuantizeTest, ZeroBlockHasZeroScaleAndCodes) {
  Tensor x = fromValues(DType::f32, {6}, {0, 0, 0, 1, 2, 3});
  Tensor codes(DType::i8, {6}), scales(DType::f32, {2});
  Layout layout{2, 3, 3};
  ASSERT_TRUE(
      runKernel("dist.quantize", params(layout), {&x}, {&codes, &scales}).ok());
  EXPECT_EQ(scales.at(0), 0.0);
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(codes.at(i), 0);
  Tensor back(DType::f32, {6});
  back.poison();
  ASSERT_TRUE(
      runKernel("dist.dequantize", params(layout), {&codes, &scales}, {&back})
          .ok());
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(back.at(i), 0.0);
  EXPECT_EQ(back.at(5), 3.0);
}

TEST(QuantizeTest, OverflowSurvivesTheRoundTrip) {
  // An infinite or NaN gradient must still read as an overflow after the
  // move, so that the loss scaler skips the step.
  for (double bad : {std::nan(""), static_cast<double>(INFINITY)}) {
    Tensor x = fromValues(DType::f32, {4}, {1, bad, 2, 3});
    Tensor codes(DType::i8, {4}), scales(DType::f32, {2});
    Layout layout{1, 4, 2};
    ASSERT_TRUE(
        runKernel("dist.quantize", params(layout), {&x}, {&codes, &scales})
            .ok());
    Tensor back(DType::f32, {4});
    ASSERT_TRUE(
        runKernel("dist.dequantize", params(layout), {&codes, &scales}, {&back})
            .ok());
    EXPECT_FALSE(std::isfinite(back.at(0)));
    EXPECT_FALSE(std::isfinite(back.at(1)));
    EXPECT_NEAR(back.at(3), 3.0, 3.0 / 254);
  }
}

TEST(QuantizeTest, BadLayoutsAreRefused) {
  Tensor x(DType::f32, {10}), codes(DType::i8, {10});
  Tensor fewScales(DType::f32, {2}), scales(DType::f32, {4});
  absl::StatusOr<KernelFn> wrongCount = bindKernel(
      "dist.quantize", params({2, 5, 4}), {&x}, {&codes, &fewScales});
  ASSERT_FALSE(wrongCount.ok());
  EXPECT_EQ(wrongCount.status().message(),
            "dist.quantize: needs 4 scales for 2 segment(s) of 5 elements in "
            "blocks of 4, got tensor<2xf32>");
  absl::StatusOr<KernelFn> uneven =
      bindKernel("dist.quantize", params({3, 3, 4}), {&x}, {&codes, &scales});
  ASSERT_FALSE(uneven.ok());
  EXPECT_EQ(uneven.status().message(),
            "dist.quantize: 10 elements do not cut into 3 equal segments");
  Tensor wide(DType::f32, {10});
  absl::StatusOr<KernelFn> notCodes =
      bindKernel("dist.dequantize", params({2, 5, 4}), {&wide, &scales}, {&x});
  ASSERT_FALSE(notCodes.ok());
  EXPECT_EQ(notCodes.status().message(),
            "dist.dequantize: needs 10 bytes of int8 codes for "
            "tensor<10xf32>, got tensor<10xf32>");
  // int4 codes of 2 segments of 5 take 3 bytes each.
  Layout int4{2, 5, 4, 4};
  absl::StatusOr<KernelFn> unpacked =
      bindKernel("dist.quantize", params(int4), {&x}, {&codes, &scales});
  ASSERT_FALSE(unpacked.ok());
  EXPECT_EQ(unpacked.status().message(),
            "dist.quantize: needs 6 bytes of int4 codes for tensor<10xf32>, "
            "got tensor<10xi8>");
  Layout int3{2, 5, 4, 3};
  absl::StatusOr<KernelFn> threeBits =
      bindKernel("dist.quantize", params(int3), {&x}, {&codes, &scales});
  ASSERT_FALSE(threeBits.ok());
  EXPECT_EQ(threeBits.status().message(),
            "dist.quantize: has 3-bit codes; int8 and int4 are supported");
}

} // namespace
} // namespace zero::rt::test
