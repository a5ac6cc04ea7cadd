//===- NormalizationLoops.h - Vectorized layer norm rows --------*- C++ -*-===//
//
// Layer norm forward and backward over one row, vectorized with Highway for
// the best instruction set of the running CPU. The results must not depend
// on the instruction set or the vector width (runs at any N, stage or
// offload mode stay bitwise equal), so the row reductions (the mean, the
// variance, the gradient's two row sums) add in one order fixed
// independently of the width:
//
//   - 16 interleaved partial sums: p[k] = (((0 + t[k]) + t[k + 16]) +
//     t[k + 32]) + ..., for k < 16, the terms t[i] of the row in index
//     order (a row of n < 16 leaves some p[k] = 0);
//   - then a fixed tree, halving: q[k] = p[k] + p[k + 8] (k < 8),
//     r[k] = q[k] + q[k + 4] (k < 4), s[k] = r[k] + r[k + 2] (k < 2),
//     sum = s[0] + s[1].
//
// A target holds the 16 partial sums in 16 / lanes vectors (one on
// AVX-512, two on AVX2, four on SSE4), so every target performs the same
// additions; a row's last, partial group of 16 runs through the same vector
// code on a zero-padded copy, the padding masked to +0 (adding +0 to a
// partial sum, which is never -0, changes nothing). Element-wise parts use
// separate multiplies and adds, and the library is compiled with
// -ffp-contract=off, so no target fuses them (ActivationLoops.h does the
// same for GELU and exp). 16 is the widest f32 vector on x86 (AVX-512), so
// no target needs more than one vector per partial group, and the vector
// loops keep 16 / lanes independent dependency chains.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CPU_NORMALIZATIONLOOPS_H
#define ZERO_RUNTIME_CPU_NORMALIZATIONLOOPS_H

#include <cstdint>

namespace zero::rt::cpu {

/// How many interleaved partial sums a row reduction keeps.
constexpr int64_t kRowSumPartials = 16;

/// The sum of x[0, n) in the fixed order above.
float rowSum(int64_t n, const float *x);

/// One row of layer norm over n > 0 features, with inv = 1 / n (f32):
/// mean = rowSum(x) * inv, c = x - mean, variance = rowSum(c * c) * inv,
/// rstd = 1 / sqrt(variance + epsilon), y = ((c * rstd) * gamma) + beta.
/// y may be x.
void layerNormRow(int64_t n, const float *x, const float *gamma,
                  const float *beta, float epsilon, float *y, float *mean,
                  float *rstd);

/// The gradient of one row: xhat = (x - mean) * rstd, gy = dy * gamma,
/// dgamma += dy * xhat, dbeta += dy, a = rowSum(gy) * inv,
/// b = rowSum(gy * xhat) * inv, dx = rstd * ((gy - a) - xhat * b).
/// `scratch` holds 2n floats; dx may be x or dy.
void layerNormGradRow(int64_t n, const float *x, const float *dy,
                      const float *gamma, float mean, float rstd, float *dgamma,
                      float *dbeta, float *dx, float *scratch);

/// The name of the instruction set these loops run with here ("AVX2", ...).
const char *normalizationLoopsTarget();

} // namespace zero::rt::cpu

#endif // ZERO_RUNTIME_CPU_NORMALIZATIONLOOPS_H
