//===- FusedMatmul.cpp - Linear layers through cuBLASLt epilogues ---------===//
//
// Each fused matmul (TrainFusedOps.td) is one cublasLtMatmul whose epilogue
// does what followed the matmul, while its output is still in registers:
//
//   train.matmul_bias       CUBLASLT_EPILOGUE_BIAS
//   train.matmul_bias_gelu  CUBLASLT_EPILOGUE_GELU_AUX_BIAS (pre as the aux)
//   train.matmul_gelu_grad  CUBLASLT_EPILOGUE_DGELU (pre as the aux)
//   train.matmul_bias_grad  CUBLASLT_EPILOGUE_BGRADA
//
// Row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so
// cuBLASLt's A is our right operand and its "rows of D" are our output
// features: the bias, the bias gradient (summed over cuBLASLt's k, our
// rows, of its A: BGRADA) and the aux matrix all run along them.
//
// The epilogue computes in f32 before rounding, where the chain (and the
// CPU) rounds the matmul's result to the storage type first, and cuBLASLt's
// GELU is the tanh form. So the fused op matches the CPU to the tolerance of
// a bf16 matmul, not bit for bit (docs/runtime.md, "CUDA kernels"). Where no
// epilogue serves (the exact, erf GELU; operands of mixed types; an
// auxiliary leading dimension cuBLASLt refuses; no algorithm from the
// heuristic) the fused op runs as its chain of CUDA kernels, as on the CPU;
// and a call whose buffers are not 16-byte aligned, as the algorithm chosen
// at bind time assumes, runs the chain too.
//
//===----------------------------------------------------------------------===//

#include "Blas.h"
#include "zero/support/Status.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

namespace zero::rt::cuda {
namespace {

using Ins = absl::Span<const void *const>;
using Outs = absl::Span<void *const>;

/// The alignment the heuristic is told every matrix and vector has.
constexpr uint32_t kAlignment = 16;

struct LtDescriptors {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  ~LtDescriptors() {
    if (a)
      cublasLtMatrixLayoutDestroy(a);
    if (b)
      cublasLtMatrixLayoutDestroy(b);
    if (d)
      cublasLtMatrixLayoutDestroy(d);
    if (desc)
      cublasLtMatmulDescDestroy(desc);
  }
};

/// One planned cublasLtMatmul: descriptors and the algorithm, chosen once.
struct LtGemm {
  std::shared_ptr<StreamBlas> blas;
  std::shared_ptr<LtDescriptors> descriptors;
  cublasLtMatmulAlgo_t algo{};
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
};

template <typename T>
cublasStatus_t setAttribute(cublasLtMatmulDesc_t desc,
                            cublasLtMatmulDescAttributes_t attribute,
                            const T &value) {
  return cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value));
}

/// The epilogue that serves this request, or nothing (the chain serves).
std::optional<cublasLtEpilogue_t> findEpilogue(const BindRequest &request,
                                               int64_t features) {
  absl::StatusOr<bool> exact = cpu::getFlag(request, "exact");
  if (!exact.ok() || *exact)
    return std::nullopt; // cuBLASLt's GELU is the tanh approximation.
  DType dtype = request.outs[0].dtype;
  for (const TensorSpec &spec : request.ins)
    if (spec.dtype != dtype)
      return std::nullopt;
  for (const TensorSpec &spec : request.outs)
    if (spec.dtype != dtype)
      return std::nullopt;
  // The aux matrix's leading dimension is the features; cuBLASLt needs it
  // to be a multiple of 8.
  bool aux = request.name == "train.matmul_bias_gelu" ||
             request.name == "train.matmul_gelu_grad";
  if (aux && features % 8 != 0)
    return std::nullopt;
  if (request.name == "train.matmul_bias")
    return CUBLASLT_EPILOGUE_BIAS;
  if (request.name == "train.matmul_bias_gelu")
    return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  if (request.name == "train.matmul_gelu_grad")
    return CUBLASLT_EPILOGUE_DGELU;
  if (request.name == "train.matmul_bias_grad")
    return CUBLASLT_EPILOGUE_BGRADA;
  return std::nullopt;
}

