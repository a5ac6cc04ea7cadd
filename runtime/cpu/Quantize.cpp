//===- Quantize.cpp - dist.quantize and dist.dequantize -------------------===//
//
// Block int8 quantization of the data ZeRO++ moves across nodes (qwZ, qgZ);
// the per-block loops are QuantizeLoops.cpp. A block holding a NaN or an
// infinity gets that as its scale and zero codes, so its dequantized values
// are NaN: the dynamic loss scaler sees the overflow and skips the step, as
// it would have without quantization.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "QuantizeLoops.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

namespace zero::rt::cpu {
namespace {

/// Calls fn(offset, count, scaleIndex) for every block in order.
template <typename Fn> void forEachBlock(const QuantizedLayout &layout, Fn fn) {
  int64_t scale = 0;
  for (int64_t segment = 0; segment < layout.segments; ++segment)
    for (int64_t begin = 0; begin < layout.segmentLength; begin += layout.block)
      fn(segment * layout.segmentLength + begin,
         std::min(layout.block, layout.segmentLength - begin), scale++);
}

} // namespace

absl::StatusOr<QuantizedLayout> getQuantizedLayout(const BindRequest &request,
                                                   const TensorSpec &values,
                                                   const TensorSpec &scales) {
  absl::StatusOr<int64_t> block = getI64(request, "block");
  if (!block.ok())
    return block.status();
  QuantizedLayout layout;
  layout.block = *block;
  if (request.params && request.params.get("segments")) {
    absl::StatusOr<int64_t> segments = getI64(request, "segments");
    if (!segments.ok())
      return segments.status();
    layout.segments = *segments;
  }
  if (layout.block < 1 || layout.segments < 1)
    return request.invalid("needs a positive block and segment count, got "
                           "block ",
                           layout.block, " and ", layout.segments,
                           " segment(s)");
  if (values.shape.size() != 1 || scales.shape.size() != 1 ||
      scales.dtype != DType::f32)
    return request.invalid("needs 1-D values and 1-D f32 scales, got ",
                           specString(values), " and ", specString(scales));
  int64_t extent = values.shape[0];
  if (extent % layout.segments != 0)
    return request.invalid(extent, " elements do not cut into ",
                           layout.segments, " equal segments");
  layout.segmentLength = extent / layout.segments;
  layout.blocksPerSegment =
      (layout.segmentLength + layout.block - 1) / layout.block;
  if (scales.shape[0] != layout.blocksPerSegment * layout.segments)
    return request.invalid("needs ", layout.blocksPerSegment * layout.segments,
                           " scales for ", layout.segments, " segment(s) of ",
                           layout.segmentLength, " elements in blocks of ",
                           layout.block, ", got ", specString(scales));
  return layout;
}

/// The checks both binders share: `values` floats named `what`, `codes`
/// int8 of their shape (else `mismatch`), and the blocks' layout.
static absl::StatusOr<QuantizedLayout>
checkCodes(const BindRequest &request, const TensorSpec &values,
           absl::string_view what, const TensorSpec &codes,
           const TensorSpec &scales, absl::string_view mismatch) {
  if (absl::Status status = checkFloat(request, values, what); !status.ok())
    return status;
  if (codes.dtype != DType::i8 || codes.shape != values.shape)
    return request.invalid(mismatch, specString(values), ", got ",
                           specString(codes));
  return getQuantizedLayout(request, codes, scales);
}

/// f32 scratch for one block of a 16-bit tensor (none for f32).
static std::shared_ptr<std::vector<float>>
scratchFor(DType dtype, const QuantizedLayout &layout) {
  return std::make_shared<std::vector<float>>(
      dtype == DType::f32 ? 0 : layout.block);
}

absl::StatusOr<KernelFn> bindQuantize(const BindRequest &request) {
  if (absl::Status status = checkArity(request, 1, 2); !status.ok())
    return status;
  absl::StatusOr<QuantizedLayout> layout =
      checkCodes(request, request.ins[0], "input", request.outs[0],
                 request.outs[1], "writes int8 codes of the input's shape ");
  if (!layout.ok())
    return layout.status();
  DType dtype = request.ins[0].dtype;
  auto scratch = scratchFor(dtype, *layout);
  return KernelFn([layout = *layout, dtype,
                   scratch](absl::Span<const void *const> ins,
                            absl::Span<void *const> outs,
                            const KernelContext &) -> absl::Status {
    auto *codes = static_cast<int8_t *>(outs[0]);
    auto *scales = static_cast<float *>(outs[1]);
    forEachBlock(layout, [&](int64_t offset, int64_t count, int64_t index) {
      const float *x =
          viewFloats(ins[0], dtype, offset, count, scratch->data());
      scales[index] = quantizeBlock(count, x, codes + offset);
      if (!std::isfinite(scales[index]))
        std::fill_n(codes + offset, count, int8_t{0});
    });
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindDequantize(const BindRequest &request) {
  if (absl::Status status = checkArity(request, 2, 1); !status.ok())
    return status;
  absl::StatusOr<QuantizedLayout> layout =
      checkCodes(request, request.outs[0], "result", request.ins[0],
                 request.ins[1], "reads int8 codes of the result's shape ");
  if (!layout.ok())
    return layout.status();
  DType dtype = request.outs[0].dtype;
  auto scratch = scratchFor(dtype, *layout);
  return KernelFn([layout = *layout, dtype,
                   scratch](absl::Span<const void *const> ins,
                            absl::Span<void *const> outs,
                            const KernelContext &) -> absl::Status {
    const auto *codes = static_cast<const int8_t *>(ins[0]);
    const auto *scales = static_cast<const float *>(ins[1]);
    forEachBlock(layout, [&](int64_t offset, int64_t count, int64_t index) {
      float scale = scales[index];
      if (dtype == DType::f32) {
        dequantizeBlock(count, codes + offset, scale,
                        static_cast<float *>(outs[0]) + offset);
        return;
      }
      dequantizeBlock(count, codes + offset, scale, scratch->data());
      storeFloats(outs[0], dtype, offset, count, scratch->data());
    });
    return absl::OkStatus();
  });
}

} // namespace zero::rt::cpu
