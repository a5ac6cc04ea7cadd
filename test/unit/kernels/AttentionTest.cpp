//===- AttentionTest.cpp - Fused attention against a double reference -----===//
//
// train.attention and train.attention_grad on sequences of 150 positions,
// so that the CPU kernel's blocks of 64 query rows include a partial one,
// with and without the causal mask, against the textbook formulas in
// double: P = softmax(q k^T scale), O = P v; dV = P^T dO, dP = dO v^T,
// dS = P (dP - rowsum(dO O)), dQ = dS k scale, dK = dS^T q scale.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include <cmath>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

constexpr int64_t kSlices = 2, kSeq = 150, kDim = 8;
constexpr double kScale = 0.35;

struct Reference {
  std::vector<double> out, lse, dq, dk, dv;
};

Reference reference(const Tensor &q, const Tensor &k, const Tensor &v,
                    const Tensor &dout, bool causal) {
  std::vector<double> Q = q.values(), K = k.values(), V = v.values(),
                      dO = dout.values();
  Reference r;
  size_t n = Q.size();
  r.out.assign(n, 0);
  r.dq.assign(n, 0);
  r.dk.assign(n, 0);
  r.dv.assign(n, 0);
  r.lse.assign(kSlices * kSeq, 0);
  for (int64_t s = 0; s < kSlices; ++s) {
    auto at = [&](int64_t row, int64_t d) {
      return (s * kSeq + row) * kDim + d;
    };
    std::vector<double> p(kSeq * kSeq, 0.0);
    for (int64_t i = 0; i < kSeq; ++i) {
      int64_t keys = causal ? i + 1 : kSeq;
      double max = -INFINITY;
      for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < kDim; ++d)
          dot += Q[at(i, d)] * K[at(j, d)];
        p[i * kSeq + j] = dot * kScale;
        max = std::max(max, p[i * kSeq + j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < keys; ++j)
        sum += std::exp(p[i * kSeq + j] - max);
      for (int64_t j = 0; j < keys; ++j)
        p[i * kSeq + j] = std::exp(p[i * kSeq + j] - max) / sum;
      for (int64_t j = keys; j < kSeq; ++j)
        p[i * kSeq + j] = 0;
      r.lse[s * kSeq + i] = max + std::log(sum);
      for (int64_t d = 0; d < kDim; ++d)
        for (int64_t j = 0; j < keys; ++j)
          r.out[at(i, d)] += p[i * kSeq + j] * V[at(j, d)];
    }
    for (int64_t i = 0; i < kSeq; ++i) {
      double delta = 0;
      for (int64_t d = 0; d < kDim; ++d)
        delta += dO[at(i, d)] * r.out[at(i, d)];
      for (int64_t j = 0; j < kSeq; ++j) {
        double dp = 0;
        for (int64_t d = 0; d < kDim; ++d)
          dp += dO[at(i, d)] * V[at(j, d)];
        double pij = p[i * kSeq + j];
        double ds = pij * (dp - delta) * kScale;
        for (int64_t d = 0; d < kDim; ++d) {
          r.dv[at(j, d)] += pij * dO[at(i, d)];
          r.dq[at(i, d)] += ds * K[at(j, d)];
          r.dk[at(j, d)] += ds * Q[at(i, d)];
        }
      }
    }
  }
  return r;
}

TEST(AttentionTest, MatchesTheFormulasAcrossQueryBlocks) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    std::vector<int64_t> shape = {kSlices, kSeq, kDim};
    Tensor q = randomTensor(DType::f32, shape, 1, -2, 2);
    Tensor k = randomTensor(DType::f32, shape, 2, -2, 2);
    Tensor v = randomTensor(DType::f32, shape, 3);
    Tensor dout = randomTensor(DType::f32, shape, 4);
    Reference want = reference(q, k, v, dout, causal);
    std::vector<std::pair<std::string, mlir::Attribute>> entries = {
        {"scale", f64(kScale)}};
    if (causal)
      entries.push_back({"causal", unit()});
    mlir::DictionaryAttr params = dict(entries);

    Tensor out(DType::f32, shape), lse(DType::f32, {kSlices, kSeq});
    out.poison();
    lse.poison();
    ASSERT_TRUE(
        runKernel("train.attention", params, {&q, &k, &v}, {&out, &lse}).ok());
    EXPECT_TRUE(allClose(out, want.out, 1e-6, 1e-5));
    EXPECT_TRUE(allClose(lse, want.lse, 1e-6, 1e-5));

    Tensor dq(DType::f32, shape), dk(DType::f32, shape), dv(DType::f32, shape);
    for (Tensor *t : {&dq, &dk, &dv})
      t->poison();
    ASSERT_TRUE(runKernel("train.attention_grad", params,
                          {&dout, &q, &k, &v, &out, &lse}, {&dq, &dk, &dv})
                    .ok());
    EXPECT_TRUE(allClose(dq, want.dq, 1e-5, 1e-4));
    EXPECT_TRUE(allClose(dk, want.dk, 1e-5, 1e-4));
    EXPECT_TRUE(allClose(dv, want.dv, 1e-5, 1e-4));
  }
}

