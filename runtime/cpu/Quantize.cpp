//===- Quantize.cpp - dist.quantize and dist.dequantize -------------------===//
//
// Block int8 and int4 quantization of the data ZeRO++ moves across nodes
// (qwZ, qgZ); the per-block loops are QuantizeLoops.cpp. A block holding a
// NaN or an infinity gets that as its scale and zero codes, so its
// dequantized values are NaN: the dynamic loss scaler sees the overflow and
// skips the step, as it would have without quantization.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "QuantizeLoops.h"
#include "zero/support/Status.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

namespace zero::rt::cpu {
namespace {

/// Calls fn(segment, begin, count, scaleIndex) for every block in order:
/// elements [begin, begin + count) of the segment.
template <typename Fn> void forEachBlock(const QuantizedLayout &layout, Fn fn) {
  int64_t scale = 0;
  for (int64_t segment = 0; segment < layout.segments; ++segment)
    for (int64_t begin = 0; begin < layout.segmentLength; begin += layout.block)
      fn(segment, begin, std::min(layout.block, layout.segmentLength - begin),
         scale++);
}

/// The largest code: the scale is the block's largest magnitude over it.
float largestCode(int64_t bits) { return bits == 4 ? 7.0f : 127.0f; }

/// Codes [begin, begin + count) of a segment into its int4 bytes, the even
/// element in the low nibble. A block that starts or ends inside a byte
/// shares it with its neighbour, so those nibbles are or-ed into bytes that
/// start zeroed; the whole bytes between go through the vector loop.
void packNibbles(const int8_t *codes, int64_t begin, int64_t count,
                 uint8_t *bytes) {
  if (count > 0 && begin % 2) {
    bytes[begin / 2] |=
        static_cast<uint8_t>(static_cast<uint8_t>(codes[0]) << 4);
    ++codes, ++begin, --count;
  }
  packNibblePairs(count / 2, codes, bytes + begin / 2);
  if (count % 2)
    bytes[(begin + count) / 2] |= static_cast<uint8_t>(codes[count - 1] & 0x0f);
}

/// The inverse of packNibbles, sign-extending each nibble.
void unpackNibbles(const uint8_t *bytes, int64_t begin, int64_t count,
                   int8_t *codes) {
  if (count > 0 && begin % 2) {
    codes[0] = signExtendNibble(bytes[begin / 2] >> 4);
    ++codes, ++begin, --count;
  }
  unpackNibblePairs(count / 2, bytes + begin / 2, codes);
  if (count % 2)
    codes[count - 1] = signExtendNibble(bytes[(begin + count) / 2] & 0x0f);
}

} // namespace

absl::StatusOr<QuantizedLayout> getQuantizedLayout(const BindRequest &request,
                                                   const TensorSpec &values,
                                                   const TensorSpec &scales) {
  ZERO_ASSIGN_OR_RETURN(int64_t block, getI64(request, "block"));
  QuantizedLayout layout;
  layout.block = block;
  for (auto [name, field] :
       {std::pair<const char *, int64_t *>{"segments", &layout.segments},
        {"bits", &layout.bits}}) {
    if (!request.params.contains(name))
      continue;
    ZERO_ASSIGN_OR_RETURN(int64_t value, getI64(request, name));
    *field = value;
  }
  if (layout.block < 1 || layout.segments < 1)
    return request.invalid("needs a positive block and segment count, got "
                           "block ",
                           layout.block, " and ", layout.segments,
                           " segment(s)");
  if (layout.bits != 8 && layout.bits != 4)
    return request.invalid("has ", layout.bits,
                           "-bit codes; int8 and int4 are supported");
  if (values.shape.size() != 1 || scales.shape.size() != 1 ||
      scales.dtype != DType::f32)
    return request.invalid("needs 1-D values and 1-D f32 scales, got ",
                           specString(values), " and ", specString(scales));
  int64_t extent = values.shape[0];
  if (extent % layout.segments != 0)
    return request.invalid(extent, " elements do not cut into ",
                           layout.segments, " equal segments");
  layout.segmentLength = extent / layout.segments;
  // Each segment's codes start on a byte (the dialect's
  // quantizedSegmentBytes).
  layout.segmentBytes = (layout.segmentLength * layout.bits + 7) / 8;
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
/// bytes holding their segments' codes, and the blocks' layout.
static absl::StatusOr<QuantizedLayout> checkCodes(const BindRequest &request,
                                                  const TensorSpec &values,
                                                  absl::string_view what,
                                                  const TensorSpec &codes,
                                                  const TensorSpec &scales) {
  ZERO_RETURN_IF_ERROR(checkFloat(request, values, what));
  absl::StatusOr<QuantizedLayout> layout =
      getQuantizedLayout(request, values, scales);
  if (!layout.ok())
    return layout;
  int64_t bytes = layout->segments * layout->segmentBytes;
  if (codes.dtype != DType::i8 || codes.shape != std::vector<int64_t>{bytes})
    return request.invalid("needs ", bytes, " bytes of int", layout->bits,
                           " codes for ", specString(values), ", got ",
                           specString(codes));
  return layout;
}

/// Per-block scratch: f32 for a 16-bit tensor (none for f32), and int8
/// codes to pack into or unpack from int4 bytes (none for int8).
struct BlockScratch {
  BlockScratch(DType dtype, const QuantizedLayout &layout)
      : floats(dtype == DType::f32 ? 0 : layout.block),
        codes(layout.bits == 8 ? 0 : layout.block) {}
  std::vector<float> floats;
  std::vector<int8_t> codes;
};

absl::StatusOr<KernelFn> bindQuantize(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 1, 2));
  absl::StatusOr<QuantizedLayout> layout = checkCodes(
      request, request.ins[0], "input", request.outs[0], request.outs[1]);
  if (!layout.ok())
    return layout.status();
  DType dtype = request.ins[0].dtype;
  auto scratch = std::make_shared<BlockScratch>(dtype, *layout);
  return KernelFn([layout = *layout, dtype,
                   scratch](absl::Span<const void *const> ins,
                            absl::Span<void *const> outs,
                            const KernelContext &) -> absl::Status {
    auto *bytes = static_cast<uint8_t *>(outs[0]);
    auto *scales = static_cast<float *>(outs[1]);
    bool packed = layout.bits == 4;
    if (packed)
      std::memset(bytes, 0, layout.segments * layout.segmentBytes);
    forEachBlock(layout, [&](int64_t segment, int64_t begin, int64_t count,
                             int64_t index) {
      uint8_t *segmentBytes = bytes + segment * layout.segmentBytes;
      int8_t *codes = packed ? scratch->codes.data()
                             : reinterpret_cast<int8_t *>(segmentBytes) + begin;
      const float *x =
          viewFloats(ins[0], dtype, segment * layout.segmentLength + begin,
                     count, scratch->floats.data());
      scales[index] = quantizeBlock(count, x, codes, largestCode(layout.bits));
      if (!std::isfinite(scales[index]))
        std::fill_n(codes, count, int8_t{0});
      if (packed)
        packNibbles(codes, begin, count, segmentBytes);
    });
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelFn> bindDequantize(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkArity(request, 2, 1));
  absl::StatusOr<QuantizedLayout> layout = checkCodes(
      request, request.outs[0], "result", request.ins[0], request.ins[1]);
  if (!layout.ok())
    return layout.status();
  DType dtype = request.outs[0].dtype;
  auto scratch = std::make_shared<BlockScratch>(dtype, *layout);
  return KernelFn([layout = *layout, dtype,
                   scratch](absl::Span<const void *const> ins,
                            absl::Span<void *const> outs,
                            const KernelContext &) -> absl::Status {
    const auto *bytes = static_cast<const uint8_t *>(ins[0]);
    const auto *scales = static_cast<const float *>(ins[1]);
    forEachBlock(layout, [&](int64_t segment, int64_t begin, int64_t count,
                             int64_t index) {
      const uint8_t *segmentBytes = bytes + segment * layout.segmentBytes;
      const int8_t *codes =
          reinterpret_cast<const int8_t *>(segmentBytes) + begin;
      if (layout.bits == 4) {
        unpackNibbles(segmentBytes, begin, count, scratch->codes.data());
        codes = scratch->codes.data();
      }
      int64_t offset = segment * layout.segmentLength + begin;
      if (dtype == DType::f32) {
        dequantizeBlock(count, codes, scales[index],
                        static_cast<float *>(outs[0]) + offset);
        return;
      }
      dequantizeBlock(count, codes, scales[index], scratch->floats.data());
      storeFloats(outs[0], dtype, offset, count, scratch->floats.data());
    });
    return absl::OkStatus();
  });
}

} // namespace zero::rt::cpu
