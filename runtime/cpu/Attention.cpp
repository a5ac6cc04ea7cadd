//===- Attention.cpp - Fused scaled dot-product attention -----------------===//
//
// train.attention and train.attention_grad, one [seq, head_dim] slice (one
// head of one sequence) at a time, and within it a block of 64 query rows
// at a time. A slice's query, key and value are widened into f32 scratch
// the bound kernel owns; a block's [64, seq] scores are formed there by
// cblas_sgemm and never leave the kernel: that is what makes the op
// FlashAttention-class for the plan, whose arena holds no scores between
// forward and backward, and keeps the kernel's own scratch at O(seq), not
// O(seq^2). With the causal mask a block multiplies only the keys its last
// row sees. An empty slice (seq or head_dim 0) is skipped: BLAS refuses its
// leading dimensions.
//
// The forward computes each row's softmax as train.softmax does (max,
// exp(x - max), a fixed-order sum, one reciprocal), and returns the row's
// log-sum-exp. The backward recomputes the probabilities from the scores and
// that log-sum-exp, as FlashAttention's does, so no probability is stored.
//
// With `seq_major` ([..., seq, heads, head_dim]) a slice's rows are read and
// written `heads * head_dim` apart; the scratch holds the same dense slice,
// so both layouts compute the same bits.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "runtime/cpu/ActivationLoops.h"
#include "zero/support/Status.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>

namespace zero::rt::cpu {
namespace {

/// How a query, key or value tensor splits into [seq, head_dim] slices: one
/// per leading index of [..., seq, head_dim], or with `seqMajor` one per
/// leading index and head of [..., seq, heads, head_dim].
struct AttentionShape {
  int64_t slices = 1;
  int64_t seq = 0;
  int64_t headDim = 0;
  int64_t heads = 1;
  bool seqMajor = false;
  int64_t sliceElements() const { return seq * headDim; }
  /// Where row `row` of slice `slice` starts in the tensor.
  int64_t rowOffset(int64_t slice, int64_t row) const {
    if (!seqMajor)
      return (slice * seq + row) * headDim;
    return ((slice / heads * seq + row) * heads + slice % heads) * headDim;
  }
};

struct AttentionAttrs {
  float scale = 1.0f;
  bool causal = false;
  bool seqMajor = false;
};

absl::StatusOr<AttentionAttrs> getAttentionAttrs(const BindRequest &request) {
  ZERO_ASSIGN_OR_RETURN(double scale, getF64(request, "scale"));
  ZERO_ASSIGN_OR_RETURN(bool causal, getFlag(request, "causal"));
  ZERO_ASSIGN_OR_RETURN(bool seqMajor, getFlag(request, "seq_major"));
  if (!(scale > 0.0))
    return request.invalid("needs scale > 0, got ", scale);
  return AttentionAttrs{static_cast<float>(scale), causal, seqMajor};
}

absl::StatusOr<AttentionShape> checkAttentionSpecs(const BindRequest &request,
                                                   const AttentionAttrs &attrs,
                                                   size_t sameSpecOperands,
                                                   size_t lseOperand) {
  const TensorSpec &query = request.ins[0];
  size_t rank = query.shape.size();
  if (rank < (attrs.seqMajor ? 3u : 2u))
    return request.invalid(
        attrs.seqMajor ? "attends over [..., seq, heads, head_dim], got "
                       : "attends over [..., seq, head_dim], got ",
        specString(query));
  ZERO_RETURN_IF_ERROR(checkFloat(request, query, "query"));
  for (size_t i = 1; i < sameSpecOperands; ++i)
    ZERO_RETURN_IF_ERROR(
        checkSameSpec(request, query, "query", request.ins[i], "operand"));
  AttentionShape shape;
  shape.seqMajor = attrs.seqMajor;
  shape.headDim = query.shape.back();
  std::vector<int64_t> rows(query.shape.begin(), query.shape.end() - 1);
  if (attrs.seqMajor) {
    shape.seq = query.shape[rank - 3];
    shape.heads = query.shape[rank - 2];
    std::swap(rows[rank - 3], rows[rank - 2]);
  } else {
    shape.seq = query.shape[rank - 2];
  }
  // Every dimension before [seq, head_dim], or before [seq, heads,
  // head_dim] and the heads.
  for (size_t i = 0; i + (attrs.seqMajor ? 3 : 2) < rank; ++i)
    shape.slices *= query.shape[i];
  shape.slices *= shape.heads;
  const TensorSpec &lse = lseOperand < request.ins.size()
                              ? request.ins[lseOperand]
                              : request.outs[1];
  if (lse.dtype != DType::f32 || lse.shape != rows)
    return request.invalid("needs an f32 log-sum-exp of shape ",
                           shapeString(rows), ", got ", specString(lse));
  return shape;
}

/// Widens slice `s` of `tensor` into the dense f32 `slice`.
void loadSlice(const AttentionShape &shape, const void *tensor, DType dtype,
               int64_t s, float *slice) {
  if (!shape.seqMajor) {
    loadFloats(tensor, dtype, s * shape.sliceElements(), shape.sliceElements(),
               slice);
    return;
  }
  for (int64_t row = 0; row < shape.seq; ++row)
    loadFloats(tensor, dtype, shape.rowOffset(s, row), shape.headDim,
               slice + row * shape.headDim);
}

/// Stores the dense f32 `slice` as slice `s` of `tensor`.
void storeSlice(const AttentionShape &shape, void *tensor, DType dtype,
                int64_t s, const float *slice) {
  if (!shape.seqMajor) {
    storeFloats(tensor, dtype, s * shape.sliceElements(), shape.sliceElements(),
                slice);
    return;
  }
  for (int64_t row = 0; row < shape.seq; ++row)
    storeFloats(tensor, dtype, shape.rowOffset(s, row), shape.headDim,
                slice + row * shape.headDim);
}

/// Query rows a block's scores hold.
constexpr int64_t kQueryBlock = 64;

/// C[m, n] = op(A) op(B) + beta C, op(A) [m, k] and op(B) [k, n]: A is
/// [m, k] (or [k, m] transposed), B [k, n] (or [n, k] transposed), all
/// row-major f32 and dense.
void gemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
          const float *a, const float *b, float *c, float beta = 0.0f) {
  cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
              transposeB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(transposeA ? m : k), b,
              static_cast<int>(transposeB ? k : n), beta, c,
              static_cast<int>(n));
}

