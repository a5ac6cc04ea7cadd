//===- Shape.cu - Reductions, broadcasts and transposes on CUDA -----------===//
//
// The binders collapse each tensor into the fewest strided dimensions (as
// the CPU kernels do), so the kernels here only decode a linear index over
// at most kMaxRank dimensions. Reductions add in a fixed order for a given
// shape: over the leading dimensions (a bias gradient) in chunks of rows,
// two passes parallel over chunks and columns, in the CPU kernel's order;
// otherwise sequentially per output when the outputs are contiguous
// (threads then read neighbouring elements), else a block per output with
// a fixed tree. Transposes and broadcasts of fewer than 2^31 elements
// decode their indices with 32-bit magic divisions (FastDivmod.h).
//
//===----------------------------------------------------------------------===//

#include "DeviceCommon.cuh"
#include "FastDivmod.h"

namespace zero::cuda::dev {
namespace {

/// The offset of linear index `index` of `layout` in the strided tensor.
__device__ __forceinline__ int64_t offsetOf(const Strided &layout,
                                            int64_t index) {
  int64_t offset = 0;
  for (int d = layout.rank - 1; d >= 0; --d) {
    int64_t extent = layout.extent[d];
    offset += (index % extent) * layout.stride[d];
    index /= extent;
  }
  return offset;
}

__global__ void reducePerThread(const void *x, Dt inType, void *y, Dt outType,
                                Strided kept, Strided dropped, int64_t outCount,
                                int64_t reduced, float divisor) {
  for (int64_t o = globalThread(); o < outCount; o += globalStride()) {
    int64_t base = offsetOf(kept, o);
    float sum = 0.0f;
    for (int64_t r = 0; r < reduced; ++r)
      sum += loadF(x, inType, base + offsetOf(dropped, r));
    storeF(y, outType, o, sum / divisor);
  }
}

__global__ void reducePerBlock(const void *x, Dt inType, void *y, Dt outType,
                               Strided kept, Strided dropped, int64_t outCount,
                               int64_t reduced, float divisor) {
  __shared__ float shared[kThreads / 32];
  for (int64_t o = blockIdx.x; o < outCount; o += gridDim.x) {
    int64_t base = offsetOf(kept, o);
    float sum = 0.0f;
    for (int64_t r = threadIdx.x; r < reduced; r += kThreads)
      sum += loadF(x, inType, base + offsetOf(dropped, r));
    sum = blockSum(sum, shared);
    if (threadIdx.x == 0)
      storeF(y, outType, o, sum / divisor);
  }
}

/// Pass 1: partials[k][c] = x[k * chunkRows][c] + ... over chunk k's rows,
/// from zero. blockIdx.y walks the chunks, the x dimension the columns, so
/// a warp reads 32 neighbouring columns of one row.
template <typename T>
__global__ void columnChunkSums(const T *__restrict__ x,
                                float *__restrict__ partials, int64_t rows,
                                int64_t columns, int64_t chunkRows,
                                int64_t chunks) {
  for (int64_t k = blockIdx.y; k < chunks; k += gridDim.y) {
    int64_t begin = k * chunkRows;
    int64_t end = begin + chunkRows < rows ? begin + chunkRows : rows;
    for (int64_t c = globalThread(); c < columns; c += globalStride()) {
      const T *p = x + begin * columns + c;
      float sum = 0.0f;
      for (int64_t r = begin; r < end; ++r, p += columns)
        sum += toFloat(*p);
      partials[k * columns + c] = sum;
    }
  }
}

/// Pass 2: y[c] = (partials[0][c] + partials[1][c] + ...) / divisor.
__global__ void columnChunkTotals(const float *__restrict__ partials, void *y,
                                  Dt outType, int64_t columns, int64_t chunks,
                                  float divisor) {
  for (int64_t c = globalThread(); c < columns; c += globalStride()) {
    float sum = 0.0f;
    for (int64_t k = 0; k < chunks; ++k)
      sum += partials[k * columns + c];
    storeF(y, outType, c, sum / divisor);
  }
}

/// A Strided layout with 32-bit offsets and its extents' magic divisors.
struct FastStrided {
  int rank = 0;
  FastDivmod extent[kMaxRank];
  uint32_t stride[kMaxRank] = {};
};

/// The fast layout of `layout`, when `count` indices and every offset fit
/// 31 bits.
bool toFastStrided(const Strided &layout, int64_t count, FastStrided &fast) {
  if (count >= kFastIndexLimit)
    return false;
  int64_t last = 0;
  for (int d = 0; d < layout.rank; ++d) {
    if (layout.extent[d] < 1 || layout.extent[d] >= kFastIndexLimit ||
        layout.stride[d] < 0)
      return false;
    last += (layout.extent[d] - 1) * layout.stride[d];
    if (last >= kFastIndexLimit)
      return false;
  }
  fast.rank = layout.rank;
  for (int d = 0; d < layout.rank; ++d) {
    fast.extent[d] = FastDivmod(static_cast<uint32_t>(layout.extent[d]));
    fast.stride[d] = static_cast<uint32_t>(layout.stride[d]);
  }
  return true;
}

template <typename Word>
__global__ void gatherFastKernel(const Word *x, Word *y, FastStrided layout,
                                 uint32_t count) {
  uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    uint32_t index = i, offset = 0;
    for (int d = layout.rank - 1; d >= 0; --d) {
      uint32_t coordinate;
      index = layout.extent[d].divmod(index, coordinate);
      offset += coordinate * layout.stride[d];
    }
    y[i] = x[offset];
  }
}

template <typename Word>
__global__ void gatherKernel(const Word *x, Word *y, Strided layout,
                             int64_t count) {
  for (int64_t i = globalThread(); i < count; i += globalStride())
    y[i] = x[offsetOf(layout, i)];
}

} // namespace

