//===- Matmul.cpp - Batched matrix product over cuBLAS --------------------===//
//
// cublasGemmStridedBatchedEx with f32 accumulation (CUBLAS_COMPUTE_32F):
// bf16 and f16 operands run on tensor cores, f32 operands stay full f32 (no
// TF32), so results differ from the CPU's only in summation order. Row-major
// C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T, so
// no operand is ever copied or transposed.
//
// cuBLAS takes both operands in one type, and the result in that type or
// f32. Other combinations (a bf16 weight times an f32 activation, an f16
// result of bf16 operands) widen the odd operands into f32 scratch and/or
// compute into f32 scratch that is rounded once on store: the CPU kernel's
// arithmetic, on the GPU.
//
// The matmuls bound to a stream share its cuBLAS handle and workspace
// (StreamBlas), allocated at bind time, so a call never allocates (and can
// be captured into a CUDA graph).
//
//===----------------------------------------------------------------------===//

#include "Blas.h"
#include "zero/support/Status.h"

#include <climits>

namespace zero::rt::cuda {
namespace {

using Ins = absl::Span<const void *const>;
using Outs = absl::Span<void *const>;

/// Everything a call reads, fixed at bind time.
struct Plan {
  int64_t m, n, k, batch, rowsPerCall;
  bool ta, tb, sharedRhs, foldBatch;
  DType lhsType, rhsType, outType;
  DType gemmA, gemmB, gemmC; // The types cuBLAS sees.
  int64_t lhsCount, rhsCount, outCount;
  int64_t lhsOffset, rhsOffset, outOffset; // Scratch regions (bytes).
};

} // namespace

absl::StatusOr<KernelFn> bindMatmul(const BindRequest &request,
                                    cudaStream_t stream) {
  const TensorSpec &lhs = request.ins[0], &rhs = request.ins[1],
                   &out = request.outs[0];
  ZERO_ASSIGN_OR_RETURN(bool transA, cpu::getFlag(request, "transpose_a"));
  ZERO_ASSIGN_OR_RETURN(bool transB, cpu::getFlag(request, "transpose_b"));
  Plan plan{};
  size_t lr = lhs.shape.size(), rr = rhs.shape.size();
  plan.ta = transA;
  plan.tb = transB;
  plan.m = plan.ta ? lhs.shape[lr - 1] : lhs.shape[lr - 2];
  plan.k = plan.ta ? lhs.shape[lr - 2] : lhs.shape[lr - 1];
  plan.n = plan.tb ? rhs.shape[rr - 2] : rhs.shape[rr - 1];
  plan.sharedRhs = rr == 2 && lr > 2;
  plan.batch = 1;
  for (size_t d = 0; d + 2 < lr; ++d)
    plan.batch *= lhs.shape[d];
  // A linear layer on [B, T, K] x [K, N] is one [B*T, K] x [K, N] product.
  plan.foldBatch = plan.sharedRhs && !plan.ta;
  plan.rowsPerCall = plan.foldBatch ? plan.m * plan.batch : plan.m;
  if (plan.batch > INT_MAX)
    return request.invalid("has a batch beyond cuBLAS's int range");

  plan.lhsType = lhs.dtype;
  plan.rhsType = rhs.dtype;
  plan.outType = out.dtype;
  plan.lhsCount = lhs.numElements();
  plan.rhsCount = rhs.numElements();
  plan.outCount = out.numElements();
  plan.gemmA = lhs.dtype;
  plan.gemmB = rhs.dtype;
  if (plan.gemmA != plan.gemmB)
    plan.gemmA = plan.gemmB = DType::f32;
  plan.gemmC = out.dtype == plan.gemmA ? out.dtype : DType::f32;
  // Scratch: widened operands, then the f32 result.
  int64_t bytes = 0;
  auto region = [&](bool needed, int64_t count) {
    int64_t offset = bytes;
    if (needed)
      bytes += (count * 4 + 255) / 256 * 256;
    return offset;
  };
  plan.lhsOffset = region(plan.gemmA != plan.lhsType, plan.lhsCount);
  plan.rhsOffset = region(plan.gemmB != plan.rhsType, plan.rhsCount);
  plan.outOffset = region(plan.gemmC != plan.outType, plan.outCount);

  std::string name(request.name);
  absl::StatusOr<std::shared_ptr<DeviceScratch>> scratch =
      DeviceScratch::allocate(name, bytes);
  if (!scratch.ok())
    return scratch.status();
  ZERO_ASSIGN_OR_RETURN(std::shared_ptr<StreamBlas> blas,
                        getStreamBlas(name, stream));
  return KernelFn([=, scratch = *std::move(scratch), blas = std::move(blas)](
                      Ins ins, Outs outs,
                      const KernelContext &) -> absl::Status {
    if (plan.outCount == 0)
      return absl::OkStatus();
    if (plan.outType == DType::f32 && (outs[0] == ins[0] || outs[0] == ins[1]))
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": the result buffer aliases an operand"));
    char *base = scratch->as<char>();
    const void *a = ins[0], *b = ins[1];
    void *c = plan.gemmC == plan.outType ? outs[0] : base + plan.outOffset;
    if (plan.k == 0)
      return cudaStatus(
          name,
          cudaMemsetAsync(
              outs[0], 0,
              static_cast<size_t>(plan.outCount * dtypeBytes(plan.outType)),
              stream),
          "zeroing an empty product");
    if (plan.gemmA != plan.lhsType) {
      void *wide = base + plan.lhsOffset;
      ZERO_RETURN_IF_ERROR(launched(
          name, dev::launchUnary(dev::UnaryOp::copy, 1.0f, a, dt(plan.lhsType),
                                 wide, dev::Dt::f32, plan.lhsCount, stream)));
      a = wide;
    }
    if (plan.gemmB != plan.rhsType) {
      void *wide = base + plan.rhsOffset;
      ZERO_RETURN_IF_ERROR(launched(
          name, dev::launchUnary(dev::UnaryOp::copy, 1.0f, b, dt(plan.rhsType),
                                 wide, dev::Dt::f32, plan.rhsCount, stream)));
      b = wide;
    }
    float alpha = 1.0f, beta = 0.0f;
    int lda = static_cast<int>(plan.ta ? plan.m : plan.k);
    int ldb = static_cast<int>(plan.tb ? plan.k : plan.n);
    int calls = plan.foldBatch ? 1 : static_cast<int>(plan.batch);
    ZERO_RETURN_IF_ERROR(cublasStatus(
        name,
        cublasGemmStridedBatchedEx(
            blasHandle(*blas), plan.tb ? CUBLAS_OP_T : CUBLAS_OP_N,
            plan.ta ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(plan.n),
            static_cast<int>(plan.rowsPerCall), static_cast<int>(plan.k),
            &alpha, b, cudaType(plan.gemmB), ldb,
            plan.sharedRhs ? 0 : plan.k * plan.n, a, cudaType(plan.gemmA), lda,
            plan.m * plan.k, &beta, c, cudaType(plan.gemmC),
            static_cast<int>(plan.n), plan.m * plan.n, calls,
            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx"));
    if (plan.gemmC != plan.outType)
      return launched(name,
                      dev::launchUnary(dev::UnaryOp::copy, 1.0f, c,
                                       dev::Dt::f32, outs[0], dt(plan.outType),
                                       plan.outCount, stream));
    return absl::OkStatus();
  });
}

} // namespace zero::rt::cuda
