//===- ClippingTest.cpp - Gradient clipping kernels -----------------------===//
//
// train.sum_squares against a double reference (and bitwise repeatable, since
// steps are deterministic), and train.scale_by_norm both clipping (norm above
// the bound) and passing gradients unchanged (norm below it).
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <cmath>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

TEST(ClippingTest, SumSquaresOverEveryOperand) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    // 1500 elements span several blocks and a tail.
    Tensor a = randomTensor(dtype, {30, 50}, 1);
    Tensor b = randomTensor(DType::f32, {7}, 2);
    Tensor total(DType::f32, {}), again(DType::f32, {});
    total.poison();
    ASSERT_TRUE(
        runKernel("train.sum_squares", dict({}), {&a, &b}, {&total}).ok());
    double want = 0.0;
    for (const Tensor *t : {&a, &b})
      for (double x : t->values())
        want += x * x;
    EXPECT_TRUE(allClose(total, {want}, 0.0, 1e-5)) << dtypeLabel(dtype);
    ASSERT_TRUE(
        runKernel("train.sum_squares", dict({}), {&a, &b}, {&again}).ok());
    EXPECT_TRUE(total.sameBytes(again));
  }
}

TEST(ClippingTest, ScaleByNormClipsAboveTheBound) {
  Tensor a = randomTensor(DType::f32, {600}, 3);
  Tensor b = randomTensor(DType::bf16, {5}, 4);
  // Squared norm 4: norm 2, clipped to 0.5 by the factor 0.5 / (2 + 1e-6).
  Tensor total = fromValues(DType::f32, {}, {4.0});
  Tensor outA(DType::f32, {600}), outB(DType::bf16, {5});
  outA.poison();
  outB.poison();
  ASSERT_TRUE(runKernel("train.scale_by_norm", dict({{"max_norm", f64(0.5)}}),
                        {&a, &b, &total}, {&outA, &outB})
                  .ok());
  double factor = 0.5 / (2.0 + 1e-6);
  std::vector<double> wantA, wantB;
  for (double x : a.values())
    wantA.push_back(x * factor);
  for (double x : b.values())
    wantB.push_back(x * factor);
  EXPECT_TRUE(allClose(outA, wantA, 0.0, 1e-6));
  EXPECT_TRUE(allClose(outB, wantB, 0.0, relativeTolerance(DType::bf16)));
}

TEST(ClippingTest, ScaleByNormKeepsGradientsBelowTheBound) {
  Tensor a = randomTensor(DType::f32, {33}, 5);
  Tensor total = fromValues(DType::f32, {}, {0.25});
  Tensor out(DType::f32, {33});
  ASSERT_TRUE(runKernel("train.scale_by_norm", dict({{"max_norm", f64(1.0)}}),
                        {&a, &total}, {&out})
                  .ok());
  EXPECT_TRUE(out.sameBytes(a));
}

TEST(ClippingTest, ScaleByNormRejectsAMissingBound) {
  Tensor a = randomTensor(DType::f32, {3}, 6);
  Tensor total = fromValues(DType::f32, {}, {1.0});
  Tensor out(DType::f32, {3});
  EXPECT_FALSE(
      runKernel("train.scale_by_norm", dict({}), {&a, &total}, {&out}).ok());
}

} // namespace
