//===- BindQuantize.cpp - Binders of dist.quantize and dist.dequantize ----===//
//
// The block layout (int8 or int4 codes) is checked by the CPU binder
// (checkWithCpuBinder) and read again here; the device code is
// Quantize.cu.
//
//===----------------------------------------------------------------------===//

#include "CudaSupport.h"
#include "zero/support/Status.h"

namespace zero::rt::cuda {

using Ins = absl::Span<const void *const>;
using Outs = absl::Span<void *const>;

absl::StatusOr<KernelFn> bindQuantize(const BindRequest &request,
                                      cudaStream_t stream) {
  absl::StatusOr<cpu::QuantizedLayout> layout =
      cpu::getQuantizedLayout(request, request.ins[0], request.outs[1]);
  if (!layout.ok())
    return layout.status();
  dev::Dt type = dt(request.ins[0].dtype);
  std::string name(request.name);
  int bits = static_cast<int>(layout->bits);
  std::shared_ptr<DeviceScratch> scratch;
  if (int64_t floats = dev::quantizeScratchFloats(
          layout->segments, layout->segmentLength, layout->block, bits);
      floats > 0) {
    ZERO_ASSIGN_OR_RETURN(
        std::shared_ptr<DeviceScratch> allocated,
        DeviceScratch::allocate(name, floats * sizeof(float)));
    scratch = std::move(allocated);
  }
  return KernelFn([=, layout = *layout](Ins ins, Outs outs,
                                        const KernelContext &) {
    return launched(
        name,
        dev::launchQuantize(ins[0], type, layout.segments, layout.segmentLength,
                            layout.block, bits, static_cast<int8_t *>(outs[0]),
                            static_cast<float *>(outs[1]),
                            scratch ? scratch->as<float>() : nullptr, stream));
  });
}

absl::StatusOr<KernelFn> bindDequantize(const BindRequest &request,
                                        cudaStream_t stream) {
  absl::StatusOr<cpu::QuantizedLayout> layout =
      cpu::getQuantizedLayout(request, request.outs[0], request.ins[1]);
  if (!layout.ok())
    return layout.status();
  dev::Dt type = dt(request.outs[0].dtype);
  std::string name(request.name);
  return KernelFn([=, layout = *layout](Ins ins, Outs outs,
                                        const KernelContext &) {
    return launched(
        name, dev::launchDequantize(static_cast<const int8_t *>(ins[0]),
                                    static_cast<const float *>(ins[1]),
                                    layout.segments, layout.segmentLength,
                                    layout.block, static_cast<int>(layout.bits),
                                    outs[0], type, stream));
  });
}

} // namespace zero::rt::cuda
