//===- CastLoops.cpp - Vectorized f32 <-> bf16 / f16 conversions ----------===//
//
// Compiled once per Highway target (foreach_target.h includes this file
// again for each); HWY_DYNAMIC_DISPATCH picks the best one the CPU has.
//
//===----------------------------------------------------------------------===//

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "runtime/cpu/CastLoops.cpp"
#include "hwy/foreach_target.h" // IWYU pragma: keep

#include "hwy/highway.h"

#include "runtime/cpu/CastLoops.h"

#include <algorithm>

HWY_BEFORE_NAMESPACE();
namespace zero::rt::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using FloatTag = hn::ScalableTag<float>;
using IntTag = hn::RebindToSigned<FloatTag>;
using WordTag = hn::RebindToUnsigned<FloatTag>;
// As many 16-bit lanes as a float vector has lanes (half its width).
using HalfTag = hn::Rebind<uint16_t, FloatTag>;

constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);

/// one(src + i, dst + i) a float vector's lanes at a time over [0, n); the
/// last, partial vector goes through the same code on a zero-padded copy.
template <typename From, typename To, typename One>
void ConvertVectors(int64_t n, const From *src, To *dst, One one) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(FloatTag()));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    one(src + i, dst + i);
  if (i == n)
    return;
  HWY_ALIGN From in[kMaxLanes] = {};
  HWY_ALIGN To out[kMaxLanes] = {};
  std::copy_n(src + i, n - i, in);
  one(in, out);
  std::copy_n(out, n - i, dst + i);
}

/// The 16-bit words at `in`, widened to 32-bit lanes.
hn::Vec<IntTag> LoadHalves(const uint16_t *in) {
  return hn::BitCast(IntTag(),
                     hn::PromoteTo(WordTag(), hn::LoadU(HalfTag(), in)));
}

/// Stores the low 16 bits of each lane (each lies in [0, 0xffff]).
void StoreHalves(hn::Vec<IntTag> words, uint16_t *out) {
  hn::StoreU(hn::DemoteTo(HalfTag(), words), HalfTag(), out);
}

void Bf16ToFloatBlock(int64_t n, const uint16_t *src, float *dst) {
  const FloatTag df;
  ConvertVectors(n, src, dst, [&](const uint16_t *in, float *out) {
    hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(LoadHalves(in))), df, out);
  });
}

void FloatToBf16Block(int64_t n, const float *src, uint16_t *dst) {
  const FloatTag df;
  const IntTag di;
  const WordTag du;
  ConvertVectors(n, src, dst, [&](const float *in, uint16_t *out) {
    const auto word = hn::BitCast(du, hn::LoadU(df, in));
    const auto isNaN = hn::RebindMask(
        du, hn::And(hn::BitCast(di, word), hn::Set(di, 0x7fffffff)) >
                hn::Set(di, 0x7f800000));
    const auto upper = hn::ShiftRight<16>(word);
    // Round to nearest even: add 0x7fff plus the lowest kept bit. No
    // overflow: the largest non-NaN word is -inf, 0xff800000.
    const auto rounded = hn::ShiftRight<16>(hn::Add(
        word, hn::Add(hn::Set(du, 0x7fffu), hn::And(upper, hn::Set(du, 1u)))));
    const auto quietNaN = hn::Or(upper, hn::Set(du, 0x40u));
    StoreHalves(hn::BitCast(di, hn::IfThenElse(isNaN, quietNaN, rounded)), out);
  });
}

void F16ToFloatBlock(int64_t n, const uint16_t *src, float *dst) {
  const FloatTag df;
  const IntTag di;
  ConvertVectors(n, src, dst, [&](const uint16_t *in, float *out) {
    const auto half = LoadHalves(in);
    const auto sign = hn::ShiftLeft<16>(hn::And(half, hn::Set(di, 0x8000)));
    const auto exponent = hn::And(hn::ShiftRight<10>(half), hn::Set(di, 0x1f));
    const auto mantissa = hn::And(half, hn::Set(di, 0x3ff));
    // Exponent 1..30: rebias from 15 to 127.
    const auto normal =
        hn::Or(hn::ShiftLeft<23>(hn::Add(exponent, hn::Set(di, 112))),
               hn::ShiftLeft<13>(mantissa));
    // Exponent 0: mantissa * 2^-24, exact.
    const auto subnormal = hn::BitCast(
        di, hn::Mul(hn::ConvertTo(df, mantissa), hn::Set(df, 0x1p-24f)));
    // Exponent 31: infinity, or the canonical quiet NaN.
    const auto special =
        hn::IfThenElse(hn::Eq(mantissa, hn::Zero(di)), hn::Set(di, 0x7f800000),
                       hn::Set(di, 0x7fc00000));
    const auto magnitude = hn::IfThenElse(
        hn::Eq(exponent, hn::Zero(di)), subnormal,
        hn::IfThenElse(hn::Eq(exponent, hn::Set(di, 31)), special, normal));
    hn::StoreU(hn::BitCast(df, hn::Or(magnitude, sign)), df, out);
  });
}

