//===- Normalization.cu - Softmax and layer norm over the last dim --------===//
//
// One block per row. The row stays in global memory (it is re-read from L1/L2
// on each pass), so any row length works; each pass ends in a block
// reduction, whose barriers order every read of a row before the first write
// of that row, so results may overwrite their inputs as on CPU.
//
// The layer norm gradient is one pass over the rows: each block takes a
// fixed chunk of rows, writes their input gradients and sums the scale and
// shift gradients of its chunk into its own partial row of scratch; a second
// small kernel adds the partial rows in order. No atomics, so the sums
// repeat bit for bit.
//
//===----------------------------------------------------------------------===//

#include "DeviceCommon.cuh"

namespace zero::cuda::dev {
namespace {

__global__ void softmaxKernel(const void *x, void *y, Dt type, int64_t rows,
                              int64_t cols, bool safe) {
  __shared__ float shared[kThreads / 32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = r * cols;
    float max = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += kThreads)
      max = fmaxf(max, loadF(x, type, base + j));
    max = blockMax(max, shared);
    // A query with every key masked: zeros, as PyTorch's attention gives.
    if (safe && max == -INFINITY) {
      for (int64_t j = threadIdx.x; j < cols; j += kThreads)
        storeF(y, type, base + j, 0.0f);
      continue;
    }
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += kThreads)
      sum += expf(loadF(x, type, base + j) - max);
    float inverse = 1.0f / blockSum(sum, shared);
    for (int64_t j = threadIdx.x; j < cols; j += kThreads)
      storeF(y, type, base + j, expf(loadF(x, type, base + j) - max) * inverse);
  }
}

__global__ void softmaxGradKernel(const void *y, const void *dy, void *dx,
                                  Dt type, int64_t rows, int64_t cols) {
  __shared__ float shared[kThreads / 32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = r * cols;
    float dot = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += kThreads)
      dot += loadF(y, type, base + j) * loadF(dy, type, base + j);
    dot = blockSum(dot, shared);
    // d softmax: dx = y * (dy - <y, dy>).
    for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
      float yj = loadF(y, type, base + j);
      storeF(dx, type, base + j, yj * (loadF(dy, type, base + j) - dot));
    }
  }
}

__global__ void layerNormKernel(const void *x, const void *gamma,
                                const void *beta, void *y, float *means,
                                float *rstds, Dt type, Dt gammaType,
                                Dt betaType, int64_t rows, int64_t cols,
                                float eps) {
  __shared__ float shared[kThreads / 32];
  float inverseCols = 1.0f / static_cast<float>(cols);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = r * cols;
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += kThreads)
      sum += loadF(x, type, base + j);
    float mean = blockSum(sum, shared) * inverseCols;
    // Two passes, as on CPU: the variance of centred values does not cancel.
    float squares = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
      float centred = loadF(x, type, base + j) - mean;
      squares += centred * centred;
    }
    float variance = blockSum(squares, shared) * inverseCols;
    float rstd = 1.0f / sqrtf(variance + eps);
    for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
      float centred = loadF(x, type, base + j) - mean;
      storeF(y, type, base + j,
             centred * rstd * loadF(gamma, gammaType, j) +
                 loadF(beta, betaType, j));
    }
    if (threadIdx.x == 0) {
      means[r] = mean;
      rstds[r] = rstd;
    }
  }
}

