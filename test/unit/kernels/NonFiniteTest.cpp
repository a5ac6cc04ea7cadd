//===- NonFiniteTest.cpp - NaN and infinity through the CPU kernels -------===//
//
// Where a kernel's arithmetic would hide a NaN or an infinity that PyTorch's
// passes on, the kernel follows PyTorch: relu's gradient at NaN, SiLU and
// GELU at -inf (x * 0 is NaN), a dropped NaN (x * mask, not a select), an
// optimizer step without weight decay on an infinite parameter (no 0 * inf
// term), and clipping by a NaN norm (PyTorch's clamp keeps the NaN). The
// importer's OpInfo run with --nonfinite (test/torch/opinfo-nonfinite.test)
// holds the imported ops to PyTorch the same way, element by element.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <cmath>
#include <limits>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// "nan", "inf", "-inf" or "finite".
std::string kind(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  return "finite";
}

/// Each element of the same kind as `want`'s, a finite one within 1% (the
/// finite values here are only rounded for reading).
::testing::AssertionResult sameKinds(const Tensor &got,
                                     const std::vector<double> &want) {
  std::vector<double> values = got.values();
  for (size_t i = 0; i < want.size(); ++i) {
    bool same = kind(values[i]) == kind(want[i]) &&
                (!std::isfinite(want[i]) ||
                 std::fabs(values[i] - want[i]) <= 0.01 * std::fabs(want[i]));
    if (!same)
      return ::testing::AssertionFailure() << "element " << i << ": got "
                                           << values[i] << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

TEST(NonFiniteTest, ReluGradientPassesAtNaN) {
  // threshold_backward zeroes where x <= 0; NaN <= 0 is false.
  Tensor x = fromValues(DType::f32, {4}, {kNaN, -1.0, 2.0, 0.0});
  Tensor dy = fromValues(DType::f32, {4}, {5.0, 5.0, 5.0, 5.0});
  Tensor dx(DType::f32, {4});
  ASSERT_TRUE(runKernel("train.relu_grad", {}, {&x, &dy}, {&dx}).ok());
  EXPECT_TRUE(sameKinds(dx, {5.0, 0.0, 5.0, 0.0}));
}

TEST(NonFiniteTest, SiluAndGeluAreNaNAtMinusInfinity) {
  // Nine elements: the vector loops and their padded tail both see each.
  std::vector<double> in = {-kInf, kInf, kNaN, 1.0,  -kInf,
                            0.0,   kInf, 2.0,  -kInf};
  Tensor x = fromValues(DType::f32, {9}, in);
  Tensor dy = fromValues(DType::f32, {9}, std::vector<double>(9, 1.0));
  std::vector<double> silu = {kNaN, kInf, kNaN, 0.731, kNaN,
                              0.0,  kInf, 1.76, kNaN};
  for (bool exact : {false, true}) {
    Tensor y(DType::f32, {9});
    mlir::DictionaryAttr params = exact ? dict({{"exact", unit()}}) : dict({});
    ASSERT_TRUE(runKernel("train.gelu", params, {&x}, {&y}).ok());
    EXPECT_TRUE(
        sameKinds(y, {kNaN, kInf, kNaN, 0.84, kNaN, 0.0, kInf, 1.95, kNaN}))
        << (exact ? "exact" : "tanh");
    Tensor dx(DType::f32, {9});
    ASSERT_TRUE(runKernel("train.gelu_grad", params, {&x, &dy}, {&dx}).ok());
    EXPECT_TRUE(std::isnan(dx.at(0)) && std::isnan(dx.at(4)))
        << (exact ? "exact" : "tanh");
  }
  Tensor y(DType::f32, {9});
  ASSERT_TRUE(runKernel("train.silu", {}, {&x}, {&y}).ok());
  EXPECT_TRUE(sameKinds(y, silu));
  Tensor dx(DType::f32, {9});
  ASSERT_TRUE(runKernel("train.silu_grad", {}, {&x, &dy}, {&dx}).ok());
  EXPECT_TRUE(std::isnan(dx.at(0)) && std::isnan(dx.at(4)) &&
              std::isnan(dx.at(8)));
}

TEST(NonFiniteTest, DroppedNaNAndInfinityAreNaN) {
  // PyTorch's x * mask * scale: a dropped NaN is NaN, a dropped inf NaN.
  constexpr int64_t n = 256;
  Tensor nan = fromValues(DType::f32, {n}, std::vector<double>(n, kNaN));
  Tensor inf = fromValues(DType::f32, {n}, std::vector<double>(n, kInf));
  mlir::DictionaryAttr params = dict({{"rate", f64(0.5)}, {"stream", i64(0)}});
  KernelContext ctx;
  ctx.step = 3;
  ctx.seed = 7;
  Tensor y(DType::f32, {n});
  ASSERT_TRUE(runKernel("train.dropout", params, {&nan}, {&y}, ctx).ok());
  for (double value : y.values())
    ASSERT_TRUE(std::isnan(value));
  ASSERT_TRUE(runKernel("train.dropout", params, {&inf}, {&y}, ctx).ok());
  int64_t kept = 0, dropped = 0;
  for (double value : y.values()) {
    ASSERT_TRUE(std::isnan(value) || value == kInf);
    (std::isnan(value) ? dropped : kept) += 1;
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(dropped, 0);
}

TEST(NonFiniteTest, UpdatesWithoutDecayKeepAnInfiniteParameter) {
  // PyTorch's optimizers add weight_decay * p only when it is not 0, so an
  // infinite parameter stays infinite (inf + 0 * inf would be NaN).
  mlir::DictionaryAttr params = dict({{"lr", f64(0.1)},
                                      {"beta1", f64(0.9)},
                                      {"beta2", f64(0.95)},
                                      {"eps", f64(1e-8)},
                                      {"weight_decay", f64(0.0)},
                                      {"momentum", f64(0.9)}});
  // 19 elements: Adam's vector loop and its scalar tail.
  std::vector<double> start(19, 1.0);
  start[0] = kInf;
  start[1] = -kInf;
  start[18] = kInf;
  Tensor g = fromValues(DType::f32, {19}, std::vector<double>(19, 0.5));
  Tensor zeros = fromValues(DType::f32, {19}, std::vector<double>(19, 0.0));
  Tensor t = fromValues(DType::i64, {}, {1.0});
  for (const char *name :
       {"train.sgd", "train.sgd_momentum", "train.adam", "train.adamw"}) {
    Tensor p = fromValues(DType::f32, {19}, start);
    Tensor out(DType::f32, {19}), m(DType::f32, {19}), v(DType::f32, {19});
    absl::Status status;
    std::string op(name);
    if (op == "train.sgd")
      status = runKernel(name, params, {&p, &g}, {&out});
    else if (op == "train.sgd_momentum")
      status = runKernel(name, params, {&p, &g, &zeros}, {&out, &m});
    else
      status =
          runKernel(name, params, {&p, &g, &zeros, &zeros, &t}, {&out, &m, &v});
    ASSERT_TRUE(status.ok()) << name << ": " << status;
    EXPECT_EQ(out.at(0), kInf) << name;
    EXPECT_EQ(out.at(1), -kInf) << name;
    EXPECT_EQ(out.at(18), kInf) << name;
    EXPECT_TRUE(std::isfinite(out.at(2))) << name;
  }
}

TEST(NonFiniteTest, ClippingByANaNNormGivesNaNGradients) {
  // clip_grad_norm_'s factor clamp(max_norm / (norm + 1e-6), max=1) is NaN
  // for a NaN norm, and every gradient is multiplied by it.
  Tensor grad = fromValues(DType::f32, {3}, {1.0, -2.0, 0.5});
  Tensor out(DType::f32, {3});
  mlir::DictionaryAttr bound = dict({{"max_norm", f64(1.0)}});
  Tensor nanNorm = fromValues(DType::f32, {}, {kNaN});
  ASSERT_TRUE(
      runKernel("train.scale_by_norm", bound, {&grad, &nanNorm}, {&out}).ok());
  EXPECT_TRUE(sameKinds(out, {kNaN, kNaN, kNaN}));
  // An infinite norm: a factor of 0.
  Tensor infNorm = fromValues(DType::f32, {}, {kInf});
  ASSERT_TRUE(
      runKernel("train.scale_by_norm", bound, {&grad, &infNorm}, {&out}).ok());
  EXPECT_TRUE(sameKinds(out, {0.0, 0.0, 0.0}));
}

} // namespace
