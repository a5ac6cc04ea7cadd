//===- FusedMatmulTest.cpp - Fused matmuls, bit for bit their chains ------===//
//
// train-fuse-epilogues may rewrite any linear layer, so each fused kernel
// must give exactly the bits of the unfused kernels it replaces: run here
// side by side on the same inputs, f32 and bf16, plain and folded-batch
// operands, both GELU forms.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

Tensor run(absl::string_view name, mlir::DictionaryAttr attrs,
           const std::vector<const Tensor *> &ins, Tensor out) {
  out.poison();
  absl::Status status = runKernel(name, attrs, ins, {&out});
  EXPECT_TRUE(status.ok()) << name << ": " << status;
  return out;
}

/// A linear layer's operands: x [batch..., m, k] (or [k, m] transposed), w
/// [k, n] (or [n, k]), b [n].
struct Linear {
  Tensor x, w, b;
  std::vector<int64_t> outShape;
};

Linear makeLinear(DType dtype, std::vector<int64_t> batch, int64_t m, int64_t k,
                  int64_t n, bool ta, bool tb, uint32_t seed) {
  std::vector<int64_t> xShape = batch;
  xShape.push_back(ta ? k : m);
  xShape.push_back(ta ? m : k);
  std::vector<int64_t> outShape = batch;
  outShape.push_back(m);
  outShape.push_back(n);
  return {
      randomTensor(dtype, xShape, seed),
      randomTensor(dtype,
                   tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n},
                   seed + 1),
      randomTensor(dtype, {n}, seed + 2), outShape};
}

struct Shape {
  std::vector<int64_t> batch;
  int64_t m, k, n;
  bool ta, tb;
};

const Shape kShapes[] = {
    {{}, 7, 13, 5, false, false},    {{}, 7, 13, 5, true, false},
    {{}, 7, 13, 5, false, true},     {{}, 33, 70, 72, true, true},
    {{2, 3}, 4, 6, 5, false, false}, {{4}, 40, 16, 24, false, true},
};

TEST(FusedMatmulTest, MatmulBiasIsItsChain) {
  uint32_t seed = 1;
  for (DType dtype : {DType::f32, DType::bf16})
    for (const Shape &s : kShapes) {
      Linear l = makeLinear(dtype, s.batch, s.m, s.k, s.n, s.ta, s.tb, seed++);
      Tensor mm = run("train.matmul", matmulFlags(s.ta, s.tb), {&l.x, &l.w},
                      Tensor(dtype, l.outShape));
      Tensor chain =
          run("train.bias_add", {}, {&mm, &l.b}, Tensor(dtype, l.outShape));
      Tensor fused = run("train.matmul_bias", matmulFlags(s.ta, s.tb),
                         {&l.x, &l.w, &l.b}, Tensor(dtype, l.outShape));
      EXPECT_TRUE(fused.sameBytes(chain)) << dtypeName(dtype);
    }
}

TEST(FusedMatmulTest, MatmulBiasGeluIsItsChain) {
  uint32_t seed = 100;
  for (DType dtype : {DType::f32, DType::bf16})
    for (bool exact : {false, true})
      for (const Shape &s : kShapes) {
        Linear l =
            makeLinear(dtype, s.batch, s.m, s.k, s.n, s.ta, s.tb, seed++);
        Tensor mm = run("train.matmul", matmulFlags(s.ta, s.tb), {&l.x, &l.w},
                        Tensor(dtype, l.outShape));
        Tensor pre =
            run("train.bias_add", {}, {&mm, &l.b}, Tensor(dtype, l.outShape));
        Tensor gelu = run("train.gelu", matmulFlags(false, false, exact),
                          {&pre}, Tensor(dtype, l.outShape));
        Tensor fusedOut(dtype, l.outShape), fusedPre(dtype, l.outShape);
        fusedOut.poison();
        fusedPre.poison();
        ASSERT_TRUE(runKernel("train.matmul_bias_gelu",
                              matmulFlags(s.ta, s.tb, exact),
                              {&l.x, &l.w, &l.b}, {&fusedOut, &fusedPre})
                        .ok());
        EXPECT_TRUE(fusedOut.sameBytes(gelu)) << dtypeName(dtype);
        EXPECT_TRUE(fusedPre.sameBytes(pre)) << dtypeName(dtype);
      }
}

