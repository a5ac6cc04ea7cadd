//===- Elementwise.cpp - Elementwise kernels ------------------------------===//
//
// Unary and binary math, scale, bias_add, causal_mask, cast, the activation
// gradients, and the runtime's fill and step_index.
//
// Every elementwise kernel walks its tensors in blocks: inputs are converted
// to f32, the operation runs on plain float arrays (which vectorize), and the
// result is rounded into the output. A block reads all of its inputs before
// it writes, so an output may be the same buffer as an input.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "runtime/cpu/ActivationLoops.h"
#include "zero/support/Status.h"

#include <algorithm>
#include <cmath>

namespace zero::rt::cpu {
namespace {

/// Runs `op(x, y, n)` over a tensor of `count` elements.
template <typename Op>
KernelFn unaryKernel(DType inType, DType outType, int64_t count, Op op) {
  return [=](absl::Span<const void *const> ins, absl::Span<void *const> outs,
             const KernelContext &) -> absl::Status {
    if (inType == DType::f32 && outType == DType::f32) {
      op(static_cast<const float *>(ins[0]), static_cast<float *>(outs[0]),
         count);
      return absl::OkStatus();
    }
    float x[kBlock], y[kBlock];
    for (int64_t offset = 0; offset < count; offset += kBlock) {
      int64_t n = std::min(kBlock, count - offset);
      loadFloats(ins[0], inType, offset, n, x);
      op(x, y, n);
      storeFloats(outs[0], outType, offset, n, y);
    }
    return absl::OkStatus();
  };
}

/// Runs `op(a, b, y, n)` over two operands and one result of one dtype.
template <typename Op>
KernelFn binaryKernel(DType dtype, int64_t count, Op op) {
  return [=](absl::Span<const void *const> ins, absl::Span<void *const> outs,
             const KernelContext &) -> absl::Status {
    if (dtype == DType::f32) {
      op(static_cast<const float *>(ins[0]), static_cast<const float *>(ins[1]),
         static_cast<float *>(outs[0]), count);
      return absl::OkStatus();
    }
    float a[kBlock], b[kBlock], y[kBlock];
    for (int64_t offset = 0; offset < count; offset += kBlock) {
      int64_t n = std::min(kBlock, count - offset);
      loadFloats(ins[0], dtype, offset, n, a);
      loadFloats(ins[1], dtype, offset, n, b);
      op(a, b, y, n);
      storeFloats(outs[0], dtype, offset, n, y);
    }
    return absl::OkStatus();
  };
}

/// Checks one operand and one result of one float type.
absl::Status checkBinarySpecs(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 2, 1));
  ZERO_RETURN_IF_ERROR(checkFloat(request, request.ins[0], "operands"));
  ZERO_RETURN_IF_ERROR(checkSameSpec(request, request.ins[0], "operand 0",
                                     request.ins[1], "operand 1"));
  return checkSameSpec(request, request.ins[0], "operands", request.outs[0],
                       "result");
}

} // namespace

absl::StatusOr<KernelFn> bindUnary(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkUnarySpecs(request));
  DType dtype = request.ins[0].dtype;
  int64_t count = request.ins[0].numElements();
  absl::string_view op = request.name.substr(request.name.find('.') + 1);
  auto make = [&](auto scalar) {
    return unaryKernel(dtype, dtype, count,
                       [scalar](const float *x, float *y, int64_t n) {
                         for (int64_t i = 0; i < n; ++i)
                           y[i] = scalar(x[i]);
                       });
  };
  if (op == "neg")
    return make([](float x) { return -x; });
  if (op == "exp")
    return make([](float x) { return std::exp(x); });
  if (op == "log")
    return make([](float x) { return std::log(x); });
  if (op == "sqrt")
    return make([](float x) { return std::sqrt(x); });
  if (op == "rsqrt")
    return make([](float x) { return 1.0f / std::sqrt(x); });
  if (op == "tanh")
    return make([](float x) { return std::tanh(x); });
  // NaN passes, as in PyTorch: a NaN batch must not look finite.
  if (op == "relu")
    return make([](float x) { return x > 0.0f || x != x ? x : 0.0f; });
  if (op == "gelu") {
    ZERO_ASSIGN_OR_RETURN(bool exact, getFlag(request, "exact"));
    if (exact)
      return unaryKernel(
          dtype, dtype, count,
          [](const float *x, float *y, int64_t n) { geluExactBlock(n, x, y); });
    return unaryKernel(
        dtype, dtype, count,
        [](const float *x, float *y, int64_t n) { geluBlock(n, x, y); });
  }
  if (op == "sigmoid")
    return unaryKernel(
        dtype, dtype, count,
        [](const float *x, float *y, int64_t n) { sigmoidBlock(n, x, y); });
  if (op == "silu")
    return unaryKernel(
        dtype, dtype, count,
        [](const float *x, float *y, int64_t n) { siluBlock(n, x, y); });
  return absl::UnimplementedError(
      absl::StrCat("no CPU kernel for '", request.name, "'"));
}

