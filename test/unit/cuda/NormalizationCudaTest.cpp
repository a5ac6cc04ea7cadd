//===- NormalizationCudaTest.cpp - Softmax and layer norm against CPU -----===//
//
// Rows shorter and longer than a CUDA block, each float type, parameters of
// another type than the input, and the in-place forms.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

const std::vector<std::vector<int64_t>> kShapes = {
    {1, 5}, {3, 7, 33}, {4, 300}, {2, 1029}};

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
  for (DType dtype : floatTypes()) {
    Tensor x = randomTensor(dtype, {4, 37}, 40);
    for (int64_t j = 0; j < 37; ++j)
      x.set(37 + j, -INFINITY);
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

} // namespace
