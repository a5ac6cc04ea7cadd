//===- UpdatesTest.cpp - Optimizer updates against their formulas ---------===//
//
// Each step is checked against the formula evaluated in double on the
// values the kernel was given, for three steps (so bias correction sees
// t = 1, 2, 3 and the moments are non-zero), feeding the kernel's own
// results forward.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <cmath>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

constexpr double kLr = 0.01, kBeta1 = 0.9, kBeta2 = 0.95, kEps = 1e-8,
                 kWeightDecay = 0.1, kMomentum = 0.8;
const std::vector<int64_t> kShape = {3, 250}; // Spans two blocks.

mlir::DictionaryAttr hyper(bool momentum) {
  std::vector<std::pair<std::string, mlir::Attribute>> entries = {
      {"lr", f64(kLr)},
      {"beta1", f64(kBeta1)},
      {"beta2", f64(kBeta2)},
      {"eps", f64(kEps)},
      {"weight_decay", f64(kWeightDecay)}};
  if (momentum)
    entries.push_back({"momentum", f64(kMomentum)});
  return dict(entries);
}

TEST(UpdatesTest, SgdFollowsFormula) {
  for (DType paramType : {DType::f32, DType::bf16})
    for (DType gradType : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(dtypeLabel(paramType) + " grad " + dtypeLabel(gradType));
      Tensor param = randomTensor(paramType, kShape, 81);
      for (int step = 1; step <= 3; ++step) {
        Tensor grad = randomTensor(gradType, kShape, 82 + step);
        Tensor next(paramType, kShape);
        ASSERT_TRUE(
            runKernel("train.sgd", hyper(false), {&param, &grad}, {&next})
                .ok());
        std::vector<double> want;
        for (int64_t i = 0; i < param.size(); ++i)
          want.push_back(param.at(i) -
                         kLr * (grad.at(i) + kWeightDecay * param.at(i)));
        EXPECT_TRUE(allClose(next, want, 1e-7, relativeTolerance(paramType)));
        param = next;
      }
    }
}

TEST(UpdatesTest, SgdMomentumFollowsFormula) {
  for (DType paramType : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtypeLabel(paramType));
    Tensor param = randomTensor(paramType, kShape, 91);
    Tensor buffer(DType::f32, kShape);
    for (int step = 1; step <= 3; ++step) {
      Tensor grad = randomTensor(DType::bf16, kShape, 92 + step);
      Tensor nextParam(paramType, kShape), nextBuffer(DType::f32, kShape);
      ASSERT_TRUE(runKernel("train.sgd_momentum", hyper(true),
                            {&param, &grad, &buffer}, {&nextParam, &nextBuffer})
                      .ok());
      std::vector<double> wantParam, wantBuffer;
      for (int64_t i = 0; i < param.size(); ++i) {
        double b = kMomentum * buffer.at(i) +
                   (grad.at(i) + kWeightDecay * param.at(i));
        wantBuffer.push_back(b);
        wantParam.push_back(param.at(i) - kLr * b);
      }
      EXPECT_TRUE(allClose(nextBuffer, wantBuffer, 1e-6, 1e-5));
      EXPECT_TRUE(
          allClose(nextParam, wantParam, 1e-7, relativeTolerance(paramType)));
      param = nextParam;
      buffer = nextBuffer;
    }
  }
}

void checkAdam(const char *kernel, bool decoupled, DType paramType,
               DType gradType) {
  SCOPED_TRACE(std::string(kernel) + " " + dtypeLabel(paramType) + " grad " +
               dtypeLabel(gradType));
  Tensor param = randomTensor(paramType, kShape, 101);
  Tensor m(DType::f32, kShape), v(DType::f32, kShape);
  for (int step = 1; step <= 3; ++step) {
    Tensor grad = randomTensor(gradType, kShape, 102 + step);
    Tensor t = fromValues(DType::i64, {}, {static_cast<double>(step)});
    Tensor nextParam(paramType, kShape), nextM(DType::f32, kShape),
        nextV(DType::f32, kShape);
    ASSERT_TRUE(runKernel(kernel, hyper(false), {&param, &grad, &m, &v, &t},
                          {&nextParam, &nextM, &nextV})
                    .ok());
    std::vector<double> wantParam, wantM, wantV;
    double correction1 = 1.0 - std::pow(kBeta1, step);
    double correction2 = 1.0 - std::pow(kBeta2, step);
    for (int64_t i = 0; i < param.size(); ++i) {
      double p = param.at(i);
      double g = grad.at(i) + (decoupled ? 0.0 : kWeightDecay * p);
      double mi = kBeta1 * m.at(i) + (1 - kBeta1) * g;
      double vi = kBeta2 * v.at(i) + (1 - kBeta2) * g * g;
      double mHat = mi / correction1, vHat = vi / correction2;
      double shrunk = decoupled ? p * (1 - kLr * kWeightDecay) : p;
      wantParam.push_back(shrunk - kLr * mHat / (std::sqrt(vHat) + kEps));
      wantM.push_back(mi);
      wantV.push_back(vi);
    }
    EXPECT_TRUE(allClose(nextM, wantM, 1e-7, 1e-5)) << "step " << step;
    EXPECT_TRUE(allClose(nextV, wantV, 1e-9, 1e-5)) << "step " << step;
    // The update itself is ~lr; its f32 error is ~1e-6 of that.
    EXPECT_TRUE(
        allClose(nextParam, wantParam, 1e-7, relativeTolerance(paramType)))
        << "step " << step;
    param = nextParam;
    m = nextM;
    v = nextV;
  }
}

