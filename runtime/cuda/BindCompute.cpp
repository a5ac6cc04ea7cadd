//===- BindCompute.cpp - Binders of the elementwise and row kernels -------===//
//
// Elementwise math, normalization and the embedding and loss kernels: each
// binder reads the geometry of an already checked request and returns a
// kernel that launches on the bound stream.
//
//===----------------------------------------------------------------------===//

#include "CudaSupport.h"
#include "zero/support/Status.h"

namespace zero::rt::cuda {
namespace {

using Ins = absl::Span<const void *const>;
using Outs = absl::Span<void *const>;

/// The op of "train.OP".
absl::string_view opName(const BindRequest &request) {
  return request.name.substr(request.name.find('.') + 1);
}

KernelFn unaryKernel(const BindRequest &request, cudaStream_t stream,
                     dev::UnaryOp op, float factor) {
  dev::Dt inType = dt(request.ins[0].dtype),
          outType = dt(request.outs[0].dtype);
  int64_t count = request.ins[0].numElements();
  std::string name(request.name);
  return [=](Ins ins, Outs outs, const KernelContext &) {
    return launched(name, dev::launchUnary(op, factor, ins[0], inType, outs[0],
                                           outType, count, stream));
  };
}

/// Rows and last-dimension extent of a tensor of rank >= 1.
std::pair<int64_t, int64_t> rowsAndCols(const TensorSpec &spec) {
  int64_t cols = spec.shape.back();
  return {cols == 0 ? 0 : spec.numElements() / cols, cols};
}

} // namespace

absl::StatusOr<KernelFn> bindUnary(const BindRequest &request,
                                   cudaStream_t stream) {
  static constexpr std::pair<absl::string_view, dev::UnaryOp> kOps[] = {
      {"neg", dev::UnaryOp::neg},         {"exp", dev::UnaryOp::exp},
      {"log", dev::UnaryOp::log},         {"sqrt", dev::UnaryOp::sqrt},
      {"rsqrt", dev::UnaryOp::rsqrt},     {"tanh", dev::UnaryOp::tanh},
      {"relu", dev::UnaryOp::relu},       {"gelu", dev::UnaryOp::gelu},
      {"sigmoid", dev::UnaryOp::sigmoid}, {"silu", dev::UnaryOp::silu}};
  ZERO_ASSIGN_OR_RETURN(bool exact, cpu::getFlag(request, "exact"));
  if (opName(request) == "gelu" && exact)
    return unaryKernel(request, stream, dev::UnaryOp::geluExact, 1.0f);
  for (auto [op, code] : kOps)
    if (opName(request) == op)
      return unaryKernel(request, stream, code, 1.0f);
  return absl::UnimplementedError(
      absl::StrCat("no CUDA kernel for '", request.name, "'"));
}

absl::StatusOr<KernelFn> bindScale(const BindRequest &request,
                                   cudaStream_t stream) {
  ZERO_ASSIGN_OR_RETURN(double factor, cpu::getF64(request, "factor"));
  return unaryKernel(request, stream, dev::UnaryOp::scale,
                     static_cast<float>(factor));
}

absl::StatusOr<KernelFn> bindCast(const BindRequest &request,
                                  cudaStream_t stream) {
  const TensorSpec &in = request.ins[0], &out = request.outs[0];
  if (in.dtype != out.dtype)
    return unaryKernel(request, stream, dev::UnaryOp::copy, 1.0f);
  // Same type: a copy, free when in place.
  int64_t bytes = in.numElements() * dtypeBytes(in.dtype);
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
    if (outs[0] == ins[0] || bytes == 0)
      return absl::OkStatus();
    return cudaStatus(name,
                      cudaMemcpyAsync(outs[0], ins[0],
                                      static_cast<size_t>(bytes),
                                      cudaMemcpyDeviceToDevice, stream),
                      "copy");
  });
}

