//===- LossScaling.cpp - Dynamic loss scaling -----------------------------===//
//
// train.unscale divides the loss-scaled gradients by the scale into f32 and
// raises the overflow flag when any of them holds an infinity or a NaN;
// train.update_loss_scale steps the scaler. Both read every input before
// they write, and the flag does not depend on the order of the elements, so
// every rank that checks the same gradients raises the same flag.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "zero/support/Status.h"

#include <algorithm>
#include <cmath>

namespace zero::rt::cpu {
namespace {

bool isScalarF32(const TensorSpec &spec) {
  return spec.dtype == DType::f32 && spec.shape.empty();
}

} // namespace

absl::StatusOr<KernelFn> bindUnscale(const BindRequest &request) {
  if (request.ins.size() < 2 || request.outs.size() != request.ins.size())
    return request.invalid("takes gradients and the scale and yields one "
                           "result per gradient and the overflow flag, got ",
                           request.ins.size(), " operand(s) and ",
                           request.outs.size(), " result(s)");
  size_t grads = request.ins.size() - 1;
  if (!isScalarF32(request.ins[grads]))
    return request.invalid("needs the scale as tensor<f32>, got ",
                           specString(request.ins[grads]));
  if (!isScalarF32(request.outs[grads]))
    return request.invalid("yields the overflow flag as tensor<f32>, got ",
                           specString(request.outs[grads]));
  std::vector<std::pair<DType, int64_t>> inputs;
  for (size_t i = 0; i < grads; ++i) {
    const TensorSpec &in = request.ins[i], &out = request.outs[i];
    ZERO_RETURN_IF_ERROR(checkFloat(request, in, "gradient"));
    if (out.dtype != DType::f32 || out.shape != in.shape)
      return request.invalid("unscales ", specString(in), " into ",
                             specString(out),
                             "; each result is f32 in its gradient's shape");
    inputs.push_back({in.dtype, in.numElements()});
  }
  return KernelFn([inputs](absl::Span<const void *const> ins,
                           absl::Span<void *const> outs,
                           const KernelContext &) -> absl::Status {
    size_t grads = inputs.size();
    float scale = *static_cast<const float *>(ins[grads]);
    // A multiply by the reciprocal would round differently from PyTorch's
    // GradScaler only in the last bit; dividing keeps g * S / S == g exact
    // for power-of-two scales either way.
    float inverse = 1.0f / scale;
    bool overflow = false;
    float scratch[kBlock];
    for (size_t i = 0; i < grads; ++i) {
      auto [dtype, count] = inputs[i];
      float *out = static_cast<float *>(outs[i]);
      for (int64_t offset = 0; offset < count; offset += kBlock) {
        int64_t n = std::min(kBlock, count - offset);
        const float *g = viewFloats(ins[i], dtype, offset, n, scratch);
        for (int64_t j = 0; j < n; ++j) {
          overflow |= !std::isfinite(g[j]);
          out[offset + j] = g[j] * inverse;
        }
      }
    }
    *static_cast<float *>(outs[grads]) = overflow ? 1.0f : 0.0f;
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindUpdateLossScale(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 3, 2));
  static constexpr absl::string_view kRoles[] = {"scale", "good-step count",
                                                 "overflow flag"};
  for (size_t i = 0; i < 3; ++i)
    if (!isScalarF32(request.ins[i]))
      return request.invalid("needs the ", kRoles[i], " as tensor<f32>, got ",
                             specString(request.ins[i]));
  for (size_t i = 0; i < 2; ++i)
    if (!isScalarF32(request.outs[i]))
      return request.invalid("yields the new ", kRoles[i],
                             " as tensor<f32>, got ",
                             specString(request.outs[i]));
  ZERO_ASSIGN_OR_RETURN(int64_t interval, getI64(request, "growth_interval"));
  if (interval < 1 || interval > (int64_t{1} << 24))
    return request.invalid("needs growth_interval in [1, 2^24], got ",
                           interval);
  float growthInterval = static_cast<float>(interval);
  return KernelFn([growthInterval](absl::Span<const void *const> ins,
                                   absl::Span<void *const> outs,
                                   const KernelContext &) -> absl::Status {
    float scale = *static_cast<const float *>(ins[0]);
    float good = *static_cast<const float *>(ins[1]);
    float found = *static_cast<const float *>(ins[2]);
    if (found != 0.0f) {
      // DeepSpeed's min_loss_scale: below 1 the scale would only shrink
      // gradients that already overflow unscaled.
      scale = std::max(scale * 0.5f, 1.0f);
      good = 0.0f;
    } else if (good + 1.0f >= growthInterval) {
      scale *= 2.0f;
      good = 0.0f;
    } else {
      good += 1.0f;
    }
    *static_cast<float *>(outs[0]) = scale;
    *static_cast<float *>(outs[1]) = good;
    return absl::OkStatus();
  });
}

} // namespace zero::rt::cpu
