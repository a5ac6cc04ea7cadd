//===- BindData.cpp - Binders of data movement, updates and clipping ------===//
//
// Reductions, broadcasts, reshape, transpose and dist.slice; the optimizer
// updates; gradient clipping. Strided tensors are collapsed here, at bind
// time, into the fewest dimensions (as the CPU kernels do), so the device
// code decodes short index vectors.
//
//===----------------------------------------------------------------------===//

#include "CudaSupport.h"
#include "zero/support/Status.h"

#include <algorithm>

namespace zero::rt::cuda {
namespace {

using Ins = absl::Span<const void *const>;
using Outs = absl::Span<void *const>;

struct Dim {
  int64_t extent, stride;
};

/// Drops unit dimensions and merges neighbours that the strides walk as one
/// (a stride-0 broadcast run merges too).
std::vector<Dim> collapse(const std::vector<Dim> &dims) {
  std::vector<Dim> merged;
  for (Dim dim : dims) {
    if (dim.extent == 1)
      continue;
    if (!merged.empty() && merged.back().stride == dim.stride * dim.extent) {
      merged.back().extent *= dim.extent;
      merged.back().stride = dim.stride;
    } else {
      merged.push_back(dim);
    }
  }
  return merged;
}

absl::StatusOr<dev::Strided> toStrided(const BindRequest &request,
                                       const std::vector<Dim> &dims) {
  if (dims.size() > static_cast<size_t>(dev::kMaxRank))
    return absl::UnimplementedError(absl::StrCat(
        request.name, ": the CUDA kernel handles at most ", dev::kMaxRank,
        " non-mergeable dimensions, got ", dims.size()));
  dev::Strided layout;
  layout.rank = static_cast<int>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    layout.extent[d] = dims[d].extent;
    layout.stride[d] = dims[d].stride;
  }
  return layout;
}

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

bool contains(const std::vector<int64_t> &dims, size_t d) {
  return std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) !=
         dims.end();
}

/// A gather kernel: y[i] = x[layout offset of i].
absl::StatusOr<KernelFn> gatherKernel(const BindRequest &request,
                                      cudaStream_t stream,
                                      const std::vector<Dim> &dims) {
  absl::StatusOr<dev::Strided> layout = toStrided(request, collapse(dims));
  if (!layout.ok())
    return layout.status();
  int64_t count = request.outs[0].numElements();
  int64_t elementBytes = dtypeBytes(request.outs[0].dtype);
  std::string name(request.name);
  return KernelFn(
      [=, layout = *layout](Ins ins, Outs outs, const KernelContext &) {
        return launched(name, dev::launchGather(ins[0], outs[0], elementBytes,
                                                layout, count, stream));
      });
}

/// The `skip_if` flag of a loss-scaled update: its last operand, when the
/// update was bound with one.
const float *skipFlag(Ins ins, bool skippable) {
  return skippable ? static_cast<const float *>(ins.back()) : nullptr;
}

} // namespace

absl::StatusOr<KernelFn> bindReduce(const BindRequest &request,
                                    cudaStream_t stream) {
  const TensorSpec &in = request.ins[0], &out = request.outs[0];
  ZERO_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                        cpu::getI64Array(request, "dims"));
  std::vector<int64_t> strides = rowMajorStrides(in.shape);
  std::vector<Dim> kept, dropped;
  int64_t reduced = 1;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    (contains(dims, d) ? dropped : kept).push_back({in.shape[d], strides[d]});
    if (contains(dims, d))
      reduced *= in.shape[d];
  }
  // Outputs walk the input contiguously when its last non-unit dimension is
  // kept: one thread per output then reads neighbouring elements.
  bool innerKept = true;
  for (size_t d = in.shape.size(); d-- > 0;)
    if (in.shape[d] != 1) {
      innerKept = !contains(dims, d);
      break;
    }
  ZERO_ASSIGN_OR_RETURN(dev::Strided keptLayout,
                        toStrided(request, collapse(kept)));
  ZERO_ASSIGN_OR_RETURN(dev::Strided droppedLayout,
                        toStrided(request, collapse(dropped)));
  float divisor =
      request.name == "train.reduce_mean" ? static_cast<float>(reduced) : 1.0f;
  bool threadPerOutput = innerKept || reduced <= 32;
  int64_t outCount = out.numElements();
  dev::Dt inType = dt(in.dtype), outType = dt(out.dtype);
  std::string name(request.name);
  if (cpu::isChunkedColumnReduction(in.shape, dims)) {
    int64_t chunks =
        (reduced + cpu::kReduceChunkRows - 1) / cpu::kReduceChunkRows;
    ZERO_ASSIGN_OR_RETURN(
        std::shared_ptr<DeviceScratch> partials,
        DeviceScratch::allocate(name, chunks * outCount * sizeof(float)));
    return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
      return launched(name, dev::launchColumnReduce(
                                ins[0], inType, partials->as<float>(), outs[0],
                                outType, reduced, outCount,
                                cpu::kReduceChunkRows, divisor, stream));
    });
  }
  return KernelFn([=, kept = keptLayout, dropped = droppedLayout](
                      Ins ins, Outs outs, const KernelContext &) {
    return launched(name, dev::launchReduce(ins[0], inType, outs[0], outType,
                                            kept, dropped, outCount, reduced,
                                            divisor, threadPerOutput, stream));
  });
}

