//===- CudaSupport.h - Shared pieces of the CUDA binders --------*- C++ -*-===//
//
// What every CUDA binder uses: the request (the CPU kernels' BindRequest,
// already checked by the CPU binder of the same name, plus the stream), the
// element-type bridge to the device code, CUDA errors as Status, and device
// scratch owned by the bound kernel.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CUDA_CUDASUPPORT_H
#define ZERO_RUNTIME_CUDA_CUDASUPPORT_H

#include "DeviceKernels.h"

#include "zero/runtime/CudaKernels.h"

#include "../cpu/KernelSupport.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>

namespace zero::rt::cuda {

using cpu::BindRequest;
namespace dev = zero::cuda::dev;

/// Binds a request that bindCpuKernel's checks have accepted: a binder only
/// reads the geometry and attributes it needs, it does not check them again.
using Binder = absl::StatusOr<KernelFn> (*)(const BindRequest &request,
                                            cudaStream_t stream);

static_assert(
    static_cast<int>(DType::f32) == static_cast<int>(dev::Dt::f32) &&
        static_cast<int>(DType::bf16) == static_cast<int>(dev::Dt::bf16) &&
        static_cast<int>(DType::f16) == static_cast<int>(dev::Dt::f16) &&
        static_cast<int>(DType::i32) == static_cast<int>(dev::Dt::i32) &&
        static_cast<int>(DType::i64) == static_cast<int>(dev::Dt::i64) &&
        static_cast<int>(DType::i8) == static_cast<int>(dev::Dt::i8),
    "dev::Dt must list the element types in DType's order");

inline dev::Dt dt(DType dtype) { return static_cast<dev::Dt>(dtype); }

/// OK, or InternalError "KERNEL: WHAT: cudaErrorX (text)".
absl::Status cudaStatus(absl::string_view kernel, cudaError_t error,
                        absl::string_view what);

/// A launch's status, naming the kernel.
inline absl::Status launched(absl::string_view kernel, cudaError_t error) {
  return cudaStatus(kernel, error, "launch");
}

/// Device memory allocated at bind time; freed with the last copy of the
/// bound kernel that holds it.
class DeviceScratch {
public:
  static absl::StatusOr<std::shared_ptr<DeviceScratch>>
  allocate(absl::string_view kernel, int64_t bytes);
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch &) = delete;
  DeviceScratch &operator=(const DeviceScratch &) = delete;

  template <typename T> T *as() const { return static_cast<T *>(data_); }

private:
  explicit DeviceScratch(void *data) : data_(data) {}
  void *data_;
};

/// The cuBLAS and cuBLASLt handles and the one workspace that every matmul
/// bound to a stream shares: a stream runs its matmuls one after another,
/// so they can take turns on one workspace. Created by the first matmul
/// bound to the stream, freed with the last.
struct StreamBlas {
  /// cuBLAS's recommended workspace on Hopper.
  static constexpr int64_t kWorkspaceBytes = int64_t{32} << 20;
  void *blas = nullptr; // cublasHandle_t, bound to the stream
  void *lt = nullptr;   // cublasLtHandle_t
  std::shared_ptr<DeviceScratch> workspace;
  StreamBlas() = default;
  StreamBlas(const StreamBlas &) = delete;
  StreamBlas &operator=(const StreamBlas &) = delete;
  ~StreamBlas();
};
absl::StatusOr<std::shared_ptr<StreamBlas>>
getStreamBlas(absl::string_view kernel, cudaStream_t stream);

/// The learning rate of a step, as the CPU update kernels compute it: the
/// `lr` param itself without a schedule, else scheduledLearningRate.
struct StepLr {
  float lr = 0.0f;
  double exactLr = 0.0;
  bool scheduled = false;
  LrSchedule schedule;

  float at(const KernelContext &ctx) const {
    double factor = ctx.learningRateFactor;
    if (!scheduled)
      return factor == 1.0 ? lr : static_cast<float>(exactLr * factor);
    return static_cast<float>(
        scheduledLearningRate(schedule, exactLr, ctx.step) * factor);
  }

