//===- Registry.cpp - Kernel names to CUDA binders ------------------------===//
//
// The same names as the CPU registry. A request is first checked by the CPU
// binder of the same name, so both backends accept exactly the same programs
// and report the same errors; only then does the CUDA binder allocate device
// scratch or cuBLAS state.
//
//===----------------------------------------------------------------------===//

#include "CudaSupport.h"
#include "zero/support/Status.h"

#include "absl/strings/match.h"

#include <algorithm>
#include <string>
#include <utility>

namespace zero::rt {
namespace {

/// Sorted by name so that lookup is a binary search over a constant table.
constexpr std::pair<absl::string_view, cuda::Binder> kBinders[] = {
    {"dist.dequantize", cuda::bindDequantize},
    {"dist.quantize", cuda::bindQuantize},
    {"dist.slice", cuda::bindSlice},
    {"train.adam", cuda::bindAdam},
    {"train.adamw", cuda::bindAdam},
    {"train.add", cuda::bindBinary},
    {"train.add_layer_norm", cuda::bindAddLayerNorm},
    {"train.attention", cuda::bindAttention},
    {"train.attention_grad", cuda::bindAttentionGrad},
    {"train.bias_add", cuda::bindBiasAdd},
    {"train.cast", cuda::bindCast},
    {"train.causal_mask", cuda::bindCausalMask},
    {"train.concat", cuda::bindConcat},
    {"train.count_labels", cuda::bindCountLabels},
    {"train.div", cuda::bindBinary},
    {"train.dropout", cuda::bindDropout},
    {"train.embedding", cuda::bindEmbedding},
    {"train.embedding_grad", cuda::bindEmbeddingGrad},
    {"train.exp", cuda::bindUnary},
    {"train.expand", cuda::bindExpand},
    {"train.gelu", cuda::bindUnary},
    {"train.gelu_grad", cuda::bindBinary},
    {"train.key_mask", cuda::bindKeyMask},
    {"train.layer_norm", cuda::bindLayerNorm},
    {"train.layer_norm_grad", cuda::bindLayerNormGrad},
    {"train.log", cuda::bindUnary},
    {"train.matmul", cuda::bindMatmul},
    {"train.matmul_bias", cuda::bindFusedMatmul},
    {"train.matmul_bias_gelu", cuda::bindFusedMatmul},
    {"train.matmul_bias_grad", cuda::bindFusedMatmul},
    {"train.matmul_gelu_grad", cuda::bindFusedMatmul},
    {"train.mul", cuda::bindBinary},
    {"train.neg", cuda::bindUnary},
    {"train.pad", cuda::bindPad},
    {"train.reduce_mean", cuda::bindReduce},
    {"train.reduce_sum", cuda::bindReduce},
    {"train.relu", cuda::bindUnary},
    {"train.relu_grad", cuda::bindBinary},
    {"train.reshape", cuda::bindReshape},
    {"train.rsqrt", cuda::bindUnary},
    {"train.scale", cuda::bindScale},
    {"train.scale_by_norm", cuda::bindScaleByNorm},
    {"train.sgd", cuda::bindSgd},
    {"train.sgd_momentum", cuda::bindSgdMomentum},
    {"train.sigmoid", cuda::bindUnary},
    {"train.sigmoid_grad", cuda::bindBinary},
    {"train.silu", cuda::bindUnary},
    {"train.silu_grad", cuda::bindBinary},
    {"train.slice", cuda::bindSliceRange},
    {"train.softmax", cuda::bindSoftmax},
    {"train.softmax_cross_entropy", cuda::bindCrossEntropy},
    {"train.softmax_cross_entropy_grad", cuda::bindCrossEntropyGrad},
    {"train.softmax_grad", cuda::bindSoftmaxGrad},
    {"train.sqrt", cuda::bindUnary},
    {"train.step_index", cuda::bindStepIndex},
    {"train.sub", cuda::bindBinary},
    {"train.sum_squares", cuda::bindSumSquares},
    {"train.tanh", cuda::bindUnary},
    {"train.tanh_grad", cuda::bindBinary},
    {"train.transpose", cuda::bindTranspose},
    {"train.unscale", cuda::bindUnscale},
    {"train.update_loss_scale", cuda::bindUpdateLossScale},
    {"zrt.fill", cuda::bindFill},
};

/// Runs the CPU binder's checks on the request.
absl::Status checkWithCpuBinder(absl::string_view name,
                                const KernelParams &params,
                                absl::Span<const TensorSpec> ins,
                                absl::Span<const TensorSpec> outs) {
  // The fused matmuls' CPU chains hold the same matmul.
  if (name == "train.matmul" || absl::StartsWith(name, "train.matmul_")) {
    auto floating = [](const TensorSpec &spec) { return isFloat(spec.dtype); };
    if (std::all_of(ins.begin(), ins.end(), floating) &&
        std::all_of(outs.begin(), outs.end(), floating)) {
      // The CPU matmul sizes f32 scratch for whole 16-bit operands at bind
      // time; f32 twins of the specs go through the same shape and
      // attribute checks without that allocation. A request they reject is
      // rejected by the real specs before any allocation, and its message
      // names the real types.
      std::vector<TensorSpec> in32(ins.begin(), ins.end()),
          out32(outs.begin(), outs.end());
      for (auto *specs : {&in32, &out32})
        for (TensorSpec &spec : *specs)
          spec.dtype = DType::f32;
      if (bindCpuKernel(name, params, in32, out32).ok())
        return absl::OkStatus();
    }
  }
  return bindCpuKernel(name, params, ins, outs).status();
}

} // namespace

absl::StatusOr<KernelFn> bindCudaKernel(absl::string_view name,
                                        const KernelParams &params,
                                        absl::Span<const TensorSpec> ins,
                                        absl::Span<const TensorSpec> outs,
                                        CudaStreamHandle stream) {
  auto *end = std::end(kBinders);
  auto *found = std::lower_bound(std::begin(kBinders), end, name,
                                 [](const auto &entry, absl::string_view key) {
                                   return entry.first < key;
                                 });
  if (found == end || found->first != name)
    return absl::UnimplementedError(
        absl::StrCat("no CUDA kernel for '", name, "'"));
  ZERO_RETURN_IF_ERROR(checkWithCpuBinder(name, params, ins, outs));
  cpu::BindRequest request{name, params, ins, outs};
  ZERO_ASSIGN_OR_RETURN(
      KernelFn kernel,
      found->second(request, static_cast<cudaStream_t>(stream)));
  return cpu::checkingBufferCounts(std::move(kernel), name, ins.size(),
                                   outs.size());
}

std::vector<std::string> cudaKernelNames() {
  std::vector<std::string> names;
  for (const auto &entry : kBinders)
    names.emplace_back(entry.first);
  return names;
}

} // namespace zero::rt
