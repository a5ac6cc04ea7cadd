//===- ElementwiseTest.cpp - Elementwise kernels against double -----------===//

#include "KernelTestSupport.h"

#include <cmath>
#include <functional>
#include <limits>
#include <tuple>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

double geluRef(double x) {
  constexpr double c = 0.7978845608028654;
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

double sigmoidRef(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct UnaryCase {
  const char *op;
  double lo, hi;
  std::function<double(double)> ref;
};

const std::vector<UnaryCase> &unaryCases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", -3, 3, [](double x) { return -x; }},
      {"exp", -3, 3, [](double x) { return std::exp(x); }},
      {"log", 0.05, 4, [](double x) { return std::log(x); }},
      {"sqrt", 0.05, 4, [](double x) { return std::sqrt(x); }},
      {"rsqrt", 0.05, 4, [](double x) { return 1.0 / std::sqrt(x); }},
      {"tanh", -3, 3, [](double x) { return std::tanh(x); }},
      {"relu", -3, 3, [](double x) { return x > 0 ? x : 0.0; }},
      {"gelu", -4, 4, geluRef},
      {"sigmoid", -8, 8, sigmoidRef},
      {"silu", -8, 8, [](double x) { return x * sigmoidRef(x); }},
  };
  return cases;
}

const DType kFloatTypes[] = {DType::f32, DType::bf16, DType::f16};

// 1055 elements: more than two conversion blocks, and not a multiple of one.
const std::vector<int64_t> kShape = {5, 211};

TEST(ElementwiseTest, UnaryOpsMatchDoubleReference) {
  for (const UnaryCase &c : unaryCases())
    for (DType dtype : kFloatTypes) {
      SCOPED_TRACE(std::string(c.op) + " " + dtypeLabel(dtype));
      Tensor x = randomTensor(dtype, kShape, 1, c.lo, c.hi);
      Tensor y(dtype, kShape);
      y.poison();
      ASSERT_TRUE(runKernel(std::string("train.") + c.op, {}, {&x}, {&y}).ok());
      std::vector<double> want;
      for (double v : x.values())
        want.push_back(c.ref(v));
      EXPECT_TRUE(allClose(y, want, 1e-6, relativeTolerance(dtype)));
    }
}

/// NaN and infinities pass through each activation as through PyTorch's:
/// relu(NaN) is NaN (a max that dropped it would make a NaN batch's loss
/// look finite while the weights turn NaN), relu(-inf) is 0.
TEST(ElementwiseTest, ActivationsPropagateNanAsPyTorch) {
  for (const UnaryCase &c : unaryCases())
    for (DType dtype : kFloatTypes) {
      SCOPED_TRACE(std::string(c.op) + " " + dtypeLabel(dtype));
      Tensor x = fromValues(dtype, {3}, {NAN, INFINITY, -INFINITY});
      Tensor y(dtype, {3});
      ASSERT_TRUE(runKernel(std::string("train.") + c.op, {}, {&x}, {&y}).ok());
      EXPECT_TRUE(std::isnan(y.at(0))) << y.at(0);
    }
  Tensor x = fromValues(DType::f32, {3}, {NAN, INFINITY, -INFINITY});
  Tensor y(DType::f32, {3});
  ASSERT_TRUE(runKernel("train.relu", {}, {&x}, {&y}).ok());
  EXPECT_EQ(y.at(1), INFINITY);
  EXPECT_EQ(y.at(2), 0.0);
}

