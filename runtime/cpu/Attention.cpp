//===- Attention.cpp - Fused scaled dot-product attention -----------------===//
//
// train.attention and train.attention_grad, one [seq, head_dim] slice (one
// head of one sequence) at a time. A slice's query, key and value are
// widened into f32 scratch the bound kernel owns, its [seq, seq] scores are
// formed there by cblas_sgemm and never leave the kernel: that is what makes
// the op FlashAttention-class for the plan, whose arena holds no scores
// between forward and backward. (On a GPU the scores live in tiles of
// shared memory; on a CPU one slice's fit in cache-sized scratch.)
//
// The forward computes each row's softmax as train.softmax does (max,
// exp(x - max), a fixed-order sum, one reciprocal), and returns the row's
// log-sum-exp. The backward recomputes the probabilities from the scores and
// that log-sum-exp, as FlashAttention's does, so no probability is stored.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "runtime/cpu/ActivationLoops.h"
#include "zero/support/Status.h"

#include <cblas.h>

#include <cmath>

namespace zero::rt::cpu {
namespace {

/// How a query, key or value tensor [..., seq, head_dim] splits into slices.
struct AttentionShape {
  int64_t slices = 1;
  int64_t seq = 0;
  int64_t headDim = 0;
  int64_t sliceElements() const { return seq * headDim; }
};

struct AttentionAttrs {
  float scale = 1.0f;
  bool causal = false;
};

absl::StatusOr<AttentionShape> checkAttentionSpecs(const BindRequest &request,
                                                   size_t sameSpecOperands,
                                                   size_t lseOperand) {
  const TensorSpec &query = request.ins[0];
  if (query.shape.size() < 2)
    return request.invalid("attends over [..., seq, head_dim], got ",
                           specString(query));
  ZERO_RETURN_IF_ERROR(checkFloat(request, query, "query"));
  for (size_t i = 1; i < sameSpecOperands; ++i)
    ZERO_RETURN_IF_ERROR(
        checkSameSpec(request, query, "query", request.ins[i], "operand"));
  AttentionShape shape;
  shape.seq = query.shape[query.shape.size() - 2];
  shape.headDim = query.shape.back();
  for (size_t i = 0; i + 2 < query.shape.size(); ++i)
    shape.slices *= query.shape[i];
  const TensorSpec &lse = lseOperand < request.ins.size()
                              ? request.ins[lseOperand]
                              : request.outs[1];
  std::vector<int64_t> rows(query.shape.begin(), query.shape.end() - 1);
  if (lse.dtype != DType::f32 || lse.shape != rows)
    return request.invalid("needs an f32 log-sum-exp of shape ",
                           shapeString(rows), ", got ", specString(lse));
  return shape;
}

absl::StatusOr<AttentionAttrs> getAttentionAttrs(const BindRequest &request) {
  ZERO_ASSIGN_OR_RETURN(double scale, getF64(request, "scale"));
  ZERO_ASSIGN_OR_RETURN(bool causal, getFlag(request, "causal"));
  if (!(scale > 0.0))
    return request.invalid("needs scale > 0, got ", scale);
  return AttentionAttrs{static_cast<float>(scale), causal};
}

/// C[m, n] = A[m, k] B (B[k, n], or B^T with B [n, k]), all row-major f32.
void gemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
          const float *a, const float *b, float *c) {
  cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
              transposeB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(transposeA ? m : k), b,
              static_cast<int>(transposeB ? k : n), 0.0f, c,
              static_cast<int>(n));
}

/// Keys a query row attends to: all, or with `causal` those up to its own
/// position.
int64_t keysOf(const AttentionAttrs &attrs, int64_t seq, int64_t row) {
  return attrs.causal ? row + 1 : seq;
}

/// scores[i, j] = scale q_i . k_j for the keys query row i attends to; the
/// rest of each row is left as the product wrote it.
void scaledScores(const AttentionShape &shape, const AttentionAttrs &attrs,
                  const float *q, const float *k, float *scores) {
  int64_t seq = shape.seq;
  gemm(false, true, seq, seq, shape.headDim, q, k, scores);
  for (int64_t i = 0; i < seq; ++i) {
    float *row = scores + i * seq;
    int64_t keys = keysOf(attrs, seq, i);
    for (int64_t j = 0; j < keys; ++j)
      row[j] *= attrs.scale;
  }
}

} // namespace