/// A kernel applying `scalar(a[i], b[i])` to two same-shaped inputs.
template <typename Scalar>
KernelFn elementwiseBinary(const BindRequest &request, Scalar scalar) {
  return binaryKernel(
      request.ins[0].dtype, request.ins[0].numElements(),
      [scalar](const float *a, const float *b, float *y, int64_t n) {
        for (int64_t i = 0; i < n; ++i)
          y[i] = scalar(a[i], b[i]);
      });
}

absl::StatusOr<KernelFn> bindBinary(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkBinarySpecs(request));
  absl::string_view op = request.name.substr(request.name.find('.') + 1);
  if (op == "add")
    return elementwiseBinary(request, [](float a, float b) { return a + b; });
  if (op == "sub")
    return elementwiseBinary(request, [](float a, float b) { return a - b; });
  if (op == "mul")
    return elementwiseBinary(request, [](float a, float b) { return a * b; });
  if (op == "div")
    return elementwiseBinary(request, [](float a, float b) { return a / b; });
  return absl::UnimplementedError(
      absl::StrCat("no CPU kernel for '", request.name, "'"));
}

/// Gradients from the saved input (relu, gelu, silu) or result (tanh,
/// sigmoid) and dy.
absl::StatusOr<KernelFn> bindActivationGrad(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkBinarySpecs(request));
  absl::string_view op = request.name.substr(request.name.find('.') + 1);
  if (op == "relu_grad")
    return elementwiseBinary(
        // PyTorch's threshold_backward zeroes where x <= 0: at a NaN the
        // gradient passes, NaN or not, rather than being cut to 0.
        request, [](float x, float dy) { return !(x <= 0.0f) ? dy : 0.0f; });
  if (op == "gelu_grad") {
    ZERO_ASSIGN_OR_RETURN(bool exact, getFlag(request, "exact"));
    if (exact)
      return binaryKernel(request.ins[0].dtype, request.ins[0].numElements(),
                          [](const float *x, const float *dy, float *dx,
                             int64_t n) { geluExactGradBlock(n, x, dy, dx); });
    return binaryKernel(request.ins[0].dtype, request.ins[0].numElements(),
                        [](const float *x, const float *dy, float *dx,
                           int64_t n) { geluGradBlock(n, x, dy, dx); });
  }
  if (op == "tanh_grad")
    return elementwiseBinary(
        request, [](float y, float dy) { return dy * (1.0f - y * y); });
  if (op == "sigmoid_grad")
    return binaryKernel(request.ins[0].dtype, request.ins[0].numElements(),
                        [](const float *y, const float *dy, float *dx,
                           int64_t n) { sigmoidGradBlock(n, y, dy, dx); });
  if (op == "silu_grad")
    return binaryKernel(request.ins[0].dtype, request.ins[0].numElements(),
                        [](const float *x, const float *dy, float *dx,
                           int64_t n) { siluGradBlock(n, x, dy, dx); });
  return absl::UnimplementedError(
      absl::StrCat("no CPU kernel for '", request.name, "'"));
}

absl::StatusOr<KernelFn> bindScale(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkUnarySpecs(request));
  ZERO_ASSIGN_OR_RETURN(double factor, getF64(request, "factor"));
  float scale = static_cast<float>(factor);
  DType dtype = request.ins[0].dtype;
  return unaryKernel(dtype, dtype, request.ins[0].numElements(),
                     [scale](const float *x, float *y, int64_t n) {
                       for (int64_t i = 0; i < n; ++i)
                         y[i] = x[i] * scale;
                     });
}