TEST(UpdatesTest, AdamFollowsFormula) {
  for (DType paramType : {DType::f32, DType::bf16})
    for (DType gradType : {DType::f32, DType::bf16})
      checkAdam("train.adam", false, paramType, gradType);
}

TEST(UpdatesTest, AdamWFollowsFormula) {
  for (DType paramType : {DType::f32, DType::bf16, DType::f16})
    for (DType gradType : {DType::f32, DType::bf16})
      checkAdam("train.adamw", true, paramType, gradType);
}

TEST(UpdatesTest, AdamAndAdamWDiffer) {
  // Guards against both names reaching one formula.
  Tensor param = randomTensor(DType::f32, kShape, 111);
  Tensor grad = randomTensor(DType::f32, kShape, 112);
  Tensor m(DType::f32, kShape), v(DType::f32, kShape);
  Tensor t = fromValues(DType::i64, {}, {1});
  Tensor p1(DType::f32, kShape), p2(DType::f32, kShape), m1 = m, v1 = v;
  ASSERT_TRUE(runKernel("train.adam", hyper(false), {&param, &grad, &m, &v, &t},
                        {&p1, &m1, &v1})
                  .ok());
  ASSERT_TRUE(runKernel("train.adamw", hyper(false),
                        {&param, &grad, &m, &v, &t}, {&p2, &m1, &v1})
                  .ok());
  EXPECT_FALSE(p1.sameBytes(p2));
}

TEST(UpdatesTest, InPlaceUpdatesMatchSeparateOutputs) {
  for (DType paramType : {DType::f32, DType::bf16}) {
    Tensor param = randomTensor(paramType, kShape, 121);
    Tensor grad = randomTensor(DType::bf16, kShape, 122);
    Tensor m = randomTensor(DType::f32, kShape, 123);
    Tensor v = randomTensor(DType::f32, kShape, 124, 0.0, 1.0);
    Tensor t = fromValues(DType::i64, {}, {5});
    Tensor p1(paramType, kShape), m1(DType::f32, kShape),
        v1(DType::f32, kShape);
    ASSERT_TRUE(runKernel("train.adamw", hyper(false),
                          {&param, &grad, &m, &v, &t}, {&p1, &m1, &v1})
                    .ok());
    ASSERT_TRUE(runKernel("train.adamw", hyper(false),
                          {&param, &grad, &m, &v, &t}, {&param, &m, &v})
                    .ok());
    EXPECT_TRUE(param.sameBytes(p1));
    EXPECT_TRUE(m.sameBytes(m1));
    EXPECT_TRUE(v.sameBytes(v1));

    Tensor buffer = randomTensor(DType::f32, kShape, 125);
    Tensor p2(paramType, kShape), b2(DType::f32, kShape);
    ASSERT_TRUE(runKernel("train.sgd_momentum", hyper(true),
                          {&param, &grad, &buffer}, {&p2, &b2})
                    .ok());
    ASSERT_TRUE(runKernel("train.sgd_momentum", hyper(true),
                          {&param, &grad, &buffer}, {&param, &buffer})
                    .ok());
    EXPECT_TRUE(param.sameBytes(p2));
    EXPECT_TRUE(buffer.sameBytes(b2));
  }
}

TEST(UpdatesTest, RejectsBadStepsAndSpecs) {
  Tensor param(DType::f32, {8}), grad(DType::f32, {8}), m(DType::f32, {8}),
      v(DType::f32, {8}), t = fromValues(DType::i64, {}, {0});
  Tensor p1(DType::f32, {8}), m1(DType::f32, {8}), v1(DType::f32, {8});
  absl::Status zeroStep = runKernel(
      "train.adam", hyper(false), {&param, &grad, &m, &v, &t}, {&p1, &m1, &v1});
  EXPECT_EQ(zeroStep.code(), absl::StatusCode::kInvalidArgument);
  // Missing lr; missing momentum; 16-bit moments; a mis-shaped gradient;
  // a result of another type than its state.
  EXPECT_FALSE(bindKernel("train.sgd", dict({{"weight_decay", f64(0)}}),
                          {&param, &grad}, {&p1})
                   .ok());
  EXPECT_FALSE(bindKernel("train.sgd_momentum", hyper(false),
                          {&param, &grad, &m}, {&p1, &m1})
                   .ok());
  Tensor m16(DType::bf16, {8});
  EXPECT_FALSE(bindKernel("train.adam", hyper(false),
                          {&param, &grad, &m16, &v, &t}, {&p1, &m16, &v1})
                   .ok());
  Tensor longGrad(DType::f32, {9});
  EXPECT_FALSE(
      bindKernel("train.sgd", hyper(false), {&param, &longGrad}, {&p1}).ok());
  Tensor p16(DType::bf16, {8});
  EXPECT_FALSE(
      bindKernel("train.sgd", hyper(false), {&param, &grad}, {&p16}).ok());
  Tensor vectorStep(DType::i64, {1});
  EXPECT_FALSE(bindKernel("train.adamw", hyper(false),
                          {&param, &grad, &m, &v, &vectorStep}, {&p1, &m1, &v1})
                   .ok());
}

} // namespace
