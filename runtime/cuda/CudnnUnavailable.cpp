//===- CudnnUnavailable.cpp - Built without cudnn-frontend ----------------===//
//
// Without cudnn-frontend's headers at configure time, train.attention on
// CUDA always takes the built-in kernel of Attention.cu.
//
//===----------------------------------------------------------------------===//

#include "CudaSupport.h"

namespace zero::rt::cuda {

absl::Status cudnnAttentionStatus() {
  return absl::UnavailableError(
      "built without cudnn-frontend (scripts/setup.sh installs it)");
}

absl::StatusOr<std::optional<KernelFn>> bindCudnnAttention(const BindRequest &,
                                                           cudaStream_t) {
  return std::optional<KernelFn>();
}

} // namespace zero::rt::cuda
