//===- Attention.cu - Fused scaled dot-product attention ------------------===//
//
// train.attention and train.attention_grad with one block per query row
// (forward, query gradient) or key row (key and value gradients). Scores
// are formed a chunk of keys at a time in shared memory and never written
// to device memory, so the op needs no [seq, seq] buffer, as the plan
// assumes. This is the plain row-wise form, for correctness: it does not
// use tensor cores or tile queries, so it is far from FlashAttention's
// speed (docs/runtime.md, "Attention"). Each row's reductions are in a fixed
// order, so results repeat bit for bit. A seq-major tensor ([..., seq,
// heads, head_dim]) is read and written by strides: `rowAt` places a row.
//
//===----------------------------------------------------------------------===//

#include "DeviceCommon.cuh"

namespace zero::cuda::dev {
namespace {

/// Keys (or queries) whose scores one pass holds in shared memory.
constexpr int kChunk = 1024;
/// Head dimensions a thread accumulates in registers: head_dim <= this
/// times kThreads (the binder checks).
constexpr int kMaxPerThread = 4;

struct Slice {
  const void *q, *k, *v;
  Dt type;
  int64_t seq, headDim, heads;
  bool seqMajor;
  float scale;
  bool causal;
};

/// Where row `i` of slice `slice` starts.
__device__ int64_t rowAt(const Slice &s, int64_t slice, int64_t i) {
  if (!s.seqMajor)
    return (slice * s.seq + i) * s.headDim;
  return ((slice / s.heads * s.seq + i) * s.heads + slice % s.heads) *
         s.headDim;
}

/// The scaled score of query row `i` against key row `j` of one slice.
__device__ float score(const Slice &s, int64_t slice, int64_t i, int64_t j) {
  int64_t qi = rowAt(s, slice, i), kj = rowAt(s, slice, j);
  float dot = 0.0f;
  for (int64_t d = 0; d < s.headDim; ++d)
    dot += loadF(s.q, s.type, qi + d) * loadF(s.k, s.type, kj + d);
  return dot * s.scale;
}

/// a_i . b_i over row `i` of slice `slice`.
__device__ float rowDot(const Slice &s, const void *a, const void *b,
                        int64_t slice, int64_t i) {
  int64_t at = rowAt(s, slice, i);
  float dot = 0.0f;
  for (int64_t d = 0; d < s.headDim; ++d)
    dot += loadF(a, s.type, at + d) * loadF(b, s.type, at + d);
  return dot;
}

__global__ void attentionKernel(Slice s, int64_t rows, void *out, float *lse) {
  __shared__ float reduce[kThreads / 32];
  __shared__ float probs[kChunk];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t slice = row / s.seq, i = row % s.seq;
    int64_t keys = s.causal ? i + 1 : s.seq;
    float max = -INFINITY;
    for (int64_t j = threadIdx.x; j < keys; j += kThreads)
      max = fmaxf(max, score(s, slice, i, j));
    max = blockMax(max, reduce);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < keys; j += kThreads)
      sum += __expf(score(s, slice, i, j) - max);
    sum = blockSum(sum, reduce);
    float acc[kMaxPerThread] = {0, 0, 0, 0};
    for (int64_t start = 0; start < keys; start += kChunk) {
      int64_t count = keys - start < kChunk ? keys - start : kChunk;
      __syncthreads();
      for (int64_t j = threadIdx.x; j < count; j += kThreads)
        probs[j] = __expf(score(s, slice, i, start + j) - max) / sum;
      __syncthreads();
      for (int t = 0; t < kMaxPerThread; ++t) {
        int64_t d = threadIdx.x + t * kThreads;
        if (d < s.headDim)
          for (int64_t j = 0; j < count; ++j)
            acc[t] +=
                probs[j] * loadF(s.v, s.type, rowAt(s, slice, start + j) + d);
      }
    }
    for (int t = 0; t < kMaxPerThread; ++t) {
      int64_t d = threadIdx.x + t * kThreads;
      if (d < s.headDim)
        storeF(out, s.type, rowAt(s, slice, i) + d, acc[t]);
    }
    if (threadIdx.x == 0)
      lse[row] = max + logf(sum);
  }
}

