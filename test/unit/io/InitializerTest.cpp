//===- InitializerTest.cpp - Seeded initialization and synthetic data -----===//

#include "zero/runtime/Initializer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <set>
#include <vector>

using namespace zero::rt;

namespace {

std::vector<uint8_t> fill(const InitSpec &spec, uint64_t seed,
                          const std::string &name, int64_t logical,
                          int64_t begin, int64_t count, DType dtype) {
  std::vector<uint8_t> out(count * dtypeBytes(dtype), 0xcd);
  fillInitialized(spec, seed, name, logical, begin, count, dtype, out.data());
  return out;
}

std::vector<double> asDoubles(const std::vector<uint8_t> &bytes, DType dtype) {
  std::vector<double> values;
  int64_t count = bytes.size() / dtypeBytes(dtype);
  for (int64_t i = 0; i < count; ++i) {
    if (isFloat(dtype))
      values.push_back(loadAsFloat(bytes.data(), dtype, i));
    else if (dtype == DType::i32)
      values.push_back(reinterpret_cast<const int32_t *>(bytes.data())[i]);
    else
      values.push_back(reinterpret_cast<const int64_t *>(bytes.data())[i]);
  }
  return values;
}

TEST(Initializer, ShardsConcatenateToTheFullTensor) {
  const InitSpec specs[] = {InitSpec::normal(0.5, 0.02),
                            InitSpec::uniform(-3, 2), InitSpec::constant(0.7),
                            InitSpec::ones(), InitSpec::zeros()};
  for (const InitSpec &spec : specs)
    for (DType dtype :
         {DType::f32, DType::bf16, DType::f16, DType::i32, DType::i64})
      for (int64_t logical : {1, 5, 7, 13, 64, 1001}) {
        std::vector<uint8_t> full =
            fill(spec, 42, "layer.0.w", logical, 0, logical, dtype);
        for (int64_t ranks = 1; ranks <= 4; ++ranks) {
          int64_t shard = (logical + ranks - 1) / ranks;
          std::vector<uint8_t> joined;
          // Fill the shards in reverse: the order must not matter.
          std::vector<std::vector<uint8_t>> parts(ranks);
          for (int64_t rank = ranks - 1; rank >= 0; --rank)
            parts[rank] = fill(spec, 42, "layer.0.w", logical, rank * shard,
                               shard, dtype);
          for (const auto &part : parts)
            joined.insert(joined.end(), part.begin(), part.end());
          std::vector<uint8_t> expected = full;
          expected.resize(ranks * shard * dtypeBytes(dtype), 0);
          ASSERT_EQ(joined, expected)
              << initKindName(spec.kind) << " " << dtypeName(dtype) << " "
              << logical << " elements on " << ranks << " ranks";
        }
      }
}

TEST(Initializer, PaddingIsZero) {
  // A last shard wholly past the end, as with 3 elements on 4 ranks.
  std::vector<uint8_t> pad =
      fill(InitSpec::ones(), 1, "b", 3, 3, 4, DType::f32);
  EXPECT_EQ(pad, std::vector<uint8_t>(16, 0));
  std::vector<double> mixed = asDoubles(
      fill(InitSpec::ones(), 1, "b", 3, 2, 3, DType::i64), DType::i64);
  EXPECT_EQ(mixed, (std::vector<double>{1, 0, 0}));
}

TEST(Initializer, ValuesDependOnSeedNameAndIndexOnly) {
  InitSpec spec = InitSpec::normal(0, 1);
  auto a = fill(spec, 7, "w", 64, 0, 64, DType::f32);
  EXPECT_EQ(a, fill(spec, 7, "w", 64, 0, 64, DType::f32));
  // The logical size only decides where padding starts.
  EXPECT_EQ(a, fill(spec, 7, "w", 1000, 0, 64, DType::f32));
  EXPECT_NE(a, fill(spec, 8, "w", 64, 0, 64, DType::f32));
  EXPECT_NE(a, fill(spec, 7, "v", 64, 0, 64, DType::f32));
  std::vector<double> values = asDoubles(a, DType::f32);
  EXPECT_EQ(std::set<double>(values.begin(), values.end()).size(), 64u);
}

TEST(Initializer, RoundsThroughF32) {
  InitSpec spec = InitSpec::normal(0, 0.02);
  auto bf16 = fill(spec, 3, "w", 100, 0, 100, DType::bf16);
  auto f16 = fill(spec, 3, "w", 100, 0, 100, DType::f16);
  for (int64_t i = 0; i < 100; ++i) {
    float value = static_cast<float>(initializedValue(spec, 3, "w", i));
    uint16_t b, h;
    std::memcpy(&b, bf16.data() + 2 * i, 2);
    std::memcpy(&h, f16.data() + 2 * i, 2);
    EXPECT_EQ(b, floatToBf16(value));
    EXPECT_EQ(h, floatToF16(value));
  }
  auto ints = asDoubles(
      fill(InitSpec::constant(2.6), 0, "n", 2, 0, 2, DType::i32), DType::i32);
  EXPECT_EQ(ints, (std::vector<double>{3, 3}));
}

TEST(Initializer, GoldenValuesStayFixed) {
  // Checkpoints and expected losses assume these exact draws; a change to
  // the generator must be deliberate.
  std::vector<uint8_t> bytes =
      fill(InitSpec::normal(0, 1), 0, "w", 4, 0, 4, DType::f32);
  std::vector<uint32_t> bits(4);
  std::memcpy(bits.data(), bytes.data(), 16);
  // 1.06040859, -0.247094706, -0.703159511, -0.391388446
  EXPECT_EQ(bits, (std::vector<uint32_t>{0x3f87bb78, 0xbe7d0665, 0xbf340243,
                                         0xbec86411}));
}

TEST(Initializer, Philox4x32MatchesKnownAnswers) {
  // Random123's kat_vectors for philox4x32 with 10 rounds.
  EXPECT_EQ(philox4x32_10({0, 0}, {0, 0, 0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
                                     0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff},
                          {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6,
                                     0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0xa4093822, 0x299f31d0},
                          {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420,
                                     0x24126ea1}));
}

TEST(Initializer, NormalHasTheRequestedMoments) {
  const int64_t n = 400000;
  std::vector<uint8_t> bytes =
      fill(InitSpec::normal(0.5, 2.0), 11, "big", n, 0, n, DType::f32);
  std::vector<double> v = asDoubles(bytes, DType::f32);
  double sum = 0, sumSq = 0;
  int64_t withinOne = 0;
  for (double x : v) {
    sum += x;
    sumSq += x * x;
    withinOne += std::fabs(x - 0.5) < 2.0;
  }
  double mean = sum / n, var = sumSq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 5 * 2.0 / std::sqrt(double(n)));
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.02);
  EXPECT_NEAR(double(withinOne) / n, 0.6827, 0.005);
}

