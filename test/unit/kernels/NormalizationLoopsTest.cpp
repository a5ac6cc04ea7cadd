//===- NormalizationLoopsTest.cpp - Vectorized layer norm rows ------------===//
//
// The Highway loops behind train.layer_norm and train.layer_norm_grad: on
// every instruction set this CPU and the build have (SSSE3 to AVX-512, and
// the portable fallback), the results are bitwise those of a scalar
// reference that adds in the order NormalizationLoops.h documents, for row
// lengths that are and are not multiples of the vector width and of the 16
// partial sums, at odd offsets and in place; and they are close to double.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/NormalizationLoops.h"

#include "KernelTestSupport.h"

#include "hwy/targets.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace zero::rt;
using namespace zero::rt::cpu;

namespace {

const int64_t kLengths[] = {1,  2,  3,  5,  7,  8,  9,   15,  16,  17,  23,  31,
                            32, 33, 48, 63, 64, 65, 100, 129, 255, 768, 1001};
const int64_t kOffsets[] = {0, 1, 3};

uint32_t bitsOf(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

/// Runs `body` once per Highway target the CPU supports and the library
/// was compiled for, with the dispatch forced to it; the name goes into
/// failures.
void forEachTarget(const std::function<void(const std::string &)> &body) {
  std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  std::string names;
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    std::string name = normalizationLoopsTarget();
    EXPECT_EQ(name, hwy::TargetName(target));
    names += " " + name;
    SCOPED_TRACE(name);
    body(name);
  }
  hwy::SetSupportedTargetsForTest(0);
  ::testing::Test::RecordProperty("targets", names);
}

/// The documented order, one element at a time: 16 interleaved partial
/// sums in index order, then the halving tree.
float fixedSum(const std::vector<float> &terms) {
  float p[16] = {};
  for (size_t i = 0; i < terms.size(); ++i)
    p[i % 16] = p[i % 16] + terms[i];
  float q[8], r[4];
  for (int k = 0; k < 8; ++k)
    q[k] = p[k] + p[k + 8];
  for (int k = 0; k < 4; ++k)
    r[k] = q[k] + q[k + 4];
  return (r[0] + r[2]) + (r[1] + r[3]);
}

struct Row {
  std::vector<float> y;
  float mean = 0, rstd = 0;
};

/// layerNormRow's contract (NormalizationLoops.h) in scalar f32.
Row layerNormReference(const float *x, const float *gamma, const float *beta,
                       int64_t n, float eps) {
  Row row;
  float inverse = 1.0f / static_cast<float>(n);
  row.mean = fixedSum(std::vector<float>(x, x + n)) * inverse;
  std::vector<float> c(n), squares(n);
  for (int64_t j = 0; j < n; ++j) {
    c[j] = x[j] - row.mean;
    squares[j] = c[j] * c[j];
  }
  float variance = fixedSum(squares) * inverse;
  row.rstd = 1.0f / std::sqrt(variance + eps);
  for (int64_t j = 0; j < n; ++j) {
    float scaled = c[j] * row.rstd;
    scaled = scaled * gamma[j];
    row.y.push_back(scaled + beta[j]);
  }
  return row;
}

/// layerNormGradRow's contract in scalar f32; accumulates into dgamma and
/// dbeta, returns dx.
std::vector<float> gradReference(const float *x, const float *dy,
                                 const float *gamma, int64_t n, float mean,
                                 float rstd, std::vector<float> &dgamma,
                                 std::vector<float> &dbeta) {
  float inverse = 1.0f / static_cast<float>(n);
  std::vector<float> xhat(n), gy(n), product(n), dx(n);
  for (int64_t j = 0; j < n; ++j) {
    xhat[j] = (x[j] - mean) * rstd;
    gy[j] = dy[j] * gamma[j];
    product[j] = gy[j] * xhat[j];
    float dg = dy[j] * xhat[j];
    dgamma[j] = dgamma[j] + dg;
    dbeta[j] = dbeta[j] + dy[j];
  }
  float a = fixedSum(gy) * inverse, b = fixedSum(product) * inverse;
  for (int64_t j = 0; j < n; ++j) {
    float centred = gy[j] - a;
    float along = xhat[j] * b;
    dx[j] = rstd * (centred - along);
  }
  return dx;
}

std::vector<float> randomFloats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(n);
  for (float &value : values)
    value = dist(rng);
  return values;
}

