//===- UpdateLoops.h - The elementwise loops of the update kernels -*- C++
//-*-===//
//
// The arithmetic of Adam and AdamW over a block of f32 values, vectorized
// with Highway for the best instruction set of the running CPU (SSE4 to
// AVX-512, picked once at run time). Every target computes each element
// with the same IEEE operations in the same order as the scalar formula,
// and the library is compiled with -ffp-contract=off, so no target fuses a
// multiply and an add: the results are the same bits on every CPU and at
// every vector width, which keeps offloaded updates (on the host stream)
// bitwise equal to updates on the compute stream.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CPU_UPDATELOOPS_H
#define ZERO_RUNTIME_CPU_UPDATELOOPS_H

#include <cstdint>

namespace zero::rt::cpu {

/// The step's constants of an Adam or AdamW update.
struct AdamCoefficients {
  /// Adam's L2 term (0 for AdamW), folded into the gradient.
  float wdGrad;
  float beta1, oneMinusBeta1, beta2, oneMinusBeta2;
  /// sqrt(1 - beta2^t), and lr / (1 - beta1^t).
  float correction2Sqrt, stepSize;
  float eps;
  /// AdamW's decoupled decay, 1 - lr * weight_decay (1 for Adam).
  float shrink;
};

/// For i < n: m' = b1 m + (1 - b1) g', v' = b2 v + (1 - b2) g' g',
/// p' = p shrink - stepSize m' / (sqrt(v') / correction2Sqrt + eps), with
/// g' = g + wdGrad p. The outputs may be the inputs (in place).
void adamBlock(const AdamCoefficients &c, int64_t n, const float *p,
               const float *g, const float *m, const float *v, float *newP,
               float *newM, float *newV);

/// The name of the instruction set adamBlock runs with here ("AVX2", ...).
const char *adamBlockTarget();

} // namespace zero::rt::cpu

#endif // ZERO_RUNTIME_CPU_UPDATELOOPS_H