absl::StatusOr<KernelFn> bindCast(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 1, 1));
  const TensorSpec &in = request.ins[0], &out = request.outs[0];
  ZERO_RETURN_IF_ERROR(checkFloat(request, in, "input"));
  ZERO_RETURN_IF_ERROR(checkFloat(request, out, "result"));
  if (in.shape != out.shape)
    return request.invalid("converts elements only, but the shape changes "
                           "from ",
                           specString(in), " to ", specString(out));
  if (in.dtype == out.dtype) {
    int64_t bytes = in.numElements() * dtypeBytes(in.dtype);
    return KernelFn([bytes](absl::Span<const void *const> ins,
                            absl::Span<void *const> outs,
                            const KernelContext &) -> absl::Status {
      copyBytes(outs[0], ins[0], bytes);
      return absl::OkStatus();
    });
  }
  DType inType = in.dtype, outType = out.dtype;
  int64_t count = in.numElements();
  if (inType == DType::f32 || outType == DType::f32)
    // One pass through the conversion loops (CastLoops.h), which read each
    // vector before writing it, so an f32 -> 16-bit cast may also run in
    // place.
    return KernelFn([=](absl::Span<const void *const> ins,
                        absl::Span<void *const> outs,
                        const KernelContext &) -> absl::Status {
      if (inType == DType::f32)
        storeFloats(outs[0], outType, 0, count,
                    static_cast<const float *>(ins[0]));
      else
        loadFloats(ins[0], inType, 0, count, static_cast<float *>(outs[0]));
      return absl::OkStatus();
    });
  return unaryKernel(
      inType, outType, count,
      [](const float *x, float *y, int64_t n) { std::copy(x, x + n, y); });
}