  /// The rate of a call for the device: with a schedule and a device step,
  /// the schedule itself, computed on the device from *ctx.deviceStep (so
  /// that a captured graph follows the step of each replay); otherwise the
  /// rate of the host step, computed here.
  dev::LrParams forCall(const KernelContext &ctx) const {
    dev::LrParams params;
    if (!scheduled || ctx.deviceStep == nullptr) {
      params.lr = at(ctx);
      return params;
    }
    params.lr = lr;
    params.exactLr = exactLr;
    switch (schedule.kind) {
    case LrSchedule::Kind::constant:
      params.kind = dev::LrKind::constant;
      break;
    case LrSchedule::Kind::linear:
      params.kind = dev::LrKind::linear;
      break;
    case LrSchedule::Kind::cosine:
      params.kind = dev::LrKind::cosine;
      break;
    }
    params.warmup = schedule.warmup;
    params.total = schedule.total;
    params.minLr = schedule.minLr;
    params.step = ctx.deviceStep;
    params.factor = ctx.learningRateFactor;
    return params;
  }
};
absl::StatusOr<StepLr> readStepLr(const BindRequest &request);

// Binders, one family per file.
absl::StatusOr<KernelFn> bindUnary(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindBinary(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindScale(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindCast(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindBiasAdd(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindCausalMask(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindKeyMask(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindDropout(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindFill(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindStepIndex(const BindRequest &, cudaStream_t);

absl::StatusOr<KernelFn> bindMatmul(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindFusedMatmul(const BindRequest &, cudaStream_t);
/// The CUDA kernels of a fused op's chain on `stream` (cpu::bindMatmulChain,
/// cpu::bindAddLayerNormChain), for what the fused kernel does not serve.
inline cpu::PartBinder cudaParts(cudaStream_t stream) {
  return [stream](absl::string_view name, const KernelParams &params,
                  absl::Span<const TensorSpec> ins,
                  absl::Span<const TensorSpec> outs) {
    return bindCudaKernel(name, params, ins, outs, stream);
  };
}

/// The geometry of a train.attention or train.attention_grad request the CPU
/// binder has checked, read from operand 1 (the key in either op, the
/// query's spec): slices, rows and the `seq_major` layout.
absl::StatusOr<dev::AttentionDims> attentionDims(const BindRequest &request);
/// train.attention or train.attention_grad on cuDNN's fused SDPA
/// (CudnnAttention.cpp), or nothing where cuDNN does not serve the request
/// (not loaded, f32, a head dimension or shape it does not take): the
/// built-in kernel serves it then.
absl::StatusOr<std::optional<KernelFn>>
bindCudnnAttention(const BindRequest &request, cudaStream_t stream);
/// OK where libcudnn.so.9 loaded (opening it on the first call), else why not.
absl::Status cudnnAttentionStatus();
absl::StatusOr<KernelFn> bindAttention(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindAttentionGrad(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindSoftmax(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindSoftmaxGrad(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindLayerNorm(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindAddLayerNorm(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindLayerNormGrad(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindEmbedding(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindEmbeddingGrad(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindCountLabels(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindCrossEntropy(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindCrossEntropyGrad(const BindRequest &,
                                              cudaStream_t);

absl::StatusOr<KernelFn> bindReduce(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindExpand(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindReshape(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindTranspose(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindSlice(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindSliceRange(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindPad(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindConcat(const BindRequest &, cudaStream_t);

absl::StatusOr<KernelFn> bindSgd(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindSgdMomentum(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindAdam(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindSumSquares(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindScaleByNorm(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindUnscale(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindUpdateLossScale(const BindRequest &, cudaStream_t);

absl::StatusOr<KernelFn> bindQuantize(const BindRequest &, cudaStream_t);
absl::StatusOr<KernelFn> bindDequantize(const BindRequest &, cudaStream_t);

} // namespace zero::rt::cuda

#endif // ZERO_RUNTIME_CUDA_CUDASUPPORT_H
