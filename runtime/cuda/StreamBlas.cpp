//===- StreamBlas.cpp - One cuBLAS state per stream -----------------------===//
//
// A transformer step binds a few hundred matmuls on one or two streams;
// each used to own a cuBLAS handle and a 4 MiB workspace. Matmuls on one
// stream never run at once, so they share one handle pair and one
// workspace of the size cuBLAS recommends for Hopper.
//
//===----------------------------------------------------------------------===//

#include "Blas.h"
#include "zero/support/Status.h"

#include <map>
#include <mutex>

namespace zero::rt::cuda {

absl::Status cublasStatus(absl::string_view kernel, cublasStatus_t status,
                          absl::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return absl::OkStatus();
  return absl::InternalError(absl::StrCat(kernel, ": ", what, ": ",
                                          cublasGetStatusName(status), " (",
                                          cublasGetStatusString(status), ")"));
}

StreamBlas::~StreamBlas() {
  if (blas)
    cublasDestroy(static_cast<cublasHandle_t>(blas));
  if (lt)
    cublasLtDestroy(static_cast<cublasLtHandle_t>(lt));
}

absl::StatusOr<std::shared_ptr<StreamBlas>>
getStreamBlas(absl::string_view kernel, cudaStream_t stream) {
  static std::mutex mutex;
  static std::map<cudaStream_t, std::weak_ptr<StreamBlas>> streams;
  std::lock_guard<std::mutex> lock(mutex);
  if (std::shared_ptr<StreamBlas> shared = streams[stream].lock())
    return shared;
  auto created = std::make_shared<StreamBlas>();
  ZERO_ASSIGN_OR_RETURN(
      created->workspace,
      DeviceScratch::allocate(kernel, StreamBlas::kWorkspaceBytes));
  cublasHandle_t blas = nullptr;
  ZERO_RETURN_IF_ERROR(
      cublasStatus(kernel, cublasCreate(&blas), "cublasCreate"));
  created->blas = blas;
  cublasLtHandle_t lt = nullptr;
  ZERO_RETURN_IF_ERROR(
      cublasStatus(kernel, cublasLtCreate(&lt), "cublasLtCreate"));
  created->lt = lt;
  ZERO_RETURN_IF_ERROR(
      cublasStatus(kernel, cublasSetStream(blas, stream), "cublasSetStream"));
  ZERO_RETURN_IF_ERROR(cublasStatus(
      kernel,
      cublasSetWorkspace(blas, created->workspace->as<void>(),
                         static_cast<size_t>(StreamBlas::kWorkspaceBytes)),
      "cublasSetWorkspace"));
  // No TF32 for f32 operands: f32 matmuls keep f32 accuracy.
  ZERO_RETURN_IF_ERROR(
      cublasStatus(kernel, cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH),
                   "cublasSetMathMode"));
  streams[stream] = created;
  return created;
}

} // namespace zero::rt::cuda
