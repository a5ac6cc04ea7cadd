//===- Quantize.cu - Block int8 and int4 quantization on CUDA -------------===//
//
// dist.quantize as one thread block per quantization block (its largest
// magnitude by a block reduction, then the codes), dist.dequantize as a
// grid-stride loop. The arithmetic is the CPU kernels': a block's scale is
// its largest magnitude / L (L = 127 for int8, 7 for int4), a code is x *
// (L / largest) rounded to nearest even and clamped to [-L, L], a value is
// code * scale, each product rounded once (no contraction); a block holding
// a NaN or an infinity gets a non-finite scale and zero codes.
//
// int4 codes are packed two to a byte, the even element in the low nibble,
// each segment starting on a byte. A quantization block of odd length ends
// inside a byte that its neighbour's thread block also writes, so the codes
// are zeroed first and every nibble is or-ed in with an atomic on its
// 32-bit word: no thread block needs another's scale.
//
//===----------------------------------------------------------------------===//

#include "DeviceCommon.cuh"

namespace zero::cuda::dev {
namespace {

/// The code of `value` in a block whose codes are value * inverse.
__device__ __forceinline__ int codeOf(float value, float inverse,
                                      float largestCode) {
  return __float2int_rn(
      fminf(largestCode, fmaxf(-largestCode, __fmul_rn(value, inverse))));
}

/// Ors `nibble` (0-15) into the low (even `element`) or high nibble of the
/// byte holding `element`'s int4 code, through an atomic on its word.
__device__ __forceinline__ void orNibble(uint8_t *segmentBytes, int64_t element,
                                         unsigned nibble) {
  uintptr_t address = reinterpret_cast<uintptr_t>(segmentBytes + element / 2);
  unsigned shift =
      8 * static_cast<unsigned>(address % 4) + (element % 2 ? 4u : 0u);
  atomicOr(reinterpret_cast<unsigned *>(address - address % 4),
           nibble << shift);
}

__global__ void quantizeKernel(const void *x, Dt type, int64_t segmentLength,
                               int64_t segmentBytes, int64_t block,
                               int64_t blocksPerSegment, int bits,
                               int8_t *codes, float *scales) {
  __shared__ float shared[kThreads / 32];
  float largestCode = bits == 4 ? 7.0f : 127.0f;
  int64_t index = blockIdx.x;
  int64_t segment = index / blocksPerSegment;
  int64_t inSegment = index % blocksPerSegment;
  int64_t first = inSegment * block; // within the segment
  int64_t begin = segment * segmentLength + first;
  int64_t count = min(block, segmentLength - first);
  float largest = 0.0f, nan = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += kThreads) {
    float value = loadF(x, type, begin + i);
    if (isnan(value))
      nan = 1.0f;
    largest = fmaxf(largest, fabsf(value));
  }
  largest = blockMax(largest, shared);
  nan = blockMax(nan, shared);
  float scale = nan != 0.0f ? NAN : largest / largestCode;
  if (threadIdx.x == 0)
    scales[index] = scale;
  bool zero = !isfinite(scale) || largest == 0.0f;
  float inverse = zero ? 0.0f : largestCode / largest;
  if (bits == 8) {
    for (int64_t i = threadIdx.x; i < count; i += kThreads)
      codes[begin + i] =
          zero ? 0
               : static_cast<int8_t>(
                     codeOf(loadF(x, type, begin + i), inverse, largestCode));
    return;
  }
  if (zero) // the bytes are zeroed already
    return;
  auto *bytes = reinterpret_cast<uint8_t *>(codes) + segment * segmentBytes;
  for (int64_t i = threadIdx.x; i < count; i += kThreads) {
    int code = codeOf(loadF(x, type, begin + i), inverse, largestCode);
    orNibble(bytes, first + i, static_cast<unsigned>(code) & 0xfu);
  }
}

__global__ void dequantizeKernel(const int8_t *codes, const float *scales,
                                 int64_t segmentLength, int64_t segmentBytes,
                                 int64_t block, int64_t blocksPerSegment,
                                 int bits, int64_t count, void *y, Dt type) {
  for (int64_t i = globalThread(); i < count; i += globalStride()) {
    int64_t segment = i / segmentLength;
    int64_t element = i % segmentLength;
    int64_t scale = segment * blocksPerSegment + element / block;
    int code = codes[i];
    if (bits == 4) {
      unsigned byte =
          static_cast<uint8_t>(codes[segment * segmentBytes + element / 2]);
      int nibble = static_cast<int>(element % 2 ? byte >> 4 : byte & 0xfu);
      code = nibble >= 8 ? nibble - 16 : nibble;
    }
    storeF(y, type, i, __fmul_rn(static_cast<float>(code), scales[scale]));
  }
}

} // namespace

cudaError_t launchQuantize(const void *x, Dt type, int64_t segments,
                           int64_t segmentLength, int64_t block, int bits,
                           int8_t *codes, float *scales, cudaStream_t stream) {
  int64_t blocksPerSegment = (segmentLength + block - 1) / block;
  int64_t blocks = segments * blocksPerSegment;
  if (blocks == 0)
    return cudaSuccess;
  int64_t segmentBytes = (segmentLength * bits + 7) / 8;
  if (bits == 4)
    if (cudaError_t error = cudaMemsetAsync(
            codes, 0, static_cast<size_t>(segments * segmentBytes), stream);
        error != cudaSuccess)
      return error;
  quantizeKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      x, type, segmentLength, segmentBytes, block, blocksPerSegment, bits,
      codes, scales);
  return cudaGetLastError();
}

cudaError_t launchDequantize(const int8_t *codes, const float *scales,
                             int64_t segments, int64_t segmentLength,
                             int64_t block, int bits, void *y, Dt type,
                             cudaStream_t stream) {
  int64_t count = segments * segmentLength;
  if (count == 0)
    return cudaSuccess;
  dequantizeKernel<<<gridFor(count), kThreads, 0, stream>>>(
      codes, scales, segmentLength, (segmentLength * bits + 7) / 8, block,
      (segmentLength + block - 1) / block, bits, count, y, type);
  return cudaGetLastError();
}

} // namespace zero::cuda::dev