/// dQ for query row i: scale sum_j p_ij (dO_i . v_j - dO_i . O_i) k_j.
__global__ void attentionQueryGradKernel(Slice s, int64_t rows,
                                         const void *dout, const void *out,
                                         const float *lse, void *dq) {
  __shared__ float ds[kChunk];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t slice = row / s.seq, i = row % s.seq;
    int64_t qi = rowAt(s, slice, i);
    int64_t keys = s.causal ? i + 1 : s.seq;
    float delta = rowDot(s, dout, out, slice, i);
    float acc[kMaxPerThread] = {0, 0, 0, 0};
    for (int64_t start = 0; start < keys; start += kChunk) {
      int64_t count = keys - start < kChunk ? keys - start : kChunk;
      __syncthreads();
      for (int64_t j = threadIdx.x; j < count; j += kThreads) {
        float p = __expf(score(s, slice, i, start + j) - lse[row]);
        int64_t vj = rowAt(s, slice, start + j);
        float dp = 0.0f;
        for (int64_t d = 0; d < s.headDim; ++d)
          dp += loadF(dout, s.type, qi + d) * loadF(s.v, s.type, vj + d);
        ds[j] = p * (dp - delta) * s.scale;
      }
      __syncthreads();
      for (int t = 0; t < kMaxPerThread; ++t) {
        int64_t d = threadIdx.x + t * kThreads;
        if (d < s.headDim)
          for (int64_t j = 0; j < count; ++j)
            acc[t] +=
                ds[j] * loadF(s.k, s.type, rowAt(s, slice, start + j) + d);
      }
    }
    for (int t = 0; t < kMaxPerThread; ++t) {
      int64_t d = threadIdx.x + t * kThreads;
      if (d < s.headDim)
        storeF(dq, s.type, qi + d, acc[t]);
    }
  }
}

/// dK and dV for key row j: sum over the queries i that see it of
/// p_ij dO_i (dV) and scale p_ij (dO_i . v_j - delta_i) q_i (dK).
__global__ void attentionKeyGradKernel(Slice s, int64_t rows, const void *dout,
                                       const void *out, const float *lse,
                                       void *dk, void *dv) {
  __shared__ float p[kChunk];
  __shared__ float ds[kChunk];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t slice = row / s.seq, j = row % s.seq;
    int64_t kj = rowAt(s, slice, j);
    int64_t first = s.causal ? j : 0;
    float accK[kMaxPerThread] = {0, 0, 0, 0};
    float accV[kMaxPerThread] = {0, 0, 0, 0};
    for (int64_t start = first; start < s.seq; start += kChunk) {
      int64_t count = s.seq - start < kChunk ? s.seq - start : kChunk;
      __syncthreads();
      for (int64_t n = threadIdx.x; n < count; n += kThreads) {
        int64_t i = start + n;
        float prob = __expf(score(s, slice, i, j) - lse[slice * s.seq + i]);
        int64_t qi = rowAt(s, slice, i);
        float dp = 0.0f;
        for (int64_t d = 0; d < s.headDim; ++d)
          dp += loadF(dout, s.type, qi + d) * loadF(s.v, s.type, kj + d);
        float delta = rowDot(s, dout, out, slice, i);
        p[n] = prob;
        ds[n] = prob * (dp - delta) * s.scale;
      }
      __syncthreads();
      for (int t = 0; t < kMaxPerThread; ++t) {
        int64_t d = threadIdx.x + t * kThreads;
        if (d < s.headDim)
          for (int64_t n = 0; n < count; ++n) {
            int64_t at = rowAt(s, slice, start + n) + d;
            accV[t] += p[n] * loadF(dout, s.type, at);
            accK[t] += ds[n] * loadF(s.q, s.type, at);
          }
      }
    }
    for (int t = 0; t < kMaxPerThread; ++t) {
      int64_t d = threadIdx.x + t * kThreads;
      if (d < s.headDim) {
        storeF(dk, s.type, kj + d, accK[t]);
        storeF(dv, s.type, kj + d, accV[t]);
      }
    }
  }
}

Slice makeSlice(const void *q, const void *k, const void *v, Dt type,
                const AttentionDims &dims) {
  return Slice{q,          k,
               v,          type,
               dims.seq,   dims.headDim,
               dims.heads, dims.seqMajor,
               dims.scale, dims.causal};
}

} // namespace

int64_t attentionMaxHeadDim() { return kMaxPerThread * kThreads; }

cudaError_t launchAttention(const void *q, const void *k, const void *v,
                            void *out, float *lse, Dt type,
                            const AttentionDims &dims, cudaStream_t stream) {
  int64_t rows = dims.slices * dims.seq;
  if (rows == 0 || dims.headDim == 0)
    return cudaSuccess;
  Slice s = makeSlice(q, k, v, type, dims);
  attentionKernel<<<rowGrid(rows), kThreads, 0, stream>>>(s, rows, out, lse);
  return cudaGetLastError();
}

cudaError_t launchAttentionGrad(const void *dout, const void *q, const void *k,
                                const void *v, const void *out,
                                const float *lse, void *dq, void *dk, void *dv,
                                Dt type, const AttentionDims &dims,
                                cudaStream_t stream) {
  int64_t rows = dims.slices * dims.seq;
  if (rows == 0 || dims.headDim == 0)
    return cudaSuccess;
  Slice s = makeSlice(q, k, v, type, dims);
  attentionQueryGradKernel<<<rowGrid(rows), kThreads, 0, stream>>>(
      s, rows, dout, out, lse, dq);
  cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess)
    return error;
  attentionKeyGradKernel<<<rowGrid(rows), kThreads, 0, stream>>>(
      s, rows, dout, out, lse, dk, dv);
  return cudaGetLastError();
}

} // namespace zero::cuda::dev