TEST(ElementwiseTest, BinaryOpsMatchDoubleReference) {
  struct Case {
    const char *op;
    std::function<double(double, double)> ref;
  };
  const Case cases[] = {
      {"add", [](double a, double b) { return a + b; }},
      {"sub", [](double a, double b) { return a - b; }},
      {"mul", [](double a, double b) { return a * b; }},
      {"div", [](double a, double b) { return a / b; }},
  };
  for (const Case &c : cases)
    for (DType dtype : kFloatTypes) {
      SCOPED_TRACE(std::string(c.op) + " " + dtypeLabel(dtype));
      Tensor a = randomTensor(dtype, kShape, 2, -2, 2);
      // Divisors kept away from zero so the quotient is well conditioned.
      Tensor b = randomTensor(dtype, kShape, 3, 0.5, 2);
      Tensor y(dtype, kShape);
      y.poison();
      ASSERT_TRUE(
          runKernel(std::string("train.") + c.op, {}, {&a, &b}, {&y}).ok());
      std::vector<double> want;
      for (int64_t i = 0; i < a.size(); ++i)
        want.push_back(c.ref(a.at(i), b.at(i)));
      EXPECT_TRUE(allClose(y, want, 1e-6, relativeTolerance(dtype)));
    }
}

TEST(ElementwiseTest, ResultsMayOverwriteTheirInputs) {
  for (DType dtype : kFloatTypes) {
    SCOPED_TRACE(dtypeLabel(dtype));
    Tensor a = randomTensor(dtype, kShape, 4, 0.1, 2);
    Tensor b = randomTensor(dtype, kShape, 5, 0.5, 2);
    Tensor separate(dtype, kShape);
    ASSERT_TRUE(runKernel("train.div", {}, {&a, &b}, {&separate}).ok());
    Tensor inPlace = a;
    ASSERT_TRUE(runKernel("train.div", {}, {&inPlace, &b}, {&inPlace}).ok());
    EXPECT_TRUE(inPlace.sameBytes(separate));

    Tensor logSeparate(dtype, kShape);
    ASSERT_TRUE(runKernel("train.log", {}, {&a}, {&logSeparate}).ok());
    Tensor logInPlace = a;
    ASSERT_TRUE(runKernel("train.log", {}, {&logInPlace}, {&logInPlace}).ok());
    EXPECT_TRUE(logInPlace.sameBytes(logSeparate));
  }
}

TEST(ElementwiseTest, ScaleMultipliesByFactor) {
  for (DType dtype : kFloatTypes)
    for (double factor : {0.125, -3.0}) {
      Tensor x = randomTensor(dtype, kShape, 6);
      Tensor y(dtype, kShape);
      ASSERT_TRUE(
          runKernel("train.scale", dict({{"factor", f64(factor)}}), {&x}, {&y})
              .ok());
      std::vector<double> want;
      for (double v : x.values())
        want.push_back(v * factor);
      EXPECT_TRUE(allClose(y, want, 1e-7, relativeTolerance(dtype)));
    }
}

TEST(ElementwiseTest, BiasAddBroadcastsAlongLastDim) {
  for (DType dtype : kFloatTypes)
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{6, 10}, std::vector<int64_t>{2, 3, 700},
          std::vector<int64_t>{9}}) {
      SCOPED_TRACE(dtypeLabel(dtype) + " rank " + std::to_string(shape.size()));
      int64_t features = shape.back();
      Tensor x = randomTensor(dtype, shape, 7);
      Tensor b = randomTensor(dtype, {features}, 8);
      Tensor y(dtype, shape);
      y.poison();
      ASSERT_TRUE(runKernel("train.bias_add", {}, {&x, &b}, {&y}).ok());
      std::vector<double> want;
      for (int64_t i = 0; i < x.size(); ++i)
        want.push_back(x.at(i) + b.at(i % features));
      EXPECT_TRUE(allClose(y, want, 1e-7, relativeTolerance(dtype)));
    }
}

