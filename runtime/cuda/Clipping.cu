//===- Clipping.cu - Gradient clipping by global norm on CUDA -------------===//
//
// train.sum_squares as per-tensor block partials (a fixed number of blocks
// per tensor, each a fixed tree) and one final in-order sum, so the total
// repeats bit for bit without atomics; train.scale_by_norm reads that total
// on the device, so no host round trip sits between the two.
//
//===----------------------------------------------------------------------===//

#include "DeviceCommon.cuh"

namespace zero::cuda::dev {
namespace {

__global__ void squaresPartialKernel(const void *x, Dt type, int64_t count,
                                     float *partials) {
  __shared__ float shared[kThreads / 32];
  float sum = 0.0f;
  for (int64_t i = globalThread(); i < count; i += globalStride()) {
    float value = loadF(x, type, i);
    sum += value * value;
  }
  sum = blockSum(sum, shared);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = sum;
}

__global__ void sumPartialsKernel(const float *partials, int64_t count,
                                  float *total) {
  __shared__ float shared[kThreads / 32];
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += kThreads)
    sum += partials[i];
  sum = blockSum(sum, shared);
  if (threadIdx.x == 0)
    *total = sum;
}

__global__ void scaleByNormKernel(const void *x, void *y, Dt type,
                                  int64_t count, const float *sumSquares,
                                  double maxNorm) {
  // 1e-6 keeps the factor finite for zero gradients (PyTorch's
  // clip_grad_norm_); below the bound the gradients pass unchanged.
  double bound = maxNorm / (sqrt(static_cast<double>(*sumSquares)) + 1e-6);
  // A NaN norm gives a NaN factor, as PyTorch's clamp and the CPU kernel.
  float factor = static_cast<float>(isnan(bound) || bound < 1.0 ? bound : 1.0);
  for (int64_t i = globalThread(); i < count; i += globalStride())
    storeF(y, type, i, loadF(x, type, i) * factor);
}

} // namespace

int64_t sumSquaresBlocks(int64_t count) {
  // At most 1024 partials per tensor: the final sum stays one small block.
  int64_t blocks = (count + kThreads - 1) / kThreads;
  if (blocks > 1024)
    blocks = 1024;
  return blocks < 1 ? 1 : blocks;
}

cudaError_t launchSquaresPartial(const void *x, Dt type, int64_t count,
                                 float *partials, cudaStream_t stream) {
  squaresPartialKernel<<<static_cast<unsigned>(sumSquaresBlocks(count)),
                         kThreads, 0, stream>>>(x, type, count, partials);
  return cudaGetLastError();
}

cudaError_t launchSumPartials(const float *partials, int64_t count,
                              float *total, cudaStream_t stream) {
  sumPartialsKernel<<<1, kThreads, 0, stream>>>(partials, count, total);
  return cudaGetLastError();
}

cudaError_t launchScaleByNorm(const void *x, void *y, Dt type, int64_t count,
                              const float *sumSquares, double maxNorm,
                              cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  scaleByNormKernel<<<gridFor(count), kThreads, 0, stream>>>(
      x, y, type, count, sumSquares, maxNorm);
  return cudaGetLastError();
}

} // namespace zero::cuda::dev