absl::StatusOr<KernelFn> bindBinary(const BindRequest &request,
                                    cudaStream_t stream) {
  static constexpr std::pair<absl::string_view, dev::BinaryOp> kOps[] = {
      {"add", dev::BinaryOp::add},
      {"sub", dev::BinaryOp::sub},
      {"mul", dev::BinaryOp::mul},
      {"div", dev::BinaryOp::div},
      {"relu_grad", dev::BinaryOp::reluGrad},
      {"gelu_grad", dev::BinaryOp::geluGrad},
      {"tanh_grad", dev::BinaryOp::tanhGrad},
      {"sigmoid_grad", dev::BinaryOp::sigmoidGrad},
      {"silu_grad", dev::BinaryOp::siluGrad}};
  dev::Dt type = dt(request.ins[0].dtype);
  int64_t count = request.ins[0].numElements();
  std::string name(request.name);
  ZERO_ASSIGN_OR_RETURN(bool exact, cpu::getFlag(request, "exact"));
  for (auto [op, listed] : kOps)
    if (opName(request) == op) {
      dev::BinaryOp code = listed == dev::BinaryOp::geluGrad && exact
                               ? dev::BinaryOp::geluExactGrad
                               : listed;
      return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
        return launched(name, dev::launchBinary(code, ins[0], ins[1], outs[0],
                                                type, count, stream));
      });
    }
  return absl::UnimplementedError(
      absl::StrCat("no CUDA kernel for '", request.name, "'"));
}

absl::StatusOr<KernelFn> bindBiasAdd(const BindRequest &request,
                                     cudaStream_t stream) {
  auto [rows, features] = rowsAndCols(request.ins[0]);
  dev::Dt type = dt(request.ins[0].dtype), biasType = dt(request.ins[1].dtype);
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
    return launched(name, dev::launchBiasAdd(ins[0], ins[1], outs[0], type,
                                             biasType, rows, features, stream));
  });
}

absl::StatusOr<KernelFn> bindCausalMask(const BindRequest &request,
                                        cudaStream_t stream) {
  const TensorSpec &in = request.ins[0];
  ZERO_ASSIGN_OR_RETURN(double fill, cpu::getF64(request, "fill"));
  int64_t cols = in.shape.back(), rows = in.shape[in.shape.size() - 2];
  int64_t matrices = cols * rows == 0 ? 0 : in.numElements() / (cols * rows);
  dev::Dt type = dt(in.dtype);
  float value = static_cast<float>(fill);
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
    return launched(name, dev::launchCausalMask(ins[0], outs[0], type, matrices,
                                                rows, cols, value, stream));
  });
}

absl::StatusOr<KernelFn> bindDropout(const BindRequest &request,
                                     cudaStream_t stream) {
  const TensorSpec &in = request.ins[0];
  ZERO_ASSIGN_OR_RETURN(double rate, cpu::getF64(request, "rate"));
  ZERO_ASSIGN_OR_RETURN(int64_t streamId, cpu::getI64Or(request, "stream", 0));
  int64_t count = in.numElements();
  dev::Dt type = dt(in.dtype);
  uint64_t threshold = dropoutThreshold(rate);
  float scale = static_cast<float>(1.0 / (1.0 - rate));
  int64_t id = streamId;
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs, const KernelContext &ctx) {
    DropoutKey key{ctx.seed, id, ctx.step, ctx.microStep};
    uint64_t offset = static_cast<uint64_t>(ctx.batchRank) * count;
    return launched(name, dev::launchDropout(ins[0], outs[0], type, count, key,
                                             ctx.deviceStep, offset, threshold,
                                             scale, stream));
  });
}

absl::StatusOr<KernelFn> bindKeyMask(const BindRequest &request,
                                     cudaStream_t stream) {
  const TensorSpec &in = request.ins[0];
  ZERO_ASSIGN_OR_RETURN(double fill, cpu::getF64(request, "fill"));
  int64_t batch = in.shape.front(), keys = in.shape.back();
  int64_t perBatch = batch == 0 ? 0 : in.numElements() / batch;
  dev::Dt type = dt(in.dtype), keepType = dt(request.ins[1].dtype);
  float value = static_cast<float>(fill);
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
    return launched(name,
                    dev::launchKeyMask(ins[0], ins[1], outs[0], type, keepType,
                                       batch, perBatch, keys, value, stream));
  });
}

absl::StatusOr<KernelFn> bindFill(const BindRequest &request,
                                  cudaStream_t stream) {
  ZERO_ASSIGN_OR_RETURN(double value, cpu::getF64(request, "value"));
  const TensorSpec &out = request.outs[0];
  int64_t count = out.numElements();
  dev::Dt type = dt(out.dtype);
  bool floating = isFloat(out.dtype);
  double number = value;
  std::string name(request.name);
  return KernelFn([=](Ins, Outs outs, const KernelContext &) {
    return launched(
        name, floating
                  ? dev::launchFillFloat(outs[0], type, count,
                                         static_cast<float>(number), stream)
                  : dev::launchFillInt(outs[0], type, count,
                                       static_cast<int64_t>(number), stream));
  });
}