void FloatToF16Block(int64_t n, const float *src, uint16_t *dst) {
  const FloatTag df;
  const IntTag di;
  ConvertVectors(n, src, dst, [&](const float *in, uint16_t *out) {
    const auto word = hn::BitCast(di, hn::LoadU(df, in));
    const auto sign = hn::And(hn::ShiftRight<16>(word), hn::Set(di, 0x8000));
    const auto magnitude = hn::And(word, hn::Set(di, 0x7fffffff));
    // Normal results: rebias the exponent from 127 to 15 and round the
    // mantissa to 10 bits, to nearest even (a carry moves into the
    // exponent, 65504 <= |x| < 65520 staying 65504).
    const auto normal = hn::ShiftRight<13>(hn::Add(
        hn::Sub(magnitude, hn::Set(di, 112 << 23)),
        hn::Add(hn::Set(di, 0xfff),
                hn::And(hn::ShiftRight<13>(magnitude), hn::Set(di, 1)))));
    // Below 2^-14: units of 2^-24 (an exact scaling), to nearest even; 1024
    // units is the smallest normal's encoding. Lanes above it (NaN among
    // them) are clamped first: their result is another, and converting NaN
    // or a huge value to an integer is undefined where Highway emulates
    // vectors in C++ (the EMU128 target).
    const auto small = hn::Min(magnitude, hn::Set(di, 0x38800000));
    const auto subnormal = hn::ConvertTo(
        di, hn::Round(hn::Mul(hn::BitCast(df, small), hn::Set(df, 0x1p24f))));
    auto result =
        hn::IfThenElse(magnitude < hn::Set(di, 0x38800000), subnormal, normal);
    // From 65520 (0x477ff000) up: infinity; NaN: the canonical quiet NaN.
    result = hn::IfThenElse(magnitude > hn::Set(di, 0x477fefff),
                            hn::Set(di, 0x7c00), result);
    result = hn::IfThenElse(magnitude > hn::Set(di, 0x7f800000),
                            hn::Set(di, 0x7e00), result);
    StoreHalves(hn::Or(result, sign), out);
  });
}

const char *CastLoopsTarget() { return hwy::TargetName(HWY_TARGET); }

} // namespace HWY_NAMESPACE
} // namespace zero::rt::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace zero::rt::cpu {

HWY_EXPORT(Bf16ToFloatBlock);
HWY_EXPORT(FloatToBf16Block);
HWY_EXPORT(F16ToFloatBlock);
HWY_EXPORT(FloatToF16Block);
HWY_EXPORT(CastLoopsTarget);

void bf16ToFloatBlock(int64_t n, const uint16_t *src, float *dst) {
  HWY_DYNAMIC_DISPATCH(Bf16ToFloatBlock)(n, src, dst);
}

void floatToBf16Block(int64_t n, const float *src, uint16_t *dst) {
  HWY_DYNAMIC_DISPATCH(FloatToBf16Block)(n, src, dst);
}

void f16ToFloatBlock(int64_t n, const uint16_t *src, float *dst) {
  HWY_DYNAMIC_DISPATCH(F16ToFloatBlock)(n, src, dst);
}

void floatToF16Block(int64_t n, const float *src, uint16_t *dst) {
  HWY_DYNAMIC_DISPATCH(FloatToF16Block)(n, src, dst);
}

const char *castLoopsTarget() {
  return HWY_DYNAMIC_DISPATCH(CastLoopsTarget)();
}

} // namespace zero::rt::cpu
#endif // HWY_ONCE
