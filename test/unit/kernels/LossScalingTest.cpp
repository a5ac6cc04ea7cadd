//===- LossScalingTest.cpp - Dynamic loss scaling kernels -----------------===//
//
// train.unscale (exact division by power-of-two scales, the overflow flag
// raised by an infinity or a NaN anywhere), train.update_loss_scale (halving
// on overflow down to 1, doubling after growth_interval good steps), and the
// update kernels' skip_if operand (a set flag leaves parameter and slots
// untouched, in place or not).
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <cmath>
#include <limits>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(LossScalingTest, UnscaleDividesIntoF32) {
  for (DType dtype : {DType::f16, DType::bf16, DType::f32}) {
    // 1100 elements span several blocks and a tail.
    Tensor a = randomTensor(dtype, {1100}, 1, -100.0, 100.0);
    Tensor b = randomTensor(dtype, {3, 5}, 2, -100.0, 100.0);
    Tensor scale = fromValues(DType::f32, {}, {1024.0});
    Tensor outA(DType::f32, {1100}), outB(DType::f32, {3, 5});
    Tensor found(DType::f32, {});
    for (Tensor *t : {&outA, &outB, &found})
      t->poison();
    ASSERT_TRUE(runKernel("train.unscale", dict({}), {&a, &b, &scale},
                          {&outA, &outB, &found})
                    .ok());
    std::vector<double> wantA, wantB;
    for (double x : a.values())
      wantA.push_back(x / 1024.0);
    for (double x : b.values())
      wantB.push_back(x / 1024.0);
    // A power-of-two scale divides exactly.
    EXPECT_TRUE(allClose(outA, wantA, 0.0, 0.0)) << dtypeLabel(dtype);
    EXPECT_TRUE(allClose(outB, wantB, 0.0, 0.0)) << dtypeLabel(dtype);
    EXPECT_EQ(found.at(0), 0.0) << dtypeLabel(dtype);
  }
}

TEST(LossScalingTest, UnscaleFlagsAnyInfinityOrNaN) {
  for (double bad : {kInf, -kInf, std::nan("")}) {
    for (int64_t where : {0, 700, 1099}) {
      Tensor a = randomTensor(DType::f16, {1100}, 3);
      Tensor b = randomTensor(DType::f16, {4}, 4);
      a.set(where, bad);
      Tensor scale = fromValues(DType::f32, {}, {65536.0});
      Tensor outA(DType::f32, {1100}), outB(DType::f32, {4});
      Tensor found(DType::f32, {});
      found.poison();
      ASSERT_TRUE(runKernel("train.unscale", dict({}), {&b, &a, &scale},
                            {&outB, &outA, &found})
                      .ok());
      EXPECT_EQ(found.at(0), 1.0) << bad << " at " << where;
    }
  }
}

TEST(LossScalingTest, UnscaleRejectsSixteenBitResults) {
  Tensor a = randomTensor(DType::f16, {4}, 5);
  Tensor scale = fromValues(DType::f32, {}, {2.0});
  Tensor out(DType::f16, {4}), found(DType::f32, {});
  absl::Status status =
      runKernel("train.unscale", dict({}), {&a, &scale}, {&out, &found});
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("each result is f32"), std::string::npos)
      << status;
}

/// One scaler step: (scale, good) after a step with flag `found`.
std::pair<double, double> stepScaler(double scale, double good, double found,
                                     int64_t interval) {
  Tensor s = fromValues(DType::f32, {}, {scale});
  Tensor g = fromValues(DType::f32, {}, {good});
  Tensor f = fromValues(DType::f32, {}, {found});
  Tensor newS(DType::f32, {}), newG(DType::f32, {});
  absl::Status status = runKernel("train.update_loss_scale",
                                  dict({{"growth_interval", i64(interval)}}),
                                  {&s, &g, &f}, {&newS, &newG});
  EXPECT_TRUE(status.ok()) << status;
  return {newS.at(0), newG.at(0)};
}

TEST(LossScalingTest, ScalerHalvesOnOverflowNotBelowOne) {
  EXPECT_EQ(stepScaler(1024.0, 5.0, 1.0, 10), std::make_pair(512.0, 0.0));
  EXPECT_EQ(stepScaler(1.5, 5.0, 1.0, 10), std::make_pair(1.0, 0.0));
  EXPECT_EQ(stepScaler(1.0, 0.0, 1.0, 10), std::make_pair(1.0, 0.0));
  // A NaN flag is an overflow too.
  EXPECT_EQ(stepScaler(8.0, 2.0, std::nan(""), 10), std::make_pair(4.0, 0.0));
}

