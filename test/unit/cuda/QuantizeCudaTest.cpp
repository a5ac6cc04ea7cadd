//===- QuantizeCudaTest.cpp - Block int8 quantization on CUDA -------------===//
//
// dist.quantize and dist.dequantize on the GPU against the CPU kernels
// (QuantizeTest.cpp checks those against the error bound): the same codes,
// scales and values, for one segment and several, blocks that divide the
// segment and blocks that leave a short one, f32 and bf16, and a block
// holding an infinity.
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

mlir::DictionaryAttr params(const Layout &layout) {
  return dict(
      {{"block", i64(layout.block)}, {"segments", i64(layout.segments)}});
}

int64_t scalesOf(const Layout &layout) {
  return layout.segments * ((layout.length + layout.block - 1) / layout.block);
}

const Layout kLayouts[] = {
    {1, 4096, 2048}, {3, 1000, 256}, {4, 7, 3}, {2, 70000, 4096}};

TEST(QuantizeCuda, QuantizeMatchesCpu) {
  SKIP_WITHOUT_CUDA_GPU();
  for (const Layout &layout : kLayouts)
    for (DType dtype : {DType::f32, DType::bf16}) {
      int64_t n = layout.segments * layout.length;
      KernelCase quantize{
          "dist.quantize",
          params(layout),
          {randomTensor(dtype, {n}, 17, -4.0, 4.0)},
          {Tensor(DType::i8, {n}), Tensor(DType::f32, {scalesOf(layout)})}};
      EXPECT_TRUE(matchesCpu(quantize))
          << dtypeLabel(dtype) << " " << layout.segments << " x "
          << layout.length << " block " << layout.block;
    }
}

TEST(QuantizeCuda, DequantizeMatchesCpu) {
  SKIP_WITHOUT_CUDA_GPU();
  for (const Layout &layout : kLayouts)
    for (DType dtype : {DType::f32, DType::bf16}) {
      int64_t n = layout.segments * layout.length;
      KernelCase dequantize{
          "dist.dequantize",
          params(layout),
          {randomIds(DType::i8, {n}, 3, 127),
           randomTensor(DType::f32, {scalesOf(layout)}, 5, 0.0, 0.1)},
          {Tensor(dtype, {n})}};
      EXPECT_TRUE(matchesCpu(dequantize))
          << dtypeLabel(dtype) << " " << layout.segments << " x "
          << layout.length << " block " << layout.block;
    }
}

TEST(QuantizeCuda, OverflowMatchesCpu) {
  SKIP_WITHOUT_CUDA_GPU();
  Layout layout{2, 600, 256};
  Tensor x = randomTensor(DType::f32, {1200}, 23);
  x.set(300, INFINITY);
  x.set(900, std::nan(""));
  KernelCase quantize{
      "dist.quantize",
      params(layout),
      {x},
      {Tensor(DType::i8, {1200}), Tensor(DType::f32, {scalesOf(layout)})}};
  EXPECT_TRUE(matchesCpu(quantize));
}

} // namespace