TEST(Initializer, UniformStaysInRange) {
  const int64_t n = 200000;
  std::vector<double> v =
      asDoubles(fill(InitSpec::uniform(-0.1, 0.3), 5, "u", n, 0, n, DType::f32),
                DType::f32);
  double sum = 0, sumSq = 0;
  for (double x : v) {
    ASSERT_GE(x, -0.1f);
    ASSERT_LE(x, 0.3f);
    sum += x;
    sumSq += x * x;
  }
  double mean = sum / n, var = sumSq / n - mean * mean;
  EXPECT_NEAR(mean, 0.1, 0.002);
  EXPECT_NEAR(var, 0.4 * 0.4 / 12, 0.0005);
}

TEST(Initializer, ConstantsAndValidation) {
  EXPECT_EQ(
      asDoubles(fill(InitSpec::constant(-1.25), 0, "c", 3, 0, 3, DType::bf16),
                DType::bf16),
      (std::vector<double>{-1.25, -1.25, -1.25}));
  EXPECT_EQ(asDoubles(fill(InitSpec::zeros(), 0, "z", 2, 0, 2, DType::f16),
                      DType::f16),
            (std::vector<double>{0, 0}));
  EXPECT_TRUE(validateInitSpec(InitSpec::normal(0, 0.02)).ok());
  EXPECT_TRUE(validateInitSpec(InitSpec::normal(0, 0)).ok());
  EXPECT_FALSE(validateInitSpec(InitSpec::normal(0, -1)).ok());
  EXPECT_FALSE(validateInitSpec(InitSpec::uniform(1, 0)).ok());
  EXPECT_FALSE(validateInitSpec(InitSpec::constant(NAN)).ok());
  EXPECT_EQ(initKindName(InitSpec::Kind::uniform), "uniform");
}

