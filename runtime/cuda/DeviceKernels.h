//===- DeviceKernels.h - Launchers of the CUDA kernels ----------*- C++ -*-===//
//
// The plain C++ interface between the binders (host code with Abseil and
// MLIR, compiled by the C++ compiler) and the device code in the .cu files
// (compiled by nvcc, which never sees those headers). Every launcher only
// enqueues on `stream` and returns the launch status; buffers are device
// pointers, element types are passed at run time (a block-uniform switch is
// cheaper than compiling every combination of storage types).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CUDA_DEVICEKERNELS_H
#define ZERO_RUNTIME_CUDA_DEVICEKERNELS_H

#include "zero/runtime/Dropout.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace zero::cuda::dev {

/// Element types, in the order of zero::rt::DType (checked in
/// CudaSupport.h).
enum class Dt : int { f32 = 0, bf16 = 1, f16 = 2, i32 = 3, i64 = 4, i8 = 5 };

//===- Elementwise.cu -----------------------------------------------------===//

/// `copy` converts between float types (train.cast); `scale` multiplies by
/// `factor`.
enum class UnaryOp : int {
  neg,
  exp,
  log,
  sqrt,
  rsqrt,
  tanh,
  relu,
  gelu,
  geluExact,
  sigmoid,
  silu,
  scale,
  copy
};
cudaError_t launchUnary(UnaryOp op, float factor, const void *x, Dt inType,
                        void *y, Dt outType, int64_t count,
                        cudaStream_t stream);

/// The activation gradients take (saved input or result, dy) as (a, b).
enum class BinaryOp : int {
  add,
  sub,
  mul,
  div,
  reluGrad,
  geluGrad,
  geluExactGrad,
  tanhGrad,
  sigmoidGrad,
  siluGrad
};
cudaError_t launchBinary(BinaryOp op, const void *a, const void *b, void *y,
                         Dt type, int64_t count, cudaStream_t stream);

cudaError_t launchBiasAdd(const void *x, const void *bias, void *y, Dt type,
                          Dt biasType, int64_t rows, int64_t features,
                          cudaStream_t stream);
cudaError_t launchCausalMask(const void *x, void *y, Dt type, int64_t matrices,
                             int64_t rows, int64_t cols, float fill,
                             cudaStream_t stream);
/// train.dropout (runtime/Dropout.h); `steps`, when not null, holds the
/// step and micro-step in device memory, read instead of key's.
cudaError_t launchDropout(const void *x, void *y, Dt type, int64_t count,
                          const rt::DropoutKey &key, const int64_t *steps,
                          uint64_t offset, uint64_t threshold, float scale,
                          cudaStream_t stream);
/// `perBatch` elements of x per row of `keep` [batch, keys].
cudaError_t launchKeyMask(const void *x, const void *keep, void *y, Dt type,
                          Dt keepType, int64_t batch, int64_t perBatch,
                          int64_t keys, float fill, cudaStream_t stream);
cudaError_t launchFillFloat(void *y, Dt type, int64_t count, float value,
                            cudaStream_t stream);
/// i32 or i64 `y`; also writes train.step_index's scalar.
cudaError_t launchFillInt(void *y, Dt type, int64_t count, int64_t value,
                          cudaStream_t stream);

//===- Attention.cu -------------------------------------------------------===//

/// The largest head dimension the attention kernels take.
int64_t attentionMaxHeadDim();
/// `slices` independent [seq, head_dim] attentions: dense slices of
/// [..., seq, head_dim], or with `seqMajor` the heads of [..., seq, heads,
/// head_dim], a row every heads * head_dim elements.
struct AttentionDims {
  int64_t slices = 1, seq = 0, headDim = 0;
  int64_t heads = 1;
  bool seqMajor = false;
  float scale = 1.0f;
  bool causal = false;
};
/// `lse` one f32 per query row, [slices, seq].
cudaError_t launchAttention(const void *q, const void *k, const void *v,
                            void *out, float *lse, Dt type,
                            const AttentionDims &dims, cudaStream_t stream);
cudaError_t launchAttentionGrad(const void *dout, const void *q, const void *k,
                                const void *v, const void *out,
                                const float *lse, void *dq, void *dk, void *dv,
                                Dt type, const AttentionDims &dims,
                                cudaStream_t stream);

//===- Normalization.cu ---------------------------------------------------===//

/// With `safe`, a row of only -inf gives zeros, not NaN.
cudaError_t launchSoftmax(const void *x, void *y, Dt type, int64_t rows,
                          int64_t cols, bool safe, cudaStream_t stream);
cudaError_t launchSoftmaxGrad(const void *y, const void *dy, void *dx, Dt type,
                              int64_t rows, int64_t cols, cudaStream_t stream);
cudaError_t launchLayerNorm(const void *x, const void *gamma, const void *beta,
                            void *y, float *mean, float *rstd, Dt type,
                            Dt gammaType, Dt betaType, int64_t rows,
                            int64_t cols, float eps, cudaStream_t stream);