/// Block b handles rows [b * per, (b + 1) * per) and owns partial rows b
/// (scale gradient) and partials + b (shift gradient) of `partials`.
__global__ void layerNormGradKernel(const void *dy, const void *x,
                                    const void *gamma, const float *means,
                                    const float *rstds, void *dx, Dt type,
                                    Dt gammaType, int64_t rows, int64_t cols,
                                    int64_t per, float *partials) {
  __shared__ float shared[kThreads / 32];
  float *dgamma = partials + blockIdx.x * cols;
  float *dbeta = partials + (gridDim.x + blockIdx.x) * cols;
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
    dgamma[j] = 0.0f;
    dbeta[j] = 0.0f;
  }
  float inverseCols = 1.0f / static_cast<float>(cols);
  int64_t first = blockIdx.x * per;
  int64_t last = first + per < rows ? first + per : rows;
  for (int64_t r = first; r < last; ++r) {
    int64_t base = r * cols;
    float mean = means[r], rstd = rstds[r];
    float sumGy = 0.0f, sumGyXhat = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
      float g = loadF(dy, type, base + j);
      float xhat = (loadF(x, type, base + j) - mean) * rstd;
      float gy = g * loadF(gamma, gammaType, j);
      sumGy += gy;
      sumGyXhat += gy * xhat;
    }
    float meanGy = blockSum(sumGy, shared) * inverseCols;
    float meanGyXhat = blockSum(sumGyXhat, shared) * inverseCols;
    // dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)).
    for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
      float g = loadF(dy, type, base + j);
      float xhat = (loadF(x, type, base + j) - mean) * rstd;
      float gy = g * loadF(gamma, gammaType, j);
      dgamma[j] += g * xhat;
      dbeta[j] += g;
      storeF(dx, type, base + j, rstd * (gy - meanGy - xhat * meanGyXhat));
    }
  }
}

__global__ void layerNormGradFinish(const float *partials, int64_t blocks,
                                    int64_t cols, void *dgamma, void *dbeta,
                                    Dt dgammaType, Dt dbetaType) {
  for (int64_t j = globalThread(); j < cols; j += globalStride()) {
    float g = 0.0f, b = 0.0f;
    for (int64_t block = 0; block < blocks; ++block) {
      g += partials[block * cols + j];
      b += partials[(blocks + block) * cols + j];
    }
    storeF(dgamma, dgammaType, j, g);
    storeF(dbeta, dbetaType, j, b);
  }
}

} // namespace

cudaError_t launchSoftmax(const void *x, void *y, Dt type, int64_t rows,
                          int64_t cols, bool safe, cudaStream_t stream) {
  if (rows == 0 || cols == 0)
    return cudaSuccess;
  softmaxKernel<<<rowGrid(rows), kThreads, 0, stream>>>(x, y, type, rows, cols,
                                                        safe);
  return cudaGetLastError();
}

cudaError_t launchSoftmaxGrad(const void *y, const void *dy, void *dx, Dt type,
                              int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0)
    return cudaSuccess;
  softmaxGradKernel<<<rowGrid(rows), kThreads, 0, stream>>>(y, dy, dx, type,
                                                            rows, cols);
  return cudaGetLastError();
}

cudaError_t launchLayerNorm(const void *x, const void *gamma, const void *beta,
                            void *y, float *mean, float *rstd, Dt type,
                            Dt gammaType, Dt betaType, int64_t rows,
                            int64_t cols, float eps, cudaStream_t stream) {
  if (rows == 0)
    return cudaSuccess;
  layerNormKernel<<<rowGrid(rows), kThreads, 0, stream>>>(
      x, gamma, beta, y, mean, rstd, type, gammaType, betaType, rows, cols,
      eps);
  return cudaGetLastError();
}

int64_t layerNormGradPartials(int64_t rows) {
  // Enough blocks to fill a GPU; few enough that the partial rows stay small
  // next to the activations (2 x 256 rows of the feature width).
  constexpr int64_t kMaxPartials = 256;
  if (rows < 1)
    return 1;
  return rows < kMaxPartials ? rows : kMaxPartials;
}

cudaError_t launchLayerNormGrad(const void *dy, const void *x,
                                const void *gamma, const float *mean,
                                const float *rstd, void *dx, void *dgamma,
                                void *dbeta, Dt type, Dt gammaType,
                                Dt dgammaType, Dt dbetaType, int64_t rows,
                                int64_t cols, float *partials,
                                cudaStream_t stream) {
  int64_t blocks = layerNormGradPartials(rows);
  int64_t per = (rows + blocks - 1) / blocks;
  layerNormGradKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      dy, x, gamma, mean, rstd, dx, type, gammaType, rows, cols, per, partials);
  if (cudaError_t error = cudaGetLastError(); error != cudaSuccess)
    return error;
  layerNormGradFinish<<<gridFor(cols), kThreads, 0, stream>>>(
      partials, blocks, cols, dgamma, dbeta, dgammaType, dbetaType);
  return cudaGetLastError();
}

} // namespace zero::cuda::dev
