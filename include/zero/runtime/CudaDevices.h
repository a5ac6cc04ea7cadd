//===- CudaDevices.h - CUDA devices visible to this process ------*- C++
//-*-===//
//
// The first piece of the CUDA backend: which GPUs a rank can use, and a
// check that kernels built for them actually run. A machine without a GPU or
// without a driver has no devices; that is not an error (GPU tests skip).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CUDADEVICES_H
#define ZERO_RUNTIME_CUDADEVICES_H

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zero::cuda {

struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;
  /// Compute capability, e.g. 9.0 for H100/H200.
  int major = 0;
  int minor = 0;
  int64_t totalMemoryBytes = 0;
  int multiprocessors = 0;
};

/// The GPUs visible to this process; empty when there is no GPU or no
/// driver. Other CUDA failures are errors.
absl::StatusOr<std::vector<CudaDeviceInfo>> listCudaDevices();

/// Runs a small kernel on `ordinal` and checks its result, proving that the
/// compiled device code matches the GPU's architecture.
absl::Status runKernelSelfTest(int ordinal);

} // namespace zero::cuda

#endif // ZERO_RUNTIME_CUDADEVICES_H
