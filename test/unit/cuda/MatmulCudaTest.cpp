//===- MatmulCudaTest.cpp - cuBLAS matmul against the OpenBLAS one --------===//
//
// Plain, transposed, batched and shared-right-operand products, odd sizes,
// each float type, mixed operand types (which take the f32 scratch path)
// and an empty contraction.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include <tuple>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

/// [batch..., rows, cols], or its transpose in the last two dimensions.
std::vector<int64_t> matrixShape(std::vector<int64_t> batch, int64_t rows,
                                 int64_t cols, bool transposed) {
  batch.push_back(transposed ? cols : rows);
  batch.push_back(transposed ? rows : cols);
  return batch;
}

mlir::DictionaryAttr flags(bool ta, bool tb) {
  std::vector<std::pair<std::string, mlir::Attribute>> entries;
  if (ta)
    entries.push_back({"transpose_a", unit()});
  if (tb)
    entries.push_back({"transpose_b", unit()});
  return dict(entries);
}

::testing::AssertionResult runMatmul(DType lhsType, DType rhsType,
                                     DType outType, std::vector<int64_t> batch,
                                     bool shared, int64_t m, int64_t k,
                                     int64_t n, bool ta, bool tb,
                                     uint32_t seed) {
  Tensor lhs = randomTensor(lhsType, matrixShape(batch, m, k, ta), seed);
  Tensor rhs = randomTensor(
      rhsType, matrixShape(shared ? std::vector<int64_t>{} : batch, k, n, tb),
      seed + 1);
  std::vector<int64_t> outShape = batch;
  outShape.push_back(m);
  outShape.push_back(n);
  return matchesCpu(
      {"train.matmul", flags(ta, tb), {lhs, rhs}, {Tensor(outType, outShape)}});
}

TEST(MatmulCuda, EveryTransposeAndType) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 1;
  for (DType dtype : floatTypes())
    for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                           {5, 7, 3},
                           {33, 65, 17},
                           {128, 96, 64}})
      for (bool ta : {false, true})
        for (bool tb : {false, true})
          EXPECT_TRUE(runMatmul(dtype, dtype, dtype, {}, false, m, k, n, ta, tb,
                                seed += 2))
              << dtypeLabel(dtype) << " " << m << "x" << k << "x" << n
              << (ta ? " ta" : "") << (tb ? " tb" : "");
}

TEST(MatmulCuda, BatchedAndSharedRightOperand) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 100;
  for (DType dtype : floatTypes())
    for (bool shared : {false, true})
      for (bool ta : {false, true})
        for (bool tb : {false, true})
          EXPECT_TRUE(runMatmul(dtype, dtype, dtype, {2, 3}, shared, 9, 13, 5,
                                ta, tb, seed += 2))
              << dtypeLabel(dtype) << (shared ? " shared" : "")
              << (ta ? " ta" : "") << (tb ? " tb" : "");
}

TEST(MatmulCuda, MixedTypes) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 200;
  for (DType lhs : floatTypes())
    for (DType rhs : floatTypes())
      for (DType out : floatTypes())
        EXPECT_TRUE(runMatmul(lhs, rhs, out, {3}, false, 7, 11, 6, false, true,
                              seed += 2))
            << dtypeLabel(lhs) << " x " << dtypeLabel(rhs) << " -> "
            << dtypeLabel(out);
}

TEST(MatmulCuda, EmptyContractionGivesZeros) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType dtype : floatTypes())
    EXPECT_TRUE(
        runMatmul(dtype, dtype, dtype, {}, false, 4, 0, 3, false, false, 1));
}

} // namespace
