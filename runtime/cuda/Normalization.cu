//===- Normalization.cu - Softmax and layer norm over the last dim --------===//
//
// Rows of one float type, 16-byte aligned, of whole 16-byte Packs and at
// most 1024 f32 or 2048 16-bit elements (attention's scores, GPT-2's
// widths): a warp per row, the row held in registers, read once and written
// once. Other rows: one block per row. The row stays in global memory (it is
// re-read from L1/L2 on each pass), so any row length works; each pass ends in
// a block reduction, whose barriers order every read of a row before the first
// write of that row, so results may overwrite their inputs as on CPU.
//
// The layer norm gradient is one pass over the rows: each block takes a
// fixed chunk of rows, writes their input gradients and sums the scale and
// shift gradients of its chunk into its own partial row of scratch; a second
// small kernel adds the partial rows in order. No atomics, so the sums
// repeat bit for bit.
//
//===----------------------------------------------------------------------===//

#include "DeviceCommon.cuh"

#include <type_traits>

namespace zero::cuda::dev {
namespace {

//===----------------------------------------------------------------------===//
// A warp per row, the row in registers
//===----------------------------------------------------------------------===//

// Rows of one float type, 16-byte aligned, whose length is a whole number of
// Packs and at most 32 * kMaxLanePacks of them (1024 f32 or 2048 bf16
// columns: attention's scores and GPT-2's widths): each lane loads N Packs
// once, the warp reduces with shuffles, and the results are written from the
// registers, so a row is read once and written once instead of two or three
// times by a block. A row is read whole before it is written, so results
// may overwrite their inputs.
constexpr int kMaxLanePacks = 8;
constexpr int kRowWarps = kThreads / 32;

template <typename T, int N> struct LaneRow {
  float v[N][Pack<T>::kWidth];

  /// Loads this lane's Packs c = lane + 32 n of `row` (zeros past the row).
  __device__ __forceinline__ void load(const T *row, int lane, int64_t packs) {
    const Pack<T> *p = reinterpret_cast<const Pack<T> *>(row);
#pragma unroll
    for (int n = 0; n < N; ++n) {
      int64_t c = lane + 32 * n;
      Pack<T> pack = c < packs ? p[c] : Pack<T>{};
#pragma unroll
      for (int j = 0; j < Pack<T>::kWidth; ++j)
        v[n][j] = toFloat(pack.v[j]);
    }
  }

  __device__ __forceinline__ void store(T *row, int lane, int64_t packs) {
    Pack<T> *p = reinterpret_cast<Pack<T> *>(row);
#pragma unroll
    for (int n = 0; n < N; ++n) {
      int64_t c = lane + 32 * n;
      if (c >= packs)
        continue;
      Pack<T> pack;
#pragma unroll
      for (int j = 0; j < Pack<T>::kWidth; ++j)
        pack.v[j] = fromFloat<T>(v[n][j]);
      p[c] = pack;
    }
  }

  /// Whether element j of Pack n of this lane is in the row.
  __device__ __forceinline__ static bool inRow(int lane, int n, int64_t packs) {
    return lane + 32 * n < packs;
  }
};

__device__ __forceinline__ int64_t firstWarpRow() {
  return (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
}
__device__ __forceinline__ int64_t warpRowStride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
}

template <typename T, int N>
__global__ void softmaxWarpKernel(const T *x, T *y, int64_t rows, int64_t packs,
                                  bool safe) {
  constexpr int W = Pack<T>::kWidth;
  int lane = threadIdx.x % 32;
  for (int64_t r = firstWarpRow(); r < rows; r += warpRowStride()) {
    LaneRow<T, N> row;
    row.load(x + r * packs * W, lane, packs);
    float max = -INFINITY;
#pragma unroll
    for (int n = 0; n < N; ++n)
      if (row.inRow(lane, n, packs))
#pragma unroll
        for (int j = 0; j < W; ++j)
          max = fmaxf(max, row.v[n][j]);
    max = warpReduce<true>(max);
    // A query with every key masked: zeros, as PyTorch's attention gives.
    bool zeros = safe && max == -INFINITY;
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < N; ++n)
#pragma unroll
      for (int j = 0; j < W; ++j) {
        row.v[n][j] = zeros ? 0.0f : expf(row.v[n][j] - max);
        if (row.inRow(lane, n, packs))
          sum += row.v[n][j];
      }
    float inverse = zeros ? 0.0f : 1.0f / warpReduce<false>(sum);
#pragma unroll
    for (int n = 0; n < N; ++n)
#pragma unroll
      for (int j = 0; j < W; ++j)
        row.v[n][j] *= inverse;
    row.store(y + r * packs * W, lane, packs);
  }
}

template <typename T, int N>
__global__ void softmaxGradWarpKernel(const T *y, const T *dy, T *dx,
                                      int64_t rows, int64_t packs) {
  constexpr int W = Pack<T>::kWidth;
  int lane = threadIdx.x % 32;
  for (int64_t r = firstWarpRow(); r < rows; r += warpRowStride()) {
    LaneRow<T, N> value, grad;
    value.load(y + r * packs * W, lane, packs);
    grad.load(dy + r * packs * W, lane, packs);
    float dot = 0.0f;
#pragma unroll
    for (int n = 0; n < N; ++n)
#pragma unroll
      for (int j = 0; j < W; ++j)
        dot += value.v[n][j] * grad.v[n][j];
    dot = warpReduce<false>(dot);
    // d softmax: dx = y * (dy - <y, dy>).
#pragma unroll
    for (int n = 0; n < N; ++n)
#pragma unroll
      for (int j = 0; j < W; ++j)
        value.v[n][j] *= grad.v[n][j] - dot;
    value.store(dx + r * packs * W, lane, packs);
  }
}

/// With kResidual, the row normalized is x + residual, rounded to T as
/// train.add rounds it and written to `sum` (train.add_layer_norm): the
/// sum is normalized from the registers it was computed in, not read back.
template <typename T, int N, bool kResidual>
__global__ void layerNormWarpKernel(const T *x, const T *residual, T *sum,
                                    const void *gamma, const void *beta, T *y,
                                    float *means, float *rstds, Dt gammaType,
                                    Dt betaType, int64_t rows, int64_t packs,
                                    float eps) {
  constexpr int W = Pack<T>::kWidth;
  int lane = threadIdx.x % 32;
  float inverseCols = 1.0f / static_cast<float>(packs * W);
  for (int64_t r = firstWarpRow(); r < rows; r += warpRowStride()) {
    LaneRow<T, N> row;
    row.load(x + r * packs * W, lane, packs);
    if constexpr (kResidual) {
      LaneRow<T, N> other;
      other.load(residual + r * packs * W, lane, packs);
#pragma unroll
      for (int n = 0; n < N; ++n)
#pragma unroll
        for (int j = 0; j < W; ++j)
          row.v[n][j] = toFloat(fromFloat<T>(row.v[n][j] + other.v[n][j]));
      row.store(sum + r * packs * W, lane, packs);
    }
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < N; ++n)
#pragma unroll
      for (int j = 0; j < W; ++j)
        sum += row.v[n][j];
    float mean = warpReduce<false>(sum) * inverseCols;
    // Two passes, as on CPU: the variance of centred values does not cancel.
    float squares = 0.0f;
#pragma unroll
    for (int n = 0; n < N; ++n)
#pragma unroll
      for (int j = 0; j < W; ++j) {
        row.v[n][j] -= mean;
        if (row.inRow(lane, n, packs))
          squares += row.v[n][j] * row.v[n][j];
      }
    float rstd = 1.0f / sqrtf(warpReduce<false>(squares) * inverseCols + eps);
#pragma unroll
    for (int n = 0; n < N; ++n) {
      if (!row.inRow(lane, n, packs))
        continue;
#pragma unroll
      for (int j = 0; j < W; ++j) {
        int64_t col = (lane + 32 * n) * W + j;
        row.v[n][j] = row.v[n][j] * rstd * loadF(gamma, gammaType, col) +
                      loadF(beta, betaType, col);
      }
    }
    row.store(y + r * packs * W, lane, packs);
    if (lane == 0) {
      means[r] = mean;
      rstds[r] = rstd;
    }
  }
}

