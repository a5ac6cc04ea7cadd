//===- Elementwise.cu - Elementwise CUDA kernels --------------------------===//
//
// Unary and binary math (sigmoid and SiLU among them), scale, cast, bias_add,
// causal_mask, key_mask, dropout, the activation gradients and the fills. Each
// thread reads all of its inputs before it writes its output, so an output may
// be the buffer of an input. Unary and binary math and bias_add on one float
// type and 16-byte aligned buffers (arena views are) run a kernel per type
// that moves 16 bytes per load and store; the rest one element per thread
// with the type read at run time. Kernels that decode an index (the masks,
// the bias's feature) divide with FastDivmod.h's 32-bit magic numbers on
// tensors under 2^31 elements. The math is the CPU kernels' (the same GELU
// formulas, tanh and erf; 1 / sqrt for rsqrt) so that the two backends differ
// only by the last bits of the f32 library functions.
//
//===----------------------------------------------------------------------===//

#include "DeviceCommon.cuh"
#include "FastDivmod.h"

#include <algorithm>
#include <type_traits>

namespace zero::cuda::dev {
namespace {

// sqrt(2 / pi) and the cubic coefficient of GPT-2's tanh approximation.
constexpr float kGeluC = 0.7978845608028654f;
constexpr float kGeluA = 0.044715f;

// As on CPU: 0.5 (1 + tanh(u)) is the logistic function of 2u, with the
// exponent capped so that e * s never becomes inf * 0.
__device__ __forceinline__ float geluSigmoid(float x, float &oneMinus) {
  float u = kGeluC * (x + kGeluA * x * x * x);
  float e = expf(fminf(-2.0f * u, 80.0f));
  float s = 1.0f / (1.0f + e);
  oneMinus = e * s;
  return s;
}

// 1 / sqrt(2) and 1 / sqrt(2 pi), as the CPU's exact GELU.
constexpr float kSqrtHalf = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

// As on CPU: the exponent capped at 80 keeps e * s finite where s is tiny.
// fminf drops a NaN, so it is passed on by hand: PyTorch's sigmoid(NaN) is
// NaN.
__device__ __forceinline__ float logistic(float x, float &oneMinus) {
  float e = expf(fminf(-x, 80.0f));
  float s = 1.0f / (1.0f + e);
  oneMinus = isnan(x) ? x : e * s;
  return isnan(x) ? x : s;
}

// y, or NaN where x is -inf: x s(x) and its derivative there are -inf
// times a logistic capped above 0 here, NaN (x * 0) in PyTorch and on CPU.
__device__ __forceinline__ float nanAtNegativeInfinity(float x, float y) {
  return x == -INFINITY ? NAN : y;
}

__device__ __forceinline__ float unaryOp(UnaryOp op, float factor, float x) {
  float oneMinus;
  switch (op) {
  case UnaryOp::neg:
    return -x;
  case UnaryOp::exp:
    return expf(x);
  case UnaryOp::log:
    return logf(x);
  case UnaryOp::sqrt:
    return sqrtf(x);
  case UnaryOp::rsqrt:
    return 1.0f / sqrtf(x);
  case UnaryOp::tanh:
    return tanhf(x);
  case UnaryOp::relu: // NaN passes, as in PyTorch.
    return x > 0.0f || isnan(x) ? x : 0.0f;
  case UnaryOp::gelu:
    return nanAtNegativeInfinity(x, x * geluSigmoid(x, oneMinus));
  case UnaryOp::geluExact:
    return x * 0.5f * (1.0f + erff(x * kSqrtHalf));
  case UnaryOp::sigmoid:
    return logistic(x, oneMinus);
  case UnaryOp::silu:
    return nanAtNegativeInfinity(x, x * logistic(x, oneMinus));
  case UnaryOp::scale:
    return x * factor;
  case UnaryOp::copy:
    return x;
  }
  return x;
}

__device__ __forceinline__ float binaryOp(BinaryOp op, float a, float b) {
  switch (op) {
  case BinaryOp::add:
    return a + b;
  case BinaryOp::sub:
    return a - b;
  case BinaryOp::mul:
    return a * b;
  case BinaryOp::div:
    return a / b;
  case BinaryOp::reluGrad: // At a NaN the gradient passes, as in PyTorch.
    return !(a <= 0.0f) ? b : 0.0f;
  case BinaryOp::geluGrad: {
    // d/dx [x s(2u)] = s + 2 x s (1 - s) u'(x), u' = c (1 + 3 a x^2).
    float oneMinus;
    float s = geluSigmoid(a, oneMinus);
    return b * nanAtNegativeInfinity(a, s + 2.0f * a * s * oneMinus * kGeluC *
                                                (1.0f + 3.0f * kGeluA * a * a));
  }
  case BinaryOp::geluExactGrad: {
    // d/dx [x Phi(x)] = Phi(x) + x phi(x).
    float cdf = 0.5f * (1.0f + erff(a * kSqrtHalf));
    float pdf = expf(-0.5f * a * a) * kInvSqrt2Pi;
    return b * (cdf + a * pdf);
  }
  case BinaryOp::tanhGrad:
    return b * (1.0f - a * a);
  case BinaryOp::sigmoidGrad:
    return b * (a * (1.0f - a));
  case BinaryOp::siluGrad: {
    // d/dx [x s(x)] = s (1 + x (1 - s)).
    float oneMinus;
    float s = logistic(a, oneMinus);
    return b * nanAtNegativeInfinity(a, s * (1.0f + a * oneMinus));
  }
  }
  return a;
}

__global__ void unaryKernel(UnaryOp op, float factor, const void *x, Dt inType,
                            void *y, Dt outType, int64_t count) {
  for (int64_t i = globalThread(); i < count; i += globalStride())
    storeF(y, outType, i, unaryOp(op, factor, loadF(x, inType, i)));
}

__global__ void binaryKernel(BinaryOp op, const void *a, const void *b, void *y,
                             Dt type, int64_t count) {
  for (int64_t i = globalThread(); i < count; i += globalStride())
    storeF(y, type, i, binaryOp(op, loadF(a, type, i), loadF(b, type, i)));
}

// The same operations on one element type, a Pack of elements per thread
// and iteration (16-byte loads and stores), then the elements past the last
// whole Pack one per thread. Each element is computed as by the kernels
// above, so the two give the same bits; buffers not 16-byte aligned take
// those.
template <typename T>
__global__ void unaryPackKernel(UnaryOp op, float factor, const T *x, T *y,
                                int64_t count) {
  using P = Pack<T>;
  int64_t packs = count / P::kWidth;
  for (int64_t p = globalThread(); p < packs; p += globalStride()) {
    P in = reinterpret_cast<const P *>(x)[p], out;
#pragma unroll
    for (int j = 0; j < P::kWidth; ++j)
      out.v[j] = fromFloat<T>(unaryOp(op, factor, toFloat(in.v[j])));
    reinterpret_cast<P *>(y)[p] = out;
  }
  int64_t i = packs * P::kWidth + globalThread();
  if (i < count)
    y[i] = fromFloat<T>(unaryOp(op, factor, toFloat(x[i])));
}

template <typename T>
__global__ void binaryPackKernel(BinaryOp op, const T *a, const T *b, T *y,
                                 int64_t count) {
  using P = Pack<T>;
  int64_t packs = count / P::kWidth;
  for (int64_t p = globalThread(); p < packs; p += globalStride()) {
    P left = reinterpret_cast<const P *>(a)[p];
    P right = reinterpret_cast<const P *>(b)[p], out;
#pragma unroll
    for (int j = 0; j < P::kWidth; ++j)
      out.v[j] =
          fromFloat<T>(binaryOp(op, toFloat(left.v[j]), toFloat(right.v[j])));
    reinterpret_cast<P *>(y)[p] = out;
  }
  int64_t i = packs * P::kWidth + globalThread();
  if (i < count)
    y[i] = fromFloat<T>(binaryOp(op, toFloat(a[i]), toFloat(b[i])));
}

// A bias added to rows whose length is a whole number of Packs: thread x of
// the grid owns one Pack of features, loads its bias once and walks the rows
// (grid y), so no thread divides by the feature count.
template <typename T>
__global__ void biasAddPackKernel(const T *x, const T *bias, T *y, int64_t rows,
                                  int64_t featurePacks) {
  using P = Pack<T>;
  int64_t column = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (column >= featurePacks)
    return;
  P b = reinterpret_cast<const P *>(bias)[column];
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    int64_t p = row * featurePacks + column;
    P in = reinterpret_cast<const P *>(x)[p], out;
#pragma unroll
    for (int j = 0; j < P::kWidth; ++j)
      out.v[j] = fromFloat<T>(toFloat(in.v[j]) + toFloat(b.v[j]));
    reinterpret_cast<P *>(y)[p] = out;
  }
}

__global__ void biasAddKernel(const void *x, const void *bias, void *y, Dt type,
                              Dt biasType, int64_t count, int64_t features) {
  for (int64_t i = globalThread(); i < count; i += globalStride())
    storeF(y, type, i, loadF(x, type, i) + loadF(bias, biasType, i % features));
}

// The masks and the bias of a row on tensors under 2^31 elements (every
// one of GPT-2's): the same elements, indices decoded with magic divisions.
__global__ void biasAddFastKernel(const void *x, const void *bias, void *y,
                                  Dt type, Dt biasType, uint32_t count,
                                  FastDivmod features) {
  uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    uint32_t feature;
    features.divmod(i, feature);
    storeF(y, type, i, loadF(x, type, i) + loadF(bias, biasType, feature));
  }
}