absl::StatusOr<KernelFn> bindAttention(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 3, 2));
  ZERO_ASSIGN_OR_RETURN(AttentionShape shape,
                        checkAttentionSpecs(request, 3, /*lseOperand=*/3));
  ZERO_RETURN_IF_ERROR(checkSameSpec(request, request.ins[0], "query",
                                     request.outs[0], "result"));
  ZERO_ASSIGN_OR_RETURN(AttentionAttrs attrs, getAttentionAttrs(request));
  DType dtype = request.ins[0].dtype;
  int64_t slice = shape.sliceElements();
  int64_t seq = shape.seq;
  return KernelFn(
      [=, q = std::vector<float>(slice), k = std::vector<float>(slice),
       v = std::vector<float>(slice), o = std::vector<float>(slice),
       scores = std::vector<float>(seq * seq)](
          absl::Span<const void *const> ins, absl::Span<void *const> outs,
          const KernelContext &) mutable -> absl::Status {
        float *lse = static_cast<float *>(outs[1]);
        for (int64_t s = 0; s < shape.slices; ++s) {
          int64_t offset = s * slice;
          loadFloats(ins[0], dtype, offset, slice, q.data());
          loadFloats(ins[1], dtype, offset, slice, k.data());
          loadFloats(ins[2], dtype, offset, slice, v.data());
          scaledScores(shape, attrs, q.data(), k.data(), scores.data());
          for (int64_t i = 0; i < seq; ++i) {
            float *row = scores.data() + i * seq;
            int64_t keys = keysOf(attrs, seq, i);
            float max = maxOf(row, keys);
            expShiftedBlock(keys, row, max, row);
            float sum = sumFixed(row, keys);
            float inverse = 1.0f / sum;
            for (int64_t j = 0; j < keys; ++j)
              row[j] *= inverse;
            for (int64_t j = keys; j < seq; ++j)
              row[j] = 0.0f;
            lse[s * seq + i] = max + std::log(sum);
          }
          gemm(false, false, seq, shape.headDim, seq, scores.data(), v.data(),
               o.data());
          storeFloats(outs[0], dtype, offset, slice, o.data());
        }
        return absl::OkStatus();
      });
}

absl::StatusOr<KernelFn> bindAttentionGrad(const BindRequest &request) {
  // result_grad, query, key, value, result, logsumexp -> dq, dk, dv.
  ZERO_RETURN_IF_ERROR(checkArity(request, 6, 3));
  ZERO_ASSIGN_OR_RETURN(AttentionShape shape,
                        checkAttentionSpecs(request, 5, /*lseOperand=*/5));
  for (size_t i = 0; i < 3; ++i)
    ZERO_RETURN_IF_ERROR(checkSameSpec(request, request.ins[0], "result_grad",
                                       request.outs[i], "gradient"));
  ZERO_ASSIGN_OR_RETURN(AttentionAttrs attrs, getAttentionAttrs(request));
  DType dtype = request.ins[0].dtype;
  int64_t slice = shape.sliceElements();
  int64_t seq = shape.seq;
  int64_t headDim = shape.headDim;
  return KernelFn(
      [=, dout = std::vector<float>(slice), q = std::vector<float>(slice),
       k = std::vector<float>(slice), v = std::vector<float>(slice),
       o = std::vector<float>(slice), dq = std::vector<float>(slice),
       dk = std::vector<float>(slice), dv = std::vector<float>(slice),
       probs = std::vector<float>(seq * seq),
       dprobs = std::vector<float>(seq * seq), delta = std::vector<float>(seq)](
          absl::Span<const void *const> ins, absl::Span<void *const> outs,
          const KernelContext &) mutable -> absl::Status {
        const float *lse = static_cast<const float *>(ins[5]);
        for (int64_t s = 0; s < shape.slices; ++s) {
          int64_t offset = s * slice;
          loadFloats(ins[0], dtype, offset, slice, dout.data());
          loadFloats(ins[1], dtype, offset, slice, q.data());
          loadFloats(ins[2], dtype, offset, slice, k.data());
          loadFloats(ins[3], dtype, offset, slice, v.data());
          loadFloats(ins[4], dtype, offset, slice, o.data());
          // P = exp(scale q k^T - lse), 0 where causal leaves a key out.
          scaledScores(shape, attrs, q.data(), k.data(), probs.data());
          for (int64_t i = 0; i < seq; ++i) {
            float *row = probs.data() + i * seq;
            int64_t keys = keysOf(attrs, seq, i);
            expShiftedBlock(keys, row, lse[s * seq + i], row);
            for (int64_t j = keys; j < seq; ++j)
              row[j] = 0.0f;
            delta[i] = dotFixed(dout.data() + i * headDim,
                                o.data() + i * headDim, headDim);
          }
          // dV = P^T dO; dP = dO V^T; dS = P (dP - delta) scale.
          gemm(true, false, seq, headDim, seq, probs.data(), dout.data(),
               dv.data());
          gemm(false, true, seq, seq, headDim, dout.data(), v.data(),
               dprobs.data());
          for (int64_t i = 0; i < seq; ++i) {
            float *p = probs.data() + i * seq;
            const float *dp = dprobs.data() + i * seq;
            for (int64_t j = 0; j < seq; ++j)
              p[j] = p[j] * (dp[j] - delta[i]) * attrs.scale;
          }
          // dQ = dS K; dK = dS^T Q.
          gemm(false, false, seq, headDim, seq, probs.data(), k.data(),
               dq.data());
          gemm(true, false, seq, headDim, seq, probs.data(), q.data(),
               dk.data());
          storeFloats(outs[0], dtype, offset, slice, dq.data());
          storeFloats(outs[1], dtype, offset, slice, dk.data());
          storeFloats(outs[2], dtype, offset, slice, dv.data());
        }
        return absl::OkStatus();
      });
}

} // namespace zero::rt::cpu
