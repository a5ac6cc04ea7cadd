//===- CudaDevices.cpp - CUDA devices visible to this process -------------===//

#include "zero/runtime/CudaDevices.h"
#include "zero/support/Status.h"

#include "SelfTestKernel.h"

#include "absl/strings/str_cat.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <memory>

namespace zero::cuda {

static absl::Status cudaStatus(cudaError_t error, const char *what) {
  if (error == cudaSuccess)
    return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorName(error),
                                          " (", cudaGetErrorString(error),
                                          ")"));
}

absl::StatusOr<std::vector<CudaDeviceInfo>> listCudaDevices() {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  // No GPU, or no driver at all (build machines): nothing to list.
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver) {
    cudaGetLastError();
    return std::vector<CudaDeviceInfo>{};
  }
  ZERO_RETURN_IF_ERROR(cudaStatus(error, "cudaGetDeviceCount"));
  std::vector<CudaDeviceInfo> devices;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    cudaDeviceProp properties;
    ZERO_RETURN_IF_ERROR(
        cudaStatus(cudaGetDeviceProperties(&properties, ordinal),
                   "cudaGetDeviceProperties"));
    devices.push_back({ordinal, properties.name, properties.major,
                       properties.minor,
                       static_cast<int64_t>(properties.totalGlobalMem),
                       properties.multiProcessorCount});
  }
  return devices;
}

namespace {
struct DeviceFree {
  void operator()(float *pointer) const { cudaFree(pointer); }
};
using DeviceBuffer = std::unique_ptr<float, DeviceFree>;

absl::StatusOr<DeviceBuffer> allocate(int n) {
  float *pointer = nullptr;
  ZERO_RETURN_IF_ERROR(cudaStatus(
      cudaMalloc(reinterpret_cast<void **>(&pointer), n * sizeof(float)),
      "cudaMalloc"));
  return DeviceBuffer(pointer);
}
} // namespace

absl::Status runKernelSelfTest(int ordinal) {
  ZERO_RETURN_IF_ERROR(cudaStatus(cudaSetDevice(ordinal), "cudaSetDevice"));
  constexpr int n = 4099; // Not a multiple of the block size.
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  absl::StatusOr<DeviceBuffer> deviceX = allocate(n), deviceY = allocate(n);
  if (!deviceX.ok())
    return deviceX.status();
  if (!deviceY.ok())
    return deviceY.status();
  size_t bytes = n * sizeof(float);
  for (absl::Status status :
       {cudaStatus(
            cudaMemcpy(deviceX->get(), x.data(), bytes, cudaMemcpyHostToDevice),
            "cudaMemcpy to device"),
        cudaStatus(
            cudaMemcpy(deviceY->get(), y.data(), bytes, cudaMemcpyHostToDevice),
            "cudaMemcpy to device"),
        cudaStatus(
            zeroLaunchAxpy(2.0f, deviceX->get(), deviceY->get(), n, nullptr),
            "axpy launch"),
        cudaStatus(
            cudaMemcpy(y.data(), deviceY->get(), bytes, cudaMemcpyDeviceToHost),
            "cudaMemcpy to host")})
    if (!status.ok())
      return status;
  for (int i = 0; i < n; ++i)
    if (std::fabs(y[i] - (2.0f * i + 1.0f)) > 0.0f)
      return absl::InternalError(absl::StrCat("self-test kernel computed y[", i,
                                              "] = ", y[i], ", expected ",
                                              2.0f * i + 1.0f));
  return absl::OkStatus();
}

} // namespace zero::cuda
