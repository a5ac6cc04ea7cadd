//===- ActivationLoops.cpp - Vectorized exp and the activations -----------===//
//
// Compiled once per Highway target (foreach_target.h includes this file
// again for each); HWY_DYNAMIC_DISPATCH picks the best one the CPU has.
//
//===----------------------------------------------------------------------===//

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "runtime/cpu/ActivationLoops.cpp"
#include "hwy/foreach_target.h" // IWYU pragma: keep

#include "hwy/highway.h"

#include "runtime/cpu/ActivationLoops.h"

#include <algorithm>
#include <cmath>
#include <limits>

HWY_BEFORE_NAMESPACE();
namespace zero::rt::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using FloatTag = hn::ScalableTag<float>;
using FloatVec = hn::Vec<FloatTag>;

/// exp(x), Cephes' expf: x = n ln 2 + r with ln 2 split in two (Cody-Waite),
/// so r is exact to within an ulp, then 1 + r + r^2 p(r). 2^n is applied as
/// 2^(n-1) * 2 so that n = 128 (x up to ln FLT_MAX) needs no special case.
/// Below -86.6 (where expf is under 3e-38) the result is 0, above ln
/// FLT_MAX +inf, and NaN stays NaN.
FloatVec Exp(FloatTag d, FloatVec x) {
  const hn::RebindToSigned<FloatTag> di;
  const FloatVec lowest = hn::Set(d, -86.6f);
  const FloatVec highest = hn::Set(d, 88.72283905206835f);
  const FloatVec clamped = hn::Min(hn::Max(x, lowest), highest);
  const FloatVec n =
      hn::Round(hn::Mul(clamped, hn::Set(d, 1.44269504088896341f)));
  const FloatVec r =
      hn::Sub(hn::Sub(clamped, hn::Mul(n, hn::Set(d, 0.693359375f))),
              hn::Mul(n, hn::Set(d, -2.12194440e-4f)));
  FloatVec p = hn::Set(d, 1.9875691500e-4f);
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.3981999507e-3f));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 8.3334519073e-3f));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 4.1665795894e-2f));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.6666665459e-1f));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 5.0000001201e-1f));
  const FloatVec y =
      hn::Add(hn::Add(hn::Mul(hn::Mul(p, r), r), r), hn::Set(d, 1.0f));
  // n - 1 + 127 lies in [1, 254]: a normal power of two.
  const auto bits =
      hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, 126)));
  FloatVec result = hn::Mul(hn::Mul(y, hn::BitCast(d, bits)), hn::Set(d, 2.0f));
  result = hn::IfThenElse(
      x > highest, hn::Set(d, std::numeric_limits<float>::infinity()), result);
  result = hn::IfThenZeroElse(x < lowest, result);
  return hn::IfThenElse(hn::IsNaN(x), x, result);
}

// sqrt(2 / pi) and the cubic coefficient of GPT-2's tanh approximation.
constexpr float kGeluC = 0.7978845608028654f;
constexpr float kGeluA = 0.044715f;

/// 0.5 (1 + tanh(u)) as the logistic function of 2u: one exp instead of a
/// tanh, and 1 - s = e s without cancellation. The exponent is capped so
/// that e stays finite and e * s never becomes inf * 0. `oneMinus` gets
/// 1 - s.
FloatVec GeluSigmoid(FloatTag d, FloatVec x, FloatVec &oneMinus) {
  const FloatVec x3 = hn::Mul(hn::Mul(hn::Mul(hn::Set(d, kGeluA), x), x), x);
  const FloatVec u = hn::Mul(hn::Set(d, kGeluC), hn::Add(x, x3));
  const FloatVec e =
      Exp(d, hn::Min(hn::Mul(hn::Set(d, -2.0f), u), hn::Set(d, 80.0f)));
  const FloatVec s = hn::Div(hn::Set(d, 1.0f), hn::Add(hn::Set(d, 1.0f), e));
  oneMinus = hn::Mul(e, s);
  return s;
}

/// y, or NaN where x is -inf. x s(x) there is -inf times a logistic capped
/// above 0, -inf, where PyTorch's x * 0 (or x / inf) is NaN; so is the
/// derivative, which multiplies by that x.
FloatVec NanAtNegativeInfinity(FloatTag d, FloatVec x, FloatVec y) {
  const float inf = std::numeric_limits<float>::infinity();
  return hn::IfThenElse(hn::Eq(x, hn::Set(d, -inf)),
                        hn::Set(d, std::numeric_limits<float>::quiet_NaN()), y);
}

constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);

/// y = one(x), a vector at a time over [0, n); the last, partial vector
/// goes through the same code on a zero-padded copy, so no element takes a
/// scalar path.
template <typename One>
void MapVectors(int64_t n, const float *x, float *y, One one) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(FloatTag()));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    one(x + i, y + i);
  if (i == n)
    return;
  HWY_ALIGN float buffer[kMaxLanes] = {};
  std::copy_n(x + i, n - i, buffer);
  one(buffer, buffer);
  std::copy_n(buffer, n - i, y + i);
}

/// out = one(a, b), as MapVectors for two inputs.
template <typename One>
void MapVectors(int64_t n, const float *a, const float *b, float *out,
                One one) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(FloatTag()));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    one(a + i, b + i, out + i);
  if (i == n)
    return;
  HWY_ALIGN float as[kMaxLanes] = {};
  HWY_ALIGN float bs[kMaxLanes] = {};
  std::copy_n(a + i, n - i, as);
  std::copy_n(b + i, n - i, bs);
  one(as, bs, as);
  std::copy_n(as, n - i, out + i);
}

void ExpShiftedBlock(int64_t n, const float *x, float shift, float *y) {
  const FloatTag d;
  const FloatVec by = hn::Set(d, shift);
  MapVectors(n, x, y, [&](const float *in, float *out) {
    hn::StoreU(Exp(d, hn::Sub(hn::LoadU(d, in), by)), d, out);
  });
}

void GeluBlock(int64_t n, const float *x, float *y) {
  const FloatTag d;
  MapVectors(n, x, y, [&](const float *in, float *out) {
    const FloatVec xi = hn::LoadU(d, in);
    FloatVec oneMinus;
    hn::StoreU(
        NanAtNegativeInfinity(d, xi, hn::Mul(xi, GeluSigmoid(d, xi, oneMinus))),
        d, out);
  });
}

void GeluGradBlock(int64_t n, const float *x, const float *dy, float *dx) {
  const FloatTag d;
  // d/dx [x s(2u)] = s + 2 x s (1 - s) u'(x), u' = c (1 + 3 a x^2).
  MapVectors(
      n, x, dy, dx, [&](const float *xin, const float *dyin, float *out) {
        const FloatVec xi = hn::LoadU(d, xin);
        FloatVec oneMinus;
        const FloatVec s = GeluSigmoid(d, xi, oneMinus);
        const FloatVec slope = hn::Mul(
            hn::Set(d, kGeluC),
            hn::Add(hn::Set(d, 1.0f),
                    hn::Mul(hn::Mul(hn::Set(d, 3.0f * kGeluA), xi), xi)));
        const FloatVec derivative = hn::Add(
            s, hn::Mul(
                   hn::Mul(hn::Mul(hn::Mul(hn::Set(d, 2.0f), xi), s), oneMinus),
                   slope));
        hn::StoreU(hn::Mul(hn::LoadU(d, dyin),
                           NanAtNegativeInfinity(d, xi, derivative)),
                   d, out);
      });
}

/// The logistic function 1 / (1 + e^-x), with 1 - s = e s as for GELU. The
/// exponent is capped at 80 so that e stays finite: s is then 1.8e-35, not
/// 0, and e * s stays 1 (SiLU's gradient multiplies by it).
FloatVec Logistic(FloatTag d, FloatVec x, FloatVec &oneMinus) {
  const FloatVec e = Exp(d, hn::Min(hn::Neg(x), hn::Set(d, 80.0f)));
  const FloatVec s = hn::Div(hn::Set(d, 1.0f), hn::Add(hn::Set(d, 1.0f), e));
  // The clamp's Min drops a NaN; PyTorch's sigmoid(NaN) is NaN.
  const auto isNan = hn::IsNaN(x);
  oneMinus = hn::IfThenElse(isNan, x, hn::Mul(e, s));
  return hn::IfThenElse(isNan, x, s);
}

void SigmoidBlock(int64_t n, const float *x, float *y) {
  const FloatTag d;
  MapVectors(n, x, y, [&](const float *in, float *out) {
    FloatVec oneMinus;
    hn::StoreU(Logistic(d, hn::LoadU(d, in), oneMinus), d, out);
  });
}

