//===- FusedMatmulCudaTest.cpp - cuBLASLt epilogues against the CPU chains ===//
//
// Each fused matmul on the GPU (one cublasLtMatmul with its epilogue, or
// the chain of CUDA kernels where no epilogue serves) against the CPU
// kernel, which runs the unfused chain: every float type, plain and folded
// batches, both GELU forms (the exact one takes the chain), a feature
// count cuBLASLt's aux matrix refuses (not a multiple of 8: the chain), and
// GPT-2 124M's shapes (8192 rows, 768 and 3072 features).
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

struct Shape {
  std::vector<int64_t> batch;
  int64_t m, k, n;
  bool ta, tb;
};

const Shape kShapes[] = {
    {{}, 7, 13, 5, false, false},      {{}, 33, 70, 72, true, false},
    {{}, 16, 24, 40, false, true},     {{}, 64, 64, 256, true, true},
    {{2, 3}, 4, 16, 24, false, false},
};

std::vector<int64_t> matrix(std::vector<int64_t> batch, int64_t rows,
                            int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

/// Operands x, w and (when `third`) a per-feature or per-output tensor.
KernelCase linearCase(const char *name, DType dtype, const Shape &s, bool exact,
                      uint32_t seed) {
  KernelCase kernel{name, matmulFlags(s.ta, s.tb, exact), {}, {}};
  kernel.ins.push_back(randomTensor(
      dtype, matrix(s.batch, s.ta ? s.k : s.m, s.ta ? s.m : s.k), seed));
  kernel.ins.push_back(randomTensor(
      dtype, s.tb ? matrix({}, s.n, s.k) : matrix({}, s.k, s.n), seed + 1));
  std::vector<int64_t> out = matrix(s.batch, s.m, s.n);
  std::string op = name;
  if (op == "train.matmul_gelu_grad")
    kernel.ins.push_back(randomTensor(dtype, out, seed + 2, -3.0, 3.0));
  else
    kernel.ins.push_back(randomTensor(dtype, {s.n}, seed + 2));
  kernel.outs.push_back(Tensor(dtype, out));
  if (op == "train.matmul_bias_gelu")
    kernel.outs.push_back(Tensor(dtype, out));
  return kernel;
}

TEST(FusedMatmulCuda, BiasGeluAndGeluGrad) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 1;
  for (const char *name : {"train.matmul_bias", "train.matmul_bias_gelu",
                           "train.matmul_gelu_grad"})
    for (DType dtype : floatTypes())
      for (bool exact : {false, true})
        for (const Shape &s : kShapes)
          EXPECT_TRUE(matchesCpu(linearCase(name, dtype, s, exact, seed += 3)))
              << name << " " << dtypeLabel(dtype) << (exact ? " exact" : "")
              << " " << s.m << "x" << s.k << "x" << s.n;
}

TEST(FusedMatmulCuda, BiasGrad) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 500;
  for (DType dtype : floatTypes())
    for (int64_t rows : {5, 64, 65, 1000})
      for (bool ta : {true, false}) {
        int64_t k = 24, n = 40;
        KernelCase kernel{
            "train.matmul_bias_grad", matmulFlags(ta, false), {}, {}};
        kernel.ins.push_back(randomTensor(
            dtype, ta ? matrix({}, rows, k) : matrix({}, k, rows), seed++));
        kernel.ins.push_back(randomTensor(dtype, {rows, n}, seed++));
        kernel.outs.push_back(Tensor(dtype, {k, n}));
        kernel.outs.push_back(Tensor(dtype, {n}));
        EXPECT_TRUE(matchesCpu(kernel))
            << dtypeLabel(dtype) << " rows " << rows << (ta ? " ta" : "");
      }
}

TEST(FusedMatmulCuda, Gpt2Shapes) {
  // GPT-2 124M at batch 8 x 1024: the MLP's first layer forward and
  // backward, and the attention projection's weight and bias gradients.
  SKIP_WITHOUT_CUDA_GPU();
  const Shape fc{{8}, 1024, 768, 3072, false, false};
  EXPECT_TRUE(matchesCpu(
      linearCase("train.matmul_bias_gelu", DType::bf16, fc, false, 7)));
  const Shape back{{8}, 1024, 768, 3072, false, true};
  EXPECT_TRUE(matchesCpu(
      linearCase("train.matmul_gelu_grad", DType::bf16, back, false, 8)));
  KernelCase grad{"train.matmul_bias_grad", matmulFlags(true, false), {}, {}};
  grad.ins.push_back(randomTensor(DType::bf16, {8192, 768}, 9));
  grad.ins.push_back(randomTensor(DType::bf16, {8192, 768}, 10));
  grad.outs.push_back(Tensor(DType::bf16, {768, 768}));
  grad.outs.push_back(Tensor(DType::bf16, {768}));
  EXPECT_TRUE(matchesCpu(grad));
}

} // namespace
