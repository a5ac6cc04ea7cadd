//===- NormalizationCudaTest.cpp - Softmax and layer norm against CPU -----===//
//
// Rows shorter and longer than a CUDA block, each float type, parameters of
// another type than the input, and the in-place forms. Rows of whole
// 16-byte Packs up to 2048 16-bit or 1024 f32 elements take the warp-per-row
// kernels (1, 2, 4 and 8 Packs a lane: 40, 768, 1024 and 2048 columns);
// the others, and buffers one element past an aligned start, the
// block-per-row kernels.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

const std::vector<std::vector<int64_t>> kShapes = {
    {1, 5},   {3, 7, 33}, {4, 300},  {2, 1029},
    {70, 40}, {3, 768},   {5, 1024}, {2, 2048}};

std::vector<int64_t> leading(const std::vector<int64_t> &shape) {
  return std::vector<int64_t>(shape.begin(), shape.end() - 1);
}

TEST(NormalizationCuda, Softmax) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 1;
  for (DType dtype : floatTypes())
    for (const auto &shape : kShapes) {
      Tensor x = randomTensor(dtype, shape, seed++, -8.0, 8.0);
      EXPECT_TRUE(matchesCpu({"train.softmax", {}, {x}, {x}}));
      EXPECT_TRUE(matchesCpu({"train.softmax", {}, {x}, {x}, {{0, 0}}}));
    }
}

TEST(NormalizationCuda, SafeSoftmaxOfFullyMaskedRows) {
  SKIP_WITHOUT_CUDA_GPU();
  // 37 columns: the block kernel; 64: the warp kernel.
  for (DType dtype : floatTypes())
    for (int64_t cols : {37, 64}) {
      Tensor x = randomTensor(dtype, {4, cols}, 40);
      for (int64_t j = 0; j < cols; ++j)
        x.set(cols + j, -INFINITY);
      EXPECT_TRUE(
          matchesCpu({"train.softmax", dict({{"safe", unit()}}), {x}, {x}}));
    }
}

TEST(NormalizationCuda, SoftmaxGrad) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 50;
  for (DType dtype : floatTypes())
    for (const auto &shape : kShapes) {
      Tensor y = randomTensor(dtype, shape, seed++, 0.0, 1.0);
      Tensor dy = randomTensor(dtype, shape, seed++);
      EXPECT_TRUE(matchesCpu({"train.softmax_grad", {}, {y, dy}, {y}}));
      EXPECT_TRUE(
          matchesCpu({"train.softmax_grad", {}, {y, dy}, {y}, {{0, 1}}}));
    }
}

TEST(NormalizationCuda, LayerNorm) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 100;
  for (DType dtype : floatTypes())
    for (DType paramType : floatTypes())
      for (const auto &shape : kShapes) {
        int64_t features = shape.back();
        Tensor x = randomTensor(dtype, shape, seed++, -2.0, 3.0);
        Tensor gamma = randomTensor(paramType, {features}, seed++, 0.5, 1.5);
        Tensor beta = randomTensor(paramType, {features}, seed++);
        Tensor stats(DType::f32, leading(shape));
        mlir::DictionaryAttr eps = dict({{"eps", f64(1e-5)}});
        EXPECT_TRUE(matchesCpu(
            {"train.layer_norm", eps, {x, gamma, beta}, {x, stats, stats}}));
        EXPECT_TRUE(matchesCpu({"train.layer_norm",
                                eps,
                                {x, gamma, beta},
                                {x, stats, stats},
                                {{0, 0}}}));
      }
}

TEST(NormalizationCuda, LayerNormGrad) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 200;
  // Also more rows than the kernel's 256 partial sums, so that blocks take
  // several rows each.
  std::vector<std::vector<int64_t>> shapes = kShapes;
  shapes.push_back({700, 9});
  for (DType dtype : floatTypes())
    for (DType paramType : floatTypes())
      for (const auto &shape : shapes) {
        int64_t features = shape.back();
        Tensor dy = randomTensor(dtype, shape, seed++);
        Tensor x = randomTensor(dtype, shape, seed++, -2.0, 3.0);
        Tensor gamma = randomTensor(paramType, {features}, seed++, 0.5, 1.5);
        Tensor mean =
            randomTensor(DType::f32, leading(shape), seed++, -0.5, 0.5);
        Tensor rstd =
            randomTensor(DType::f32, leading(shape), seed++, 0.5, 2.0);
        Tensor grads(paramType, {features});
        EXPECT_TRUE(matchesCpu({"train.layer_norm_grad",
                                {},
                                {dy, x, gamma, mean, rstd},
                                {x, grads, grads}}));
        EXPECT_TRUE(matchesCpu({"train.layer_norm_grad",
                                {},
                                {dy, x, gamma, mean, rstd},
                                {x, grads, grads},
                                {{0, 0}}}));
      }
}

// The one-pass kernel (rows the warp kernel takes: 40 to 2048 columns) and
// the chain it falls back to (the others), the sum written apart and over
// the left operand.
TEST(NormalizationCuda, AddLayerNorm) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 300;
  for (DType dtype : floatTypes())
    for (DType paramType : floatTypes())
      for (const auto &shape : kShapes) {
        int64_t features = shape.back();
        Tensor a = randomTensor(dtype, shape, seed++, -2.0, 3.0);
        Tensor b = randomTensor(dtype, shape, seed++, -1.0, 1.0);
        Tensor gamma = randomTensor(paramType, {features}, seed++, 0.5, 1.5);
        Tensor beta = randomTensor(paramType, {features}, seed++);
        Tensor stats(DType::f32, leading(shape));
        mlir::DictionaryAttr eps = dict({{"eps", f64(1e-5)}});
        EXPECT_TRUE(matchesCpu({"train.add_layer_norm",
                                eps,
                                {a, b, gamma, beta},
                                {a, a, stats, stats}}));
        EXPECT_TRUE(matchesCpu({"train.add_layer_norm",
                                eps,
                                {a, b, gamma, beta},
                                {a, a, stats, stats},
                                {{0, 0}}}));
      }
}

// The same rows with every buffer one element past a 16-byte boundary: the
// block-per-row kernels, on the shapes the warp kernels take above.
TEST(NormalizationCuda, UnalignedRowsTakeTheBlockKernels) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 900;
  for (DType dtype : floatTypes())
    for (const std::vector<int64_t> &shape :
         {std::vector<int64_t>{3, 768}, {5, 1024}}) {
      size_t offset = static_cast<size_t>(dtypeBytes(dtype));
      Tensor x = randomTensor(dtype, shape, seed++, -8.0, 8.0);
      KernelCase softmax{"train.softmax", {}, {x}, {x}};
      softmax.deviceOffset = offset;
      EXPECT_TRUE(matchesCpu(softmax)) << dtypeLabel(dtype);
      Tensor y = randomTensor(dtype, shape, seed++, 0.0, 1.0);
      KernelCase grad{"train.softmax_grad", {}, {y, x}, {y}};
      grad.deviceOffset = offset;
      EXPECT_TRUE(matchesCpu(grad)) << dtypeLabel(dtype);
      int64_t features = shape.back();
      Tensor stats(DType::f32, leading(shape));
      KernelCase norm{"train.layer_norm",
                      dict({{"eps", f64(1e-5)}}),
                      {x, randomTensor(dtype, {features}, seed++, 0.5, 1.5),
                       randomTensor(dtype, {features}, seed++)},
                      {x, stats, stats}};
      norm.deviceOffset = offset;
      EXPECT_TRUE(matchesCpu(norm)) << dtypeLabel(dtype);
    }
}

} // namespace