/// A block of query rows [first, first + rows) and the keys its rows see,
/// [0, keys): all, or with `causal` up to its last row's position.
struct QueryBlock {
  int64_t first = 0, rows = 0, keys = 0;
};

QueryBlock queryBlock(const AttentionShape &shape, const AttentionAttrs &attrs,
                      int64_t first) {
  int64_t rows = std::min(kQueryBlock, shape.seq - first);
  return {first, rows, attrs.causal ? first + rows : shape.seq};
}

/// Keys a query row attends to: all, or with `causal` those up to its own
/// position.
int64_t keysOf(const AttentionAttrs &attrs, int64_t seq, int64_t row) {
  return attrs.causal ? row + 1 : seq;
}

/// scores [block.rows, block.keys]: row i is scale q_{first+i} . k_j for
/// the keys that query attends to, and 0 beyond them.
void scaledScores(const AttentionShape &shape, const AttentionAttrs &attrs,
                  const QueryBlock &block, const float *q, const float *k,
                  float *scores) {
  gemm(false, true, block.rows, block.keys, shape.headDim,
       q + block.first * shape.headDim, k, scores);
  for (int64_t i = 0; i < block.rows; ++i) {
    float *row = scores + i * block.keys;
    int64_t keys = keysOf(attrs, shape.seq, block.first + i);
    for (int64_t j = 0; j < keys; ++j)
      row[j] *= attrs.scale;
    for (int64_t j = keys; j < block.keys; ++j)
      row[j] = 0.0f;
  }
}

} // namespace