TEST(FusedMatmulTest, MatmulGeluGradIsItsChain) {
  uint32_t seed = 200;
  for (DType dtype : {DType::f32, DType::bf16})
    for (bool exact : {false, true})
      for (const Shape &s : kShapes) {
        Linear l =
            makeLinear(dtype, s.batch, s.m, s.k, s.n, s.ta, s.tb, seed++);
        Tensor pre = randomTensor(dtype, l.outShape, seed++, -3.0, 3.0);
        Tensor mm = run("train.matmul", matmulFlags(s.ta, s.tb), {&l.x, &l.w},
                        Tensor(dtype, l.outShape));
        Tensor chain = run("train.gelu_grad", matmulFlags(false, false, exact),
                           {&pre, &mm}, Tensor(dtype, l.outShape));
        Tensor fused =
            run("train.matmul_gelu_grad", matmulFlags(s.ta, s.tb, exact),
                {&l.x, &l.w, &pre}, Tensor(dtype, l.outShape));
        EXPECT_TRUE(fused.sameBytes(chain)) << dtypeName(dtype);
      }
}

TEST(FusedMatmulTest, MatmulBiasGradIsItsChain) {
  // dW = x^T dy and db = the column sums of dy, at row counts on both sides
  // of the chunked column reduction's threshold.
  uint32_t seed = 300;
  for (DType dtype : {DType::f32, DType::bf16})
    for (int64_t rows : {5, 64, 65, 300})
      for (bool ta : {true, false}) {
        int64_t k = 12, n = 20;
        Tensor x = randomTensor(dtype,
                                ta ? std::vector<int64_t>{rows, k}
                                   : std::vector<int64_t>{k, rows},
                                seed++);
        Tensor dy = randomTensor(dtype, {rows, n}, seed++);
        Tensor dw = run("train.matmul", matmulFlags(ta, false), {&x, &dy},
                        Tensor(dtype, {k, n}));
        Tensor db = run("train.reduce_sum", dict({{"dims", i64s({0})}}), {&dy},
                        Tensor(dtype, {n}));
        Tensor fusedW(dtype, {k, n}), fusedB(dtype, {n});
        fusedW.poison();
        fusedB.poison();
        ASSERT_TRUE(runKernel("train.matmul_bias_grad", matmulFlags(ta, false),
                              {&x, &dy}, {&fusedW, &fusedB})
                        .ok());
        EXPECT_TRUE(fusedW.sameBytes(dw)) << dtypeName(dtype);
        EXPECT_TRUE(fusedB.sameBytes(db)) << dtypeName(dtype) << " " << rows;
        // The pass pairs a reduction of [B, T, N] over [0, 1] with the
        // matmul of its [B * T, N] reshape: the same sums.
        if (rows % 5 == 0) {
          Tensor dy3 = dy;
          Tensor reshaped(dtype, {5, rows / 5, n});
          std::memcpy(reshaped.data(), dy.data(),
                      static_cast<size_t>(rows * n * dtypeBytes(dtype)));
          Tensor db3 = run("train.reduce_sum", dict({{"dims", i64s({0, 1})}}),
                           {&reshaped}, Tensor(dtype, {n}));
          EXPECT_TRUE(fusedB.sameBytes(db3)) << dtypeName(dtype) << " " << rows;
        }
      }
}

TEST(FusedMatmulTest, RefusesWhatItsChainRefuses) {
  Tensor x = randomTensor(DType::f32, {4, 6}, 1);
  Tensor w = randomTensor(DType::f32, {7, 5}, 2);
  Tensor b = randomTensor(DType::f32, {5}, 3);
  Tensor out(DType::f32, {4, 5});
  absl::Status status =
      runKernel("train.matmul_bias", dict({}), {&x, &w, &b}, {&out});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("train.matmul_bias: train.matmul:"),
            std::string::npos)
      << status;
  Tensor dy = randomTensor(DType::f32, {4, 5}, 4);
  Tensor dw(DType::f32, {6, 5}), db(DType::f32, {5});
  status = runKernel("train.matmul_bias_grad",
                     dict({{"transpose_a", unit()}, {"transpose_b", unit()}}),
                     {&x, &dy}, {&dw, &db});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
}

} // namespace