absl::StatusOr<KernelFn> bindStepIndex(const BindRequest &request,
                                       cudaStream_t stream) {
  // With a device step, a device-to-device copy of it, so that a captured
  // graph writes the step of each replay. Without one, a kernel argument
  // rather than a host-to-device copy: the step's host storage need not
  // outlive the call.
  std::string name(request.name);
  return KernelFn([=](Ins, Outs outs, const KernelContext &ctx) {
    if (ctx.deviceStep != nullptr)
      return cudaStatus(name,
                        cudaMemcpyAsync(outs[0], ctx.deviceStep,
                                        sizeof(int64_t),
                                        cudaMemcpyDeviceToDevice, stream),
                        "copying the device step");
    return launched(
        name, dev::launchFillInt(outs[0], dev::Dt::i64, 1, ctx.step, stream));
  });
}

absl::StatusOr<dev::AttentionDims> attentionDims(const BindRequest &request) {
  const std::vector<int64_t> &shape = request.ins[1].shape; // the query's
  ZERO_ASSIGN_OR_RETURN(double scale, cpu::getF64(request, "scale"));
  dev::AttentionDims dims;
  ZERO_ASSIGN_OR_RETURN(dims.causal, cpu::getFlag(request, "causal"));
  ZERO_ASSIGN_OR_RETURN(dims.seqMajor, cpu::getFlag(request, "seq_major"));
  dims.scale = static_cast<float>(scale);
  size_t rank = shape.size(), rowDims = dims.seqMajor ? 3 : 2;
  if (rank < rowDims)
    return request.invalid("attends over a query of rank ", rowDims,
                           " or more, got rank ", rank);
  dims.headDim = shape.back();
  dims.seq = shape[rank - rowDims];
  if (dims.seqMajor)
    dims.heads = shape[rank - 2];
  dims.slices = dims.heads;
  for (size_t i = 0; i + rowDims < rank; ++i)
    dims.slices *= shape[i];
  return dims;
}

/// The built-in kernels' geometry: attentionDims within their head limit.
static absl::StatusOr<dev::AttentionDims>
builtinAttentionDims(const BindRequest &request) {
  ZERO_ASSIGN_OR_RETURN(dev::AttentionDims dims, attentionDims(request));
  if (dims.headDim > dev::attentionMaxHeadDim())
    return request.invalid("the CUDA kernel takes head dimensions up to ",
                           dev::attentionMaxHeadDim(), ", got ", dims.headDim);
  return dims;
}

absl::StatusOr<KernelFn> bindAttention(const BindRequest &request,
                                       cudaStream_t stream) {
  ZERO_ASSIGN_OR_RETURN(std::optional<KernelFn> cudnn,
                        bindCudnnAttention(request, stream));
  if (cudnn)
    return *std::move(cudnn);
  // The query is operand 0 here; attentionDims reads operand 1, which has
  // the same spec (the key).
  ZERO_ASSIGN_OR_RETURN(dev::AttentionDims dims, builtinAttentionDims(request));
  dev::Dt type = dt(request.ins[0].dtype);
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
    return launched(name, dev::launchAttention(ins[0], ins[1], ins[2], outs[0],
                                               static_cast<float *>(outs[1]),
                                               type, dims, stream));
  });
}

absl::StatusOr<KernelFn> bindAttentionGrad(const BindRequest &request,
                                           cudaStream_t stream) {
  ZERO_ASSIGN_OR_RETURN(std::optional<KernelFn> cudnn,
                        bindCudnnAttention(request, stream));
  if (cudnn)
    return *std::move(cudnn);
  ZERO_ASSIGN_OR_RETURN(dev::AttentionDims dims, builtinAttentionDims(request));
  dev::Dt type = dt(request.ins[0].dtype);
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
    return launched(name, dev::launchAttentionGrad(
                              ins[0], ins[1], ins[2], ins[3], ins[4],
                              static_cast<const float *>(ins[5]), outs[0],
                              outs[1], outs[2], type, dims, stream));
  });
}

absl::StatusOr<KernelFn> bindSoftmax(const BindRequest &request,
                                     cudaStream_t stream) {
  auto [rows, cols] = rowsAndCols(request.ins[0]);
  absl::StatusOr<bool> safe = cpu::getFlag(request, "safe");
  if (!safe.ok())
    return safe.status();
  dev::Dt type = dt(request.ins[0].dtype);
  std::string name(request.name);
  return KernelFn([=, safe = *safe](Ins ins, Outs outs, const KernelContext &) {
    return launched(name, dev::launchSoftmax(ins[0], outs[0], type, rows, cols,
                                             safe, stream));
  });
}

