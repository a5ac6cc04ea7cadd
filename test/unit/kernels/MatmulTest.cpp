//===- MatmulTest.cpp - train.matmul against a double reference -----------===//

#include "KernelTestSupport.h"

#include <cmath>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

struct MatmulCase {
  std::vector<int64_t> batch; // Empty: a plain 2-D product.
  bool sharedRhs;             // The right operand is 2-D for every batch.
  int64_t m, k, n;
  bool transA, transB;
};

/// Reference product in double over the stored (rounded) operand values.
std::vector<double> referenceMatmul(const MatmulCase &c, const Tensor &lhs,
                                    const Tensor &rhs) {
  int64_t batch = 1;
  for (int64_t extent : c.batch)
    batch *= extent;
  std::vector<double> out(static_cast<size_t>(batch * c.m * c.n), 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0.0;
        for (int64_t p = 0; p < c.k; ++p) {
          int64_t a = b * c.m * c.k + (c.transA ? p * c.m + i : i * c.k + p);
          int64_t rb = (c.sharedRhs ? 0 : b * c.k * c.n) +
                       (c.transB ? j * c.k + p : p * c.n + j);
          sum += lhs.at(a) * rhs.at(rb);
        }
        out[b * c.m * c.n + i * c.n + j] = sum;
      }
  return out;
}

std::vector<int64_t> withMatrix(std::vector<int64_t> batch, int64_t rows,
                                int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

void runCase(const MatmulCase &c, DType dtype) {
  std::vector<int64_t> lhsShape =
      withMatrix(c.batch, c.transA ? c.k : c.m, c.transA ? c.m : c.k);
  std::vector<int64_t> rhsShape =
      withMatrix(c.sharedRhs ? std::vector<int64_t>{} : c.batch,
                 c.transB ? c.n : c.k, c.transB ? c.k : c.n);
  Tensor lhs = randomTensor(dtype, lhsShape, 21);
  Tensor rhs = randomTensor(dtype, rhsShape, 22);
  Tensor out(dtype, withMatrix(c.batch, c.m, c.n));
  out.poison(); // NaN: beta = 0 must not read the old result.
  std::vector<std::pair<std::string, mlir::Attribute>> attrs;
  if (c.transA)
    attrs.push_back({"transpose_a", unit()});
  if (c.transB)
    attrs.push_back({"transpose_b", unit()});
  ASSERT_TRUE(
      runKernel("train.matmul", dict(attrs), {&lhs, &rhs}, {&out}).ok());
  // f32 accumulation of k products of magnitude <= 1: a loose bound on the
  // rounding error is k * 2^-24 per unit, i.e. ~6e-8 * k.
  double atol = 4e-7 * static_cast<double>(std::max<int64_t>(c.k, 1));
  EXPECT_TRUE(allClose(out, referenceMatmul(c, lhs, rhs), atol,
                       relativeTolerance(dtype)));
}

TEST(MatmulTest, MatchesDoubleReference) {
  const MatmulCase cases[] = {
      {{}, false, 7, 13, 5, false, false},
      {{}, false, 7, 13, 5, true, false},
      {{}, false, 7, 13, 5, false, true},
      {{}, false, 7, 13, 5, true, true},
      {{}, false, 33, 70, 17, false, false},
      {{3}, false, 4, 6, 5, false, false},
      {{2, 3}, false, 4, 6, 5, true, true},
      {{2, 3}, false, 4, 6, 5, false, true},
      {{2, 3}, true, 4, 6, 5, false, false}, // A linear layer, folded.
      {{2, 3}, true, 4, 6, 5, true, false},  // Not foldable: per batch.
      {{2, 3}, true, 4, 6, 5, false, true},
      {{}, false, 3, 0, 4, false, false}, // Empty contraction gives zeros.
      {{2}, false, 0, 3, 4, false, false},
      // Large enough for OpenBLAS's blocked (and threaded) paths.
      {{}, false, 130, 300, 70, false, false},
      {{2}, true, 64, 96, 80, true, false},
  };
  for (const MatmulCase &c : cases)
    for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
      SCOPED_TRACE(::testing::Message()
                   << dtypeLabel(dtype) << " batch " << c.batch.size()
                   << (c.sharedRhs ? " shared" : "") << " m" << c.m << " k"
                   << c.k << " n" << c.n << (c.transA ? " tA" : "")
                   << (c.transB ? " tB" : ""));
      runCase(c, dtype);
    }
}