::testing::AssertionResult sameBits(const std::vector<float> &got,
                                    const std::vector<float> &want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << "sizes " << got.size() << " and " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (bitsOf(got[i]) != bitsOf(want[i]))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << got[i] << " vs " << want[i];
  return ::testing::AssertionSuccess();
}

TEST(NormalizationLoopsTest, RowSumFollowsTheDocumentedOrder) {
  forEachTarget([](const std::string &) {
    for (int64_t n : kLengths) {
      SCOPED_TRACE(n);
      // Magnitudes far apart, so that another order gives other bits.
      std::vector<float> x = randomFloats(n + 3, 1 + n, -1.0f, 1.0f);
      for (size_t i = 0; i < x.size(); i += 5)
        x[i] *= 4096.0f;
      for (int64_t offset : kOffsets) {
        std::vector<float> terms(x.begin() + offset, x.begin() + offset + n);
        EXPECT_EQ(bitsOf(rowSum(n, x.data() + offset)),
                  bitsOf(fixedSum(terms)));
      }
    }
    EXPECT_EQ(rowSum(0, nullptr), 0.0f);
  });
}

TEST(NormalizationLoopsTest, LayerNormRowIsTheReferenceBitwise) {
  const float eps = 1e-5f;
  forEachTarget([&](const std::string &) {
    for (int64_t n : kLengths)
      for (int64_t offset : kOffsets) {
        SCOPED_TRACE(testing::Message() << "n " << n << " offset " << offset);
        // An offset mean exercises the two-pass variance.
        std::vector<float> x = randomFloats(n + offset, 10 + n, 2.0f, 6.0f);
        std::vector<float> gamma = randomFloats(n + offset, 11 + n, 0.5f, 1.5f);
        std::vector<float> beta = randomFloats(n + offset, 12 + n, -1, 1);
        const float *xr = x.data() + offset;
        const float *gr = gamma.data() + offset;
        const float *br = beta.data() + offset;
        Row want = layerNormReference(xr, gr, br, n, eps);

        std::vector<float> y(n + offset);
        float mean = 0, rstd = 0;
        layerNormRow(n, xr, gr, br, eps, y.data() + offset, &mean, &rstd);
        EXPECT_TRUE(
            sameBits(std::vector<float>(y.begin() + offset, y.end()), want.y));
        EXPECT_EQ(bitsOf(mean), bitsOf(want.mean));
        EXPECT_EQ(bitsOf(rstd), bitsOf(want.rstd));

        // In place.
        std::vector<float> inPlace = x;
        float mean2 = 0, rstd2 = 0;
        layerNormRow(n, inPlace.data() + offset, gr, br, eps,
                     inPlace.data() + offset, &mean2, &rstd2);
        EXPECT_TRUE(sameBits(
            std::vector<float>(inPlace.begin() + offset, inPlace.end()),
            want.y));

        // Close to double.
        double dmean = 0, dvar = 0;
        for (int64_t j = 0; j < n; ++j)
          dmean += xr[j];
        dmean /= n;
        for (int64_t j = 0; j < n; ++j)
          dvar += (xr[j] - dmean) * (xr[j] - dmean);
        dvar /= n;
        double drstd = 1.0 / std::sqrt(dvar + eps);
        EXPECT_NEAR(mean, dmean, 1e-6 * std::fabs(dmean));
        EXPECT_NEAR(rstd, drstd, 1e-4 * drstd);
        for (int64_t j = 0; j < n; ++j)
          EXPECT_NEAR(y[offset + j], (xr[j] - dmean) * drstd * gr[j] + br[j],
                      2e-4)
              << "at " << j;
      }
  });
}

