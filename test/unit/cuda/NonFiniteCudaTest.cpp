//===- NonFiniteCudaTest.cpp - NaN and infinity, CUDA against CPU ---------===//
//
// The CPU kernels pass NaN and infinity on as PyTorch does (NonFiniteTest and
// test/torch/opinfo-nonfinite.test hold them to it); here every CUDA kernel
// that computes on floats gets operands with a NaN, a +inf and a -inf in
// them and must give the CPU's result, kind for kind: matchesCpu takes a NaN
// only for a NaN and an infinity only for the same infinity.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include <cmath>
#include <limits>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// A random tensor with NaN first, +inf in the middle and -inf last.
Tensor withSpecials(DType dtype, std::vector<int64_t> shape, uint32_t seed) {
  Tensor t = randomTensor(dtype, shape, seed);
  t.set(0, std::numeric_limits<double>::quiet_NaN());
  t.set(t.size() / 2, kInf);
  t.set(t.size() - 1, -kInf);
  return t;
}

TEST(NonFiniteCuda, ElementwiseAndActivationGradients) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType dtype : floatTypes()) {
    Tensor x = withSpecials(dtype, {7, 37}, 1);
    Tensor other = withSpecials(dtype, {7, 37}, 2);
    Tensor dy = randomTensor(dtype, {7, 37}, 3);
    for (const char *op : {"exp", "log", "sqrt", "rsqrt", "tanh", "neg", "relu",
                           "gelu", "sigmoid", "silu"})
      EXPECT_TRUE(matchesCpu({std::string("train.") + op, {}, {x}, {x}}))
          << op << " " << dtypeLabel(dtype);
    EXPECT_TRUE(matchesCpu({"train.gelu", dict({{"exact", unit()}}), {x}, {x}}))
        << dtypeLabel(dtype);
    for (const char *op : {"add", "sub", "mul", "div"})
      EXPECT_TRUE(matchesCpu({std::string("train.") + op, {}, {x, other}, {x}}))
          << op << " " << dtypeLabel(dtype);
    for (const char *op :
         {"relu_grad", "gelu_grad", "silu_grad", "tanh_grad", "sigmoid_grad"})
      EXPECT_TRUE(matchesCpu({std::string("train.") + op, {}, {x, dy}, {x}}))
          << op << " " << dtypeLabel(dtype);
    EXPECT_TRUE(matchesCpu(
        {"train.gelu_grad", dict({{"exact", unit()}}), {x, dy}, {x}}))
        << dtypeLabel(dtype);
  }
}

TEST(NonFiniteCuda, RowsSoftmaxNormsAndLoss) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType dtype : floatTypes()) {
    // Rows of 33: the NaN, the +inf and the -inf in three different rows,
    // the other rows finite.
    Tensor x = withSpecials(dtype, {5, 33}, 4);
    Tensor dy = randomTensor(dtype, {5, 33}, 5);
    for (mlir::DictionaryAttr params : {dict({}), dict({{"safe", unit()}})})
      EXPECT_TRUE(matchesCpu({"train.softmax", params, {x}, {x}}))
          << dtypeLabel(dtype);
    EXPECT_TRUE(matchesCpu({"train.softmax_grad", {}, {x, dy}, {x}}))
        << dtypeLabel(dtype);
    Tensor gamma = randomTensor(dtype, {33}, 6, 0.5, 1.5);
    Tensor beta = randomTensor(dtype, {33}, 7);
    Tensor stats(DType::f32, {5});
    EXPECT_TRUE(matchesCpu({"train.layer_norm",
                            dict({{"eps", f64(1e-5)}}),
                            {x, gamma, beta},
                            {x, stats, stats}}))
        << dtypeLabel(dtype);
    Tensor mean = withSpecials(DType::f32, {5}, 8);
    Tensor rstd = randomTensor(DType::f32, {5}, 9, 0.5, 2.0);
    Tensor grads(dtype, {33});
    EXPECT_TRUE(matchesCpu({"train.layer_norm_grad",
                            {},
                            {dy, x, gamma, mean, rstd},
                            {x, grads, grads}}))
        << dtypeLabel(dtype);
    Tensor labels = randomIds(DType::i64, {5}, 10, 33);
    Tensor loss(DType::f32, {});
    EXPECT_TRUE(
        matchesCpu({"train.softmax_cross_entropy", {}, {x, labels}, {loss}}))
        << dtypeLabel(dtype);
    Tensor lossGrad = fromValues(DType::f32, {}, {0.75});
    EXPECT_TRUE(matchesCpu(
        {"train.softmax_cross_entropy_grad", {}, {x, labels, lossGrad}, {x}}))
        << dtypeLabel(dtype);
    for (const char *name : {"train.reduce_sum", "train.reduce_mean"})
      EXPECT_TRUE(matchesCpu(
          {name, dict({{"dims", i64s({1})}}), {x}, {Tensor(DType::f32, {5})}}))
          << name << " " << dtypeLabel(dtype);
  }
}

