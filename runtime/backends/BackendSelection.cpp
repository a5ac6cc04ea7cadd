//===- BackendSelection.cpp - Picks an execution backend from flags -------===//
//
// Shared by zero-run and gpt2_train. ZERO_BACKENDS_HAS_CUDA is defined where
// the CUDA backend module is built (runtime/backends/CMakeLists.txt); it is
// loaded only when a CUDA backend is asked for, so that the programs start
// where CUDA's libraries are absent.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/BackendSelection.h"

#ifdef ZERO_BACKENDS_HAS_CUDA
#include "zero/runtime/CudaBackendModule.h"
#include "zero/runtime/InstallPaths.h"
#include "zero/support/Status.h"

#include <dlfcn.h>
#endif

#include "absl/strings/str_cat.h"

#include <cstdlib>
#include <string>
#include <vector>

using namespace zero::rt;

#ifdef ZERO_BACKENDS_HAS_CUDA
/// libZeroCudaBackend.so beside the program (bin/../lib), or
/// $ZERO_CUDA_BACKEND.
static std::string cudaBackendModulePath() {
  if (const char *path = std::getenv("ZERO_CUDA_BACKEND"); path && *path)
    return path;
  absl::StatusOr<std::string> root = installRoot();
  if (!root.ok())
    return kCudaBackendModuleFile;
  return absl::StrCat(*root, "/lib/", kCudaBackendModuleFile);
}

/// Loads the CUDA backend module once; the module stays loaded for the life
/// of the process (CUDA and NCCL do not take kindly to being unloaded).
static absl::StatusOr<const CudaBackendModule *>
loadCudaBackendModule(const std::string &backend) {
  static absl::StatusOr<const CudaBackendModule *> loaded =
      []() -> absl::StatusOr<const CudaBackendModule *> {
    std::string path = cudaBackendModulePath();
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot load the CUDA backend: ", dlerror(),
          " (CUDA 13's cudart, cuBLAS and NCCL must be found: run the "
          "release bundle's programs through bin/zero-env, or add their "
          "directories to LD_LIBRARY_PATH)"));
    using Entry = const CudaBackendModule *(*)();
    auto entry =
        reinterpret_cast<Entry>(dlsym(handle, "zeroCudaBackendModule"));
    const CudaBackendModule *module = entry ? entry() : nullptr;
    if (!module || module->version != kCudaBackendModuleVersion)
      return absl::FailedPreconditionError(absl::StrCat(
          path, " is not the CUDA backend of this build (a stale or foreign ",
          kCudaBackendModuleFile, ")"));
    return module;
  }();
  if (!loaded.ok())
    return absl::Status(
        loaded.status().code(),
        absl::StrCat("--backend ", backend, ": ", loaded.status().message()));
  return loaded;
}
#endif

bool zero::rt::cudaBackendsBuilt() {
#ifdef ZERO_BACKENDS_HAS_CUDA
  return true;
#else
  return false;
#endif
}

const char *zero::rt::getDefaultMachine(const std::string &backend) {
  return backend == "cuda" ? "h100-nvlink-8" : "";
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
  if (choice.cudaGraph && choice.profile)
    return absl::InvalidArgumentError(
        "--profile and --profile-table time each instruction as it is "
        "issued, which a CUDA graph replays as one launch: drop --cuda-graph "
        "(or use Nsight Systems: nsys profile ...)");
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
  ZERO_ASSIGN_OR_RETURN(const CudaBackendModule *module,
                        loadCudaBackendModule(backend));
  absl::StatusOr<std::vector<cuda::CudaDeviceInfo>> devices =
      (module)->listDevices();
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

absl::Status zero::rt::cudnnAttentionStatus(const BackendChoice &choice) {
  if (choice.name == "cpu")
    return absl::UnavailableError("the CPU backend");
#ifdef ZERO_BACKENDS_HAS_CUDA
  ZERO_ASSIGN_OR_RETURN(const CudaBackendModule *module,
                        loadCudaBackendModule(choice.name));
  if (absl::Status status = module->cudnnAttentionStatus(); !status.ok())
    return absl::Status(status.code(),
                        absl::StrCat("cuDNN: ", status.message()));
  return absl::OkStatus();
#else
  return absl::UnavailableError("a build without CUDA");
#endif
}

absl::StatusOr<std::unique_ptr<ExecutionBackend>>
zero::rt::createBackend(Communicator &comm, const BackendChoice &choice) {
  if (choice.name == "cpu")
    return createCpuBackend(comm);
#ifdef ZERO_BACKENDS_HAS_CUDA
  ZERO_ASSIGN_OR_RETURN(const CudaBackendModule *module,
                        loadCudaBackendModule(choice.name));
  CudaBackendOptions options;
  options.collectives = choice.name == "cuda"
                            ? CudaBackendOptions::Collectives::nccl
                            : CudaBackendOptions::Collectives::hostStaged;
  options.device = choice.device;
  options.cudaGraph = choice.cudaGraph;
  options.comm.deterministic = choice.deterministic;
  options.comm.timeoutSeconds = choice.timeoutSeconds;
  absl::StatusOr<std::unique_ptr<ExecutionBackend>> backend =
      (module)->createBackend(comm, options);
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