TEST(LossScalingTest, ScalerDoublesAfterTheGrowthInterval) {
  double scale = 256.0, good = 0.0;
  for (int step = 1; step <= 7; ++step) {
    std::tie(scale, good) = stepScaler(scale, good, 0.0, 3);
    // Steps 3 and 6 complete an interval.
    double wantScale = 256.0 * (step >= 6 ? 4.0 : step >= 3 ? 2.0 : 1.0);
    EXPECT_EQ(scale, wantScale) << "after step " << step;
    EXPECT_EQ(good, step % 3) << "after step " << step;
  }
  EXPECT_EQ(stepScaler(256.0, 0.0, 0.0, 1), std::make_pair(512.0, 0.0));
}

TEST(LossScalingTest, ScalerRejectsABadInterval) {
  Tensor s = fromValues(DType::f32, {}, {2.0});
  Tensor newS(DType::f32, {}), newG(DType::f32, {});
  EXPECT_FALSE(runKernel("train.update_loss_scale",
                         dict({{"growth_interval", i64(0)}}), {&s, &s, &s},
                         {&newS, &newG})
                   .ok());
  EXPECT_FALSE(runKernel("train.update_loss_scale", dict({}), {&s, &s, &s},
                         {&newS, &newG})
                   .ok());
}

mlir::DictionaryAttr adamParams() {
  return dict({{"lr", f64(1e-2)},
               {"beta1", f64(0.9)},
               {"beta2", f64(0.999)},
               {"eps", f64(1e-8)},
               {"weight_decay", f64(0.0)}});
}

TEST(LossScalingTest, SkippedUpdateKeepsParameterAndSlots) {
  Tensor p = randomTensor(DType::f32, {600}, 6);
  Tensor g = randomTensor(DType::f32, {600}, 7);
  Tensor m = randomTensor(DType::f32, {600}, 8, 0.0, 0.1);
  Tensor v = randomTensor(DType::f32, {600}, 9, 0.0, 0.1);
  Tensor step = fromValues(DType::i64, {}, {3.0});
  Tensor skip = fromValues(DType::f32, {}, {1.0});
  Tensor newP(DType::f32, {600}), newM(DType::f32, {600}),
      newV(DType::f32, {600});
  for (Tensor *t : {&newP, &newM, &newV})
    t->poison();
  ASSERT_TRUE(runKernel("train.adam", adamParams(),
                        {&p, &g, &m, &v, &step, &skip}, {&newP, &newM, &newV})
                  .ok());
  EXPECT_TRUE(newP.sameBytes(p));
  EXPECT_TRUE(newM.sameBytes(m));
  EXPECT_TRUE(newV.sameBytes(v));

  // In place (results are the operands' buffers): nothing is written.
  Tensor before = p;
  absl::StatusOr<KernelFn> sgd =
      bindKernel("train.sgd", dict({{"lr", f64(0.1)}}), {&p, &g, &skip}, {&p});
  ASSERT_TRUE(sgd.ok()) << sgd.status();
  const void *ins[] = {p.data(), g.data(), skip.data()};
  void *outs[] = {p.data()};
  ASSERT_TRUE((*sgd)(ins, outs, KernelContext{}).ok());
  EXPECT_TRUE(p.sameBytes(before));
}

TEST(LossScalingTest, ClearFlagUpdatesAsWithoutOne) {
  Tensor p = randomTensor(DType::f32, {600}, 10);
  Tensor g = randomTensor(DType::f32, {600}, 11);
  Tensor buf = randomTensor(DType::f32, {600}, 12);
  Tensor clear = fromValues(DType::f32, {}, {0.0});
  mlir::DictionaryAttr params =
      dict({{"lr", f64(0.1)}, {"momentum", f64(0.9)}});
  Tensor withP(DType::f32, {600}), withB(DType::f32, {600});
  Tensor plainP(DType::f32, {600}), plainB(DType::f32, {600});
  ASSERT_TRUE(runKernel("train.sgd_momentum", params, {&p, &g, &buf, &clear},
                        {&withP, &withB})
                  .ok());
  ASSERT_TRUE(runKernel("train.sgd_momentum", params, {&p, &g, &buf},
                        {&plainP, &plainB})
                  .ok());
  EXPECT_TRUE(withP.sameBytes(plainP));
  EXPECT_TRUE(withB.sameBytes(plainB));
  EXPECT_FALSE(withP.sameBytes(p));
}

TEST(LossScalingTest, UpdateRejectsAFlagOfTheWrongType) {
  Tensor p = randomTensor(DType::f32, {4}, 13);
  Tensor flag = fromValues(DType::f32, {1}, {0.0});
  Tensor out(DType::f32, {4});
  absl::Status status =
      runKernel("train.sgd", dict({{"lr", f64(0.1)}}), {&p, &p, &flag}, {&out});
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("skip_if flag as tensor<f32>"),
            std::string::npos)
      << status;
}

} // namespace
