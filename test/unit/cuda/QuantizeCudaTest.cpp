//===- QuantizeCudaTest.cpp - Block int8 and int4 quantization on CUDA ----===//
//
// dist.quantize and dist.dequantize on the GPU against the CPU kernels
// (QuantizeTest.cpp checks those against the error bound): the same codes,
// scales and values, for int8 and int4 codes, one segment and several,
// blocks that divide the segment and blocks that leave a short one, odd
// blocks and segments (int4 blocks that share a byte), f32 and bf16, and a
// block holding an infinity.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include <cmath>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

struct Layout {
  int64_t segments, length, block;
};

mlir::DictionaryAttr params(const Layout &layout, int64_t bits = 8) {
  return dict({{"block", i64(layout.block)},
               {"segments", i64(layout.segments)},
               {"bits", i64(bits)}});
}

/// Bytes of `bits`-bit codes for the layout: each segment from a byte.
int64_t codeBytes(const Layout &layout, int64_t bits) {
  return layout.segments * ((layout.length * bits + 7) / 8);
}

/// Bytes of any value, so that int4 nibbles include negative codes.
Tensor randomBytes(int64_t count, uint32_t seed) {
  Tensor bytes = randomIds(DType::i8, {count}, seed, 256);
  for (int64_t i = 0; i < count; ++i)
    bytes.set(i, bytes.at(i) - 128);
  return bytes;
}

int64_t scalesOf(const Layout &layout) {
  return layout.segments * ((layout.length + layout.block - 1) / layout.block);
}

const Layout kLayouts[] = {{1, 4096, 2048},
                           {3, 1000, 256},
                           {4, 7, 3},
                           {2, 70000, 4096},
                           {3, 301, 101}};

TEST(QuantizeCuda, QuantizeMatchesCpu) {
  SKIP_WITHOUT_CUDA_GPU();
  for (int64_t bits : {8, 4})
    for (const Layout &layout : kLayouts)
      for (DType dtype : {DType::f32, DType::bf16}) {
        int64_t n = layout.segments * layout.length;
        KernelCase quantize{"dist.quantize",
                            params(layout, bits),
                            {randomTensor(dtype, {n}, 17, -4.0, 4.0)},
                            {Tensor(DType::i8, {codeBytes(layout, bits)}),
                             Tensor(DType::f32, {scalesOf(layout)})}};
        EXPECT_TRUE(matchesCpu(quantize))
            << "int" << bits << " " << dtypeLabel(dtype) << " "
            << layout.segments << " x " << layout.length << " block "
            << layout.block;
      }
}

TEST(QuantizeCuda, DequantizeMatchesCpu) {
  SKIP_WITHOUT_CUDA_GPU();
  for (int64_t bits : {8, 4})
    for (const Layout &layout : kLayouts)
      for (DType dtype : {DType::f32, DType::bf16}) {
        int64_t n = layout.segments * layout.length;
        KernelCase dequantize{
            "dist.dequantize",
            params(layout, bits),
            {randomBytes(codeBytes(layout, bits), 3),
             randomTensor(DType::f32, {scalesOf(layout)}, 5, 0.0, 0.1)},
            {Tensor(dtype, {n})}};
        EXPECT_TRUE(matchesCpu(dequantize))
            << "int" << bits << " " << dtypeLabel(dtype) << " "
            << layout.segments << " x " << layout.length << " block "
            << layout.block;
      }
}

TEST(QuantizeCuda, OverflowMatchesCpu) {
  SKIP_WITHOUT_CUDA_GPU();
  Layout layout{2, 600, 255};
  Tensor x = randomTensor(DType::f32, {1200}, 23);
  x.set(300, INFINITY);
  x.set(900, std::nan(""));
  for (int64_t bits : {8, 4}) {
    KernelCase quantize{"dist.quantize",
                        params(layout, bits),
                        {x},
                        {Tensor(DType::i8, {codeBytes(layout, bits)}),
                         Tensor(DType::f32, {scalesOf(layout)})}};
    EXPECT_TRUE(matchesCpu(quantize)) << "int" << bits;
  }
}

} // namespace
