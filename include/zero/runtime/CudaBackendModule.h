//===- CudaBackendModule.h - The CUDA backend as a loadable module -*- C++
//-*-===//
//
// zero-run and gpt2_train must start on machines without CUDA's libraries
// (a CPU cluster, the release bundle's test root) and still offer
// --backend cuda where they are. So the CUDA backend is a module,
// libZeroCudaBackend.so, that links cudart, cuBLAS and NCCL and that
// runtime/backends loads with dlopen only when a CUDA backend is asked for.
// The module and the programs are built together from the same headers; the
// table carries a version so that a stale module is refused, not called.
// Only plain types cross: the module has its own copies of the static
// libraries it links, MLIR among them in the release bundle, and an MLIR
// object made by the program's copy cannot be inspected by the module's
// (KernelParams.h).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CUDABACKENDMODULE_H
#define ZERO_RUNTIME_CUDABACKENDMODULE_H

#include "zero/runtime/CudaBackend.h"
#include "zero/runtime/CudaDevices.h"

namespace zero::rt {

/// What the module exports, through zeroCudaBackendModule().
struct CudaBackendModule {
  /// kCudaBackendModuleVersion of the build that made the module.
  int version;
  absl::StatusOr<std::vector<cuda::CudaDeviceInfo>> (*listDevices)();
  absl::StatusOr<std::unique_ptr<ExecutionBackend>> (*createBackend)(
      Communicator &hostComm, const CudaBackendOptions &options);
  /// OK where cuDNN's fused attention serves train.attention (libcudnn.so.9
  /// loads), else why not.
  absl::Status (*cudnnAttentionStatus)();
};

/// Raised whenever CudaBackendModule or the types it passes change layout.
inline constexpr int kCudaBackendModuleVersion = 3;

/// The module's file name, looked for in the program's ../lib directory
/// (build tree and bundle alike) unless $ZERO_CUDA_BACKEND names the file.
inline constexpr const char *kCudaBackendModuleFile = "libZeroCudaBackend.so";

} // namespace zero::rt

/// The module's one exported symbol.
extern "C" const zero::rt::CudaBackendModule *zeroCudaBackendModule();

#endif // ZERO_RUNTIME_CUDABACKENDMODULE_H
