//===- ActivationLoopsTest.cpp - Vectorized exp and GELU loops ------------===//
//
// The Highway loops behind GELU, softmax and the cross-entropy: accuracy
// against libm and double, the special values, and that a result does not
// depend on where an element sits in a block (the partial last vector goes
// through the vector code too).
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/ActivationLoops.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace zero::rt::cpu;

namespace {

/// Distance in representable floats between two finite floats of one sign.
int64_t ulpDistance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, sizeof ia);
  std::memcpy(&ib, &b, sizeof ib);
  return std::abs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib));
}

uint32_t bitsOf(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

double geluRef(double x) {
  constexpr double c = 0.7978845608028654;
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

double geluDerivativeRef(double x) {
  constexpr double c = 0.7978845608028654, a = 0.044715;
  double t = std::tanh(c * (x + a * x * x * x));
  return 0.5 * (1.0 + t) +
         0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * a * x * x);
}

TEST(ActivationLoopsTest, ExpIsWithinTwoUlpOfExpf) {
  // Every 97th float bit pattern across the whole normal range of results.
  std::vector<float> x;
  for (float v = -86.6f; v < 88.7f; v = std::nextafter(v, 100.0f) + 1e-4f)
    x.push_back(v);
  ASSERT_GT(x.size(), 1000000u);
  std::vector<float> y(x.size());
  expShiftedBlock(static_cast<int64_t>(x.size()), x.data(), 0.0f, y.data());
  int64_t worst = 0;
  float worstAt = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t distance = ulpDistance(y[i], std::exp(x[i]));
    if (distance > worst) {
      worst = distance;
      worstAt = x[i];
    }
  }
  EXPECT_LE(worst, 2) << "at x = " << worstAt << " (" << activationLoopsTarget()
                      << ")";
}

TEST(ActivationLoopsTest, ExpSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {0.0f, -inf, inf, nan, -100.0f, 89.0f, -86.0f, 88.7f};
  std::vector<float> y(x.size());
  expShiftedBlock(static_cast<int64_t>(x.size()), x.data(), 0.0f, y.data());
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(bitsOf(y[1]), 0u) << "a masked -inf must give exactly +0";
  EXPECT_EQ(y[2], inf);
  EXPECT_TRUE(std::isnan(y[3]));
  EXPECT_EQ(bitsOf(y[4]), 0u);
  EXPECT_EQ(y[5], inf);
  EXPECT_LE(ulpDistance(y[6], std::exp(-86.0f)), 2);
  EXPECT_LE(ulpDistance(y[7], std::exp(88.7f)), 2);
}

TEST(ActivationLoopsTest, ExpShiftSubtractsFirst) {
  std::vector<float> x = {3.0f, 1.0f, -2.0f}, y(3);
  expShiftedBlock(3, x.data(), 3.0f, y.data());
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_LE(ulpDistance(y[1], std::exp(-2.0f)), 2);
  EXPECT_LE(ulpDistance(y[2], std::exp(-5.0f)), 2);
}

/// x and dy of 4099 elements (a partial last vector at any width), uniform
/// in [-8, 8).
struct ActivationInputs {
  std::vector<float> x, dy;
};
ActivationInputs randomActivationInputs(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  ActivationInputs inputs{std::vector<float>(4099), std::vector<float>(4099)};
  for (size_t i = 0; i < inputs.x.size(); ++i) {
    inputs.x[i] = dist(rng);
    inputs.dy[i] = dist(rng);
  }
  return inputs;
}

TEST(ActivationLoopsTest, GeluAndGradientMatchDouble) {
  auto [x, dy] = randomActivationInputs(7);
  std::vector<float> y(x.size()), dx(x.size());
  geluBlock(static_cast<int64_t>(x.size()), x.data(), y.data());
  geluGradBlock(static_cast<int64_t>(x.size()), x.data(), dy.data(), dx.data());
  for (size_t i = 0; i < x.size(); ++i) {
    double want = geluRef(x[i]);
    EXPECT_NEAR(y[i], want, 1e-6 + 2e-6 * std::abs(want)) << "x = " << x[i];
    double wantGrad = dy[i] * geluDerivativeRef(x[i]);
    EXPECT_NEAR(dx[i], wantGrad, 1e-6 + 4e-6 * std::abs(wantGrad))
        << "x = " << x[i];
  }
}

