//===- DropoutTest.cpp - train.dropout's generator and kernel -------------===//

#include "KernelTestSupport.h"

#include "zero/runtime/Dropout.h"

#include <cmath>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

mlir::DictionaryAttr dropoutParams(double rate, int64_t stream = 0) {
  return dict({{"rate", f64(rate)}, {"stream", i64(stream)}});
}

KernelContext contextAt(int64_t step, int rank = 0, uint64_t seed = 1,
                        int64_t microStep = 0) {
  KernelContext ctx;
  ctx.step = step;
  ctx.rank = rank;
  // Dropout keys its mask by the rank's slice of the global batch.
  ctx.batchRank = rank;
  ctx.seed = seed;
  ctx.microStep = microStep;
  return ctx;
}

Tensor dropped(const Tensor &x, double rate, const KernelContext &ctx,
               int64_t stream = 0) {
  Tensor y(x.dtype(), x.shape());
  y.poison();
  EXPECT_TRUE(
      runKernel("train.dropout", dropoutParams(rate, stream), {&x}, {&y}, ctx)
          .ok());
  return y;
}

// Random123's known-answer vectors (its tests/kat_vectors) for
// Philox4x32-10.
TEST(DropoutTest, PhiloxMatchesTheKnownAnswers) {
  struct Case {
    Philox4x32 counter;
    uint32_t key0, key1;
    Philox4x32 want;
  };
  const Case cases[] = {
      {{{0, 0, 0, 0}},
       0,
       0,
       {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       0xffffffff,
       0xffffffff,
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       0xa4093822,
       0x299f31d0,
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Case &c : cases) {
    Philox4x32 got = philox4x32(c.counter, c.key0, c.key1);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(got.v[i], c.want.v[i]) << i;
  }
}

// PyTorch's dropout: kept elements are x * (1 / (1 - p)) in f32, the others
// 0, and about 1 - p of them are kept: within 5 standard deviations of the
// binomial's mean.
TEST(DropoutTest, KeepsAboutOneMinusRateAndScalesThem) {
  for (double rate : {0.1, 0.5, 0.9}) {
    Tensor x = randomTensor(DType::f32, {64, 1000}, 70, 0.5, 1.5);
    Tensor y = dropped(x, rate, contextAt(3));
    float scale = static_cast<float>(1.0 / (1.0 - rate));
    int64_t kept = 0;
    for (int64_t i = 0; i < x.size(); ++i) {
      if (y.at(i) == 0.0)
        continue;
      ++kept;
      ASSERT_EQ(y.at(i),
                static_cast<double>(static_cast<float>(x.at(i)) * scale))
          << i;
    }
    double n = static_cast<double>(x.size());
    double mean = n * (1.0 - rate), sigma = std::sqrt(n * rate * (1.0 - rate));
    EXPECT_LT(std::abs(kept - mean), 5.0 * sigma)
        << "rate " << rate << ": kept " << kept << " of " << x.size();
  }
}

TEST(DropoutTest, RateZeroIsTheIdentity) {
  Tensor x = randomTensor(DType::bf16, {4, 33}, 71);
  Tensor y = dropped(x, 0.0, contextAt(1));
  EXPECT_TRUE(y.sameBytes(x));
}

// The mask is the global batch's: the two halves of a batch, on ranks 0
// and 1, get the halves of the mask the whole batch gets on one rank.
TEST(DropoutTest, RanksHoldingHalvesOfTheBatchDrawTheWholeBatchsMask) {
  Tensor whole = randomTensor(DType::f32, {8, 5, 7}, 72);
  Tensor first(DType::f32, {4, 5, 7}), second(DType::f32, {4, 5, 7});
  int64_t half = first.size();
  for (int64_t i = 0; i < half; ++i) {
    first.set(i, whole.at(i));
    second.set(i, whole.at(half + i));
  }
  Tensor all = dropped(whole, 0.3, contextAt(5, 0));
  Tensor rank0 = dropped(first, 0.3, contextAt(5, 0));
  Tensor rank1 = dropped(second, 0.3, contextAt(5, 1));
  for (int64_t i = 0; i < half; ++i) {
    ASSERT_EQ(rank0.at(i), all.at(i)) << i;
    ASSERT_EQ(rank1.at(i), all.at(half + i)) << i;
  }
}

// The gradient is the same op: it keeps exactly the elements the forward
// kept, scaled alike.
TEST(DropoutTest, TheGradientGoesThroughTheSameMask) {
  Tensor x = randomTensor(DType::f32, {16, 64}, 73, 0.5, 1.5);
  Tensor dy = randomTensor(DType::f32, {16, 64}, 74, 0.5, 1.5);
  Tensor y = dropped(x, 0.25, contextAt(9, 0, 7), 3);
  Tensor dx = dropped(dy, 0.25, contextAt(9, 0, 7), 3);
  for (int64_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(y.at(i) == 0.0, dx.at(i) == 0.0) << i;
}

// Each of seed, stream, step and micro-step changes the mask.
TEST(DropoutTest, SeedStreamStepAndMicroStepEachDrawAnotherMask) {
  Tensor x = randomTensor(DType::f32, {8, 128}, 75, 0.5, 1.5);
  Tensor base = dropped(x, 0.5, contextAt(2, 0, 1, 0), 0);
  const Tensor others[] = {
      dropped(x, 0.5, contextAt(2, 0, 2, 0), 0),
      dropped(x, 0.5, contextAt(2, 0, 1, 0), 1),
      dropped(x, 0.5, contextAt(3, 0, 1, 0), 0),
      dropped(x, 0.5, contextAt(2, 0, 1, 1), 0),
  };
  for (const Tensor &other : others) {
    int64_t differ = 0;
    for (int64_t i = 0; i < x.size(); ++i)
      differ += (base.at(i) == 0.0) != (other.at(i) == 0.0);
    // Independent masks at p = 0.5 differ in about half the elements.
    EXPECT_GT(differ, x.size() / 4);
  }
}

TEST(DropoutTest, RefusesARateOutsideZeroToOne) {
  Tensor x = randomTensor(DType::f32, {2, 3}, 76);
  Tensor y(DType::f32, {2, 3});
  absl::Status status =
      runKernel("train.dropout", dropoutParams(1.0), {&x}, {&y});
  EXPECT_FALSE(status.ok());
  EXPECT_NE(std::string(status.message()).find("[0, 1)"), std::string::npos)
      << status;
}

} // namespace