void SigmoidGradBlock(int64_t n, const float *y, const float *dy, float *dx) {
  const FloatTag d;
  // d/dx s(x) = s (1 - s), from the saved result.
  MapVectors(n, y, dy, dx,
             [&](const float *yin, const float *dyin, float *out) {
               const FloatVec s = hn::LoadU(d, yin);
               const FloatVec slope = hn::Mul(s, hn::Sub(hn::Set(d, 1.0f), s));
               hn::StoreU(hn::Mul(hn::LoadU(d, dyin), slope), d, out);
             });
}

void SiluBlock(int64_t n, const float *x, float *y) {
  const FloatTag d;
  MapVectors(n, x, y, [&](const float *in, float *out) {
    const FloatVec xi = hn::LoadU(d, in);
    FloatVec oneMinus;
    hn::StoreU(
        NanAtNegativeInfinity(d, xi, hn::Mul(xi, Logistic(d, xi, oneMinus))), d,
        out);
  });
}

void SiluGradBlock(int64_t n, const float *x, const float *dy, float *dx) {
  const FloatTag d;
  // d/dx [x s(x)] = s + x s (1 - s) = s (1 + x (1 - s)).
  MapVectors(n, x, dy, dx,
             [&](const float *xin, const float *dyin, float *out) {
               const FloatVec xi = hn::LoadU(d, xin);
               FloatVec oneMinus;
               const FloatVec s = Logistic(d, xi, oneMinus);
               const FloatVec derivative =
                   hn::Mul(s, hn::Add(hn::Set(d, 1.0f), hn::Mul(xi, oneMinus)));
               hn::StoreU(hn::Mul(hn::LoadU(d, dyin),
                                  NanAtNegativeInfinity(d, xi, derivative)),
                          d, out);
             });
}

const char *ActivationLoopsTarget() { return hwy::TargetName(HWY_TARGET); }

} // namespace HWY_NAMESPACE
} // namespace zero::rt::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace zero::rt::cpu {

HWY_EXPORT(ExpShiftedBlock);
HWY_EXPORT(GeluBlock);
HWY_EXPORT(GeluGradBlock);
HWY_EXPORT(SigmoidBlock);
HWY_EXPORT(SigmoidGradBlock);
HWY_EXPORT(SiluBlock);
HWY_EXPORT(SiluGradBlock);
HWY_EXPORT(ActivationLoopsTarget);

void expShiftedBlock(int64_t n, const float *x, float shift, float *y) {
  HWY_DYNAMIC_DISPATCH(ExpShiftedBlock)(n, x, shift, y);
}

void geluBlock(int64_t n, const float *x, float *y) {
  HWY_DYNAMIC_DISPATCH(GeluBlock)(n, x, y);
}

void geluGradBlock(int64_t n, const float *x, const float *dy, float *dx) {
  HWY_DYNAMIC_DISPATCH(GeluGradBlock)(n, x, dy, dx);
}

// 1 / sqrt(2) and 1 / sqrt(2 pi), in the order PyTorch's CPU kernel
// (GeluKernel.cpp) applies them.
constexpr float kSqrtHalf = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

void geluExactBlock(int64_t n, const float *x, float *y) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    y[i] = v * 0.5f * (1.0f + std::erf(v * kSqrtHalf));
  }
}

void geluExactGradBlock(int64_t n, const float *x, const float *dy, float *dx) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    float cdf = 0.5f * (1.0f + std::erf(v * kSqrtHalf));
    float pdf = std::exp(-0.5f * v * v) * kInvSqrt2Pi;
    dx[i] = dy[i] * (cdf + v * pdf);
  }
}

void sigmoidBlock(int64_t n, const float *x, float *y) {
  HWY_DYNAMIC_DISPATCH(SigmoidBlock)(n, x, y);
}

void sigmoidGradBlock(int64_t n, const float *y, const float *dy, float *dx) {
  HWY_DYNAMIC_DISPATCH(SigmoidGradBlock)(n, y, dy, dx);
}

void siluBlock(int64_t n, const float *x, float *y) {
  HWY_DYNAMIC_DISPATCH(SiluBlock)(n, x, y);
}

void siluGradBlock(int64_t n, const float *x, const float *dy, float *dx) {
  HWY_DYNAMIC_DISPATCH(SiluGradBlock)(n, x, dy, dx);
}

const char *activationLoopsTarget() {
  return HWY_DYNAMIC_DISPATCH(ActivationLoopsTarget)();
}

} // namespace zero::rt::cpu
#endif // HWY_ONCE
