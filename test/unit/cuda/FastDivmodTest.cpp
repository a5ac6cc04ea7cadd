//===- FastDivmodTest.cpp - Magic-number division against / and % -------===//
//
// FastDivmod computes the same on host and device (the device's __umulhi is
// the host's 64-bit product's high word), so this host test checks the
// arithmetic every index-decoding CUDA kernel runs: every divisor below
// 4096, the powers of two, divisors near 2^31, GPT-2's extents, against
// dividends at and around multiples of the divisor and across [0, 2^31).
//
//===----------------------------------------------------------------------===//

#include "FastDivmod.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using zero::cuda::dev::FastDivmod;

namespace {

constexpr uint32_t kLimit = uint32_t{1} << 31;

::testing::AssertionResult dividesLikeHardware(uint32_t d, uint32_t n) {
  FastDivmod fast(d);
  uint32_t remainder = ~0u;
  uint32_t quotient = fast.divmod(n, remainder);
  if (quotient == n / d && remainder == n % d && fast.divide(n) == n / d)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << n << " / " << d << ": " << quotient << " remainder " << remainder
         << ", expected " << n / d << " remainder " << n % d;
}

std::vector<uint32_t> divisors() {
  std::vector<uint32_t> list;
  for (uint32_t d = 1; d < 4096; ++d)
    list.push_back(d);
  for (uint32_t shift = 12; shift < 31; ++shift) {
    list.push_back(uint32_t{1} << shift);
    list.push_back((uint32_t{1} << shift) - 1);
    list.push_back((uint32_t{1} << shift) + 1);
  }
  // GPT-2 124M's extents: vocabulary, width, MLP width, sequence, heads.
  for (uint32_t d : {50257u, 768u, 3072u, 2304u, 1024u, 12u, 96u, 8192u})
    list.push_back(d);
  for (uint32_t d : {kLimit - 1, kLimit - 2, 2147483629u, 1073741827u})
    list.push_back(d);
  std::mt19937 random(7);
  for (int i = 0; i < 2000; ++i)
    list.push_back(1 + random() % (kLimit - 1));
  return list;
}

TEST(FastDivmod, EveryDivisorAtTheEdgesOfItsMultiples) {
  for (uint32_t d : divisors()) {
    std::vector<uint32_t> dividends = {0, 1, d - 1, d, kLimit - 1, kLimit - 2};
    if (d < kLimit / 2)
      dividends.push_back(d + 1);
    // Around the largest multiples below 2^31 and a few small ones.
    uint32_t top = (kLimit - 1) / d;
    for (uint32_t k : {uint32_t{2}, uint32_t{3}, top, top - 1, top / 2})
      if (k > 0 && uint64_t{k} * d < kLimit) {
        uint32_t multiple = k * d;
        dividends.push_back(multiple);
        dividends.push_back(multiple - 1);
        if (uint64_t{multiple} + 1 < kLimit)
          dividends.push_back(multiple + 1);
      }
    for (uint32_t n : dividends)
      ASSERT_TRUE(dividesLikeHardware(d, n));
  }
}

TEST(FastDivmod, RandomDividends) {
  std::mt19937 random(11);
  for (uint32_t d : divisors())
    for (int i = 0; i < 64; ++i)
      ASSERT_TRUE(dividesLikeHardware(d, random() % kLimit));
}

// Exhaustive over every dividend for the extents a GPT-2 step decodes most
// (the sequence and the feature widths), in strides that visit all
// residues.
TEST(FastDivmod, ExhaustiveOverSmallDividends) {
  for (uint32_t d : {3u, 7u, 12u, 768u, 1024u, 3072u, 50257u})
    for (uint32_t n = 0; n < (uint32_t{1} << 22); ++n)
      ASSERT_TRUE(dividesLikeHardware(d, n));
}

} // namespace