TEST(ActivationLoopsTest, ExactGeluAndGradientMatchDouble) {
  auto [x, dy] = randomActivationInputs(8);
  std::vector<float> y(x.size()), dx(x.size());
  geluExactBlock(static_cast<int64_t>(x.size()), x.data(), y.data());
  geluExactGradBlock(static_cast<int64_t>(x.size()), x.data(), dy.data(),
                     dx.data());
  double worstGap = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i];
    double cdf = 0.5 * (1.0 + std::erf(v / std::sqrt(2.0)));
    double want = v * cdf;
    EXPECT_NEAR(y[i], want, 1e-6 + 2e-6 * std::abs(want)) << "x = " << v;
    double wantGrad =
        dy[i] * (cdf + v * std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI));
    EXPECT_NEAR(dx[i], wantGrad, 1e-6 + 4e-6 * std::abs(wantGrad))
        << "x = " << v;
    worstGap = std::max(worstGap, std::abs(want - geluRef(v)));
  }
  // The tanh form is not a stand-in: the two part by more than the
  // tolerance above (by up to ~5e-4 near |x| = 2).
  EXPECT_GT(worstGap, 1e-4);
}

TEST(ActivationLoopsTest, GeluSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {nan, inf, -inf, 0.0f, 40.0f, -40.0f};
  std::vector<float> y(x.size()), dx(x.size()), dy(x.size(), 1.0f);
  geluBlock(static_cast<int64_t>(x.size()), x.data(), y.data());
  geluGradBlock(static_cast<int64_t>(x.size()), x.data(), dy.data(), dx.data());
  // An overflow upstream must stay visible to the loss scaler.
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(std::isnan(dx[0]));
  EXPECT_EQ(y[1], inf);
  // At -inf, x * 0.5 (1 + tanh(u)) is -inf * 0 in PyTorch: NaN, and so is
  // the slope (NonFiniteTest).
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_TRUE(std::isnan(dx[2]));
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_EQ(y[4], 40.0f);
  // The exponent is capped at 80 (e stays finite): far left, GELU is a tiny
  // negative number and its slope a tiny one, as in the scalar formula.
  EXPECT_LT(y[5], 0.0f);
  EXPECT_GT(y[5], -1e-30f);
  EXPECT_EQ(dx[4], 1.0f);
  EXPECT_LT(std::abs(dx[5]), 1e-30f);
}

// Each element gets the same bits whether it is computed alone, in a full
// vector or in the padded last one: results do not move with the block's
// length or an element's offset (a sharded tensor is split at any element).
TEST(ActivationLoopsTest, ResultsDoNotDependOnPosition) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
  std::vector<float> x(67), dy(67);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = dist(rng);
    dy[i] = dist(rng);
  }
  std::vector<float> alone(x.size() * 3);
  for (size_t i = 0; i < x.size(); ++i) {
    expShiftedBlock(1, &x[i], 1.5f, &alone[i]);
    geluBlock(1, &x[i], &alone[x.size() + i]);
    geluGradBlock(1, &x[i], &dy[i], &alone[2 * x.size() + i]);
  }
  for (int64_t offset = 0; offset < 5; ++offset)
    for (int64_t n = 1; offset + n <= static_cast<int64_t>(x.size()); n += 7) {
      std::vector<float> e(n), g(n), d(n);
      expShiftedBlock(n, &x[offset], 1.5f, e.data());
      geluBlock(n, &x[offset], g.data());
      geluGradBlock(n, &x[offset], &dy[offset], d.data());
      for (int64_t i = 0; i < n; ++i) {
        size_t at = static_cast<size_t>(offset + i);
        ASSERT_EQ(bitsOf(e[i]), bitsOf(alone[at])) << offset << " " << n;
        ASSERT_EQ(bitsOf(g[i]), bitsOf(alone[x.size() + at]));
        ASSERT_EQ(bitsOf(d[i]), bitsOf(alone[2 * x.size() + at]));
      }
    }
}

TEST(ActivationLoopsTest, InPlace) {
  std::vector<float> x = {-1.0f, 0.5f, 2.0f, 3.0f, -4.0f}, copy = x;
  std::vector<float> want(x.size());
  geluBlock(5, copy.data(), want.data());
  geluBlock(5, x.data(), x.data());
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(bitsOf(x[i]), bitsOf(want[i]));
}

} // namespace
