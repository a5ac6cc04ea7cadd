//===- Matmul.cpp - Batched matrix product over OpenBLAS ------------------===//
//
// f32 operands go straight to cblas_sgemm. A 16-bit operand is widened into
// f32 scratch that the bound kernel owns, and a 16-bit result is computed in
// f32 scratch and rounded once on store: the same accumulation as f32, one
// rounding per element.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "zero/support/Status.h"

#include <cblas.h>

#include <algorithm>
#include <climits>

namespace zero::rt::cpu {

absl::StatusOr<KernelFn> bindMatmul(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 2, 1));
  const TensorSpec &lhs = request.ins[0], &rhs = request.ins[1],
                   &out = request.outs[0];
  for (const TensorSpec *spec : {&lhs, &rhs, &out})
    ZERO_RETURN_IF_ERROR(checkFloat(request, *spec, "operands and result"));
  ZERO_ASSIGN_OR_RETURN(bool transA, getFlag(request, "transpose_a"));
  ZERO_ASSIGN_OR_RETURN(bool transB, getFlag(request, "transpose_b"));

  size_t lr = lhs.shape.size(), rr = rhs.shape.size();
  if (lr < 2 || rr < 2)
    return request.invalid("needs operands of rank >= 2, got ", specString(lhs),
                           " and ", specString(rhs));
  bool sharedRhs = rr == 2 && lr > 2;
  std::vector<int64_t> batchShape(lhs.shape.begin(), lhs.shape.end() - 2);
  if (!sharedRhs && std::vector<int64_t>(rhs.shape.begin(),
                                         rhs.shape.end() - 2) != batchShape)
    return request.invalid("needs equal batch dimensions or a 2-D right "
                           "operand, got ",
                           specString(lhs), " and ", specString(rhs));
  int64_t m = transA ? lhs.shape[lr - 1] : lhs.shape[lr - 2];
  int64_t k = transA ? lhs.shape[lr - 2] : lhs.shape[lr - 1];
  int64_t k2 = transB ? rhs.shape[rr - 1] : rhs.shape[rr - 2];
  int64_t n = transB ? rhs.shape[rr - 2] : rhs.shape[rr - 1];
  if (k != k2)
    return request.invalid("contracts ", k,
                           " elements of the left operand "
                           "with ",
                           k2, " of the right (", specString(lhs), ", ",
                           specString(rhs), ")");
  std::vector<int64_t> expected = batchShape;
  expected.push_back(m);
  expected.push_back(n);
  ZERO_RETURN_IF_ERROR(checkShape(request, out, expected, "result"));

  int64_t batch = 1;
  for (int64_t extent : batchShape)
    batch *= extent;
  // A linear layer on [B, T, K] x [K, N] is one [B*T, K] x [K, N] product.
  bool foldBatch = sharedRhs && !transA;
  int64_t rowsPerCall = foldBatch ? m * batch : m;
  if (std::max({rowsPerCall, n, k}) > INT_MAX)
    return request.invalid("has a dimension beyond BLAS's int range");

  DType lhsType = lhs.dtype, rhsType = rhs.dtype, outType = out.dtype;
  int64_t lhsCount = lhs.numElements(), rhsCount = rhs.numElements(),
          outCount = out.numElements();
  std::vector<float> lhsScratch(lhsType == DType::f32 ? 0 : lhsCount);
  std::vector<float> rhsScratch(rhsType == DType::f32 ? 0 : rhsCount);
  std::vector<float> outScratch(outType == DType::f32 ? 0 : outCount);
  bool ta = transA, tb = transB;
  std::string name(request.name);

  return KernelFn(
      [=, lhsScratch = std::move(lhsScratch),
       rhsScratch = std::move(rhsScratch), outScratch = std::move(outScratch)](
          absl::Span<const void *const> ins, absl::Span<void *const> outs,
          const KernelContext &) mutable -> absl::Status {
        if (outCount == 0)
          return absl::OkStatus();
        const float *a = static_cast<const float *>(ins[0]);
        const float *b = static_cast<const float *>(ins[1]);
        float *c = static_cast<float *>(outs[0]);
        if (outType == DType::f32 && (outs[0] == ins[0] || outs[0] == ins[1]))
          return absl::InvalidArgumentError(
              absl::StrCat(name, ": the result buffer aliases an operand"));
        if (lhsType != DType::f32) {
          loadFloats(ins[0], lhsType, 0, lhsCount, lhsScratch.data());
          a = lhsScratch.data();
        }
        if (rhsType != DType::f32) {
          loadFloats(ins[1], rhsType, 0, rhsCount, rhsScratch.data());
          b = rhsScratch.data();
        }
        if (outType != DType::f32)
          c = outScratch.data();

        if (k == 0) {
          std::fill_n(c, outCount, 0.0f);
        } else {
          CBLAS_TRANSPOSE opA = ta ? CblasTrans : CblasNoTrans;
          CBLAS_TRANSPOSE opB = tb ? CblasTrans : CblasNoTrans;
          int lda = static_cast<int>(ta ? m : k);
          int ldb = static_cast<int>(tb ? k : n);
          int calls = foldBatch ? 1 : static_cast<int>(batch);
          for (int call = 0; call < calls; ++call)
            cblas_sgemm(CblasRowMajor, opA, opB, static_cast<int>(rowsPerCall),
                        static_cast<int>(n), static_cast<int>(k), 1.0f,
                        a + call * m * k, lda,
                        b + (sharedRhs ? 0 : call * k * n), ldb, 0.0f,
                        c + call * m * n, static_cast<int>(n));
        }
        if (outType != DType::f32)
          storeFloats(outs[0], outType, 0, outCount, c);
        return absl::OkStatus();
      });
}

} // namespace zero::rt::cpu