absl::StatusOr<KernelFn> bindSoftmaxGrad(const BindRequest &request,
                                         cudaStream_t stream) {
  auto [rows, cols] = rowsAndCols(request.ins[0]);
  dev::Dt type = dt(request.ins[0].dtype);
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
    return launched(name, dev::launchSoftmaxGrad(ins[0], ins[1], outs[0], type,
                                                 rows, cols, stream));
  });
}

absl::StatusOr<KernelFn> bindLayerNorm(const BindRequest &request,
                                       cudaStream_t stream) {
  auto [rows, cols] = rowsAndCols(request.ins[0]);
  ZERO_ASSIGN_OR_RETURN(double eps, cpu::getF64(request, "eps"));
  dev::Dt type = dt(request.ins[0].dtype), gammaType = dt(request.ins[1].dtype),
          betaType = dt(request.ins[2].dtype);
  float epsilon = static_cast<float>(eps);
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
    return launched(name, dev::launchLayerNorm(ins[0], ins[1], ins[2], outs[0],
                                               static_cast<float *>(outs[1]),
                                               static_cast<float *>(outs[2]),
                                               type, gammaType, betaType, rows,
                                               cols, epsilon, stream));
  });
}

absl::StatusOr<KernelFn> bindAddLayerNorm(const BindRequest &request,
                                          cudaStream_t stream) {
  // The chain (train.add, then train.layer_norm), for rows the one-pass
  // kernel does not take: the same bits, as the fused kernel rounds the sum
  // as train.add does and normalizes it as the layer norm's warp kernel.
  ZERO_ASSIGN_OR_RETURN(KernelFn chain,
                        cpu::bindAddLayerNormChain(request, cudaParts(stream)));
  auto [rows, cols] = rowsAndCols(request.ins[0]);
  ZERO_ASSIGN_OR_RETURN(double eps, cpu::getF64(request, "eps"));
  dev::Dt type = dt(request.ins[0].dtype), gammaType = dt(request.ins[2].dtype),
          betaType = dt(request.ins[3].dtype);
  float epsilon = static_cast<float>(eps);
  std::string name(request.name);
  return KernelFn(
      [=, chain = std::move(chain)](
          Ins ins, Outs outs, const KernelContext &context) -> absl::Status {
        cudaError_t error = dev::launchAddLayerNorm(
            ins[0], ins[1], ins[2], ins[3], outs[0], outs[1],
            static_cast<float *>(outs[2]), static_cast<float *>(outs[3]), type,
            gammaType, betaType, rows, cols, epsilon, stream);
        if (error == cudaErrorNotSupported)
          return chain(ins, outs, context);
        return launched(name, error);
      });
}

absl::StatusOr<KernelFn> bindLayerNormGrad(const BindRequest &request,
                                           cudaStream_t stream) {
  auto [rows, cols] = rowsAndCols(request.ins[1]);
  dev::Dt type = dt(request.ins[1].dtype), gammaType = dt(request.ins[2].dtype),
          dgammaType = dt(request.outs[1].dtype),
          dbetaType = dt(request.outs[2].dtype);
  std::string name(request.name);
  absl::StatusOr<std::shared_ptr<DeviceScratch>> partials =
      DeviceScratch::allocate(name, 2 * dev::layerNormGradPartials(rows) *
                                        cols * sizeof(float));
  if (!partials.ok())
    return partials.status();
  return KernelFn([=, partials = *std::move(partials)](Ins ins, Outs outs,
                                                       const KernelContext &) {
    return launched(
        name, dev::launchLayerNormGrad(
                  ins[0], ins[1], ins[2], static_cast<const float *>(ins[3]),
                  static_cast<const float *>(ins[4]), outs[0], outs[1], outs[2],
                  type, gammaType, dgammaType, dbetaType, rows, cols,
                  partials->as<float>(), stream));
  });
}

absl::StatusOr<KernelFn> bindEmbedding(const BindRequest &request,
                                       cudaStream_t stream) {
  const TensorSpec &table = request.ins[0], &ids = request.ins[1];
  int64_t vocabulary = table.shape[0], features = table.shape[1],
          count = ids.numElements();
  dev::Dt type = dt(table.dtype), idType = dt(ids.dtype);
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
    return launched(name,
                    dev::launchEmbedding(ins[0], ins[1], outs[0], type, idType,
                                         count, vocabulary, features, stream));
  });
}

