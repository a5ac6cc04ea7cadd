//===- CudaBackendModule.cpp - The entry point of libZeroCudaBackend.so ---===//
//
// runtime/backends dlopens this module when a CUDA backend is asked for
// (include/zero/runtime/CudaBackendModule.h says why).
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/CudaBackendModule.h"

namespace zero::rt::cuda {
absl::Status cudnnAttentionStatus(); // CudnnAttention.cpp
} // namespace zero::rt::cuda

extern "C" __attribute__((visibility("default")))
const zero::rt::CudaBackendModule *
zeroCudaBackendModule() {
  static const zero::rt::CudaBackendModule module = {
      zero::rt::kCudaBackendModuleVersion,
      &zero::cuda::listCudaDevices,
      &zero::rt::createCudaBackend,
      &zero::rt::cuda::cudnnAttentionStatus,
  };
  return &module;
}