absl::StatusOr<KernelFn> bindExpand(const BindRequest &request,
                                    cudaStream_t stream) {
  const TensorSpec &in = request.ins[0], &out = request.outs[0];
  ZERO_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                        cpu::getI64Array(request, "dims"));
  std::vector<int64_t> inStrides = rowMajorStrides(in.shape);
  std::vector<Dim> layout;
  size_t next = 0; // The input dimension the next kept output dim reads.
  for (size_t d = 0; d < out.shape.size(); ++d)
    layout.push_back({out.shape[d], contains(dims, d) ? 0 : inStrides[next++]});
  return gatherKernel(request, stream, layout);
}

absl::StatusOr<KernelFn> bindTranspose(const BindRequest &request,
                                       cudaStream_t stream) {
  const TensorSpec &in = request.ins[0], &out = request.outs[0];
  ZERO_ASSIGN_OR_RETURN(std::vector<int64_t> permutation,
                        cpu::getI64Array(request, "permutation"));
  std::vector<int64_t> inStrides = rowMajorStrides(in.shape);
  std::vector<Dim> layout;
  for (size_t d = 0; d < out.shape.size(); ++d)
    layout.push_back({out.shape[d], inStrides[(permutation)[d]]});
  return gatherKernel(request, stream, layout);
}

absl::StatusOr<KernelFn> bindReshape(const BindRequest &request,
                                     cudaStream_t stream) {
  int64_t bytes =
      request.ins[0].numElements() * dtypeBytes(request.ins[0].dtype);
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

absl::StatusOr<KernelFn> bindSlice(const BindRequest &request,
                                   cudaStream_t stream) {
  const TensorSpec &in = request.ins[0], &out = request.outs[0];
  ZERO_ASSIGN_OR_RETURN(int64_t dim, cpu::getI64(request, "dim"));
  int64_t rows = in.shape[dim], chunk = out.shape[dim];
  int64_t outer = 1, rowBytes = dtypeBytes(in.dtype);
  for (int64_t d = 0; d < dim; ++d)
    outer *= in.shape[d];
  for (size_t d = dim + 1; d < in.shape.size(); ++d)
    rowBytes *= in.shape[d];
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs,
                      const KernelContext &ctx) -> absl::Status {
    if (ctx.rank < 0)
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": rank ", ctx.rank, " is negative"));
    int64_t first = static_cast<int64_t>(ctx.rank) * chunk;
    // Rows past the input's end are the padding of the last shard.
    int64_t present = std::clamp<int64_t>(rows - first, 0, chunk);
    auto *dst = static_cast<char *>(outs[0]);
    const auto *src = static_cast<const char *>(ins[0]);
    size_t pitch = static_cast<size_t>(chunk * rowBytes);
    if (outer == 0 || rowBytes == 0)
      return absl::OkStatus();
    if (present > 0)
      ZERO_RETURN_IF_ERROR(
          cudaStatus(name,
                     cudaMemcpy2DAsync(dst, pitch, src + first * rowBytes,
                                       static_cast<size_t>(rows * rowBytes),
                                       static_cast<size_t>(present * rowBytes),
                                       static_cast<size_t>(outer),
                                       cudaMemcpyDeviceToDevice, stream),
                     "copy"));
    if (present < chunk)
      return cudaStatus(
          name,
          cudaMemset2DAsync(dst + present * rowBytes, pitch, 0,
                            static_cast<size_t>((chunk - present) * rowBytes),
                            static_cast<size_t>(outer), stream),
          "padding");
    return absl::OkStatus();
  });
}

