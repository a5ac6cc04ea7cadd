//===- Quantize.cu - Block int8 quantization on CUDA ----------------------===//
//
// dist.quantize as one thread block per quantization block (its largest
// magnitude by a block reduction, then the codes), dist.dequantize as a
// grid-stride loop. The arithmetic is the CPU kernels': a block's scale is
// its largest magnitude / 127, a code is x * (127 / largest) rounded to
// nearest even and clamped to [-127, 127], a value is code * scale, each
// product rounded once (no contraction); a block holding a NaN or an
// infinity gets a non-finite scale and zero codes.
//
//===----------------------------------------------------------------------===//

#include "DeviceCommon.cuh"

namespace zero::cuda::dev {
namespace {

__global__ void quantizeKernel(const void *x, Dt type, int64_t segmentLength,
                               int64_t block, int64_t blocksPerSegment,
                               int8_t *codes, float *scales) {
  __shared__ float shared[kThreads / 32];
  int64_t index = blockIdx.x;
  int64_t inSegment = index % blocksPerSegment;
  int64_t begin =
      (index / blocksPerSegment) * segmentLength + inSegment * block;
  int64_t count = min(block, segmentLength - inSegment * block);
  float largest = 0.0f, nan = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += kThreads) {
    float value = loadF(x, type, begin + i);
    if (isnan(value))
      nan = 1.0f;
    largest = fmaxf(largest, fabsf(value));
  }
  largest = blockMax(largest, shared);
  nan = blockMax(nan, shared);
  float scale = nan != 0.0f ? NAN : largest / 127.0f;
  if (threadIdx.x == 0)
    scales[index] = scale;
  bool zero = !isfinite(scale) || largest == 0.0f;
  float inverse = zero ? 0.0f : 127.0f / largest;
  for (int64_t i = threadIdx.x; i < count; i += kThreads) {
    float scaled = fminf(
        127.0f, fmaxf(-127.0f, __fmul_rn(loadF(x, type, begin + i), inverse)));
    codes[begin + i] = zero ? 0 : static_cast<int8_t>(__float2int_rn(scaled));
  }
}

__global__ void dequantizeKernel(const int8_t *codes, const float *scales,
                                 int64_t segmentLength, int64_t block,
                                 int64_t blocksPerSegment, int64_t count,
                                 void *y, Dt type) {
  for (int64_t i = globalThread(); i < count; i += globalStride()) {
    int64_t segment = i / segmentLength;
    int64_t scale = segment * blocksPerSegment + (i % segmentLength) / block;
    storeF(y, type, i, __fmul_rn(static_cast<float>(codes[i]), scales[scale]));
  }
}

} // namespace

cudaError_t launchQuantize(const void *x, Dt type, int64_t segments,
                           int64_t segmentLength, int64_t block, int8_t *codes,
                           float *scales, cudaStream_t stream) {
  int64_t blocksPerSegment = (segmentLength + block - 1) / block;
  int64_t blocks = segments * blocksPerSegment;
  if (blocks == 0)
    return cudaSuccess;
  quantizeKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      x, type, segmentLength, block, blocksPerSegment, codes, scales);
  return cudaGetLastError();
}

cudaError_t launchDequantize(const int8_t *codes, const float *scales,
                             int64_t segments, int64_t segmentLength,
                             int64_t block, void *y, Dt type,
                             cudaStream_t stream) {
  int64_t count = segments * segmentLength;
  if (count == 0)
    return cudaSuccess;
  dequantizeKernel<<<gridFor(count), kThreads, 0, stream>>>(
      codes, scales, segmentLength, block, (segmentLength + block - 1) / block,
      count, y, type);
  return cudaGetLastError();
}

} // namespace zero::cuda::dev