/// Plans the request's GEMM with `epilogue`: nothing where cuBLASLt has no
/// algorithm for it (the chain then serves), an error where cuBLASLt fails.
absl::StatusOr<std::optional<LtGemm>> planGemm(const BindRequest &request,
                                               cublasLtEpilogue_t epilogue,
                                               cudaStream_t stream) {
  const TensorSpec &lhs = request.ins[0], &rhs = request.ins[1];
  ZERO_ASSIGN_OR_RETURN(bool ta, cpu::getFlag(request, "transpose_a"));
  ZERO_ASSIGN_OR_RETURN(bool tb, cpu::getFlag(request, "transpose_b"));
  // A batched left operand is folded into rows (the verifier's rule).
  int64_t lhsCols = lhs.shape.back();
  int64_t lhsRows = lhs.numElements() / std::max<int64_t>(lhsCols, 1);
  int64_t m = ta ? lhsCols : lhsRows, k = ta ? lhsRows : lhsCols;
  int64_t n = tb ? rhs.shape[0] : rhs.shape[1];
  if (m == 0 || n == 0 || k == 0)
    return std::nullopt;

  std::string name(request.name);
  LtGemm gemm;
  gemm.epilogue = epilogue;
  ZERO_ASSIGN_OR_RETURN(gemm.blas, getStreamBlas(name, stream));
  gemm.descriptors = std::make_shared<LtDescriptors>();
  LtDescriptors &d = *gemm.descriptors;
  DType dtype = request.outs[0].dtype;
  cudaDataType_t type = cudaType(dtype);
  // cuBLASLt's A: our right operand, column-major [n, k] (or [k, n]
  // transposed); its B: our left operand, [k, m] (or [m, k] transposed);
  // D: [n, m], our row-major [m, n].
  ZERO_RETURN_IF_ERROR(cublasStatus(
      name, cublasLtMatmulDescCreate(&d.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
      "cublasLtMatmulDescCreate"));
  cublasOperation_t opA = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  ZERO_RETURN_IF_ERROR(
      cublasStatus(name, setAttribute(d.desc, CUBLASLT_MATMUL_DESC_TRANSA, opA),
                   "setting TRANSA"));
  ZERO_RETURN_IF_ERROR(
      cublasStatus(name, setAttribute(d.desc, CUBLASLT_MATMUL_DESC_TRANSB, opB),
                   "setting TRANSB"));
  ZERO_RETURN_IF_ERROR(cublasStatus(
      name, setAttribute(d.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue),
      "setting the epilogue"));
  int32_t vectorType = static_cast<int32_t>(type);
  if (epilogue != CUBLASLT_EPILOGUE_DGELU)
    ZERO_RETURN_IF_ERROR(cublasStatus(
        name,
        setAttribute(d.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, vectorType),
        "setting the bias type"));
  if (epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
      epilogue == CUBLASLT_EPILOGUE_DGELU)
    ZERO_RETURN_IF_ERROR(cublasStatus(
        name, setAttribute(d.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, n),
        "setting the aux leading dimension"));
  auto layout = [&](cublasLtMatrixLayout_t *target, int64_t rows,
                    int64_t cols) {
    return cublasStatus(
        name,
        cublasLtMatrixLayoutCreate(target, type, static_cast<uint64_t>(rows),
                                   static_cast<uint64_t>(cols), rows),
        "cublasLtMatrixLayoutCreate");
  };
  ZERO_RETURN_IF_ERROR(layout(&d.a, tb ? k : n, tb ? n : k));
  ZERO_RETURN_IF_ERROR(layout(&d.b, ta ? m : k, ta ? k : m));
  ZERO_RETURN_IF_ERROR(layout(&d.d, n, m));

  cublasLtMatmulPreference_t preference = nullptr;
  ZERO_RETURN_IF_ERROR(cublasStatus(name,
                                    cublasLtMatmulPreferenceCreate(&preference),
                                    "cublasLtMatmulPreferenceCreate"));
  uint64_t workspace = StreamBlas::kWorkspaceBytes;
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
      sizeof(workspace));
  for (cublasLtMatmulPreferenceAttributes_t attribute :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatmulPreferenceSetAttribute(
          preference, attribute, &kAlignment, sizeof(kAlignment));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(ltHandle(*gemm.blas), d.desc, d.a,
                                            d.b, d.d, d.d, preference, 1,
                                            &result, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  // No algorithm for this epilogue and shape is not an error: the chain
  // serves.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || found == 0)
    return std::nullopt;
  ZERO_RETURN_IF_ERROR(
      cublasStatus(name, status, "cublasLtMatmulAlgoGetHeuristic"));
  gemm.algo = result.algo;
  return std::optional<LtGemm>(std::move(gemm));
}

bool aligned(const void *pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % kAlignment == 0;
}

} // namespace

absl::StatusOr<KernelFn> bindFusedMatmul(const BindRequest &request,
                                         cudaStream_t stream) {
  // The chain, for what no epilogue serves and for unaligned buffers.
  ZERO_ASSIGN_OR_RETURN(KernelFn chain,
                        cpu::bindMatmulChain(request, cudaParts(stream)));
  int64_t features = request.outs[0].shape.back();
  std::optional<cublasLtEpilogue_t> epilogue = findEpilogue(request, features);
  if (!epilogue)
    return chain;
  ZERO_ASSIGN_OR_RETURN(std::optional<LtGemm> planned,
                        planGemm(request, *epilogue, stream));
  if (!planned)
    return chain;
  std::string name(request.name);
  return KernelFn([name, chain = std::move(chain), gemm = *std::move(planned),
                   stream](Ins ins, Outs outs,
                           const KernelContext &context) -> absl::Status {
    // Operands: lhs, rhs, then the bias (matmul_bias, _gelu) or pre
    // (matmul_gelu_grad). Results: the output, then pre (matmul_bias_gelu)
    // or the bias gradient (matmul_bias_grad).
    for (const void *pointer : ins)
      if (!aligned(pointer))
        return chain(ins, outs, context);
    for (void *pointer : outs)
      if (!aligned(pointer))
        return chain(ins, outs, context);
    cublasLtMatmulDesc_t desc = gemm.descriptors->desc;
    const void *vector = nullptr, *aux = nullptr;
    switch (gemm.epilogue) {
    case CUBLASLT_EPILOGUE_BIAS:
      vector = ins[2];
      break;
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
      vector = ins[2];
      aux = outs[1];
      break;
    case CUBLASLT_EPILOGUE_DGELU:
      aux = ins[2];
      break;
    default: // CUBLASLT_EPILOGUE_BGRADA
      vector = outs[1];
      break;
    }
    if (vector)
      ZERO_RETURN_IF_ERROR(cublasStatus(
          name, setAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, vector),
          "setting the bias pointer"));
    if (aux)
      ZERO_RETURN_IF_ERROR(cublasStatus(
          name,
          setAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux),
          "setting the aux pointer"));
    float alpha = 1.0f, beta = 0.0f;
    const LtDescriptors &d = *gemm.descriptors;
    return cublasStatus(
        name,
        cublasLtMatmul(ltHandle(*gemm.blas), desc, &alpha, ins[1], d.a, ins[0],
                       d.b, &beta, outs[0], d.d, outs[0], d.d, &gemm.algo,
                       gemm.blas->workspace->as<void>(),
                       static_cast<size_t>(StreamBlas::kWorkspaceBytes),
                       stream),
        "cublasLtMatmul");
  });
}

} // namespace zero::rt::cuda