__global__ void causalMaskFastKernel(const void *x, void *y, Dt type,
                                     uint32_t count, FastDivmod rows,
                                     FastDivmod cols, float fill) {
  uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    uint32_t col, row;
    rows.divmod(cols.divmod(i, col), row);
    storeF(y, type, i, col <= row ? loadF(x, type, i) : fill);
  }
}

__global__ void keyMaskFastKernel(const void *x, const void *keep, void *y,
                                  Dt type, Dt keepType, uint32_t count,
                                  FastDivmod perBatch, FastDivmod keys,
                                  uint32_t keyCount, float fill) {
  uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    uint32_t unused, key;
    uint32_t batch = perBatch.divmod(i, unused);
    keys.divmod(i, key);
    bool kept = loadId(keep, keepType, int64_t{batch} * keyCount + key) != 0;
    storeF(y, type, i, kept ? loadF(x, type, i) : fill);
  }
}

__global__ void causalMaskKernel(const void *x, void *y, Dt type, int64_t count,
                                 int64_t rows, int64_t cols, float fill) {
  for (int64_t i = globalThread(); i < count; i += globalStride()) {
    int64_t col = i % cols, row = (i / cols) % rows;
    storeF(y, type, i, col <= row ? loadF(x, type, i) : fill);
  }
}

