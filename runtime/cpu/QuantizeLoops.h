//===- QuantizeLoops.h - Vectorized block quantization ----*- C++ -*-===//
//
// The loops behind dist.quantize and dist.dequantize, vectorized with
// Highway. A block's scale is its largest magnitude / L (L = 127 for int8,
// 7 for int4); an element's code is x * (L / largest magnitude) rounded to
// the nearest integer,
// ties to even, so |x - code * scale| is at most half the scale (plus the
// rounding of the two products). Every target gives the same bits: the
// arithmetic is one multiply and one round per element, without
// contraction, and the last, partial vector goes through the same code on
// a padded copy.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CPU_QUANTIZELOOPS_H
#define ZERO_RUNTIME_CPU_QUANTIZELOOPS_H

#include <cstdint>

namespace zero::rt::cpu {

/// Quantizes x[0, n) as one block into codes[0, n) in [-largestCode,
/// largestCode] (127 for int8, 7 for int4); returns its scale, the largest
/// magnitude over `largestCode` (0 for a block of zeros, whose codes are 0). A
/// NaN or infinity in the block gives a non-finite scale, which the caller
/// reports.
float quantizeBlock(int64_t n, const float *x, int8_t *codes,
                    float largestCode);

/// x[i] = codes[i] * scale for i < n.
void dequantizeBlock(int64_t n, const int8_t *codes, float scale, float *x);

/// bytes[k] = (codes[2k] & 0xf) | codes[2k + 1] << 4 for k < pairs: int4
/// codes in [-8, 7], the even one in the low nibble.
void packNibblePairs(int64_t pairs, const int8_t *codes, uint8_t *bytes);

/// The inverse of packNibblePairs, sign-extending each nibble.
void unpackNibblePairs(int64_t pairs, const uint8_t *bytes, int8_t *codes);

/// The int4 code a nibble (0-15, two's complement) holds.
inline int8_t signExtendNibble(int nibble) {
  return static_cast<int8_t>(nibble >= 8 ? nibble - 16 : nibble);
}

} // namespace zero::rt::cpu

#endif // ZERO_RUNTIME_CPU_QUANTIZELOOPS_H
