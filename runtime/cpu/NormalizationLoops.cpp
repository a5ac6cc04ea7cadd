//===- NormalizationLoops.cpp - Vectorized layer norm rows ----------------===//
//
// Compiled once per Highway target (foreach_target.h includes this file
// again for each); HWY_DYNAMIC_DISPATCH picks the best one the CPU has. The
// order of the row sums, and why, is in NormalizationLoops.h.
//
//===----------------------------------------------------------------------===//

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "runtime/cpu/NormalizationLoops.cpp"
#include "hwy/foreach_target.h" // IWYU pragma: keep

#include "hwy/highway.h"

#include "runtime/cpu/NormalizationLoops.h"

#include <algorithm>
#include <cmath>

HWY_BEFORE_NAMESPACE();
namespace zero::rt::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr size_t kPartials = static_cast<size_t>(kRowSumPartials);
// At most 16 lanes, so that a group of 16 is a whole number of vectors on
// every target (a wider one would hold two groups' partial sums in one).
using Tag = hn::CappedTag<float, kPartials>;
using FloatVec = hn::Vec<Tag>;
constexpr size_t kLanes = hn::MaxLanes(Tag());
constexpr size_t kVectors = kPartials / kLanes;
static_assert(kVectors * kLanes == kPartials,
              "a group of partial sums must be whole vectors");

/// The 16 partial sums: lane l of vector v holds p[v * kLanes + l].
struct Partials {
  FloatVec v[kVectors];
  explicit Partials(Tag d) {
    for (FloatVec &vector : v)
      vector = hn::Zero(d);
  }
};

/// The fixed tree over the partial sums (NormalizationLoops.h).
float Combine(Tag d, const Partials &partials) {
  HWY_ALIGN float p[kPartials];
  for (size_t v = 0; v < kVectors; ++v)
    hn::Store(partials.v[v], d, p + v * kLanes);
  float q[8], r[4];
  for (size_t k = 0; k < 8; ++k)
    q[k] = p[k] + p[k + 8];
  for (size_t k = 0; k < 4; ++k)
    r[k] = q[k] + q[k + 4];
  return (r[0] + r[2]) + (r[1] + r[3]);
}

/// Lanes [0, valid - first) of a vector whose first element is group
/// element `first`: the real elements of a padded group.
hn::Mask<Tag> Valid(Tag d, size_t valid, size_t first) {
  return hn::FirstN(d, valid > first ? valid - first : 0);
}

float RowSum(int64_t n, const float *x) {
  const Tag d;
  Partials sum(d);
  auto group = [&](const float *in) {
    for (size_t v = 0; v < kVectors; ++v)
      sum.v[v] = hn::Add(sum.v[v], hn::LoadU(d, in + v * kLanes));
  };
  int64_t i = 0;
  for (; i + kRowSumPartials <= n; i += kRowSumPartials)
    group(x + i);
  if (i < n) {
    HWY_ALIGN float padded[kPartials] = {};
    std::copy_n(x + i, n - i, padded);
    group(padded);
  }
  return Combine(d, sum);
}

/// out = one(a, b, c) a vector at a time over [0, n); the last, partial
/// vector goes through the same code on zero-padded copies.
template <typename One>
void MapVectors(int64_t n, const float *a, const float *b, const float *c,
                float *out, One one) {
  const int64_t lanes = static_cast<int64_t>(kLanes);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    one(a + i, b + i, c + i, out + i);
  if (i == n)
    return;
  HWY_ALIGN float as[kLanes] = {}, bs[kLanes] = {}, cs[kLanes] = {};
  std::copy_n(a + i, n - i, as);
  std::copy_n(b + i, n - i, bs);
  std::copy_n(c + i, n - i, cs);
  one(as, bs, cs, as);
  std::copy_n(as, n - i, out + i);
}

void LayerNormRow(int64_t n, const float *x, const float *gamma,
                  const float *beta, float epsilon, float *y, float *mean,
                  float *rstd) {
  const Tag d;
  const float inverse = 1.0f / static_cast<float>(n);
  // Two passes: the variance of centred values does not cancel.
  const float m = RowSum(n, x) * inverse;
  const FloatVec vm = hn::Set(d, m);
  Partials squares(d);
  // y = x - mean, and the sum of its squares (padding masked to +0).
  auto centre = [&](const float *in, float *out, size_t valid) {
    for (size_t v = 0; v < kVectors; ++v) {
      FloatVec c = hn::Sub(hn::LoadU(d, in + v * kLanes), vm);
      if (valid < kPartials)
        c = hn::IfThenElseZero(Valid(d, valid, v * kLanes), c);
      hn::StoreU(c, d, out + v * kLanes);
      squares.v[v] = hn::Add(squares.v[v], hn::Mul(c, c));
    }
  };
  int64_t i = 0;
  for (; i + kRowSumPartials <= n; i += kRowSumPartials)
    centre(x + i, y + i, kPartials);
  if (i < n) {
    HWY_ALIGN float padded[kPartials] = {};
    std::copy_n(x + i, n - i, padded);
    centre(padded, padded, static_cast<size_t>(n - i));
    std::copy_n(padded, n - i, y + i);
  }
  const float variance = Combine(d, squares) * inverse;
  const float r = 1.0f / std::sqrt(variance + epsilon);
  const FloatVec vr = hn::Set(d, r);
  MapVectors(n, y, gamma, beta, y,
             [&](const float *c, const float *g, const float *b, float *out) {
               hn::StoreU(hn::Add(hn::Mul(hn::Mul(hn::LoadU(d, c), vr),
                                          hn::LoadU(d, g)),
                                  hn::LoadU(d, b)),
                          d, out);
             });
  *mean = m;
  *rstd = r;
}