/// Packs per lane (1, 2, 4 or 8) of rows of `cols` elements of T, or 0
/// where the warp kernels do not apply.
template <typename T> int lanePacks(int64_t cols) {
  constexpr int W = Pack<T>::kWidth;
  if (cols % W != 0)
    return 0;
  int64_t packs = cols / W;
  for (int n = 1; n <= kMaxLanePacks; n *= 2)
    if (packs <= 32 * n)
      return n;
  return 0;
}

/// Calls `launch(N)` with N the packs per lane as a compile-time constant.
template <typename Launch> void withLanePacks(int n, Launch launch) {
  switch (n) {
  case 1:
    launch(std::integral_constant<int, 1>{});
    return;
  case 2:
    launch(std::integral_constant<int, 2>{});
    return;
  case 4:
    launch(std::integral_constant<int, 4>{});
    return;
  default:
    launch(std::integral_constant<int, 8>{});
    return;
  }
}

inline unsigned warpRowGrid(int64_t rows) {
  int64_t blocks = (rows + kRowWarps - 1) / kRowWarps;
  return static_cast<unsigned>(blocks > 65536 ? 65536 : blocks);
}

//===----------------------------------------------------------------------===//
// A block per row, any row length
//===----------------------------------------------------------------------===//

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
  if (isFloatDt(type) && packAligned(x, y)) {
    cudaError_t error = cudaErrorNotSupported;
    withFloatType(type, [&](auto *tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      if (int n = lanePacks<T>(cols))
        withLanePacks(n, [&](auto lanes) {
          softmaxWarpKernel<T, decltype(lanes)::value>
              <<<warpRowGrid(rows), kThreads, 0, stream>>>(
                  static_cast<const T *>(x), static_cast<T *>(y), rows,
                  cols / Pack<T>::kWidth, safe);
          error = cudaGetLastError();
        });
      return error;
    });
    if (error != cudaErrorNotSupported)
      return error;
  }
  softmaxKernel<<<rowGrid(rows), kThreads, 0, stream>>>(x, y, type, rows, cols,
                                                        safe);
  return cudaGetLastError();
}

