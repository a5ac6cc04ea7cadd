//===- BackendSelection.cpp - Picks an execution backend from flags -------===//
//
// Shared by zero-run and gpt2_train. ZERO_BACKENDS_HAS_CUDA is defined where
// ZeroRuntimeCuda is built and linked (runtime/backends/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/BackendSelection.h"

#ifdef ZERO_BACKENDS_HAS_CUDA
#include "zero/runtime/CudaBackend.h"
#include "zero/runtime/CudaDevices.h"
#endif

#include "absl/strings/str_cat.h"

#include <vector>

using namespace zero::rt;

bool zero::rt::cudaBackendsBuilt() {
#ifdef ZERO_BACKENDS_HAS_CUDA
  return true;
#else
  return false;
#endif
}

absl::Status zero::rt::checkBackendChoice(const BackendChoice &choice,
                                          bool probeDevices) {
  const std::string &backend = choice.name;
  if (backend != "cpu" && backend != "cuda" && backend != "cuda-host-staged")
    return absl::InvalidArgumentError(
        absl::StrCat("--backend must be cpu, cuda or cuda-host-staged, got '",
                     backend, "'"));
  if (choice.cudaGraph && backend != "cuda")
    return absl::InvalidArgumentError(
        "--cuda-graph needs --backend cuda (NCCL): host-staged and CPU "
        "collectives run on the host, which a CUDA graph cannot capture");
  if (choice.deviceSet && backend == "cpu")
    return absl::InvalidArgumentError(
        "--device needs --backend cuda or cuda-host-staged");
  if (choice.device < -1)
    return absl::InvalidArgumentError("--device must be 0 or more");
  if (backend == "cuda" && choice.deterministic)
    return absl::InvalidArgumentError(
        "--deterministic needs rank-order reductions, which NCCL does not "
        "make: use --backend cuda-host-staged (or cpu)");
  if (backend == "cpu" || !probeDevices)
    return absl::OkStatus();
#ifdef ZERO_BACKENDS_HAS_CUDA
  absl::StatusOr<std::vector<cuda::CudaDeviceInfo>> devices =
      cuda::listCudaDevices();
  if (!devices.ok())
    return absl::Status(
        devices.status().code(),
        absl::StrCat("--backend ", backend, ": ", devices.status().message()));
  if (devices->empty())
    return absl::FailedPreconditionError(
        absl::StrCat("--backend ", backend,
                     ": no CUDA device is visible to this process (use "
                     "--backend cpu)"));
  return absl::OkStatus();
#else
  return absl::FailedPreconditionError(
      absl::StrCat("--backend ", backend, ": this ", choice.program,
                   " was built without CUDA (no nvcc at configure time, or "
                   "ZERO_ENABLE_CUDA=OFF)"));
#endif
}

absl::StatusOr<std::unique_ptr<ExecutionBackend>>
zero::rt::createBackend(Communicator &comm, const BackendChoice &choice) {
  if (choice.name == "cpu")
    return createCpuBackend(comm);
#ifdef ZERO_BACKENDS_HAS_CUDA
  CudaBackendOptions options;
  options.collectives = choice.name == "cuda"
                            ? CudaBackendOptions::Collectives::nccl
                            : CudaBackendOptions::Collectives::hostStaged;
  options.device = choice.device;
  options.cudaGraph = choice.cudaGraph;
  options.comm.deterministic = choice.deterministic;
  options.comm.timeoutSeconds = choice.timeoutSeconds;
  absl::StatusOr<std::unique_ptr<ExecutionBackend>> backend =
      createCudaBackend(comm, options);
  if (!backend.ok())
    return absl::Status(backend.status().code(),
                        absl::StrCat("--backend ", choice.name, ": ",
                                     backend.status().message()));
  return backend;
#else
  return absl::UnimplementedError(absl::StrCat("--backend ", choice.name,
                                               ": this ", choice.program,
                                               " was built without CUDA"));
#endif
}