TEST(MatmulTest, RepeatedCallsGiveIdenticalBits) {
  Tensor lhs = randomTensor(DType::bf16, {2, 16, 64}, 23);
  Tensor rhs = randomTensor(DType::bf16, {64, 32}, 24);
  Tensor first(DType::bf16, {2, 16, 32}), second(DType::bf16, {2, 16, 32});
  absl::StatusOr<KernelFn> kernel =
      bindKernel("train.matmul", {}, {&lhs, &rhs}, {&first});
  ASSERT_TRUE(kernel.ok());
  std::vector<const void *> ins = {lhs.data(), rhs.data()};
  ASSERT_TRUE((*kernel)(ins, {first.data()}, {}).ok());
  ASSERT_TRUE((*kernel)(ins, {second.data()}, {}).ok());
  EXPECT_TRUE(first.sameBytes(second));
}

TEST(MatmulTest, BlasResultsRepeatAtEachThreadCount) {
  // At a given thread count a product has the same bits every time; that is
  // what deterministic runs at the same N rely on. Across thread counts it
  // need not: on an AMD EPYC with Debian's OpenBLAS 0.3.21 one and two
  // threads differ in the last bits (on the Intel machines seen before they
  // did not), so no result is claimed bitwise across --blas-threads.
  Tensor lhs = randomTensor(DType::f32, {256, 192}, 25);
  Tensor rhs = randomTensor(DType::f32, {192, 320}, 26);
  for (int threads : {1, 2}) {
    Tensor first(DType::f32, {256, 320}), second(DType::f32, {256, 320});
    setCpuKernelThreads(threads);
    ASSERT_TRUE(runKernel("train.matmul", {}, {&lhs, &rhs}, {&first}).ok());
    ASSERT_TRUE(runKernel("train.matmul", {}, {&lhs, &rhs}, {&second}).ok());
    EXPECT_TRUE(first.sameBytes(second)) << threads << " thread(s)";
  }
  setCpuKernelThreads(1);
}

TEST(MatmulTest, RejectsBadShapes) {
  auto status = [](std::vector<int64_t> a, std::vector<int64_t> b,
                   std::vector<int64_t> c, mlir::DictionaryAttr attrs = {}) {
    Tensor lhs(DType::f32, a), rhs(DType::f32, b), out(DType::f32, c);
    return bindKernel("train.matmul", attrs, {&lhs, &rhs}, {&out}).status();
  };
  EXPECT_TRUE(status({4, 6}, {6, 5}, {4, 5}).ok());
  // Contraction mismatch.
  absl::Status contraction = status({4, 6}, {7, 5}, {4, 5});
  EXPECT_EQ(contraction.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(contraction.message().find("train.matmul"), std::string::npos);
  // Wrong result shape, batch mismatch, rank 1, transposed shape mismatch.
  EXPECT_FALSE(status({4, 6}, {6, 5}, {5, 4}).ok());
  EXPECT_FALSE(status({2, 4, 6}, {3, 6, 5}, {2, 4, 5}).ok());
  EXPECT_FALSE(status({6}, {6, 5}, {5}).ok());
  EXPECT_FALSE(
      status({4, 6}, {6, 5}, {4, 5}, dict({{"transpose_a", unit()}})).ok());
  // A flag of the wrong kind.
  EXPECT_FALSE(
      status({4, 6}, {6, 5}, {4, 5}, dict({{"transpose_b", f64(1.0)}})).ok());
  // Mixed integer operands.
  Tensor lhs(DType::i32, {4, 6}), rhs(DType::f32, {6, 5}),
      out(DType::f32, {4, 5});
  EXPECT_FALSE(bindKernel("train.matmul", {}, {&lhs, &rhs}, {&out}).ok());
}

} // namespace
