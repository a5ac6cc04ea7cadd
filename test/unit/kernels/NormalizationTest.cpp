//===- NormalizationTest.cpp - Softmax and layer norm ---------------------===//

#include "KernelTestSupport.h"

#include <cmath>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

const DType kFloatTypes[] = {DType::f32, DType::bf16, DType::f16};

std::vector<double> softmaxRef(const std::vector<double> &x, int64_t cols) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r * cols < x.size(); ++r) {
    double max = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < cols; ++j)
      max = std::max(max, x[r * cols + j]);
    for (int64_t j = 0; j < cols; ++j)
      sum += std::exp(x[r * cols + j] - max);
    for (int64_t j = 0; j < cols; ++j)
      y[r * cols + j] = std::exp(x[r * cols + j] - max) / sum;
  }
  return y;
}

TEST(NormalizationTest, SoftmaxMatchesReference) {
  for (DType dtype : kFloatTypes)
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{2, 3, 17}, std::vector<int64_t>{600}}) {
      SCOPED_TRACE(dtypeLabel(dtype));
      Tensor x = randomTensor(dtype, shape, 31, -5, 5);
      Tensor y(dtype, shape);
      y.poison();
      ASSERT_TRUE(runKernel("train.softmax", {}, {&x}, {&y}).ok());
      EXPECT_TRUE(allClose(y, softmaxRef(x.values(), shape.back()), 1e-7,
                           relativeTolerance(dtype)));
      // In place gives the same bits.
      Tensor inPlace = x;
      ASSERT_TRUE(runKernel("train.softmax", {}, {&inPlace}, {&inPlace}).ok());
      EXPECT_TRUE(inPlace.sameBytes(y));
    }
}

TEST(NormalizationTest, SoftmaxOfMaskedScoresIgnoresMaskedEntries) {
  Tensor x = randomTensor(DType::f32, {1, 4, 4}, 32);
  Tensor masked(DType::f32, {1, 4, 4}), y(DType::f32, {1, 4, 4});
  ASSERT_TRUE(runKernel("train.causal_mask", dict({{"fill", f64(-INFINITY)}}),
                        {&x}, {&masked})
                  .ok());
  ASSERT_TRUE(runKernel("train.softmax", {}, {&masked}, {&y}).ok());
  EXPECT_TRUE(allClose(y, softmaxRef(masked.values(), 4), 1e-7, 2e-5));
  EXPECT_EQ(y.at(0), 1.0);
  EXPECT_EQ(y.at(1), 0.0);
}

// PyTorch's attention gives a query with every key masked zeros (its
// _safe_softmax); torch.softmax gives NaN. `safe` picks the first, and
// leaves every other row as the plain softmax has it, bit for bit.
TEST(NormalizationTest, SafeSoftmaxGivesZerosWhereEveryEntryIsMasked) {
  Tensor x = randomTensor(DType::f32, {3, 5}, 35);
  for (int64_t j = 0; j < 5; ++j)
    x.set(5 + j, -INFINITY);
  Tensor safe(DType::f32, {3, 5}), plain(DType::f32, {3, 5});
  ASSERT_TRUE(
      runKernel("train.softmax", dict({{"safe", unit()}}), {&x}, {&safe}).ok());
  ASSERT_TRUE(runKernel("train.softmax", {}, {&x}, {&plain}).ok());
  for (int64_t i = 0; i < 15; ++i) {
    if (i / 5 == 1) {
      EXPECT_EQ(safe.at(i), 0.0) << i;
      EXPECT_TRUE(std::isnan(plain.at(i))) << i;
    } else {
      EXPECT_EQ(safe.at(i), plain.at(i)) << i;
    }
  }
}

