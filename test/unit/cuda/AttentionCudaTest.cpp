//===- AttentionCudaTest.cpp - Fused attention against the CPU kernels ----===//
//
// Sequences shorter than a warp and longer than the CUDA kernels' chunk of
// 1024 keys, head dimensions below and above a block's 256 threads, every
// float type, with and without the causal mask. Where libcudnn.so.9
// loads, the 16-bit cases with head dimensions that are multiples of 8 run
// on cuDNN's fused attention (CudnnAttention.cpp), the rest on the built-in
// kernel; CudnnAttention.Gpt2Heads holds cuDNN to the CPU at GPT-2's heads.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include <cmath>

using namespace zero::rt;
using namespace zero::rt::test;

namespace zero::rt::cuda {
absl::Status cudnnAttentionStatus(); // CudnnAttention.cpp
} // namespace zero::rt::cuda

namespace {

const std::vector<std::vector<int64_t>> kShapes = {
    {2, 5, 8}, {2, 3, 33, 64}, {1, 1100, 16}, {1, 40, 300}};

std::vector<int64_t> rows(const std::vector<int64_t> &shape) {
  return std::vector<int64_t>(shape.begin(), shape.end() - 1);
}

mlir::DictionaryAttr attrs(int64_t headDim, bool causal,
                           bool seqMajor = false) {
  std::vector<std::pair<std::string, mlir::Attribute>> entries = {
      {"scale", f64(1.0 / std::sqrt(static_cast<double>(headDim)))}};
  if (causal)
    entries.push_back({"causal", unit()});
  if (seqMajor)
    entries.push_back({"seq_major", unit()});
  return dict(entries);
}

/// The log-sum-exp of a seq-major [..., seq, heads, head_dim]: [..., heads,
/// seq].
std::vector<int64_t> seqMajorRows(const std::vector<int64_t> &shape) {
  std::vector<int64_t> rows(shape.begin(), shape.end() - 3);
  rows.push_back(shape[shape.size() - 2]);
  rows.push_back(shape[shape.size() - 3]);
  return rows;
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

// seq_major: heads read by strides, [..., seq, heads, head_dim], on the
// built-in kernel (f32, and a head dimension cuDNN does not take) and on
// cuDNN where it loads (16-bit, head_dim 64), forward and backward.
TEST(AttentionCuda, SeqMajor) {
  SKIP_WITHOUT_CUDA_GPU();
  const std::vector<std::vector<int64_t>> shapes = {
      {2, 33, 3, 64}, {1, 1100, 2, 12}, {70, 4, 16}};
  uint32_t seed = 200;
  for (DType dtype : floatTypes())
    for (const auto &shape : shapes) {
      Tensor q = randomTensor(dtype, shape, seed++);
      Tensor k = randomTensor(dtype, shape, seed++);
      Tensor v = randomTensor(dtype, shape, seed++);
      Tensor lse(DType::f32, seqMajorRows(shape));
      EXPECT_TRUE(matchesCpu({"train.attention",
                              attrs(shape.back(), true, true),
                              {q, k, v},
                              {q, lse}}));
      Tensor dout = randomTensor(dtype, shape, seed++);
      double bound = std::sqrt(static_cast<double>(shape.back()));
      Tensor forwardLse = randomTensor(DType::f32, seqMajorRows(shape), seed++,
                                       bound, bound + 2);
      EXPECT_TRUE(matchesCpu({"train.attention_grad",
                              attrs(shape.back(), true, true),
                              {dout, q, k, v, q, forwardLse},
                              {q, q, q}}));
    }
}

// GPT-2's attention in bf16: 12 heads of 64, causal, forward then the
// backward of that forward's result and log-sum-exp, on cuDNN's fused SDPA
// (its deterministic backward) against the CPU kernels. Skipped, with the
// reason, where libcudnn.so.9 does not load.
TEST(CudnnAttention, Gpt2Heads) {
  SKIP_WITHOUT_CUDA_GPU();
  if (absl::Status loaded = cuda::cudnnAttentionStatus(); !loaded.ok())
    GTEST_SKIP() << "cuDNN does not serve here: " << loaded;
  const std::vector<int64_t> shape = {2, 12, 128, 64};
  for (DType dtype : {DType::bf16, DType::f16}) {
    Tensor q = randomTensor(dtype, shape, 71),
           k = randomTensor(dtype, shape, 72);
    Tensor v = randomTensor(dtype, shape, 73);
    Tensor out(dtype, shape), lse(DType::f32, rows(shape));
    EXPECT_TRUE(
        matchesCpu({"train.attention", attrs(64, true), {q, k, v}, {out, lse}}))
        << dtypeLabel(dtype);
    // The CPU's forward gives the backward consistent inputs.
    std::vector<TensorSpec> specs = {q.spec(), k.spec(), v.spec()};
    absl::StatusOr<KernelFn> forward = bindCpuKernel(
        "train.attention", attrs(64, true), specs, {out.spec(), lse.spec()});
    ASSERT_TRUE(forward.ok()) << forward.status();
    ASSERT_TRUE(
        (*forward)({q.data(), k.data(), v.data()}, {out.data(), lse.data()}, {})
            .ok());
    Tensor dout = randomTensor(dtype, shape, 74);
    EXPECT_TRUE(matchesCpu(
        {"train.attention_grad",
         attrs(64, true),
         {dout, q, k, v, out, lse},
         {Tensor(dtype, shape), Tensor(dtype, shape), Tensor(dtype, shape)}}))
        << dtypeLabel(dtype);
  }
}

} // namespace
