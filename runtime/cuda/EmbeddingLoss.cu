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

#include <cub/device/device_radix_sort.cuh>

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

/// embedding_grad groups the positions by id first: the (id, position)
/// pairs sorted by id with CUB's radix sort, which is stable, so each id's
/// positions stay in position order. A bad id sorts last as the key
/// `vocabulary` and is skipped. Then one block per sorted position that
/// starts an id's run sums that run's gradient rows in position order, the
/// first row as it is and the others added to it: the CPU kernel's order
/// and bits. Rows no position names (and row `padding`) keep the zeros the
/// table was cleared to.
__global__ void embeddingGradKeys(const void *ids, Dt idType, int64_t count,
                                  int64_t vocabulary, int32_t *keys,
                                  int32_t *positions) {
  for (int64_t p = globalThread(); p < count; p += globalStride()) {
    int64_t id = loadId(ids, idType, p);
    keys[p] =
        static_cast<int32_t>(id < 0 || id >= vocabulary ? vocabulary : id);
    positions[p] = static_cast<int32_t>(p);
  }
}

__global__ void embeddingGradRuns(const void *dy, void *table, Dt dyType,
                                  Dt tableType, const int32_t *keys,
                                  const int32_t *positions, int64_t count,
                                  int64_t vocabulary, int64_t features,
                                  int64_t padding) {
  for (int64_t i = blockIdx.x; i < count; i += gridDim.x) {
    int32_t key = keys[i];
    // Uniform in the block: only the first position of a run sums it.
    if ((i > 0 && keys[i - 1] == key) || key >= vocabulary || key == padding)
      continue;
    int64_t end = i + 1;
    while (end < count && keys[end] == key)
      ++end;
    for (int64_t j = threadIdx.x; j < features; j += blockDim.x) {
      float sum = loadF(dy, dyType, positions[i] * features + j);
      for (int64_t k = i + 1; k < end; ++k)
        sum += loadF(dy, dyType, positions[k] * features + j);
      storeF(table, tableType, key * features + j, sum);
    }
  }
}

/// The bits that hold every key, the bad-id key `vocabulary` included.
int keyBits(int64_t vocabulary) {
  int bits = 1;
  while (bits < 31 && (int64_t{1} << bits) <= vocabulary)
    ++bits;
  return bits;
}

/// Four int32 arrays of `count` (keys and positions, in and sorted) and
/// CUB's temporary storage, each 256-byte aligned.
struct GradScratch {
  int64_t arrayBytes = 0;
  size_t sortBytes = 0;
  size_t total() const { return 4 * arrayBytes + sortBytes; }
};

cudaError_t gradScratch(int64_t count, int64_t vocabulary,
                        GradScratch &layout) {
  layout.arrayBytes = (count * 4 + 255) / 256 * 256;
  return cub::DeviceRadixSort::SortPairs(
      nullptr, layout.sortBytes, static_cast<const int32_t *>(nullptr),
      static_cast<int32_t *>(nullptr), static_cast<const int32_t *>(nullptr),
      static_cast<int32_t *>(nullptr), static_cast<int>(count), 0,
      keyBits(vocabulary));
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

cudaError_t getEmbeddingGradScratchBytes(int64_t count, int64_t vocabulary,
                                         int64_t *bytes) {
  *bytes = 0;
  if (count == 0)
    return cudaSuccess;
  GradScratch layout;
  cudaError_t error = gradScratch(count, vocabulary, layout);
  *bytes = static_cast<int64_t>(layout.total());
  return error;
}

cudaError_t launchEmbeddingGrad(const void *dy, const void *ids, void *table,
                                Dt dyType, Dt tableType, Dt idType,
                                int64_t count, int64_t vocabulary,
                                int64_t features, int64_t padding,
                                void *scratch, cudaStream_t stream) {
  if (vocabulary * features == 0)
    return cudaSuccess;
  int64_t elementBytes = tableType == Dt::f32 ? 4 : 2;
  if (cudaError_t error = cudaMemsetAsync(
          table, 0, vocabulary * features * elementBytes, stream);
      error != cudaSuccess || count == 0)
    return error;
  GradScratch layout;
  if (cudaError_t error = gradScratch(count, vocabulary, layout);
      error != cudaSuccess)
    return error;
  char *base = static_cast<char *>(scratch);
  auto *keys = reinterpret_cast<int32_t *>(base);
  auto *positions = reinterpret_cast<int32_t *>(base + layout.arrayBytes);
  auto *sortedKeys = reinterpret_cast<int32_t *>(base + 2 * layout.arrayBytes);
  auto *sortedPositions =
      reinterpret_cast<int32_t *>(base + 3 * layout.arrayBytes);
  embeddingGradKeys<<<gridFor(count), kThreads, 0, stream>>>(
      ids, idType, count, vocabulary, keys, positions);
  if (cudaError_t error = cudaGetLastError(); error != cudaSuccess)
    return error;
  size_t sortBytes = layout.sortBytes;
  if (cudaError_t error = cub::DeviceRadixSort::SortPairs(
          base + 4 * layout.arrayBytes, sortBytes, keys, sortedKeys, positions,
          sortedPositions, static_cast<int>(count), 0, keyBits(vocabulary),
          stream);
      error != cudaSuccess)
    return error;
  embeddingGradRuns<<<rowGrid(count), kThreads, 0, stream>>>(
      dy, table, dyType, tableType, sortedKeys, sortedPositions, count,
      vocabulary, features, padding);
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