TEST(NormalizationTest, SoftmaxGradMatchesReferenceAndFiniteDifferences) {
  const std::vector<int64_t> shape = {3, 7};
  for (DType dtype : kFloatTypes) {
    SCOPED_TRACE(dtypeLabel(dtype));
    Tensor x = randomTensor(dtype, shape, 33, -2, 2);
    Tensor y(dtype, shape), dy = randomTensor(dtype, shape, 34),
                            dx(dtype, shape);
    ASSERT_TRUE(runKernel("train.softmax", {}, {&x}, {&y}).ok());
    ASSERT_TRUE(runKernel("train.softmax_grad", {}, {&y, &dy}, {&dx}).ok());
    std::vector<double> want(static_cast<size_t>(x.size()));
    for (int64_t r = 0; r < shape[0]; ++r) {
      double dot = 0.0;
      for (int64_t j = 0; j < shape[1]; ++j)
        dot += y.at(r * shape[1] + j) * dy.at(r * shape[1] + j);
      for (int64_t j = 0; j < shape[1]; ++j)
        want[r * shape[1] + j] =
            y.at(r * shape[1] + j) * (dy.at(r * shape[1] + j) - dot);
    }
    EXPECT_TRUE(allClose(dx, want, 1e-6, relativeTolerance(dtype)));
  }
  Tensor x = randomTensor(DType::f32, shape, 35, -2, 2);
  Tensor w = randomTensor(DType::f32, shape, 36);
  auto loss = [&](const Tensor &input) {
    Tensor y(DType::f32, shape);
    EXPECT_TRUE(runKernel("train.softmax", {}, {&input}, {&y}).ok());
    return weightedSum(y, w.values());
  };
  Tensor y(DType::f32, shape), dx(DType::f32, shape);
  ASSERT_TRUE(runKernel("train.softmax", {}, {&x}, {&y}).ok());
  ASSERT_TRUE(runKernel("train.softmax_grad", {}, {&y, &w}, {&dx}).ok());
  EXPECT_TRUE(checkGradient(x, loss, dx.values(), 1e-2, 1e-3, 1e-2));
}

struct LayerNormRef {
  std::vector<double> y, mean, rstd;
};

LayerNormRef layerNormRef(const Tensor &x, const Tensor &gamma,
                          const Tensor &beta, double eps) {
  int64_t cols = gamma.size(), rows = x.size() / cols;
  LayerNormRef ref;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0.0, var = 0.0;
    for (int64_t j = 0; j < cols; ++j)
      mean += x.at(r * cols + j);
    mean /= cols;
    for (int64_t j = 0; j < cols; ++j)
      var += (x.at(r * cols + j) - mean) * (x.at(r * cols + j) - mean);
    var /= cols;
    double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < cols; ++j)
      ref.y.push_back((x.at(r * cols + j) - mean) * rstd * gamma.at(j) +
                      beta.at(j));
    ref.mean.push_back(mean);
    ref.rstd.push_back(rstd);
  }
  return ref;
}

TEST(NormalizationTest, LayerNormMatchesReference) {
  for (DType dtype : kFloatTypes) {
    SCOPED_TRACE(dtypeLabel(dtype));
    // An offset mean exercises the two-pass variance.
    Tensor x = randomTensor(dtype, {2, 5, 24}, 37, 2, 6);
    Tensor gamma = randomTensor(dtype, {24}, 38, 0.5, 1.5);
    Tensor beta = randomTensor(dtype, {24}, 39);
    Tensor y(dtype, {2, 5, 24}), mean(DType::f32, {2, 5}),
        rstd(DType::f32, {2, 5});
    y.poison();
    ASSERT_TRUE(runKernel("train.layer_norm", dict({{"eps", f64(1e-5)}}),
                          {&x, &gamma, &beta}, {&y, &mean, &rstd})
                    .ok());
    LayerNormRef ref = layerNormRef(x, gamma, beta, 1e-5);
    EXPECT_TRUE(allClose(y, ref.y, 1e-5, relativeTolerance(dtype)));
    EXPECT_TRUE(allClose(mean, ref.mean, 1e-6, 1e-5));
    EXPECT_TRUE(allClose(rstd, ref.rstd, 1e-6, 1e-4));
  }
}

