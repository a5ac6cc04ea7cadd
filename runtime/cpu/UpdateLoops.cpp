//===- UpdateLoops.cpp - The elementwise loops of the update kernels ------===//
//
// Compiled once per Highway target (foreach_target.h includes this file
// again for each); HWY_DYNAMIC_DISPATCH picks the best one the CPU has.
//
//===----------------------------------------------------------------------===//

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "runtime/cpu/UpdateLoops.cpp"
#include "hwy/foreach_target.h" // IWYU pragma: keep

#include "hwy/highway.h"

#include "runtime/cpu/UpdateLoops.h"

#include <cmath>

HWY_BEFORE_NAMESPACE();
namespace zero::rt::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void AdamBlock(const AdamCoefficients &c, int64_t n, const float *p,
               const float *g, const float *m, const float *v, float *newP,
               float *newM, float *newV) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto wdGrad = hn::Set(d, c.wdGrad), beta1 = hn::Set(d, c.beta1),
             oneMinusBeta1 = hn::Set(d, c.oneMinusBeta1),
             beta2 = hn::Set(d, c.beta2),
             oneMinusBeta2 = hn::Set(d, c.oneMinusBeta2),
             correction2Sqrt = hn::Set(d, c.correction2Sqrt),
             stepSize = hn::Set(d, c.stepSize), eps = hn::Set(d, c.eps),
             shrink = hn::Set(d, c.shrink);
  // Without weight decay the term is left out, not added as 0 * p: an
  // infinite parameter stays infinite, as in PyTorch (0 * inf is NaN).
  const bool decay = c.wdGrad != 0.0f;
  int64_t i = 0;
  // The same operations, in the same order, as the scalar tail below.
  for (; i + lanes <= n; i += lanes) {
    const auto pi = hn::LoadU(d, p + i);
    auto grad = hn::LoadU(d, g + i);
    if (decay)
      grad = hn::Add(grad, hn::Mul(wdGrad, pi));
    const auto mi = hn::Add(hn::Mul(beta1, hn::LoadU(d, m + i)),
                            hn::Mul(oneMinusBeta1, grad));
    const auto vi = hn::Add(hn::Mul(beta2, hn::LoadU(d, v + i)),
                            hn::Mul(hn::Mul(oneMinusBeta2, grad), grad));
    const auto denom = hn::Add(hn::Div(hn::Sqrt(vi), correction2Sqrt), eps);
    hn::StoreU(
        hn::Sub(hn::Mul(pi, shrink), hn::Div(hn::Mul(stepSize, mi), denom)), d,
        newP + i);
    hn::StoreU(mi, d, newM + i);
    hn::StoreU(vi, d, newV + i);
  }
  for (; i < n; ++i) {
    float grad = decay ? g[i] + c.wdGrad * p[i] : g[i];
    float mi = c.beta1 * m[i] + c.oneMinusBeta1 * grad;
    float vi = c.beta2 * v[i] + c.oneMinusBeta2 * grad * grad;
    float denom = std::sqrt(vi) / c.correction2Sqrt + c.eps;
    newP[i] = p[i] * c.shrink - c.stepSize * mi / denom;
    newM[i] = mi;
    newV[i] = vi;
  }
}

const char *AdamBlockTarget() { return hwy::TargetName(HWY_TARGET); }

} // namespace HWY_NAMESPACE
} // namespace zero::rt::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace zero::rt::cpu {

HWY_EXPORT(AdamBlock);
HWY_EXPORT(AdamBlockTarget);

void adamBlock(const AdamCoefficients &c, int64_t n, const float *p,
               const float *g, const float *m, const float *v, float *newP,
               float *newM, float *newV) {
  HWY_DYNAMIC_DISPATCH(AdamBlock)(c, n, p, g, m, v, newP, newM, newV);
}

const char *adamBlockTarget() {
  return HWY_DYNAMIC_DISPATCH(AdamBlockTarget)();
}

} // namespace zero::rt::cpu
#endif // HWY_ONCE