absl::StatusOr<KernelFn> bindBiasAdd(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 2, 1));
  const TensorSpec &in = request.ins[0], &bias = request.ins[1];
  ZERO_RETURN_IF_ERROR(checkFloat(request, in, "input"));
  ZERO_RETURN_IF_ERROR(checkFloat(request, bias, "bias"));
  ZERO_RETURN_IF_ERROR(
      checkSameSpec(request, in, "input", request.outs[0], "result"));
  if (in.shape.empty())
    return request.invalid("needs an input of rank >= 1, got ", specString(in));
  int64_t features = in.shape.back();
  ZERO_RETURN_IF_ERROR(checkShape(request, bias, {features}, "bias"));
  int64_t rows = features == 0 ? 0 : in.numElements() / features;
  DType dtype = in.dtype, biasType = bias.dtype;
  return KernelFn([=, biasRow = std::vector<float>(features)](
                      absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) mutable -> absl::Status {
    loadFloats(ins[1], biasType, 0, features, biasRow.data());
    const float *b = biasRow.data();
    if (dtype == DType::f32) {
      const float *x = static_cast<const float *>(ins[0]);
      float *y = static_cast<float *>(outs[0]);
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t j = 0; j < features; ++j)
          y[row * features + j] = x[row * features + j] + b[j];
      return absl::OkStatus();
    }
    float block[kBlock];
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t j0 = 0; j0 < features; j0 += kBlock) {
        int64_t n = std::min(kBlock, features - j0);
        loadFloats(ins[0], dtype, row * features + j0, n, block);
        for (int64_t j = 0; j < n; ++j)
          block[j] += b[j0 + j];
        storeFloats(outs[0], dtype, row * features + j0, n, block);
      }
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindCausalMask(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkUnarySpecs(request));
  const TensorSpec &in = request.ins[0];
  if (in.shape.size() < 2)
    return request.invalid("masks the last two dimensions, but ",
                           specString(in), " has rank ", in.shape.size());
  ZERO_ASSIGN_OR_RETURN(double fill, getF64(request, "fill"));
  int64_t cols = in.shape.back(), rowsPerMatrix = in.shape[in.shape.size() - 2];
  int64_t matrices =
      cols * rowsPerMatrix == 0 ? 0 : in.numElements() / (cols * rowsPerMatrix);
  DType dtype = in.dtype;
  int64_t elementBytes = dtypeBytes(dtype);
  float value = static_cast<float>(fill);
  return KernelFn([=](absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) -> absl::Status {
    const char *src = static_cast<const char *>(ins[0]);
    char *dst = static_cast<char *>(outs[0]);
    for (int64_t matrix = 0; matrix < matrices; ++matrix)
      for (int64_t i = 0; i < rowsPerMatrix; ++i) {
        int64_t row = matrix * rowsPerMatrix + i;
        int64_t kept = std::min(i + 1, cols);
        copyBytes(dst + row * cols * elementBytes,
                  src + row * cols * elementBytes, kept * elementBytes);
        fillFloats(dst, dtype, row * cols + kept, cols - kept, value);
      }
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindKeyMask(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 2, 1));
  const TensorSpec &in = request.ins[0], &keep = request.ins[1];
  ZERO_RETURN_IF_ERROR(checkFloat(request, in, "input"));
  ZERO_RETURN_IF_ERROR(checkIndex(request, keep, "keep"));
  ZERO_RETURN_IF_ERROR(
      checkSameSpec(request, in, "input", request.outs[0], "result"));
  if (in.shape.size() < 2)
    return request.invalid("masks keys along the last dimension of a batch, "
                           "but ",
                           specString(in), " has rank ", in.shape.size());
  ZERO_RETURN_IF_ERROR(
      checkShape(request, keep, {in.shape.front(), in.shape.back()}, "keep"));
  ZERO_ASSIGN_OR_RETURN(double fill, getF64(request, "fill"));
  int64_t batch = in.shape.front(), keys = in.shape.back();
  int64_t rowsPerBatch =
      batch * keys == 0 ? 0 : in.numElements() / (batch * keys);
  DType dtype = in.dtype, keepType = keep.dtype;
  int64_t rowBytes = keys * dtypeBytes(dtype);
  float value = static_cast<float>(fill);
  return KernelFn([=](absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &) -> absl::Status {
    const char *src = static_cast<const char *>(ins[0]);
    char *dst = static_cast<char *>(outs[0]);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < rowsPerBatch; ++i) {
        int64_t row = b * rowsPerBatch + i;
        copyBytes(dst + row * rowBytes, src + row * rowBytes, rowBytes);
        for (int64_t j = 0; j < keys; ++j)
          if (loadIndex(ins[1], keepType, b * keys + j) == 0)
            fillFloats(dst, dtype, row * keys + j, 1, value);
      }
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindFill(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 0, 1));
  ZERO_ASSIGN_OR_RETURN(double value, getF64(request, "value"));
  const TensorSpec &out = request.outs[0];
  int64_t count = out.numElements();
  DType dtype = out.dtype;
  if (isFloat(dtype)) {
    float number = static_cast<float>(value);
    return KernelFn([=](absl::Span<const void *const>,
                        absl::Span<void *const> outs,
                        const KernelContext &) -> absl::Status {
      fillFloats(outs[0], dtype, 0, count, number);
      return absl::OkStatus();
    });
  }
  double limit = dtype == DType::i32 ? 2147483648.0 : 9223372036854775808.0;
  if (!(std::trunc(value) == value && value >= -limit && value < limit))
    return request.invalid("cannot fill ", specString(out), " with ", value);
  int64_t number = static_cast<int64_t>(value);
  return KernelFn([=](absl::Span<const void *const>,
                      absl::Span<void *const> outs,
                      const KernelContext &) -> absl::Status {
    if (dtype == DType::i32)
      std::fill_n(static_cast<int32_t *>(outs[0]), count,
                  static_cast<int32_t>(number));
    else
      std::fill_n(static_cast<int64_t *>(outs[0]), count, number);
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindStepIndex(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 0, 1));
  const TensorSpec &out = request.outs[0];
  if (out.dtype != DType::i64 || !out.shape.empty())
    return request.invalid("writes a tensor<i64>, got ", specString(out));
  return KernelFn([](absl::Span<const void *const>,
                     absl::Span<void *const> outs,
                     const KernelContext &ctx) -> absl::Status {
    *static_cast<int64_t *>(outs[0]) = ctx.step;
    return absl::OkStatus();
  });
}

} // namespace zero::rt::cpu
