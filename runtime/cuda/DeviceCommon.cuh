//===- DeviceCommon.cuh - Helpers of the device code ------------*- C++ -*-===//
//
// Loads and stores by run-time element type (f32 compute, round to nearest
// even on store, as the CPU kernels do), launch geometry, and a block sum
// whose order depends only on the block size, so that results repeat bit for
// bit from call to call.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CUDA_DEVICECOMMON_CUH
#define ZERO_RUNTIME_CUDA_DEVICECOMMON_CUH

#include "DeviceKernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace zero::cuda::dev {

/// Threads per block of every kernel: row kernels use one block per row, so
/// the row reductions below assume this size.
constexpr int kThreads = 256;

__device__ __forceinline__ float loadF(const void *data, Dt type, int64_t i) {
  switch (type) {
  case Dt::bf16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(data)[i]);
  case Dt::f16:
    return __half2float(static_cast<const __half *>(data)[i]);
  default:
    return static_cast<const float *>(data)[i];
  }
}

__device__ __forceinline__ void storeF(void *data, Dt type, int64_t i,
                                       float value) {
  switch (type) {
  case Dt::bf16:
    static_cast<__nv_bfloat16 *>(data)[i] = __float2bfloat16_rn(value);
    return;
  case Dt::f16:
    static_cast<__half *>(data)[i] = __float2half_rn(value);
    return;
  default:
    static_cast<float *>(data)[i] = value;
    return;
  }
}

__device__ __forceinline__ int64_t loadId(const void *data, Dt type,
                                          int64_t i) {
  if (type == Dt::i32)
    return static_cast<const int32_t *>(data)[i];
  return static_cast<const int64_t *>(data)[i];
}

/// The same conversions with the element type known at compile time, for
/// kernels instantiated per type (no switch per element).
__device__ __forceinline__ float toFloat(float x) { return x; }
__device__ __forceinline__ float toFloat(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float toFloat(__half x) { return __half2float(x); }

template <typename T> __device__ __forceinline__ T fromFloat(float x);
template <> __device__ __forceinline__ float fromFloat<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ __half fromFloat<__half>(float x) {
  return __float2half_rn(x);
}

/// 16 bytes of elements, moved with one vector load or store (8 bf16 or f16,
/// 4 f32): the widest access a thread makes in one instruction.
constexpr int kVectorBytes = 16;
template <typename T> struct alignas(kVectorBytes) Pack {
  static constexpr int kWidth = kVectorBytes / sizeof(T);
  T v[kWidth];
};

/// Whether every pointer given is aligned for Pack loads and stores.
template <typename... Ptrs> inline bool packAligned(const Ptrs *...pointers) {
  return ((reinterpret_cast<uintptr_t>(pointers) % kVectorBytes == 0) && ...);
}

inline bool isFloatDt(Dt type) {
  return type == Dt::f32 || type == Dt::bf16 || type == Dt::f16;
}

/// Calls `body` with a null pointer of the storage type of float type `type`
/// (float, __nv_bfloat16 or __half), to instantiate a kernel per type.
template <typename Body> inline cudaError_t withFloatType(Dt type, Body body) {
  switch (type) {
  case Dt::bf16:
    return body(static_cast<__nv_bfloat16 *>(nullptr));
  case Dt::f16:
    return body(static_cast<__half *>(nullptr));
  default:
    return body(static_cast<float *>(nullptr));
  }
}

/// Blocks for a grid-stride loop over `count` elements: enough to fill any
/// current GPU, few enough that the grid size never overflows.
inline unsigned gridFor(int64_t count) {
  int64_t blocks = (count + kThreads - 1) / kThreads;
  if (blocks > 65536)
    blocks = 65536;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

/// Grid rows for one block per row; rows beyond it loop.
inline unsigned rowGrid(int64_t rows) {
  int64_t blocks = rows > 65536 ? 65536 : rows;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

__device__ __forceinline__ int64_t globalThread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ int64_t globalStride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

/// Sum (or max) over the 32 lanes of a warp, returned to every lane, in an
/// order fixed by the lane numbers; the warp must be converged.
template <bool Max> __device__ __forceinline__ float warpReduce(float value) {
  for (int offset = 16; offset > 0; offset /= 2) {
    float other = __shfl_xor_sync(0xffffffffu, value, offset);
    value = Max ? fmaxf(value, other) : value + other;
  }
  return value;
}

/// Sum (or max) over the kThreads threads of a block, returned to every
/// thread. `shared` holds kThreads / 32 floats; the block must be converged.
template <bool Max>
__device__ __forceinline__ float blockReduce(float value, float *shared) {
  for (int offset = 16; offset > 0; offset /= 2) {
    float other = __shfl_xor_sync(0xffffffffu, value, offset);
    value = Max ? fmaxf(value, other) : value + other;
  }
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads(); // `shared` may still be read by a previous reduction.
  if (lane == 0)
    shared[warp] = value;
  __syncthreads();
  value = lane < kThreads / 32 ? shared[lane] : (Max ? -INFINITY : 0.0f);
  for (int offset = 16; offset > 0; offset /= 2) {
    float other = __shfl_xor_sync(0xffffffffu, value, offset);
    value = Max ? fmaxf(value, other) : value + other;
  }
  return value;
}

__device__ __forceinline__ float blockSum(float value, float *shared) {
  return blockReduce<false>(value, shared);
}
__device__ __forceinline__ float blockMax(float value, float *shared) {
  return blockReduce<true>(value, shared);
}

} // namespace zero::cuda::dev

#endif // ZERO_RUNTIME_CUDA_DEVICECOMMON_CUH