TEST(ElementwiseTest, KeyMaskFillsPaddingKeysOfEachBatch) {
  for (DType dtype : kFloatTypes)
    for (DType keepType : {DType::i32, DType::i64})
      for (std::vector<int64_t> shape :
           {std::vector<int64_t>{2, 3, 5, 5}, std::vector<int64_t>{3, 7}}) {
        int64_t batch = shape.front(), keys = shape.back();
        Tensor x = randomTensor(dtype, shape, 10);
        // Values other than 0 and 1 keep a key too, as PyTorch's bool cast.
        Tensor keep = randomIds(keepType, {batch, keys}, 11, 3);
        Tensor y(dtype, shape);
        y.poison();
        ASSERT_TRUE(runKernel("train.key_mask", dict({{"fill", f64(-7.0)}}),
                              {&x, &keep}, {&y})
                        .ok());
        int64_t perBatch = x.size() / batch;
        std::vector<double> want;
        for (int64_t i = 0; i < x.size(); ++i)
          want.push_back(
              keep.at(i / perBatch * keys + i % keys) == 0 ? -7.0 : x.at(i));
        EXPECT_TRUE(allClose(y, want, 0.0, 0.0));
      }
}

TEST(ElementwiseTest, KeyMaskRefusesKeepOfAnotherShape) {
  Tensor x = randomTensor(DType::f32, {2, 4, 6}, 12);
  Tensor keep = randomIds(DType::i64, {2, 4}, 13, 2);
  Tensor y(DType::f32, {2, 4, 6});
  absl::Status status = runKernel("train.key_mask", dict({{"fill", f64(0.0)}}),
                                  {&x, &keep}, {&y});
  EXPECT_FALSE(status.ok());
  EXPECT_NE(std::string(status.message()).find("keep"), std::string::npos)
      << status;
}

TEST(ElementwiseTest, CausalMaskFillsAboveDiagonal) {
  for (DType dtype : kFloatTypes)
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{2, 5, 7}, std::vector<int64_t>{3, 7, 5},
          std::vector<int64_t>{4, 4}})
      for (double fill : {-std::numeric_limits<double>::infinity(), 0.0}) {
        Tensor x = randomTensor(dtype, shape, 9);
        Tensor y(dtype, shape);
        y.poison();
        ASSERT_TRUE(runKernel("train.causal_mask", dict({{"fill", f64(fill)}}),
                              {&x}, {&y})
                        .ok());
        int64_t cols = shape.back(), rows = shape[shape.size() - 2];
        std::vector<double> want;
        for (int64_t i = 0; i < x.size(); ++i) {
          int64_t col = i % cols, row = (i / cols) % rows;
          want.push_back(col > row ? fill : x.at(i));
        }
        EXPECT_TRUE(allClose(y, want, 0.0, 0.0));
      }
}

TEST(ElementwiseTest, CastRoundsToNearestEven) {
  for (DType from : kFloatTypes)
    for (DType to : kFloatTypes) {
      SCOPED_TRACE(dtypeLabel(from) + " -> " + dtypeLabel(to));
      Tensor x = randomTensor(from, kShape, 10, -300, 300);
      x.set(0, 1.0 + 1.0 / 512); // A bf16 tie: rounds to even (1.0).
      x.set(1, 70000.0);         // Beyond f16's range.
      x.set(2, 1e-6);            // An f16 subnormal.
      Tensor y(to, kShape);
      ASSERT_TRUE(runKernel("train.cast", {}, {&x}, {&y}).ok());
      Tensor want(to, kShape);
      for (int64_t i = 0; i < x.size(); ++i)
        storeFromFloat(want.data(), to, i, loadAsFloat(x.data(), from, i));
      EXPECT_TRUE(y.sameBytes(want));
    }
}