namespace {

/// Bytes of one position of `dim` and the positions of the dims before it:
/// slice, pad and concat copy `outer` rows with a pitch.
std::pair<int64_t, int64_t> outerAndRowBytes(const TensorSpec &spec,
                                             int64_t dim) {
  int64_t outer = 1, rowBytes = dtypeBytes(spec.dtype);
  for (int64_t d = 0; d < dim; ++d)
    outer *= spec.shape[d];
  for (size_t d = dim + 1; d < spec.shape.size(); ++d)
    rowBytes *= spec.shape[d];
  return {outer, rowBytes};
}

/// `height` rows of `width` bytes from `src` (rows `srcPitch` apart) to
/// `dst` (rows `dstPitch` apart).
absl::Status copyRows(const std::string &name, char *dst, int64_t dstPitch,
                      const char *src, int64_t srcPitch, int64_t width,
                      int64_t height, cudaStream_t stream) {
  if (width == 0 || height == 0)
    return absl::OkStatus();
  return cudaStatus(name,
                    cudaMemcpy2DAsync(dst, static_cast<size_t>(dstPitch), src,
                                      static_cast<size_t>(srcPitch),
                                      static_cast<size_t>(width),
                                      static_cast<size_t>(height),
                                      cudaMemcpyDeviceToDevice, stream),
                    "copy");
}

} // namespace

namespace {

/// Where a slice's result (or a pad's input) lies in the whole tensor:
/// `outer` rows of `wholeBytes`, the part `partBytes` wide at `before`.
struct Window {
  int64_t outer, wholeBytes, partBytes, before;
};

/// The CPU binder has checked the geometry (Registry.cpp).
absl::StatusOr<Window> readWindow(const BindRequest &request, bool pad) {
  ZERO_ASSIGN_OR_RETURN(int64_t dim, cpu::getI64(request, "dim"));
  ZERO_ASSIGN_OR_RETURN(int64_t offset, cpu::getI64(request, "offset"));
  const TensorSpec &whole = pad ? request.outs[0] : request.ins[0];
  const TensorSpec &part = pad ? request.ins[0] : request.outs[0];
  auto [outer, rowBytes] = outerAndRowBytes(whole, dim);
  return Window{outer, whole.shape[dim] * rowBytes, part.shape[dim] * rowBytes,
                offset * rowBytes};
}

} // namespace

absl::StatusOr<KernelFn> bindSliceRange(const BindRequest &request,
                                        cudaStream_t stream) {
  ZERO_ASSIGN_OR_RETURN(Window window, readWindow(request, /*pad=*/false));
  Window w = window;
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
    return copyRows(name, static_cast<char *>(outs[0]), w.partBytes,
                    static_cast<const char *>(ins[0]) + w.before, w.wholeBytes,
                    w.partBytes, w.outer, stream);
  });
}

absl::StatusOr<KernelFn> bindPad(const BindRequest &request,
                                 cudaStream_t stream) {
  ZERO_ASSIGN_OR_RETURN(Window window, readWindow(request, /*pad=*/true));
  Window w = window;
  int64_t total = w.outer * w.wholeBytes;
  std::string name(request.name);
  return KernelFn(
      [=](Ins ins, Outs outs, const KernelContext &) -> absl::Status {
        auto *dst = static_cast<char *>(outs[0]);
        if (total == 0)
          return absl::OkStatus();
        // Zero everything, then copy the window over it: two passes over the
        // window's bytes, but two launches whatever the geometry.
        ZERO_RETURN_IF_ERROR(cudaStatus(
            name, cudaMemsetAsync(dst, 0, static_cast<size_t>(total), stream),
            "zero fill"));
        return copyRows(name, dst + w.before, w.wholeBytes,
                        static_cast<const char *>(ins[0]), w.partBytes,
                        w.partBytes, w.outer, stream);
      });
}

