//===- Dropout.cpp - train.dropout on the CPU -----------------------------===//
//
// The mask is runtime/Dropout.h's: a function of the seed, the op's stream,
// the (micro-)step and each element's index in the global batch, which is
// this rank's offset (its rows of the batch) plus the local index.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"

#include "zero/runtime/Dropout.h"
#include "zero/support/Status.h"

#include <algorithm>

namespace zero::rt::cpu {

absl::StatusOr<KernelFn> bindDropout(const BindRequest &request) {
  ZERO_RETURN_IF_ERROR(checkUnarySpecs(request));
  const TensorSpec &in = request.ins[0];
  if (in.shape.empty())
    return request.invalid("draws its mask along the batch, the first "
                           "dimension, but ",
                           specString(in), " has none");
  ZERO_ASSIGN_OR_RETURN(double rate, getF64(request, "rate"));
  if (!(rate >= 0.0 && rate < 1.0))
    return request.invalid("needs a rate in [0, 1), got ", rate);
  ZERO_ASSIGN_OR_RETURN(int64_t stream, getI64Or(request, "stream", -1));
  if (stream < 0)
    return request.invalid("needs a stream >= 0");
  int64_t count = in.numElements();
  DType dtype = in.dtype;
  uint64_t threshold = dropoutThreshold(rate);
  // PyTorch's scale: the kept elements times 1 / (1 - p), in f32.
  float scale = static_cast<float>(1.0 / (1.0 - rate));
  int64_t streamId = stream;
  return KernelFn([=](absl::Span<const void *const> ins,
                      absl::Span<void *const> outs,
                      const KernelContext &ctx) -> absl::Status {
    DropoutKey key{ctx.seed, streamId, ctx.step, ctx.microStep};
    // The batch is split over the ranks in order: this rank's elements
    // follow those of the ranks before it.
    uint64_t offset = static_cast<uint64_t>(ctx.batchRank) * count;
    constexpr int64_t kBlock = 256;
    float block[kBlock];
    for (int64_t start = 0; start < count; start += kBlock) {
      int64_t n = std::min(kBlock, count - start);
      loadFloats(ins[0], dtype, start, n, block);
      // One Philox call draws for four consecutive global elements.
      uint64_t drawn = ~uint64_t{0};
      Philox4x32 bits{};
      for (int64_t i = 0; i < n; ++i) {
        uint64_t index = offset + start + i;
        if (index / 4 != drawn) {
          drawn = index / 4;
          bits = dropoutBits(key, drawn);
        }
        // A dropped element is multiplied by 0, not replaced by it: NaN and
        // infinity stay NaN, as in PyTorch's x * mask * scale.
        block[i] *= bits.v[index % 4] >= threshold ? scale : 0.0f;
      }
      storeFloats(outs[0], dtype, start, n, block);
    }
    return absl::OkStatus();
  });
}

} // namespace zero::rt::cpu