TEST(ElementwiseTest, FillWritesEveryElement) {
  for (DType dtype :
       {DType::f32, DType::bf16, DType::f16, DType::i32, DType::i64}) {
    Tensor out(dtype, {3, 5});
    out.poison();
    ASSERT_TRUE(
        runKernel("zrt.fill", dict({{"value", f64(-7.0)}}), {}, {&out}).ok());
    EXPECT_TRUE(allClose(out, std::vector<double>(15, -7.0), 0.0, 0.0));
  }
  Tensor scalar(DType::f32, {});
  ASSERT_TRUE(
      runKernel("zrt.fill", dict({{"value", f64(0.25)}}), {}, {&scalar}).ok());
  EXPECT_EQ(scalar.at(0), 0.25);
  Tensor ints(DType::i32, {4});
  EXPECT_EQ(
      runKernel("zrt.fill", dict({{"value", f64(0.5)}}), {}, {&ints}).code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(ElementwiseTest, StepIndexWritesTheStep) {
  Tensor out(DType::i64, {});
  KernelContext ctx;
  ctx.step = 42;
  ASSERT_TRUE(runKernel("train.step_index", {}, {}, {&out}, ctx).ok());
  EXPECT_EQ(*static_cast<int64_t *>(out.data()), 42);
}

//===----------------------------------------------------------------------===//
// Activation gradients
//===----------------------------------------------------------------------===//

struct GradCase {
  const char *forward;
  const char *grad;
  // tanh_grad and sigmoid_grad take the forward's result, the others its
  // input.
  bool savesResult;
  /// Of the input x, or of the saved result y.
  std::function<double(double x, double y)> derivative;
};

const GradCase kGradCases[] = {
    {"relu", "relu_grad", false,
     [](double x, double) { return x > 0 ? 1.0 : 0.0; }},
    {"gelu", "gelu_grad", false,
     [](double x, double) {
       double h = 1e-6;
       return (geluRef(x + h) - geluRef(x - h)) / (2 * h);
     }},
    // From the saved (rounded) result, as the kernels compute it.
    {"tanh", "tanh_grad", true, [](double, double y) { return 1.0 - y * y; }},
    {"sigmoid", "sigmoid_grad", true,
     [](double, double y) { return y * (1.0 - y); }},
    {"silu", "silu_grad", false,
     [](double x, double) {
       double s = sigmoidRef(x);
       return s * (1.0 + x * (1.0 - s));
     }},
};

/// Inputs for activation checks: away from relu's kink at 0.
Tensor activationInput(DType dtype, std::vector<int64_t> shape, uint32_t seed) {
  Tensor x = randomTensor(dtype, shape, seed, 0.1, 3);
  for (int64_t i = 0; i < x.size(); i += 2)
    x.set(i, -x.at(i));
  return x;
}

TEST(ElementwiseTest, ActivationGradsMatchDerivatives) {
  for (const GradCase &c : kGradCases)
    for (DType dtype : kFloatTypes) {
      SCOPED_TRACE(std::string(c.grad) + " " + dtypeLabel(dtype));
      Tensor x = activationInput(dtype, kShape, 11);
      Tensor dy = randomTensor(dtype, kShape, 12);
      Tensor saved = x;
      if (c.savesResult) {
        ASSERT_TRUE(
            runKernel(std::string("train.") + c.forward, {}, {&x}, {&saved})
                .ok());
      }
      Tensor dx(dtype, kShape);
      dx.poison();
      ASSERT_TRUE(
          runKernel(std::string("train.") + c.grad, {}, {&saved, &dy}, {&dx})
              .ok());
      std::vector<double> want;
      for (int64_t i = 0; i < x.size(); ++i)
        want.push_back(dy.at(i) * c.derivative(x.at(i), saved.at(i)));
      EXPECT_TRUE(allClose(dx, want, 1e-6, relativeTolerance(dtype)));
    }
}

TEST(ElementwiseTest, GeluStaysFiniteAtExtremes) {
  const std::vector<double> xs = {-1e4, -100, -12, -1e-3, 0,
                                  1e-3, 12,   100, 1e4};
  Tensor x = fromValues(DType::f32, {9}, xs);
  Tensor ones = fromValues(DType::f32, {9}, std::vector<double>(9, 1.0));
  Tensor y(DType::f32, {9}), dx(DType::f32, {9});
  ASSERT_TRUE(runKernel("train.gelu", {}, {&x}, {&y}).ok());
  ASSERT_TRUE(runKernel("train.gelu_grad", {}, {&x, &ones}, {&dx}).ok());
  std::vector<double> wantY, wantDx;
  for (double v : xs) {
    constexpr double c = 0.7978845608028654, a = 0.044715;
    double t = std::tanh(c * (v + a * v * v * v));
    wantY.push_back(0.5 * v * (1 + t));
    wantDx.push_back(0.5 * (1 + t) +
                     0.5 * v * (1 - t * t) * c * (1 + 3 * a * v * v));
  }
  EXPECT_TRUE(allClose(y, wantY, 1e-9, 2e-6));
  EXPECT_TRUE(allClose(dx, wantDx, 1e-9, 2e-6));
}

// The logistic's exponent is capped: at -1e4 a naive 1 / (1 + e^-x) gives
// e = inf, and SiLU's gradient s (1 + x e s) would be 0 * inf = NaN.
TEST(ElementwiseTest, SigmoidAndSiluStayFiniteAtExtremes) {
  const std::vector<double> xs = {-1e4, -100, -30, -1e-3, 0,
                                  1e-3, 30,   100, 1e4};
  Tensor x = fromValues(DType::f32, {9}, xs);
  Tensor ones = fromValues(DType::f32, {9}, std::vector<double>(9, 1.0));
  Tensor s(DType::f32, {9}), ds(DType::f32, {9}), y(DType::f32, {9}),
      dx(DType::f32, {9});
  ASSERT_TRUE(runKernel("train.sigmoid", {}, {&x}, {&s}).ok());
  ASSERT_TRUE(runKernel("train.sigmoid_grad", {}, {&s, &ones}, {&ds}).ok());
  ASSERT_TRUE(runKernel("train.silu", {}, {&x}, {&y}).ok());
  ASSERT_TRUE(runKernel("train.silu_grad", {}, {&x, &ones}, {&dx}).ok());
  std::vector<double> wantS, wantDs, wantY, wantDx;
  // From the saved f32 result, as the kernel computes it: 1 - s is 0 once
  // s rounds to 1 (x >= 17), as in PyTorch's sigmoid_backward.
  for (int64_t i = 0; i < s.size(); ++i)
    wantDs.push_back(s.at(i) * (1 - s.at(i)));
  for (double v : xs) {
    double sv = sigmoidRef(v);
    wantS.push_back(sv);
    wantY.push_back(v * sv);
    wantDx.push_back(sv * (1 + v * (1 - sv)));
  }
  // Below the cap the kernels give e^-80 (1.8e-35) where the exact value
  // is smaller: absolute error 1e-30, relative 2e-6 elsewhere.
  EXPECT_TRUE(allClose(s, wantS, 1e-30, 2e-6));
  EXPECT_TRUE(allClose(ds, wantDs, 1e-30, 2e-6));
  EXPECT_TRUE(allClose(y, wantY, 1e-30, 2e-6));
  EXPECT_TRUE(allClose(dx, wantDx, 1e-30, 2e-6));
}

TEST(ElementwiseTest, ActivationGradsMatchFiniteDifferences) {
  const std::vector<int64_t> shape = {4, 6};
  for (const GradCase &c : kGradCases) {
    SCOPED_TRACE(c.grad);
    std::string forward = std::string("train.") + c.forward;
    Tensor x = activationInput(DType::f32, shape, 13);
    Tensor w = randomTensor(DType::f32, shape, 14);
    std::vector<double> weights = w.values();
    auto loss = [&](const Tensor &input) {
      Tensor y(DType::f32, shape);
      EXPECT_TRUE(runKernel(forward, {}, {&input}, {&y}).ok());
      return weightedSum(y, weights);
    };
    Tensor saved = x;
    if (c.savesResult) {
      ASSERT_TRUE(runKernel(forward, {}, {&x}, {&saved}).ok());
    }
    Tensor dx(DType::f32, shape);
    ASSERT_TRUE(
        runKernel(std::string("train.") + c.grad, {}, {&saved, &w}, {&dx})
            .ok());
    // f32 forward, h = 1e-2: truncation ~h^2 |f'''| and rounding
    // ~1e-7 / h stay below 1e-3.
    EXPECT_TRUE(checkGradient(x, loss, dx.values(), 1e-2, 2e-3, 1e-2));
  }
}

} // namespace