TEST(NormalizationTest, LayerNormGradMatchesReference) {
  const int64_t rows = 6, cols = 20;
  for (DType dtype : kFloatTypes) {
    SCOPED_TRACE(dtypeLabel(dtype));
    Tensor x = randomTensor(dtype, {rows, cols}, 40, -2, 2);
    Tensor gamma = randomTensor(dtype, {cols}, 41, 0.5, 1.5);
    Tensor beta = randomTensor(dtype, {cols}, 42);
    Tensor dy = randomTensor(dtype, {rows, cols}, 43);
    Tensor y(dtype, {rows, cols}), mean(DType::f32, {rows}),
        rstd(DType::f32, {rows});
    ASSERT_TRUE(runKernel("train.layer_norm", dict({{"eps", f64(1e-5)}}),
                          {&x, &gamma, &beta}, {&y, &mean, &rstd})
                    .ok());
    Tensor dx(dtype, {rows, cols}), dgamma(dtype, {cols}), dbeta(dtype, {cols});
    dgamma.poison();
    ASSERT_TRUE(runKernel("train.layer_norm_grad", {},
                          {&dy, &x, &gamma, &mean, &rstd},
                          {&dx, &dgamma, &dbeta})
                    .ok());
    // Reference from the saved statistics, in double.
    std::vector<double> wantDx, wantDgamma(cols, 0.0), wantDbeta(cols, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      double m = mean.at(r), s = rstd.at(r), meanG = 0.0, meanGx = 0.0;
      std::vector<double> xhat(cols), g(cols);
      for (int64_t j = 0; j < cols; ++j) {
        xhat[j] = (x.at(r * cols + j) - m) * s;
        g[j] = dy.at(r * cols + j) * gamma.at(j);
        meanG += g[j] / cols;
        meanGx += g[j] * xhat[j] / cols;
        wantDgamma[j] += dy.at(r * cols + j) * xhat[j];
        wantDbeta[j] += dy.at(r * cols + j);
      }
      for (int64_t j = 0; j < cols; ++j)
        wantDx.push_back(s * (g[j] - meanG - xhat[j] * meanGx));
    }
    double rtol = relativeTolerance(dtype);
    EXPECT_TRUE(allClose(dx, wantDx, 1e-5, rtol));
    EXPECT_TRUE(allClose(dgamma, wantDgamma, 1e-5, rtol));
    EXPECT_TRUE(allClose(dbeta, wantDbeta, 1e-5, rtol));
  }
}

TEST(NormalizationTest, LayerNormGradMatchesFiniteDifferences) {
  const int64_t rows = 3, cols = 8;
  Tensor x = randomTensor(DType::f32, {rows, cols}, 44, -2, 2);
  Tensor gamma = randomTensor(DType::f32, {cols}, 45, 0.5, 1.5);
  Tensor beta = randomTensor(DType::f32, {cols}, 46);
  Tensor w = randomTensor(DType::f32, {rows, cols}, 47);
  mlir::DictionaryAttr eps = dict({{"eps", f64(1e-5)}});
  auto forward = [&](const Tensor &xi, const Tensor &gi, const Tensor &bi) {
    Tensor y(DType::f32, {rows, cols}), mean(DType::f32, {rows}),
        rstd(DType::f32, {rows});
    EXPECT_TRUE(
        runKernel("train.layer_norm", eps, {&xi, &gi, &bi}, {&y, &mean, &rstd})
            .ok());
    return std::make_tuple(weightedSum(y, w.values()), mean, rstd);
  };
  auto [unused, mean, rstd] = forward(x, gamma, beta);
  (void)unused;
  Tensor dx(DType::f32, {rows, cols}), dgamma(DType::f32, {cols}),
      dbeta(DType::f32, {cols});
  ASSERT_TRUE(runKernel("train.layer_norm_grad", {},
                        {&w, &x, &gamma, &mean, &rstd}, {&dx, &dgamma, &dbeta})
                  .ok());
  EXPECT_TRUE(checkGradient(
      x, [&](const Tensor &t) { return std::get<0>(forward(t, gamma, beta)); },
      dx.values(), 1e-2, 2e-3, 1e-2));
  EXPECT_TRUE(checkGradient(
      gamma, [&](const Tensor &t) { return std::get<0>(forward(x, t, beta)); },
      dgamma.values(), 1e-2, 2e-3, 1e-2));
  EXPECT_TRUE(checkGradient(
      beta, [&](const Tensor &t) { return std::get<0>(forward(x, gamma, t)); },
      dbeta.values(), 1e-2, 2e-3, 1e-2));
}

