//===- KernelSupport.cpp - Shared pieces of the CPU kernels ---------------===//

#include "KernelSupport.h"
#include "runtime/cpu/CastLoops.h"

#include "absl/strings/str_join.h"
#include "zero/support/Status.h"

#include <limits>

namespace zero::rt::cpu {

std::string shapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::string specString(const TensorSpec &spec) {
  std::string text = "tensor<";
  for (int64_t extent : spec.shape)
    absl::StrAppend(&text, extent, "x");
  absl::StrAppend(&text, dtypeName(spec.dtype), ">");
  return text;
}

absl::Status checkArity(const BindRequest &request, size_t ins, size_t outs) {
  if (request.ins.size() != ins || request.outs.size() != outs)
    return request.invalid("takes ", ins, " operand(s) and ", outs,
                           " result(s), got ", request.ins.size(), " and ",
                           request.outs.size());
  return absl::OkStatus();
}

absl::Status checkFloat(const BindRequest &request, const TensorSpec &spec,
                        absl::string_view role) {
  if (!isFloat(spec.dtype))
    return request.invalid("needs f32, bf16 or f16 for the ", role, ", got ",
                           specString(spec));
  return absl::OkStatus();
}

absl::Status checkIndex(const BindRequest &request, const TensorSpec &spec,
                        absl::string_view role) {
  if (spec.dtype != DType::i32 && spec.dtype != DType::i64)
    return request.invalid("needs i32 or i64 for the ", role, ", got ",
                           specString(spec));
  return absl::OkStatus();
}

absl::Status checkShape(const BindRequest &request, const TensorSpec &spec,
                        absl::Span<const int64_t> shape,
                        absl::string_view role) {
  if (absl::Span<const int64_t>(spec.shape) != shape)
    return request.invalid("needs the ", role, " to have shape ",
                           shapeString(shape), ", got ", specString(spec));
  return absl::OkStatus();
}

absl::Status checkSameDType(const BindRequest &request, const TensorSpec &a,
                            absl::string_view roleA, const TensorSpec &b,
                            absl::string_view roleB) {
  if (a.dtype != b.dtype)
    return request.invalid("needs the ", roleA, " and ", roleB,
                           " to have one element type, got ", specString(a),
                           " and ", specString(b));
  return absl::OkStatus();
}

absl::Status checkSameSpec(const BindRequest &request, const TensorSpec &a,
                           absl::string_view roleA, const TensorSpec &b,
                           absl::string_view roleB) {
  if (a.dtype != b.dtype || a.shape != b.shape)
    return request.invalid("needs the ", roleA, " and ", roleB,
                           " to have one type, got ", specString(a), " and ",
                           specString(b));
  return absl::OkStatus();
}

absl::Status checkSpecs(const BindRequest &request) {
  // Element counts stay far below 2^62 so that byte offsets never overflow.
  constexpr int64_t kLimit = int64_t{1} << 50;
  for (auto specs : {request.ins, request.outs})
    for (const TensorSpec &spec : specs) {
      int64_t count = 1;
      for (int64_t extent : spec.shape) {
        if (extent < 0)
          return request.invalid("has a negative extent in ", specString(spec));
        if (extent > 0 && count > kLimit / extent)
          return request.invalid("has a tensor too large to address, ",
                                 specString(spec));
        count *= extent;
      }
    }
  return absl::OkStatus();
}

static const KernelParam *lookup(const BindRequest &request,
                                 absl::string_view key) {
  return request.params.find(key);
}

static std::optional<double> asDouble(const KernelParam &param) {
  if (param.kind == KernelParam::Kind::real)
    return param.real;
  if (param.kind == KernelParam::Kind::integer)
    return static_cast<double>(param.integer);
  return std::nullopt;
}

absl::StatusOr<double> getF64(const BindRequest &request,
                              absl::string_view key) {
  const KernelParam *param = lookup(request, key);
  if (!param)
    return request.invalid("needs a float attribute '", key, "'");
  std::optional<double> value = asDouble(*param);
  if (!value)
    return request.invalid("needs a float for '", key, "', got ", param->text);
  return *value;
}

absl::StatusOr<double> getF64Or(const BindRequest &request,
                                absl::string_view key, double fallback) {
  if (!lookup(request, key))
    return fallback;
  return getF64(request, key);
}

absl::StatusOr<int64_t> getI64(const BindRequest &request,
                               absl::string_view key) {
  const KernelParam *param = lookup(request, key);
  if (!param)
    return request.invalid("needs an integer attribute '", key, "'");
  if (param->kind != KernelParam::Kind::integer)
    return request.invalid("needs an integer for '", key, "', got ",
                           param->text);
  return param->integer;
}

absl::StatusOr<int64_t> getI64Or(const BindRequest &request,
                                 absl::string_view key, int64_t fallback) {
  if (!lookup(request, key))
    return fallback;
  return getI64(request, key);
}

absl::StatusOr<bool> getFlag(const BindRequest &request,
                             absl::string_view key) {
  const KernelParam *param = lookup(request, key);
  if (!param)
    return false;
  if (param->kind == KernelParam::Kind::unit)
    return true;
  if (param->kind == KernelParam::Kind::boolean)
    return param->boolean;
  return request.invalid("needs a unit attribute for '", key, "', got ",
                         param->text);
}

absl::StatusOr<std::vector<int64_t>> getI64Array(const BindRequest &request,
                                                 absl::string_view key) {
  const KernelParam *param = lookup(request, key);
  if (!param)
    return request.invalid("needs an i64 array attribute '", key, "'");
  if (param->kind != KernelParam::Kind::integers)
    return request.invalid("needs an i64 array for '", key, "', got ",
                           param->text);
  return param->integers;
}

void loadFloats(const void *src, DType dtype, int64_t offset, int64_t count,
                float *dst) {
  switch (dtype) {
  case DType::f32:
    std::memcpy(dst, static_cast<const float *>(src) + offset,
                static_cast<size_t>(count) * sizeof(float));
    return;
  case DType::bf16:
    bf16ToFloatBlock(count, static_cast<const uint16_t *>(src) + offset, dst);
    return;
  case DType::f16:
    f16ToFloatBlock(count, static_cast<const uint16_t *>(src) + offset, dst);
    return;
  default:
    return;
  }
}

void storeFloats(void *dst, DType dtype, int64_t offset, int64_t count,
                 const float *src) {
  switch (dtype) {
  case DType::f32:
    std::memcpy(static_cast<float *>(dst) + offset, src,
                static_cast<size_t>(count) * sizeof(float));
    return;
  case DType::bf16:
    floatToBf16Block(count, src, static_cast<uint16_t *>(dst) + offset);
    return;
  case DType::f16:
    floatToF16Block(count, src, static_cast<uint16_t *>(dst) + offset);
    return;
  default:
    return;
  }
}

void fillFloats(void *dst, DType dtype, int64_t offset, int64_t count,
                float value) {
  switch (dtype) {
  case DType::f32: {
    float *data = static_cast<float *>(dst) + offset;
    for (int64_t i = 0; i < count; ++i)
      data[i] = value;
    return;
  }
  case DType::bf16:
  case DType::f16: {
    uint16_t bits =
        dtype == DType::bf16 ? floatToBf16(value) : floatToF16(value);
    uint16_t *data = static_cast<uint16_t *>(dst) + offset;
    for (int64_t i = 0; i < count; ++i)
      data[i] = bits;
    return;
  }
  default:
    return;
  }
}

absl::Status checkIds(absl::string_view kernel, const void *ids, DType dtype,
                      int64_t count, int64_t limit, absl::string_view what,
                      std::optional<int64_t> ignored) {
  for (int64_t position = 0; position < count; ++position) {
    int64_t id = loadIndex(ids, dtype, position);
    if ((id < 0 || id >= limit) && id != ignored)
      return absl::InvalidArgumentError(
          absl::StrCat(kernel, ": ", what, " ", id, " at position ", position,
                       " is out of range [0, ", limit, ")"));
  }
  return absl::OkStatus();
}

KernelFn checkingBufferCounts(KernelFn kernel, absl::string_view name,
                              size_t ins, size_t outs) {
  return KernelFn([kernel = std::move(kernel), name = std::string(name), ins,
                   outs](absl::Span<const void *const> inBuffers,
                         absl::Span<void *const> outBuffers,
                         const KernelContext &ctx) -> absl::Status {
    if (inBuffers.size() != ins || outBuffers.size() != outs)
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": bound for ", ins, " operand(s) and ", outs,
                       " result(s), called with ", inBuffers.size(), " and ",
                       outBuffers.size()));
    return kernel(inBuffers, outBuffers, ctx);
  });
}

absl::Status checkUnarySpecs(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 1, 1));
  ZERO_RETURN_IF_ERROR(checkFloat(request, request.ins[0], "input"));
  return checkSameSpec(request, request.ins[0], "input", request.outs[0],
                       "result");
}

} // namespace zero::rt::cpu
