//===- SelfTestKernel.h - A kernel that proves the toolchain works -*- C++
//-*-===//
//
// Plain C++ interface to the device code, so that host code using Abseil
// never goes through nvcc.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CUDA_SELFTESTKERNEL_H
#define ZERO_RUNTIME_CUDA_SELFTESTKERNEL_H

#include <cuda_runtime_api.h>

/// y = alpha * x + y on `n` device floats.
cudaError_t zeroLaunchAxpy(float alpha, const float *x, float *y, int n,
                           cudaStream_t stream);

#endif // ZERO_RUNTIME_CUDA_SELFTESTKERNEL_H