/// train.add_layer_norm in one pass over each row: sum = lhs + rhs (rounded
/// to `type`), then the layer norm of the sum; cudaErrorNotSupported where
/// the row is not one the warp kernel takes (the caller runs train.add and
/// train.layer_norm then).
cudaError_t launchAddLayerNorm(const void *lhs, const void *rhs,
                               const void *gamma, const void *beta, void *sum,
                               void *y, float *mean, float *rstd, Dt type,
                               Dt gammaType, Dt betaType, int64_t rows,
                               int64_t cols, float eps, cudaStream_t stream);
/// Rows per partial of the scale gradients: `partials` holds
/// 2 * layerNormGradPartials(rows) * cols floats.
int64_t layerNormGradPartials(int64_t rows);
cudaError_t launchLayerNormGrad(const void *dy, const void *x,
                                const void *gamma, const float *mean,
                                const float *rstd, void *dx, void *dgamma,
                                void *dbeta, Dt type, Dt gammaType,
                                Dt dgammaType, Dt dbetaType, int64_t rows,
                                int64_t cols, float *partials,
                                cudaStream_t stream);

//===- EmbeddingLoss.cu ---------------------------------------------------===//

cudaError_t launchEmbedding(const void *table, const void *ids, void *out,
                            Dt type, Dt idType, int64_t count,
                            int64_t vocabulary, int64_t features,
                            cudaStream_t stream);
/// The device scratch launchEmbeddingGrad needs for `count` ids into a
/// table of `vocabulary` rows, into `bytes`.
cudaError_t getEmbeddingGradScratchBytes(int64_t count, int64_t vocabulary,
                                         int64_t *bytes);
/// `padding`: the row that gets no gradient (padding_idx), or -1. Sorts the
/// positions by id (stable), then sums each id's rows in position order,
/// as the CPU kernel does: bit for bit equal to it. `scratch` holds
/// getEmbeddingGradScratchBytes's bytes.
cudaError_t launchEmbeddingGrad(const void *dy, const void *ids, void *table,
                                Dt dyType, Dt tableType, Dt idType,
                                int64_t count, int64_t vocabulary,
                                int64_t features, int64_t padding,
                                void *scratch, cudaStream_t stream);
/// `rowLoss` is scratch of `rows` floats.
/// `divisor` is the count of the labels not ignored, on the device, for a
/// loss that ignores label `ignored`; null (and `ignored` unread) for one
/// that takes every label. `smoothing` is the label_smoothing (0: none).
cudaError_t launchCountLabels(const void *labels, Dt labelType, int64_t count,
                              int64_t ignored, float *result,
                              cudaStream_t stream);
cudaError_t launchCrossEntropy(const void *logits, const void *labels,
                               const float *divisor, float *loss, Dt type,
                               Dt labelType, int64_t rows, int64_t classes,
                               int64_t ignored, float smoothing, float *rowLoss,
                               cudaStream_t stream);
cudaError_t launchCrossEntropyGrad(const void *logits, const void *labels,
                                   const float *lossGrad, const float *divisor,
                                   void *dx, Dt type, Dt labelType,
                                   int64_t rows, int64_t classes,
                                   int64_t ignored, float smoothing,
                                   cudaStream_t stream);

//===- Shape.cu -----------------------------------------------------------===//

constexpr int kMaxRank = 8;

