//===- FusedChains.cpp - Fused ops, as the chains they replace ------------===//
//
// Each fused op (TrainFusedOps.td: matmuls with epilogues, the residual add
// with its layer norm) is defined as the chain of ops it replaces, and here
// it is that chain: the chain's own bound kernels, run in its order, with
// each intermediate result kept in an output buffer the next kernel reads
// (a matmul's overwritten in place, which bias_add, the activations and
// their gradients allow; the residual sum kept, as the fused op returns it).
// Fusing a step therefore never changes a bit of it on the CPU; what it
// saves is the matmul's separate arena buffer.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.h"
#include "zero/support/Status.h"

#include <initializer_list>
#include <string>
#include <vector>

namespace zero::rt::cpu {
namespace {

using Ins = absl::Span<const void *const>;
using Outs = absl::Span<void *const>;

/// The entries `keys` of the fused op's params, for one kernel of its chain.
KernelParams pick(const BindRequest &request,
                  std::initializer_list<absl::string_view> keys) {
  KernelParams params;
  for (absl::string_view key : keys)
    if (const KernelParam *param = request.params.find(key))
      params.insert(std::string(key), *param);
  return params;
}

/// The CPU's kernel for one part of a chain.
absl::StatusOr<KernelFn> cpuPart(absl::string_view name,
                                 const KernelParams &params,
                                 absl::Span<const TensorSpec> ins,
                                 absl::Span<const TensorSpec> outs) {
  return bindCpuKernel(name, params, ins, outs);
}

/// Binds the chain's kernels with `bind`; an error names the fused kernel
/// first.
struct ChainBinder {
  const BindRequest &request;
  const PartBinder &bind;

  absl::StatusOr<KernelFn> part(absl::string_view name,
                                const KernelParams &params,
                                std::vector<TensorSpec> ins,
                                std::vector<TensorSpec> outs) const {
    absl::StatusOr<KernelFn> bound = bind(name, params, ins, outs);
    if (!bound.ok())
      return absl::Status(
          bound.status().code(),
          absl::StrCat(request.name, ": ", bound.status().message()));
    return bound;
  }