TEST(NonFiniteCuda, MatmulMasksAndDropout) {
  SKIP_WITHOUT_CUDA_GPU();
  Tensor lhs = withSpecials(DType::f32, {8, 16}, 11);
  Tensor rhs = randomTensor(DType::f32, {16, 8}, 12);
  EXPECT_TRUE(matchesCpu(
      {"train.matmul", {}, {lhs, rhs}, {Tensor(DType::f32, {8, 8})}}));
  Tensor scores = withSpecials(DType::f32, {2, 9, 9}, 13);
  EXPECT_TRUE(matchesCpu(
      {"train.causal_mask", dict({{"fill", f64(-kInf)}}), {scores}, {scores}}));
  Tensor keep = randomIds(DType::i64, {2, 9}, 14, 2);
  EXPECT_TRUE(matchesCpu({"train.key_mask",
                          dict({{"fill", f64(-kInf)}}),
                          {scores, keep},
                          {scores}}));
  KernelContext ctx;
  ctx.step = 4;
  ctx.seed = 3;
  EXPECT_TRUE(matchesCpu({"train.dropout",
                          dict({{"rate", f64(0.5)}, {"stream", i64(1)}}),
                          {scores},
                          {scores},
                          {},
                          ctx}));
}

TEST(NonFiniteCuda, UpdatesAndClipping) {
  SKIP_WITHOUT_CUDA_GPU();
  // Without weight decay an infinite parameter stays infinite, as in
  // PyTorch; with it, inf - lr * wd * inf is NaN on both.
  for (double wd : {0.0, 0.1}) {
    mlir::DictionaryAttr params = dict({{"lr", f64(0.01)},
                                        {"beta1", f64(0.9)},
                                        {"beta2", f64(0.95)},
                                        {"eps", f64(1e-8)},
                                        {"weight_decay", f64(wd)},
                                        {"momentum", f64(0.9)}});
    Tensor p = withSpecials(DType::f32, {1027}, 15);
    Tensor g = withSpecials(DType::f32, {1027}, 16);
    Tensor b = randomTensor(DType::f32, {1027}, 17);
    Tensor m = randomTensor(DType::f32, {1027}, 18, -0.1, 0.1);
    Tensor v = randomTensor(DType::f32, {1027}, 19, 0.0, 0.01);
    Tensor t = fromValues(DType::i64, {}, {2.0});
    KernelContext ctx;
    ctx.step = 2;
    EXPECT_TRUE(matchesCpu({"train.sgd", params, {p, g}, {p}, {}, ctx}));
    EXPECT_TRUE(
        matchesCpu({"train.sgd_momentum", params, {p, g, b}, {p, b}, {}, ctx}));
    for (const char *name : {"train.adam", "train.adamw"})
      EXPECT_TRUE(
          matchesCpu({name, params, {p, g, m, v, t}, {p, m, v}, {}, ctx}))
          << name << " weight_decay " << wd;
  }
  Tensor grad = withSpecials(DType::f32, {300}, 20);
  Tensor total(DType::f32, {});
  EXPECT_TRUE(matchesCpu({"train.sum_squares", {}, {grad}, {total}}));
  Tensor finite = randomTensor(DType::f32, {300}, 21);
  for (double norm : {std::numeric_limits<double>::quiet_NaN(), kInf}) {
    Tensor sum = fromValues(DType::f32, {}, {norm});
    EXPECT_TRUE(matchesCpu({"train.scale_by_norm",
                            dict({{"max_norm", f64(1.0)}}),
                            {finite, sum},
                            {finite}}));
  }
}

} // namespace
