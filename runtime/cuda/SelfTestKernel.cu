//===- SelfTestKernel.cu - A kernel that proves the toolchain works -------===//

#include "SelfTestKernel.h"

namespace {
__global__ void axpyKernel(float alpha, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = alpha * x[i] + y[i];
}
} // namespace

cudaError_t zeroLaunchAxpy(float alpha, const float *x, float *y, int n,
                           cudaStream_t stream) {
  constexpr int threads = 256;
  axpyKernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(alpha, x, y,
                                                                  n);
  return cudaGetLastError();
}