cudaError_t launchReduce(const void *x, Dt inType, void *y, Dt outType,
                         const Strided &kept, const Strided &dropped,
                         int64_t outCount, int64_t reduced, float divisor,
                         bool threadPerOutput, cudaStream_t stream) {
  if (outCount == 0)
    return cudaSuccess;
  if (threadPerOutput)
    reducePerThread<<<gridFor(outCount), kThreads, 0, stream>>>(
        x, inType, y, outType, kept, dropped, outCount, reduced, divisor);
  else
    reducePerBlock<<<rowGrid(outCount), kThreads, 0, stream>>>(
        x, inType, y, outType, kept, dropped, outCount, reduced, divisor);
  return cudaGetLastError();
}

cudaError_t launchColumnReduce(const void *x, Dt inType, float *partials,
                               void *y, Dt outType, int64_t rows,
                               int64_t columns, int64_t chunkRows,
                               float divisor, cudaStream_t stream) {
  if (columns == 0)
    return cudaSuccess;
  int64_t chunks = (rows + chunkRows - 1) / chunkRows;
  unsigned columnBlocks = gridFor(columns);
  dim3 grid(columnBlocks,
            static_cast<unsigned>(chunks < 65535 ? (chunks < 1 ? 1 : chunks)
                                                 : 65535));
  switch (inType) {
  case Dt::bf16:
    columnChunkSums<<<grid, kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16 *>(x), partials, rows, columns,
        chunkRows, chunks);
    break;
  case Dt::f16:
    columnChunkSums<<<grid, kThreads, 0, stream>>>(
        static_cast<const __half *>(x), partials, rows, columns, chunkRows,
        chunks);
    break;
  default:
    columnChunkSums<<<grid, kThreads, 0, stream>>>(
        static_cast<const float *>(x), partials, rows, columns, chunkRows,
        chunks);
    break;
  }
  if (cudaError_t error = cudaGetLastError(); error != cudaSuccess)
    return error;
  columnChunkTotals<<<columnBlocks, kThreads, 0, stream>>>(
      partials, y, outType, columns, chunks, divisor);
  return cudaGetLastError();
}

cudaError_t launchGather(const void *x, void *y, int64_t elementBytes,
                         const Strided &layout, int64_t count,
                         cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  unsigned grid = gridFor(count);
  // Tensors under 2^31 elements (all of GPT-2's) decode with 32-bit magic
  // divisions instead of 64-bit ones.
  if (FastStrided fast; toFastStrided(layout, count, fast)) {
    uint32_t n = static_cast<uint32_t>(count);
    if (elementBytes == 2)
      gatherFastKernel<<<grid, kThreads, 0, stream>>>(
          static_cast<const uint16_t *>(x), static_cast<uint16_t *>(y), fast,
          n);
    else if (elementBytes == 4)
      gatherFastKernel<<<grid, kThreads, 0, stream>>>(
          static_cast<const uint32_t *>(x), static_cast<uint32_t *>(y), fast,
          n);
    else
      gatherFastKernel<<<grid, kThreads, 0, stream>>>(
          static_cast<const uint64_t *>(x), static_cast<uint64_t *>(y), fast,
          n);
    return cudaGetLastError();
  }
  if (elementBytes == 2)
    gatherKernel<<<grid, kThreads, 0, stream>>>(
        static_cast<const uint16_t *>(x), static_cast<uint16_t *>(y), layout,
        count);
  else if (elementBytes == 4)
    gatherKernel<<<grid, kThreads, 0, stream>>>(
        static_cast<const uint32_t *>(x), static_cast<uint32_t *>(y), layout,
        count);
  else
    gatherKernel<<<grid, kThreads, 0, stream>>>(
        static_cast<const uint64_t *>(x), static_cast<uint64_t *>(y), layout,
        count);
  return cudaGetLastError();
}

} // namespace zero::cuda::dev
