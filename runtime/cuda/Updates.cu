//===- Updates.cu - Fused optimizer updates on CUDA -----------------------===//
//
// sgd, sgd_momentum, adam and adamw, each one pass over a flat tensor or
// shard: every element's parameter, gradient and state are read once and
// every result written once, with the argument layout of the CPU kernels
// (param, grad, [m, v, step] -> param, [m, v]). Each thread reads all of its
// inputs before it writes, so results may overwrite their inputs in place.
//
// A loss-scaled step passes its overflow flag (`skip_if`) last; when it is
// set, each thread copies its operands to its results instead, which is a
// no-op for results updated in place.
//
// The learning rate of the step (schedule included) is computed on the
// device, once per block, from the runtime's step in device memory (see
// LrParams), so that a captured CUDA graph replays with each step's rate;
// Adam's step tensor lives on the device too, so its bias corrections are
// computed there, once per block, in double.
//
//===----------------------------------------------------------------------===//

#include "DeviceCommon.cuh"

namespace zero::cuda::dev {
namespace {

/// Whether a step is skipped: a set flag is anything but 0, NaN included.
__device__ __forceinline__ bool skipped(const float *skip) {
  return skip != nullptr && !(*skip == 0.0f);
}

/// scheduledLearningRate (runtime/cpu/Updates.cpp) on the device, with the
/// same double arithmetic: the final multiply-add is rounded twice
/// (__dmul_rn, __dadd_rn) because nvcc would otherwise fuse it, which the
/// host does not. Only cos may differ, in its last ulp of double, which the
/// cast to float absorbs but in rare ties.
__device__ double scheduledRate(const LrParams &r, int64_t step) {
  double t = static_cast<double>(step);
  if (r.warmup > 0 && step <= r.warmup)
    return r.exactLr * t / static_cast<double>(r.warmup);
  if (r.kind == LrKind::constant)
    return r.exactLr;
  if (step >= r.total)
    return r.minLr;
  double progress = (t - static_cast<double>(r.warmup)) /
                    static_cast<double>(r.total - r.warmup);
  progress = fmin(fmax(progress, 0.0), 1.0);
  double remaining = r.kind == LrKind::linear
                         ? 1.0 - progress
                         : 0.5 * (1.0 + cos(3.14159265358979323846 * progress));
  return __dadd_rn(r.minLr, __dmul_rn(r.exactLr - r.minLr, remaining));
}

/// The rate of this launch's step, as StepLr::at computes it on the host.
__device__ float learningRate(const LrParams &r) {
  if (r.kind == LrKind::none)
    return r.lr;
  return static_cast<float>(__dmul_rn(scheduledRate(r, *r.step), r.factor));
}

/// learningRate, computed by thread 0 and shared with the block. Every
/// thread of the block must call it.
__device__ float blockLearningRate(const LrParams &r) {
  __shared__ float rate;
  if (threadIdx.x == 0)
    rate = learningRate(r);
  __syncthreads();
  return rate;
}

/// The gradient with L2 weight decay; without decay the term is left out,
/// not added as 0 * p: an infinite parameter stays infinite, as in
/// PyTorch's optimizers and the CPU kernels (0 * inf is NaN).
__device__ float withDecay(float grad, float wd, float param) {
  return wd != 0.0f ? grad + wd * param : grad;
}

__global__ void sgdKernel(const void *p, const void *g, void *pOut,
                          Dt paramType, Dt gradType, int64_t count,
                          LrParams rate, float wd, const float *skip) {
  float lr = blockLearningRate(rate);
  bool keep = skipped(skip);
  for (int64_t i = globalThread(); i < count; i += globalStride()) {
    float param = loadF(p, paramType, i);
    if (keep) {
      storeF(pOut, paramType, i, param);
      continue;
    }
    float grad = loadF(g, gradType, i);
    storeF(pOut, paramType, i, param - lr * withDecay(grad, wd, param));
  }
}

__global__ void sgdMomentumKernel(const void *p, const void *g, const void *b,
                                  void *pOut, void *bOut, Dt paramType,
                                  Dt gradType, Dt bufType, int64_t count,
                                  LrParams rate, float wd, float mu,
                                  const float *skip) {
  float lr = blockLearningRate(rate);
  bool keep = skipped(skip);
  for (int64_t i = globalThread(); i < count; i += globalStride()) {
    float param = loadF(p, paramType, i);
    if (keep) {
      storeF(pOut, paramType, i, param);
      storeF(bOut, bufType, i, loadF(b, bufType, i));
      continue;
    }
    float buf =
        mu * loadF(b, bufType, i) + withDecay(loadF(g, gradType, i), wd, param);
    storeF(pOut, paramType, i, param - lr * buf);
    storeF(bOut, bufType, i, buf);
  }
}

__global__ void adamKernel(const void *p, const void *g, const float *m,
                           const float *v, const int64_t *step, void *pOut,
                           float *mOut, float *vOut, Dt paramType, Dt gradType,
                           int64_t count, LrParams rate, AdamHyper h,
                           const float *skip) {
  __shared__ float lr, stepSize, correction2Sqrt;
  __shared__ bool valid;
  if (threadIdx.x == 0) {
    lr = learningRate(rate);
    int64_t t = *step;
    valid = t >= 1;
    // The PyTorch form, as on CPU: lr / (1 - beta1^t) * m /
    // (sqrt(v) / sqrt(1 - beta2^t) + eps).
    double t64 = static_cast<double>(t);
    stepSize =
        static_cast<float>(static_cast<double>(lr) /
                           (1.0 - pow(static_cast<double>(h.beta1), t64)));
    correction2Sqrt =
        static_cast<float>(sqrt(1.0 - pow(static_cast<double>(h.beta2), t64)));
  }
  __syncthreads();
  float wdGrad = h.decoupled ? 0.0f : h.weightDecay;
  float shrink = h.decoupled ? 1.0f - lr * h.weightDecay : 1.0f;
  float oneMinusB1 = 1.0f - h.beta1, oneMinusB2 = 1.0f - h.beta2;
  bool keep = skipped(skip);
  for (int64_t i = globalThread(); i < count; i += globalStride()) {
    float param = loadF(p, paramType, i);
    if (keep) {
      storeF(pOut, paramType, i, param);
      mOut[i] = m[i];
      vOut[i] = v[i];
      continue;
    }
    float grad = withDecay(loadF(g, gradType, i), wdGrad, param);
    float mi = h.beta1 * m[i] + oneMinusB1 * grad;
    float vi = h.beta2 * v[i] + oneMinusB2 * grad * grad;
    float denom = sqrtf(vi) / correction2Sqrt + h.eps;
    float updated = param * shrink - stepSize * mi / denom;
    // A step below 1 is an error on CPU; here it poisons the results.
    storeF(pOut, paramType, i, valid ? updated : NAN);
    mOut[i] = valid ? mi : NAN;
    vOut[i] = valid ? vi : NAN;
  }
}

} // namespace

cudaError_t launchSgd(const void *p, const void *g, void *pOut, Dt paramType,
                      Dt gradType, int64_t count, const LrParams &rate,
                      float weightDecay, const float *skip,
                      cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  sgdKernel<<<gridFor(count), kThreads, 0, stream>>>(
      p, g, pOut, paramType, gradType, count, rate, weightDecay, skip);
  return cudaGetLastError();
}

cudaError_t launchSgdMomentum(const void *p, const void *g, const void *buf,
                              void *pOut, void *bufOut, Dt paramType,
                              Dt gradType, Dt bufType, int64_t count,
                              const LrParams &rate, float weightDecay,
                              float momentum, const float *skip,
                              cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  sgdMomentumKernel<<<gridFor(count), kThreads, 0, stream>>>(
      p, g, buf, pOut, bufOut, paramType, gradType, bufType, count, rate,
      weightDecay, momentum, skip);
  return cudaGetLastError();
}

cudaError_t launchAdam(const void *p, const void *g, const float *m,
                       const float *v, const int64_t *step, void *pOut,
                       float *mOut, float *vOut, Dt paramType, Dt gradType,
                       int64_t count, const LrParams &rate,
                       const AdamHyper &hyper, const float *skip,
                       cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  adamKernel<<<gridFor(count), kThreads, 0, stream>>>(
      p, g, m, v, step, pOut, mOut, vOut, paramType, gradType, count, rate,
      hyper, skip);
  return cudaGetLastError();
}

} // namespace zero::cuda::dev
