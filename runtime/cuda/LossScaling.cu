//===- LossScaling.cu - Dynamic loss scaling on CUDA ----------------------===//
//
// train.unscale and train.update_loss_scale. The overflow flag only ever
// goes from 0 to 1, so the threads that find an infinity or NaN may all
// write it in any order and every rank still raises the same flag.
//
//===----------------------------------------------------------------------===//

#include "DeviceCommon.cuh"

namespace zero::cuda::dev {
namespace {

__global__ void unscaleKernel(const void *g, Dt type, int64_t count,
                              const float *scale, float *out, float *overflow) {
  // Multiplying by the reciprocal, as the CPU kernel does.
  float inverse = 1.0f / *scale;
  bool bad = false;
  for (int64_t i = globalThread(); i < count; i += globalStride()) {
    float value = loadF(g, type, i);
    bad |= !isfinite(value);
    out[i] = value * inverse;
  }
  if (bad)
    *overflow = 1.0f;
}

__global__ void updateLossScaleKernel(const float *scale, const float *good,
                                      const float *found, float *newScale,
                                      float *newGood, float growthInterval) {
  float s = *scale, g = *good;
  if (*found != 0.0f) {
    // DeepSpeed's min_loss_scale: below 1 the scale would only shrink
    // gradients that already overflow unscaled.
    s = fmaxf(s * 0.5f, 1.0f);
    g = 0.0f;
  } else if (g + 1.0f >= growthInterval) {
    s *= 2.0f;
    g = 0.0f;
  } else {
    g += 1.0f;
  }
  *newScale = s;
  *newGood = g;
}

} // namespace

cudaError_t launchUnscale(const void *g, Dt type, int64_t count,
                          const float *scale, float *out, float *overflow,
                          cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  unscaleKernel<<<gridFor(count), kThreads, 0, stream>>>(g, type, count, scale,
                                                         out, overflow);
  return cudaGetLastError();
}

cudaError_t launchUpdateLossScale(const float *scale, const float *good,
                                  const float *found, float *newScale,
                                  float *newGood, float growthInterval,
                                  cudaStream_t stream) {
  updateLossScaleKernel<<<1, 1, 0, stream>>>(scale, good, found, newScale,
                                             newGood, growthInterval);
  return cudaGetLastError();
}

} // namespace zero::cuda::dev
