//===- Normalization.cpp - Softmax and layer norm over the last dim -------===//
//
// Each row is widened into f32 scratch owned by the bound kernel, processed
// there, and rounded once on store; so a row may be written back over its
// own input. Softmax's row sums use sumFixed/dotFixed; layer norm's rows run
// in NormalizationLoops.cpp (Highway), whose row sums add in an order fixed
// independently of the vector width. Either way results depend on nothing
// but the inputs.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "runtime/cpu/ActivationLoops.h"
#include "runtime/cpu/NormalizationLoops.h"
#include "zero/support/Status.h"

#include <cmath>

namespace zero::rt::cpu {
namespace {

/// Rows and columns of a tensor seen as [rows, last dimension].
struct RowShape {
  int64_t rows = 0;
  int64_t cols = 0;
};

RowShape rowShape(const TensorSpec &spec) {
  RowShape shape;
  shape.cols = spec.shape.back();
  shape.rows = 1;
  for (size_t i = 0; i + 1 < spec.shape.size(); ++i)
    shape.rows *= spec.shape[i];
  return shape;
}

std::vector<int64_t> leadingShape(const TensorSpec &spec) {
  return std::vector<int64_t>(spec.shape.begin(), spec.shape.end() - 1);
}

absl::Status checkRowInput(const BindRequest &request, const TensorSpec &in) {
  ZERO_RETURN_IF_ERROR(checkFloat(request, in, "input"));
  if (in.shape.empty())
    return request.invalid("needs an input of rank >= 1, got ", specString(in));
  return absl::OkStatus();
}

/// A per-feature vector (scale, shift, their gradients) of `features`.
absl::Status checkFeatures(const BindRequest &request, const TensorSpec &spec,
                           int64_t features, absl::string_view role) {
  ZERO_RETURN_IF_ERROR(checkFloat(request, spec, role));
  return checkShape(request, spec, {features}, role);
}

/// Per-row statistics: f32, one per row of `in`.
absl::Status checkStats(const BindRequest &request, const TensorSpec &in,
                        const TensorSpec &stats, absl::string_view role) {
  if (stats.dtype != DType::f32)
    return request.invalid("needs f32 for the ", role, ", got ",
                           specString(stats));
  return checkShape(request, stats, leadingShape(in), role);
}

} // namespace

absl::StatusOr<KernelFn> bindSoftmax(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 1, 1));
  const TensorSpec &in = request.ins[0];
  ZERO_RETURN_IF_ERROR(checkRowInput(request, in));
  ZERO_RETURN_IF_ERROR(
      checkSameSpec(request, in, "input", request.outs[0], "result"));
  absl::StatusOr<bool> safe = getFlag(request, "safe");
  if (!safe.ok())
    return safe.status();
  RowShape shape = rowShape(in);
  DType dtype = in.dtype;
  return KernelFn([=, safe = *safe, row = std::vector<float>(shape.cols)](
                      absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) mutable -> absl::Status {
    float *x = row.data();
    int64_t cols = shape.cols;
    for (int64_t r = 0; r < shape.rows; ++r) {
      loadFloats(ins[0], dtype, r * cols, cols, x);
      float max = maxOf(x, cols);
      // A query whose every key is masked attends to nothing: zeros, as
      // PyTorch's attention gives (its _safe_softmax); plain softmax gives
      // NaN there, as torch.softmax does.
      if (safe && max == -INFINITY) {
        fillFloats(outs[0], dtype, r * cols, cols, 0.0f);
        continue;
      }
      expShiftedBlock(cols, x, max, x);
      float inverse = 1.0f / sumFixed(x, cols);
      for (int64_t j = 0; j < cols; ++j)
        x[j] *= inverse;
      storeFloats(outs[0], dtype, r * cols, cols, x);
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindSoftmaxGrad(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 2, 1));
  const TensorSpec &saved = request.ins[0];
  ZERO_RETURN_IF_ERROR(checkRowInput(request, saved));
  ZERO_RETURN_IF_ERROR(checkSameSpec(request, saved, "saved result",
                                     request.ins[1], "result gradient"));
  ZERO_RETURN_IF_ERROR(checkSameSpec(request, saved, "saved result",
                                     request.outs[0], "input gradient"));
  RowShape shape = rowShape(saved);
  DType dtype = saved.dtype;
  return KernelFn([=, rows = std::vector<float>(2 * shape.cols)](
                      absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) mutable -> absl::Status {
    int64_t cols = shape.cols;
    float *y = rows.data(), *dy = rows.data() + cols;
    for (int64_t r = 0; r < shape.rows; ++r) {
      loadFloats(ins[0], dtype, r * cols, cols, y);
      loadFloats(ins[1], dtype, r * cols, cols, dy);
      // d softmax: dx = y * (dy - <y, dy>).
      float dot = dotFixed(y, dy, cols);
      for (int64_t j = 0; j < cols; ++j)
        dy[j] = y[j] * (dy[j] - dot);
      storeFloats(outs[0], dtype, r * cols, cols, dy);
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindLayerNorm(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 3, 3));
  const TensorSpec &in = request.ins[0];
  ZERO_RETURN_IF_ERROR(checkRowInput(request, in));
  RowShape shape = rowShape(in);
  if (shape.cols == 0)
    return request.invalid("normalizes an empty last dimension in ",
                           specString(in));
  ZERO_RETURN_IF_ERROR(
      checkFeatures(request, request.ins[1], shape.cols, "scale"));
  ZERO_RETURN_IF_ERROR(
      checkFeatures(request, request.ins[2], shape.cols, "shift"));
  ZERO_RETURN_IF_ERROR(
      checkSameSpec(request, in, "input", request.outs[0], "result"));
  for (int i = 1; i < 3; ++i)
    ZERO_RETURN_IF_ERROR(
        checkStats(request, in, request.outs[i], "mean and rstd"));
  ZERO_ASSIGN_OR_RETURN(double eps, getF64(request, "eps"));
  if (!(eps > 0.0))
    return request.invalid("needs eps > 0, got ", eps);
  DType dtype = in.dtype, gammaType = request.ins[1].dtype,
        betaType = request.ins[2].dtype;
  float epsilon = static_cast<float>(eps);
  return KernelFn([=, scratch = std::vector<float>(3 * shape.cols)](
                      absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) mutable -> absl::Status {
    int64_t cols = shape.cols;
    float *x = scratch.data(), *gamma = x + cols, *beta = gamma + cols;
    loadFloats(ins[1], gammaType, 0, cols, gamma);
    loadFloats(ins[2], betaType, 0, cols, beta);
    float *means = static_cast<float *>(outs[1]);
    float *rstds = static_cast<float *>(outs[2]);
    for (int64_t r = 0; r < shape.rows; ++r) {
      if (dtype == DType::f32) {
        // Straight from the input into the result (which may be the input).
        layerNormRow(cols, static_cast<const float *>(ins[0]) + r * cols, gamma,
                     beta, epsilon, static_cast<float *>(outs[0]) + r * cols,
                     &means[r], &rstds[r]);
        continue;
      }
      loadFloats(ins[0], dtype, r * cols, cols, x);
      layerNormRow(cols, x, gamma, beta, epsilon, x, &means[r], &rstds[r]);
      storeFloats(outs[0], dtype, r * cols, cols, x);
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindLayerNormGrad(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 5, 3));
  const TensorSpec &dy = request.ins[0], &in = request.ins[1];
  ZERO_RETURN_IF_ERROR(checkRowInput(request, in));
  RowShape shape = rowShape(in);
  if (shape.cols == 0)
    return request.invalid("normalizes an empty last dimension in ",
                           specString(in));
  ZERO_RETURN_IF_ERROR(
      checkSameSpec(request, dy, "result gradient", in, "input"));
  ZERO_RETURN_IF_ERROR(
      checkSameSpec(request, in, "input", request.outs[0], "input gradient"));
  ZERO_RETURN_IF_ERROR(
      checkFeatures(request, request.ins[2], shape.cols, "scale"));
  for (int i = 3; i < 5; ++i)
    ZERO_RETURN_IF_ERROR(
        checkStats(request, in, request.ins[i], "mean and rstd"));
  for (int i = 1; i < 3; ++i)
    ZERO_RETURN_IF_ERROR(
        checkFeatures(request, request.outs[i], shape.cols, "scale gradients"));
  DType dtype = in.dtype, gammaType = request.ins[2].dtype,
        dgammaType = request.outs[1].dtype, dbetaType = request.outs[2].dtype;
  return KernelFn([=, scratch = std::vector<float>(7 * shape.cols)](
                      absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) mutable -> absl::Status {
    int64_t cols = shape.cols;
    float *xs = scratch.data(), *gs = xs + cols, *gamma = gs + cols,
          *dgamma = gamma + cols, *dbeta = dgamma + cols, *rows = dbeta + cols;
    loadFloats(ins[2], gammaType, 0, cols, gamma);
    std::fill_n(dgamma, 2 * cols, 0.0f);
    const float *means = static_cast<const float *>(ins[3]);
    const float *rstds = static_cast<const float *>(ins[4]);
    for (int64_t r = 0; r < shape.rows; ++r) {
      const float *x = viewFloats(ins[1], dtype, r * cols, cols, xs);
      const float *g = viewFloats(ins[0], dtype, r * cols, cols, gs);
      // The row's inputs are read before dx is written, so dx may be
      // either of them.
      float *dx =
          dtype == DType::f32 ? static_cast<float *>(outs[0]) + r * cols : gs;
      layerNormGradRow(cols, x, g, gamma, means[r], rstds[r], dgamma, dbeta, dx,
                       rows);
      if (dtype != DType::f32)
        storeFloats(outs[0], dtype, r * cols, cols, dx);
    }
    storeFloats(outs[1], dgammaType, 0, cols, dgamma);
    storeFloats(outs[2], dbetaType, 0, cols, dbeta);
    return absl::OkStatus();
  });
}

} // namespace zero::rt::cpu