TEST(NormalizationLoopsTest, LayerNormGradRowIsTheReferenceBitwise) {
  const int64_t rows = 3;
  forEachTarget([&](const std::string &) {
    for (int64_t n : kLengths)
      for (int64_t offset : kOffsets) {
        SCOPED_TRACE(testing::Message() << "n " << n << " offset " << offset);
        std::vector<float> gamma = randomFloats(n + offset, 20 + n, 0.5f, 1.5f);
        const float *gr = gamma.data() + offset;
        std::vector<float> dgamma(n + offset, 0.0f), dbeta(n + offset, 0.0f);
        std::vector<float> wantDgamma(n, 0.0f), wantDbeta(n, 0.0f);
        std::vector<double> refDgamma(n, 0.0), refDbeta(n, 0.0);
        std::vector<float> scratch(2 * n);
        for (int64_t r = 0; r < rows; ++r) {
          std::vector<float> x =
              randomFloats(n + offset, 30 + n + r, -2.0f, 2.0f);
          std::vector<float> dy =
              randomFloats(n + offset, 40 + n + r, -1.0f, 1.0f);
          const float *xr = x.data() + offset, *dyr = dy.data() + offset;
          std::vector<float> ones(n, 1.0f), zeros(n, 0.0f);
          Row stats =
              layerNormReference(xr, ones.data(), zeros.data(), n, 1e-5f);
          std::vector<float> want = gradReference(
              xr, dyr, gr, n, stats.mean, stats.rstd, wantDgamma, wantDbeta);

          std::vector<float> dx(n + offset);
          layerNormGradRow(n, xr, dyr, gr, stats.mean, stats.rstd,
                           dgamma.data() + offset, dbeta.data() + offset,
                           dx.data() + offset, scratch.data());
          EXPECT_TRUE(sameBits(
              std::vector<float>(dx.begin() + offset, dx.end()), want));
          // dx written over dy gives the same bits.
          std::vector<float> overDy = dy, dgamma2(n), dbeta2(n);
          layerNormGradRow(n, xr, overDy.data() + offset, gr, stats.mean,
                           stats.rstd, dgamma2.data(), dbeta2.data(),
                           overDy.data() + offset, scratch.data());
          EXPECT_TRUE(sameBits(
              std::vector<float>(overDy.begin() + offset, overDy.end()), want));

          // Close to double, from the same statistics.
          double s = stats.rstd, meanG = 0, meanGx = 0;
          std::vector<double> xhat(n), g(n);
          for (int64_t j = 0; j < n; ++j) {
            xhat[j] = (xr[j] - static_cast<double>(stats.mean)) * s;
            g[j] = static_cast<double>(dyr[j]) * gr[j];
            meanG += g[j] / n;
            meanGx += g[j] * xhat[j] / n;
            refDgamma[j] += dyr[j] * xhat[j];
            refDbeta[j] += dyr[j];
          }
          for (int64_t j = 0; j < n; ++j)
            EXPECT_NEAR(dx[offset + j], s * (g[j] - meanG - xhat[j] * meanGx),
                        1e-4 * (1 + s))
                << "at " << j;
        }
        EXPECT_TRUE(
            sameBits(std::vector<float>(dgamma.begin() + offset, dgamma.end()),
                     wantDgamma));
        EXPECT_TRUE(
            sameBits(std::vector<float>(dbeta.begin() + offset, dbeta.end()),
                     wantDbeta));
        for (int64_t j = 0; j < n; ++j) {
          EXPECT_NEAR(dgamma[offset + j], refDgamma[j], 1e-4);
          EXPECT_NEAR(dbeta[offset + j], refDbeta[j], 1e-5);
        }
      }
  });
}