absl::StatusOr<KernelFn> bindConcat(const BindRequest &request,
                                    cudaStream_t stream) {
  ZERO_ASSIGN_OR_RETURN(int64_t dim, cpu::getI64(request, "dim"));
  const TensorSpec &out = request.outs[0];
  auto [outer, rowBytes] = outerAndRowBytes(out, dim);
  int64_t wholeBytes = out.shape[dim] * rowBytes;
  std::vector<int64_t> partBytes;
  for (const TensorSpec &in : request.ins)
    partBytes.push_back(in.shape[dim] * rowBytes);
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs,
                      const KernelContext &) -> absl::Status {
    auto *dst = static_cast<char *>(outs[0]);
    int64_t at = 0;
    for (size_t i = 0; i < partBytes.size(); ++i) {
      ZERO_RETURN_IF_ERROR(copyRows(name, dst + at, wholeBytes,
                                    static_cast<const char *>(ins[i]),
                                    partBytes[i], partBytes[i], outer, stream));
      at += partBytes[i];
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindSgd(const BindRequest &request,
                                 cudaStream_t stream) {
  absl::StatusOr<StepLr> rate = readStepLr(request);
  if (!rate.ok())
    return rate.status();
  ZERO_ASSIGN_OR_RETURN(double wd, cpu::getF64Or(request, "weight_decay", 0.0));
  int64_t count = request.ins[0].numElements();
  dev::Dt paramType = dt(request.ins[0].dtype),
          gradType = dt(request.ins[1].dtype);
  float weightDecay = static_cast<float>(wd);
  std::string name(request.name);
  bool skippable = request.ins.size() == 3;
  return KernelFn([=, rate = *rate](Ins ins, Outs outs,
                                    const KernelContext &ctx) {
    return launched(name,
                    dev::launchSgd(ins[0], ins[1], outs[0], paramType, gradType,
                                   count, rate.forCall(ctx), weightDecay,
                                   skipFlag(ins, skippable), stream));
  });
}

absl::StatusOr<KernelFn> bindSgdMomentum(const BindRequest &request,
                                         cudaStream_t stream) {
  absl::StatusOr<StepLr> rate = readStepLr(request);
  if (!rate.ok())
    return rate.status();
  ZERO_ASSIGN_OR_RETURN(double wd, cpu::getF64Or(request, "weight_decay", 0.0));
  ZERO_ASSIGN_OR_RETURN(double momentum, cpu::getF64(request, "momentum"));
  int64_t count = request.ins[0].numElements();
  dev::Dt paramType = dt(request.ins[0].dtype),
          gradType = dt(request.ins[1].dtype),
          bufType = dt(request.ins[2].dtype);
  float weightDecay = static_cast<float>(wd), mu = static_cast<float>(momentum);
  std::string name(request.name);
  bool skippable = request.ins.size() == 4;
  return KernelFn(
      [=, rate = *rate](Ins ins, Outs outs, const KernelContext &ctx) {
        return launched(
            name, dev::launchSgdMomentum(ins[0], ins[1], ins[2], outs[0],
                                         outs[1], paramType, gradType, bufType,
                                         count, rate.forCall(ctx), weightDecay,
                                         mu, skipFlag(ins, skippable), stream));
      });
}

absl::StatusOr<KernelFn> bindAdam(const BindRequest &request,
                                  cudaStream_t stream) {
  absl::StatusOr<StepLr> rate = readStepLr(request);
  if (!rate.ok())
    return rate.status();
  dev::AdamHyper hyper{};
  struct Entry {
    absl::string_view key;
    float *slot;
    double fallback;
  };
  for (Entry entry :
       {Entry{"beta1", &hyper.beta1, 0.9}, Entry{"beta2", &hyper.beta2, 0.999},
        Entry{"eps", &hyper.eps, 1e-8},
        Entry{"weight_decay", &hyper.weightDecay, 0.0}}) {
    ZERO_ASSIGN_OR_RETURN(double value,
                          cpu::getF64Or(request, entry.key, entry.fallback));
    *entry.slot = static_cast<float>(value);
  }
  hyper.decoupled = request.name == "train.adamw";
  int64_t count = request.ins[0].numElements();
  dev::Dt paramType = dt(request.ins[0].dtype),
          gradType = dt(request.ins[1].dtype);
  std::string name(request.name);
  bool skippable = request.ins.size() == 6;
  return KernelFn([=, rate = *rate](Ins ins, Outs outs,
                                    const KernelContext &ctx) {
    // The rate follows the runtime's step (read on the device when
    // ctx.deviceStep is set), as on CPU; the bias corrections follow the
    // step tensor, read on the device.
    return launched(
        name, dev::launchAdam(
                  ins[0], ins[1], static_cast<const float *>(ins[2]),
                  static_cast<const float *>(ins[3]),
                  static_cast<const int64_t *>(ins[4]), outs[0],
                  static_cast<float *>(outs[1]), static_cast<float *>(outs[2]),
                  paramType, gradType, count, rate.forCall(ctx), hyper,
                  skipFlag(ins, skippable), stream));
  });
}

absl::StatusOr<KernelFn> bindSumSquares(const BindRequest &request,
                                        cudaStream_t stream) {
  std::vector<std::pair<dev::Dt, int64_t>> inputs;
  std::vector<int64_t> offsets;
  int64_t partials = 0;
  for (const TensorSpec &spec : request.ins) {
    inputs.push_back({dt(spec.dtype), spec.numElements()});
    offsets.push_back(partials);
    partials += dev::sumSquaresBlocks(spec.numElements());
  }
  std::string name(request.name);
  absl::StatusOr<std::shared_ptr<DeviceScratch>> scratch =
      DeviceScratch::allocate(name, partials * sizeof(float));
  if (!scratch.ok())
    return scratch.status();
  return KernelFn([=, scratch = *std::move(scratch)](
                      Ins ins, Outs outs,
                      const KernelContext &) -> absl::Status {
    float *base = scratch->as<float>();
    for (size_t i = 0; i < inputs.size(); ++i)
      ZERO_RETURN_IF_ERROR(
          launched(name, dev::launchSquaresPartial(ins[i], inputs[i].first,
                                                   inputs[i].second,
                                                   base + offsets[i], stream)));
    return launched(name, dev::launchSumPartials(base, partials,
                                                 static_cast<float *>(outs[0]),
                                                 stream));
  });
}

absl::StatusOr<KernelFn> bindScaleByNorm(const BindRequest &request,
                                         cudaStream_t stream) {
  ZERO_ASSIGN_OR_RETURN(double maxNorm, cpu::getF64(request, "max_norm"));
  std::vector<std::pair<dev::Dt, int64_t>> tensors;
  for (const TensorSpec &spec : request.outs)
    tensors.push_back({dt(spec.dtype), spec.numElements()});
  double bound = maxNorm;
  std::string name(request.name);
  return KernelFn(
      [=](Ins ins, Outs outs, const KernelContext &) -> absl::Status {
        const float *total = static_cast<const float *>(ins[tensors.size()]);
        for (size_t i = 0; i < tensors.size(); ++i)
          ZERO_RETURN_IF_ERROR(launched(
              name,
              dev::launchScaleByNorm(ins[i], outs[i], tensors[i].first,
                                     tensors[i].second, total, bound, stream)));
        return absl::OkStatus();
      });
}

absl::StatusOr<KernelFn> bindUnscale(const BindRequest &request,
                                     cudaStream_t stream) {
  size_t grads = request.ins.size() - 1;
  std::vector<std::pair<dev::Dt, int64_t>> inputs;
  for (size_t i = 0; i < grads; ++i)
    inputs.push_back({dt(request.ins[i].dtype), request.ins[i].numElements()});
  std::string name(request.name);
  // The flag is raised in scratch and copied out last, so that the result
  // may share a buffer with any input without being read back.
  absl::StatusOr<std::shared_ptr<DeviceScratch>> flag =
      DeviceScratch::allocate(name, sizeof(float));
  if (!flag.ok())
    return flag.status();
  return KernelFn([=, flag = *std::move(flag)](
                      Ins ins, Outs outs,
                      const KernelContext &) -> absl::Status {
    float *raised = flag->as<float>();
    const float *scale = static_cast<const float *>(ins[grads]);
    ZERO_RETURN_IF_ERROR(cudaStatus(
        name, cudaMemsetAsync(raised, 0, sizeof(float), stream), "clear"));
    for (size_t i = 0; i < grads; ++i)
      ZERO_RETURN_IF_ERROR(launched(
          name,
          dev::launchUnscale(ins[i], inputs[i].first, inputs[i].second, scale,
                             static_cast<float *>(outs[i]), raised, stream)));
    return cudaStatus(name,
                      cudaMemcpyAsync(outs[grads], raised, sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream),
                      "copy");
  });
}

absl::StatusOr<KernelFn> bindUpdateLossScale(const BindRequest &request,
                                             cudaStream_t stream) {
  ZERO_ASSIGN_OR_RETURN(int64_t interval,
                        cpu::getI64(request, "growth_interval"));
  float growthInterval = static_cast<float>(interval);
  std::string name(request.name);
  return KernelFn([=](Ins ins, Outs outs, const KernelContext &) {
    return launched(
        name, dev::launchUpdateLossScale(static_cast<const float *>(ins[0]),
                                         static_cast<const float *>(ins[1]),
                                         static_cast<const float *>(ins[2]),
                                         static_cast<float *>(outs[0]),
                                         static_cast<float *>(outs[1]),
                                         growthInterval, stream));
  });
}

} // namespace zero::rt::cuda
