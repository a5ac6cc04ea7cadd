//===- EmbeddingLoss.cu - Embedding lookups and cross-entropy on CUDA -----===//
//
// The kernels that index with integer tensors. The CPU kernels reject an id
// out of range before touching memory; here the check would need a
// synchronization, so each kernel checks every id as it reads it and never
// reads or writes out of bounds: a lookup of a bad id gives a NaN row, a bad
// label a NaN loss (and NaN gradient row), and embedding_grad skips bad ids.
//
//===----------------------------------------------------------------------===//

#include "DeviceCommon.cuh"

namespace zero::cuda::dev {
namespace {

__global__ void embeddingKernel(const void *table, const void *ids, void *out,
                                Dt type, Dt idType, int64_t count,
                                int64_t vocabulary, int64_t features) {
  int64_t total = count * features;
  for (int64_t i = globalThread(); i < total; i += globalStride()) {
    int64_t id = loadId(ids, idType, i / features), j = i % features;
    if (id < 0 || id >= vocabulary) {
      storeF(out, type, i, NAN);
      continue;
    }
    // A raw copy: the table and the result have one type.
    if (type == Dt::f32)
      static_cast<float *>(out)[i] =
          static_cast<const float *>(table)[id * features + j];
    else
      static_cast<uint16_t *>(out)[i] =
          static_cast<const uint16_t *>(table)[id * features + j];
  }
}

/// One block per table row; the block walks all positions in order (the ids
/// staged through shared memory) and sums the rows of those that name its
/// row. The sum runs in position order from zero, so it matches the CPU
/// kernel's bits, with no atomics and no sort. Cost: vocabulary x count id
/// comparisons, cheap next to the matmuls around it at GPT-2 sizes.
/// Row `padding` (-1: none) is written 0 without a scan, as PyTorch's
/// padding_idx; the row is the block's, so the branch is uniform and its
/// __syncthreads are reached by every thread or none.
__global__ void embeddingGradKernel(const void *dy, const void *ids,
                                    void *table, Dt dyType, Dt tableType,
                                    Dt idType, int64_t count,
                                    int64_t vocabulary, int64_t features,
                                    int64_t padding) {
  __shared__ int64_t staged[kThreads];
  for (int64_t row = blockIdx.x; row < vocabulary; row += gridDim.x)
    for (int64_t j0 = 0; j0 < features; j0 += kThreads) {
      int64_t j = j0 + threadIdx.x;
      float sum = 0.0f;
      for (int64_t p0 = 0; row != padding && p0 < count; p0 += kThreads) {
        __syncthreads(); // The previous chunk has been read.
        if (p0 + threadIdx.x < count)
          staged[threadIdx.x] = loadId(ids, idType, p0 + threadIdx.x);
        __syncthreads();
        int64_t n = count - p0 < kThreads ? count - p0 : kThreads;
        if (j < features)
          for (int64_t p = 0; p < n; ++p)
            if (staged[p] == row)
              sum += loadF(dy, dyType, (p0 + p) * features + j);
      }
      if (j < features)
        storeF(table, tableType, row * features + j, sum);
    }
}

/// `ignored` is the ignore_index where `ignoring`.
/// `smoothing` is PyTorch's label_smoothing e: the target is 1 - e on the
/// label and e / C on every class.
__global__ void crossEntropyRows(const void *logits, const void *labels,
                                 Dt type, Dt labelType, int64_t rows,
                                 int64_t classes, bool ignoring,
                                 int64_t ignored, float smoothing,
                                 float *rowLoss) {
  __shared__ float shared[kThreads / 32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = r * classes;
    float max = -INFINITY;
    for (int64_t j = threadIdx.x; j < classes; j += kThreads)
      max = fmaxf(max, loadF(logits, type, base + j));
    max = blockMax(max, shared);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < classes; j += kThreads)
      sum += expf(loadF(logits, type, base + j) - max);
    float logSum = logf(blockSum(sum, shared)) + max;
    float mean = 0.0f;
    if (smoothing != 0.0f) {
      float total = 0.0f;
      for (int64_t j = threadIdx.x; j < classes; j += kThreads)
        total += loadF(logits, type, base + j);
      mean = blockSum(total, shared) / static_cast<float>(classes);
    }
    if (threadIdx.x == 0) {
      int64_t label = loadId(labels, labelType, r);
      float target = label < 0 || label >= classes
                         ? NAN
                         : loadF(logits, type, base + label);
      if (smoothing != 0.0f)
        target = (1.0f - smoothing) * target + smoothing * mean;
      rowLoss[r] = ignoring && label == ignored ? 0.0f : logSum - target;
    }
  }
}

/// The mean of the row terms in double, as on CPU, by one block in a fixed
/// order; divided by `*divisor` where a loss ignores labels (0 / 0 is NaN,
/// as PyTorch's).
__global__ void meanInDouble(const float *values, int64_t count,
                             const float *divisor, float *mean) {
  __shared__ double partial[kThreads];
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += kThreads)
    sum += static_cast<double>(values[i]);
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width)
      partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    *mean =
        static_cast<float>(partial[0] / (divisor ? static_cast<double>(*divisor)
                                                 : static_cast<double>(count)));
}

