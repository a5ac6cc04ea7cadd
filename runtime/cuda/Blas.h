//===- Blas.h - cuBLAS and cuBLASLt pieces of the matmul binders -*- C++
//-*-===//
//
// Included by the two files that call cuBLAS (Matmul.cpp, FusedMatmul.cpp),
// so that no other binder sees the cuBLAS headers.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CUDA_BLAS_H
#define ZERO_RUNTIME_CUDA_BLAS_H

#include "CudaSupport.h"

#include <cublasLt.h>
#include <cublas_v2.h>

namespace zero::rt::cuda {

/// OK, or InternalError "KERNEL: WHAT: CUBLAS_STATUS_X (text)".
absl::Status cublasStatus(absl::string_view kernel, cublasStatus_t status,
                          absl::string_view what);

/// The cuBLAS type of a float DType.
inline cudaDataType_t cudaType(DType dtype) {
  switch (dtype) {
  case DType::bf16:
    return CUDA_R_16BF;
  case DType::f16:
    return CUDA_R_16F;
  default:
    return CUDA_R_32F;
  }
}

inline cublasHandle_t blasHandle(const StreamBlas &blas) {
  return static_cast<cublasHandle_t>(blas.blas);
}
inline cublasLtHandle_t ltHandle(const StreamBlas &blas) {
  return static_cast<cublasLtHandle_t>(blas.lt);
}

} // namespace zero::rt::cuda

#endif // ZERO_RUNTIME_CUDA_BLAS_H