__global__ void keyMaskKernel(const void *x, const void *keep, void *y, Dt type,
                              Dt keepType, int64_t count, int64_t perBatch,
                              int64_t keys, float fill) {
  for (int64_t i = globalThread(); i < count; i += globalStride()) {
    int64_t batch = i / perBatch, key = i % keys;
    bool kept = loadId(keep, keepType, batch * keys + key) != 0;
    storeF(y, type, i, kept ? loadF(x, type, i) : fill);
  }
}

__global__ void dropoutKernel(const void *x, void *y, Dt type, int64_t count,
                              rt::DropoutKey key, const int64_t *steps,
                              uint64_t offset, uint64_t threshold,
                              float scale) {
  // Under a captured CUDA graph the step and micro-step of each replay are
  // read from device memory.
  if (steps != nullptr) {
    key.step = steps[0];
    key.microStep = steps[1];
  }
  for (int64_t i = globalThread(); i < count; i += globalStride()) {
    bool kept = rt::dropoutKeeps(key, offset + i, threshold);
    // Multiplied by 0, not replaced by it: a dropped NaN or infinity is
    // NaN, as in PyTorch and the CPU kernel.
    storeF(y, type, i, loadF(x, type, i) * (kept ? scale : 0.0f));
  }
}

__global__ void fillFloatKernel(void *y, Dt type, int64_t count, float value) {
  for (int64_t i = globalThread(); i < count; i += globalStride())
    storeF(y, type, i, value);
}

__global__ void fillIntKernel(void *y, Dt type, int64_t count, int64_t value) {
  for (int64_t i = globalThread(); i < count; i += globalStride()) {
    if (type == Dt::i32)
      static_cast<int32_t *>(y)[i] = static_cast<int32_t>(value);
    else
      static_cast<int64_t *>(y)[i] = value;
  }
}

} // namespace

cudaError_t launchUnary(UnaryOp op, float factor, const void *x, Dt inType,
                        void *y, Dt outType, int64_t count,
                        cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  if (inType == outType && isFloatDt(inType) && packAligned(x, y))
    return withFloatType(inType, [&](auto *type) {
      using T = std::remove_pointer_t<decltype(type)>;
      unaryPackKernel<T>
          <<<gridFor(count / Pack<T>::kWidth + 1), kThreads, 0, stream>>>(
              op, factor, static_cast<const T *>(x), static_cast<T *>(y),
              count);
      return cudaGetLastError();
    });
  unaryKernel<<<gridFor(count), kThreads, 0, stream>>>(op, factor, x, inType, y,
                                                       outType, count);
  return cudaGetLastError();
}

cudaError_t launchBinary(BinaryOp op, const void *a, const void *b, void *y,
                         Dt type, int64_t count, cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  if (isFloatDt(type) && packAligned(a, b, y))
    return withFloatType(type, [&](auto *tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      binaryPackKernel<T>
          <<<gridFor(count / Pack<T>::kWidth + 1), kThreads, 0, stream>>>(
              op, static_cast<const T *>(a), static_cast<const T *>(b),
              static_cast<T *>(y), count);
      return cudaGetLastError();
    });
  binaryKernel<<<gridFor(count), kThreads, 0, stream>>>(op, a, b, y, type,
                                                        count);
  return cudaGetLastError();
}