cudaError_t launchSoftmaxGrad(const void *y, const void *dy, void *dx, Dt type,
                              int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0)
    return cudaSuccess;
  if (isFloatDt(type) && packAligned(y, dy, dx)) {
    cudaError_t error = cudaErrorNotSupported;
    withFloatType(type, [&](auto *tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      if (int n = lanePacks<T>(cols))
        withLanePacks(n, [&](auto lanes) {
          softmaxGradWarpKernel<T, decltype(lanes)::value>
              <<<warpRowGrid(rows), kThreads, 0, stream>>>(
                  static_cast<const T *>(y), static_cast<const T *>(dy),
                  static_cast<T *>(dx), rows, cols / Pack<T>::kWidth);
          error = cudaGetLastError();
        });
      return error;
    });
    if (error != cudaErrorNotSupported)
      return error;
  }
  softmaxGradKernel<<<rowGrid(rows), kThreads, 0, stream>>>(y, dy, dx, type,
                                                            rows, cols);
  return cudaGetLastError();
}

namespace {

/// The warp kernel for rows of `cols` elements, or cudaErrorNotSupported
/// where it does not apply (not a float type, unaligned, too long a row).
template <bool kResidual>
cudaError_t launchLayerNormWarp(const void *x, const void *residual, void *sum,
                                const void *gamma, const void *beta, void *y,
                                float *mean, float *rstd, Dt type, Dt gammaType,
                                Dt betaType, int64_t rows, int64_t cols,
                                float eps, cudaStream_t stream) {
  if (!isFloatDt(type) || cols <= 0 ||
      !packAligned(x, y, kResidual ? residual : x, kResidual ? sum : y))
    return cudaErrorNotSupported;
  cudaError_t error = cudaErrorNotSupported;
  withFloatType(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if (int n = lanePacks<T>(cols))
      withLanePacks(n, [&](auto lanes) {
        layerNormWarpKernel<T, decltype(lanes)::value, kResidual>
            <<<warpRowGrid(rows), kThreads, 0, stream>>>(
                static_cast<const T *>(x), static_cast<const T *>(residual),
                static_cast<T *>(sum), gamma, beta, static_cast<T *>(y), mean,
                rstd, gammaType, betaType, rows, cols / Pack<T>::kWidth, eps);
        error = cudaGetLastError();
      });
    return error;
  });
  return error;
}

} // namespace

cudaError_t launchLayerNorm(const void *x, const void *gamma, const void *beta,
                            void *y, float *mean, float *rstd, Dt type,
                            Dt gammaType, Dt betaType, int64_t rows,
                            int64_t cols, float eps, cudaStream_t stream) {
  if (rows == 0)
    return cudaSuccess;
  cudaError_t error = launchLayerNormWarp<false>(
      x, nullptr, nullptr, gamma, beta, y, mean, rstd, type, gammaType,
      betaType, rows, cols, eps, stream);
  if (error != cudaErrorNotSupported)
    return error;
  layerNormKernel<<<rowGrid(rows), kThreads, 0, stream>>>(
      x, gamma, beta, y, mean, rstd, type, gammaType, betaType, rows, cols,
      eps);
  return cudaGetLastError();
}

cudaError_t launchAddLayerNorm(const void *lhs, const void *rhs,
                               const void *gamma, const void *beta, void *sum,
                               void *y, float *mean, float *rstd, Dt type,
                               Dt gammaType, Dt betaType, int64_t rows,
                               int64_t cols, float eps, cudaStream_t stream) {
  if (rows == 0)
    return cudaSuccess;
  return launchLayerNormWarp<true>(lhs, rhs, sum, gamma, beta, y, mean, rstd,
                                   type, gammaType, betaType, rows, cols, eps,
                                   stream);
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
