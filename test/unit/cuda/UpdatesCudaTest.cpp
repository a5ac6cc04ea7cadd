//===- UpdatesCudaTest.cpp - Optimizer, clipping and loss scaling ---------===//
//
// The update kernels with every parameter and gradient type, weight decay,
// a learning-rate schedule followed through KernelContext::step, Adam's bias
// correction from the step tensor, the skip_if flag of a loss-scaled step,
// and in place; then clipping by global norm and dynamic loss scaling.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include <cmath>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

mlir::DictionaryAttr hyper(bool scheduled, bool momentum) {
  std::vector<std::pair<std::string, mlir::Attribute>> entries = {
      {"lr", f64(1e-2)},
      {"weight_decay", f64(0.1)},
      {"beta1", f64(0.9)},
      {"beta2", f64(0.95)},
      {"eps", f64(1e-8)}};
  if (momentum)
    entries.push_back({"momentum", f64(0.9)});
  if (scheduled) {
    entries.push_back(
        {"schedule", mlir::StringAttr::get(&context(), "cosine")});
    entries.push_back({"warmup", i64(3)});
    entries.push_back({"total", i64(20)});
    entries.push_back({"min_lr", f64(1e-4)});
  }
  return dict(entries);
}

const std::vector<int64_t> kShard = {1027};

TEST(UpdatesCuda, SgdAndMomentum) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 1;
  for (DType paramType : floatTypes())
    for (DType gradType : floatTypes())
      for (bool scheduled : {false, true})
        for (int64_t step : {1, 2, 11, 25}) {
          Tensor p = randomTensor(paramType, kShard, seed++);
          Tensor g = randomTensor(gradType, kShard, seed++);
          Tensor b = randomTensor(DType::f32, kShard, seed++);
          KernelCase sgd{"train.sgd", hyper(scheduled, false), {p, g}, {p}};
          sgd.ctx.step = step;
          EXPECT_TRUE(matchesCpu(sgd));
          KernelCase momentum{
              "train.sgd_momentum", hyper(scheduled, true), {p, g, b}, {p, b}};
          momentum.ctx.step = step;
          EXPECT_TRUE(matchesCpu(momentum));
          momentum.aliases = {{0, 0}, {1, 2}};
          EXPECT_TRUE(matchesCpu(momentum));
        }
}

TEST(UpdatesCuda, AdamAndAdamW) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 100;
  for (const char *name : {"train.adam", "train.adamw"})
    for (DType paramType : floatTypes())
      for (DType gradType : floatTypes())
        for (bool scheduled : {false, true})
          for (int64_t step : {1, 4, 30}) {
            Tensor p = randomTensor(paramType, kShard, seed++);
            Tensor g = randomTensor(gradType, kShard, seed++);
            Tensor m = randomTensor(DType::f32, kShard, seed++, -0.1, 0.1);
            Tensor v = randomTensor(DType::f32, kShard, seed++, 0.0, 0.01);
            Tensor t = fromValues(DType::i64, {}, {static_cast<double>(step)});
            KernelCase adam{
                name, hyper(scheduled, false), {p, g, m, v, t}, {p, m, v}};
            adam.ctx.step = step;
            EXPECT_TRUE(matchesCpu(adam)) << name << " step " << step;
            adam.aliases = {{0, 0}, {1, 2}, {2, 3}};
            EXPECT_TRUE(matchesCpu(adam)) << name << " in place";
          }
}

TEST(UpdatesCuda, SkipIfFlagKeepsEverything) {
  SKIP_WITHOUT_CUDA_GPU();
  Tensor p = randomTensor(DType::bf16, kShard, 1);
  Tensor g = randomTensor(DType::bf16, kShard, 2);
  Tensor m = randomTensor(DType::f32, kShard, 3);
  Tensor v = randomTensor(DType::f32, kShard, 4, 0.0, 0.01);
  Tensor t = fromValues(DType::i64, {}, {5});
  for (double flag : {0.0, 1.0, std::nan("")}) {
    Tensor skip = fromValues(DType::f32, {}, {flag});
    EXPECT_TRUE(matchesCpu({"train.adamw",
                            hyper(false, false),
                            {p, g, m, v, t, skip},
                            {p, m, v}}));
    EXPECT_TRUE(matchesCpu({"train.sgd_momentum",
                            hyper(false, true),
                            {p, g, m, skip},
                            {p, m},
                            {{0, 0}}}));
    EXPECT_TRUE(
        matchesCpu({"train.sgd", hyper(true, false), {p, g, skip}, {p}}));
  }
}

TEST(ClippingCuda, SumSquaresAndScaleByNorm) {
  SKIP_WITHOUT_CUDA_GPU();
  Tensor a = randomTensor(DType::f32, {4, 8}, 1);
  Tensor b = randomTensor(DType::bf16, {100003}, 2);
  Tensor c = randomTensor(DType::f16, {7}, 3);
  Tensor total(DType::f32, {});
  EXPECT_TRUE(matchesCpu({"train.sum_squares", {}, {a, b, c}, {total}}));
  EXPECT_TRUE(matchesCpu({"train.sum_squares", {}, {c}, {total}}));
  for (double sum : {0.0, 0.5, 1e4})
    for (double maxNorm : {1.0, 5.0}) {
      Tensor squares = fromValues(DType::f32, {}, {sum});
      EXPECT_TRUE(matchesCpu({"train.scale_by_norm",
                              dict({{"max_norm", f64(maxNorm)}}),
                              {a, b, c, squares},
                              {a, b, c}}));
      EXPECT_TRUE(matchesCpu({"train.scale_by_norm",
                              dict({{"max_norm", f64(maxNorm)}}),
                              {a, b, squares},
                              {a, b},
                              {{0, 0}, {1, 1}}}));
    }
}

TEST(LossScalingCuda, UnscaleAndUpdateLossScale) {
  SKIP_WITHOUT_CUDA_GPU();
  Tensor scale = fromValues(DType::f32, {}, {1024});
  Tensor flag(DType::f32, {});
  for (DType dtype : floatTypes()) {
    Tensor a = randomTensor(dtype, {3, 333}, 1, -1000.0, 1000.0);
    Tensor b = randomTensor(dtype, {5}, 2);
    EXPECT_TRUE(matchesCpu(
        {"train.unscale",
         {},
         {a, b, scale},
         {Tensor(DType::f32, {3, 333}), Tensor(DType::f32, {5}), flag}}));
    b.set(3, INFINITY);
    EXPECT_TRUE(matchesCpu(
        {"train.unscale",
         {},
         {a, b, scale},
         {Tensor(DType::f32, {3, 333}), Tensor(DType::f32, {5}), flag}}));
  }
  for (double found : {0.0, 1.0})
    for (double good : {0.0, 4.0})
      for (double current : {1.0, 65536.0}) {
        Tensor s = fromValues(DType::f32, {}, {current});
        Tensor g = fromValues(DType::f32, {}, {good});
        Tensor f = fromValues(DType::f32, {}, {found});
        EXPECT_TRUE(matchesCpu({"train.update_loss_scale",
                                dict({{"growth_interval", i64(5)}}),
                                {s, g, f},
                                {s, g}}));
      }
}

} // namespace
