//===- CastLoops.h - Vectorized f32 <-> bf16 / f16 conversions --*- C++ -*-===//
//
// The conversions behind loadFloats/storeFloats (KernelSupport.h), and so
// behind train.cast and every kernel that reads or writes bf16 or f16,
// vectorized with Highway for the best instruction set of the running CPU.
// Each gives exactly the bits of the scalar conversions in DType.h on every
// target, NaN included: f32 -> bf16 and f32 -> f16 round to nearest even,
// a NaN becomes a quiet NaN of its sign (bf16 keeps the top of the payload
// with the quiet bit set, f16 becomes the canonical 0x7e00), values from
// 65520 up become an f16 infinity, and f32 subnormals round into f16's
// subnormals; bf16 -> f32 is exact, and f16 -> f32 is exact except that
// every NaN widens to the canonical quiet NaN of its sign. The arithmetic
// is integer (plus one exact scaling and a round-to-nearest-even for f16
// subnormals), not the CPU's conversion instructions, whose NaN handling
// differs from the scalar code and which not every target has; the last,
// partial vector goes through the same code on a padded copy.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CPU_CASTLOOPS_H
#define ZERO_RUNTIME_CPU_CASTLOOPS_H

#include <cstdint>

namespace zero::rt::cpu {

/// dst[i] = bf16ToFloat(src[i]) for i < n.
void bf16ToFloatBlock(int64_t n, const uint16_t *src, float *dst);
/// dst[i] = floatToBf16(src[i]) for i < n.
void floatToBf16Block(int64_t n, const float *src, uint16_t *dst);
/// dst[i] = f16ToFloat(src[i]) for i < n.
void f16ToFloatBlock(int64_t n, const uint16_t *src, float *dst);
/// dst[i] = floatToF16(src[i]) for i < n.
void floatToF16Block(int64_t n, const float *src, uint16_t *dst);

/// The name of the instruction set these loops run with here ("AVX2", ...).
const char *castLoopsTarget();

} // namespace zero::rt::cpu

#endif // ZERO_RUNTIME_CPU_CASTLOOPS_H