absl::StatusOr<KernelFn> bindAttention(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 3, 2));
  ZERO_ASSIGN_OR_RETURN(AttentionAttrs attrs, getAttentionAttrs(request));
  ZERO_ASSIGN_OR_RETURN(
      AttentionShape shape,
      checkAttentionSpecs(request, attrs, 3, /*lseOperand=*/3));
  ZERO_RETURN_IF_ERROR(checkSameSpec(request, request.ins[0], "query",
                                     request.outs[0], "result"));
  DType dtype = request.ins[0].dtype;
  int64_t slice = shape.sliceElements();
  int64_t seq = shape.seq;
  return KernelFn([=, q = std::vector<float>(slice),
                   k = std::vector<float>(slice), v = std::vector<float>(slice),
                   o = std::vector<float>(slice),
                   scores = std::vector<float>(kQueryBlock * seq)](
                      absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) mutable -> absl::Status {
    float *lse = static_cast<float *>(outs[1]);
    for (int64_t s = 0; slice > 0 && s < shape.slices; ++s) {
      loadSlice(shape, ins[0], dtype, s, q.data());
      loadSlice(shape, ins[1], dtype, s, k.data());
      loadSlice(shape, ins[2], dtype, s, v.data());
      for (int64_t first = 0; first < seq; first += kQueryBlock) {
        QueryBlock block = queryBlock(shape, attrs, first);
        scaledScores(shape, attrs, block, q.data(), k.data(), scores.data());
        // Each row's softmax as train.softmax computes it.
        for (int64_t i = 0; i < block.rows; ++i) {
          float *row = scores.data() + i * block.keys;
          int64_t keys = keysOf(attrs, seq, first + i);
          float max = maxOf(row, keys);
          expShiftedBlock(keys, row, max, row);
          float sum = sumFixed(row, keys);
          float inverse = 1.0f / sum;
          for (int64_t j = 0; j < keys; ++j)
            row[j] *= inverse;
          lse[s * seq + first + i] = max + std::log(sum);
        }
        gemm(false, false, block.rows, shape.headDim, block.keys, scores.data(),
             v.data(), o.data() + first * shape.headDim);
      }
      storeSlice(shape, outs[0], dtype, s, o.data());
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindAttentionGrad(const BindRequest &request) {
  // result_grad, query, key, value, result, logsumexp -> dq, dk, dv.
  ZERO_RETURN_IF_ERROR(checkArity(request, 6, 3));
  ZERO_ASSIGN_OR_RETURN(AttentionAttrs attrs, getAttentionAttrs(request));
  ZERO_ASSIGN_OR_RETURN(
      AttentionShape shape,
      checkAttentionSpecs(request, attrs, 5, /*lseOperand=*/5));
  for (size_t i = 0; i < 3; ++i)
    ZERO_RETURN_IF_ERROR(checkSameSpec(request, request.ins[0], "result_grad",
                                       request.outs[i], "gradient"));
  DType dtype = request.ins[0].dtype;
  int64_t slice = shape.sliceElements();
  int64_t seq = shape.seq;
  int64_t headDim = shape.headDim;
  return KernelFn(
      [=, dout = std::vector<float>(slice), q = std::vector<float>(slice),
       k = std::vector<float>(slice), v = std::vector<float>(slice),
       o = std::vector<float>(slice), dq = std::vector<float>(slice),
       dk = std::vector<float>(slice), dv = std::vector<float>(slice),
       probs = std::vector<float>(kQueryBlock * seq),
       dprobs = std::vector<float>(kQueryBlock * seq)](
          absl::Span<const void *const> ins, absl::Span<void *const> outs,
          const KernelContext &) mutable -> absl::Status {
        const float *lse = static_cast<const float *>(ins[5]);
        for (int64_t s = 0; slice > 0 && s < shape.slices; ++s) {
          loadSlice(shape, ins[0], dtype, s, dout.data());
          loadSlice(shape, ins[1], dtype, s, q.data());
          loadSlice(shape, ins[2], dtype, s, k.data());
          loadSlice(shape, ins[3], dtype, s, v.data());
          loadSlice(shape, ins[4], dtype, s, o.data());
          std::fill(dk.begin(), dk.end(), 0.0f);
          std::fill(dv.begin(), dv.end(), 0.0f);
          for (int64_t first = 0; first < seq; first += kQueryBlock) {
            QueryBlock block = queryBlock(shape, attrs, first);
            const float *qBlock = q.data() + first * headDim;
            const float *doBlock = dout.data() + first * headDim;
            // P = exp(scale q k^T - lse), 0 where causal leaves a key out.
            scaledScores(shape, attrs, block, q.data(), k.data(), probs.data());
            for (int64_t i = 0; i < block.rows; ++i) {
              float *row = probs.data() + i * block.keys;
              int64_t keys = keysOf(attrs, seq, first + i);
              expShiftedBlock(keys, row, lse[s * seq + first + i], row);
              for (int64_t j = keys; j < block.keys; ++j)
                row[j] = 0.0f;
            }
            // dV += P^T dO; dP = dO V^T.
            gemm(true, false, block.keys, headDim, block.rows, probs.data(),
                 doBlock, dv.data(), 1.0f);
            gemm(false, true, block.rows, block.keys, headDim, doBlock,
                 v.data(), dprobs.data());
            // dS = P (dP - rowsum(dO o)) scale.
            for (int64_t i = 0; i < block.rows; ++i) {
              float delta = dotFixed(doBlock + i * headDim,
                                     o.data() + (first + i) * headDim, headDim);
              float *p = probs.data() + i * block.keys;
              const float *dp = dprobs.data() + i * block.keys;
              for (int64_t j = 0; j < block.keys; ++j)
                p[j] = p[j] * (dp[j] - delta) * attrs.scale;
            }
            // dQ = dS K; dK += dS^T Q.
            gemm(false, false, block.rows, headDim, block.keys, probs.data(),
                 k.data(), dq.data() + first * headDim);
            gemm(true, false, block.keys, headDim, block.rows, probs.data(),
                 qBlock, dk.data(), 1.0f);
          }
          storeSlice(shape, outs[0], dtype, s, dq.data());
          storeSlice(shape, outs[1], dtype, s, dk.data());
          storeSlice(shape, outs[2], dtype, s, dv.data());
        }
        return absl::OkStatus();
      });
}

} // namespace zero::rt::cpu