TEST(NormalizationLoopsTest, KernelsAreTheRowsBitwise) {
  // train.layer_norm and train.layer_norm_grad over [rows, cols] in f32 give
  // the reference rows' bits, on every target.
  using namespace zero::rt::test;
  const int64_t rows = 4, cols = 37;
  Tensor x = randomTensor(DType::f32, {rows, cols}, 50, 2, 6);
  Tensor gamma = randomTensor(DType::f32, {cols}, 51, 0.5, 1.5);
  Tensor beta = randomTensor(DType::f32, {cols}, 52);
  Tensor dy = randomTensor(DType::f32, {rows, cols}, 53);
  const float *xs = static_cast<const float *>(x.data());
  const float *gs = static_cast<const float *>(gamma.data());
  const float *bs = static_cast<const float *>(beta.data());
  const float *dys = static_cast<const float *>(dy.data());
  forEachTarget([&](const std::string &) {
    Tensor y(DType::f32, {rows, cols}), mean(DType::f32, {rows}),
        rstd(DType::f32, {rows});
    ASSERT_TRUE(runKernel("train.layer_norm", dict({{"eps", f64(1e-5)}}),
                          {&x, &gamma, &beta}, {&y, &mean, &rstd})
                    .ok());
    Tensor dx(DType::f32, {rows, cols}), dgamma(DType::f32, {cols}),
        dbeta(DType::f32, {cols});
    ASSERT_TRUE(runKernel("train.layer_norm_grad", {},
                          {&dy, &x, &gamma, &mean, &rstd},
                          {&dx, &dgamma, &dbeta})
                    .ok());
    std::vector<float> wantDgamma(cols, 0.0f), wantDbeta(cols, 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      SCOPED_TRACE(r);
      Row want = layerNormReference(xs + r * cols, gs, bs, cols, 1e-5f);
      EXPECT_EQ(bitsOf(static_cast<float>(mean.at(r))), bitsOf(want.mean));
      EXPECT_EQ(bitsOf(static_cast<float>(rstd.at(r))), bitsOf(want.rstd));
      const float *yr = static_cast<const float *>(y.data()) + r * cols;
      EXPECT_TRUE(sameBits(std::vector<float>(yr, yr + cols), want.y));
      std::vector<float> wantDx =
          gradReference(xs + r * cols, dys + r * cols, gs, cols, want.mean,
                        want.rstd, wantDgamma, wantDbeta);
      const float *dxr = static_cast<const float *>(dx.data()) + r * cols;
      EXPECT_TRUE(sameBits(std::vector<float>(dxr, dxr + cols), wantDx));
    }
    const float *dg = static_cast<const float *>(dgamma.data());
    const float *db = static_cast<const float *>(dbeta.data());
    EXPECT_TRUE(sameBits(std::vector<float>(dg, dg + cols), wantDgamma));
    EXPECT_TRUE(sameBits(std::vector<float>(db, db + cols), wantDbeta));
  });
}

TEST(NormalizationLoopsTest, NonFiniteInputsStayNonFinite) {
  forEachTarget([](const std::string &) {
    for (int64_t n : {5, 16, 21}) {
      std::vector<float> x(n, 1.0f), ones(n, 1.0f), zeros(n, 0.0f), y(n);
      x[n - 1] = NAN;
      float mean = 0, rstd = 0;
      layerNormRow(n, x.data(), ones.data(), zeros.data(), 1e-5f, y.data(),
                   &mean, &rstd);
      EXPECT_TRUE(std::isnan(mean));
      EXPECT_TRUE(std::isnan(y[0]));
      if (n != 16)
        continue;
      // A constant row (whose mean is exact): variance 0, rstd
      // 1 / sqrt(eps), y = beta.
      std::vector<float> constant(n, 3.25f);
      layerNormRow(n, constant.data(), ones.data(), zeros.data(), 1e-4f,
                   y.data(), &mean, &rstd);
      EXPECT_EQ(mean, 3.25f);
      EXPECT_EQ(rstd, 1.0f / std::sqrt(1e-4f));
      for (float v : y)
        EXPECT_EQ(bitsOf(v), 0u);
    }
  });
}

} // namespace
