//===- Clipping.cpp - Gradient clipping by global norm --------------------===//
//
// train.sum_squares (the squared norm, or a rank's partial sum of it) and
// train.scale_by_norm (the clip). The sum is taken block by block in a fixed
// order so that a step is deterministic; the squares accumulate in f32 like
// every other reduction of the runtime.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "zero/support/Status.h"

#include <algorithm>
#include <cmath>

namespace zero::rt::cpu {

absl::StatusOr<KernelFn> bindSumSquares(const BindRequest &request) {
  if (request.ins.empty() || request.outs.size() != 1)
    return request.invalid("takes one or more tensors and yields one scalar, "
                           "got ",
                           request.ins.size(), " operand(s) and ",
                           request.outs.size(), " result(s)");
  for (const TensorSpec &spec : request.ins)
    ZERO_RETURN_IF_ERROR(checkFloat(request, spec, "operand"));
  const TensorSpec &out = request.outs[0];
  if (out.dtype != DType::f32 || out.numElements() != 1)
    return request.invalid("yields tensor<f32>, got ", specString(out));
  std::vector<std::pair<DType, int64_t>> inputs;
  for (const TensorSpec &spec : request.ins)
    inputs.push_back({spec.dtype, spec.numElements()});
  return KernelFn([inputs](absl::Span<const void *const> ins,
                           absl::Span<void *const> outs,
                           const KernelContext &) -> absl::Status {
    float total = 0.0f;
    float scratch[kBlock];
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto [dtype, count] = inputs[i];
      for (int64_t offset = 0; offset < count; offset += kBlock) {
        int64_t n = std::min(kBlock, count - offset);
        const float *x = viewFloats(ins[i], dtype, offset, n, scratch);
        total += dotFixed(x, x, n);
      }
    }
    *static_cast<float *>(outs[0]) = total;
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindScaleByNorm(const BindRequest &request) {
  if (request.ins.size() < 2 || request.outs.size() != request.ins.size() - 1)
    return request.invalid("takes tensors and their total sum of squares and "
                           "yields one result per tensor, got ",
                           request.ins.size(), " operand(s) and ",
                           request.outs.size(), " result(s)");
  const TensorSpec &total = request.ins.back();
  if (total.dtype != DType::f32 || total.numElements() != 1)
    return request.invalid("needs the total as tensor<f32>, got ",
                           specString(total));
  for (size_t i = 0; i < request.outs.size(); ++i) {
    ZERO_RETURN_IF_ERROR(checkFloat(request, request.ins[i], "operand"));
    ZERO_RETURN_IF_ERROR(checkSameSpec(request, request.ins[i], "operand",
                                       request.outs[i], "its result"));
  }
  ZERO_ASSIGN_OR_RETURN(double maxNorm, getF64(request, "max_norm"));
  std::vector<std::pair<DType, int64_t>> tensors;
  for (const TensorSpec &spec : request.outs)
    tensors.push_back({spec.dtype, spec.numElements()});
  double bound = maxNorm;
  return KernelFn([tensors, bound](absl::Span<const void *const> ins,
                                   absl::Span<void *const> outs,
                                   const KernelContext &) -> absl::Status {
    float sum = *static_cast<const float *>(ins[tensors.size()]);
    // 1e-6 keeps the factor finite for zero gradients (PyTorch's
    // clip_grad_norm_); below the bound the gradients pass unchanged. A NaN
    // norm gives a NaN factor, as PyTorch's clamp does: every gradient
    // becomes NaN rather than passing unclipped.
    double quotient = bound / (std::sqrt(static_cast<double>(sum)) + 1e-6);
    float factor = static_cast<float>(
        std::isnan(quotient) ? quotient : std::min(1.0, quotient));
    float x[kBlock], y[kBlock];
    for (size_t i = 0; i < tensors.size(); ++i) {
      auto [dtype, count] = tensors[i];
      for (int64_t offset = 0; offset < count; offset += kBlock) {
        int64_t n = std::min(kBlock, count - offset);
        loadFloats(ins[i], dtype, offset, n, x);
        for (int64_t j = 0; j < n; ++j)
          y[j] = x[j] * factor;
        storeFloats(outs[i], dtype, offset, n, y);
      }
    }
    return absl::OkStatus();
  });
}

} // namespace zero::rt::cpu