// train-fuse-residual-norm may rewrite any residual add read by a layer
// norm, so the fused kernel must give the bits of train.add then
// train.layer_norm, the sum included; also with the sum written over an
// operand, as the arena may place it.
TEST(NormalizationTest, AddLayerNormIsItsChain) {
  mlir::DictionaryAttr eps = dict({{"eps", f64(1e-5)}});
  uint32_t seed = 60;
  for (DType dtype : kFloatTypes)
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{2, 5, 24}, std::vector<int64_t>{3, 768}}) {
      SCOPED_TRACE(dtypeLabel(dtype));
      std::vector<int64_t> rows(shape.begin(), shape.end() - 1);
      Tensor a = randomTensor(dtype, shape, seed++, -2, 3);
      Tensor b = randomTensor(dtype, shape, seed++, -1, 1);
      Tensor gamma = randomTensor(dtype, {shape.back()}, seed++, 0.5, 1.5);
      Tensor beta = randomTensor(dtype, {shape.back()}, seed++);
      Tensor sum(dtype, shape), y(dtype, shape), mean(DType::f32, rows),
          rstd(DType::f32, rows);
      for (Tensor *t : {&sum, &y, &mean, &rstd})
        t->poison();
      ASSERT_TRUE(runKernel("train.add", {}, {&a, &b}, {&sum}).ok());
      ASSERT_TRUE(runKernel("train.layer_norm", eps, {&sum, &gamma, &beta},
                            {&y, &mean, &rstd})
                      .ok());
      Tensor fusedSum(dtype, shape), fusedY(dtype, shape),
          fusedMean(DType::f32, rows), fusedRstd(DType::f32, rows);
      for (Tensor *t : {&fusedSum, &fusedY, &fusedMean, &fusedRstd})
        t->poison();
      ASSERT_TRUE(runKernel("train.add_layer_norm", eps,
                            {&a, &b, &gamma, &beta},
                            {&fusedSum, &fusedY, &fusedMean, &fusedRstd})
                      .ok());
      EXPECT_TRUE(fusedSum.sameBytes(sum));
      EXPECT_TRUE(fusedY.sameBytes(y));
      EXPECT_TRUE(fusedMean.sameBytes(mean));
      EXPECT_TRUE(fusedRstd.sameBytes(rstd));
      // The sum over its left operand.
      Tensor inPlace = a;
      ASSERT_TRUE(runKernel("train.add_layer_norm", eps,
                            {&inPlace, &b, &gamma, &beta},
                            {&inPlace, &fusedY, &fusedMean, &fusedRstd})
                      .ok());
      EXPECT_TRUE(inPlace.sameBytes(sum));
      EXPECT_TRUE(fusedY.sameBytes(y));
    }
  // Its checks are the layer norm's: eps is required.
  Tensor a(DType::f32, {4, 8}), gamma(DType::f32, {8}), stats(DType::f32, {4});
  EXPECT_FALSE(bindKernel("train.add_layer_norm", {}, {&a, &a, &gamma, &gamma},
                          {&a, &a, &stats, &stats})
                   .ok());
}

TEST(NormalizationTest, RejectsBadSpecs) {
  Tensor x(DType::f32, {4, 8}), gamma(DType::f32, {8}), beta(DType::f32, {8});
  Tensor y(DType::f32, {4, 8}), mean(DType::f32, {4}), rstd(DType::f32, {4});
  EXPECT_TRUE(bindKernel("train.layer_norm", dict({{"eps", f64(1e-5)}}),
                         {&x, &gamma, &beta}, {&y, &mean, &rstd})
                  .ok());
  // Missing eps, eps <= 0, wrong scale length, wrong stats shape and type.
  EXPECT_FALSE(bindKernel("train.layer_norm", {}, {&x, &gamma, &beta},
                          {&y, &mean, &rstd})
                   .ok());
  EXPECT_FALSE(bindKernel("train.layer_norm", dict({{"eps", f64(0.0)}}),
                          {&x, &gamma, &beta}, {&y, &mean, &rstd})
                   .ok());
  Tensor shortGamma(DType::f32, {7});
  EXPECT_FALSE(bindKernel("train.layer_norm", dict({{"eps", f64(1e-5)}}),
                          {&x, &shortGamma, &beta}, {&y, &mean, &rstd})
                   .ok());
  Tensor badMean(DType::bf16, {4});
  EXPECT_FALSE(bindKernel("train.layer_norm", dict({{"eps", f64(1e-5)}}),
                          {&x, &gamma, &beta}, {&y, &badMean, &rstd})
                   .ok());
  Tensor otherY(DType::f32, {4, 9});
  EXPECT_FALSE(bindKernel("train.softmax", {}, {&x}, {&otherY}).ok());
}

} // namespace