  absl::StatusOr<KernelFn> matmul(const TensorSpec &out) const {
    return part("train.matmul", pick(request, {"transpose_a", "transpose_b"}),
                {request.ins[0], request.ins[1]}, {out});
  }
};

absl::StatusOr<KernelFn> bindMatmulBias(const ChainBinder &chain) {
  const BindRequest &request = chain.request;
  ZERO_RETURN_IF_ERROR(checkArity(request, 3, 1));
  const TensorSpec &out = request.outs[0];
  ZERO_ASSIGN_OR_RETURN(KernelFn matmul, chain.matmul(out));
  ZERO_ASSIGN_OR_RETURN(
      KernelFn bias,
      chain.part("train.bias_add", {}, {out, request.ins[2]}, {out}));
  return KernelFn(
      [matmul = std::move(matmul), bias = std::move(bias)](
          Ins ins, Outs outs, const KernelContext &context) -> absl::Status {
        ZERO_RETURN_IF_ERROR(matmul({ins[0], ins[1]}, {outs[0]}, context));
        return bias({outs[0], ins[2]}, {outs[0]}, context);
      });
}

absl::StatusOr<KernelFn> bindMatmulBiasGelu(const ChainBinder &chain) {
  const BindRequest &request = chain.request;
  ZERO_RETURN_IF_ERROR(checkArity(request, 3, 2));
  const TensorSpec &out = request.outs[0], &pre = request.outs[1];
  ZERO_ASSIGN_OR_RETURN(KernelFn matmul, chain.matmul(pre));
  ZERO_ASSIGN_OR_RETURN(
      KernelFn bias,
      chain.part("train.bias_add", {}, {pre, request.ins[2]}, {pre}));
  ZERO_ASSIGN_OR_RETURN(
      KernelFn gelu,
      chain.part("train.gelu", pick(request, {"exact"}), {pre}, {out}));
  return KernelFn(
      [matmul = std::move(matmul), bias = std::move(bias),
       gelu = std::move(gelu)](Ins ins, Outs outs,
                               const KernelContext &context) -> absl::Status {
        ZERO_RETURN_IF_ERROR(matmul({ins[0], ins[1]}, {outs[1]}, context));
        ZERO_RETURN_IF_ERROR(bias({outs[1], ins[2]}, {outs[1]}, context));
        return gelu({outs[1]}, {outs[0]}, context);
      });
}

absl::StatusOr<KernelFn> bindMatmulGeluGrad(const ChainBinder &chain) {
  const BindRequest &request = chain.request;
  ZERO_RETURN_IF_ERROR(checkArity(request, 3, 1));
  const TensorSpec &out = request.outs[0];
  ZERO_ASSIGN_OR_RETURN(KernelFn matmul, chain.matmul(out));
  ZERO_ASSIGN_OR_RETURN(KernelFn geluGrad,
                        chain.part("train.gelu_grad", pick(request, {"exact"}),
                                   {request.ins[2], out}, {out}));
  return KernelFn(
      [matmul = std::move(matmul), geluGrad = std::move(geluGrad)](
          Ins ins, Outs outs, const KernelContext &context) -> absl::Status {
        ZERO_RETURN_IF_ERROR(matmul({ins[0], ins[1]}, {outs[0]}, context));
        return geluGrad({ins[2], outs[0]}, {outs[0]}, context);
      });
}

absl::StatusOr<KernelFn> bindMatmulBiasGrad(const ChainBinder &chain) {
  const BindRequest &request = chain.request;
  ZERO_RETURN_IF_ERROR(checkArity(request, 2, 2));
  if (request.params.contains("transpose_b"))
    return request.invalid("sums the bias gradient over the rows of its right "
                           "operand, which is not transposed");
  if (request.ins[1].shape.size() != 2)
    return request.invalid("sums the bias gradient over the rows of a 2-D "
                           "right operand, got ",
                           specString(request.ins[1]));
  ZERO_ASSIGN_OR_RETURN(KernelFn matmul, chain.matmul(request.outs[0]));
  KernelParams rows;
  KernelParam dims;
  dims.kind = KernelParam::Kind::integers;
  dims.integers = {0};
  dims.text = "array<i64: 0>";
  rows.insert("dims", std::move(dims));
  ZERO_ASSIGN_OR_RETURN(KernelFn reduce,
                        chain.part("train.reduce_sum", rows, {request.ins[1]},
                                   {request.outs[1]}));
  return KernelFn(
      [matmul = std::move(matmul), reduce = std::move(reduce)](
          Ins ins, Outs outs, const KernelContext &context) -> absl::Status {
        ZERO_RETURN_IF_ERROR(matmul({ins[0], ins[1]}, {outs[0]}, context));
        return reduce({ins[1]}, {outs[1]}, context);
      });
}

} // namespace

absl::StatusOr<KernelFn> bindAddLayerNormChain(const BindRequest &request,
                                               const PartBinder &bind) {
  ChainBinder chain{request, bind};
  ZERO_RETURN_IF_ERROR(checkArity(request, 4, 4));
  const TensorSpec &sum = request.outs[0];
  ZERO_ASSIGN_OR_RETURN(
      KernelFn add,
      chain.part("train.add", {}, {request.ins[0], request.ins[1]}, {sum}));
  ZERO_ASSIGN_OR_RETURN(
      KernelFn norm,
      chain.part("train.layer_norm", pick(request, {"eps"}),
                 {sum, request.ins[2], request.ins[3]},
                 {request.outs[1], request.outs[2], request.outs[3]}));
  return KernelFn(
      [add = std::move(add), norm = std::move(norm)](
          Ins ins, Outs outs, const KernelContext &context) -> absl::Status {
        ZERO_RETURN_IF_ERROR(add({ins[0], ins[1]}, {outs[0]}, context));
        return norm({outs[0], ins[2], ins[3]}, {outs[1], outs[2], outs[3]},
                    context);
      });
}

absl::StatusOr<KernelFn> bindAddLayerNorm(const BindRequest &request) {
  return bindAddLayerNormChain(request, cpuPart);
}

absl::StatusOr<KernelFn> bindMatmulChain(const BindRequest &request,
                                         const PartBinder &bind) {
  ChainBinder chain{request, bind};
  if (request.name == "train.matmul_bias")
    return bindMatmulBias(chain);
  if (request.name == "train.matmul_bias_gelu")
    return bindMatmulBiasGelu(chain);
  if (request.name == "train.matmul_gelu_grad")
    return bindMatmulGeluGrad(chain);
  if (request.name == "train.matmul_bias_grad")
    return bindMatmulBiasGrad(chain);
  return absl::UnimplementedError(
      absl::StrCat("no fused matmul named '", request.name, "'"));
}

absl::StatusOr<KernelFn> bindFusedMatmul(const BindRequest &request) {
  return bindMatmulChain(request, cpuPart);
}

} // namespace zero::rt::cpu