/// Row-major extents with the stride of each dimension in another tensor.
struct Strided {
  int rank = 0;
  int64_t extent[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
};

/// y[o] = sum over the `dropped` positions of x[kept(o) + dropped(r)],
/// divided by `divisor`; one thread per output when the outputs are
/// contiguous in x (`threadPerOutput`), else one block per output.
cudaError_t launchReduce(const void *x, Dt inType, void *y, Dt outType,
                         const Strided &kept, const Strided &dropped,
                         int64_t outCount, int64_t reduced, float divisor,
                         bool threadPerOutput, cudaStream_t stream);
/// y[c] = sum over r of x[r * columns + c], divided by `divisor`: the
/// reduction of a [rows, columns] row-major tensor over its rows (a bias
/// gradient), in the CPU kernel's order (cpu::kReduceChunkRows): each column
/// over chunks of `chunkRows` rows, a chunk from zero, into `partials`
/// (ceil(rows / chunkRows) x columns floats), then the chunks in order.
/// Two passes, parallel over chunks and columns; coalesced loads.
cudaError_t launchColumnReduce(const void *x, Dt inType, float *partials,
                               void *y, Dt outType, int64_t rows,
                               int64_t columns, int64_t chunkRows,
                               float divisor, cudaStream_t stream);
/// y[i] = x[offset(i)] over the dims of `layout` (stride 0 broadcasts):
/// expand and transpose.
cudaError_t launchGather(const void *x, void *y, int64_t elementBytes,
                         const Strided &layout, int64_t count,
                         cudaStream_t stream);

//===- Updates.cu ---------------------------------------------------------===//

// `skip` is null, or the device f32 `skip_if` flag of a loss-scaled step:
// when it holds anything but 0 (NaN included) every result keeps its
// operand's value, as on CPU.

/// The learning rate of an update, computed on the device by thread 0 of
/// every block, as the CPU kernels compute it (StepLr in CudaSupport.h): the
/// f32 `lr` itself when `kind` is none, else scheduledLearningRate (in
/// double, from `exactLr`, the same formula and constant for pi) at the
/// step `*step`, cast to float. `step` is the runtime's 1-based step in
/// device memory (KernelContext::deviceStep), read when the kernel runs, so
/// that a call captured in a CUDA graph follows the step of each replay; it
/// is not read (and may be null) when `kind` is none. A binder without a
/// device step passes the host step's rate as `lr` with kind none.
enum class LrKind : int { none, constant, linear, cosine };
struct LrParams {
  float lr = 0.0f;
  double exactLr = 0.0;
  LrKind kind = LrKind::none;
  int64_t warmup = 0; // steps of linear warmup from 0
  int64_t total = 0;  // linear/cosine: the step at which the rate is minLr
  double minLr = 0.0;
  const int64_t *step = nullptr;
  /// KernelContext::learningRateFactor, applied to the scheduled rate.
  double factor = 1.0;
};

cudaError_t launchSgd(const void *p, const void *g, void *pOut, Dt paramType,
                      Dt gradType, int64_t count, const LrParams &rate,
                      float weightDecay, const float *skip,
                      cudaStream_t stream);
cudaError_t launchSgdMomentum(const void *p, const void *g, const void *buf,
                              void *pOut, void *bufOut, Dt paramType,
                              Dt gradType, Dt bufType, int64_t count,
                              const LrParams &rate, float weightDecay,
                              float momentum, const float *skip,
                              cudaStream_t stream);
struct AdamHyper {
  float beta1, beta2, eps, weightDecay;
  bool decoupled;
};
/// Reads the 1-based step of the bias corrections from device memory
/// (`step`, Adam's i64 step tensor); the rate follows `rate.step`, the
/// runtime's step, as on CPU.
cudaError_t launchAdam(const void *p, const void *g, const float *m,
                       const float *v, const int64_t *step, void *pOut,
                       float *mOut, float *vOut, Dt paramType, Dt gradType,
                       int64_t count, const LrParams &rate,
                       const AdamHyper &hyper, const float *skip,
                       cudaStream_t stream);

//===- Clipping.cu --------------------------------------------------------===//

/// Partial sums per tensor: sumSquaresBlocks(count) floats each.
int64_t sumSquaresBlocks(int64_t count);
cudaError_t launchSquaresPartial(const void *x, Dt type, int64_t count,
                                 float *partials, cudaStream_t stream);
/// total[0] = the sum of `count` partials, in order.
cudaError_t launchSumPartials(const float *partials, int64_t count,
                              float *total, cudaStream_t stream);
cudaError_t launchScaleByNorm(const void *x, void *y, Dt type, int64_t count,
                              const float *sumSquares, double maxNorm,
                              cudaStream_t stream);

//===- Quantize.cu --------------------------------------------------------===//

/// dist.quantize: `segments` segments of `segmentLength` elements of `x`,
/// each in blocks of `block`; one scale per block; `bits` 8 (a byte per
/// code) or 4 (two codes per byte, each segment from a byte).
/// `scratch` holds quantizeScratchFloats(...) floats (none for int8).
cudaError_t launchQuantize(const void *x, Dt type, int64_t segments,
                           int64_t segmentLength, int64_t block, int bits,
                           int8_t *codes, float *scales, float *scratch,
                           cudaStream_t stream);
int64_t quantizeScratchFloats(int64_t segments, int64_t segmentLength,
                              int64_t block, int bits);
/// dist.dequantize, the same layout.
cudaError_t launchDequantize(const int8_t *codes, const float *scales,
                             int64_t segments, int64_t segmentLength,
                             int64_t block, int bits, void *y, Dt type,
                             cudaStream_t stream);

//===- LossScaling.cu -----------------------------------------------------===//

/// out = g / *scale (as g * (1 / scale), the CPU's arithmetic) in f32; sets
/// *overflow to 1 when any g is an infinity or NaN (never clears it).
cudaError_t launchUnscale(const void *g, Dt type, int64_t count,
                          const float *scale, float *out, float *overflow,
                          cudaStream_t stream);
/// One step of the dynamic loss scaler (train.update_loss_scale).
cudaError_t launchUpdateLossScale(const float *scale, const float *good,
                                  const float *found, float *newScale,
                                  float *newGood, float growthInterval,
                                  cudaStream_t stream);

} // namespace zero::cuda::dev

#endif // ZERO_RUNTIME_CUDA_DEVICEKERNELS_H
