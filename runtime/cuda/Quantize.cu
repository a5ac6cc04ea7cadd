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
// inside a byte whose other nibble is its neighbour's, so int4 takes two
// launches: the first writes each block's scale and inverse (L / largest,
// 0 for a block of zero codes), the second writes every byte once, from
// its two elements and their blocks' inverses. No atomics: an atomic on the
// word around a byte reached past the buffer's end (compute-sanitizer's
// memcheck, on the first GPU check) and raced with whatever shared that
// word in the arena.
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

/// One thread block per quantization block: its scale, and either its int8
/// codes or (int4) its inverse for packInt4Kernel.
__global__ void quantizeKernel(const void *x, Dt type, int64_t segmentLength,
                               int64_t block, int64_t blocksPerSegment,
                               int bits, int8_t *codes, float *scales,
                               float *inverses) {
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
  if (bits == 4) {
    if (threadIdx.x == 0)
      inverses[index] = inverse;
    return;
  }
  for (int64_t i = threadIdx.x; i < count; i += kThreads)
    codes[begin + i] =
        zero ? 0
             : static_cast<int8_t>(
                   codeOf(loadF(x, type, begin + i), inverse, largestCode));
}

/// Every byte of the int4 codes, once: its even element in the low nibble,
/// the odd one (where the segment has it) in the high nibble.
__global__ void packInt4Kernel(const void *x, Dt type, int64_t segmentLength,
                               int64_t segmentBytes, int64_t block,
                               int64_t blocksPerSegment, const float *inverses,
                               int64_t bytes, uint8_t *codes) {
  for (int64_t b = globalThread(); b < bytes; b += globalStride()) {
    int64_t segment = b / segmentBytes;
    unsigned packed = 0;
    for (int64_t half = 0; half < 2; ++half) {
      int64_t element = 2 * (b % segmentBytes) + half;
      if (element >= segmentLength)
        break;
      float inverse = inverses[segment * blocksPerSegment + element / block];
      int code = inverse == 0.0f
                     ? 0
                     : codeOf(loadF(x, type, segment * segmentLength + element),
                              inverse, 7.0f);
      packed |= (static_cast<unsigned>(code) & 0xfu) << (4 * half);
    }
    codes[b] = static_cast<uint8_t>(packed);
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

int64_t quantizeScratchFloats(int64_t segments, int64_t segmentLength,
                              int64_t block, int bits) {
  return bits == 4 ? segments * ((segmentLength + block - 1) / block) : 0;
}

cudaError_t launchQuantize(const void *x, Dt type, int64_t segments,
                           int64_t segmentLength, int64_t block, int bits,
                           int8_t *codes, float *scales, float *scratch,
                           cudaStream_t stream) {
  int64_t blocksPerSegment = (segmentLength + block - 1) / block;
  int64_t blocks = segments * blocksPerSegment;
  if (blocks == 0)
    return cudaSuccess;
  quantizeKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      x, type, segmentLength, block, blocksPerSegment, bits, codes, scales,
      scratch);
  if (bits != 4)
    return cudaGetLastError();
  if (cudaError_t error = cudaGetLastError(); error != cudaSuccess)
    return error;
  int64_t segmentBytes = (segmentLength + 1) / 2;
  int64_t bytes = segments * segmentBytes;
  packInt4Kernel<<<gridFor(bytes), kThreads, 0, stream>>>(
      x, type, segmentLength, segmentBytes, block, blocksPerSegment, scratch,
      bytes, reinterpret_cast<uint8_t *>(codes));
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