TEST(AttentionTest, EmptySequencesAreNothingToDo) {
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{2, 0, 8}, std::vector<int64_t>{2, 4, 0}}) {
    Tensor q(DType::f32, shape), out(DType::f32, shape);
    Tensor lse(DType::f32, {shape[0], shape[1]});
    EXPECT_TRUE(runKernel("train.attention", dict({{"scale", f64(0.5)}}),
                          {&q, &q, &q}, {&out, &lse})
                    .ok());
    Tensor dq(DType::f32, shape);
    EXPECT_TRUE(runKernel("train.attention_grad", dict({{"scale", f64(0.5)}}),
                          {&q, &q, &q, &q, &q, &lse}, {&dq, &dq, &dq})
                    .ok());
  }
}

TEST(AttentionTest, BadRequestsAreInvalidArguments) {
  Tensor q = randomTensor(DType::f32, {2, 4, 8}, 5);
  Tensor lse(DType::f32, {2, 8}), out(DType::f32, {2, 4, 8});
  absl::Status status =
      runKernel("train.attention", dict({{"scale", f64(0.5)}}), {&q, &q, &q},
                {&out, &lse});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("needs an f32 log-sum-exp of shape"),
            absl::string_view::npos)
      << status;
  Tensor rows(DType::f32, {2, 4});
  status = runKernel("train.attention", dict({{"scale", f64(0.0)}}),
                     {&q, &q, &q}, {&out, &rows});
  EXPECT_NE(status.message().find("needs scale > 0"), absl::string_view::npos)
      << status;
}

/// [b, a, ...] of `t`'s [a, b, ...] where `t` is [lead, a, b, d]: the swap
/// train-fuse-attention-layout folds.
Tensor swapHeads(const Tensor &t) {
  const std::vector<int64_t> &s = t.shape();
  Tensor swapped(t.dtype(), {s[0], s[2], s[1], s[3]});
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t a = 0; a < s[1]; ++a)
      for (int64_t b = 0; b < s[2]; ++b)
        for (int64_t d = 0; d < s[3]; ++d)
          swapped.set(((n * s[2] + b) * s[1] + a) * s[3] + d,
                      t.at(((n * s[1] + a) * s[2] + b) * s[3] + d));
  return swapped;
}

// seq_major: [batch, seq, heads, head_dim] read by strides gives the same
// bits as the heads transposed to [batch, heads, seq, head_dim] around the
// op, in the forward and the backward, in f32 and bf16.
TEST(AttentionTest, SeqMajorHeadsAreTheTransposedSlices) {
  const std::vector<int64_t> seqMajor = {2, 70, 3, 8}, sliced = {2, 3, 70, 8};
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtypeLabel(dtype));
    Tensor q = randomTensor(dtype, seqMajor, 11, -2, 2);
    Tensor k = randomTensor(dtype, seqMajor, 12, -2, 2);
    Tensor v = randomTensor(dtype, seqMajor, 13);
    Tensor dout = randomTensor(dtype, seqMajor, 14);
    mlir::DictionaryAttr plain =
        dict({{"scale", f64(kScale)}, {"causal", unit()}});
    mlir::DictionaryAttr strided = dict(
        {{"scale", f64(kScale)}, {"causal", unit()}, {"seq_major", unit()}});

    Tensor qt = swapHeads(q), kt = swapHeads(k), vt = swapHeads(v),
           doutT = swapHeads(dout);
    Tensor want(dtype, sliced), wantLse(DType::f32, {2, 3, 70});
    ASSERT_TRUE(
        runKernel("train.attention", plain, {&qt, &kt, &vt}, {&want, &wantLse})
            .ok());
    Tensor out(dtype, seqMajor), lse(DType::f32, {2, 3, 70});
    out.poison();
    lse.poison();
    absl::Status status =
        runKernel("train.attention", strided, {&q, &k, &v}, {&out, &lse});
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_TRUE(out.sameBytes(swapHeads(want)));
    EXPECT_TRUE(lse.sameBytes(wantLse));

    Tensor wdq(dtype, sliced), wdk(dtype, sliced), wdv(dtype, sliced);
    ASSERT_TRUE(runKernel("train.attention_grad", plain,
                          {&doutT, &qt, &kt, &vt, &want, &wantLse},
                          {&wdq, &wdk, &wdv})
                    .ok());
    Tensor dq(dtype, seqMajor), dk(dtype, seqMajor), dv(dtype, seqMajor);
    for (Tensor *t : {&dq, &dk, &dv})
      t->poison();
    status = runKernel("train.attention_grad", strided,
                       {&dout, &q, &k, &v, &out, &lse}, {&dq, &dk, &dv});
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_TRUE(dq.sameBytes(swapHeads(wdq)));
    EXPECT_TRUE(dk.sameBytes(swapHeads(wdk)));
    EXPECT_TRUE(dv.sameBytes(swapHeads(wdv)));

    // The log-sum-exp is [batch, heads, seq], not the rows in the operands'
    // order.
    Tensor rowsLse(DType::f32, {2, 70, 3});
    status =
        runKernel("train.attention", strided, {&q, &k, &v}, {&out, &rowsLse});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  }
}

} // namespace
