//===- Registry.cpp - Kernel names to binders -----------------------------===//

#include "KernelSupport.h"
#include "UpdateLoops.h"
#include "zero/support/Status.h"

#include <cblas.h>

#include <algorithm>
#include <string>
#include <utility>

namespace zero::rt {
namespace {

using cpu::Binder;

/// Sorted by name so that lookup is a binary search over a constant table.
constexpr std::pair<absl::string_view, Binder> kBinders[] = {
    {"dist.dequantize", cpu::bindDequantize},
    {"dist.quantize", cpu::bindQuantize},
    {"dist.slice", cpu::bindSlice},
    {"train.adam", cpu::bindAdam},
    {"train.adamw", cpu::bindAdam},
    {"train.add", cpu::bindBinary},
    {"train.add_layer_norm", cpu::bindAddLayerNorm},
    {"train.attention", cpu::bindAttention},
    {"train.attention_grad", cpu::bindAttentionGrad},
    {"train.bias_add", cpu::bindBiasAdd},
    {"train.cast", cpu::bindCast},
    {"train.causal_mask", cpu::bindCausalMask},
    {"train.concat", cpu::bindConcat},
    {"train.count_labels", cpu::bindCountLabels},
    {"train.div", cpu::bindBinary},
    {"train.dropout", cpu::bindDropout},
    {"train.embedding", cpu::bindEmbedding},
    {"train.embedding_grad", cpu::bindEmbeddingGrad},
    {"train.exp", cpu::bindUnary},
    {"train.expand", cpu::bindExpand},
    {"train.gelu", cpu::bindUnary},
    {"train.gelu_grad", cpu::bindActivationGrad},
    {"train.key_mask", cpu::bindKeyMask},
    {"train.layer_norm", cpu::bindLayerNorm},
    {"train.layer_norm_grad", cpu::bindLayerNormGrad},
    {"train.log", cpu::bindUnary},
    {"train.matmul", cpu::bindMatmul},
    {"train.matmul_bias", cpu::bindFusedMatmul},
    {"train.matmul_bias_gelu", cpu::bindFusedMatmul},
    {"train.matmul_bias_grad", cpu::bindFusedMatmul},
    {"train.matmul_gelu_grad", cpu::bindFusedMatmul},
    {"train.mul", cpu::bindBinary},
    {"train.neg", cpu::bindUnary},
    {"train.pad", cpu::bindPad},
    {"train.reduce_mean", cpu::bindReduce},
    {"train.reduce_sum", cpu::bindReduce},
    {"train.relu", cpu::bindUnary},
    {"train.relu_grad", cpu::bindActivationGrad},
    {"train.reshape", cpu::bindReshape},
    {"train.rsqrt", cpu::bindUnary},
    {"train.scale", cpu::bindScale},
    {"train.scale_by_norm", cpu::bindScaleByNorm},
    {"train.sgd", cpu::bindSgd},
    {"train.sgd_momentum", cpu::bindSgdMomentum},
    {"train.sigmoid", cpu::bindUnary},
    {"train.sigmoid_grad", cpu::bindActivationGrad},
    {"train.silu", cpu::bindUnary},
    {"train.silu_grad", cpu::bindActivationGrad},
    {"train.slice", cpu::bindSliceRange},
    {"train.softmax", cpu::bindSoftmax},
    {"train.softmax_cross_entropy", cpu::bindCrossEntropy},
    {"train.softmax_cross_entropy_grad", cpu::bindCrossEntropyGrad},
    {"train.softmax_grad", cpu::bindSoftmaxGrad},
    {"train.sqrt", cpu::bindUnary},
    {"train.step_index", cpu::bindStepIndex},
    {"train.sub", cpu::bindBinary},
    {"train.sum_squares", cpu::bindSumSquares},
    {"train.tanh", cpu::bindUnary},
    {"train.tanh_grad", cpu::bindActivationGrad},
    {"train.transpose", cpu::bindTranspose},
    {"train.unscale", cpu::bindUnscale},
    {"train.update_loss_scale", cpu::bindUpdateLossScale},
    {"zrt.fill", cpu::bindFill},
};

} // namespace

absl::StatusOr<KernelFn> bindCpuKernel(absl::string_view name,
                                       const KernelParams &params,
                                       absl::Span<const TensorSpec> ins,
                                       absl::Span<const TensorSpec> outs) {
  auto *end = std::end(kBinders);
  auto *found = std::lower_bound(std::begin(kBinders), end, name,
                                 [](const auto &entry, absl::string_view key) {
                                   return entry.first < key;
                                 });
  if (found == end || found->first != name)
    return absl::UnimplementedError(
        absl::StrCat("no CPU kernel for '", name, "'"));
  cpu::BindRequest request{name, params, ins, outs};
  ZERO_RETURN_IF_ERROR(cpu::checkSpecs(request));
  ZERO_ASSIGN_OR_RETURN(KernelFn kernel, found->second(request));
  return cpu::checkingBufferCounts(std::move(kernel), name, ins.size(),
                                   outs.size());
}

const char *cpuVectorTarget() { return cpu::adamBlockTarget(); }

void setCpuKernelThreads(int threads) {
  openblas_set_num_threads(std::max(threads, 1));
}

} // namespace zero::rt
