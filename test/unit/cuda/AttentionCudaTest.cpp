//===- AttentionCudaTest.cpp - Fused attention against the CPU kernels ----===//
//
// Sequences shorter than a warp and longer than the CUDA kernels' chunk of
// 1024 keys, head dimensions below and above a block's 256 threads, every
// float type, with and without the causal mask.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include <cmath>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

const std::vector<std::vector<int64_t>> kShapes = {
    {2, 5, 8}, {2, 3, 33, 64}, {1, 1100, 16}, {1, 40, 300}};

std::vector<int64_t> rows(const std::vector<int64_t> &shape) {
  return std::vector<int64_t>(shape.begin(), shape.end() - 1);
}

mlir::DictionaryAttr attrs(int64_t headDim, bool causal) {
  std::vector<std::pair<std::string, mlir::Attribute>> entries = {
      {"scale", f64(1.0 / std::sqrt(static_cast<double>(headDim)))}};
  if (causal)
    entries.push_back({"causal", unit()});
  return dict(entries);
}

TEST(AttentionCuda, Forward) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 1;
  for (DType dtype : floatTypes())
    for (const auto &shape : kShapes)
      for (bool causal : {false, true}) {
        Tensor q = randomTensor(dtype, shape, seed++);
        Tensor k = randomTensor(dtype, shape, seed++);
        Tensor v = randomTensor(dtype, shape, seed++);
        Tensor lse(DType::f32, rows(shape));
        EXPECT_TRUE(matchesCpu({"train.attention",
                                attrs(shape.back(), causal),
                                {q, k, v},
                                {q, lse}}));
      }
}

TEST(AttentionCuda, Backward) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 100;
  for (DType dtype : floatTypes())
    for (const auto &shape : kShapes)
      for (bool causal : {false, true}) {
        Tensor dout = randomTensor(dtype, shape, seed++);
        Tensor q = randomTensor(dtype, shape, seed++);
        Tensor k = randomTensor(dtype, shape, seed++);
        Tensor v = randomTensor(dtype, shape, seed++);
        Tensor out = randomTensor(dtype, shape, seed++);
        // Log-sum-exps above every scaled score (|q.k| / sqrt(d) <= sqrt(d)
        // for entries in [-1, 1]): probabilities below 1, as a forward's.
        double bound = std::sqrt(static_cast<double>(shape.back()));
        Tensor lse =
            randomTensor(DType::f32, rows(shape), seed++, bound, bound + 2);
        EXPECT_TRUE(matchesCpu({"train.attention_grad",
                                attrs(shape.back(), causal),
                                {dout, q, k, v, out, lse},
                                {q, q, q}}));
      }
}

} // namespace