/// The labels other than `ignored`, counted by one block, as f32.
__global__ void countLabelsKernel(const void *labels, Dt labelType,
                                  int64_t count, int64_t ignored,
                                  float *result) {
  __shared__ int64_t partial[kThreads];
  int64_t kept = 0;
  for (int64_t i = threadIdx.x; i < count; i += kThreads)
    kept += loadId(labels, labelType, i) != ignored;
  partial[threadIdx.x] = kept;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width)
      partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    *result = static_cast<float>(partial[0]);
}

__global__ void crossEntropyGradKernel(const void *logits, const void *labels,
                                       const float *lossGrad,
                                       const float *divisor, void *dx, Dt type,
                                       Dt labelType, int64_t rows,
                                       int64_t classes, int64_t ignored,
                                       float smoothing) {
  __shared__ float shared[kThreads / 32];
  float scale = *lossGrad / (divisor ? *divisor : static_cast<float>(rows));
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = r * classes;
    // An ignored row has no gradient, even where the count is 0. The
    // branch is uniform over the block.
    if (divisor && loadId(labels, labelType, r) == ignored) {
      for (int64_t j = threadIdx.x; j < classes; j += kThreads)
        storeF(dx, type, base + j, 0.0f);
      continue;
    }
    float max = -INFINITY;
    for (int64_t j = threadIdx.x; j < classes; j += kThreads)
      max = fmaxf(max, loadF(logits, type, base + j));
    max = blockMax(max, shared);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < classes; j += kThreads)
      sum += expf(loadF(logits, type, base + j) - max);
    float inverse = 1.0f / blockSum(sum, shared);
    int64_t label = loadId(labels, labelType, r);
    bool bad = label < 0 || label >= classes;
    for (int64_t j = threadIdx.x; j < classes; j += kThreads) {
      float p = expf(loadF(logits, type, base + j) - max) * inverse;
      p -= smoothing / static_cast<float>(classes);
      if (j == label)
        p -= 1.0f - smoothing;
      storeF(dx, type, base + j, bad ? NAN : p * scale);
    }
  }
}

} // namespace

cudaError_t launchEmbedding(const void *table, const void *ids, void *out,
                            Dt type, Dt idType, int64_t count,
                            int64_t vocabulary, int64_t features,
                            cudaStream_t stream) {
  if (count * features == 0)
    return cudaSuccess;
  embeddingKernel<<<gridFor(count * features), kThreads, 0, stream>>>(
      table, ids, out, type, idType, count, vocabulary, features);
  return cudaGetLastError();
}

cudaError_t launchEmbeddingGrad(const void *dy, const void *ids, void *table,
                                Dt dyType, Dt tableType, Dt idType,
                                int64_t count, int64_t vocabulary,
                                int64_t features, int64_t padding,
                                cudaStream_t stream) {
  if (vocabulary * features == 0)
    return cudaSuccess;
  embeddingGradKernel<<<rowGrid(vocabulary), kThreads, 0, stream>>>(
      dy, ids, table, dyType, tableType, idType, count, vocabulary, features,
      padding);
  return cudaGetLastError();
}

cudaError_t launchCountLabels(const void *labels, Dt labelType, int64_t count,
                              int64_t ignored, float *result,
                              cudaStream_t stream) {
  countLabelsKernel<<<1, kThreads, 0, stream>>>(labels, labelType, count,
                                                ignored, result);
  return cudaGetLastError();
}

cudaError_t launchCrossEntropy(const void *logits, const void *labels,
                               const float *divisor, float *loss, Dt type,
                               Dt labelType, int64_t rows, int64_t classes,
                               int64_t ignored, float smoothing, float *rowLoss,
                               cudaStream_t stream) {
  crossEntropyRows<<<rowGrid(rows), kThreads, 0, stream>>>(
      logits, labels, type, labelType, rows, classes, divisor != nullptr,
      ignored, smoothing, rowLoss);
  if (cudaError_t error = cudaGetLastError(); error != cudaSuccess)
    return error;
  meanInDouble<<<1, kThreads, 0, stream>>>(rowLoss, rows, divisor, loss);
  return cudaGetLastError();
}

cudaError_t launchCrossEntropyGrad(const void *logits, const void *labels,
                                   const float *lossGrad, const float *divisor,
                                   void *dx, Dt type, Dt labelType,
                                   int64_t rows, int64_t classes,
                                   int64_t ignored, float smoothing,
                                   cudaStream_t stream) {
  crossEntropyGradKernel<<<rowGrid(rows), kThreads, 0, stream>>>(
      logits, labels, lossGrad, divisor, dx, type, labelType, rows, classes,
      ignored, smoothing);
  return cudaGetLastError();
}

} // namespace zero::cuda::dev
