//===- ActivationLoops.h - Vectorized exp and GELU loops --------*- C++ -*-===//
//
// The transcendental loops of the CPU step (GELU, sigmoid, SiLU and their
// gradients, the
// exponentials of softmax and of the cross-entropy), vectorized with Highway
// for the best instruction set of the running CPU. The exponential is ours,
// not libm's expf nor Highway's contrib Exp (which fuses multiply-adds on
// targets that have FMA): a Cody-Waite reduction and a degree-6 polynomial
// written with separate multiplies and adds, within 2 ulp of expf. With the
// library compiled with -ffp-contract=off, every target and every vector
// width computes each element with the same IEEE operations, and a block's
// last, partial vector goes through the same code on a padded copy, so a
// result depends neither on the CPU nor on where the element sits: runs at
// any N, stage or offload mode stay bitwise equal (UpdateLoops.h does the
// same for the optimizer updates).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CPU_ACTIVATIONLOOPS_H
#define ZERO_RUNTIME_CPU_ACTIVATIONLOOPS_H

#include <cstdint>

namespace zero::rt::cpu {

/// y[i] = exp(x[i] - shift). Exactly 0 below exp's normal range (x - shift
/// < -87.3, a masked -inf included), NaN for NaN; y may be x.
void expShiftedBlock(int64_t n, const float *x, float shift, float *y);

/// y[i] = GELU(x[i]) with GPT-2's tanh approximation,
/// x s(2u), u = c (x + a x^3); y may be x.
void geluBlock(int64_t n, const float *x, float *y);

/// dx[i] = dy[i] * GELU'(x[i]); dx may be x or dy.
void geluGradBlock(int64_t n, const float *x, const float *dy, float *dx);

/// y[i] = x[i] Phi(x[i]) = 0.5 x (1 + erf(x / sqrt(2))), the exact GELU;
/// y may be x. A scalar loop over libm's erff and expf: Highway has no erf,
/// and one element's result depends only on its value, so runs stay
/// bitwise equal at any N and stage.
void geluExactBlock(int64_t n, const float *x, float *y);

/// dx[i] = dy[i] (Phi(x) + x phi(x)) of the exact GELU; dx may be x or dy.
void geluExactGradBlock(int64_t n, const float *x, const float *dy, float *dx);

/// y[i] = 1 / (1 + exp(-x[i])); y may be x.
void sigmoidBlock(int64_t n, const float *x, float *y);

/// dx[i] = dy[i] * y[i] (1 - y[i]) from sigmoid's result y; dx may be y or
/// dy.
void sigmoidGradBlock(int64_t n, const float *y, const float *dy, float *dx);

/// y[i] = x[i] / (1 + exp(-x[i])); y may be x.
void siluBlock(int64_t n, const float *x, float *y);

/// dx[i] = dy[i] * SiLU'(x[i]); dx may be x or dy.
void siluGradBlock(int64_t n, const float *x, const float *dy, float *dx);

/// The name of the instruction set these loops run with here ("AVX2", ...).
const char *activationLoopsTarget();

} // namespace zero::rt::cpu

#endif // ZERO_RUNTIME_CPU_ACTIVATIONLOOPS_H