absl::StatusOr<KernelFn> bindEmbeddingGrad(const BindRequest &request,
                                           cudaStream_t stream) {
  const TensorSpec &dy = request.ins[0], &ids = request.ins[1],
                   &table = request.outs[0];
  int64_t vocabulary = table.shape[0], features = table.shape[1],
          count = ids.numElements();
  dev::Dt dyType = dt(dy.dtype), tableType = dt(table.dtype),
          idType = dt(ids.dtype);
  ZERO_ASSIGN_OR_RETURN(int64_t paddingIdx,
                        cpu::getI64Or(request, "padding_idx", -1));
  if (paddingIdx < -1 || paddingIdx >= vocabulary)
    return request.invalid("padding_idx ", paddingIdx, " is not a row of the ",
                           vocabulary, "-row table");
  std::string name(request.name);
  int64_t scratchBytes = 0;
  ZERO_RETURN_IF_ERROR(launched(name, dev::getEmbeddingGradScratchBytes(
                                          count, vocabulary, &scratchBytes)));
  ZERO_ASSIGN_OR_RETURN(
      std::shared_ptr<DeviceScratch> scratch,
      DeviceScratch::allocate(name, std::max<int64_t>(scratchBytes, 1)));
  return KernelFn(
      [=, padding = paddingIdx](Ins ins, Outs outs, const KernelContext &) {
        return launched(name, dev::launchEmbeddingGrad(
                                  ins[0], ins[1], outs[0], dyType, tableType,
                                  idType, count, vocabulary, features, padding,
                                  scratch->as<void>(), stream));
      });
}

namespace {

/// A loss's ignore_index; the CPU bind, which runs first, has checked it and
/// the count operand that comes with it.
std::optional<int64_t> ignoredLabel(const BindRequest &request) {
  const KernelParam *ignored = request.params.find("ignore_index");
  if (!ignored)
    return std::nullopt;
  return ignored->integer;
}

/// A loss's label_smoothing, 0 where it has none (checked by the CPU bind).
float labelSmoothing(const BindRequest &request) {
  const KernelParam *smoothing = request.params.find("label_smoothing");
  return smoothing ? static_cast<float>(smoothing->real) : 0.0f;
}

} // namespace

absl::StatusOr<KernelFn> bindCountLabels(const BindRequest &request,
                                         cudaStream_t stream) {
  int64_t count = request.ins[0].numElements();
  dev::Dt labelType = dt(request.ins[0].dtype);
  int64_t ignored = ignoredLabel(request).value_or(0);
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
    return launched(
        name, dev::launchCountLabels(ins[0], labelType, count, ignored,
                                     static_cast<float *>(outs[0]), stream));
  });
}

absl::StatusOr<KernelFn> bindCrossEntropy(const BindRequest &request,
                                          cudaStream_t stream) {
  auto [rows, classes] = rowsAndCols(request.ins[0]);
  dev::Dt type = dt(request.ins[0].dtype), labelType = dt(request.ins[1].dtype);
  std::optional<int64_t> ignored = ignoredLabel(request);
  float smoothing = labelSmoothing(request);
  std::string name(request.name);
  absl::StatusOr<std::shared_ptr<DeviceScratch>> rowLoss =
      DeviceScratch::allocate(name, rows * sizeof(float));
  if (!rowLoss.ok())
    return rowLoss.status();
  return KernelFn([=, rowLoss = *std::move(rowLoss)](Ins ins, Outs outs,
                                                     const KernelContext &) {
    const float *divisor =
        ignored ? static_cast<const float *>(ins[2]) : nullptr;
    return launched(name,
                    dev::launchCrossEntropy(
                        ins[0], ins[1], divisor, static_cast<float *>(outs[0]),
                        type, labelType, rows, classes, ignored.value_or(0),
                        smoothing, rowLoss->as<float>(), stream));
  });
}

absl::StatusOr<KernelFn> bindCrossEntropyGrad(const BindRequest &request,
                                              cudaStream_t stream) {
  auto [rows, classes] = rowsAndCols(request.ins[0]);
  dev::Dt type = dt(request.ins[0].dtype), labelType = dt(request.ins[1].dtype);
  std::optional<int64_t> ignored = ignoredLabel(request);
  float smoothing = labelSmoothing(request);
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
    const float *divisor =
        ignored ? static_cast<const float *>(ins[3]) : nullptr;
    return launched(name,
                    dev::launchCrossEntropyGrad(
                        ins[0], ins[1], static_cast<const float *>(ins[2]),
                        divisor, outs[0], type, labelType, rows, classes,
                        ignored.value_or(0), smoothing, stream));
  });
}

} // namespace zero::rt::cuda
