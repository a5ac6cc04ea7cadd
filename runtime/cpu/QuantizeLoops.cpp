//===- QuantizeLoops.cpp - Vectorized block quantization -------------===//
//
// Compiled once per Highway target (foreach_target.h includes this file
// again for each); HWY_DYNAMIC_DISPATCH picks the best one the CPU has.
//
//===----------------------------------------------------------------------===//

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "runtime/cpu/QuantizeLoops.cpp"
#include "hwy/foreach_target.h" // IWYU pragma: keep

#include "hwy/highway.h"

#include "runtime/cpu/QuantizeLoops.h"

#include <algorithm>
#include <cmath>

HWY_BEFORE_NAMESPACE();
namespace zero::rt::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using FloatTag = hn::ScalableTag<float>;
using IntTag = hn::RebindToSigned<FloatTag>;
// As many int8 lanes as a float vector has lanes.
using CodeTag = hn::Rebind<int8_t, FloatTag>;

constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);

float QuantizeBlock(int64_t n, const float *x, int8_t *codes,
                    float largestCode) {
  const FloatTag df;
  const CodeTag dc;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  // The largest magnitude; a NaN anywhere makes it NaN.
  auto largest = hn::Zero(df);
  bool nan = false;
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(df, x + i);
    nan |= !hn::AllFalse(df, hn::IsNaN(v));
    largest = hn::Max(largest, hn::Abs(v));
  }
  float magnitude = hn::GetLane(hn::MaxOfLanes(df, largest));
  for (int64_t j = i; j < n; ++j) {
    nan |= std::isnan(x[j]);
    magnitude = std::max(magnitude, std::fabs(x[j]));
  }
  if (nan || !std::isfinite(magnitude))
    return nan ? NAN : magnitude;
  if (magnitude == 0.0f) {
    std::fill_n(codes, n, int8_t{0});
    return 0.0f;
  }
  const auto inverse = hn::Set(df, largestCode / magnitude);
  // |x * inverse| <= largest up to one rounding, and the clamp keeps a
  // product rounded up past it in range.
  const auto low = hn::Set(df, -largestCode), high = hn::Set(df, largestCode);
  auto one = [&](const float *in, int8_t *out) {
    const auto scaled =
        hn::Min(high, hn::Max(low, hn::Mul(hn::LoadU(df, in), inverse)));
    hn::StoreU(hn::DemoteTo(dc, hn::NearestInt(scaled)), dc, out);
  };
  for (i = 0; i + lanes <= n; i += lanes)
    one(x + i, codes + i);
  if (i < n) {
    HWY_ALIGN float in[kMaxLanes] = {};
    HWY_ALIGN int8_t out[kMaxLanes] = {};
    std::copy_n(x + i, n - i, in);
    one(in, out);
    std::copy_n(out, n - i, codes + i);
  }
  return magnitude / largestCode;
}

void DequantizeBlock(int64_t n, const int8_t *codes, float scale, float *x) {
  const FloatTag df;
  const CodeTag dc;
  const IntTag di;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto factor = hn::Set(df, scale);
  auto one = [&](const int8_t *in, float *out) {
    const auto wide = hn::PromoteTo(di, hn::LoadU(dc, in));
    hn::StoreU(hn::Mul(hn::ConvertTo(df, wide), factor), df, out);
  };
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    one(codes + i, x + i);
  if (i < n) {
    HWY_ALIGN int8_t in[kMaxLanes] = {};
    HWY_ALIGN float out[kMaxLanes] = {};
    std::copy_n(codes + i, n - i, in);
    one(in, out);
    std::copy_n(out, n - i, x + i);
  }
}

void PackNibblePairs(int64_t pairs, const int8_t *codes, uint8_t *bytes) {
  const hn::ScalableTag<uint8_t> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto lowNibble = hn::Set(d, uint8_t{0x0f});
  const auto *in = reinterpret_cast<const uint8_t *>(codes);
  int64_t k = 0;
  for (; k + lanes <= pairs; k += lanes) {
    hn::Vec<decltype(d)> even, odd;
    hn::LoadInterleaved2(d, in + 2 * k, even, odd);
    hn::StoreU(hn::Or(hn::And(even, lowNibble), hn::ShiftLeft<4>(odd)), d,
               bytes + k);
  }
  for (; k < pairs; ++k)
    bytes[k] = static_cast<uint8_t>((in[2 * k] & 0x0f) | (in[2 * k + 1] << 4));
}

void UnpackNibblePairs(int64_t pairs, const uint8_t *bytes, int8_t *codes) {
  const hn::ScalableTag<int8_t> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t k = 0;
  // Shifting a signed byte right is arithmetic, so each nibble comes out
  // sign-extended.
  for (; k + lanes <= pairs; k += lanes) {
    const auto packed = hn::BitCast(d, hn::LoadU(du, bytes + k));
    hn::StoreInterleaved2(hn::ShiftRight<4>(hn::ShiftLeft<4>(packed)),
                          hn::ShiftRight<4>(packed), d, codes + 2 * k);
  }
  for (; k < pairs; ++k) {
    codes[2 * k] = signExtendNibble(bytes[k] & 0x0f);
    codes[2 * k + 1] = signExtendNibble(bytes[k] >> 4);
  }
}

} // namespace HWY_NAMESPACE
} // namespace zero::rt::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace zero::rt::cpu {

HWY_EXPORT(QuantizeBlock);
HWY_EXPORT(DequantizeBlock);
HWY_EXPORT(PackNibblePairs);
HWY_EXPORT(UnpackNibblePairs);

float quantizeBlock(int64_t n, const float *x, int8_t *codes,
                    float largestCode) {
  return HWY_DYNAMIC_DISPATCH(QuantizeBlock)(n, x, codes, largestCode);
}

void dequantizeBlock(int64_t n, const int8_t *codes, float scale, float *x) {
  HWY_DYNAMIC_DISPATCH(DequantizeBlock)(n, codes, scale, x);
}

void packNibblePairs(int64_t pairs, const int8_t *codes, uint8_t *bytes) {
  HWY_DYNAMIC_DISPATCH(PackNibblePairs)(pairs, codes, bytes);
}

void unpackNibblePairs(int64_t pairs, const uint8_t *bytes, int8_t *codes) {
  HWY_DYNAMIC_DISPATCH(UnpackNibblePairs)(pairs, bytes, codes);
}

} // namespace zero::rt::cpu
#endif // HWY_ONCE