void LayerNormGradRow(int64_t n, const float *x, const float *dy,
                      const float *gamma, float mean, float rstd, float *dgamma,
                      float *dbeta, float *dx, float *scratch) {
  const Tag d;
  const float inverse = 1.0f / static_cast<float>(n);
  float *xhat = scratch, *gy = scratch + n;
  const FloatVec vm = hn::Set(d, mean), vr = hn::Set(d, rstd);
  Partials sumGy(d), sumGyXhat(d);
  // xhat and gy, the scale gradients, and the two row sums (padding masked
  // to +0 before it is summed).
  auto group = [&](const float *xin, const float *dyin, const float *gin,
                   float *dg, float *db, float *xh, float *gyout,
                   size_t valid) {
    for (size_t v = 0; v < kVectors; ++v) {
      const size_t o = v * kLanes;
      const FloatVec g = hn::LoadU(d, dyin + o);
      FloatVec h = hn::Mul(hn::Sub(hn::LoadU(d, xin + o), vm), vr);
      FloatVec p = hn::Mul(g, hn::LoadU(d, gin + o));
      hn::StoreU(hn::Add(hn::LoadU(d, dg + o), hn::Mul(g, h)), d, dg + o);
      hn::StoreU(hn::Add(hn::LoadU(d, db + o), g), d, db + o);
      if (valid < kPartials) {
        const hn::Mask<Tag> real = Valid(d, valid, o);
        h = hn::IfThenElseZero(real, h);
        p = hn::IfThenElseZero(real, p);
      }
      hn::StoreU(h, d, xh + o);
      hn::StoreU(p, d, gyout + o);
      sumGy.v[v] = hn::Add(sumGy.v[v], p);
      sumGyXhat.v[v] = hn::Add(sumGyXhat.v[v], hn::Mul(p, h));
    }
  };
  int64_t i = 0;
  for (; i + kRowSumPartials <= n; i += kRowSumPartials)
    group(x + i, dy + i, gamma + i, dgamma + i, dbeta + i, xhat + i, gy + i,
          kPartials);
  if (i < n) {
    const int64_t rest = n - i;
    HWY_ALIGN float xs[kPartials] = {}, dys[kPartials] = {}, gs[kPartials] = {},
                    dgs[kPartials] = {}, dbs[kPartials] = {}, xhs[kPartials],
                    gys[kPartials];
    std::copy_n(x + i, rest, xs);
    std::copy_n(dy + i, rest, dys);
    std::copy_n(gamma + i, rest, gs);
    std::copy_n(dgamma + i, rest, dgs);
    std::copy_n(dbeta + i, rest, dbs);
    group(xs, dys, gs, dgs, dbs, xhs, gys, static_cast<size_t>(rest));
    std::copy_n(dgs, rest, dgamma + i);
    std::copy_n(dbs, rest, dbeta + i);
    std::copy_n(xhs, rest, xhat + i);
    std::copy_n(gys, rest, gy + i);
  }
  // dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)).
  const FloatVec a = hn::Set(d, Combine(d, sumGy) * inverse);
  const FloatVec b = hn::Set(d, Combine(d, sumGyXhat) * inverse);
  MapVectors(n, gy, xhat, gy, dx,
             [&](const float *g, const float *h, const float *, float *out) {
               hn::StoreU(hn::Mul(vr, hn::Sub(hn::Sub(hn::LoadU(d, g), a),
                                              hn::Mul(hn::LoadU(d, h), b))),
                          d, out);
             });
}

const char *NormalizationLoopsTarget() { return hwy::TargetName(HWY_TARGET); }

} // namespace HWY_NAMESPACE
} // namespace zero::rt::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace zero::rt::cpu {

HWY_EXPORT(RowSum);
HWY_EXPORT(LayerNormRow);
HWY_EXPORT(LayerNormGradRow);
HWY_EXPORT(NormalizationLoopsTarget);

float rowSum(int64_t n, const float *x) {
  return HWY_DYNAMIC_DISPATCH(RowSum)(n, x);
}

void layerNormRow(int64_t n, const float *x, const float *gamma,
                  const float *beta, float epsilon, float *y, float *mean,
                  float *rstd) {
  HWY_DYNAMIC_DISPATCH(LayerNormRow)(n, x, gamma, beta, epsilon, y, mean, rstd);
}

void layerNormGradRow(int64_t n, const float *x, const float *dy,
                      const float *gamma, float mean, float rstd, float *dgamma,
                      float *dbeta, float *dx, float *scratch) {
  HWY_DYNAMIC_DISPATCH(LayerNormGradRow)
  (n, x, dy, gamma, mean, rstd, dgamma, dbeta, dx, scratch);
}

const char *normalizationLoopsTarget() {
  return HWY_DYNAMIC_DISPATCH(NormalizationLoopsTarget)();
}

} // namespace zero::rt::cpu
#endif // HWY_ONCE
