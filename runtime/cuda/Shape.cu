//===- Shape.cu - Reductions, broadcasts and transposes on CUDA -----------===//
//
// The binders collapse each tensor into the fewest strided dimensions (as
// the CPU kernels do), so the kernels here only decode a linear index over
// at most kMaxRank dimensions. Reductions add in a fixed order for a given
// shape: sequentially per output when the outputs are contiguous (threads
// then read neighbouring elements), else a block per output with a fixed
// tree.
//
//===----------------------------------------------------------------------===//

#include "DeviceCommon.cuh"

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

cudaError_t launchGather(const void *x, void *y, int64_t elementBytes,
                         const Strided &layout, int64_t count,
                         cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  unsigned grid = gridFor(count);
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