std::vector<uint8_t> data(uint64_t seed, const std::string &stream,
                          int64_t step, int64_t begin, int64_t count,
                          DType dtype, int64_t bound = 0) {
  std::vector<uint8_t> out(count * dtypeBytes(dtype));
  fillUniform(seed, stream, step, begin, count, dtype, out.data(), bound);
  return out;
}

TEST(SyntheticData, SlicesMatchTheGlobalBatch) {
  for (DType dtype : {DType::f32, DType::bf16, DType::i32, DType::i64}) {
    std::vector<uint8_t> batch = data(9, "x", 3, 0, 96, dtype, 10);
    for (int64_t ranks = 1; ranks <= 4; ++ranks) {
      std::vector<uint8_t> joined;
      for (int64_t rank = 0; rank < ranks; ++rank) {
        auto part = data(9, "x", 3, rank * 96 / ranks, 96 / ranks, dtype, 10);
        joined.insert(joined.end(), part.begin(), part.end());
      }
      EXPECT_EQ(joined, batch) << dtypeName(dtype) << " on " << ranks;
    }
  }
}

TEST(SyntheticData, StepsStreamsAndSeedsDiffer) {
  auto base = data(1, "x", 1, 0, 32, DType::f32);
  EXPECT_EQ(base, data(1, "x", 1, 0, 32, DType::f32));
  EXPECT_NE(base, data(1, "x", 2, 0, 32, DType::f32));
  EXPECT_NE(base, data(1, "y", 1, 0, 32, DType::f32));
  EXPECT_NE(base, data(2, "x", 1, 0, 32, DType::f32));
  // Data never replays a parameter's initial values.
  std::vector<uint8_t> init(32 * 4);
  fillInitialized(InitSpec::uniform(-1, 1), 1, "x", 32, 0, 32, DType::f32,
                  init.data());
  EXPECT_NE(base, init);
}

TEST(SyntheticData, RangesAndClasses) {
  const int64_t n = 100000;
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    std::vector<double> v = asDoubles(data(4, "x", 1, 0, n, dtype), dtype);
    double sum = 0;
    for (double x : v) {
      ASSERT_GE(x, -1.0);
      ASSERT_LT(x, 1.0);
      sum += x;
    }
    EXPECT_NEAR(sum / n, 0.0, 0.01) << dtypeName(dtype);
  }
  for (DType dtype : {DType::i32, DType::i64}) {
    std::vector<double> v = asDoubles(data(4, "y", 1, 0, n, dtype, 7), dtype);
    std::vector<int64_t> counts(7, 0);
    for (double x : v) {
      ASSERT_GE(x, 0);
      ASSERT_LT(x, 7);
      ++counts[static_cast<int64_t>(x)];
    }
    for (int64_t c : counts)
      EXPECT_NEAR(double(c) / n, 1.0 / 7, 0.01);
  }
  std::vector<double> single =
      asDoubles(data(4, "y", 1, 0, 10, DType::i32, 0), DType::i32);
  EXPECT_EQ(single, std::vector<double>(10, 0));
}

} // namespace