cudaError_t launchBiasAdd(const void *x, const void *bias, void *y, Dt type,
                          Dt biasType, int64_t rows, int64_t features,
                          cudaStream_t stream) {
  int64_t count = rows * features;
  if (count == 0)
    return cudaSuccess;
  if (type == biasType && isFloatDt(type) && packAligned(x, bias, y)) {
    cudaError_t launched = cudaErrorNotSupported;
    bool packed = false;
    withFloatType(type, [&](auto *tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      if (features % Pack<T>::kWidth != 0)
        return cudaSuccess;
      int64_t featurePacks = features / Pack<T>::kWidth;
      // Threads in whole warps up to kThreads; as many row blocks as the grid
      // takes, each walking the rows beyond.
      int64_t threads =
          std::min<int64_t>(kThreads, (featurePacks + 31) / 32 * 32);
      dim3 grid(static_cast<unsigned>((featurePacks + threads - 1) / threads),
                static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
      biasAddPackKernel<T><<<grid, static_cast<unsigned>(threads), 0, stream>>>(
          static_cast<const T *>(x), static_cast<const T *>(bias),
          static_cast<T *>(y), rows, featurePacks);
      packed = true;
      launched = cudaGetLastError();
      return launched;
    });
    if (packed)
      return launched;
  }
  if (count < kFastIndexLimit) {
    biasAddFastKernel<<<gridFor(count), kThreads, 0, stream>>>(
        x, bias, y, type, biasType, static_cast<uint32_t>(count),
        FastDivmod(static_cast<uint32_t>(features)));
    return cudaGetLastError();
  }
  biasAddKernel<<<gridFor(count), kThreads, 0, stream>>>(
      x, bias, y, type, biasType, count, features);
  return cudaGetLastError();
}

cudaError_t launchCausalMask(const void *x, void *y, Dt type, int64_t matrices,
                             int64_t rows, int64_t cols, float fill,
                             cudaStream_t stream) {
  int64_t count = matrices * rows * cols;
  if (count == 0)
    return cudaSuccess;
  if (count < kFastIndexLimit) {
    causalMaskFastKernel<<<gridFor(count), kThreads, 0, stream>>>(
        x, y, type, static_cast<uint32_t>(count),
        FastDivmod(static_cast<uint32_t>(rows)),
        FastDivmod(static_cast<uint32_t>(cols)), fill);
    return cudaGetLastError();
  }
  causalMaskKernel<<<gridFor(count), kThreads, 0, stream>>>(x, y, type, count,
                                                            rows, cols, fill);
  return cudaGetLastError();
}

cudaError_t launchKeyMask(const void *x, const void *keep, void *y, Dt type,
                          Dt keepType, int64_t batch, int64_t perBatch,
                          int64_t keys, float fill, cudaStream_t stream) {
  int64_t count = batch * perBatch;
  if (count == 0)
    return cudaSuccess;
  if (count < kFastIndexLimit) {
    keyMaskFastKernel<<<gridFor(count), kThreads, 0, stream>>>(
        x, keep, y, type, keepType, static_cast<uint32_t>(count),
        FastDivmod(static_cast<uint32_t>(perBatch)),
        FastDivmod(static_cast<uint32_t>(keys)), static_cast<uint32_t>(keys),
        fill);
    return cudaGetLastError();
  }
  keyMaskKernel<<<gridFor(count), kThreads, 0, stream>>>(
      x, keep, y, type, keepType, count, perBatch, keys, fill);
  return cudaGetLastError();
}

cudaError_t launchDropout(const void *x, void *y, Dt type, int64_t count,
                          const rt::DropoutKey &key, const int64_t *steps,
                          uint64_t offset, uint64_t threshold, float scale,
                          cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  dropoutKernel<<<gridFor(count), kThreads, 0, stream>>>(
      x, y, type, count, key, steps, offset, threshold, scale);
  return cudaGetLastError();
}

cudaError_t launchFillFloat(void *y, Dt type, int64_t count, float value,
                            cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  fillFloatKernel<<<gridFor(count), kThreads, 0, stream>>>(y, type, count,
                                                           value);
  return cudaGetLastError();
}

cudaError_t launchFillInt(void *y, Dt type, int64_t count, int64_t value,
                          cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  fillIntKernel<<<gridFor(count), kThreads, 0, stream>>>(y, type, count, value);
  return cudaGetLastError();
}

} // namespace zero::cuda::dev
